// AVX2 + FMA micro-kernels. Compiled with -mavx2 -mfma (see CMakeLists.txt); only called after the
// dispatcher checked the CPU (registry.cpp). Includes no standard-library headers on purpose.
#include <immintrin.h>

#include "kernels/simd_impl.h"

namespace aicc::kernels {
namespace {

struct V256 {
  using vec = __m256;
  using mask = __m256i;
  static constexpr int width = 8;
  static mask maskFor(int64_t n) {
    const int k = n >= 8 ? 8 : n <= 0 ? 0 : int(n);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static vec zero() { return _mm256_setzero_ps(); }
  static vec set1(float x) { return _mm256_set1_ps(x); }
  static vec load(const float* p) { return _mm256_loadu_ps(p); }
  static vec loadStrided(const float* p, int64_t s) {
    if (s == 2) { // deinterleave two loads; the last odd element (p[15]) is not read
      const __m256 a = _mm256_loadu_ps(p), b = _mm256_maskload_ps(p + 8, maskFor(7));
      const __m256 t = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
      return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
    }
    const __m256i idx =
        _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(int(s)));
    return _mm256_i32gather_ps(p, idx, 4);
  }
  static vec loadMasked(const float* p, mask m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, vec v) { _mm256_storeu_ps(p, v); }
  static void storeMasked(float* p, mask m, vec v) { _mm256_maskstore_ps(p, m, v); }
  static vec fmadd(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
  static vec select(mask m, vec a, vec b) { return _mm256_blendv_ps(b, a, _mm256_castsi256_ps(m)); }
  static vec add(vec a, vec b) { return _mm256_add_ps(a, b); }
  static vec max(vec a, vec b) { return _mm256_max_ps(a, b); }
  static vec min(vec a, vec b) { return _mm256_min_ps(a, b); }
  static vec mul(vec a, vec b) { return _mm256_mul_ps(a, b); }
  static vec div(vec a, vec b) { return _mm256_div_ps(a, b); }
  static vec round(vec a) {
    return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // 2^n for integral n in [-126, 127].
  static vec pow2(vec n) {
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
};

// A last panel of <= 8 columns runs the one-vector tile (half the FMAs).
template <int ROWS> void tile16(const GemmTileParams& p) {
  if (p.nr <= 8)
    detail::gemmTile<V256, 6, ROWS, 1, 16>(p);
  else
    detail::gemmTile<V256, 6, ROWS, 2>(p);
}

} // namespace

void f32_gemm_avx2_6x16(const GemmTileParams& p) {
  detail::byRows<6>(p.mr, [&]<int ROWS>() { tile16<ROWS>(p); });
}

AICC_SIMD_ENTRY_POINTS(V256, avx2)

} // namespace aicc::kernels
