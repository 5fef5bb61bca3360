#include "kernels/qmatmul.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/dqgemm.h"
#include "kernels/thread_pool.h"

namespace aicc::kernels {

namespace {

// Columns [n0, n1) of one row: a16 = a - azp (K values, within [-255, 255]), each output a dot
// product of int16 x int8 in int32 (exact: |sum| < 2^31 for K < 2^16), four columns per pass so
// every a16 vector is loaded once for four weight rows.
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
void dotColumns(const int16_t* a16, const int8_t* wT, int64_t K, int64_t n0, int64_t n1,
                int32_t* acc) {
  int64_t n = n0;
  for (; n + 4 <= n1; n += 4) {
    const int8_t *w0 = wT + n * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
    // The weights are streamed once per call (a classifier's do not stay in L2 between runs):
    // request the next four rows while these are summed.
    if (n + 8 <= n1)
      for (int64_t off = 0; off < 4 * K; off += 64) __builtin_prefetch(w0 + 4 * K + off);
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int64_t k = 0; k < K; ++k) {
      const int32_t x = a16[k];
      s0 += x * w0[k], s1 += x * w1[k], s2 += x * w2[k], s3 += x * w3[k];
    }
    acc[n - n0] = s0, acc[n - n0 + 1] = s1, acc[n - n0 + 2] = s2, acc[n - n0 + 3] = s3;
  }
  for (; n < n1; ++n) {
    const int8_t* w = wT + n * K;
    int32_t s = 0;
    for (int64_t k = 0; k < K; ++k) s += int32_t(a16[k]) * w[k];
    acc[n - n0] = s;
  }
}

// One row of sums (each plus `add`) requantized as the reference: sat(nearbyint(double(acc) *
// factor + yzp)), with nearbyint(v) as (v + 1.5 * 2^52) - 1.5 * 2^52 (round half to even in the
// default mode, exact for |v| < 2^51: v is clamped to [lo - 1, hi + 1] first): a loop that
// vectorizes, where std::nearbyint is a libm call per element on baseline x86-64.
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
void requantizeRow(const int32_t* acc, int32_t add, const double* factor, int64_t N, int32_t yzp,
                   bool ySigned, uint8_t* y) {
  const double lo = ySigned ? -128 : 0, hi = ySigned ? 127 : 255, magic = 6755399441055744.0;
  for (int64_t n = 0; n < N; ++n) {
    const int32_t sum = int32_t(uint32_t(acc[n]) + uint32_t(add)); // wraps as the int32 sums
    const double v = std::clamp(double(sum) * factor[n] + double(yzp), lo - 1.0, hi + 1.0);
    y[n] = uint8_t(int32_t(std::clamp((v + magic) - magic, lo, hi)));
  }
}

} // namespace

bool packQMatMulWeights(int64_t K, int64_t N, const int16_t* b, int8_t* wT) {
  if (!std::all_of(b, b + K * N, [](int16_t v) { return v >= -128 && v <= 127; })) return false;
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) wT[n * K + k] = static_cast<int8_t>(b[k * N + n]);
  return true;
}

void qmatmul(const QMatMulShape& s, const uint8_t* a, const int8_t* wT, const double* factor,
             uint8_t* y, ThreadPool* pool) {
  std::vector<int16_t> a16(size_t(s.R * s.K));
  for (int64_t i = 0; i < s.R * s.K; ++i)
    a16[size_t(i)] = int16_t((s.aSigned ? int32_t(int8_t(a[i])) : int32_t(a[i])) - s.azp);
  // Column ranges of at least 64 outputs (~80 KB of weights for K = 1280) per thread.
  const int64_t T =
      pool ? std::min<int64_t>(pool->numThreads(), std::max<int64_t>(s.N / 64, 1)) : 1;
  auto part = [&](int64_t i) {
    const int64_t n0 = s.N * i / T, n1 = s.N * (i + 1) / T;
    std::vector<int32_t> acc(size_t(n1 - n0));
    for (int64_t r = 0; r < s.R; ++r) {
      dotColumns(a16.data() + r * s.K, wT, s.K, n0, n1, acc.data());
      requantizeRow(acc.data(), 0, factor + n0, n1 - n0, s.yzp, s.ySigned, y + r * s.N + n0);
    }
  };
  if (T > 1)
    pool->parallelFor(T, part);
  else
    part(0);
}

void qmatmulTiles(const KernelDesc& kd, const QMatMulShape& s, const uint8_t* a, const void* wp,
                  const int32_t* colSum, const double* factor, uint8_t* y, ThreadPool* pool) {
  dqgemmSums(kd, s.R, s.N, s.K, a, s.K, s.azp, wp, colSum, pool,
             [&](int64_t r0, int64_t r1, const int32_t* sums) {
               for (int64_t r = r0; r < r1; ++r)
                 requantizeRow(sums + r * s.N, 0, factor, s.N, s.yzp, s.ySigned, y + r * s.N);
             });
}

void qmatmulPairs(const KernelDesc& kd, const QMatMulShape& s, const QMatMulPairs& p,
                  const uint8_t* a, const uint8_t* b, uint8_t* y, ThreadPool* pool) {
  const int32_t c = p.bSigned ? 0 : 128;
  const std::vector<double> factor(size_t(s.N), p.factor);
  auto product = [&](int64_t i, ThreadPool* inner) {
    thread_local std::vector<uint8_t> packed;
    thread_local std::vector<int32_t> colSum, rowAdd;
    colSum.resize(size_t(s.N)), rowAdd.resize(size_t(s.R));
    packed.resize(size_t(dqgemmPackedBytes(kd, s.K, s.N)));
    packDqGemmBytes(kd, s.K, s.N, b + i * p.bStride, p.bSigned, packed.data(), colSum.data());
    const uint8_t* ai = a + i * p.aStride;
    for (int64_t r = 0; r < s.R; ++r) {
      int32_t sum = 0;
      for (int64_t k = 0; k < s.K; ++k) sum += int32_t(ai[r * s.K + k]) - s.azp;
      rowAdd[size_t(r)] = int32_t(uint32_t(c - p.bzp) * uint32_t(sum));
    }
    const int32_t* add = rowAdd.data(); // the workers' view of this thread's rows
    uint8_t* yi = y + i * s.R * s.N;
    dqgemmSums(kd, s.R, s.N, s.K, ai, s.K, s.azp, packed.data(), colSum.data(), inner,
               [&](int64_t r0, int64_t r1, const int32_t* sums) {
                 for (int64_t r = r0; r < r1; ++r)
                   requantizeRow(sums + r * s.N, add[r], factor.data(), s.N, s.yzp, s.ySigned,
                                 yi + r * s.N);
               });
  };
  const int64_t T = pool ? std::min<int64_t>(pool->numThreads(), p.batches) : 1;
  if (T > 1)
    pool->parallelFor(T, [&](int64_t t) {
      for (int64_t i = p.batches * t / T; i < p.batches * (t + 1) / T; ++i) product(i, nullptr);
    });
  else
    for (int64_t i = 0; i < p.batches; ++i) product(i, pool);
}

} // namespace aicc::kernels
