// Portable C++ micro-kernels: the same tile bodies as the SIMD files with a one-lane "vector"
// (plain float, no SIMD assumptions; the compiler may still vectorize for the baseline ISA).
#include "kernels/simd_impl.h"

namespace aicc::kernels {
namespace {

struct Scalar {
  using vec = float;
  using mask = bool;
  static constexpr int width = 1;
#if defined(__x86_64__)
  static constexpr bool compact = true; // (simd_impl.h compactKernels)
#endif
  static mask maskFor(int64_t n) { return n >= 1; }
  static vec zero() { return 0.0f; }
  static vec set1(float x) { return x; }
  static vec load(const float* p) { return *p; }
  static vec loadStrided(const float* p, int64_t) { return *p; }
  static vec loadMasked(const float* p, mask m) { return m ? *p : 0.0f; }
  static void store(float* p, vec v) { *p = v; }
  static void storeMasked(float* p, mask m, vec v) {
    if (m) *p = v;
  }
  static vec fmadd(vec a, vec b, vec c) { return a * b + c; }
  static vec select(mask m, vec a, vec b) { return m ? a : b; }
  static vec add(vec a, vec b) { return a + b; }
  // Like x86 max/min: the second operand is returned when either is NaN (the kernels pass the
  // accumulator second, so NaN propagates through the clamp).
  static vec max(vec a, vec b) { return a > b ? a : b; }
  static vec min(vec a, vec b) { return a < b ? a : b; }
  static vec mul(vec a, vec b) { return a * b; }
  static vec div(vec a, vec b) { return a / b; }
  static vec round(vec a) { return __builtin_nearbyintf(a); }
  static vec pow2(vec n) {
    const int32_t bits = (int32_t(n) + 127) << 23;
    float f;
    __builtin_memcpy(&f, &bits, sizeof f);
    return f;
  }
};

template <int ROWS> void tile8(const GemmTileParams& p) { detail::gemmTile<Scalar, 4, ROWS, 8>(p); }

// int8 convolution tile (kernels/ukernel.h, KG = 2): A [q][4][2] int16, B [q][8][2] int16.
// Accumulated as uint32 (wrap-around, no undefined overflow; exact whenever the int32 result is).
void qtile(const QGemmTileParams& p) {
  uint32_t acc[4][8] = {};
  const auto* a = static_cast<const int16_t*>(p.a);
  const auto* b = static_cast<const int16_t*>(p.b);
  for (int64_t q = 0; q < p.kgroups; ++q, a += 8, b += 16)
    for (int r = 0; r < 4; ++r)
      for (int j = 0; j < 8; ++j)
        acc[r][j] += uint32_t(int32_t(a[2 * r]) * b[2 * j] + int32_t(a[2 * r + 1]) * b[2 * j + 1]);
  if (p.y32) { // ConvInteger: the int32 sums
    for (int64_t r = 0; r < p.mr; ++r)
      for (int64_t j = 0; j < p.nr; ++j)
        p.y32[r * p.ldy + j] = int32_t(acc[r][j] + uint32_t(p.rowOffset[r]));
    return;
  }
  const float flo = float(p.lo - p.yzp - 1), fhi = float(p.hi - p.yzp + 1);
  for (int64_t r = 0; r < p.mr; ++r)
    for (int64_t j = 0; j < p.nr; ++j) {
      float v = float(int32_t(acc[r][j] + uint32_t(p.rowOffset[r]))) * p.factor[r];
      v = v < flo ? flo : v > fhi ? fhi : v;
      int32_t q = int32_t(__builtin_nearbyintf(v)) + p.yzp;
      q = q < p.lo ? p.lo : q > p.hi ? p.hi : q;
      p.y[r * p.ldy + j] = static_cast<uint8_t>(q);
    }
}

} // namespace

void u8i16_qgemm_generic_4x8(const QGemmTileParams& p) { qtile(p); }

void f32_gemm_generic_4x8(const GemmTileParams& p) {
  detail::byEvenRows<4, detail::compactKernels<Scalar>()>(
      p, []<int ROWS>(const GemmTileParams& q) { tile8<ROWS>(q); });
}

AICC_SIMD_ENTRY_POINTS(Scalar, generic)

} // namespace aicc::kernels
