#include "kernels/gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/thread_pool.h"
#include "rt/error.h"

namespace aicc::kernels {

AlignedFloats AlignedFloats::make(int64_t n) {
  AlignedFloats out;
  const size_t bytes = (size_t(std::max<int64_t>(n, 1)) * sizeof(float) + 63) / 64 * 64;
  out.ptr.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
  AICC_RT_CHECK(out.ptr, "kernels: out of memory allocating {} bytes", bytes);
  std::memset(out.ptr.get(), 0, bytes);
  out.size = n;
  return out;
}

float activateScalar(float x, unsigned act) {
  switch (act) {
  case kActHardSwish:
    return x * std::min(1.0f, std::max(0.0f, x / 6.0f + 0.5f));
  case kActSwish:
    return float(double(x) / (1.0 + std::exp(-double(x))));
  case kActSigmoid:
    return float(1.0 / (1.0 + std::exp(-double(x))));
  case kActGelu:
    return float(0.5 * double(x) * (1.0 + std::erf(double(x) / std::sqrt(2.0))));
  default:
    return x;
  }
}

uint16_t bf16Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((u >> 16) | 0x40u); // quiet NaN
  u += 0x7FFFu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float bf16Round(float x) {
  const uint32_t u = uint32_t(bf16Bits(x)) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

namespace {
// Packing needs the tile only: the kernel may lack code on this host (a cross target's).
void checkGemmKernel(const KernelDesc& kernel) {
  AICC_RT_CHECK(isGemmOp(kernel.op) && kernel.mr > 0 && kernel.nr > 0 && kernel.kc > 0 &&
                    (kernel.op != KernelOp::GemmBf16 || (kernel.kg == 2 && kernel.kc % 2 == 0)) &&
                    kernel.kc % (2 * std::max(1, kernel.kuAlign)) == 0,
                "'{}' is not a GEMM kernel", kernel.name);
}

bool pairs(const KernelDesc& kernel) { return kernel.op == KernelOp::GemmBf16; }

// The unit of two values of consecutive k (lo: k, hi: k + 1).
float pairUnit(float lo, float hi) {
  const uint32_t u = uint32_t(bf16Bits(lo)) | uint32_t(bf16Bits(hi)) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
} // namespace

int64_t packedBFloats(const KernelDesc& kernel, int64_t K, int64_t N) {
  checkGemmKernel(kernel);
  return packedKUnits(kernel, K) * ((N + kernel.nr - 1) / kernel.nr * kernel.nr);
}

void packBInto(const KernelDesc& kernel, const float* B, int64_t K, int64_t N, int64_t ldb,
               bool transposed, float* dst) {
  checkGemmKernel(kernel);
  AICC_RT_CHECK(K >= 0 && N >= 0, "packB: bad shape K={} N={}", K, N);
  AICC_RT_CHECK(ldb >= (transposed ? K : N), "packB: leading dimension {} too small", ldb);
  const int64_t nr = kernel.nr, kcMax = kernel.kc, Npad = (N + nr - 1) / nr * nr;
  auto at = [&](int64_t k, int64_t n) {
    return k >= K ? 0.0f : transposed ? B[n * ldb + k] : B[k * ldb + n];
  };
  // bf16 rows read in place by the kernel's own vector packer, when this CPU runs it (weights
  // packed for another target's kernel take the scalar path below).
  const bool vectorPacker = pairs(kernel) && kernel.packB && !transposed && nr == 32 &&
                            cpuSupports(kernel.isa) && isaWithin(kernel.isa, bestIsa());
  for (int64_t k0 = 0; k0 < K; k0 += kcMax) {
    const int64_t kc = std::min(kcMax, K - k0);
    if (vectorPacker) {
      for (int64_t n0 = 0; n0 < N; n0 += nr) {
        GemmTileParams src{};
        src.w = B + k0 * ldb + n0, src.ldw = ldb, src.kc = kc, src.nr = std::min(nr, N - n0);
        src.vsplit[0] = src.vsplit[1] = 16;
        kernel.packB(src, dst + k0 / 2 * Npad + n0 * packedKUnits(kernel, kc));
      }
      continue;
    }
    if (pairs(kernel)) { // (K block boundaries are even: the units past kc pair zeros)
      for (int64_t n0 = 0; n0 < N; n0 += nr) {
        float* panel = dst + k0 / 2 * Npad + n0 * packedKUnits(kernel, kc);
        for (int64_t q = 0; q < packedKUnits(kernel, kc); ++q)
          for (int64_t j = 0; j < nr; ++j)
            panel[q * nr + j] =
                n0 + j < N ? pairUnit(at(k0 + 2 * q, n0 + j), at(k0 + 2 * q + 1, n0 + j)) : 0.0f;
      }
      continue;
    }
    for (int64_t n0 = 0; n0 < N; n0 += nr) {
      float* panel = dst + k0 * Npad + n0 * kc;
      const int64_t cols = std::min(nr, N - n0);
      for (int64_t k = 0; k < kc; ++k) {
        if (transposed)
          for (int64_t j = 0; j < cols; ++j) panel[k * nr + j] = B[(n0 + j) * ldb + (k0 + k)];
        else // a row segment: one copy
          std::copy_n(B + (k0 + k) * ldb + n0, cols, panel + k * nr);
        std::fill(panel + k * nr + cols, panel + (k + 1) * nr, 0.0f);
      }
    }
  }
}

PackedB packB(const KernelDesc& kernel, const float* B, int64_t K, int64_t N, int64_t ldb,
              bool transposed) {
  checkGemmKernel(kernel);
  PackedB pb;
  pb.kernel = &kernel;
  pb.K = K;
  pb.N = N;
  pb.Npad = (N + kernel.nr - 1) / kernel.nr * kernel.nr;
  pb.data = AlignedFloats::make(packedBFloats(kernel, K, N));
  packBInto(kernel, B, K, N, ldb, transposed, pb.data.data());
  return pb;
}

int64_t packedAFloats(const KernelDesc& kernel, int64_t M, int64_t K) {
  checkGemmKernel(kernel);
  return packedKUnits(kernel, K) * ((M + kernel.mr - 1) / kernel.mr * kernel.mr);
}

void packAInto(const KernelDesc& kernel, const float* A, int64_t M, int64_t K, int64_t lda,
               float* dst) {
  checkGemmKernel(kernel);
  AICC_RT_CHECK(M >= 0 && K >= 0 && lda >= K, "packA: bad shape M={} K={} lda={}", M, K, lda);
  const int64_t mr = kernel.mr, kcMax = kernel.kc, Mpad = (M + mr - 1) / mr * mr;
  auto at = [&](int64_t i, int64_t k) { return i < M && k < K ? A[i * lda + k] : 0.0f; };
  for (int64_t k0 = 0; k0 < K; k0 += kcMax) {
    const int64_t kc = std::min(kcMax, K - k0);
    if (pairs(kernel)) { // k-major units, or row-major ones (aRows)
      const int64_t ku = packedKUnits(kernel, kc);
      for (int64_t i0 = 0; i0 < M; i0 += mr) {
        float* panel = dst + k0 / 2 * Mpad + i0 * ku;
        for (int64_t q = 0; q < ku; ++q)
          for (int64_t i = 0; i < mr; ++i)
            panel[kernel.aRows ? i * ku + q : q * mr + i] =
                pairUnit(at(i0 + i, k0 + 2 * q), at(i0 + i, k0 + 2 * q + 1));
      }
      continue;
    }
    for (int64_t i0 = 0; i0 < M; i0 += mr) {
      float* panel = dst + k0 * Mpad + i0 * kc;
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t i = 0; i < mr; ++i)
          panel[k * mr + i] = i0 + i < M ? A[(i0 + i) * lda + k0 + k] : 0.0f;
    }
  }
}

namespace {

// Packs rows [m0, m0 + rows) x columns [k0, k0 + kc) of A into micro-panels of MR rows, each
// k-major (panel[k * MR + i]); a partial panel repeats its last row (those lanes are never read).
// k outside, rows inside: contiguous writes, MR sequential read streams.
template <int MR>
void packAPanels(const float* A, int64_t lda, int64_t m0, int64_t rows, int64_t k0, int64_t kc,
                 float* dst) {
  for (int64_t i0 = 0; i0 < rows; i0 += MR) {
    const int64_t r = std::min<int64_t>(MR, rows - i0);
    const float* src[MR];
    for (int i = 0; i < MR; ++i) src[i] = A + (m0 + i0 + std::min<int64_t>(i, r - 1)) * lda + k0;
    float* panel = dst + i0 * kc;
    for (int64_t k = 0; k < kc; ++k)
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) panel[k * MR + i] = src[i][k];
  }
}

void packA(const float* A, int64_t lda, int64_t m0, int64_t rows, int64_t k0, int64_t kc, int mr,
           float* dst) {
  switch (mr) {
  case 14:
    return packAPanels<14>(A, lda, m0, rows, k0, kc, dst);
  case 8:
    return packAPanels<8>(A, lda, m0, rows, k0, kc, dst);
  case 6:
    return packAPanels<6>(A, lda, m0, rows, k0, kc, dst);
  case 4:
    return packAPanels<4>(A, lda, m0, rows, k0, kc, dst);
  default:
    break;
  }
  for (int64_t i0 = 0; i0 < rows; i0 += mr) {
    const int64_t r = std::min<int64_t>(mr, rows - i0);
    float* panel = dst + i0 * kc;
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t i = 0; i < mr; ++i)
        panel[k * mr + i] = A[(m0 + i0 + std::min<int64_t>(i, r - 1)) * lda + k0 + k];
  }
}

// One thread's share: rows [m0, m1) x panels [p0, p1).
struct BView {
  const KernelDesc* kernel;
  const float* data;
  int64_t K, N, Npad;
};

void gemmRange(const BView& b, const float* A, int64_t lda, float* C, int64_t ldc,
               const Epilogue& ep, int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
  const KernelDesc& kd = *b.kernel;
  const int64_t K = b.K, N = b.N, nr = kd.nr, mr = kd.mr;
  const int64_t kcMax = kd.kc, mc = kd.mc, ncPanels = std::max<int64_t>(1, kd.nc / kd.nr);
  thread_local std::vector<float> aBuf;
  const size_t need = size_t(std::min(rowBlockCapacity(mc, mr), (m1 - m0 + mr - 1) / mr * mr) *
                             packedKUnits(kd, std::min(kcMax, K)));
  if (aBuf.size() < need) aBuf.resize(need);
  GemmTileParams t{};
  t.ldc = ldc;
  t.lo = ep.lo();
  t.hi = ep.hi();
  t.act = ep.post;
  for (int64_t pc = p0; pc < p1; pc += ncPanels) {
    const int64_t pcEnd = std::min(p1, pc + ncPanels);
    for (int64_t k0 = 0; k0 < K; k0 += kcMax) {
      const int64_t kc = std::min(kcMax, K - k0), ku = packedKUnits(kd, kc); // ku: units of A and B
      t.kc = ku;
      t.flags = (k0 == 0 ? kGemmFirst : 0u) | (k0 + kc == K ? kGemmLast : 0u);
      for (int64_t ic = m0, rows = 0; ic < m1; ic += rows) {
        rows = rowBlock(mc, m1 - ic); // (gemm.h)
        if (kd.packA)
          for (int64_t i = 0; i < rows; i += mr)
            kd.packA(A + (ic + i) * lda + k0, lda, std::min(mr, rows - i), kc,
                     aBuf.data() + i * ku);
        else
          packA(A, lda, ic, rows, k0, kc, int(mr), aBuf.data());
        for (int64_t p = pc; p < pcEnd; ++p) {
          const int64_t n0 = p * nr;
          t.w = b.data + packedKUnits(kd, k0) * b.Npad + n0 * ku;
          t.nr = std::min(nr, N - n0);
          t.bias = ep.bias ? ep.bias + n0 : nullptr;
          // The next B panel into L2, a share per row tile (gemm.h tileShare): a transformer's
          // weights stream from L3 (Intel Xeon, bert_like_encoder 1 / 2 threads -4-5%).
          const float* next = p + 1 < pcEnd ? t.w + ku * nr : nullptr;
          const int64_t nextBytes = int64_t(sizeof(float)) * ku * nr, tiles = (rows + mr - 1) / mr;
          for (int64_t i = 0; i < rows; i += mr) {
            t.pf = tileShare(next, nextBytes, i / mr, tiles, t.pfLines);
            t.a = aBuf.data() + i * ku;
            t.c = C + (ic + i) * ldc + n0;
            t.res = ep.residual ? ep.residual + (ic + i) * ldc + n0 : nullptr;
            t.mr = std::min(mr, rows - i);
            kd.gemm(t);
          }
        }
      }
    }
  }
}

} // namespace

void gemm(const PackedB& pb, int64_t M, const float* A, int64_t lda, float* C, int64_t ldc,
          const Epilogue& ep, ThreadPool* pool) {
  AICC_RT_CHECK(pb.kernel && pb.kernel->gemm, "gemm: B is not packed");
  gemmPackedB(*pb.kernel, pb.data.data(), pb.K, pb.N, M, A, lda, C, ldc, ep, pool);
}

void gemmPackedB(const KernelDesc& kernel, const float* packedB, int64_t K, int64_t N, int64_t M,
                 const float* A, int64_t lda, float* C, int64_t ldc, const Epilogue& ep,
                 ThreadPool* pool) {
  checkGemmKernel(kernel);
  AICC_RT_CHECK(kernel.gemm, "'{}' has no code in this build (its ISA is another machine's)",
                kernel.name);
  AICC_RT_CHECK(!pairs(kernel) || kernel.packA, "'{}' has no A packer", kernel.name);
  const BView b{&kernel, packedB, K, N, (N + kernel.nr - 1) / kernel.nr * kernel.nr};
  AICC_RT_CHECK(M >= 0 && K >= 0 && N >= 0 && lda >= b.K && ldc >= b.N,
                "gemm: bad shape M={} lda={} ldc={} (K={} N={})", M, lda, ldc, b.K, b.N);
  if (M == 0 || N == 0) return;
  if (K == 0) { // no products: C = act(bias)
    const float lo = ep.lo(), hi = ep.hi();
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        C[i * ldc + j] = activateScalar(
            std::min(hi, std::max(lo, (ep.bias ? ep.bias[j] : 0.0f) +
                                          (ep.residual ? ep.residual[i * ldc + j] : 0.0f))),
            ep.post);
    return;
  }
  const int64_t mr = b.kernel->mr, nr = b.kernel->nr;
  const int64_t mTiles = (M + mr - 1) / mr, nTiles = (N + nr - 1) / nr;
  const int64_t T = pool ? std::min<int64_t>(pool->numThreads(), mTiles * nTiles) : 1;
  if (T <= 1) {
    gemmRange(b, A, lda, C, ldc, ep, 0, M, 0, nTiles);
    return;
  }
  // Split one dimension into T contiguous ranges of tiles. Splitting N lets each thread stream
  // only its share of B (the weights); splitting M its share of A. Take the dimension whose operand
  // is larger unless that leaves threads idle or badly balanced.
  auto imbalance = [&](int64_t tiles) {
    return tiles < T ? 1e9 : double((tiles + T - 1) / T * T) / double(tiles);
  };
  const double im = imbalance(mTiles), in = imbalance(nTiles);
  bool splitN = K * N > M * K ? in <= im * 1.25 : in * 1.25 < im;
  pool->parallelFor(T, [&](int64_t t) {
    const int64_t tiles = splitN ? nTiles : mTiles;
    const int64_t lo = tiles * t / T, hi = tiles * (t + 1) / T;
    if (lo >= hi) return;
    if (splitN)
      gemmRange(b, A, lda, C, ldc, ep, 0, M, lo, hi);
    else
      gemmRange(b, A, lda, C, ldc, ep, lo * mr, std::min(M, hi * mr), 0, nTiles);
  });
}

void gemmReference(int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C,
                   const Epilogue& ep) {
  const float lo = ep.lo(), hi = ep.hi();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = ep.bias ? ep.bias[j] : 0.0;
      for (int64_t k = 0; k < K; ++k) s += double(A[i * K + k]) * double(B[k * N + j]);
      const float v = float(s);
      C[i * N + j] = activateScalar(std::isnan(v) ? v : std::min(hi, std::max(lo, v)), ep.post);
    }
}

} // namespace aicc::kernels
