// Linear algebra: MatMul (numpy semantics: batch broadcasting, 1-D operands) and Gemm.
// Float types compute in f32 (f64 in double; f32 products are summed in double), integer types in
// int64 (wrapping back on store), through the GEMM loop of ops/nn_common.cpp.
#include "ops/nn.h"

namespace aicc {
namespace {

// The type a matmul computes in: f32 / f64 for floats, i64 for integers.
DType gemmType(DType t, const char* what) {
  if (isFloat(t)) return computeType(t);
  AICC_CHECK(t == DType::I32 || t == DType::I64 || t == DType::U32 || t == DType::U64,
             "{} has unsupported element type {}", what, dtypeName(t));
  return DType::I64;
}

template <typename F> void withGemmType(DType t, F&& f) {
  if (t == DType::F64)
    f(double{});
  else if (t == DType::I64)
    f(int64_t{});
  else
    f(float{});
}

std::vector<RValue> matmulKernel(KernelCtx& c) {
  const Tensor& A = c.in(0);
  const Tensor& B = c.in(1);
  AICC_CHECK(A.dtype() == B.dtype(), "A is {} but B is {}", dtypeName(A.dtype()),
             dtypeName(B.dtype()));
  AICC_CHECK(A.rank() >= 1 && B.rank() >= 1, "MatMul needs operands of rank >= 1, got {} and {}",
             formatDims(A.shape()), formatDims(B.shape()));
  Dims a = A.shape(), b = B.shape();
  if (A.rank() == 1) a.insert(a.begin(), 1);
  if (B.rank() == 1) b.push_back(1);
  const int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  AICC_CHECK(b[b.size() - 2] == K, "A {} and B {} have mismatched inner dims {} and {}",
             formatDims(A.shape()), formatDims(B.shape()), K, b[b.size() - 2]);
  Dims ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Dims batch = broadcastDims(ba, bb);
  Dims outShape = batch;
  if (A.rank() > 1) outShape.push_back(M);
  if (B.rank() > 1) outShape.push_back(N);
  DType ct = gemmType(A.dtype(), "A");
  Tensor x = A.dtype() == ct ? A : A.castTo(ct), w = B.dtype() == ct ? B : B.castTo(ct);
  Tensor y(ct, outShape);
  const int64_t nb = checkedNumel(batch);
  withGemmType(ct, [&](auto tag) {
    using T = decltype(tag);
    if (bb.empty()) {
      // B is one matrix: fold A's batch into its rows.
      gemmAcc<T>(nb * M, N, K, x.data<T>(), w.data<T>(), y.data<T>());
      return;
    }
    BroadcastIndexer ia(ba, batch), ib(bb, batch);
    for (int64_t i = 0; i < nb; ++i)
      gemmAcc<T>(M, N, K, x.data<T>() + ia(i) * M * K, w.data<T>() + ib(i) * K * N,
                 y.data<T>() + i * M * N);
  });
  return {RValue::of(y.dtype() == A.dtype() ? y : y.castTo(A.dtype(), false))};
}

void matmulInfer(InferCtx& c) {
  DType dt = c.inDType(0);
  const auto& as = c.inShape(0);
  const auto& bs = c.inShape(1);
  if (!as || !bs) return c.setTensor(0, dt, std::nullopt);
  AICC_CHECK(!as->empty() && !bs->empty(), "MatMul needs operands of rank >= 1, got {} and {}",
             formatShape(*as), formatShape(*bs));
  Shape a = *as, b = *bs;
  if (as->size() == 1) a.insert(a.begin(), Dim::known(1));
  if (bs->size() == 1) b.push_back(Dim::known(1));
  Dim ka = a.back(), kb = b[b.size() - 2];
  AICC_CHECK(!ka.isStatic() || !kb.isStatic() || ka.value == kb.value,
             "A {} and B {} have mismatched inner dims", formatShape(*as), formatShape(*bs));
  Shape out = broadcastShape(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (as->size() > 1) out.push_back(a[a.size() - 2]);
  if (bs->size() > 1) out.push_back(b.back());
  c.setTensor(0, dt, out);
}

// ---- Gemm ---------------------------------------------------------------------------------------

std::vector<RValue> gemmKernel(KernelCtx& c) {
  const Tensor& A = c.in(0);
  const Tensor& B = c.in(1);
  AICC_CHECK(A.rank() == 2 && B.rank() == 2, "Gemm needs 2-D A and B, got {} and {}",
             formatDims(A.shape()), formatDims(B.shape()));
  AICC_CHECK(A.dtype() == B.dtype(), "A is {} but B is {}", dtypeName(A.dtype()),
             dtypeName(B.dtype()));
  const bool ta = c.node.attrInt("transA") != 0, tb = c.node.attrInt("transB") != 0;
  const double alpha = c.node.attrFloat("alpha"), beta = c.node.attrFloat("beta");
  const int64_t M = ta ? A.dim(1) : A.dim(0), K = ta ? A.dim(0) : A.dim(1);
  const int64_t N = tb ? B.dim(0) : B.dim(1), K2 = tb ? B.dim(1) : B.dim(0);
  AICC_CHECK(K == K2, "A {} (transA={}) and B {} (transB={}) have mismatched inner dims",
             formatDims(A.shape()), ta, formatDims(B.shape()), tb);
  DType ct = gemmType(A.dtype(), "A");
  const bool isInt = ct == DType::I64;
  Tensor a = A.dtype() == ct ? A : A.castTo(ct), b = B.dtype() == ct ? B : B.castTo(ct);
  Tensor y(ct, {M, N});
  withGemmType(ct, [&](auto tag) {
    using T = decltype(tag);
    // op(A) (scaled by alpha for floats) and op(B), contiguous.
    std::vector<T> ap(static_cast<size_t>(M * K)), bp;
    const T* ad = a.data<T>();
    const T af = isInt ? T(1) : static_cast<T>(alpha);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k)
        ap[static_cast<size_t>(i * K + k)] = af * (ta ? ad[k * M + i] : ad[i * K + k]);
    const T* bmat = b.data<T>();
    if (tb) {
      bp.resize(static_cast<size_t>(K * N));
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j) bp[static_cast<size_t>(k * N + j)] = bmat[j * K + k];
      bmat = bp.data();
    }
    gemmAcc<T>(M, N, K, ap.data(), bmat, y.data<T>());
  });
  if (isInt || c.has(2)) {
    Dims mn{M, N};
    Tensor C;
    std::optional<BroadcastIndexer> ic;
    if (c.has(2)) {
      C = c.in(2);
      AICC_CHECK(C.rank() <= 2 && broadcastDims(C.shape(), mn) == mn,
                 "C has shape {}, which does not broadcast to {}", formatDims(C.shape()),
                 formatDims(mn));
      ic.emplace(C.shape(), mn);
    }
    for (int64_t i = 0; i < M * N; ++i) {
      if (isInt) {
        int64_t v = static_cast<int64_t>(alpha * static_cast<double>(y.getI64(i)));
        if (ic) v += static_cast<int64_t>(beta * static_cast<double>(C.getI64((*ic)(i))));
        y.setI64(i, v);
      } else if (ic) {
        y.setF64(i, y.getF64(i) + beta * C.getF64((*ic)(i)));
      }
    }
  }
  return {RValue::of(y.dtype() == A.dtype() ? y : y.castTo(A.dtype(), false))};
}

void gemmInfer(InferCtx& c) {
  const auto& as = c.inShape(0);
  const auto& bs = c.inShape(1);
  const bool ta = c.node.attrInt("transA") != 0, tb = c.node.attrInt("transB") != 0;
  if (as) AICC_CHECK(as->size() == 2, "Gemm needs a 2-D A, got {}", formatShape(*as));
  if (bs) AICC_CHECK(bs->size() == 2, "Gemm needs a 2-D B, got {}", formatShape(*bs));
  Dim M = as ? (*as)[ta ? 1 : 0] : Dim{}, N = bs ? (*bs)[tb ? 0 : 1] : Dim{};
  if (as && bs) {
    Dim ka = (*as)[ta ? 0 : 1], kb = (*bs)[tb ? 1 : 0];
    AICC_CHECK(!ka.isStatic() || !kb.isStatic() || ka.value == kb.value,
               "A {} and B {} have mismatched inner dims", formatShape(*as), formatShape(*bs));
  }
  c.setTensor(0, c.inDType(0), Shape{M, N});
}

} // namespace

void registerLinalgOps(OpRegistry& r) {
  // Per row of A: its last dim (the sum's) no sample dim.
  r.op("MatMul")
      .perSampleDims([](const Node& n, size_t dims) {
        const Value* a = n.inputs[0];
        return a->type.shape && dims < a->type.shape->size();
      })
      .inputs(2, 2)
      .infer(matmulInfer)
      .kernel(matmulKernel);
  r.op("Gemm")
      .perSample()
      .attrFloat("alpha", 1.0f)
      .attrFloat("beta", 1.0f)
      .attrInt("transA", 0)
      .attrInt("transB", 0)
      .inputs(2, 3)
      .infer(gemmInfer)
      .kernel(gemmKernel)
      // Gemm before opset 7 had a `broadcast` flag; C always broadcasts now.
      .upgrade(1, 6, [](ImportCtx& c) { c.node.attrs.erase("broadcast"); },
               {{"broadcast", Attribute::Kind::Int, std::nullopt, false}});
}

} // namespace aicc
