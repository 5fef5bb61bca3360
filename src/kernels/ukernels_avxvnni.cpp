// AVX-VNNI micro-kernel: the int8 convolution GEMM tile on ymm vpdpbusd (the VEX form), for CPUs
// with AVX2 and AVX-VNNI but no AVX-512 (Intel's client cores since Alder Lake, AMD Zen 5 client
// parts run the AVX-512 tile). Compiled with -mavx2 -mfma -mavxvnni (CMakeLists.txt); only called
// after the dispatcher checked the CPU (registry.cpp). Includes no standard-library headers on
// purpose.
#include <immintrin.h>

#include "kernels/ukernel.h"

namespace aicc::kernels {

// 4 rows x 24 columns (kernels/ukernel.h, KG = 4): A [q][4][4] int8, B [q][24][4] uint8; four
// products of u8 x s8 summed exactly into each int32 lane per vpdpbusd. One shape of tile for
// every call, to stay small (the runtime library has a size budget): rows past mr have zero
// weights in the packed panel and columns past nr are computed but not stored. Requantized as the
// AVX2 tile (ukernels_avx2.cpp): clamp in float, round half to even, + yzp, saturate.
void u8s8_qgemm_avxvnni_4x24(const QGemmTileParams& p) {
  __m256i acc[4][3];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r)
#pragma GCC unroll 3
    for (int j = 0; j < 3; ++j) acc[r][j] = _mm256_set1_epi32(p.rowOffset[r < p.mr ? r : 0]);
  const auto* a = static_cast<const int32_t*>(p.a);
  const auto* b = static_cast<const uint8_t*>(p.b);
  for (int64_t q = 0; q < p.kgroups; ++q, a += 4, b += 96) {
    __m256i bv[3];
#pragma GCC unroll 3
    for (int j = 0; j < 3; ++j)
      bv[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32 * j));
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      const __m256i w = _mm256_set1_epi32(a[r]);
#pragma GCC unroll 3
      for (int j = 0; j < 3; ++j) acc[r][j] = _mm256_dpbusd_avx_epi32(acc[r][j], bv[j], w);
    }
  }
  if (p.y32) { // ConvInteger: the int32 sums
    for (int64_t r = 0; r < p.mr; ++r) {
      alignas(32) int32_t out[24];
#pragma GCC unroll 3
      for (int j = 0; j < 3; ++j)
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + 8 * j), acc[r][j]);
      const int64_t n = p.nr < 24 ? p.nr : 24;
      for (int64_t c = 0; c < n; ++c) p.y32[r * p.ldy + c] = out[c];
    }
    return;
  }
  const __m256 flo = _mm256_set1_ps(float(p.lo - p.yzp - 1)),
               fhi = _mm256_set1_ps(float(p.hi - p.yzp + 1));
  const __m256i zp = _mm256_set1_epi32(p.yzp), lo = _mm256_set1_epi32(p.lo),
                hi = _mm256_set1_epi32(p.hi);
  // The low byte of each int32 lane (the value, within [lo, hi]): bytes 0, 4, 8, 12 of each
  // 128-bit half, then the halves' first dwords side by side.
  const __m256i bytes =
      _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1,
                       -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i halves = _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1);
  for (int64_t r = 0; r < p.mr; ++r) {
    const __m256 f = _mm256_set1_ps(p.factor[r]);
    alignas(32) uint8_t out[24];
#pragma GCC unroll 3
    for (int j = 0; j < 3; ++j) {
      __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc[r][j]), f);
      v = _mm256_min_ps(_mm256_max_ps(v, flo), fhi);
      __m256i x = _mm256_add_epi32(_mm256_cvtps_epi32(v), zp);
      x = _mm256_min_epi32(_mm256_max_epi32(x, lo), hi);
      x = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(x, bytes), halves);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 8 * j), _mm256_castsi256_si128(x));
    }
    uint8_t* y = p.y + r * p.ldy;
    const int64_t n = p.nr < 24 ? p.nr : 24;
    for (int64_t c = 0; c < n; ++c) y[c] = out[c];
  }
}

} // namespace aicc::kernels
