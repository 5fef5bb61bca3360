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
  // r[i] lane j <-> r[j] lane i: pairs of rows interleaved (ps, then pd), then 128-bit halves.
  static void transpose(vec* r) {
    vec a[8], b[8];
    for (int i = 0; i < 4; ++i) {
      a[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      a[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; ++i) { // b[4i + k] half L: rows 4i..4i+3 of column 4L + k
      const __m256d x0 = _mm256_castps_pd(a[4 * i]), x1 = _mm256_castps_pd(a[4 * i + 1]);
      const __m256d x2 = _mm256_castps_pd(a[4 * i + 2]), x3 = _mm256_castps_pd(a[4 * i + 3]);
      b[4 * i] = _mm256_castpd_ps(_mm256_unpacklo_pd(x0, x2));
      b[4 * i + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(x0, x2));
      b[4 * i + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(x1, x3));
      b[4 * i + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(x1, x3));
    }
    for (int k = 0; k < 4; ++k) {
      r[k] = _mm256_permute2f128_ps(b[k], b[4 + k], 0x20);
      r[4 + k] = _mm256_permute2f128_ps(b[k], b[4 + k], 0x31);
    }
  }
  static vec rcpApprox(vec a) { return _mm256_rcp_ps(a); }
  static vec fnmadd(vec a, vec b, vec c) { return _mm256_fnmadd_ps(a, b, c); } // c - a * b
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

// ConvInteger's int32 sums of a rows x (8 * nv) tile (acc row-major, nv vectors a row) plus the
// row offsets: one out-of-line loop for every tile shape (the runtime has a size budget).
__attribute__((noinline)) void storeSums(const __m256i* acc, int rows, int nv,
                                         const QGemmTileParams& p) {
  for (int r = 0; r < rows; ++r) {
    alignas(32) int32_t out[24];
    for (int j = 0; j < nv; ++j)
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + 8 * j),
                         _mm256_add_epi32(acc[r * nv + j], _mm256_set1_epi32(p.rowOffset[r])));
    const int64_t n = p.nr < 8 * nv ? p.nr : 8 * nv;
    for (int64_t c = 0; c < n; ++c) p.y32[r * p.ldy + c] = out[c];
  }
}

// int8 convolution tile (kernels/ukernel.h, KG = 2): ROWS x (8 * NV) outputs, A [q][4][2] int16,
// B [q][24][2] int16; pmaddwd sums two exact int16 products per int32 lane.
template <int ROWS, int NV> void qtile(const QGemmTileParams& p) {
  __m256i acc[ROWS][NV];
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) acc[r][j] = _mm256_setzero_si256();
  const auto* a = static_cast<const int32_t*>(p.a);
  const auto* b = static_cast<const int16_t*>(p.b);
  for (int64_t q = 0; q < p.kgroups; ++q, a += 4, b += 48) {
    __m256i bv[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j)
      bv[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16 * j));
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
      const __m256i w = _mm256_set1_epi32(a[r]);
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j)
        acc[r][j] = _mm256_add_epi32(acc[r][j], _mm256_madd_epi16(bv[j], w));
    }
  }
  if (p.y32) return storeSums(&acc[0][0], ROWS, NV, p); // ConvInteger
  // Requantization as the AVX-512 tile (ukernels_avx512vnni.cpp): clamp in float, round half to
  // even, add the zero point, saturate; the bytes leave through a small buffer.
  const __m256 flo = _mm256_set1_ps(float(p.lo - p.yzp - 1)),
               fhi = _mm256_set1_ps(float(p.hi - p.yzp + 1));
  const __m256i zp = _mm256_set1_epi32(p.yzp), lo = _mm256_set1_epi32(p.lo),
                hi = _mm256_set1_epi32(p.hi);
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    const __m256i off = _mm256_set1_epi32(p.rowOffset[r]);
    const __m256 f = _mm256_set1_ps(p.factor[r]);
    alignas(32) int32_t out[8 * NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) {
      __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(acc[r][j], off)), f);
      v = _mm256_min_ps(_mm256_max_ps(v, flo), fhi);
      __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(v), zp);
      q = _mm256_min_epi32(_mm256_max_epi32(q, lo), hi);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + 8 * j), q);
    }
    uint8_t* y = p.y + r * p.ldy;
    const int64_t n = p.nr < 8 * NV ? p.nr : 8 * NV;
    for (int64_t c = 0; c < n; ++c) y[c] = static_cast<uint8_t>(out[c]);
  }
}

template <int ROWS> void qtileCols(const QGemmTileParams& p) {
  if (p.nr <= 8)
    qtile<ROWS, 1>(p);
  else if (p.nr <= 16)
    qtile<ROWS, 2>(p);
  else
    qtile<ROWS, 3>(p);
}

} // namespace

void u8i16_qgemm_avx2_4x24(const QGemmTileParams& p) {
  detail::byRows<4>(p.mr, [&]<int ROWS>() { qtileCols<ROWS>(p); });
}

void f32_gemm_avx2_6x16(const GemmTileParams& p) {
  detail::byEvenRows<6>(p, []<int ROWS>(const GemmTileParams& q) { tile16<ROWS>(q); });
}

void f32_gemm_avx2_packa6(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst) {
  detail::packATransposed<V256, 6>(a, lda, rows, kc, dst);
}

AICC_SIMD_ENTRY_POINTS(V256, avx2)
AICC_SIMD_CBLOCK_ENTRY_POINT(V256, avx2)

} // namespace aicc::kernels
