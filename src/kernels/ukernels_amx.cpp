// AMX micro-kernels: the bf16 GEMM tile on the AMX tile registers (tdpbf16ps: a 16 x 32 bf16 tile
// times a 32 x 16 one, accumulated into a 16 x 16 f32 tile). Compiled with -mamx-tile -mamx-bf16
// -mamx-int8 and the AVX-512 set (CMakeLists.txt); only called after the dispatcher checked the
// CPU and that the OS granted the tile state (registry.cpp, rt/cpu.cpp). Includes no
// standard-library headers on purpose.
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics start their unmasked forms from _mm512_undefined_*, which it then
// reports as uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/simd_avx512.h"
#include "kernels/ukernel.h"

namespace aicc::kernels {
namespace {

// Every kernel here uses one configuration: palette 1, tiles 0-7 of 16 rows x 64 bytes (an f32 or
// int32 accumulator of 16 x 16, a bf16 operand of 16 x 32 or int8 of 16 x 64). Loaded once per
// thread: the configuration is thread state and nothing else in aicc touches it.
struct alignas(64) TileConfig {
  uint8_t palette, startRow, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

thread_local bool configured = false;

inline void configure() {
  if (__builtin_expect(configured, 1)) return;
  TileConfig c{};
  c.palette = 1;
  for (int i = 0; i < 8; ++i) c.colsb[i] = 64, c.rows[i] = 16;
  _tile_loadconfig(&c);
  configured = true;
}

// What a tile instruction multiplies: bf16 pairs into f32, or groups of four bytes into int32,
// A signed and B unsigned (the convolution tile: weights x activations) or A unsigned and B
// signed (the dequantizing GEMM: activations x weights).
enum class Dot { Bf16, SU, US };

// One tile instruction's dot products (tile numbers are immediates: the intrinsics are macros).
#define AICC_TILE_DOT(C, A, B)                                                                     \
  do {                                                                                             \
    if constexpr (D == Dot::Bf16)                                                                  \
      _tile_dpbf16ps(C, A, B);                                                                     \
    else if constexpr (D == Dot::SU)                                                               \
      _tile_dpbsud(C, A, B);                                                                       \
    else                                                                                           \
      _tile_dpbusd(C, A, B);                                                                       \
  } while (0)

// The 32 x 32 block of products (M2: rows 16-31 too, N2: columns 16-31 too) into acc (row-major,
// 32 values a row). A is row-major, rows `as` bytes apart, `units` 4-byte units a row (bf16 pairs,
// or groups of four bytes), B has 32 units a row (16 per half), units a multiple of 16. Tiles 0-3
// accumulate (0: rows 0-15 x columns 0-15, 1: columns 16-31, 2-3: rows 16-31), 4-5 hold A's two row
// halves, 6-7 B's two column halves; each step takes 16 units of k. The lines [0, pfLines) from pf
// (the next panel's share, GemmTileParams::pf) are prefetched into L2 a few per step: issued in a
// burst before the loop they stalled it (17% of the tile's time on aicc_bench's 1024^3, Intel
// Xeon).
template <Dot D, bool M2, bool N2>
void products(const void* a0, long as, const void* b0, int64_t units, void* acc, const char* pf,
              int64_t pfLines) {
  const char* a = static_cast<const char*>(a0);
  const char* b = static_cast<const char*>(b0);
  _tile_zero(0);
  if constexpr (N2) _tile_zero(1);
  if constexpr (M2) _tile_zero(2);
  if constexpr (M2 && N2) _tile_zero(3);
  const int64_t steps = (units + 15) / 16, per = (pfLines + steps - 1) / steps;
  int64_t line = 0;
  for (int64_t q = 0; q < units; q += 16, a += 64, b += 16 * 128) {
    for (int64_t l = 0; l < per && line < pfLines; ++l, ++line)
      __builtin_prefetch(pf + line * 64, 0, 2);
    _tile_loadd(4, a, as);
    _tile_loadd(6, b, 128);
    if constexpr (N2) _tile_loadd(7, b + 64, 128);
    AICC_TILE_DOT(0, 4, 6);
    if constexpr (N2) AICC_TILE_DOT(1, 4, 7);
    if constexpr (M2) {
      _tile_loadd(5, a + 16 * as, as);
      AICC_TILE_DOT(2, 5, 6);
      if constexpr (N2) AICC_TILE_DOT(3, 5, 7);
    }
  }
  char* c = static_cast<char*>(acc);
  _tile_stored(0, c, 128);
  if constexpr (N2) _tile_stored(1, c + 64, 128);
  if constexpr (M2) _tile_stored(2, c + 16 * 128, 128);
  if constexpr (M2 && N2) _tile_stored(3, c + 16 * 128 + 64, 128);
}

// products() for mr rows and nr columns (the halves past them skipped); A's rows `as` bytes apart
// (0: packed, units * 4).
template <Dot D>
void products(int64_t mr, int64_t nr, const void* a, const void* b, int64_t units, void* acc,
              const char* pf = nullptr, int64_t pfLines = 0, long as = 0) {
  configure();
  if (as == 0) as = long(units) * 4;
  if (mr > 16 && nr > 16)
    products<D, true, true>(a, as, b, units, acc, pf, pfLines);
  else if (mr > 16)
    products<D, true, false>(a, as, b, units, acc, pf, pfLines);
  else if (nr > 16)
    products<D, false, true>(a, as, b, units, acc, pf, pfLines);
  else
    products<D, false, false>(a, as, b, units, acc, pf, pfLines);
}

} // namespace

// The QGemmUkernelFn contract (ukernel.h) on AMX tiles: A (the weights) row-major, a[r][kgroups *
// 4] int8, B (the activations) b[q][32][4] uint8, kgroups a multiple of 16 (KernelDesc::kuAlign,
// zero weights past Kc). Requantized per row with the VNNI tile's Requant (simd_avx512.h):
// v = float(acc + rowOffset) * factor, clamped to [lo - yzp, hi - yzp], rounded half to even, +
// yzp.
void u8s8_qgemm_amx_32x32(const QGemmTileParams& p) {
  alignas(64) int32_t acc[32 * 32];
  products<Dot::SU>(p.mr, p.nr, p.a, p.b, p.kgroups, acc);
  const bool n2 = p.nr > 16;
  if (p.y32) { // ConvInteger: the int32 sums
    const __mmask16 m[2] = {V512::maskFor(p.nr), V512::maskFor(p.nr - 16)};
    for (int64_t r = 0; r < p.mr; ++r)
      for (int v = 0; v < (n2 ? 2 : 1); ++v)
        _mm512_mask_storeu_epi32(p.y32 + r * p.ldy + v * 16, m[v],
                                 _mm512_add_epi32(_mm512_load_si512(acc + r * 32 + v * 16),
                                                  _mm512_set1_epi32(p.rowOffset[r])));
    return;
  }
  const Requant requant(p.yzp, p.lo, p.hi);
  const __mmask16 m[2] = {V512::maskFor(p.nr), V512::maskFor(p.nr - 16)};
  for (int64_t r = 0; r < p.mr; ++r) {
    const __m512i off = _mm512_set1_epi32(p.rowOffset[r]);
    const __m512 f = _mm512_set1_ps(p.factor[r]);
    for (int v = 0; v < (n2 ? 2 : 1); ++v) {
      const __m512i x = _mm512_add_epi32(_mm512_load_si512(acc + r * 32 + v * 16), off);
      _mm_mask_storeu_epi8(p.y + r * p.ldy + v * 16, m[v],
                           requant(_mm512_mul_ps(_mm512_cvtepi32_ps(x), f)));
    }
  }
}

// The DqGemmTileParams contract (ukernel.h) on AMX tiles (tdpbusd): A the activations' uint8 rows
// read in place, B the int8 weights b[q][32][4].
void u8s8_dqgemm_amx_32x32(const DqGemmTileParams& p) {
  alignas(64) int32_t acc[32 * 32];
  products<Dot::US>(p.mr, p.nr, p.a, p.b, p.kgroups, acc, nullptr, 0, long(p.lda));
  const bool n2 = p.nr > 16;
  const __mmask16 m[2] = {V512::maskFor(p.nr), V512::maskFor(p.nr - 16)};
  const __m512i off[2] = {_mm512_loadu_si512(p.colOffset), _mm512_loadu_si512(p.colOffset + 16)};
  const __m512 scale[2] = {p.y32 ? _mm512_setzero_ps() : _mm512_loadu_ps(p.scale),
                           p.y32 ? _mm512_setzero_ps() : _mm512_loadu_ps(p.scale + 16)};
  for (int64_t r = 0; r < p.mr; ++r) {
    const __m512i ro = _mm512_set1_epi32(p.rowOffset[r]);
    for (int v = 0; v < (n2 ? 2 : 1); ++v) {
      const __m512i x =
          _mm512_add_epi32(_mm512_add_epi32(_mm512_load_si512(acc + r * 32 + v * 16), ro), off[v]);
      if (p.y32) { // the int32 sums (QLinearMatMul requantizes them)
        _mm512_mask_storeu_epi32(p.y32 + r * p.ldy + v * 16, m[v], x);
        continue;
      }
      _mm512_mask_storeu_ps(p.y + r * p.ldy + v * 16, m[v],
                            _mm512_mul_ps(_mm512_cvtepi32_ps(x), scale[v]));
    }
  }
}

// The GemmUkernelFn contract (ukernel.h) for the AMX layout: A row-major a[i * kc + q], B panels
// w[q * 32 + j], kc a multiple of 16 units (KernelDesc::kuAlign: the packers pad with zeros).
// The epilogue runs on AVX-512 from the stored accumulators, as the vector tiles' does: bias (or C
// of an earlier K block), then on the last block the residual, the clamp and the activation. A
// bf16 result (cb) is finished in the accumulator buffer, then narrowed row by row.
void bf16_gemm_amx_32x32(const GemmTileParams& p) {
  alignas(64) float acc[32 * 32];
  products<Dot::Bf16>(p.mr, p.nr, p.a, p.w, p.kc, acc, p.pf, p.pfLines);
  const bool n2 = p.nr > 16;
  const __mmask16 m[2] = {V512::maskFor(p.nr), V512::maskFor(p.nr - 16)};
  const bool first = p.flags & kGemmFirst, last = p.flags & kGemmLast, bf16 = last && p.cb;
  const int64_t ldr = p.cb ? p.ldcb : p.ldc; // the residual's rows
  const __m512 lo = _mm512_set1_ps(p.lo), hi = _mm512_set1_ps(p.hi);
  for (int64_t i = 0; i < p.mr; ++i) {
    float* c = p.c + i * p.ldc;
    for (int v = 0; v < (n2 ? 2 : 1); ++v) {
      __m512 x = _mm512_load_ps(acc + i * 32 + v * 16);
      if (!first)
        x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m[v], c + v * 16));
      else if (p.bias && (p.flags & kGemmRowBias))
        x = _mm512_add_ps(x, _mm512_set1_ps(p.bias[i]));
      else if (p.bias)
        x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m[v], p.bias + v * 16));
      if (last) {
        if (p.res) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m[v], p.res + i * ldr + v * 16));
        if (p.resb) {
          const __m512i r = _mm512_maskz_cvtepu16_epi32(
              m[v], _mm256_maskz_loadu_epi16(m[v], p.resb + i * ldr + v * 16));
          x = _mm512_add_ps(x, _mm512_castsi512_ps(_mm512_maskz_slli_epi32(m[v], r, 16)));
        }
        x = _mm512_min_ps(hi, _mm512_max_ps(lo, x));
      }
      if (bf16 && p.act == kActNone) // narrowed here; with an activation, after it (below)
        _mm256_mask_storeu_epi16(p.cb + i * p.ldcb + v * 16, m[v], (__m256i)_mm512_cvtneps_pbh(x));
      else if (bf16)
        _mm512_store_ps(acc + i * 32 + v * 16, x);
      else
        _mm512_mask_storeu_ps(c + v * 16, m[v], x);
    }
  }
  if (last && p.act != kActNone)
    f32_activate_tile_avx512(bf16 ? acc : p.c, bf16 ? 32 : p.ldc, p.mr, p.nr, p.act);
  for (int64_t i = 0; i < p.mr && bf16 && p.act != kActNone; ++i)
    for (int v = 0; v < (n2 ? 2 : 1); ++v)
      _mm256_mask_storeu_epi16(p.cb + i * p.ldcb + v * 16, m[v],
                               (__m256i)_mm512_cvtneps_pbh(_mm512_load_ps(acc + i * 32 + v * 16)));
}

// A micro-panel, row-major: row i < rows holds ceil(kc / 2) units of k pairs rounded to bf16 (the
// last one paired with zero for an odd kc), zero up to the next multiple of 16 units. Each 32
// values of k are two f32 vectors converted in one vcvtne2ps2bf16, already in memory order.
void bf16_gemm_amx_packa32(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst) {
  const int64_t ku = ((kc + 1) / 2 + 15) / 16 * 16;
  for (int64_t i = 0; i < rows; ++i) {
    const float* src = a + i * lda;
    char* d = static_cast<char*>(static_cast<void*>(dst + i * ku));
    for (int64_t k = 0; k < 2 * ku; k += 32) {
      const __m512 x0 = _mm512_maskz_loadu_ps(V512::maskFor(kc - k), src + k);
      const __m512 x1 = _mm512_maskz_loadu_ps(V512::maskFor(kc - k - 16), src + k + 16);
      _mm512_storeu_si512(d + 2 * k, (__m512i)_mm512_cvtne2ps_pbh(x1, x0));
    }
  }
}

// The 32-column B panel of the AVX512-BF16 packer, then zero rows up to the next multiple of 16.
void bf16_packb32_amx(const GemmTileParams& src, float* dst) {
  bf16_packb32_avx512bf16(src, dst);
  const int64_t units = (src.kc + 1) / 2, padded = (units + 15) / 16 * 16;
  for (int64_t q = units; q < padded; ++q) {
    _mm512_storeu_ps(dst + q * 32, _mm512_setzero_ps());
    _mm512_storeu_ps(dst + q * 32 + 16, _mm512_setzero_ps());
  }
}

} // namespace aicc::kernels
