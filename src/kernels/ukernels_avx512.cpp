// AVX-512F micro-kernels. Compiled with -mavx512f -mfma (see CMakeLists.txt); only called after
// the dispatcher checked the CPU (registry.cpp). Includes no standard-library headers on purpose.
#include <immintrin.h>

#include "kernels/simd_avx512.h"
#include "kernels/simd_impl.h"

namespace aicc::kernels {
namespace {

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
  detail::byEvenRows<14>(p, []<int ROWS>(const GemmTileParams& q) { tile32<14, ROWS>(q); });
}

void f32_gemm_avx512_8x32(const GemmTileParams& p) {
  detail::byEvenRows<8>(p, []<int ROWS>(const GemmTileParams& q) { tile32<8, ROWS>(q); });
}

AICC_SIMD_ENTRY_POINTS(V512, avx512)

} // namespace aicc::kernels
