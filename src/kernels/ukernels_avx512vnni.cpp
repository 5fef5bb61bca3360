// AVX512-VNNI micro-kernels: the int8 convolution GEMM tile (u8 activations x s8 weights, int32
// accumulation with vpdpbusd, requantization fused). Compiled with -mavx512f -mavx512bw -mavx512vl
// -mavx512vnni (CMakeLists.txt); only called after the dispatcher checked the CPU (registry.cpp).
// Includes no standard-library headers on purpose.
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics start their unmasked forms from _mm512_undefined_*, which it then
// reports as uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/simd_impl.h"

namespace aicc::kernels {
namespace {

// ROWS x (16 * NV) outputs; A is [q][8][4] int8, B is [q][48][4] uint8 (kernels/ukernel.h).
template <int ROWS, int NV> void qtile(const QGemmTileParams& p) {
  __m512i acc[ROWS][NV];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_setzero_si512();
  const auto* a = static_cast<const int32_t*>(p.a);
  const auto* b = static_cast<const uint8_t*>(p.b);
  for (int64_t q = 0; q < p.kgroups; ++q, a += 8, b += 192) {
    __m512i bv[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) bv[j] = _mm512_loadu_si512(b + 64 * j);
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
      const __m512i w = _mm512_set1_epi32(a[r]);
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], bv[j], w);
    }
  }
  // Requantization: clamp in float first (so the conversion cannot overflow), round half to even
  // (the default MXCSR mode, as nearbyint), add the zero point, saturate, narrow to bytes.
  const __m512 flo = _mm512_set1_ps(float(p.lo - p.yzp - 1)),
               fhi = _mm512_set1_ps(float(p.hi - p.yzp + 1));
  const __m512i zp = _mm512_set1_epi32(p.yzp), lo = _mm512_set1_epi32(p.lo),
                hi = _mm512_set1_epi32(p.hi);
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    const __m512i off = _mm512_set1_epi32(p.rowOffset[r]);
    const __m512 f = _mm512_set1_ps(p.factor[r]);
    uint8_t* y = p.y + r * p.ldy;
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) {
      __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(acc[r][j], off)), f);
      v = _mm512_min_ps(_mm512_max_ps(v, flo), fhi);
      __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(v), zp);
      q = _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
      const int64_t n = p.nr - 16 * j;
      if (n <= 0) break;
      const __mmask16 m = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u);
      _mm_mask_storeu_epi8(y + 16 * j, m, _mm512_cvtepi32_epi8(q));
    }
  }
}

template <int ROWS> void qtileCols(const QGemmTileParams& p) {
  if (p.nr <= 16)
    qtile<ROWS, 1>(p);
  else if (p.nr <= 32)
    qtile<ROWS, 2>(p);
  else
    qtile<ROWS, 3>(p);
}

} // namespace

void q8_to_f32_row_avx512vnni(const uint8_t* x, int64_t n, bool isSigned, float zp, float* out,
                              float* odd) {
  const __m512 z = _mm512_set1_ps(zp);
  auto tail = [](int64_t k) { return k >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << k) - 1u); };
  if (!odd) {
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 m = tail(n - i);
      const __m128i b = _mm_maskz_loadu_epi8(m, x + i);
      const __m512i v = isSigned ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
      _mm512_mask_storeu_ps(out + i, m, _mm512_sub_ps(_mm512_cvtepi32_ps(v), z));
    }
    return;
  }
  // Pairs (x[2m], x[2m + 1]) as 16-bit lanes: the low byte is the even column.
  const int64_t pairs = n / 2;
  for (int64_t i = 0; i < pairs; i += 16) {
    const __mmask16 m = tail(pairs - i);
    const __m256i v = _mm256_maskz_loadu_epi16(m, x + 2 * i);
    const __m256i even = isSigned ? _mm256_srai_epi16(_mm256_slli_epi16(v, 8), 8)
                                  : _mm256_and_si256(v, _mm256_set1_epi16(0xFF));
    const __m256i oddv = isSigned ? _mm256_srai_epi16(v, 8) : _mm256_srli_epi16(v, 8);
    _mm512_mask_storeu_ps(out + i, m,
                          _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(even)), z));
    _mm512_mask_storeu_ps(odd + i, m,
                          _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(oddv)), z));
  }
  if (n & 1) out[pairs] = (isSigned ? float(int8_t(x[n - 1])) : float(x[n - 1])) - zp;
}

void u8s8_qgemm_avx512vnni_8x48(const QGemmTileParams& p) {
  detail::byRows<8>(p.mr, [&]<int ROWS>() { qtileCols<ROWS>(p); });
}

} // namespace aicc::kernels
