// Peak FMA throughput probe (AVX-512): 12 independent FMA chains, 32 FLOP per vector FMA.
#include <immintrin.h>

#include <cstdint>

namespace aicc::bench {
float fmaLoopAvx512(int64_t iters) {
  __m512 acc[12];
  for (int j = 0; j < 12; ++j) acc[j] = _mm512_set1_ps(float(j));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_fmadd_ps(acc[j], a, b);
  __m512 s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, acc[j]);
  alignas(64) float out[16];
  _mm512_store_ps(out, s);
  float t = 0;
  for (float x : out) t += x;
  return t;
}
} // namespace aicc::bench
