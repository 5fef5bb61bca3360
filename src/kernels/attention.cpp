#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/registry.h"
#include "kernels/thread_pool.h"
#include "rt/error.h"

namespace aicc::kernels {

namespace {

// Scores row i of one head -> probabilities, in place (bias from the mask / causal bound).
void softmaxRow(const AttentionShape& s, int64_t b, int64_t h, int64_t i, float* row) {
  const float ninf = -std::numeric_limits<float>::infinity();
  const int64_t mbase = b * s.maskStride[0] + h * s.maskStride[1] + i * s.maskStride[2];
  float mx = ninf;
  bool nan = false;
  for (int64_t j = 0; j < s.Skv; ++j) {
    float v = row[j] * s.scale;
    if (s.maskF) v += s.maskF[mbase + j * s.maskStride[3]];
    if (s.maskB && !s.maskB[mbase + j * s.maskStride[3]]) v = ninf;
    if (s.causal && j > i) v = ninf;
    row[j] = v;
    nan |= std::isnan(v);
    mx = std::max(mx, v);
  }
  if (nan) {
    std::fill(row, row + s.Skv, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  if (mx == ninf) { // every position masked: the row contributes nothing
    std::fill(row, row + s.Skv, 0.0f);
    return;
  }
  static const ExpSumFn expSum = expSumKernel();
  const float inv = 1.0f / expSum(row, s.Skv, mx);
  for (int64_t j = 0; j < s.Skv; ++j) row[j] *= inv;
}

} // namespace

void attentionF32(const KernelDesc& kd, const AttentionShape& s, const float* Q, const float* K,
                  const float* V, float* Y, ThreadPool* pool) {
  AICC_RT_CHECK(s.B >= 1 && s.Hq >= 1 && s.Hkv >= 1 && s.Hq % s.Hkv == 0 && s.Sq >= 1 &&
                    s.Skv >= 1 && s.D >= 1 && s.Dv >= 1,
                "attention: bad shape B={} Hq={} Hkv={} Sq={} Skv={} D={} Dv={}", s.B, s.Hq, s.Hkv,
                s.Sq, s.Skv, s.D, s.Dv);
  const int64_t rep = s.Hq / s.Hkv, pairs = s.B * s.Hq;
  auto head = [&](int64_t pair) {
    const int64_t b = pair / s.Hq, h = pair % s.Hq, kvh = b * s.Hkv + h / rep;
    const float* q = Q + pair * s.Sq * s.D;
    const float* k = K + kvh * s.Skv * s.D;
    const float* v = V + kvh * s.Skv * s.Dv;
    thread_local std::vector<float> scores;
    scores.resize(size_t(s.Sq * s.Skv));
    // scores = Q K^T: B(d, j) = K[j, d] (K packed transposed), then P V; the packed operands
    // live in per-thread buffers (no allocation per head).
    thread_local std::vector<float> kt, vp;
    kt.resize(size_t(packedBFloats(kd, s.D, s.Skv)));
    packBInto(kd, k, s.D, s.Skv, s.D, /*transposed=*/true, kt.data());
    gemmPackedB(kd, kt.data(), s.D, s.Skv, s.Sq, q, s.D, scores.data(), s.Skv);
    for (int64_t i = 0; i < s.Sq; ++i) softmaxRow(s, b, h, i, scores.data() + i * s.Skv);
    vp.resize(size_t(packedBFloats(kd, s.Skv, s.Dv)));
    packBInto(kd, v, s.Skv, s.Dv, s.Dv, false, vp.data());
    gemmPackedB(kd, vp.data(), s.Skv, s.Dv, s.Sq, scores.data(), s.Skv, Y + pair * s.Sq * s.Dv,
                s.Dv);
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
