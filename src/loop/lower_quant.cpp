// Quantization ops as loop nests (JIT only: LowerOptions::runtimeKernels), bit-exact with the
// reference kernels of src/ops/quant*.cpp:
//   QuantizeLinear    y = sat(round(f32(x / scale)) + zp)          f32 -> u8/i8
//   DequantizeLinear  y = (f32(x) - f32(zp)) * scale               u8/i8 -> f32
//   DynamicQuantizeLinear  the range of x, then QuantizeLinear to u8 (below)
// (per tensor, or per axis: scale/zp of x's `axis` extent), com.microsoft QLinearAdd and
// QLinearGlobalAveragePool (float32 arithmetic as ONNX Runtime, lower_qlinear.cpp) and
// QLinearMatMul (int32 accumulation, double requantization, lower_qlinear.cpp). `round` is half
// to even; `sat` is the IR's saturating float -> integer cast (NaN -> 0, as the reference's
// roundSat). Anything else declines with a reason.
#include "loop/lower_quant.h"
#include "kernels/dqgemm.h"
#include "ops/op_def.h"
#include "ops/quant_util.h"

namespace aicc::loop::detail {

std::vector<double> quantConst(const Node& n, size_t i, int64_t count, const char* what) {
  if (!n.hasInput(i)) return {0.0};
  const Value* v = n.inputs[i];
  if (!v->constant) no(n.describe() + ": " + what + " is not a constant");
  const Tensor& t = *v->constant;
  if (t.numel() != 1 && (t.rank() != 1 || t.numel() != count))
    no(fmt::format("{}: {} has shape {}, expected a scalar or [{}]", n.describe(), what,
                   formatDims(t.shape()), count));
  return t.toF64Vector();
}

void requireRuntimeKernels(const Node& n, const LowerOptions& o) {
  if (!o.runtimeKernels) no(n.describe() + ": quantized ops are lowered for the JIT only");
}

std::vector<CallArg> dqgemmWeights(FuncBuilder& b, const kernels::KernelDesc& kd, const Tensor& w16,
                                   const LowerOptions& o) {
  const int64_t K = w16.dim(0), N = w16.dim(1);
  const int16_t* w = w16.data<int16_t>();
  Tensor packed(DType::U8, {o.probe ? 0 : kernels::dqgemmPackedBytes(kd, K, N)});
  if (!o.probe) kernels::packDqGemmWeights(kd, K, N, w, packed.raw());
  Tensor colSum(DType::I32, {N});
  for (int64_t c = 0; c < N; ++c) {
    int32_t sum = 0;
    for (int64_t k = 0; k < K; ++k) sum += w[k * N + c];
    colSum.data<int32_t>()[c] = sum;
  }
  return {bufferArg(b.constant("b_packed", std::move(packed), std::string("packed_b:") + kd.name)),
          bufferArg(b.constant("col_sum", std::move(colSum), "i32 [N], sum over k of b - bzp"))};
}

std::optional<LoweredNode> lowerQuantMs(const Node& n, const std::string& name,
                                        const LowerOptions& o); // lower_qlinear.cpp

namespace {

// How x's flat elements map to their scale / zero point: per tensor (axis -1), along `axis` (a
// scale per index), or in blocks of block_size along it (a scale of x's rank, the axis dim
// ceil(x[axis] / block_size)).
int64_t quantAxis(const Node& n, const Dims& x) {
  const Dims s = staticDims(n.inputs.at(1), "scale");
  if (numel(s) == 1 && s.size() <= 1) return -1;
  const int64_t axis = normAxis(n.attrInt("axis"), x.size(), n), bs = n.attrInt("block_size");
  if (bs > 0) {
    Dims want = x;
    want[size_t(axis)] = (x[size_t(axis)] + bs - 1) / bs;
    if (s != want) no(n.describe() + ": a block scale of shape " + formatDims(s));
  } else if (s.size() != 1 || s[0] != x[size_t(axis)]) {
    no(n.describe() + ": a scale of shape " + formatDims(s) + " along axis " +
       std::to_string(axis));
  }
  if (n.hasInput(2) && staticDims(n.inputs[2], "zero point") != s)
    no(n.describe() + ": the zero point's shape differs from the scale's");
  return axis;
}

// The elementwise nest over x's dims: body(element index, scale index).
using QuantBody = std::function<ExprPtr(FuncBuilder&, const ExprPtr&, const ExprPtr&)>;
std::optional<LoweredNode> quantNest(const Node& n, const std::string& name,
                                     const LowerOptions& o, const QuantBody& f) {
  FuncBuilder b(n, name, "quant");
  std::string Y = b.output(0);
  const Dims x = staticDims(n.inputs[0], "x");
  const int64_t axis = quantAxis(n, x);
  // Per tensor: the elementwise loops of flatSpace (one merged dim, split over the threads);
  // per axis: x's own dims, the axis' variable indexing the scale.
  const FlatSpace fs = flatSpace(x, {x}, vectorWidthFor(o, DType::F32, 1 << 20));
  const Dims ext = axis < 0 ? fs.extents() : x;
  std::vector<std::string> vs;
  for (size_t d = 0; d < ext.size(); ++d) vs.push_back(b.loopVar("i" + std::to_string(d)));
  ExprPtr idx = ext.empty() ? intImm(0) : linearIndex(vars(vs), strides(ext));
  ExprPtr sIdx = axis < 0 ? intImm(0) : var(vs[size_t(axis)]);
  if (const int64_t bs = n.attrInt("block_size"); axis >= 0 && bs > 0) { // blocks along the axis
    std::vector<ExprPtr> at = vars(vs);
    at[size_t(axis)] = div(at[size_t(axis)], intImm(bs));
    Dims sd = x;
    sd[size_t(axis)] = (x[size_t(axis)] + bs - 1) / bs;
    sIdx = linearIndex(at, strides(sd));
  }
  Block body = {Stmt::store(Y, idx, f(b, idx, sIdx))};
  Schedule sched;
  sched["quant_axis"] = axis;
  if (ext.empty()) return b.finish(std::move(body), std::move(sched), o);
  const int64_t w = vectorWidthFor(o, DType::F32, ext.back());
  return b.finish(nest(vs, ext, std::move(body), axis < 0 ? fs.parallel : true, w),
                  std::move(sched), o);
}

// The integer types QuantizeLinear / DequantizeLinear are lowered for; float8 / float4
// (isByteFloat) take no rounding step (the cast rounds) and zero points of 0 (float4's is added).
bool quantInt(DType t) { return isQ8(t) || t == DType::I16 || t == DType::U16 || isSubByteInt(t); }

std::optional<LoweredNode> lowerQuantize(const Node& n, const std::string& name,
                                         const LowerOptions& o) {
  const DType out = n.outputs.at(0)->type.dtype;
  if (n.inputs.at(0)->type.dtype != DType::F32 || n.inputs.at(1)->type.dtype != DType::F32)
    no(n.describe() + ": QuantizeLinear is lowered for f32 x and scale only");
  if (!(quantInt(out) || isByteFloat(out)) || (n.hasInput(2) && n.inputs[2]->type.dtype != out))
    no(n.describe() + ": QuantizeLinear is lowered to 16/8/4/2-bit integers and float8/4 only");
  if (isByteFloat(out)) { // x / scale cast (saturating, to nearest even): float8 needs saturate
    if (out != DType::F4E2M1 && n.attrInt("saturate") == 0)
      no(n.describe() + ": QuantizeLinear to float8 with saturate = 0");
    return quantNest(n, name, o, [&](FuncBuilder& b, const ExprPtr& i, const ExprPtr& s) {
      ExprPtr q =
          div(load(b.input(n.inputs[0]), i, DType::F32), load(b.input(n.inputs[1]), s, DType::F32));
      return cast(out,
                  out == DType::F4E2M1
                      ? add(q, zeroPointAt(b, n.hasInput(2) ? n.inputs[2] : nullptr, s, DType::F32))
                      : q);
    });
  }
  const auto range = quantRange(out); // (no structured binding: lambdas capture it below)
  const auto lo = range.first, hi = range.second;
  if (n.attrInt("precision") != 0 && n.attrInt("precision") != 1)
    no(n.describe() + ": QuantizeLinear with a precision other than float");
  return quantNest(n, name, o, [&](FuncBuilder& b, const ExprPtr& i, const ExprPtr& s) {
    ExprPtr q = div(load(b.input(n.inputs[0]), i, DType::F32),
                    load(b.input(n.inputs[1]), s, DType::F32));
    // Saturated to the type's range first: casts into 4/2-bit types wrap.
    ExprPtr v = add(call("round", {q}),
                    zeroPointAt(b, n.hasInput(2) ? n.inputs[2] : nullptr, s, DType::F32));
    return cast(out,
                min(max(v, constant(DType::F32, double(lo))), constant(DType::F32, double(hi))));
  });
}

std::optional<LoweredNode> lowerDequantize(const Node& n, const std::string& name,
                                           const LowerOptions& o) {
  const DType xt = n.inputs.at(0)->type.dtype;
  if (!(quantInt(xt) || isByteFloat(xt)) || n.inputs.at(1)->type.dtype != DType::F32 ||
      n.outputs.at(0)->type.dtype != DType::F32)
    no(n.describe() + ": DequantizeLinear is lowered for 16/8/4/2-bit integers and float8/4 -> "
                      "f32 only");
  if (n.hasInput(2) && n.inputs[2]->type.dtype != xt)
    no(n.describe() + ": the zero point's type differs from x's");
  return quantNest(n, name, o, [&](FuncBuilder& b, const ExprPtr& i, const ExprPtr& s) {
    ExprPtr x = cast(DType::F32, load(b.input(n.inputs[0]), i, xt));
    // float8 / float4 zero points are 0 (the reference ignores them).
    ExprPtr dx = isByteFloat(xt)
                     ? x
                     : sub(x, zeroPointAt(b, n.hasInput(2) ? n.inputs[2] : nullptr, s, DType::F32));
    return mul(dx, load(b.input(n.inputs[1]), s, DType::F32));
  });
}

// DynamicQuantizeLinear, as the reference kernel (f32, in this order): mx = max(0, max x),
// mn = min(0, min x) (NaNs skipped), scale = (mx == mn ? 1 : mx - mn) / 255, zp =
// nearbyint(clamp(0 - mn / scale, 0, 255)), y = sat(round(x / scale) + zp) as u8. A vectorized
// pass for the range, then the elementwise loops.
std::optional<LoweredNode> lowerDynamicQuantize(const Node& n, const std::string& name,
                                                const LowerOptions& o) {
  const DType f = DType::F32, u8 = DType::U8;
  if (n.inputs.at(0)->type.dtype != f || n.outputs.size() != 3)
    no(n.describe() + ": DynamicQuantizeLinear is lowered for f32 x only");
  FuncBuilder b(n, name, "quant");
  const std::string X = b.input(n.inputs[0]), Y = b.output(0), S = b.output(1), Z = b.output(2);
  const Dims x = staticDims(n.inputs[0], "x");
  // The range in L lanes (lane l takes the elements l mod L, the tail lane 0), then the lanes
  // combined: the same max and min as the reference's serial pass, whatever the order (NaNs never
  // enter a lane, and from +0 a tie of -0 never replaces the running value).
  const int64_t total = numel(x), L = std::max<int64_t>(1, vectorWidthFor(o, f, total));
  const std::string R = b.temp("range", f, {2 * L}); // L maxima, then L minima
  const std::string lv = b.loopVar("l"), cv = b.loopVar("c");
  // std::max(R[at], x) or std::min (isMax false): a NaN x keeps the running value.
  auto keep = [&](const ExprPtr& at, const ExprPtr& xi, bool isMax) {
    const ExprPtr r = load(R, at, f);
    return Stmt::store(R, at, select(isMax ? cmp(Op::Lt, r, xi) : cmp(Op::Lt, xi, r), xi, r));
  };
  Block body = nest({lv}, {2 * L}, {Stmt::store(R, var(lv), constant(f, 0))}, false);
  for (auto& st : inLanes(b, total, L, [&](const ExprPtr&l, const ExprPtr&k) {
         const ExprPtr xi = load(X, k, f);
         return Block{keep(l, xi, true), keep(add(l, intImm(L)), xi, false)};
       }))
    body.push_back(std::move(st));
  const ExprPtr lane = add(var(cv), intImm(1));
  for (auto& st : nest({cv}, {L - 1},
                       {keep(intImm(0), load(R, lane, f), true),
                        keep(intImm(L), load(R, add(lane, intImm(L)), f), false)},
                       false))
    body.push_back(std::move(st));
  const ExprPtr mx = load(R, intImm(0), f), mn = load(R, intImm(L), f);
  const std::string sv = b.fresh("scale"), zv = b.fresh("zp");
  body.push_back(Stmt::let(
      sv, div(select(cmp(Op::Eq, mx, mn), constant(f, 1), sub(mx, mn)), constant(f, 255))));
  const ExprPtr z0 = sub(constant(f, 0), div(mn, var(sv, f)));
  const ExprPtr zc = select(cmp(Op::Lt, z0, constant(f, 0)), constant(f, 0),
                            select(cmp(Op::Lt, constant(f, 255), z0), constant(f, 255), z0));
  body.push_back(Stmt::let(zv, call("round", {zc})));
  body.push_back(Stmt::store(S, intImm(0), var(sv, f)));
  body.push_back(Stmt::store(Z, intImm(0), cast(u8, var(zv, f))));
  const FlatSpace fs = flatSpace(x, {x}, vectorWidthFor(o, f, 1 << 20));
  const Dims ext = fs.extents();
  std::vector<std::string> vs;
  for (size_t d = 0; d < ext.size(); ++d) vs.push_back(b.loopVar("j" + std::to_string(d)));
  const ExprPtr idx = ext.empty() ? intImm(0) : linearIndex(vars(vs), strides(ext));
  Block q = {Stmt::store(
      Y, idx, cast(u8, add(call("round", {div(load(X, idx, f), var(sv, f))}), var(zv, f))))};
  if (ext.empty())
    body.insert(body.end(), q.begin(), q.end());
  else
    for (auto& st : nest(vs, ext, std::move(q), fs.parallel, vectorWidthFor(o, f, ext.back())))
      body.push_back(std::move(st));
  Schedule sched;
  sched["parallel"] =
      std::vector<std::string>{"the quantization (the range is one vectorized pass)"};
  return b.finish(std::move(body), std::move(sched), o);
}

} // namespace

std::optional<LoweredNode> lowerQuantFamily(const Node& n, const std::string& name,
                                            const LowerOptions& o) {
  if (n.domain.empty()) {
    if (n.op == "DynamicQuantizeLinear")
      return requireRuntimeKernels(n, o), lowerDynamicQuantize(n, name, o);
    if (n.op == "QuantizeLinear") return requireRuntimeKernels(n, o), lowerQuantize(n, name, o);
    if (n.op == "DequantizeLinear")
      return requireRuntimeKernels(n, o), lowerDequantize(n, name, o);
    if (n.op == "QLinearConv") return lowerQConv(n, name, o);
  }
  return lowerQuantMs(n, name, o);
}

} // namespace aicc::loop::detail
