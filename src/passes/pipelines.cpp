#include "passes/pipelines.h"

#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/algebraic_simplify.h"
#include "passes/assign_layout.h"
#include "passes/common_subexpression_elimination.h"
#include "passes/constant_folding.h"
#include "passes/data_dims.h"
#include "passes/dead_code_elimination.h"
#include "passes/expand_flex_attention.h"
#include "passes/fold_affine_into_conv.h"
#include "passes/fold_qdq.h"
#include "passes/fold_shape_ops.h"
#include "passes/fuse_elementwise.h"
#include "passes/fuse_epilogue.h"
#include "passes/inline_if.h"
#include "passes/memory_schedule.h"
#include "passes/recognize_patterns.h"
#include "passes/shape_inference.h"
#include "passes/unroll_sequences.h"
#include "passes/widen_reduced_floats.h"

namespace aicc {

std::string IrTraits<Model>::print(const Model& m) { return printModel(m); }
void IrTraits<Model>::verify(const Model& m) { verifyModel(m); }

const std::vector<GraphPassInfo>& graphPasses() {
  static const std::vector<GraphPassInfo> kPasses = {
      {"infer-shapes", "re-run shape/type inference (changed: some type became more precise)"},
      {"expand-flex-attention",
       "replace ai.onnx.preview FlexAttention (f32, f16, bf16) by the ops of its "
       "definition, its score_mod / prob_mod graphs inlined"},
      {"fold-shapes",
       "replace shape arithmetic on known shapes (Shape/Size/Gather/Concat/...) by constants"},
      {"widen-reduced-floats", "compute MatMul, Conv, attention, normalizations and float "
                               "reductions on f16/bf16 tensors in f32, Casts around them"},
      {"constant-fold",
       "evaluate nodes whose inputs are all constants with the reference interpreter"},
      {"fold-size-predicates", "replace an If's condition computed from the input sizes alone by "
                               "its value when it has one over the symbols' ranges"},
      {"inline-if", "replace an If whose condition is a constant by the branch it takes"},
      {"unroll-sequences", "read sequences whose elements are known at compile time (built at "
                           "constant positions) as their tensors: SequenceAt, SequenceLength, "
                           "ConcatFromSequence"},
      {"name-data-dims", "give data-dependent dims with a known bound (NonZero's count, TopK's "
                         "run-time k) a symbol of their own"},
      {"dce", "remove nodes and constants whose results are unused"},
      {"cse",
       "merge identical nodes (same op, inputs and attributes, subgraphs compared structurally)"},
      {"simplify", "algebraic simplification patterns, run to a fixed point"},
      {"fold-affine", "fold BatchNormalization and constant Mul/Add into the preceding Conv/Gemm"},
      {"fold-qdq", "DequantizeLinear -> Conv/MatMul/Add -> QuantizeLinear as "
                   "QLinearConv/QLinearMatMul/QLinearAdd"},
      {"recognize",
       "recognize spelled-out LayerNorm, GELU, HardSwish, HardSigmoid, SiLU, attention"},
      {"assign-layout", "put chains of convolutions on blocked activations (NCHW16c), reordering "
                        "at their ends"},
      {"fuse-elementwise", "fuse chains of elementwise/injective ops into one aicc.Fused node"},
      {"fuse-epilogue", "fuse bias/activation/residual consumers into Conv/Gemm/MatMul"},
      {"schedule-memory", "reorder nodes to lower peak memory (reports liveness and peak bytes)"},
  };
  return kPasses;
}

GraphPass makeGraphPass(const std::string& name, const GraphPassOptions& opts) {
  // The cleanup group: shape arithmetic and constants fold, conditions on the sizes with one
  // value over the symbols' ranges too, Ifs on constants become their branch, sequences built at
  // constant positions are read as their tensors, dead code goes, duplicates merge; to a fixed
  // point.
  if (name == "cleanup") {
    std::vector<GraphPass> g;
    for (const char* n : {"fold-shapes", "constant-fold", "fold-size-predicates", "inline-if",
                          "unroll-sequences", "dce", "cse"})
      g.push_back(makeGraphPass(n, opts));
    return GraphPass::group("cleanup", std::move(g), /*toFixpoint=*/true);
  }
  GraphPass p;
  p.name = name;
  if (name == "infer-shapes") p.run = [](Model& m) { return refreshShapes(m); };
  else if (name == "fold-shapes") p.run = [](Model& m) { return foldShapeOps(m); };
  else if (name == "expand-flex-attention")
    p.run = [](Model& m) { return expandFlexAttention(m); };
  else if (name == "widen-reduced-floats")
    p.run = [](Model& m) { return widenReducedFloats(m); };
  else if (name == "constant-fold") p.run = [opts](Model& m) { return foldConstants(m, opts.constantFoldLimit); };
  else if (name == "fold-size-predicates")
    p.run = [opts](Model& m) {
      return foldSizePredicates(m, opts.sizeRanges, opts.sizeSplit.get());
    };
  else if (name == "inline-if") p.run = [](Model& m) { return inlineConstantIfs(m); };
  else if (name == "unroll-sequences")
    p.run = [](Model& m) { return unrollSequences(m); };
  else if (name == "name-data-dims")
    p.run = [](Model& m) { return nameDataDims(m); };
  else if (name == "dce") p.run = [](Model& m) { return eliminateDeadCode(m); };
  else if (name == "cse") p.run = [](Model& m) { return eliminateCommonSubexpressions(m); };
  else if (name == "simplify") p.run = [](Model& m) { return simplifyAlgebra(m); };
  else if (name == "fold-affine") p.run = [](Model& m) { return foldAffineIntoConv(m); };
  else if (name == "fold-qdq")
    p.run = [](Model& m) { return foldQdq(m); };
  else if (name == "recognize") p.run = [](Model& m) { return recognizePatterns(m); };
  else if (name == "fuse-elementwise") p.run = [](Model& m) { return fuseElementwise(m); };
  else if (name == "assign-layout")
    p.run = [opts](Model& m) {
      return assignLayout(m, opts.layoutBlock ? opts.layoutBlock : 16, opts.sizeRanges);
    };
  else if (name == "fuse-epilogue") p.run = [](Model& m) { return fuseEpilogue(m); };
  else if (name == "schedule-memory") p.run = [](Model& m) { return scheduleForMemory(m); };
  else {
    std::vector<std::string> names;
    for (const auto& i : graphPasses()) names.push_back(i.name);
    fail("unknown pass '{}' (known: {})", name, fmt::join(names, ", "));
  }
  return p;
}

std::vector<GraphPass> optPipeline(int level, const GraphPassOptions& opts) {
  AICC_CHECK(level >= 0 && level <= 3, "optimization level must be 0 to 3, got {}", level);
  auto pass = [&](const char* n) { return makeGraphPass(n, opts); };
  std::vector<GraphPass> p;
  if (level == 0) return p; // -O0: the imported graph as is
  // Quantized QDQ patterns to integer ops, first: constant folding would turn their
  // DequantizeLinear(weights) into float weights.
  p.push_back(pass("fold-qdq"));
  // Ops without a lowering of their own spelled out in the ops of their definition.
  p.push_back(pass("expand-flex-attention"));
  // f16 / bf16 compute-heavy nodes in f32 (the backend's kernels), Casts around them.
  p.push_back(pass("widen-reduced-floats"));
  // Cleanup, to a fixed point (makeGraphPass "cleanup").
  p.push_back(pass("cleanup"));
  // Data-dependent sizes with a bound get symbols: what follows them is planned and compiled.
  p.push_back(pass("name-data-dims"));
  if (level == 1) return p;
  // Algebra: identities, inverse pairs, constants folded into Conv/Gemm weights, then cleanup again.
  p.push_back(GraphPass::group("algebra",
                               {pass("simplify"), pass("fold-affine"), pass("constant-fold"), pass("dce")},
                               /*toFixpoint=*/true));
  // Recognize the spelled-out forms exporters produce (LayerNorm, GELU, attention, ...).
  p.push_back(pass("recognize"));
  // Layout: convolution chains on blocked activations, for targets whose kernels take them.
  if (opts.layoutBlock) p.push_back(pass("assign-layout"));
  // Fusion: epilogues into Conv/Gemm/MatMul first, then the remaining elementwise chains.
  p.push_back(pass("fuse-epilogue"));
  p.push_back(pass("fuse-elementwise"));
  p.push_back(pass("dce"));
  if (level == 2) return p;
  // Order nodes to lower peak memory.
  p.push_back(pass("schedule-memory"));
  return p;
}

} // namespace aicc
