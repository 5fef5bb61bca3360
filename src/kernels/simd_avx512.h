// The AVX-512F vector traits of simd_impl.h and the int8 tiles' requantization, shared by the
// AVX-512 ISA files (ukernels_avx512.cpp, _avx512bf16.cpp, _avx512vnni.cpp, _amx.cpp). In an
// anonymous namespace: each file's copy is compiled with its own ISA flags and keeps internal
// linkage.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace aicc::kernels {
namespace {

struct V512 {
  using vec = __m512;
  using mask = __mmask16;
  static constexpr int width = 16;
  static mask maskFor(int64_t n) {
    return n >= 16 ? mask(0xFFFF) : n <= 0 ? mask(0) : mask((1u << n) - 1u);
  }
  static vec zero() { return _mm512_setzero_ps(); }
  static vec set1(float x) { return _mm512_set1_ps(x); }
  static vec load(const float* p) { return _mm512_loadu_ps(p); }
  static vec loadStrided(const float* p, int64_t s) {
    if (s == 2) { // deinterleave two loads; the last odd element (p[31]) is not read
      const __m512 a = _mm512_loadu_ps(p), b = _mm512_maskz_loadu_ps(mask(0x7FFF), p + 16);
      const __m512i even =
          _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
      return _mm512_permutex2var_ps(a, even, b);
    }
    const __m512i idx =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(int(s)));
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), __mmask16(0xFFFF), idx, p, 4);
  }
  static vec loadMasked(const float* p, mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, vec v) { _mm512_storeu_ps(p, v); }
  static void storeMasked(float* p, mask m, vec v) { _mm512_mask_storeu_ps(p, m, v); }
  static vec fmadd(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
  static vec select(mask m, vec a, vec b) { return _mm512_mask_blend_ps(m, b, a); }
  static vec add(vec a, vec b) { return _mm512_add_ps(a, b); }
  // maskz forms: GCC 12 warns (maybe-uninitialized) on the plain ones, which use
  // _mm512_undefined_ps.
  static vec max(vec a, vec b) { return _mm512_maskz_max_ps(mask(0xFFFF), a, b); }
  static vec min(vec a, vec b) { return _mm512_maskz_min_ps(mask(0xFFFF), a, b); }
  static vec mul(vec a, vec b) { return _mm512_maskz_mul_ps(mask(0xFFFF), a, b); }
  static vec div(vec a, vec b) { return _mm512_maskz_div_ps(mask(0xFFFF), a, b); }
  // r[i] lane j <-> r[j] lane i: pairs of rows interleaved (ps, then pd), then 128-bit lanes
  // (maskz forms, as above).
  static void transpose(vec* r) {
    vec a[16], b[16];
    for (int i = 0; i < 8; ++i) {
      a[2 * i] = _mm512_maskz_unpacklo_ps(mask(0xFFFF), r[2 * i], r[2 * i + 1]);
      a[2 * i + 1] = _mm512_maskz_unpackhi_ps(mask(0xFFFF), r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) { // b[4i + k] lane L: rows 4i..4i+3 of column 4L + k
      const __m512d x0 = _mm512_castps_pd(a[4 * i]), x1 = _mm512_castps_pd(a[4 * i + 1]);
      const __m512d x2 = _mm512_castps_pd(a[4 * i + 2]), x3 = _mm512_castps_pd(a[4 * i + 3]);
      b[4 * i] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(__mmask8(0xFF), x0, x2));
      b[4 * i + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(__mmask8(0xFF), x0, x2));
      b[4 * i + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(__mmask8(0xFF), x1, x3));
      b[4 * i + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(__mmask8(0xFF), x1, x3));
    }
    for (int k = 0; k < 4; ++k) {
      const vec c0 = _mm512_maskz_shuffle_f32x4(mask(0xFFFF), b[k], b[4 + k], 0x88);
      const vec c1 = _mm512_maskz_shuffle_f32x4(mask(0xFFFF), b[k], b[4 + k], 0xDD);
      const vec d0 = _mm512_maskz_shuffle_f32x4(mask(0xFFFF), b[8 + k], b[12 + k], 0x88);
      const vec d1 = _mm512_maskz_shuffle_f32x4(mask(0xFFFF), b[8 + k], b[12 + k], 0xDD);
      r[k] = _mm512_maskz_shuffle_f32x4(mask(0xFFFF), c0, d0, 0x88);
      r[8 + k] = _mm512_maskz_shuffle_f32x4(mask(0xFFFF), c0, d0, 0xDD);
      r[4 + k] = _mm512_maskz_shuffle_f32x4(mask(0xFFFF), c1, d1, 0x88);
      r[12 + k] = _mm512_maskz_shuffle_f32x4(mask(0xFFFF), c1, d1, 0xDD);
    }
  }
  static vec rcpApprox(vec a) { return _mm512_maskz_rcp14_ps(mask(0xFFFF), a); }
  static vec fnmadd(vec a, vec b, vec c) { return _mm512_fnmadd_ps(a, b, c); } // c - a * b
  static vec scale2(vec a, vec n) { return _mm512_maskz_scalef_ps(mask(0xFFFF), a, n); } // a 2^n
  static vec round(vec a) {
    return _mm512_maskz_roundscale_ps(mask(0xFFFF), a,
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // 2^n for integral n in [-126, 127].
  static vec pow2(vec n) {
    const mask m(0xFFFF);
    const __m512i e =
        _mm512_maskz_add_epi32(m, _mm512_maskz_cvtps_epi32(m, n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(m, e, 23));
  }
};

// Requantization of 16 scaled sums v = acc * factor to bytes: clamp to [lo - yzp, hi - yzp] in
// float (so the conversion cannot overflow, and after rounding to an integer of that range plus
// yzp no saturation is left to do), round half to even (the default MXCSR mode, as nearbyint),
// add the zero point, narrow.
struct Requant {
  __m512 flo, fhi;
  __m512i zp;
  Requant(int32_t yzp, int32_t lo, int32_t hi)
      : flo(_mm512_set1_ps(float(lo - yzp))), fhi(_mm512_set1_ps(float(hi - yzp))),
        zp(_mm512_set1_epi32(yzp)) {}
  __m128i operator()(__m512 v) const {
    v = _mm512_min_ps(_mm512_max_ps(v, flo), fhi);
    return _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), zp));
  }
};

} // namespace
} // namespace aicc::kernels
