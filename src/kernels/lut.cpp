#include "kernels/lut.h"

#include <algorithm>

#include "kernels/registry.h"
#include "kernels/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace aicc::kernels {

namespace {

void lut8Portable(const uint8_t* x, const uint8_t* table, uint8_t* y, int64_t n, uint8_t flip) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i] ^ flip];
}

#if defined(__x86_64__)
#define AICC_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

// 64 lookups: index bits 0-6 pick one of 128 bytes of a table half (vpermi2b over two registers),
// bit 7 the half.
AICC_VBMI inline __m512i look64(__m512i v, __m512i f, const __m512i t[4]) {
  v = _mm512_xor_si512(v, f);
  const __m512i lo = _mm512_permutex2var_epi8(t[0], v, t[1]);
  const __m512i hi = _mm512_permutex2var_epi8(t[2], v, t[3]);
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi);
}

AICC_VBMI void lut8Vbmi(const uint8_t* x, const uint8_t* table, uint8_t* y, int64_t n,
                        uint8_t flip) {
  const __m512i t[4] = {_mm512_loadu_si512(table), _mm512_loadu_si512(table + 64),
                        _mm512_loadu_si512(table + 128), _mm512_loadu_si512(table + 192)};
  const __m512i f = _mm512_set1_epi8(char(flip));
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(y + i, look64(_mm512_loadu_si512(x + i), f, t));
  if (i < n) {
    const __mmask64 m = (uint64_t(1) << (n - i)) - 1; // n - i < 64
    _mm512_mask_storeu_epi8(y + i, m, look64(_mm512_maskz_loadu_epi8(m, x + i), f, t));
  }
}
#endif

} // namespace

bool lut8HasVector() {
#if defined(__x86_64__)
  static const bool has = cpuSupports(Isa::Avx512Vnni) && __builtin_cpu_supports("avx512vbmi");
  return has;
#else
  return false;
#endif
}

void lut8(const uint8_t* x, const uint8_t* tables, uint8_t* y, int64_t outer, int64_t channels,
          int64_t inner, uint8_t flip, ThreadPool* pool, bool vector) {
  // Elements [b, e) of block k (channel k % channels).
  auto run = [&](int64_t k, int64_t b, int64_t e) {
    const uint8_t* table = tables + (k % channels) * 256;
    const int64_t at = k * inner + b;
#if defined(__x86_64__)
    if (vector && lut8HasVector()) return lut8Vbmi(x + at, table, y + at, e - b, flip);
#else
    (void)vector;
#endif
    lut8Portable(x + at, table, y + at, e - b, flip);
  };
  // At least 256 KB per thread (a lookup is cheap next to a thread's wake-up): whole blocks, or
  // parts of the only one.
  const int64_t blocks = outer * channels, n = blocks * inner;
  const int64_t T = pool ? std::min<int64_t>(pool->numThreads(), std::max<int64_t>(1, n >> 18)) : 1;
  auto part = [&](int64_t t) {
    if (blocks == 1) return run(0, inner * t / T, inner * (t + 1) / T);
    for (int64_t k = blocks * t / T; k < blocks * (t + 1) / T; ++k) run(k, 0, inner);
  };
  if (T <= 1) return part(0);
  pool->parallelFor(T, part);
}

} // namespace aicc::kernels
