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

} // namespace

void f32_gemm_avx512_packa14(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst) {
  detail::packATransposed<V512, 14>(a, lda, rows, kc, dst);
}
void f32_gemm_avx512_packa8(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst) {
  detail::packATransposed<V512, 8>(a, lda, rows, kc, dst);
}

void f32_gemm_avx512_14x32(const GemmTileParams& p) {
  detail::byEvenRows<14>(p, []<int ROWS>(const GemmTileParams& q) { tile32<14, ROWS>(q); });
}

void f32_gemm_avx512_8x32(const GemmTileParams& p) {
  detail::byEvenRows<8>(p, []<int ROWS>(const GemmTileParams& q) { tile32<8, ROWS>(q); });
}

void f32_activate_tile_avx512(float* c, int64_t ldc, int64_t rows, int64_t nr, unsigned act) {
  detail::activateTile<V512>(c, ldc, rows, nr, act);
}

void f32_conv_nchw16c_avx512(const NchwcTileParams& p) {
  // (a last odd output block alone: half the tile's FMAs, none on padding)
  p.rowPixels == 7 ? detail::nchwcTile<V512, 14, 2, 16, 16, 7>(p)
  : p.nv == 1      ? detail::nchwcTile<V512, 14, 1>(p)
                   : detail::nchwcTile<V512, 14, 2>(p);
}
void f32_conv_nchw_nchw16c_avx512(const NchwcTileParams& p) {
  p.stride == 1 ? detail::nchwcTile<V512, 14, 2, 1, 1>(p) : detail::nchwcTile<V512, 14, 2, 1, 2>(p);
}
void f32_to_nchw16c_avx512(const float* in, int64_t rows, int64_t hw, float* out) {
  detail::toNchwc<V512>(in, rows, hw, out);
}
void f32_from_nchw16c_avx512(const float* in, int64_t rows, int64_t hw, float* out) {
  detail::fromNchwc<V512>(in, rows, hw, out);
}
void f32_mean_nchw16c_avx512(const float* in, int64_t hw, float* out) {
  detail::nchwcMean<V512>(in, hw, out);
}
void f32_pool_nchw16c_avx512(const NchwcPoolParams& p) {
  p.max ? detail::nchwcPoolRow<V512, true>(p) : detail::nchwcPoolRow<V512, false>(p);
}
void f32_dwconv_nchw16c_avx512(const NchwcDwParams& p) {
  p.stride == 1 ? detail::nchwcDwRow<V512, 1>(p) : detail::nchwcDwRow<V512, 2>(p);
}

AICC_SIMD_ENTRY_POINTS(V512, avx512)
AICC_SIMD_CBLOCK_ENTRY_POINT(V512, avx512)

} // namespace aicc::kernels
