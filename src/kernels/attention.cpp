#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/conv.h" // AICC_KERNEL_CLONES
#include "kernels/gemm.h"
#include "kernels/registry.h"
#include "kernels/thread_pool.h"
#include "rt/error.h"

namespace aicc::kernels {

namespace {

// x[j] *= scale over a row; its maximum (NaN when a value is NaN). Simple loops the vectorizer
// takes (the file is built at -O3, cloned per ISA).
AICC_KERNEL_CLONES void scaleRow(float* x, int64_t n, float scale) {
  for (int64_t j = 0; j < n; ++j) x[j] *= scale;
}
// The maximum in 16 independent lanes (lane l takes j = l mod 16, a GCC vector: the vectorizer
// leaves a running maximum through one register scalar, 7% of bert_like_encoder's bf16 run),
// combined after; the maximum is the same in any order (NaNs are counted apart).
AICC_KERNEL_CLONES float rowMax(const float* x, int64_t n) {
  using V = float __attribute__((vector_size(64)));
  using VI = int32_t __attribute__((vector_size(64)));
  const float ninf = -std::numeric_limits<float>::infinity();
  V lane = V{} + ninf;
  VI nan = VI{};
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    V v;
    std::memcpy(&v, x + j, sizeof v);
    lane = v > lane ? v : lane;
    nan |= v != v;
  }
  float mx = ninf;
  bool anyNan = false;
  for (int l = 0; l < 16; ++l) mx = lane[l] > mx ? lane[l] : mx, anyNan |= nan[l] != 0;
  for (; j < n; ++j) mx = x[j] > mx ? x[j] : mx, anyNan |= x[j] != x[j];
  return anyNan ? std::numeric_limits<float>::quiet_NaN() : mx;
}

// Scores row i of one head -> probabilities, in place (bias from the mask / causal bound); qk:
// the row's slot of the scores output, or null. Stage by stage over the row (each a pass over
// Skv floats in L1): the plain case (no softcap, mask or causal bound) is two vector loops and
// the exponentials.
void softmaxRow(const AttentionShape& s, int64_t b, int64_t h, int64_t i, float* row, float* qk) {
  const float ninf = -std::numeric_limits<float>::infinity();
  const int64_t mbase = b * s.maskStride[0] + h * s.maskStride[1] + i * s.maskStride[2];
  const int64_t n = s.Skv, ms = s.maskStride[3];
  scaleRow(row, n, s.scale);
  if (qk && s.qkMode == 0) std::copy(row, row + n, qk);
  if (s.softcap > 0.0f)
    for (int64_t j = 0; j < n; ++j) row[j] = s.softcap * std::tanh(row[j] / s.softcap);
  if (qk && s.qkMode == 1) std::copy(row, row + n, qk);
  if (s.maskF)
    for (int64_t j = 0; j < n; ++j) row[j] += s.maskF[mbase + j * ms];
  if (s.maskB)
    for (int64_t j = 0; j < n; ++j)
      if (!s.maskB[mbase + j * ms]) row[j] = ninf;
  if (s.causal)
    for (int64_t j = std::max<int64_t>(0, i + s.causalOffset + 1); j < n; ++j) row[j] = ninf;
  if (qk && s.qkMode == 2) std::copy(row, row + n, qk);
  const float mx = rowMax(row, n);
  if (std::isnan(mx)) {
    std::fill(row, row + n, std::numeric_limits<float>::quiet_NaN());
  } else if (mx == ninf) { // every position masked: the row contributes nothing
    std::fill(row, row + n, 0.0f);
  } else {
    static const ExpSumFn expSum = expSumKernel();
    scaleRow(row, n, 1.0f / expSum(row, n, mx));
  }
  if (qk && s.qkMode == 3) std::copy(row, row + n, qk);
}

// Element strides of (b, h, s) in a [B, H, S, D] tensor, or a [B, S, H * D] one (seqMajor); d is
// contiguous.
struct Strides {
  int64_t b, h, s;
  Strides(bool seqMajor, int64_t H, int64_t S, int64_t D)
      : b(H * S * D), h(seqMajor ? D : S * D), s(seqMajor ? H * D : D) {}
};

} // namespace

void attentionF32(const KernelDesc& kd, const AttentionShape& s, const float* Q, const float* K,
                  const float* V, float* Y, ThreadPool* pool) {
  AICC_RT_CHECK(s.B >= 1 && s.Hq >= 1 && s.Hkv >= 1 && s.Hq % s.Hkv == 0 && s.Sq >= 1 &&
                    s.Skv >= 1 && s.D >= 1 && s.Dv >= 1,
                "attention: bad shape B={} Hq={} Hkv={} Sq={} Skv={} D={} Dv={}", s.B, s.Hq, s.Hkv,
                s.Sq, s.Skv, s.D, s.Dv);
  const int64_t rep = s.Hq / s.Hkv, pairs = s.B * s.Hq;
  const Strides qs(s.seqMajor[0], s.Hq, s.Sq, s.D), ks(s.seqMajor[1], s.Hkv, s.Skv, s.D),
      vs(s.seqMajor[2], s.Hkv, s.Skv, s.Dv), ys(s.seqMajor[3], s.Hq, s.Sq, s.Dv);
  auto head = [&](int64_t pair) {
    const int64_t b = pair / s.Hq, h = pair % s.Hq, kvh = h / rep;
    const float* q = Q + b * qs.b + h * qs.h;
    const float* k = K + b * ks.b + kvh * ks.h;
    const float* v = V + b * vs.b + kvh * vs.h;
    thread_local std::vector<float> scores;
    scores.resize(size_t(s.Sq * s.Skv));
    // scores = Q K^T: B(d, j) = K[j, d], then P V; the packed operands
    // live in per-thread buffers (no allocation per head).
    thread_local std::vector<float> kt, vp, kT;
    kt.resize(size_t(packedBFloats(kd, s.D, s.Skv)));
    // K^T as rows first, then packed as rows (copies, or the bf16 packer's vector path), where
    // packing K transposed read one strided element at a time.
    kT.resize(size_t(s.D * s.Skv));
    transposeBlocked(k, s.Skv, s.D, ks.s, kT.data(), s.Skv);
    packBInto(kd, kT.data(), s.D, s.Skv, s.Skv, false, kt.data());
    gemmPackedB(kd, kt.data(), s.D, s.Skv, s.Sq, q, qs.s, scores.data(), s.Skv);
    for (int64_t i = 0; i < s.Sq; ++i)
      softmaxRow(s, b, h, i, scores.data() + i * s.Skv,
                 s.qk ? s.qk + (pair * s.Sq + i) * s.Skv : nullptr);
    vp.resize(size_t(packedBFloats(kd, s.Skv, s.Dv)));
    packBInto(kd, v, s.Skv, s.Dv, vs.s, false, vp.data());
    gemmPackedB(kd, vp.data(), s.Skv, s.Dv, s.Sq, scores.data(), s.Skv, Y + b * ys.b + h * ys.h,
                ys.s);
  };
  const int64_t T = pool ? std::min<int64_t>(pool->numThreads(), pairs) : 1;
  if (T <= 1) {
    for (int64_t p = 0; p < pairs; ++p) head(p);
    return;
  }
  pool->parallelFor(T, [&](int64_t t) {
    for (int64_t p = pairs * t / T; p < pairs * (t + 1) / T; ++p) head(p);
  });
}

} // namespace aicc::kernels
