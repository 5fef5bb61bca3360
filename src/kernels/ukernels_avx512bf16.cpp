// AVX512-BF16 micro-kernels: the f32 GEMM tile of simd_impl.h on bf16 pairs (vdpbf16ps: two bf16
// products per f32 lane, accumulated in f32), and the packers that round f32 operands to bf16
// pairs. Compiled with -mavx512bf16 and the AVX-512 set (see CMakeLists.txt); only called after
// the dispatcher checked the CPU (registry.cpp). Includes no standard-library headers on purpose.
#include <immintrin.h>

#include "kernels/simd_avx512.h"
#include "kernels/simd_impl.h"

namespace aicc::kernels {
namespace {

// V512 whose tile multiplies bf16 pairs: a (a broadcast unit of A) and w (16 units of B) hold
// (k, k + 1) in the (low, high) halves of each 32-bit lane.
struct V512Bf16 : V512 {
  static vec mac(vec a, vec w, vec acc) { return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)w); }
  // The A unit as an embedded broadcast operand ({1to16}): GCC 12 emits a separate vbroadcastss
  // for the intrinsic, a second uop per vdpbf16ps that took the FP pipes (Zen 4: the 14-pixel
  // convolution panels, one vector per row, ran at half the bf16 rate).
  static vec macBroadcast(const float* a, vec w, vec acc) {
    __asm__("vdpbf16ps %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*a));
    return acc;
  }
};

template <int MR, int ROWS> void tile32(const GemmTileParams& p) {
  if (p.nr <= 16)
    detail::gemmTile<V512Bf16, MR, ROWS, 1, 32>(p);
  else
    detail::gemmTile<V512Bf16, MR, ROWS, 2>(p);
}

// 16 units (k, k + 1) from the f32 values of k (even) and k + 1 (odd), rounded to nearest even.
inline __m512 pairs(__m512 even, __m512 odd) {
  const __m512i interleave =
      _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                       21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i both = (__m512i)_mm512_cvtne2ps_pbh(odd, even); // even in lanes 0-15
  return _mm512_castsi512_ps(_mm512_permutexvar_epi16(interleave, both));
}

// A micro-panel: unit (q, i) = rows i < rows of a at columns 2q, 2q + 1 (0 past kc), one gather
// per column as the f32 packer.
template <int MR> void packA(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst) {
  const __mmask16 m = __mmask16((1u << rows) - 1u), full = __mmask16((1u << MR) - 1u);
  if (lda * (MR - 1) >= (int64_t(1) << 30)) { // 32-bit gather offsets: scalar rounding
    alignas(64) float even[16], odd[16];
    for (int64_t q = 0; 2 * q < kc; ++q) {
      for (int i = 0; i < 16; ++i) {
        even[i] = i < rows ? a[i * lda + 2 * q] : 0.0f;
        odd[i] = i < rows && 2 * q + 1 < kc ? a[i * lda + 2 * q + 1] : 0.0f;
      }
      _mm512_mask_storeu_ps(dst + q * MR, full, pairs(_mm512_load_ps(even), _mm512_load_ps(odd)));
    }
    return;
  }
  const __m512i idx =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(int(lda)));
  int64_t q = 0;
  for (; 2 * q + 1 < kc; ++q) {
    const __m512 e = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, a + 2 * q, 4);
    const __m512 o = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, a + 2 * q + 1, 4);
    _mm512_mask_storeu_ps(dst + q * MR, full, pairs(e, o));
  }
  if (2 * q < kc) { // odd kc: the last unit pairs column kc - 1 with zero
    const __m512 e = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, a + 2 * q, 4);
    _mm512_mask_storeu_ps(dst + q * MR, full, pairs(e, _mm512_setzero_ps()));
  }
}

} // namespace

void bf16_gemm_avx512bf16_14x32(const GemmTileParams& p) {
  detail::byEvenRows<14>(p, []<int ROWS>(const GemmTileParams& q) { tile32<14, ROWS>(q); });
}

void bf16_gemm_avx512bf16_packa14(const float* a, int64_t lda, int64_t rows, int64_t kc,
                                  float* dst) {
  packA<14>(a, lda, rows, kc, dst);
}

// B rows k of s (as the f32 tile loads them: in place with stride ldw, through koff / voff /
// vsplit / vgap, or a packed f32 panel of 32 columns) into 32-unit pair rows; columns >= nr and
// the k past kc are zero.
void bf16_packb32_avx512bf16(const GemmTileParams& s, float* dst) {
  const __mmask16 m0 = V512::maskFor(s.nr), m1 = V512::maskFor(s.nr - 16);
  const __mmask16 lo0 = V512::maskFor(s.vsplit[0]), lo1 = V512::maskFor(s.vsplit[1]);
  const int64_t stride = s.ldw ? s.ldw : 32;
  auto row = [&](int64_t k, int v) -> __m512 {
    const __mmask16 m = v ? m1 : m0;
    if (k >= s.kc) return _mm512_setzero_ps();
    if (!s.koff) return _mm512_maskz_loadu_ps(m, s.w + k * stride + v * 16);
    const float* w = s.w + s.koff[k];
    const __m512 a = _mm512_maskz_loadu_ps(m, w + s.voff[v]);
    if (s.vsplit[v] >= 16) return a;
    const __m512 b = _mm512_maskz_loadu_ps(m, w + s.voff[v] + s.vgap);
    return _mm512_mask_blend_ps(v ? lo1 : lo0, b, a);
  };
  for (int64_t q = 0; 2 * q < s.kc; ++q) {
    _mm512_storeu_ps(dst + q * 32, pairs(row(2 * q, 0), row(2 * q + 1, 0)));
    _mm512_storeu_ps(dst + q * 32 + 16, pairs(row(2 * q, 1), row(2 * q + 1, 1)));
  }
}

void bf16_widen_avx512bf16(const uint16_t* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = V512::maskFor(n - i);
    const __m512i x = _mm512_maskz_cvtepu16_epi32(m, _mm256_maskz_loadu_epi16(m, src + i));
    _mm512_mask_storeu_ps(dst + i, m, _mm512_castsi512_ps(_mm512_maskz_slli_epi32(m, x, 16)));
  }
}

void bf16_packb32_bf16_avx512bf16(const uint16_t* w, int64_t ldw, int64_t kc, int64_t nr,
                                  int64_t units, float* dst) {
  const __mmask32 m = nr >= 32 ? ~__mmask32(0) : (__mmask32(1) << nr) - 1;
  // Unit j of the first 16 = (row k column j, row k + 1 column j); of the next 16, columns 16 on.
  alignas(64) static const uint16_t kLo[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                               37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                               11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static const uint16_t kHi[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                               53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                               27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i lo = _mm512_load_si512(kLo), hi = _mm512_load_si512(kHi);
  int64_t q = 0;
  for (; 2 * q < kc; ++q) {
    const __m512i r0 = _mm512_maskz_loadu_epi16(m, w + 2 * q * ldw);
    const __m512i r1 = 2 * q + 1 < kc ? _mm512_maskz_loadu_epi16(m, w + (2 * q + 1) * ldw)
                                      : _mm512_setzero_si512();
    _mm512_storeu_si512(dst + q * 32, _mm512_permutex2var_epi16(r0, lo, r1));
    _mm512_storeu_si512(dst + q * 32 + 16, _mm512_permutex2var_epi16(r0, hi, r1));
  }
  for (; q < units; ++q) {
    _mm512_storeu_ps(dst + q * 32, _mm512_setzero_ps());
    _mm512_storeu_ps(dst + q * 32 + 16, _mm512_setzero_ps());
  }
}

} // namespace aicc::kernels
