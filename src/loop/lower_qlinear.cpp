// QLinearMatMul and the com.microsoft ops QLinearAdd / QLinearMul / QLinearGlobalAveragePool as
// loop nests, and com.microsoft.MatMulIntegerToFloat (below)
// (JIT only), with the arithmetic of their reference kernels (src/ops/quant.cpp, quant_ms.cpp):
//   QLinearAdd   c = sat(round(a * (As/Cs) + b * (Bs/Cs) + k)), k = Cz - (As/Cs) Az - (Bs/Cs) Bz
//                (float32, in that order; numpy broadcasting)
//   QLinearMul   c = sat(round(f32((a - Az)(b - Bz)) * (As * Bs / Cs)) + Cz) (the same)
//   QLinearGlobalAveragePool   y = sat(round(f32(sum(x) - xz * n) * (xs / (ys * n))) + yz)
//   QLinearMatMul  acc = sum (a - az)(b - bz[n]) (int32), y = sat(round(f64(acc) * f + yz)) with
//                f = f32(f32(as * bs[n]) / ys); a [..., M, K], b [..., K, N] (batch dims
//                broadcast)
// Scales and zero points are per tensor (b's also per column); all read from their buffers.
// QLinearMatMul with a constant b (b - bz within int8) and constant scales and zero points calls
// the runtime kernel @qmatmul_u8s8 (kernels/qmatmul.h: the same arithmetic, b transposed and
// packed at compile time, columns split over the threads) instead; QLinearMatMul of two run-time
// operands with per-tensor constant scales (a QDQ attention's Q K^T and P V) calls
// @qmatmul_pairs_<DqGemm kernel> (b packed per product at run time).
#include "kernels/dqgemm.h"
#include "kernels/qmatmul.h"
#include "kernels/registry.h"
#include "loop/lower_quant.h"
#include "ops/op_def.h"
#include "ops/quant_util.h"

namespace aicc::loop::detail {

ExprPtr scalarIn(FuncBuilder& b, const Node& n, size_t i, DType t, const char* what) {
  if (!n.hasInput(i)) return constant(t, 0);
  const Value* v = n.inputs[i];
  if (numel(staticDims(v, what)) != 1) no(n.describe() + ": " + what + " is not a scalar");
  if (isFloat(v->type.dtype) && v->type.dtype != DType::F32)
    no(n.describe() + ": " + what + " is not f32");
  ExprPtr e = load(b.input(v), intImm(0), v->type.dtype);
  return v->type.dtype == t ? e : cast(t, e);
}

namespace {

// Declines an operand that does not broadcast to `out` (numpy rules, right-aligned).
void requireBroadcast(const Node& n, const Dims& in, const Dims& out) {
  if (in.size() > out.size()) no(n.describe() + ": an operand of higher rank than the result");
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1 && in[d] != out[lead + d])
      no(n.describe() + ": " + formatDims(in) + " does not broadcast to " + formatDims(out));
}

void requireQ8Same(const Node& n, std::initializer_list<const Value*> vs) {
  for (const Value* v : vs)
    if (!isQ8(v->type.dtype) || v->type.dtype != (*vs.begin())->type.dtype)
      no(n.describe() + ": lowered for u8/i8 operands of one type only");
}

// QLinearAdd, or (isMul) QLinearMul.
std::optional<LoweredNode> lowerQLinearBinary(const Node& n, const std::string& name,
                                              const LowerOptions& o, bool isMul) {
  const Value *av = n.inputs.at(0), *bv = n.inputs.at(3), *yv = n.outputs.at(0);
  requireQ8Same(n, {av, bv, yv});
  const DType t = av->type.dtype, f = DType::F32;
  FuncBuilder b(n, name, "quant");
  std::string Y = b.output(0), A = b.input(av), B = b.input(bv);
  const Dims ad = staticDims(av, "A"), bd = staticDims(bv, "B"), yd = staticDims(yv, "C");
  ExprPtr cs = scalarIn(b, n, 6, f, "C_scale");
  ExprPtr as = scalarIn(b, n, 1, f, "A_scale"), bs = scalarIn(b, n, 4, f, "B_scale");
  ExprPtr az = scalarIn(b, n, 2, f, "A_zero_point"), bz = scalarIn(b, n, 5, f, "B_zero_point");
  ExprPtr cz = scalarIn(b, n, 7, f, "C_zero_point");
  // Add: ac, bc, k as above. Mul: ac = the ratio, bc = B's zero point, k = A's, and C's zero
  // point after the rounding.
  ExprPtr ac = isMul ? div(mul(as, bs), cs) : div(as, cs);
  ExprPtr bc = isMul ? bz : div(bs, cs);
  ExprPtr k = isMul ? az : sub(sub(cz, mul(ac, az)), mul(bc, bz));
  requireBroadcast(n, ad, yd);
  requireBroadcast(n, bd, yd);
  // The elementwise loops (flatSpace): merged dims, the outer one split over the threads.
  const FlatSpace fs = flatSpace(yd, {ad, bd}, vectorWidthFor(o, f, 1 << 20));
  const Dims ext = fs.extents();
  std::vector<std::string> vs;
  for (size_t d = 0; d < ext.size(); ++d) vs.push_back(b.loopVar("i" + std::to_string(d)));
  auto index = [&](const Dims& shape) { return linearIndex(vars(vs), fs.strideOf(shape)); };
  // The scalar factors are computed once, before the loops (read from buffers, they would
  // otherwise be reloaded per element: the output store may alias them).
  // (fresh names: a buffer may be called "k")
  const std::string acv = b.fresh("ac"), bcv = b.fresh("bc"), kv = b.fresh("k"),
                    czv = b.fresh("cz");
  Block out = {Stmt::let(acv, ac), Stmt::let(bcv, bc), Stmt::let(kv, k)};
  if (isMul) out.push_back(Stmt::let(czv, cz));
  ExprPtr a = cast(f, load(A, index(ad), t));
  ExprPtr bb = cast(f, load(B, index(bd), t));
  ExprPtr v =
      isMul ? add(call("round", {mul(mul(sub(a, var(kv, f)), sub(bb, var(bcv, f))), var(acv, f))}),
                  var(czv, f))
            : call("round", {add(add(mul(a, var(acv, f)), mul(bb, var(bcv, f))), var(kv, f))});
  Block body = {Stmt::store(Y, index(yd), cast(t, v))};
  if (ext.empty()) {
    out.insert(out.end(), body.begin(), body.end());
    return b.finish(std::move(out), {}, o);
  }
  const int64_t w = vectorWidthFor(o, f, ext.back());
  Block loops = nest(vs, ext, std::move(body), fs.parallel, w);
  out.insert(out.end(), loops.begin(), loops.end());
  return b.finish(std::move(out), {}, o);
}

std::optional<LoweredNode> lowerQGlobalAvgPool(const Node& n, const std::string& name,
                                               const LowerOptions& o) {
  const Value *xv = n.inputs.at(0), *yv = n.outputs.at(0);
  requireQ8Same(n, {xv, yv});
  const DType t = xv->type.dtype, f = DType::F32;
  const Dims xd = staticDims(xv, "X");
  if (xd.size() < 3) no(n.describe() + ": X of rank < 3");
  const bool last = n.attrInt("channels_last") != 0;
  const int64_t N = xd[0], C = last ? xd.back() : xd[1], img = numel(xd) / std::max<int64_t>(1, N * C);
  FuncBuilder b(n, name, "pool");
  std::string Y = b.output(0), X = b.input(xv), S = b.temp("sum", DType::I64, {N * C});
  ExprPtr scale = div(scalarIn(b, n, 1, f, "x_scale"),
                      mul(scalarIn(b, n, 3, f, "y_scale"), constant(f, double(img))));
  // One parallel loop over the N * C (image, channel) rows: a single image's channels split too.
  std::string rv = b.loopVar("row"), pv = b.loopVar("p");
  ExprPtr row = var(rv);
  ExprPtr xIdx = last ? add(mul(add(mul(div(row, intImm(C)), intImm(img)), var(pv)), intImm(C)),
                            mod(row, intImm(C)))
                      : add(mul(row, intImm(img)), var(pv));
  ExprPtr sum = load(S, row, DType::I64);
  Block body = {Stmt::store(S, row, mul(scalarIn(b, n, 2, DType::I64, "x_zero_point"), intImm(-img)))};
  for (auto& s : nest({pv}, {img}, {Stmt::store(S, row, add(sum, cast(DType::I64, load(X, xIdx, t))))},
                      false))
    body.push_back(std::move(s));
  ExprPtr q = add(call("round", {mul(cast(f, sum), scale)}), scalarIn(b, n, 4, f, "y_zero_point"));
  body.push_back(Stmt::store(Y, row, cast(t, q)));
  Schedule sched;
  sched["layout"] = std::string(last ? "nhwc" : "nchw");
  return b.finish(nest({rv}, {N * C}, std::move(body), true), std::move(sched), o);
}

// Per-tensor or per-column input i of QLinearMatMul at column `col` as `t`.
ExprPtr columnIn(FuncBuilder& b, const Node& n, size_t i, int64_t N, const ExprPtr& col, DType t,
                 const char* what) {
  if (!n.hasInput(i) || numel(staticDims(n.inputs[i], what)) == 1) return scalarIn(b, n, i, t, what);
  const Value* v = n.inputs[i];
  if (staticDims(v, what) != Dims{N} || (isFloat(v->type.dtype) && v->type.dtype != DType::F32))
    no(n.describe() + ": " + what + " is neither per tensor nor per column");
  return cast(t, load(b.input(v), col, v->type.dtype));
}

// QLinearMatMul's constant scales and zero points with b's per tensor (N = 1) or per column, and
// the reference's requantization factors f32(f32(as * bs[n]) / ys) [N] as f64; nullopt when one
// is not a constant (f32 scales) of those shapes or a factor is not finite: the loop nest then.
struct QMatMulConsts {
  int64_t az = 0, yz = 0;
  std::vector<double> bz;
  Tensor factor;
};
std::optional<QMatMulConsts> qmatmulConsts(const Node& n, int64_t N) {
  for (size_t i : {1, 2, 4, 5, 6, 7})
    if (n.hasInput(i) && !n.inputs[i]->constant) return std::nullopt;
  const DType st = n.inputs[1]->type.dtype;
  if (st != DType::F32 || n.inputs[4]->type.dtype != st || n.inputs[6]->type.dtype != st)
    return std::nullopt;
  QMatMulConsts c;
  std::vector<double> as, bs, ys;
  try {
    as = quantConst(n, 1, 1, "a_scale"), c.az = int64_t(quantConst(n, 2, 1, "a_zero_point")[0]);
    bs = quantConst(n, 4, N, "b_scale"), c.bz = quantConst(n, 5, N, "b_zero_point");
    ys = quantConst(n, 6, 1, "y_scale"), c.yz = int64_t(quantConst(n, 7, 1, "y_zero_point")[0]);
  } catch (const NotLowerable&) {
    return std::nullopt; // per-row a scales, or per-column b ones where N = 1
  }
  c.factor = Tensor(DType::F64, {N});
  for (int64_t k = 0; k < N; ++k) {
    const double f =
        roundToType(st, roundToType(st, as[0] * bs[bs.size() == 1 ? 0 : size_t(k)]) / ys[0]);
    if (!std::isfinite(f)) return std::nullopt;
    c.factor.data<double>()[k] = f;
  }
  return c;
}

// Rows from which QLinearMatMul takes the int8 GEMM tiles over the dot-product kernel.
constexpr int64_t kTileRows = 8;

// The @qmatmul_tiles_ (many rows) or @qmatmul_u8s8 call, or nullopt when b, the scales or the zero
// points are not constants of the shapes they take or b - bz leaves int8.
std::optional<LoweredNode> qmatmulCall(const Node& n, const std::string& name,
                                       const LowerOptions& o, const ExprPtr& R, int64_t rBound,
                                       int64_t K, int64_t N) {
  const Value *av = n.inputs.at(0), *bv = n.inputs.at(3), *yv = n.outputs.at(0);
  auto q = qmatmulConsts(n, N);
  if (!q || !bv->constant) return std::nullopt;
  const std::vector<double>& bz = q->bz;
  const Tensor& b = *bv->constant;
  Tensor w16(DType::I16, {K, N});
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < N; ++c)
      w16.data<int16_t>()[k * N + c] = static_cast<int16_t>(
          b.getI64(k * N + c) - static_cast<int64_t>(bz[bz.size() == 1 ? 0 : size_t(c)]));
  Tensor wT(DType::I8, {N, K});
  if (K >= (int64_t(1) << 16) ||
      !kernels::packQMatMulWeights(K, N, w16.data<int16_t>(), wT.data<int8_t>()))
    return std::nullopt;
  FuncBuilder fb(n, name, "matmul");
  std::string Y = fb.output(0), A = fb.input(av);
  Schedule sched;
  sched["accumulation"] = std::string("int32");
  sched["precision"] = std::string(kInt8Precision);
  // Many rows of a u8 a (a transformer's tokens): the int8 GEMM tiles, then the requantization.
  // A batch-1 classifier (a few rows) streams its weights once through the dot products below.
  const kernels::KernelDesc* kd = rBound >= kTileRows && av->type.dtype == DType::U8
                                      ? kernels::bestKernel(kernels::KernelOp::DqGemm, o.kernelIsa)
                                      : nullptr;
  if (kd) {
    const std::string callee = std::string("qmatmul_tiles_") + kd->name;
    std::vector<CallArg> args = {bufferArg(A)};
    for (auto& a : dqgemmWeights(fb, *kd, w16, o)) args.push_back(std::move(a));
    args.push_back(bufferArg(fb.constant("factor", std::move(q->factor), "f64 [N]")));
    args.push_back(bufferArg(Y));
    args.push_back(CallArg{"", nullptr, R});
    for (int64_t v : {K, N, q->az, q->yz, int64_t(yv->type.dtype == DType::I8) << 1})
      args.push_back(intArg(v));
    markKernel(sched, kd->name);
    sched["tile"] = std::vector<int64_t>{kd->mr, kd->nr};
    return fb.finish({Stmt::callKernel(callee, std::move(args))}, std::move(sched), o);
  }
  std::vector<CallArg> args = {
      bufferArg(A), bufferArg(fb.constant("wT", std::move(wT), "i8 [N, K], b - bzp transposed")),
      bufferArg(fb.constant("factor", std::move(q->factor), "f64 [N]")), bufferArg(Y)};
  args.push_back(CallArg{"", nullptr, R});
  for (int64_t v :
       {K, N, q->az, q->yz,
        int64_t(av->type.dtype == DType::I8) | int64_t(yv->type.dtype == DType::I8) << 1})
    args.push_back(intArg(v));
  sched["micro_kernel"] = std::string("qmatmul_u8s8");
  sched["parallel"] = std::vector<std::string>{"output columns"};
  return fb.finish({Stmt::callKernel("qmatmul_u8s8", std::move(args))}, std::move(sched), o);
}

// The element stride of an operand's matrices over the batch when it is one (0: every product
// reads the same matrix, mat: consecutive matrices of `mat` elements), else nullptr (a broadcast
// of some batch dims only). `st`: the operand's strides per batch dim (runMatmulShape: its own
// row-major strides, 0 where it is broadcast), so an operand with every batch dim is dense.
ExprPtr wholeStride(const std::vector<ExprPtr>& st, const std::vector<ExprPtr>& batch,
                    const ExprPtr& mat) {
  bool zero = true, dense = true;
  for (size_t d = 0; d < batch.size(); ++d) {
    if (asInt(batch[d]) == 1) continue;
    const bool broadcast = asInt(st[d]) == 0;
    zero &= broadcast, dense &= !broadcast;
  }
  return zero ? intImm(0) : dense ? mat : nullptr;
}

// QLinearMatMul of two run-time operands on the int8 GEMM tiles (@qmatmul_pairs_, one product per
// batch index, b packed per call), or nullopt: a not u8, no DqGemm kernel, scales or zero points
// not per-tensor constants, or batch dims that broadcast otherwise than whole operands. `kBound`:
// K at the bounds (the tiles take K < 2^15).
std::optional<LoweredNode> qmatmulPairsCall(const Node& n, const std::string& name,
                                            const LowerOptions& o, const RunMatMulShape& ms,
                                            int64_t kBound) {
  const Value *av = n.inputs.at(0), *bv = n.inputs.at(3), *yv = n.outputs.at(0);
  const kernels::KernelDesc* kd = kernels::bestKernel(kernels::KernelOp::DqGemm, o.kernelIsa);
  if (!kd || av->type.dtype != DType::U8 || kBound >= (int64_t(1) << 15)) return std::nullopt;
  auto q = qmatmulConsts(n, 1);
  if (!q) return std::nullopt;
  const ExprPtr aStride = wholeStride(ms.aStride, ms.batch, product({ms.M, ms.K})),
                bStride = wholeStride(ms.bStride, ms.batch, product({ms.K, ms.N}));
  if (!aStride || !bStride) return std::nullopt;
  FuncBuilder fb(n, name, "matmul");
  std::string Y = fb.output(0), A = fb.input(av), Bn = fb.input(bv);
  std::vector<CallArg> args = {bufferArg(A), bufferArg(Bn),
                               bufferArg(fb.constant("factor", std::move(q->factor), "f64 [1]")),
                               bufferArg(Y)};
  for (const ExprPtr& v : {product(ms.batch), ms.M, ms.K, ms.N, aStride, bStride})
    args.push_back(CallArg{"", nullptr, v});
  for (int64_t v :
       {q->az, int64_t(q->bz[0]), q->yz,
        int64_t(yv->type.dtype == DType::I8) << 1 | int64_t(bv->type.dtype == DType::I8) << 2})
    args.push_back(intArg(v));
  Schedule sched;
  sched["accumulation"] = std::string("int32");
  sched["precision"] = std::string(kInt8Precision);
  sched["packing"] = std::string("b per call, per product");
  markKernel(sched, kd->name);
  sched["tile"] = std::vector<int64_t>{kd->mr, kd->nr};
  return fb.finish({Stmt::callKernel(std::string("qmatmul_pairs_") + kd->name, std::move(args))},
                   std::move(sched), o);
}

std::optional<LoweredNode> lowerQLinearMatMul(const Node& n, const std::string& name,
                                              const LowerOptions& o) {
  const Value *av = n.inputs.at(0), *bv = n.inputs.at(3), *yv = n.outputs.at(0);
  if (!isQ8(av->type.dtype) || !isQ8(bv->type.dtype) || !isQ8(yv->type.dtype))
    no(n.describe() + ": QLinearMatMul is lowered for u8/i8 only");
  const Dims ad = staticDims(av, "a"), bd = staticDims(bv, "b");
  if (ad.size() < 2 || bd.size() < 2)
    no("QLinearMatMul is lowered for a [..., M, K] x b [..., K, N]");
  // Symbolic sizes: M, K, N and the batch the run's (immediates at static sizes).
  const MatMulShape bounds = matmulShape(ad, bd);
  const std::vector<ExprPtr> ar = runDims(o, av, ad), br = runDims(o, bv, bd);
  const RunMatMulShape ms = runMatmulShape(ar, br);
  checkRunMatmulResult(o, yv, ms, true, true);
  const ExprPtr &K = ms.K, &N = ms.N, &M = ms.M;
  if (bd.size() == 2 && bv->constant && isImm(K) && isImm(N))
    if (auto call = qmatmulCall(n, name, o, product(ar, 0, ar.size() - 1), numel(ad) / bounds.K,
                                bounds.K, bounds.N))
      return call;
  if (auto call = qmatmulPairsCall(n, name, o, ms, bounds.K)) return call;
  // The loop nest: rows r of the result [batch * M, N]; batch index r / M picks a's and b's
  // matrices (a broadcast batch dim steps by 0).
  const DType i32 = DType::I32, f = DType::F32;
  const ExprPtr R = product({product(ms.batch), M});
  FuncBuilder b(n, name, "matmul");
  std::string Y = b.output(0), A = b.input(av), B = b.input(bv);
  std::string ACC = b.temp("acc", i32, {numel(bounds.batch) * bounds.M, bounds.N});
  std::string rv = b.loopVar("r"), nv = b.loopVar("n"), kv = b.loopVar("k");
  ExprPtr r = var(rv), col = var(nv), kk = var(kv), yIdx = add(mul(r, N), col);
  // Element offsets of the batch's a and b matrices.
  std::vector<ExprPtr> bi(ms.batch.size());
  ExprPtr rest = div(r, M);
  for (size_t d = ms.batch.size(); d-- > 0;) {
    bi[d] = mod(rest, ms.batch[d]);
    rest = div(rest, ms.batch[d]);
  }
  ExprPtr aOff = runIndex(bi, ms.aStride), bOff = runIndex(bi, ms.bStride);
  ExprPtr acc = load(ACC, yIdx, i32);
  ExprPtr a = sub(cast(i32, load(A, add(aOff, add(mul(mod(r, M), K), kk)), av->type.dtype)),
                  scalarIn(b, n, 2, i32, "a_zero_point"));
  ExprPtr bk = sub(cast(i32, load(B, add(bOff, add(mul(kk, N), col)), bv->type.dtype)),
                   columnIn(b, n, 5, bounds.N, col, i32, "b_zero_point"));
  const int64_t w = vectorWidthFor(o, i32, bounds.N);
  Block body = runNest({nv}, {N}, {Stmt::store(ACC, yIdx, intImm(0, i32))}, false, w);
  for (auto& s :
       runNest({kv, nv}, {K, N}, {Stmt::store(ACC, yIdx, add(acc, mul(a, bk)))}, false, w))
    body.push_back(std::move(s));
  ExprPtr fac =
      div(mul(scalarIn(b, n, 1, f, "a_scale"), columnIn(b, n, 4, bounds.N, col, f, "b_scale")),
          scalarIn(b, n, 6, f, "y_scale"));
  ExprPtr v = add(mul(cast(DType::F64, acc), cast(DType::F64, fac)),
                  scalarIn(b, n, 7, DType::F64, "y_zero_point"));
  for (auto& s :
       runNest({nv}, {N}, {Stmt::store(Y, yIdx, cast(yv->type.dtype, call("round", {v})))}, false))
    body.push_back(std::move(s));
  Schedule sched;
  sched["accumulation"] = std::string("int32");
  sched["precision"] = std::string(kInt8Precision);
  return b.finish(runNest({rv}, {R}, std::move(body), true), std::move(sched), o);
}

// com.microsoft.MatMulIntegerToFloat (src/ops/quant.cpp): y = float(acc) * f32(a_scale *
// b_scale[n]), then + bias[n]. With a constant 2-D b (b - b_zero_point within int8), a u8 a and a
// DqGemm kernel for the target (AMX, AVX512-VNNI), one @dqgemm call (kernels/dqgemm.h: the int8
// tiles, the product in their epilogue); otherwise MatMulInteger's lowering (exact float GEMMs
// over K blocks, or the loop nest) into an int32 temp, then the product loop. The bias is added
// by its own loop after the product is stored, so the two round separately as in the reference.
std::optional<LoweredNode> lowerMatMulIntegerToFloat(const Node& n, const std::string& name,
                                                     const LowerOptions& o) {
  const Value *av = n.inputs.at(0), *bv = n.inputs.at(1), *yv = n.outputs.at(0);
  const DType f = DType::F32, i32 = DType::I32;
  if (!isQ8(av->type.dtype) || !isQ8(bv->type.dtype) || yv->type.dtype != f)
    no(n.describe() + ": MatMulIntegerToFloat is lowered for u8/i8 operands and f32 results only");
  const Dims ad = staticDims(av, "A"), bd = staticDims(bv, "B"), yd = staticDims(yv, "Y");
  if (ad.empty() || bd.size() != 2 || ad.back() != bd[0])
    no(n.describe() + ": MatMulIntegerToFloat is lowered for A [..., M, K] x B [K, N] only");
  const int64_t K = bd[0], N = bd[1], M = numel(yd) / std::max<int64_t>(N, 1);
  FuncBuilder b(n, name, "matmul");
  const std::string Y = b.output(0);
  Schedule sched;
  Block body;
  const kernels::KernelDesc* kd =
      o.runtimeKernels ? kernels::bestKernel(kernels::KernelOp::DqGemm, o.kernelIsa) : nullptr;
  auto perColumn = [&](size_t i) {
    return n.hasInput(i) && numel(staticDims(n.inputs[i], "a scale or zero point")) > 1;
  };
  // b - b_zero_point as int16, when b and its zero points are constants.
  std::optional<Tensor> w16;
  if (kd && bv->constant && av->type.dtype == DType::U8 && K < (int64_t(1) << 16) &&
      (!n.hasInput(5) || n.inputs[5]->constant)) {
    std::vector<double> bz;
    try {
      bz = quantConst(n, 5, N, "b_zero_point");
    } catch (const NotLowerable&) {
      bz.clear();
    }
    if (!bz.empty()) {
      w16.emplace(DType::I16, Dims{K, N});
      for (int64_t k = 0; k < K; ++k)
        for (int64_t c = 0; c < N; ++c)
          w16->data<int16_t>()[k * N + c] = static_cast<int16_t>(
              bv->constant->getI64(k * N + c) - int64_t(bz[bz.size() == 1 ? 0 : size_t(c)]));
      if (!kernels::dqgemmTakes(w16->data<int16_t>(), K * N)) w16.reset();
    }
  }
  if (w16) {
    std::vector<CallArg> args = {bufferArg(b.input(av)),
                                 n.hasInput(4) ? bufferArg(b.input(n.inputs[4])) : intArg(0)};
    for (auto& w : dqgemmWeights(b, *kd, *w16, o)) args.push_back(std::move(w));
    for (const Value* v : {n.inputs[2], n.inputs[3]}) args.push_back(bufferArg(b.input(v)));
    args.push_back(bufferArg(Y));
    for (int64_t v : {M, N, K, int64_t(perColumn(3))}) args.push_back(intArg(v));
    body.push_back(Stmt::callKernel(std::string("dqgemm_") + kd->name, std::move(args)));
    markKernel(sched, kd->name);
    sched["packing"] = std::string("B less its zero points packed at compile time");
    sched["tile"] = std::vector<int64_t>{kd->mr, kd->nr};
  } else {
    Node mmi; // MatMulInteger(A, B, a_zero_point, b_zero_point) into an int32 temp
    mmi.op = "MatMulInteger", mmi.name = n.name;
    mmi.inputs = {n.inputs[0], n.inputs[1], n.hasInput(4) ? n.inputs[4] : nullptr,
                  n.hasInput(5) ? n.inputs[5] : nullptr};
    const std::string ACC = b.temp("acc", i32, yd);
    body = matMulBody(b, mmi, {}, ACC, o, "", sched);
    const std::string rv = b.loopVar("r"), cv = b.loopVar("c");
    const ExprPtr idx = add(mul(var(rv), intImm(N)), var(cv));
    const ExprPtr mult =
        mul(scalarIn(b, n, 2, f, "a_scale"), columnIn(b, n, 3, N, var(cv), f, "b_scale"));
    for (auto& st :
         nest({rv, cv}, {M, N}, {Stmt::store(Y, idx, mul(cast(f, load(ACC, idx, i32)), mult))},
              true, vectorWidthFor(o, f, N)))
      body.push_back(std::move(st));
  }
  if (n.hasInput(6)) {
    const std::string rv = b.loopVar("r"), cv = b.loopVar("c");
    const ExprPtr idx = add(mul(var(rv), intImm(N)), var(cv));
    const ExprPtr bias = columnIn(b, n, 6, N, var(cv), f, "bias");
    for (auto& st : nest({rv, cv}, {M, N}, {Stmt::store(Y, idx, add(load(Y, idx, f), bias))}, true,
                         vectorWidthFor(o, f, N)))
      body.push_back(std::move(st));
  }
  sched["accumulation"] = std::string("int32");
  if (!sched.count("precision")) sched["precision"] = std::string(kInt8Precision);
  return b.finish(std::move(body), std::move(sched), o);
}

} // namespace

std::optional<LoweredNode> lowerQuantMs(const Node& n, const std::string& name,
                                        const LowerOptions& o) {
  const bool ms = n.domain == kMsDomain;
  if (n.domain.empty() && n.op == "QLinearMatMul")
    return requireRuntimeKernels(n, o), lowerQLinearMatMul(n, name, o);
  if (ms && (n.op == "QLinearAdd" || n.op == "QLinearMul"))
    return requireRuntimeKernels(n, o), lowerQLinearBinary(n, name, o, n.op == "QLinearMul");
  if (ms && n.op == "MatMulIntegerToFloat") return lowerMatMulIntegerToFloat(n, name, o);
  if (ms && n.op == "QLinearGlobalAveragePool")
    return requireRuntimeKernels(n, o), lowerQGlobalAvgPool(n, name, o);
  return std::nullopt;
}

} // namespace aicc::loop::detail
