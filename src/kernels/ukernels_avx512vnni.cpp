// AVX512-VNNI micro-kernels: the int8 convolution GEMM tile (u8 activations x s8 weights, int32
// accumulation with vpdpbusd, requantization fused). Compiled with -mavx512f -mavx512bw -mavx512vl
// -mavx512vnni (CMakeLists.txt); only called after the dispatcher checked the CPU (registry.cpp).
// Includes no standard-library headers on purpose.
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics start their unmasked forms from _mm512_undefined_*, which it then
// reports as uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/simd_avx512.h"
#include "kernels/simd_impl.h"

namespace aicc::kernels {
namespace {

// Requantization of four rows of 16 scaled sums at once, for |factor| < 0.99: then no product of
// an int32 sum reaches 2^31, the conversion cannot overflow, and saturating packs (int32 -> int16,
// + yzp, -> 8 bits) clamp exactly as the float bounds of Requant do when [lo, hi] is the whole
// 8-bit range (which it always is here). 3 vector ops per row plus 6 per four rows, against
// Requant's 7 per row.
struct Requant4 {
  __m512i zp16;
  bool isSigned;
  Requant4(int32_t yzp, int32_t lo) : zp16(_mm512_set1_epi16(short(yzp))), isSigned(lo < 0) {}
  static bool applies(float factor) { return factor < 0.99f && factor > -0.99f; }
  // Rows r < 4 (columns [0, n), n <= 16) to y[r].
  void operator()(const __m512 v[4], uint8_t* const y[4], int64_t n) const {
    const __m512i a = _mm512_adds_epi16(
        _mm512_packs_epi32(_mm512_cvtps_epi32(v[0]), _mm512_cvtps_epi32(v[1])), zp16);
    const __m512i b = _mm512_adds_epi16(
        _mm512_packs_epi32(_mm512_cvtps_epi32(v[2]), _mm512_cvtps_epi32(v[3])), zp16);
    // Lane L now holds columns 4L..4L+3 of rows 0..3, a dword each; gather every row's dwords.
    const __m512i c = _mm512_permutexvar_epi32(
        _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0),
        isSigned ? _mm512_packs_epi16(a, b) : _mm512_packus_epi16(a, b));
    const __m128i r[4] = {_mm512_castsi512_si128(c), _mm512_extracti32x4_epi32(c, 1),
                          _mm512_extracti32x4_epi32(c, 2), _mm512_extracti32x4_epi32(c, 3)};
    if (n >= 16) {
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) _mm_storeu_si128(reinterpret_cast<__m128i*>(y[i]), r[i]);
      return;
    }
    const __mmask16 m = __mmask16((1u << n) - 1u);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) _mm_mask_storeu_epi8(y[i], m, r[i]);
  }
};

// acc += the products of b's 16 uint8 quads with the int8 quad at w, as an embedded broadcast
// operand ({1to16}) in inline asm. With the intrinsics (_mm512_set1_epi32 + _mm512_dpbusd_epi32),
// GCC 12 held the broadcasts in registers and then spilled and copied accumulators of the 8x48
// tile in every k step (24 accumulators + 3 B vectors + 8 broadcasts > 32 registers).
inline void dpbusdBroadcast(__m512i& acc, __m512i b, const int32_t* w) {
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(b), "m"(*w));
}

// The k loop of the 8 x 48 tiles: acc[r][j] (started from the row offsets) += the products of
// A's row r quads ([q][8][4], the signed operand, broadcast) with B's column vector j ([q][48][4],
// unsigned), for ROWS rows and NV vectors of 16 columns.
template <int ROWS, int NV>
inline void dotPanels(__m512i (&acc)[ROWS][NV], const int32_t* rowOffset, const void* a0,
                      const void* b0, int64_t kgroups) {
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r)
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_set1_epi32(rowOffset[r]);
  const auto* a = static_cast<const int32_t*>(a0);
  const auto* b = static_cast<const uint8_t*>(b0);
  for (int64_t q = 0; q < kgroups; ++q, a += 8, b += 192) {
    __m512i bv[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) bv[j] = _mm512_loadu_si512(b + 64 * j);
#pragma GCC unroll 16
    for (int r = 0; r < ROWS; ++r) {
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) dpbusdBroadcast(acc[r][j], bv[j], a + r);
    }
  }
}

// ConvInteger's int32 sums of a rows x (16 * nv) tile (acc row-major, nv vectors a row), stored
// as they are: one out-of-line loop for every tile shape (the runtime has a size budget).
__attribute__((noinline)) void storeSums(const __m512i* acc, int rows, int nv,
                                         const QGemmTileParams& p) {
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < nv && p.nr > 16 * j; ++j)
      _mm512_mask_storeu_epi32(p.y32 + r * p.ldy + 16 * j, V512::maskFor(p.nr - 16 * j),
                               acc[r * nv + j]);
}

// ROWS x (16 * NV) outputs; A is [q][8][4] int8, B is [q][48][4] uint8 (kernels/ukernel.h).
template <int ROWS, int NV> void qtile(const QGemmTileParams& p) {
  __m512i acc[ROWS][NV]; // from the row offsets (bias - xzp * row sum)
  dotPanels<ROWS, NV>(acc, p.rowOffset, p.a, p.b, p.kgroups);
  if (p.y32) return storeSums(&acc[0][0], ROWS, NV, p); // ConvInteger
  if constexpr (ROWS % 4 == 0) {
    bool fast = true;
    for (int r = 0; r < ROWS; ++r) fast = fast && Requant4::applies(p.factor[r]);
    if (fast) {
      const Requant4 requant4(p.yzp, p.lo);
#pragma GCC unroll 2
      for (int r = 0; r < ROWS; r += 4) {
        __m512 f[4];
        uint8_t* y[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i)
          f[i] = _mm512_set1_ps(p.factor[r + i]), y[i] = p.y + (r + i) * p.ldy;
#pragma GCC unroll 3
        for (int j = 0; j < NV; ++j) {
          const int64_t n = p.nr - 16 * j;
          if (n <= 0) break;
          __m512 v[4];
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i) v[i] = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[r + i][j]), f[i]);
          uint8_t* const yj[4] = {y[0] + 16 * j, y[1] + 16 * j, y[2] + 16 * j, y[3] + 16 * j};
          requant4(v, yj, n);
        }
      }
      return;
    }
  }
  const Requant requant(p.yzp, p.lo, p.hi);
#pragma GCC unroll 16
  for (int r = 0; r < ROWS; ++r) {
    const __m512 f = _mm512_set1_ps(p.factor[r]);
    uint8_t* y = p.y + r * p.ldy;
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) {
      const __m128i q = requant(_mm512_mul_ps(_mm512_cvtepi32_ps(acc[r][j]), f));
      const int64_t n = p.nr - 16 * j;
      if (n <= 0) break;
      const __mmask16 m = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u);
      _mm_mask_storeu_epi8(y + 16 * j, m, q);
    }
  }
}

// 8 x 48 outputs of the int8 GEMM with f32 results (ukernel.h's DqGemmTileParams), rows past mr
// computed (the caller packs them as zeros) and not stored: one body instead of one per row
// count. A is [q][8][4] int8 (the activations less 128), B [q][48][4] uint8 (the weights plus
// 128); the caller's row and column offsets undo both shifts and the zero point.
void dqtile(const DqGemmTileParams& p) {
  constexpr int ROWS = 8, NV = 3;
  __m512i acc[ROWS][NV];
  dotPanels<ROWS, NV>(acc, p.rowOffset, p.a, p.b, p.kgroups);
  __m512i off[NV];
  __m512 scale[NV];
  __mmask16 m[NV];
#pragma GCC unroll 3
  for (int j = 0; j < NV; ++j) {
    off[j] = _mm512_loadu_si512(p.colOffset + 16 * j);
    scale[j] = p.y32 ? _mm512_setzero_ps() : _mm512_loadu_ps(p.scale + 16 * j);
    const int64_t n = p.nr - 16 * j;
    m[j] = n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1u);
  }
#pragma GCC unroll 8
  for (int r = 0; r < ROWS; ++r) {
    if (r >= p.mr) break;
    if (p.y32) { // the int32 sums (QLinearMatMul requantizes them)
#pragma GCC unroll 3
      for (int j = 0; j < NV; ++j)
        _mm512_mask_storeu_epi32(p.y32 + r * p.ldy + 16 * j, m[j],
                                 _mm512_add_epi32(acc[r][j], off[j]));
      continue;
    }
    float* y = p.y + r * p.ldy;
#pragma GCC unroll 3
    for (int j = 0; j < NV; ++j)
      _mm512_mask_storeu_ps(
          y + 16 * j, m[j],
          _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(acc[r][j], off[j])), scale[j]));
  }
}

// R output rows of the int8 depthwise 3x3 convolution (ukernel.h's QDw3x3Params), the stride known
// at compile time. rows[q] is input row oy * STRIDE - 1 + q (q < (R - 1) * STRIDE + 3) as a padded
// uint8 row. Per 16 output columns, each input row is loaded once and rearranged so that lane j
// holds the row's three taps of output column ox + j (vpermd brings each 128-bit lane the bytes of
// its four columns, vpshufb spreads them into 4-byte groups); one vpdpbusd per output row the
// input row feeds (ky = q - i * STRIDE) then adds its three products.
template <int R, int STRIDE>
void qdwRows(const uint8_t* const* rows, const QDw3x3Params& p, const __m512i w[3], uint8_t* y) {
  constexpr int Q = (R - 1) * STRIDE + 3;
  // Lane L of the load at byte STRIDE * ox: dwords STRIDE * L .. STRIDE * L + 3 (column ox + 4L
  // starts at byte STRIDE * 4L); then column 4L + j's taps kx at byte STRIDE * j + kx of the lane.
  const __m512i lanes = STRIDE == 1
                            ? _mm512_set_epi32(6, 5, 4, 3, 5, 4, 3, 2, 4, 3, 2, 1, 3, 2, 1, 0)
                            : _mm512_set_epi32(9, 8, 7, 6, 7, 6, 5, 4, 5, 4, 3, 2, 3, 2, 1, 0);
  const __m512i taps = _mm512_broadcast_i32x4(
      STRIDE == 1 ? _mm_set_epi8(-1, 5, 4, 3, -1, 4, 3, 2, -1, 3, 2, 1, -1, 2, 1, 0)
                  : _mm_set_epi8(-1, 8, 7, 6, -1, 6, 5, 4, -1, 4, 3, 2, -1, 2, 1, 0));
  const __m512i off = _mm512_set1_epi32(p.offset);
  const __m512 f = _mm512_set1_ps(p.factor);
  const Requant requant(p.yzp, p.lo, p.hi);
  const Requant4 requant4(p.yzp, p.lo);
  const bool fast = Requant4::applies(p.factor);
  for (int64_t ox = 0; ox < p.OW; ox += 16) {
    __m512i acc[R];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) acc[i] = off;
#pragma GCC unroll 9
    for (int q = 0; q < Q; ++q) {
      const __m512i v = _mm512_shuffle_epi8(
          _mm512_permutexvar_epi32(lanes, _mm512_loadu_si512(rows[q] + STRIDE * ox)), taps);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const int ky = q - i * STRIDE;
        if (ky >= 0 && ky <= 2) acc[i] = _mm512_dpbusd_epi32(acc[i], v, w[ky]);
      }
    }
    const int64_t n = p.OW - ox;
    if (fast) { // fewer than four rows: the last one stands in for the missing ones
      __m512 v[4];
      uint8_t* yi[4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const int r = i < R ? i : R - 1;
        v[i] = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[r]), f);
        yi[i] = y + r * p.OW + ox;
      }
      requant4(v, yi, n);
      continue;
    }
    const __mmask16 m = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u);
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i)
      _mm_mask_storeu_epi8(y + i * p.OW + ox, m,
                           requant(_mm512_mul_ps(_mm512_cvtepi32_ps(acc[i]), f)));
  }
}

// u8s8_qdwconv3x3_avx512vnni_4x16 for a stride known at compile time: input row iy is copied once
// into ring slot iy % kQDwRingRows (int8 input shifted to uint8), and four output rows at a time
// are computed from the slots (qdwRows).
template <int STRIDE> void qdwPlane(const QDw3x3Params& p) {
  int64_t held[kQDwRingRows];
  for (int64_t i = 0; i < kQDwRingRows; ++i) held[i] = -1;
  __m512i w[3];
  for (int k = 0; k < 3; ++k) {
    int32_t quad;
    __builtin_memcpy(&quad, p.w + 4 * k, 4);
    w[k] = _mm512_set1_epi32(quad);
  }
  const uint8_t* outside = p.ring + kQDwRingRows * p.pitch;
  const __m512i flip = _mm512_set1_epi8(p.xSigned ? char(0x80) : 0);
  const uint8_t* rows[9];
  for (int64_t oy = 0; oy < p.OH; oy += 4) {
    const int64_t R = p.OH - oy < 4 ? p.OH - oy : 4;
    for (int64_t q = 0; q < (R - 1) * STRIDE + 3; ++q) {
      const int64_t iy = oy * STRIDE - 1 + q;
      if (iy < 0 || iy >= p.H) {
        rows[q] = outside;
        continue;
      }
      const int64_t slot = iy & (kQDwRingRows - 1);
      uint8_t* row = p.ring + slot * p.pitch;
      if (held[slot] != iy) {
        held[slot] = iy;
        const uint8_t* src = p.x + iy * p.W;
        for (int64_t i = 0; i < p.W; i += 64) {
          const int64_t n = p.W - i;
          const __mmask64 m = n >= 64 ? ~__mmask64(0) : (__mmask64(1) << n) - 1;
          _mm512_mask_storeu_epi8(row + 1 + i, m,
                                  _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, src + i), flip));
        }
      }
      rows[q] = row;
    }
    uint8_t* y = p.y + oy * p.OW;
    switch (R) {
    case 1:
      qdwRows<1, STRIDE>(rows, p, w, y);
      break;
    case 2:
      qdwRows<2, STRIDE>(rows, p, w, y);
      break;
    case 3:
      qdwRows<3, STRIDE>(rows, p, w, y);
      break;
    default:
      qdwRows<4, STRIDE>(rows, p, w, y);
      break;
    }
  }
}

// One int8 row as floats, float(x - zp), into out[0, n), or with `odd` its columns 2m into out[m]
// and 2m + 1 into odd[m] (ukernel.h's Q8RowFn).
inline void toF32Row(const uint8_t* x, int64_t n, bool isSigned, float zp, float* out, float* odd) {
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

// A panel of 1 or 2 pixels as matrix-vector products: the 8 rows of the A panel are the lanes
// (vpdpbusd on ymm: the pixel's 4 bytes broadcast x the rows' 4 weights), so a 7x7 layer's
// 1-pixel panel costs 1 instruction per k group instead of the 16-lane tile's 8. Same integer
// sums and requantization as qtile.
void qgemvCols(const QGemmTileParams& p) {
  const __mmask8 rows = __mmask8((1u << p.mr) - 1u);
  const __m256i off = _mm256_maskz_loadu_epi32(rows, p.rowOffset);
  const __m256 f = p.y32 ? _mm256_setzero_ps() : _mm256_maskz_loadu_ps(rows, p.factor);
  const Requant requant(p.yzp, p.lo, p.hi);
  for (int64_t j = 0; j < p.nr; ++j) {
    // Four independent sums over the k groups (integer addition: the same total in any order).
    __m256i acc[4] = {off, _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
    const auto* a = static_cast<const uint8_t*>(p.a);
    const auto* b = static_cast<const uint8_t*>(p.b) + 4 * j;
    for (int64_t q = 0; q < p.kgroups; ++q, a += 32, b += 192) {
      int32_t quad;
      __builtin_memcpy(&quad, b, 4);
      acc[q & 3] = _mm256_dpbusd_epi32(acc[q & 3], _mm256_set1_epi32(quad),
                                       _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)));
    }
    const __m256i sum =
        _mm256_add_epi32(_mm256_add_epi32(acc[0], acc[1]), _mm256_add_epi32(acc[2], acc[3]));
    if (p.y32) { // ConvInteger: the int32 sums
      alignas(32) int32_t s32[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(s32), sum);
      for (int64_t r = 0; r < p.mr; ++r) p.y32[r * p.ldy + j] = s32[r];
      continue;
    }
    // The 8 rows in the low half of a 16-lane requantization (the high half is 0 and unused).
    alignas(16) uint8_t out[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(out),
                    requant(_mm512_zextps256_ps512(_mm256_mul_ps(_mm256_cvtepi32_ps(sum), f))));
    for (int64_t r = 0; r < p.mr; ++r) p.y[r * p.ldy + j] = out[r];
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
  toF32Row(x, n, isSigned, zp, out, odd);
}

void u8s8_qdwconv3x3_avx512vnni_4x16(const QDw3x3Params& p) {
  if (p.stride == 1)
    qdwPlane<1>(p);
  else
    qdwPlane<2>(p);
}

void u8s8_qgemm_avx512vnni_8x48(const QGemmTileParams& p) {
  if (p.nr <= 2) return qgemvCols(p);
  detail::byRows<8>(p.mr, [&]<int ROWS>() { qtileCols<ROWS>(p); });
}

void u8s8_dqgemm_avx512vnni_8x48(const DqGemmTileParams& p) { dqtile(p); }

} // namespace aicc::kernels
