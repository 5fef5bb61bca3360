// NEON micro-kernels (AArch64, where NEON is always present): the tile bodies of simd_impl.h over
// 4-lane float vectors. Compiled on AArch64 only (CMakeLists.txt); includes no standard-library
// headers on purpose.
#include <arm_neon.h>

#include "kernels/simd_impl.h"

namespace aicc::kernels {
namespace {

struct V128 {
  using vec = float32x4_t;
  using mask = uint32x4_t;
  static constexpr int width = 4;
  static mask maskFor(int64_t n) {
    const uint32_t k = n >= 4 ? 4u : n <= 0 ? 0u : uint32_t(n);
    const uint32_t lanes[4] = {0, 1, 2, 3};
    return vcltq_u32(vld1q_u32(lanes), vdupq_n_u32(k));
  }
  static vec zero() { return vdupq_n_f32(0.0f); }
  static vec set1(float x) { return vdupq_n_f32(x); }
  static vec load(const float* p) { return vld1q_f32(p); }
  static vec loadStrided(const float* p, int64_t s) {
    const float t[4] = {p[0], p[s], p[2 * s], p[3 * s]};
    return vld1q_f32(t);
  }
  // Lanes outside the mask are not read (they may lie past the buffer).
  static vec loadMasked(const float* p, mask m) {
    uint32_t on[4];
    vst1q_u32(on, m);
    const float t[4] = {on[0] ? p[0] : 0.0f, on[1] ? p[1] : 0.0f, on[2] ? p[2] : 0.0f,
                        on[3] ? p[3] : 0.0f};
    return vld1q_f32(t);
  }
  static void store(float* p, vec v) { vst1q_f32(p, v); }
  static void storeMasked(float* p, mask m, vec v) {
    uint32_t on[4];
    float t[4];
    vst1q_u32(on, m);
    vst1q_f32(t, v);
    for (int i = 0; i < 4; ++i)
      if (on[i]) p[i] = t[i];
  }
  static vec fmadd(vec a, vec b, vec c) { return vfmaq_f32(c, a, b); }
  static vec select(mask m, vec a, vec b) { return vbslq_f32(m, a, b); }
  static vec add(vec a, vec b) { return vaddq_f32(a, b); }
  static vec max(vec a, vec b) { return vmaxq_f32(a, b); }
  static vec min(vec a, vec b) { return vminq_f32(a, b); }
  static vec mul(vec a, vec b) { return vmulq_f32(a, b); }
  static vec div(vec a, vec b) { return vdivq_f32(a, b); }
  static vec round(vec a) { return vrndnq_f32(a); }
  // 2^n for integral n in [-126, 127].
  static vec pow2(vec n) {
    return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23));
  }
};

// 8 rows x 2 vectors: 16 accumulators of the 32 q registers. A last panel of <= 4 columns runs the
// one-vector tile.
template <int ROWS> void tile8(const GemmTileParams& p) {
  if (p.nr <= 4)
    detail::gemmTile<V128, 8, ROWS, 1, 8>(p);
  else
    detail::gemmTile<V128, 8, ROWS, 2>(p);
}

} // namespace

void f32_gemm_neon_8x8(const GemmTileParams& p) {
  detail::byEvenRows<8>(p, []<int ROWS>(const GemmTileParams& q) { tile8<ROWS>(q); });
}

AICC_SIMD_ENTRY_POINTS(V128, neon)
AICC_SIMD_CBLOCK_ENTRY_POINT(V128, neon)

} // namespace aicc::kernels
