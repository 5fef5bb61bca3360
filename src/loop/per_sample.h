// Dynamic shapes (issue #12, docs/backend.md "Dynamic shapes"): a node whose values carry symbolic
// leading dims S (a batch, a sequence length, both) is lowered once for one sample and runs in a
// loop over the run's samples; any other node with symbolic dims is lowered with the run's sizes
// instead (lowerSymbolic, LowerOptions::runDim), when its lowering reads the run's size of every
// symbolic dim of its values (convolutions, pools, resizes, elementwise regions, Transpose, ...).
//
// The symbols' values reach the task through the shape block: an i64 buffer parameter (one
// element per symbol of the model, in the plan's order) that the runtime fills from the inputs
// before the first task. A node runs per sample when
//   1. every tensor it reads or writes (and every value of its bodies) either has no symbolic
//      dim, or has the same leading symbols S (its dims up to the last symbolic one are symbols
//      or 1s) and static dims after them;
//   2. some input has S, and every output has it;
//   3. its op computes each sample alone and independently of its index, over as many leading
//      dims as S spans (computesPerSample, ops/op_def.h: Softmax over a sample dim has the shapes
//      of rule 1 but mixes samples).
// Row-major, a sample of such a value is one contiguous block, the same for every value that
// has S: so the node is lowered with S = 1 (the values' types set to one sample while lowering),
// and the Func is wrapped in `for %sample in 0..prod clamp(%symbols[k], lo, bound)`, every access
// to a buffer bound to a value with S offset by %sample times its elements per sample, those
// buffers' shapes at the bounds (the memory plan's sizes, so the verifier bounds every index).
// Temps stay one sample's (the sample loop is serial; the body keeps its own schedule, parallel
// loops included). Values without S (weights, broadcast operands) are read whole. A lowering that
// takes every sample in one call (a GEMM: samples * M rows, LowerOptions::samples) needs no loop.
#pragma once

#include "ir/dim_expr.h"
#include "loop/lower.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace aicc::loop {

// Sets values' types and restores them when destroyed (lowering a node at other sizes than the
// graph's).
class TypeSwap {
public:
  TypeSwap() = default;
  TypeSwap(const TypeSwap&) = delete;
  TypeSwap& operator=(const TypeSwap&) = delete;
  ~TypeSwap();
  void set(Value* v, Type t);

private:
  std::vector<std::pair<Value*, Type>> saved_;
};

// The model's symbols: each one's slot in the shape block, the largest value the plan holds and
// the smallest a run may give (the runtime checks both; the code clamps into them, so the
// verifier bounds every index).
struct SymbolSlot {
  int64_t slot = 0;
  int64_t bound = 1;
  int64_t lo = 0;
  int64_t divisor = 1; // a stepped symbol's "S/step" (passes/dim_steps.h): slot's value / step
  bool data = false;   // a data symbol (rt::Symbol::data): written by the node producing it
  // A data symbol with no bound (rt::Symbol::runSized): written by a task of its own before its
  // node's (LowerOptions::sizesOnly), or by its node's fallback task; `bound` is the limit.
  bool runSized = false;
};

struct PerSampleContext {
  std::map<std::string, SymbolSlot> symbols;
  // The symbols sized at run time whose sizing task the task sequence already has (the builder's
  // record: a node after it reads them, and checks its own count against them).
  const std::set<std::string>* sized = nullptr;
  // The symbolic type of every value of the graph (the graph's values hold their bound types
  // while the artifact is built); a value missing here has its own type.
  const std::map<const Value*, Type>* types = nullptr;
  const Type& typeOf(const Value* v) const;
};

// A symbol's value in the run: element slot.slot of the shape block `block`, clamped into the
// range the runtime checked.
ExprPtr symbolValue(const std::string& block, const SymbolSlot& slot);

// A dim expression as an i64 loop-IR expression, its symbols given by `symbol` (floor divisions
// of never-negative values as `/`).
ExprPtr loopExprOf(const DimExpr& e, const std::function<ExprPtr(const std::string&)>& symbol);

// Whether a dim of t reads a symbol sized at run time (SymbolSlot::runSized).
bool sizedAtRunTime(const Type& t, const PerSampleContext& ctx);

// Whether n's values have a symbolic dim (by ctx's types), counting its bodies' values.
bool hasSymbolicValues(const Node& n, const PerSampleContext& ctx);

// n lowered per sample (see above), its Func taking the shape block as parameter
// LoweredNode::symbolsParam; nullopt with *whyNot set when n does not qualify or does not lower.
// Shape and Size of a symbolic value are no per-sample ops: they read the run's dims from the
// shape block.
std::optional<LoweredNode> lowerPerSample(const Node& n, const std::string& funcName,
                                          const LowerOptions& o, const PerSampleContext& ctx,
                                          std::string* whyNot);

} // namespace aicc::loop
