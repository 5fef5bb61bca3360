// Peak FMA throughput probe (AVX2+FMA): 12 independent FMA chains, 16 FLOP per vector FMA.
#include <immintrin.h>

#include <cstdint>

namespace aicc::bench {
float fmaLoopAvx2(int64_t iters) {
  __m256 acc[12];
  for (int j = 0; j < 12; ++j) acc[j] = _mm256_set1_ps(float(j));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm256_fmadd_ps(acc[j], a, b);
  __m256 s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm256_add_ps(s, acc[j]);
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  float t = 0;
  for (float x : out) t += x;
  return t;
}
} // namespace aicc::bench
