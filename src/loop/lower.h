// Lowering graph IR nodes to the loop IR. This first step covers elementwise ops (with
// multidirectional broadcasting) and aicc.Fused nodes of kind "elementwise" whose body holds
// such ops: each becomes one loop nest (one Func) with the default schedule (parallel outer
// loop, vectorized inner loop, broadcast-compatible dimensions coalesced). Every other node is
// reported as not lowerable (the executor in loop/executor.h runs it with the interpreter's
// kernel: an explicit fallback).
#pragma once

#include "ir/graph.h"
#include "kernels/registry.h"
#include "loop/ir.h"

#include <functional>
#include <optional>
#include <set>
#include <string>

namespace aicc::loop {

// An operator-selection decision: the candidate, and why (recorded as the schedule's
// `selection` entry, so reports and profiles show it).
struct CandidateChoice {
  CandidateChoice(std::string n = {}, std::string r = {}) : name(std::move(n)), reason(std::move(r)) {}
  std::string name;   // "" = the lowering's own preference
  std::string reason; // "" = none recorded
};

struct LowerOptions {
  int64_t vectorBytes = 64; // vector register size of the target (64: AVX-512)
  bool simplify = true;     // run the simplifier on the result
  // Operator selection for non-elementwise nodes (backend/op_select.h): the candidate to lower a
  // node with ("loop", "ukernel:<kernel descriptor name>"); empty function or "" = the
  // lowering's own preference (a micro-kernel where one applies, else the loop nest).
  std::function<CandidateChoice(const Node&)> chooseCandidate;
  // The widest micro-kernel ISA the target runs: a lowering's own kernel choice (no candidate
  // chosen) takes the best kernel of it or below. Default: this CPU's (kernels::bestIsa()).
  kernels::Isa kernelIsa = kernels::bestIsa();
  // Lower to the in-process runtime's micro-kernels (rt/callees.cpp): constant weights
  // packed at compile time into the kernels' layouts (LoweredNode::constants: NCHW convolution
  // weights as GEMM A panels, MatMul/Gemm weights as B panels), NCHW depthwise convolution of any
  // size, attention. On for the JIT; off for the C bundle, whose portable stand-ins
  // (codegen/c/micro_kernels_c.cpp) implement only the plain contracts.
  bool runtimeKernels = false;
  // --precision bf16: MatMul/Gemm/Conv with constant weights may run the bf16 GEMM kernels
  // (KernelOp::GemmBf16: weights rounded to bf16 at compile time, activations when the kernel
  // packs them, f32 accumulation and epilogues); the default choice takes them where the ISA
  // has them. Runtime kernels only.
  bool bf16 = false;
  // Operator selection's applicability probe: only whether the node lowers matters, so weights
  // are not packed (the packed constants hold no data). Never run a probe's result.
  bool probe = false;
  // Values stored as bf16 between bf16 convolutions (runtime/artifact_build.cpp decides, from
  // probes, which; bf16ConvIo says whether a lowered node can): the convolution's buffers for
  // them are bf16 and its call says so (kernels::Epilogue::bf16). Null: none.
  const std::set<const Value*>* bf16Activations = nullptr;
  // Per-sample lowering (loop/per_sample.h): the node is typed for one sample and its batched
  // values hold `samples` of them (an i64 expression of the run). A lowering that takes them all
  // in one call (GEMM: M rows per sample, samples * M rows) uses it and sets the schedule's
  // `samples` entry; otherwise the wrap loops over the samples. Null: not per sample.
  ExprPtr samples;
  // Symbolic lowerings (loop/per_sample.h lowerSymbolic): the run's size of dim k of v when it is
  // symbolic (an i64 expression), null when it is static. The values' types hold their bound's
  // sizes meanwhile: only the lowerings that read this (Transpose, Attention) are given symbolic
  // nodes. Null: static sizes only.
  std::function<ExprPtr(const Value* v, size_t k)> runDim;
  // Data-dependent dims (passes/data_dims.h): when dim k of result v is a data symbol this node
  // produces, the statement storing the run's `value` of it into the shape block; runDim(., .)
  // of that symbol is `value` from then on (the lowering computes it before any use). nullopt:
  // not such a dim (or no symbolic lowering: null).
  std::function<std::optional<Stmt>(const Value* v, size_t k, const ExprPtr& value)> setDataDim;
  // The sizes alone (loop/per_sample.h, symbols sized at run time): the lowering's statements up
  // to its result's dims (gatherNest's prefix), which write them (setDataDim); the node's own
  // task follows once the runtime has grown its buffers to them.
  bool sizesOnly = false;
};

// A lowered node: the Func, and which graph values bind to its buffer parameters.
struct LoweredNode {
  Func func;
  std::vector<std::pair<std::string, const Value*>>
      inputs; // `in` param -> value (inputs, constants)
  std::vector<std::pair<std::string, const Value*>> outputs; // `out` param -> node output
  // `in` params bound to data made at compile time (packed weights), owned here.
  std::vector<std::pair<std::string, Tensor>> constants;
  // The `in` param bound to the run's shape block (loop/per_sample.h), or "" (an `out` param
  // when the node writes data symbols into it: dataSymbols).
  std::string symbolsParam;
  std::vector<std::string> dataSymbols;

  // The graph value bound to param p (input or output), or null (a temp or a constant).
  const Value* valueOf(const std::string& p) const;
  // The compile-time data bound to param p, or null.
  const Tensor* constantOf(const std::string& p) const;
};

// A lowered bf16 convolution whose one call reads its input X (and residual) and writes the
// node's output itself: those values, and which of them it can take as bf16 (kernels::kBf16*:
// the input with any bf16 kernel; the output and residual where the tile stores bf16,
// KernelDesc::bf16Io). What a value stored as bf16 needs of its producer and consumers
// (LowerOptions::bf16Activations). Nullopt for anything else.
struct Bf16ConvIo {
  unsigned caps = 0;
  const Value *x = nullptr, *y = nullptr, *residual = nullptr;
};
std::optional<Bf16ConvIo> bf16ConvIo(const LoweredNode& ln);

// "Conv", or "Fused(Conv+Relu)" for an aicc.Fused node (reports and profiles).
std::string opLabel(const Node& n);

// Lowers `n` (named `funcName`), or returns nullopt and sets *whyNot.
std::optional<LoweredNode> lowerNode(const Node& n, const std::string& funcName,
                                     std::string* whyNot = nullptr, const LowerOptions& opts = {});

// Lowers every lowerable node of g's top level into one module (function names derived from the
// node names, made unique). Nodes that cannot be lowered are skipped; `skipped` gets
// "node: reason" lines when given.
Module lowerGraph(const Graph& g, const LowerOptions& opts = {},
                  std::vector<std::string>* skipped = nullptr);

// The non-elementwise lowerings (loop/lower_*.cpp): MatMul, Gemm, Conv, pooling, reductions,
// Softmax, LayerNormalization, BatchNormalization (inference), data movement (ScatterND
// included), view ops (as copies marked kind = "alias"), aicc.Fused kind="epilogue",
// activations without an elementwise compute definition, and GRU (a micro-kernel call, only
// with runtimeKernels: the JIT). Returns false when n is none of those; otherwise true with
// `result` set, or reset and *whyNot set when this instance cannot be lowered.
bool lowerNonElementwise(const Node& n, const std::string& funcName, const LowerOptions& opts,
                         std::optional<LoweredNode>& result, std::string* whyNot = nullptr);
// Whether n's op is handled by lowerNonElementwise (some instances may still not lower).
bool hasNonElementwiseLowering(const Node& n);

// Whether an op (ai.onnx domain) has an elementwise compute definition here.
bool hasComputeDefinition(const std::string& op);

} // namespace aicc::loop
