// Internal helpers of the non-elementwise lowerings (src/loop/lower_*.cpp): a builder for the
// Func of one node (buffer parameters bound to graph values, fresh names, the schedule), index
// arithmetic and loop-nest helpers, and the per-family entry points dispatched by lower.cpp.
// Each entry point returns nullopt when it does not handle the op, and throws NotLowerable with
// a reason when it handles the op but cannot lower this instance (the executor then falls back).
#pragma once

#include "loop/lower.h"

#include <functional>
#include <set>
#include <utility>

namespace aicc::loop::detail {

struct NotLowerable {
  std::string reason;
};
[[noreturn]] void no(std::string reason);

std::string sanitizeName(const std::string& s);
int64_t numel(const Dims& d);
// Static dims of a tensor value (throws NotLowerable otherwise).
Dims staticDims(const Value* v, const char* what);
// The element types the lowerings handle: floats (f32/f64) for compute, anything that
// lower.cpp's elementwise path supports for data movement.
bool isComputeFloat(DType t);

class FuncBuilder {
public:
  FuncBuilder(const Node& n, const std::string& funcName, const std::string& kind);
  // An `in` parameter bound to v (once per value); returns its name.
  std::string input(const Value* v);
  // The `out` parameter of output k.
  std::string output(size_t k);
  std::string temp(const std::string& base, DType t, const Dims& shape);
  // An `in` parameter bound to compile-time data (e.g. packed weights); returns its name.
  std::string constant(const std::string& base, Tensor data, std::string layout);
  std::string fresh(const std::string& base);
  // A fresh loop variable name.
  std::string loopVar(const std::string& base) { return fresh(base); }
  void setKind(std::string k) { kind_ = std::move(k); }
  // Values of a fused body read through input() are bound to these outer values.
  void setBind(std::map<const Value*, const Value*> b) { bind_ = std::move(b); }
  // Makes input(v) return `param` (e.g. a temp computed by a prologue).
  void bindInput(const Value* v, std::string param) { inParams_[v] = std::move(param); }
  // Statements run before the body given to finish (e.g. a fused prologue).
  Block prologue;
  // Finishes: prologue + body, schedule (kind/op added), simplification.
  LoweredNode finish(Block body, Schedule sched, const LowerOptions& opts);

  const Node& node;
  LoweredNode ln;

private:
  std::string kind_;
  std::set<std::string> used_;
  std::map<const Value*, std::string> inParams_;
  std::map<const Value*, const Value*> bind_;
};

// Row-major strides of a shape.
std::vector<int64_t> strides(const Dims& d);
// sum(idx[k] * stride[k]) (null idx entries skipped).
ExprPtr linearIndex(const std::vector<ExprPtr>& idx, const std::vector<int64_t>& stride);
// Arguments of a runtime kernel call: a whole buffer, an integer.
inline CallArg bufferArg(const std::string& b) { return CallArg{b, nullptr, nullptr}; }
inline CallArg intArg(int64_t v) { return CallArg{"", nullptr, intImm(v)}; }
// The runtime's check that int64 buffer `buf` holds `want` (a shape-like value given at run time
// equals the compiled one, or with symbolic sizes the run's dims (runDims); else the run's
// error): @check_values_i64.
inline Stmt checkValuesI64(const std::string& buf, const std::vector<ExprPtr>& want) {
  std::vector<CallArg> args = {bufferArg(buf), intArg(int64_t(want.size()))};
  for (const ExprPtr& w : want) args.push_back(CallArg{"", nullptr, w});
  return Stmt::callKernel("check_values_i64", std::move(args));
}
inline Stmt checkValuesI64(const std::string& buf, const std::vector<int64_t>& want) {
  std::vector<ExprPtr> w;
  for (int64_t x : want) w.push_back(intImm(x));
  return checkValuesI64(buf, w);
}
// Result v's dims as the run's values give them, in i64 buffer `dims` (one per dim): those that
// are data symbols this node produces are written into the shape block (setDataDim; a negative
// count as 0, which the check then reports), and all are checked against the run's dims
// (@check_values_i64).
Block setOrCheckDims(const LowerOptions& o, const Value* v, const std::string& dims,
                     const Dims& planned);
// Elements `at` of integer input v, which the declared result shape fixes at `want` (a window's
// size, AffineGrid's size but C, Col2Im's shapes): a constant is compared now (declining on a
// mismatch), anything else stored into an i64 temp and checked by the runtime
// (@check_values_i64; not without runtime kernels).
Block checkFixedValues(FuncBuilder& b, const Value* v, const std::vector<int64_t>& at,
                       const std::vector<int64_t>& want, const LowerOptions& o);
// Element k of a run-time integer input as i64 (Slice's starts, Pad's pads, ...).
inline ExprPtr loadI64(FuncBuilder& b, const Value* v, int64_t k) {
  return cast(DType::I64, load(b.input(v), intImm(k), v->type.dtype));
}
// Wraps body in loops over vars[k] in 0..ext[k] (outermost first). The outermost loop is
// `parallel` when parallelOuter; the innermost is vectorize(W) when vectorWidth > 1.
Block nest(const std::vector<std::string>& vars, const Dims& ext, Block body,
           bool parallelOuter = true, int64_t vectorWidth = 1);
std::vector<ExprPtr> vars(const std::vector<std::string>& names);
// The sizes of v's dims d as expressions: the run's for symbolic dims (LowerOptions::runDim),
// immediates for the others; their row-major strides; a nest over such extents (as nest()).
std::vector<ExprPtr> runDims(const LowerOptions& o, const Value* v, const Dims& d);
std::vector<ExprPtr> stridesOf(const std::vector<ExprPtr>& dims);
// The product of dims [from, to) (immediates folded: static dims give an immediate, so the
// compile-time checks on sizes still see them).
ExprPtr product(const std::vector<ExprPtr>& dims, size_t from = 0, size_t to = size_t(-1));
ExprPtr runIndex(const std::vector<ExprPtr>& idx, const std::vector<ExprPtr>& stride);
Block runNest(const std::vector<std::string>& vars, const std::vector<ExprPtr>& ext, Block body,
              bool parallelOuter = true, int64_t vectorWidth = 1);
// `len` elements in L vector lanes: step(lane, k) for element k, in lane k mod L over the whole
// vectors (vectorized), then the tail in lane 0. Reductions keep one partial value per lane (a
// max, a min or a sum) and combine the L after: the same max and min in any order, the sums
// reassociated as any vector reduction's (Softmax, LayerNormalization, DynamicQuantizeLinear).
Block inLanes(FuncBuilder& b, int64_t len, int64_t L,
              const std::function<Block(const ExprPtr& lane, const ExprPtr& k)>& step);
// The loops of an elementwise nest writing a dense `out` and reading operands broadcast to it
// (numpy rules, right-aligned): dims of extent 1 are dropped, adjacent dims merge where every
// operand is full in both or broadcast in both (a per-channel bias over NCHW gives [C, H*W], a
// same-shape chain one loop), and a single loop of enough elements splits into [chunks, block] so
// the outer loop can run in parallel while the inner one vectorizes.
struct FlatSpace {
  struct Loop {
    size_t group;    // merged dim range (groups[group])
    int64_t extent;
    int64_t mult;    // element step of this loop within its group
  };
  std::vector<std::pair<size_t, size_t>> groups; // [d0, d1) of the output's dims
  std::vector<Loop> loops;                       // outermost first
  Dims out;
  bool parallel = false; // enough work for the outer loop to be worth splitting over threads
  Dims extents() const;
  // Per loop, the element stride of an operand of shape `shape` (0 where it is broadcast).
  std::vector<int64_t> strideOf(const Dims& shape) const;
  // Symbolic sizes: the run's dims of out (runDims; the Dims above are their bounds), the loops'
  // run extents, and an operand's run strides given its run dims (`run`, right-aligned as
  // `shape`). Without symbolic dims these are the immediates of extents() and strideOf().
  std::vector<ExprPtr> runOut;
  std::vector<ExprPtr> runExtents() const;
  std::vector<ExprPtr> runStrideOf(const Dims& shape, const std::vector<ExprPtr>& run) const;
};
// A symbolic `runOut` (runDims of the output) keeps one loop per merged group (no split for the
// threads, which needs a divisor of a known extent).
FlatSpace flatSpace(const Dims& out, const std::vector<Dims>& operands, int64_t lanes,
                    const std::vector<ExprPtr>& runOut = {});
// Whether an operand's run dims `run` (right-aligned) match the output's `out` wherever the
// operand is not broadcast (bound 1): symbolic dims must be the same expression.
bool sameRunDims(const Dims& shape, const std::vector<ExprPtr>& run,
                 const std::vector<ExprPtr>& out);
// An integer size (a run's dim, or an immediate) as a float of type t: a constant when immediate
// (so equal() and the simplifier see it), else a cast.
ExprPtr floatOf(DType t, const ExprPtr& size);
// Whether two lists of run dims are the same, one by one (a result's against the input's).
bool equalDims(const std::vector<ExprPtr>& a, const std::vector<ExprPtr>& b);
// auto_pad SAME_UPPER / SAME_LOWER's (begin, end) pads along one dim at the run's sizes `in` and
// `out`: total = max(0, (out - 1) * stride + (k - 1) * dilation + 1 - in), the begin total / 2
// (SAME_UPPER) or total - total / 2 (SAME_LOWER), as convShape and the pools split it statically.
std::pair<ExprPtr, ExprPtr> samePads(const std::string& autoPad, const ExprPtr& in,
                                     const ExprPtr& out, int64_t k, int64_t stride,
                                     int64_t dilation);

// The vector width for innermost loops of `extent` elements of type t.
int64_t vectorWidthFor(const LowerOptions& o, DType t, int64_t extent);
// Normalizes a possibly negative axis; throws NotLowerable when out of range.
int64_t normAxis(int64_t a, size_t rank, const Node& n);
// An i64 index expression clamped into [0, dim) (dim >= 1): a load at it stays inside the dim.
ExprPtr clampIndex(ExprPtr i, int64_t dim);
ExprPtr clampIndex(ExprPtr i, ExprPtr dim); // a run's dim (symbolic sizes), >= 1
// a > c for values of type t, with NaN above every number and not above NaN (ArgMax, TopK).
ExprPtr greaterNanFirst(DType t, ExprPtr a, ExprPtr c);
// The contents of a constant integer input (nullopt when absent or not constant).
std::optional<std::vector<int64_t>> constInts(const Node& n, size_t input);

// Per-family entry points. `candidate` is an operator-selection candidate name ("" = default).
std::optional<LoweredNode> lowerMatMulFamily(const Node& n, const std::string& name,
                                             const LowerOptions& o, const std::string& candidate);
std::optional<LoweredNode> lowerConvFamily(const Node& n, const std::string& name,
                                           const LowerOptions& o, const std::string& candidate);
std::optional<LoweredNode> lowerPoolFamily(const Node& n, const std::string& name,
                                           const LowerOptions& o);
std::optional<LoweredNode> lowerReduceFamily(const Node& n, const std::string& name,
                                             const LowerOptions& o);
// NonZero, Compress: sizes the run's data decide (data symbols, LowerOptions::setDataDim).
std::optional<LoweredNode> lowerSelectFamily(const Node& n, const std::string& name,
                                             const LowerOptions& o);
// The loops storing value(indices) at every element of `out` (run dims `oe`, row-major): the
// first two dims one parallel loop when there are three or more, the innermost vectorized by w.
Block copyLoops(FuncBuilder& b, const std::string& out, const std::vector<ExprPtr>& oe, int64_t w,
                const std::function<ExprPtr(const std::vector<ExprPtr>&)>& value);
// A copy of every element of the output from an input index expression (after `prefix`):
// value(output indices) stored at each output element, the nest's innermost loop vectorized.
// Symbolic sizes: the loops run the output's run extents (runDims).
LoweredNode gatherNest(FuncBuilder& b, const std::string& out, const Dims& od,
                       const std::function<ExprPtr(const std::vector<ExprPtr>&)>& value,
                       const LowerOptions& o, Schedule sched = {}, Block prefix = {});
// A MatMul's shape, numpy's matmul (a 1-D operand promoted, the batch dims broadcast): M, K, N,
// the result's batch dims and each operand's element stride per batch dim (0: broadcast).
// Declines (no) inner dims that differ and batch dims that do not broadcast.
struct MatMulShape {
  int64_t M = 0, K = 0, N = 0;
  Dims batch;
  std::vector<int64_t> aBatch, bBatch;
};
MatMulShape matmulShape(const Dims& ad, const Dims& bd);
// The same at the run's sizes (symbolic dims: LowerOptions::runDim): M, K, N, the batch's run
// extents and each operand's element stride per batch dim at its run strides (0: broadcast).
// Declines inner dims, and batch dims neither 1 nor the same expression on both sides.
struct RunMatMulShape {
  ExprPtr M, K, N;
  std::vector<ExprPtr> batch, aStride, bStride;
};
RunMatMulShape runMatmulShape(const std::vector<ExprPtr>& ar, const std::vector<ExprPtr>& br,
                              bool transA = false, bool transB = false);
// Declines a result r whose run dims are not s's batch, then M (hasM) and N (hasN).
void checkRunMatmulResult(const LowerOptions& o, const Value* r, const RunMatMulShape& s, bool hasM,
                          bool hasN);
// [outer, len, inner] around dims [a0, a1) (len = their product).
struct Split3 {
  int64_t outer = 1, len = 1, inner = 1;
};
Split3 split3(const Dims& d, size_t a0, size_t a1);

// Lowerings shared out of their family's dispatcher: resampling and cropping (lower_resize.cpp)
// and ops along one axis (lower_axis.cpp).
std::optional<LoweredNode> lowerResize(const Node& n, const std::string& name,
                                       const LowerOptions& o);
// DFT as a constant f64 matrix over each lane (lower_signal.cpp).
std::optional<LoweredNode> lowerDft(const Node& n, const std::string& name, const LowerOptions& o);
// STFT: the DFT matrix of one frame, the window and the framing in the loop (lower_signal.cpp).
std::optional<LoweredNode> lowerStft(const Node& n, const std::string& name, const LowerOptions& o);
std::optional<LoweredNode> lowerMelWeightMatrix(const Node& n, const std::string& name,
                                                const LowerOptions& o);
std::optional<LoweredNode> lowerWindowFunction(const Node& n, const std::string& name,
                                               const LowerOptions& o);
std::optional<LoweredNode> lowerAffineGrid(const Node& n, const std::string& name,
                                           const LowerOptions& o);
std::optional<LoweredNode> lowerCol2Im(const Node& n, const std::string& name,
                                       const LowerOptions& o);
std::optional<LoweredNode> lowerTfIdf(const Node& n, const std::string& name,
                                      const LowerOptions& o);
std::optional<LoweredNode> lowerDeformConv(const Node& n, const std::string& name,
                                           const LowerOptions& o);
std::optional<LoweredNode> lowerIntPow(const Node& n, const std::string& name,
                                       const LowerOptions& o);
std::optional<LoweredNode> lowerBatchNorm(const Node& n, const std::string& name,
                                          const LowerOptions& o);
std::optional<LoweredNode> lowerMvn(const Node& n, const std::string& name, const LowerOptions& o);
std::optional<LoweredNode> lowerMlFamily(const Node& n, const std::string& name,
                                         const LowerOptions& o);
std::optional<LoweredNode> lowerCenterCropPad(const Node& n, const std::string& name,
                                              const LowerOptions& o);
std::optional<LoweredNode> lowerAxisNormalize(const Node& n, FuncBuilder& b, const LowerOptions& o);
std::optional<LoweredNode> lowerScan(const Node& n, FuncBuilder& b, const LowerOptions& o);
std::optional<LoweredNode> lowerEinsum(const Node& n, FuncBuilder& b, const LowerOptions& o);
std::optional<LoweredNode> lowerTopK(const Node& n, FuncBuilder& b, const LowerOptions& o);
std::optional<LoweredNode> lowerLrn(const Node& n, FuncBuilder& b, const LowerOptions& o);

// Out-of-range indices: the runtime's check before a gather or scatter reports them (as the
// interpreter does: @check_indices_*), and the access clamps, so it never leaves the data. The C
// bundle has no error path (as for integer division by zero) and takes the nearest element.
Block checkIndices(const std::string& ind, DType it, int64_t count, int64_t dim,
                   const LowerOptions& o);
Block checkIndices(const std::string& ind, DType it, ExprPtr count, ExprPtr dim,
                   const LowerOptions& o); // (symbolic sizes: the run's)
// Integer values (int32/int64) within [0, hi) unless equal to `ignore`: the runtime's check
// (@check_targets_*: an error naming the value and its index; loss targets, positions, lengths,
// batch and write indices). Nothing without runtime kernels (the C bundle has no error path: the
// accesses clamp) or without values.
Block checkValuesBelow(const std::string& buf, DType t, int64_t count, int64_t hi,
                       const LowerOptions& o, std::optional<int64_t> ignore = std::nullopt);
Block checkValuesBelow(const std::string& buf, DType t, ExprPtr count, ExprPtr hi,
                       const LowerOptions& o, std::optional<int64_t> ignore = std::nullopt);
// Index tuples [tuples, K] (GatherND, ScatterND): component k checked against dims[k] by the
// runtime (copied into a temp of b, then @check_indices_*); one check when K is 1.
Block checkIndexTuples(FuncBuilder& b, const std::string& ind, DType it, int64_t tuples,
                       const Dims& dims, const LowerOptions& o);
// Index k (int32/int64, negative from the end) into [0, dim).
ExprPtr clampedIndex(ExprPtr k, DType it, int64_t dim);
ExprPtr clampedIndex(ExprPtr k, DType it, ExprPtr dim);
std::optional<LoweredNode> lowerScatterND(const Node& n, const std::string& name,
                                          const LowerOptions& o); // lower_scatter.cpp
std::optional<LoweredNode> lowerTensorScatter(const Node& n, const std::string& name,
                                              const LowerOptions& o); // lower_scatter.cpp
std::optional<LoweredNode> lowerScatterElements(const Node& n, const std::string& name,
                                                const LowerOptions& o);

std::optional<LoweredNode> lowerGridSample(const Node& n, const std::string& name,
                                           const LowerOptions& o); // lower_grid.cpp
std::optional<LoweredNode> lowerDataFamily(const Node& n, const std::string& name,
                                           const LowerOptions& o);
// Slice, Tile, DepthToSpace, SpaceToDepth, EyeLike, OneHot, ConstantOfShape, Range
// (lower_rearrange.cpp).
std::optional<LoweredNode> lowerRearrange(const Node& n, const std::string& name,
                                          const LowerOptions& o);
// Attention (4-D, f32) as one call of the runtime's attention kernel (LowerOptions::
// runtimeKernels only).
std::optional<LoweredNode> lowerAttentionFamily(const Node& n, const std::string& name,
                                                const LowerOptions& o);
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (lower_loss.cpp).
std::optional<LoweredNode> lowerLossFamily(const Node& n, const std::string& name,
                                           const LowerOptions& o);
// GRU and LSTM as micro-kernel calls (lower_rnn.cpp; JIT only, see there).
// Det by partial pivoting in double (lower_det.cpp).
std::optional<LoweredNode> lowerDet(const Node& n, const std::string& name, const LowerOptions& o);
// The ai.onnx.preview.training optimizers Adagrad, Momentum, Adam (lower_training.cpp).
std::optional<LoweredNode> lowerTrainingFamily(const Node& n, const std::string& name,
                                               const LowerOptions& o);
std::optional<LoweredNode> lowerLinearAttentionFamily(const Node& n, const std::string& name,
                                                      const LowerOptions& o);
std::optional<LoweredNode> lowerRnnFamily(const Node& n, const std::string& name,
                                          const LowerOptions& o);
// aicc.Fused kind="epilogue", and elementwise activations without a compute definition in
// compute.h (HardSwish, Swish, Gelu, ...) as single-node chains.
std::optional<LoweredNode> lowerEpilogueFamily(const Node& n, const std::string& name,
                                               const LowerOptions& o, const std::string& candidate);
// A reduction-like node (Reduce*, Softmax, LogSoftmax, LayerNormalization) lowered into an
// existing builder (whose node provides the output); nullopt when n is none of those.
std::optional<LoweredNode> lowerReductionInto(const Node& n, FuncBuilder& b, const LowerOptions& o);

// The scalar expression of an elementwise op of the epilogue chain (compute.h, plus a few
// activations); nullptr + why when not covered.
ExprPtr chainExpr(const Node& x, const std::vector<ExprPtr>& in, DType out, std::string* why);
// The activations chainExpr defines beyond compute.h (HardSwish, Swish, Gelu, Softplus, Mish,
// Selu, Celu, ThresholdedRelu).
bool isChainActivation(const std::string& op);

// The body of a head op (Conv, Gemm, MatMul) writing `outParam` of the builder, used by the
// epilogue lowering: the head's inputs are bound through `bind` (inner value -> outer value).
using Bind = std::map<const Value*, const Value*>;
// A clamp (Relu, Clip with constant bounds) that ends an epilogue chain, offered to the head's
// micro-kernel: when the head applies it, it sets `consumed` and the chain is not emitted.
// The epilogue a micro-kernel applies itself: a clamp (Relu, Clip) or one activation
// (kernels::kAct*: HardSwish, Swish, Sigmoid), set when the chain is that one op.
struct FusedClamp {
  bool hasLo = false, hasHi = false;
  double lo = 0, hi = 0;
  unsigned act = 0; // kernels::kAct*
  bool consumed = false;
  // A residual operand (the output's shape) added before the clamp; only the GEMM convolution
  // and packed GEMM calls take it (clampArgs(.., true) + residualArg), the others leave the
  // whole chain to the loop nest.
  std::string residual;
  // A MatMul's bias row (a constant of N values, Add(head, bias)), added by the packed GEMM kernel.
  const Value* bias = nullptr;
};
Block matMulBody(FuncBuilder& b, const Node& head, const Bind& bind, const std::string& outParam,
                 const LowerOptions& o, const std::string& candidate, Schedule& sched,
                 FusedClamp* clamp = nullptr);
Block convBody(FuncBuilder& b, const Node& head, const Bind& bind, const std::string& outParam,
               const LowerOptions& o, const std::string& candidate, Schedule& sched,
               FusedClamp* clamp = nullptr);

// Conv-like geometry (Conv, QLinearConv: group, strides, dilations, pads / auto_pad) checked
// against the static shapes of x [N, C, spatial...], w [M, C/G, k...] and y [N, M, out...].
struct ConvShape {
  int64_t N = 0, C = 0, M = 0, G = 1;
  Dims in, out, k, stride, dil, padBegin, padEnd;
};
ConvShape convShape(const Node& head, const Dims& xd, const Dims& wd, const Dims& yd);

// QuantizeLinear, DequantizeLinear, QLinearMatMul, com.microsoft QLinearAdd /
// QLinearGlobalAveragePool (lower_quant.cpp) and QLinearConv (lower_qconv.cpp); JIT only.
std::optional<LoweredNode> lowerQuantFamily(const Node& n, const std::string& name,
                                            const LowerOptions& o);
// ConvInteger with constant weights on the int8 GEMM kernels (int32 results), or nullopt.
std::optional<LoweredNode> lowerConvIntegerCall(const Node& n, const std::string& name,
                                                const LowerOptions& o);
std::optional<LoweredNode> lowerQConv(const Node& n, const std::string& name,
                                      const LowerOptions& o);

// Candidate names understood by the lowerings.
inline constexpr const char* kLoopCandidate = "loop";
// Micro-kernel candidates are "ukernel:<descriptor name>" (kernels/registry.h).
std::string ukernelCandidate(const std::string& desc);

// The clamp arguments (flags, lo, hi) of the NCHW micro-kernel calls: flags bit 0 = lo present,
// bit 1 = hi present. Marks the clamp consumed.
std::vector<CallArg> clampArgs(FusedClamp* clamp, bool takesResidual = false);
// The residual argument of a call that takes one: the operand at `offset`, or 0.
CallArg residualArg(const FusedClamp* clamp, ExprPtr offset);
// A zero point's value at index `at` (at 0 when the buffer holds one value, per tensor) as `t`;
// 0 when v is null (an omitted zero point).
ExprPtr zeroPointAt(FuncBuilder& b, const Value* v, const ExprPtr& at, DType t);
// The `precision` of the int8 lowerings' schedules (QLinearConv, QLinearMatMul): the report's
// view of every task (runtime/artifact_build.cpp gives the others their result's type).
inline const char* const kInt8Precision = "int8 operands, int32 accumulation";
// Records a micro-kernel choice in a schedule: candidate, micro_kernel, and fused_clamp when the
// kernel applies the epilogue's clamp.
void markKernel(Schedule& sched, const char* kernel, const FusedClamp* clamp = nullptr);

} // namespace aicc::loop::detail
