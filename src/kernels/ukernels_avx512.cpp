// AVX-512F micro-kernels. Compiled with -mavx512f -mfma (see CMakeLists.txt); only called after
// the dispatcher checked the CPU (registry.cpp). Includes no standard-library headers on purpose.
#include <immintrin.h>

#include "kernels/simd_impl.h"

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

// A last panel of <= 16 columns runs the one-vector tile (half the FMAs).
template <int MR, int ROWS> void tile32(const GemmTileParams& p) {
  if (p.nr <= 16)
    detail::gemmTile<V512, MR, ROWS, 1, 32>(p);
  else
    detail::gemmTile<V512, MR, ROWS, 2>(p);
}

// One gather per k collects the column a[0..rows)[k]; a plain copy is one scalar load and store per
// element, which dominated GEMMs with few N panels (e.g. 3136x64x576).
template <int MR>
void packAGather(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst) {
  const __mmask16 m = __mmask16((1u << rows) - 1u);
  const __m512i idx =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(int(lda)));
  const __mmask16 full = __mmask16((1u << MR) - 1u);
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, a + k, 4);
    _mm512_mask_storeu_ps(dst + k * MR, full, v);
  }
}

template <int MR>
void packAScalar(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst) {
  for (int64_t k = 0; k < kc; ++k)
    for (int64_t i = 0; i < rows; ++i) dst[k * MR + i] = a[i * lda + k];
}

template <int MR> void packA(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst) {
  // The gather's 32-bit element offsets must not overflow (and the masked store writes MR lanes).
  if (lda * (MR - 1) < (int64_t(1) << 30))
    packAGather<MR>(a, lda, rows, kc, dst);
  else
    packAScalar<MR>(a, lda, rows, kc, dst);
}

} // namespace

void f32_gemm_avx512_packa14(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst) {
  packA<14>(a, lda, rows, kc, dst);
}
void f32_gemm_avx512_packa8(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst) {
  packA<8>(a, lda, rows, kc, dst);
}

void f32_gemm_avx512_14x32(const GemmTileParams& p) {
  detail::byRows<14>(p.mr, [&]<int ROWS>() { tile32<14, ROWS>(p); });
}

void f32_gemm_avx512_8x32(const GemmTileParams& p) {
  detail::byRows<8>(p.mr, [&]<int ROWS>() { tile32<8, ROWS>(p); });
}

AICC_SIMD_ENTRY_POINTS(V512, avx512)

} // namespace aicc::kernels
