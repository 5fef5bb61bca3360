// MatMul and Gemm: a loop nest (i, k, j order: the j loop is vectorized over contiguous rows of
// B and C) or calls of an f32 GEMM micro-kernel (one per batch matrix; B packed by the call).
// MatMulInteger on the loop nest, in int32.
#include "kernels/gemm.h"
#include "kernels/registry.h"
#include "loop/lower_ops.h"

#include <cmath>

namespace aicc::loop::detail {

RunMatMulShape runMatmulShape(const std::vector<ExprPtr>& ar, const std::vector<ExprPtr>& br,
                              bool transA, bool transB) {
  if (ar.empty() || br.empty()) no("MatMul operands of rank 0");
  RunMatMulShape s;
  s.M = ar.size() == 1 ? intImm(1) : ar[ar.size() - (transA ? 1 : 2)];
  s.K = ar[ar.size() - (transA ? 2 : 1)];
  s.N = br.size() == 1 ? intImm(1) : br[br.size() - (transB ? 2 : 1)];
  if (!equal(s.K, br.size() == 1 ? br[0] : br[br.size() - (transB ? 1 : 2)]))
    no("inner dims that are not the same symbolic size");
  // Batch dims, right-aligned (numpy's matmul): the run's extent and each side's stride.
  const size_t na = ar.size() > 2 ? ar.size() - 2 : 0, nb = br.size() > 2 ? br.size() - 2 : 0;
  const size_t nbat = std::max(na, nb);
  const std::vector<ExprPtr> as = stridesOf(ar), bs = stridesOf(br);
  for (size_t k = 0; k < nbat; ++k) {
    const bool inA = k + na >= nbat, inB = k + nb >= nbat;
    ExprPtr ea = inA ? ar[k + na - nbat] : intImm(1), eb = inB ? br[k + nb - nbat] : intImm(1);
    ExprPtr sa = inA ? as[k + na - nbat] : intImm(0), sb = inB ? bs[k + nb - nbat] : intImm(0);
    if (!equal(ea, eb) && asInt(ea) != 1 && asInt(eb) != 1)
      no("batch dims that are neither the same symbolic size nor 1");
    if (asInt(ea) == 1 && !equal(ea, eb)) sa = intImm(0);
    if (asInt(eb) == 1 && !equal(ea, eb)) sb = intImm(0);
    s.batch.push_back(asInt(ea) == 1 ? eb : ea), s.aStride.push_back(sa), s.bStride.push_back(sb);
  }
  return s;
}

void checkRunMatmulResult(const LowerOptions& o, const Value* r, const RunMatMulShape& s, bool hasM,
                          bool hasN) {
  if (!r || !r->type.shape) return;
  std::vector<ExprPtr> want = s.batch;
  if (hasM) want.push_back(s.M);
  if (hasN) want.push_back(s.N);
  if (!equalDims(runDims(o, r, staticDims(r, "output")), want))
    no("a result whose symbolic dims are not the operands' batch, M and N");
}

namespace {

const Value* outerOf(const Bind& bind, const Value* v) {
  auto it = bind.find(v);
  return it != bind.end() ? it->second : v;
}

// Picks the GEMM kernel of a "ukernel:NAME" candidate, or the default one for "" (bf16 where
// allowed and packable). A bf16 kernel needs --precision bf16 and weights packed at compile time.
const kernels::KernelDesc* gemmKernelFor(const std::string& candidate, bool applicable,
                                         const LowerOptions& o, bool packable) {
  if (candidate == kLoopCandidate || !applicable) return nullptr;
  if (candidate.empty()) {
    const auto* bf = kernels::bestKernel(kernels::KernelOp::GemmBf16, o.kernelIsa);
    if (o.bf16 && o.runtimeKernels && packable && bf) return bf;
    return &kernels::defaultKernel(kernels::KernelOp::Gemm, o.kernelIsa);
  }
  if (candidate.rfind("ukernel:", 0) != 0) no("unknown candidate '" + candidate + "'");
  const auto* d = kernels::findKernel(candidate.substr(8));
  if (!d || !kernels::isGemmOp(d->op) || !kernels::isaWithin(d->isa, o.kernelIsa))
    no("candidate '" + candidate + "' is not a GEMM kernel this CPU runs");
  if (d->op == kernels::KernelOp::GemmBf16 && !o.bf16)
    no("candidate '" + candidate + "' needs --precision bf16");
  if (d->op == kernels::KernelOp::GemmBf16 && !(o.runtimeKernels && packable))
    no("candidate '" + candidate + "' needs constant 2-D weights (packed at compile time)");
  return d;
}

struct GemmShape {
  int64_t M = 0, N = 0, K = 0;
  bool transA = false, transB = false;
  Dims batch;                          // output batch dims
  std::vector<int64_t> aBatch, bBatch; // per output batch dim: element stride (0 = broadcast)
};

// MatMulInteger with a constant 2-D B, exactly on a float GEMM kernel: |a - a_zero_point| <= 255
// and |b - b_zero_point| <= maxB (read off the constant), so over K blocks of
// (2^24 - 1) / (255 * maxB) values every partial sum is an integer below 2^24 in magnitude, exact
// in f32 in any order. Each block is one call of the packed kernel (B's block, less its zero
// points, packed at compile time) into an f32 temp, converted and added to the int32 result.
// `rows`: the batch folded into M.
Block matMulIntegerOnFloatGemm(FuncBuilder& b, const Node& head, const Bind& bind,
                               const std::string& outParam, const LowerOptions& o, Schedule& sched,
                               const GemmShape& g, int64_t rows) {
  // Integers of magnitude <= 256 are exact in bf16 too, and the bf16 kernels accumulate in f32:
  // where the CPU has one (AMX, AVX512-BF16) it runs the blocks, exactly, at half the bytes of
  // packed weights and (AMX) several times the f32 kernel's rate.
  const auto* bf = kernels::bestKernel(kernels::KernelOp::GemmBf16, o.kernelIsa);
  const auto& kd = bf ? *bf : kernels::defaultKernel(kernels::KernelOp::Gemm, o.kernelIsa);
  const Value* av = outerOf(bind, head.inputs[0]);
  const Tensor& B = *outerOf(bind, head.inputs[1])->constant;
  const DType f = DType::F32, i32 = DType::I32;
  // b's zero points (constant here: one, or one per column).
  std::vector<double> bz(size_t(g.N), 0.0);
  if (head.hasInput(3)) {
    const Value* z = outerOf(bind, head.inputs[3]);
    if (!z->constant) no(head.describe() + ": b_zero_point of a constant B is not a constant");
    const std::vector<double> v = z->constant->toF64Vector();
    for (int64_t n = 0; n < g.N; ++n) bz[size_t(n)] = v[v.size() == 1 ? 0 : size_t(n)];
  }
  double maxB = 1;
  for (int64_t k = 0; k < g.K; ++k)
    for (int64_t n = 0; n < g.N; ++n)
      maxB = std::max(maxB, std::fabs(B.getF64(k * g.N + n) - bz[size_t(n)]));
  const int64_t kBlock = std::max<int64_t>(1, int64_t(16777215.0 / (255.0 * maxB)));
  const std::string A = b.input(av), AF = b.temp("a_f32", f, {rows, g.K});
  const std::string CT = b.temp("c_f32", f, {rows, g.N});
  Block out;
  { // a - a_zero_point as floats (a's zero point: one, or one per row of each batch matrix)
    const std::string r = b.fresh("r"), k = b.fresh("k");
    const ExprPtr az = zeroPointAt(b, head.hasInput(2) ? outerOf(bind, head.inputs[2]) : nullptr,
                                   mod(var(r), intImm(g.M)), f);
    ExprPtr at = add(mul(var(r), intImm(g.K)), var(k));
    for (auto& st : nest({r, k}, {rows, g.K},
                         {Stmt::store(AF, at, sub(cast(f, load(A, at, av->type.dtype)), az))}, true,
                         vectorWidthFor(o, f, g.K)))
      out.push_back(std::move(st));
  }
  for (int64_t k0 = 0; k0 < g.K; k0 += kBlock) {
    const int64_t kc = std::min(kBlock, g.K - k0);
    Tensor bf(f, {kc, g.N});
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t n = 0; n < g.N; ++n)
        bf.data<float>()[k * g.N + n] = float(B.getF64((k0 + k) * g.N + n) - bz[size_t(n)]);
    Tensor packed(f, {kernels::packedBFloats(kd, kc, g.N)});
    kernels::packBInto(kd, bf.data<float>(), kc, g.N, g.N, false, packed.data<float>());
    const std::string BP =
        b.constant(b.fresh("b_block"), std::move(packed), std::string("packed_b:") + kd.name);
    std::vector<CallArg> a = {CallArg{AF, intImm(k0), nullptr},  CallArg{BP, nullptr, nullptr},
                              CallArg{CT, nullptr, nullptr},     CallArg{"", nullptr, intImm(rows)},
                              CallArg{"", nullptr, intImm(g.N)}, CallArg{"", nullptr, intImm(kc)},
                              CallArg{"", nullptr, intImm(g.K)}, CallArg{"", nullptr, intImm(g.N)},
                              CallArg{"", nullptr, intImm(0)}};
    for (auto& c : clampArgs(nullptr, true)) a.push_back(std::move(c));
    a.push_back(residualArg(nullptr, nullptr));
    out.push_back(Stmt::callKernel(std::string("gemm_packed_") + kd.name, a));
    const std::string i = b.fresh("i");
    ExprPtr sum = cast(i32, load(CT, var(i), f));
    if (k0 > 0) sum = add(load(outParam, var(i), i32), sum);
    for (auto& st : nest({i}, {rows * g.N}, {Stmt::store(outParam, var(i), sum)}, true,
                         vectorWidthFor(o, i32, rows * g.N)))
      out.push_back(std::move(st));
  }
  markKernel(sched, kd.name);
  sched["precision"] = std::string("int8 operands, exact int32 sums (") + (bf ? "bf16" : "f32") +
                       " GEMMs over K blocks of " + std::to_string(kBlock) +
                       ": partial sums below 2^24)";
  sched["packing"] = std::string("B less its zero points packed at compile time");
  return out;
}

// One call of the packed GEMM kernel kd over `rows` rows of A (lda K) into outParam (ldc N): B
// (the constant bv, [K, N] or with transB [N, K]) packed at compile time; a bias row of N values
// and a fused epilogue's clamp / residual applied in the kernel.
Stmt packedGemmCall(FuncBuilder& b, const kernels::KernelDesc& kd, const Value* bv, bool transB,
                    int64_t K, int64_t N, const std::string& A, const std::string& outParam,
                    ExprPtr rows, const Value* bias, FusedClamp* clamp, Schedule& sched,
                    const LowerOptions& o) {
  Tensor packed(DType::F32, {o.probe ? 0 : kernels::packedBFloats(kd, K, N)});
  if (!o.probe) // a probe needs no data
    kernels::packBInto(kd, bv->constant->data<float>(), K, N, transB ? K : N, transB,
                       packed.data<float>());
  const std::string BP =
      b.constant(b.input(bv) + "_packed", std::move(packed), std::string("packed_b:") + kd.name);
  std::vector<CallArg> a = {bufferArg(A),
                            bufferArg(BP),
                            bufferArg(outParam),
                            CallArg{"", nullptr, std::move(rows)},
                            intArg(N),
                            intArg(K),
                            intArg(K),
                            intArg(N),
                            bias ? bufferArg(b.input(bias)) : intArg(0)};
  for (auto& c : clampArgs(clamp, true)) a.push_back(std::move(c));
  a.push_back(residualArg(clamp, nullptr));
  markKernel(sched, kd.name, clamp);
  sched["packing"] = std::string("B packed at compile time");
  sched["tile"] = std::vector<int64_t>{kd.mr, kd.nr, kd.kc};
  return Stmt::callKernel(std::string("gemm_packed_") + kd.name, a);
}

// MatMul / Gemm at the run's sizes (symbolic dims, LowerOptions::runDim): M, N, K and the batch
// dims are the run's, every operand read at its run strides (row-major at the run's dims in
// buffers planned at the bounds). A constant 2-D B is packed at compile time and every row of A
// goes through one call (rows: the run's product of A's leading dims); run-time operands call the
// GEMM kernel per batch matrix (the run's lda / ldb / ldc); f64 and transposed A take the loop
// nest. Batch dims broadcast where one side's is 1; symbolic dims of the two sides must be the
// same expression (the shapes' symbols), else declined.
Block matMulAtRunSizes(FuncBuilder& b, const Node& head, const Value* av, const Value* bv,
                       const std::vector<ExprPtr>& ar, const std::vector<ExprPtr>& br,
                       const std::string& outParam, const LowerOptions& o,
                       const std::string& candidate, Schedule& sched, FusedClamp* clamp) {
  const bool isGemm = head.op == "Gemm";
  const DType t = av->type.dtype;
  if (head.op == "MatMulInteger") no("MatMulInteger at symbolic sizes");
  const bool transA = isGemm && head.attrInt("transA") != 0;
  const bool transB = isGemm && head.attrInt("transB") != 0;
  if (isGemm && (ar.size() != 2 || br.size() != 2)) no("Gemm operands must be 2-D");
  const RunMatMulShape rs = runMatmulShape(ar, br, transA, transB);
  const ExprPtr &M = rs.M, &K = rs.K, &N = rs.N;
  const std::vector<ExprPtr>&batch = rs.batch, &aStride = rs.aStride, &bStride = rs.bStride;
  const size_t nbat = batch.size();
  // The result's run dims are the batch, M (unless A is 1-D) and N (unless B is 1-D).
  checkRunMatmulResult(o, head.outputs.at(0), rs, ar.size() > 1, br.size() > 1 || isGemm);
  const Value* cv = isGemm && head.hasInput(2) ? head.inputs[2] : nullptr;
  const bool unitGemm =
      !isGemm || (head.attrFloat("alpha") == 1.0f && (!cv || head.attrFloat("beta") == 0.0f));
  const std::string A = b.input(av), B = b.input(bv);
  const ExprPtr lda = transA ? M : K, ldb = br.size() == 1 ? intImm(1) : (transB ? K : N);
  // A constant 2-D B (weights, static): packed now, every row of A in one call.
  const bool packable = bv->constant && br.size() == 2 && unitGemm && !transA && isImm(K) &&
                        isImm(N) && t == DType::F32;
  const auto* kd = gemmKernelFor(candidate, t == DType::F32 && !transA, o, packable);
  if (o.runtimeKernels && kd && packable && kd->op == kernels::KernelOp::Gemm) {
    const Value* bias = clamp && clamp->bias ? clamp->bias : nullptr;
    if (bias) clamp->consumed = true;
    return {packedGemmCall(b, *kd, bv, transB, *asInt(K), *asInt(N), A, outParam,
                           product(ar, 0, ar.size() - 1), bias, clamp, sched, o)};
  }
  std::vector<std::string> bvn;
  for (size_t k = 0; k < nbat; ++k) bvn.push_back(b.fresh("b" + std::to_string(k)));
  const std::vector<ExprPtr> bvars = vars(bvn);
  const ExprPtr offA = runIndex(bvars, aStride), offB = runIndex(bvars, bStride);
  const ExprPtr offC = mul(runIndex(bvars, stridesOf(batch)), mul(M, N));
  Block inner;
  if (kd && kd->op == kernels::KernelOp::Gemm) {
    inner.push_back(Stmt::callKernel(
        kd->name, {CallArg{A, offA, nullptr}, CallArg{B, offB, nullptr},
                   CallArg{outParam, offC, nullptr}, CallArg{"", nullptr, M},
                   CallArg{"", nullptr, N}, CallArg{"", nullptr, K}, CallArg{"", nullptr, lda},
                   CallArg{"", nullptr, ldb}, CallArg{"", nullptr, N}, intArg(transB)}));
    markKernel(sched, kd->name);
    sched["packing"] = std::string("packB at call");
  } else {
    const std::string i = b.fresh("i"), j = b.fresh("j"), k = b.fresh("k");
    const ExprPtr vi = var(i), vj = var(j), vk = var(k);
    const ExprPtr ai = add(offA, transA ? add(mul(vk, M), vi) : add(mul(vi, K), vk));
    const ExprPtr bi = add(offB, transB ? add(mul(vj, ldb), vk) : add(mul(vk, ldb), vj));
    const ExprPtr ci = add(offC, add(mul(vi, N), vj));
    Block row = runNest({j}, {N}, {Stmt::store(outParam, ci, constant(t, 0))}, false);
    Block sum =
        runNest({j}, {N},
                {Stmt::store(outParam, ci,
                             add(load(outParam, ci, t), mul(load(A, ai, t), load(B, bi, t))))},
                false);
    for (auto& s : runNest({k}, {K}, std::move(sum), false)) row.push_back(std::move(s));
    inner = runNest({i}, {M}, std::move(row), nbat == 0);
    sched["candidate"] = std::string(kLoopCandidate);
  }
  Block body = runNest(bvn, batch, std::move(inner), true);
  // Gemm: Y = alpha * A'B' + beta * C, C broadcast by its run dims.
  if (isGemm && !unitGemm) {
    const float alpha = head.attrFloat("alpha"), beta = head.attrFloat("beta");
    const std::string i = b.fresh("i"), j = b.fresh("j");
    const ExprPtr ci = add(mul(var(i), N), var(j));
    ExprPtr v = load(outParam, ci, t);
    if (alpha != 1.0f) v = mul(constant(t, alpha), v);
    if (cv && beta != 0.0f) {
      if (cv->type.dtype != t) no("Gemm C has a different element type");
      std::vector<ExprPtr> cr = runDims(o, cv, staticDims(cv, "C"));
      if (cr.size() > 2) no("Gemm C has rank > 2");
      while (cr.size() < 2) cr.insert(cr.begin(), intImm(1));
      for (size_t d = 0; d < 2; ++d)
        if (asInt(cr[d]) != 1 && !equal(cr[d], d == 0 ? M : N))
          no("Gemm C does not broadcast to the output at the run's sizes");
      const ExprPtr idx = add(asInt(cr[0]) == 1 ? intImm(0) : mul(var(i), cr[1]),
                              asInt(cr[1]) == 1 ? intImm(0) : var(j));
      const ExprPtr c = load(b.input(cv), idx, t);
      v = add(v, beta == 1.0f ? c : mul(constant(t, beta), c));
    }
    for (auto& s : runNest({i, j}, {M, N}, {Stmt::store(outParam, ci, v)}, true))
      body.push_back(std::move(s));
  }
  return body;
}

} // namespace

Block matMulBody(FuncBuilder& b, const Node& head, const Bind& bind, const std::string& outParam,
                 const LowerOptions& o, const std::string& candidate, Schedule& sched,
                 FusedClamp* clamp) {
  bool isGemm = head.op == "Gemm";
  // MatMulInteger: u8/i8 operands less their zero points (scalars, or a_zero_point per row of A
  // and b_zero_point per column of B), exact int32 sums, on the loop nest only.
  const bool integer = head.op == "MatMulInteger";
  const Value* av = outerOf(bind, head.inputs.at(0));
  const Value* bv = outerOf(bind, head.inputs.at(1));
  Dims ad = staticDims(av, "A"), bd = staticDims(bv, "B");
  DType t = av->type.dtype;
  const DType bt = bv->type.dtype;
  if (integer ? !isQ8(t) || !isQ8(bt) : !isComputeFloat(t) || bt != t)
    no(integer ? "MatMulInteger is lowered for u8/i8 operands only"
               : "MatMul/Gemm is lowered for f32/f64 only");
  const DType acc = integer ? DType::I32 : t;
  GemmShape g;
  if (isGemm) {
    g.transA = head.attrInt("transA") != 0, g.transB = head.attrInt("transB") != 0;
    if (ad.size() != 2 || bd.size() != 2) no("Gemm operands must be 2-D");
    g.M = g.transA ? ad[1] : ad[0], g.K = g.transA ? ad[0] : ad[1];
    g.N = g.transB ? bd[0] : bd[1];
    if ((g.transB ? bd[1] : bd[0]) != g.K) no("Gemm inner dimensions differ");
  } else {
    const MatMulShape ms = matmulShape(ad, bd);
    g.M = ms.M, g.K = ms.K, g.N = ms.N;
    g.batch = ms.batch, g.aBatch = ms.aBatch, g.bBatch = ms.bBatch;
  }
  if (o.runDim) { // symbolic sizes: M, N, K and the batch of the run
    const std::vector<ExprPtr> ar = runDims(o, av, ad), br = runDims(o, bv, bd);
    auto symbolic = [](const std::vector<ExprPtr>& v) {
      return std::any_of(v.begin(), v.end(), [](const ExprPtr& e) { return !isImm(e); });
    };
    if (symbolic(ar) || symbolic(br))
      return matMulAtRunSizes(b, head, av, bv, ar, br, outParam, o, candidate, sched, clamp);
  }
  std::string A = b.input(av), B = b.input(bv);
  int64_t lda = g.transA ? g.M : g.K, ldb = bd.size() == 1 ? 1 : (g.transB ? g.K : g.N);
  // Constant 2-D B (weights), JIT: B packed at compile time; the batch folds into M (A and C
  // are contiguous over it), and Gemm's bias and a trailing clamp go into the kernel.
  int64_t batchCount = numel(g.batch);
  bool bShared = true;
  for (int64_t st : g.bBatch) bShared &= st == 0;
  for (int64_t st : g.aBatch) bShared &= st != 0 || batchCount == 1;
  const Value* cv = isGemm && head.hasInput(2) ? outerOf(bind, head.inputs[2]) : nullptr;
  bool gemmFits = true; // Gemm: alpha 1 and no C, or C a bias row added with beta 1
  if (isGemm) {
    auto cd = cv && cv->type.shape ? toDims(*cv->type.shape) : std::nullopt;
    bool biasRow = cv && cv->type.dtype == t && cd && !cd->empty() && numel(*cd) == g.N &&
                   cd->back() == g.N;
    gemmFits = head.attrFloat("alpha") == 1.0f &&
               (!cv || (head.attrFloat("beta") == 1.0f && biasRow));
  }
  const bool packable = bv->constant && bShared && bd.size() == 2 && gemmFits;
  const auto* kd = gemmKernelFor(candidate, t == DType::F32 && !g.transA && !integer, o, packable);
  if (o.runtimeKernels && kd && packable) {
    // Gemm's C row, or a MatMul epilogue's Add(bias row) (the chain then drops the Add).
    if (!cv && clamp && clamp->bias) {
      cv = clamp->bias;
      clamp->consumed = true;
    }
    // Per sample (LowerOptions::samples): A's and C's rows of every sample follow each other,
    // so all samples are one call of samples * M rows.
    const bool allSamples = o.samples && !g.transA;
    if (allSamples) sched["samples"] = std::string("rows of one call");
    ExprPtr rows = intImm(batchCount * g.M);
    if (allSamples) rows = mul(o.samples, rows);
    return {packedGemmCall(b, *kd, bv, g.transB, g.K, g.N, A, outParam, rows, cv, clamp, sched, o)};
  }

  if (integer && o.runtimeKernels && bv->constant && bShared && bd.size() == 2 && !o.probe)
    return matMulIntegerOnFloatGemm(b, head, bind, outParam, o, sched, g, batchCount * g.M);

  std::vector<std::string> bv_;
  for (size_t k = 0; k < g.batch.size(); ++k) bv_.push_back(b.fresh("b" + std::to_string(k)));
  auto bvars = vars(bv_);
  ExprPtr offA = linearIndex(bvars, g.aBatch), offB = linearIndex(bvars, g.bBatch);
  ExprPtr offC = linearIndex(bvars, strides(g.batch));
  offC = mul(offC, intImm(g.M * g.N));

  Block inner;
  if (kd) {
    // Per sample, 2-D A: every sample's rows in one call (as the packed path).
    ExprPtr rows = intImm(g.M);
    if (o.samples && g.batch.empty() && !g.transA) {
      rows = mul(o.samples, rows);
      sched["samples"] = std::string("rows of one call");
    }
    inner.push_back(Stmt::callKernel(
        kd->name, {CallArg{A, offA, nullptr}, CallArg{B, offB, nullptr},
                   CallArg{outParam, offC, nullptr}, CallArg{"", nullptr, rows},
                   CallArg{"", nullptr, intImm(g.N)}, CallArg{"", nullptr, intImm(g.K)},
                   CallArg{"", nullptr, intImm(lda)}, CallArg{"", nullptr, intImm(ldb)},
                   CallArg{"", nullptr, intImm(g.N)}, CallArg{"", nullptr, intImm(g.transB)}}));
    markKernel(sched, kd->name);
    sched["packing"] = std::string("packB at call");
    sched["tile"] = std::vector<int64_t>{kd->mr, kd->nr, kd->kc};
  } else {
    std::string i = b.fresh("i"), j = b.fresh("j"), k = b.fresh("k");
    ExprPtr vi = var(i), vj = var(j), vk = var(k);
    ExprPtr ai = g.transA ? add(offA, add(mul(vk, intImm(g.M)), vi))
                          : add(offA, add(mul(vi, intImm(g.K)), vk));
    ExprPtr bi = g.transB ? add(offB, add(mul(vj, intImm(ldb)), vk))
                          : add(offB, add(mul(vk, intImm(ldb)), vj));
    ExprPtr ci = add(offC, add(mul(vi, intImm(g.N)), vj));
    int64_t w = vectorWidthFor(o, acc, g.N);
    ExprPtr a = load(A, ai, t), bb = load(B, bi, bt);
    if (integer) { // the zero points, by row of A and column of B when not scalars
      auto input = [&](size_t k) {
        return head.hasInput(k) ? outerOf(bind, head.inputs[k]) : nullptr;
      };
      a = sub(cast(DType::I32, a), zeroPointAt(b, input(2), vi, DType::I32));
      bb = sub(cast(DType::I32, bb), zeroPointAt(b, input(3), vj, DType::I32));
    }
    Block init = nest({j}, {g.N}, {Stmt::store(outParam, ci, constant(acc, 0))}, false, w);
    Block sum =
        nest({j}, {g.N}, {Stmt::store(outParam, ci, add(load(outParam, ci, acc), mul(a, bb)))},
             false, w);
    Block rowBody = std::move(init);
    for (auto& s : nest({k}, {g.K}, std::move(sum), false)) rowBody.push_back(std::move(s));
    inner = nest({i}, {g.M}, std::move(rowBody), g.batch.empty());
    sched["candidate"] = std::string(kLoopCandidate);
    sched["loop_order"] = std::vector<std::string>{i, k, j};
    sched["vector_width"] = w;
    sched["parallel"] = std::vector<std::string>{g.batch.empty() ? i : bv_[0]};
  }
  Block body = nest(bv_, g.batch, std::move(inner), true);

  // Gemm: Y = alpha * A'B' + beta * C.
  if (isGemm) {
    float alpha = head.attrFloat("alpha"), beta = head.attrFloat("beta");
    const Value* cv = head.hasInput(2) ? outerOf(bind, head.inputs[2]) : nullptr;
    if (cv && cv->type.dtype != t) no("Gemm C has a different element type");
    if (alpha != 1.0f || (cv && beta != 0.0f)) {
      std::string i = b.fresh("i"), j = b.fresh("j");
      ExprPtr ci = add(mul(var(i), intImm(g.N)), var(j));
      ExprPtr v = load(outParam, ci, t);
      if (alpha != 1.0f) v = mul(constant(t, alpha), v);
      if (cv && beta != 0.0f) {
        Dims cd = staticDims(cv, "C");
        if (cd.size() > 2) no("Gemm C has rank > 2");
        while (cd.size() < 2) cd.insert(cd.begin(), 1);
        if ((cd[0] != 1 && cd[0] != g.M) || (cd[1] != 1 && cd[1] != g.N))
          no("Gemm C does not broadcast to the output");
        ExprPtr idx = add(cd[0] == 1 ? intImm(0) : mul(var(i), intImm(cd[1])),
                          cd[1] == 1 ? intImm(0) : var(j));
        ExprPtr c = load(b.input(cv), idx, t);
        v = add(v, beta == 1.0f ? c : mul(constant(t, beta), c));
      }
      for (auto& s : nest({i, j}, {g.M, g.N}, {Stmt::store(outParam, ci, v)}, true,
                          vectorWidthFor(o, t, g.N)))
        body.push_back(std::move(s));
    }
  }
  return body;
}

std::optional<LoweredNode> lowerMatMulFamily(const Node& n, const std::string& name,
                                             const LowerOptions& o, const std::string& candidate) {
  if (!n.domain.empty() || (n.op != "MatMul" && n.op != "Gemm" && n.op != "MatMulInteger"))
    return std::nullopt;
  FuncBuilder b(n, name, "matmul");
  std::string out = b.output(0);
  Schedule sched;
  Block body = matMulBody(b, n, {}, out, o, candidate, sched);
  return b.finish(std::move(body), std::move(sched), o);
}

} // namespace aicc::loop::detail
