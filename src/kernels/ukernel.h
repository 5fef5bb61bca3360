// Micro-kernel calling conventions (plain C types only).
//
// This header is included by the ISA-specific translation units (compiled with -mavx2/-mavx512f),
// so it must not pull in inline functions or templates from the standard library: the linker could
// otherwise keep an AVX-512 copy of a shared inline function and call it on a CPU without AVX-512.
#pragma once

#include <cstdint>

namespace aicc::kernels {

// GEMM tile flags.
enum : unsigned {
  kGemmFirst = 1u,   // first K block: initialize the accumulators from bias (or zero), not from C
  kGemmLast = 2u,    // last K block: apply the clamp [lo, hi] (the fused activation) before storing
  kGemmRowBias = 4u, // with kGemmFirst: `bias` holds one value per row (mr floats), not per column
};

// A fused activation applied after the clamp, on the last K block (GEMM) or per output (depthwise).
// The f32 exp inside Swish/Sigmoid is a degree-6 polynomial after range reduction (~2 ulp).
enum : unsigned {
  kActNone = 0,
  kActHardSwish = 1, // x * min(1, max(0, x / 6 + 1/2))
  kActSwish = 2,     // x * sigmoid(x) (SiLU)
  kActSigmoid = 3,   // 1 / (1 + exp(-x))
  kActGelu = 4,      // x * Phi(x) (erf form), Abramowitz-Stegun 7.1.26 for erf (|err| < 1.5e-7)
};

// One register tile: C[mr, nr] (+)= A_packed[kc, MR] x W_panel[kc, NR], where MR x NR is the
// kernel's tile. A is packed k-major with a row stride of MR (rows >= mr are never read), W is one
// pre-packed B panel (k-major, NR floats per k, columns >= nr are zero padding) or, with ldw, B
// read in place (a 1x1 convolution's NCHW input).
struct GemmTileParams {
  const float* a; // packed A micro-panel: a[k * MR + i]
  const float* w; // packed B panel: w[k * NR + j]
  float* c;       // C tile, row-major with leading dimension ldc
  int64_t ldc;
  const float* bias; // bias for the tile's columns (nr floats; rows with kGemmRowBias), or null
  int64_t mr;        // 1..MR valid rows
  int64_t nr;        // 1..NR valid columns
  int64_t kc;        // K block length (>= 1)
  unsigned flags;    // kGemmFirst | kGemmLast
  float lo, hi;      // clamp applied with kGemmLast (-inf/+inf for no activation)
  unsigned act;      // kAct*, applied after the clamp with kGemmLast
  const float* res;  // with kGemmLast: a residual tile (leading dimension ldc) added before the
                     // clamp, or null
  int64_t ldw;       // 0: w is a packed panel (row stride NR, zero-padded columns); else w is read
                     // in place with row stride ldw (columns >= nr are not read)
  const int64_t* koff; // or: through an offset table (implicit im2col of a padded input): vector v
                       // of B row k (lanes v*W.. of the panel, W = the vector width) is read at
                       // w + koff[k] + voff[v], all W lanes readable; with vsplit[v] < W, lanes
                       // >= vsplit[v] are read vgap floats further on (a run of output pixels
                       // that continues on the next output row), and with any split vector every
                       // vector's W lanes vgap floats further on must be readable too
  int64_t voff[8];     // with koff: per-vector offsets (v < NR / W)
  int64_t vgap;
  int32_t vsplit[8];
  const char* pf;  // lines [0, pfLines) of 64 bytes from pf to prefetch into L2 (the next weight
  int64_t pfLines; // panel's share), spread over the k loop by the vector tiles
  // bf16 activations (KernelDesc::bf16Io tiles only): with cb, the last K block writes its result
  // as bf16 to cb (leading dimension ldcb) instead of to c (which holds the f32 sums of earlier
  // blocks, and is not read on the first); resb a bf16 residual in res's place. Both residuals
  // are laid out as the result (ldcb with cb, else ldc).
  uint16_t* cb;
  const uint16_t* resb;
  int64_t ldcb;
};

// Line l of a tile's L2 prefetch share (GemmTileParams::pf), and lines [from, pfLines) at once
// (the rest after a spread k loop).
inline void prefetchTileLine(const GemmTileParams& p, int64_t l) {
  __builtin_prefetch(p.pf + l * 64, 0, 2);
}
inline void prefetchTileLines(const GemmTileParams& p, int64_t from = 0) {
  for (int64_t l = from; l < p.pfLines; ++l) prefetchTileLine(p, l);
}
using GemmUkernelFn = void (*)(const GemmTileParams&);

// Packs one A micro-panel: rows [0, rows) x columns [0, kc) of a (leading dimension lda) into
// dst[k * MR + i] (MR = the kernel's tile rows; lanes i >= rows are unspecified).
using GemmPackAFn = void (*)(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst);

void f32_gemm_generic_4x8(const GemmTileParams& p);
void f32_gemm_avx2_6x16(const GemmTileParams& p);
void f32_gemm_avx2_packa6(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst);
void f32_gemm_avx512_14x32(const GemmTileParams& p);
void f32_gemm_avx512_8x32(const GemmTileParams& p);
void f32_gemm_avx512_packa14(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst);
void f32_gemm_avx512_packa8(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst);
void f32_gemm_neon_8x8(const GemmTileParams& p);

// bf16 GEMM (KernelDesc::kg = 2): the tile contract above with A and B as bf16 pairs, two bf16
// values of consecutive k (k even in the low half) per 32-bit unit, products accumulated in f32:
// A micro-panels a[q * MR + i] and B panels w[q * NR + j] hold units q < kc (kc counts pairs;
// ldw and koff are unused: B is always packed). The packers round f32 to bf16 (to nearest even):
// GemmPackAFn (kc counting k values, as for f32) writes (kc + 1) / 2 units per row, the last one
// paired with zero for an odd kc; GemmPackBFn packs the B rows src describes (w, ldw or koff /
// voff / vsplit / vgap, nr columns, kc values of k, as the f32 tile would read them) into
// (src.kc + 1) / 2 rows of NR units, zero past nr and kc.
using GemmPackBFn = void (*)(const GemmTileParams& src, float* dst);
void bf16_gemm_avx512bf16_14x32(const GemmTileParams& p);
void bf16_gemm_avx512bf16_packa14(const float* a, int64_t lda, int64_t rows, int64_t kc,
                                  float* dst);
void bf16_packb32_avx512bf16(const GemmTileParams& src, float* dst);
// The bf16 contract on AMX tiles (KernelDesc::aRows, kuAlign 16): A micro-panels row-major,
// a[i * kc + q] (kc counts units, a multiple of 16), B panels as above with kc a multiple of 16.
void bf16_gemm_amx_32x32(const GemmTileParams& p);
void bf16_gemm_amx_packa32(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst);
void bf16_packb32_amx(const GemmTileParams& src, float* dst);
// Activations stored as bf16 (kernels::Epilogue::bf16; KernelDesc::widenBf16 / packB16 of the
// bf16 kernels): n bf16 values widened to f32 (exact); B panel rows of bf16 bits read in place
// (row k at w + k * ldw, nr <= 32 columns, kc rows) into (kc + 1) / 2 pair units, zero past nr
// and kc, then zero units up to `units` (the kernel's packedKUnits).
using Bf16WidenFn = void (*)(const uint16_t* src, int64_t n, float* dst);
using GemmPackB16Fn = void (*)(const uint16_t* w, int64_t ldw, int64_t kc, int64_t nr,
                               int64_t units, float* dst);
void bf16_widen_avx512bf16(const uint16_t* src, int64_t n, float* dst);
void bf16_packb32_bf16_avx512bf16(const uint16_t* w, int64_t ldw, int64_t kc, int64_t nr,
                                  int64_t units, float* dst);
// act(x) (kAct*) over rows [0, rows) x columns [0, nr) of a stored C tile, on AVX-512.
void f32_activate_tile_avx512(float* c, int64_t ldc, int64_t rows, int64_t nr, unsigned act);

// One register tile of the int8 convolution GEMM (kernels/qconv.h): y[mr, nr] =
// requant(A_packed x B_panel + rowOffset), exact in int32. The kernel's tile is MR x NR with KG
// values of k per 32-bit lane: A (the weights, packed at compile time) is a[q][MR][KG] and B (the
// activations, packed per call) b[q][NR][KG] for q < kgroups, as
//   KG = 4: A int8 (w - wzp), B uint8 (x, or x + 128 for int8 x): one vpdpbusd per lane;
//   KG = 2: A int16, B int16: one pmaddwd per lane (any w - wzp in [-255, 255]).
// Rows >= mr and columns >= nr are padding (read, never stored); k padding holds zero weights.
// Requantization per row r: v = float(acc + rowOffset[r]) * factor[r] (f32, as the reference
// kernel), rounded half to even, + yzp, saturated to [lo, hi], stored as one byte per column; or,
// with y32 set (ConvInteger), acc + rowOffset[r] stored as int32 at y32 + r * ldy (factor unused).
struct QGemmTileParams {
  const void* a;
  const void* b;
  int64_t kgroups;
  int64_t mr, nr;
  const int32_t* rowOffset; // mr values: bias - xzp * (row sum of A)
  const float* factor;      // mr values
  int32_t yzp, lo, hi;      // zero point and saturation bounds of y (0/255 or -128/127)
  uint8_t* y;               // first row; row r at y + r * ldy
  int64_t ldy;
  int32_t* y32 = nullptr; // int32 results instead of y (no requantization)
};
using QGemmUkernelFn = void (*)(const QGemmTileParams&);
void u8s8_qgemm_avx512vnni_8x48(const QGemmTileParams& p);
// The same on AMX tiles (KernelDesc::aRows, kuAlign 16): A row-major a[r][kgroups * 4] (int8),
// B b[q][32][4] (uint8), kgroups a multiple of 16.
void u8s8_qgemm_amx_32x32(const QGemmTileParams& p);
// One register tile of the int8 GEMM with f32 results (kernels/dqgemm.h; com.microsoft
// MatMulIntegerToFloat): for r < mr rows of the activations and c < nr columns of the weights,
//   y[r * ldy + c] = float(S[r][c] + rowOffset[r] + colOffset[c]) * scale[c]
// S the sum over q < kgroups of the four products of row r's quad q and column c's quad q, int32
// with wrap-around adds (exact where the true result fits). Per kernel (KernelDesc::aRows):
//   AMX (tdpbusd): A uint8 rows lda bytes apart, each readable for kgroups * 4 bytes, 16 rows
//     (32 when mr > 16) readable; B int8 b[q][32][4]; kgroups a multiple of 16.
//   AVX512-VNNI (vpdpbusd, A's quads broadcast): A int8 a[q][8][4] (lda unused; all 8 rows
//     read, rows past mr zeros, and rowOffset holds 8 values); B uint8 b[q][48][4].
// colOffset and scale hold NR values (the columns past nr are read, not stored). With y32 set the
// tile stores the int32 sums S + rowOffset + colOffset there instead (scale unused).
struct DqGemmTileParams {
  const uint8_t* a;
  int64_t lda;
  const void* b;
  int64_t kgroups, mr, nr;
  const int32_t* rowOffset; // mr values
  const int32_t* colOffset;
  const float* scale;
  float* y;
  int64_t ldy;
  int32_t* y32 = nullptr; // rows ldy apart
};
using DqGemmUkernelFn = void (*)(const DqGemmTileParams&);
void u8s8_dqgemm_amx_32x32(const DqGemmTileParams& p);
void u8s8_dqgemm_avx512vnni_8x48(const DqGemmTileParams& p);
// One int8 row as floats, float(x - zp) (x int8 when isSigned), into out[0, n), or with `odd` its
// columns 2m into out[m] and 2m + 1 into odd[m] (the int8 depthwise convolution's padded rows).
using Q8RowFn = void (*)(const uint8_t* x, int64_t n, bool isSigned, float zp, float* out,
                         float* odd);
void q8_to_f32_row_avx512vnni(const uint8_t* x, int64_t n, bool isSigned, float zp, float* out,
                              float* odd);
// One output channel of an int8 depthwise 3x3 convolution (pad 1, stride 1 or 2, dilation 1) over
// its input channel plane x [H, W], requantized into y [OH, OW]:
//   y = saturate(nearbyint(float(offset + sum over ky, kx of w[ky][kx] * u[iy][ix]) * factor) +
//   yzp)
// with u = x as uint8 (int8 x shifted by 128) and offset = bias - uzp * (sum of the 9 taps), so
// padding reads uzp and adds nothing. Exact int32 sums (vpdpbusd: each row's three taps in one
// 4-byte group), the reference kernel's requantization. Each input row is copied once into `ring`
// (kQDwRingRows slots of `pitch` bytes: u[iy][ix] at slot iy % kQDwRingRows, index ix + 1), and
// slot kQDwRingRows is the row outside the image; the caller fills the whole ring with uzp once
// per call, and rows write only [1, W]. pitch >= max(W + 2, stride * (OW rounded up to 16) + 48).
constexpr int64_t kQDwRingRows = 16; // input row iy in slot iy % 16: the 9 rows of four output
                                     // rows and the ones before them never collide
struct QDw3x3Params {
  const uint8_t* x;
  int64_t H, W;
  bool xSigned;
  const int8_t* w; // 3 groups (w[ky][0], w[ky][1], w[ky][2], 0) of w - wzp
  int32_t offset;  // bias - uzp * (sum of the taps), in wrap-around int32
  float factor;
  int32_t yzp, lo, hi;
  int64_t OH, OW, stride;
  uint8_t* ring;
  int64_t pitch;
  uint8_t* y;
};
using QDw3x3Fn = void (*)(const QDw3x3Params&);
void u8s8_qdwconv3x3_avx512vnni_4x16(const QDw3x3Params& p);
// AVX-VNNI (ymm vpdpbusd): A [q][4][4] int8, B [q][24][4] uint8.
void u8s8_qgemm_avxvnni_4x24(const QGemmTileParams& p);
void u8i16_qgemm_avx2_4x24(const QGemmTileParams& p);
void u8i16_qgemm_generic_4x8(const QGemmTileParams& p);

// One output row of a depthwise 3x3 convolution (pad 1) in NHWC layout.
struct DwRowParams {
  const float* rows[3]; // input rows iy = oy * stride - 1 + ky (W * C floats each), null if padding
  const float* w;       // weights [9][C] (tap-major: w[(ky * 3 + kx) * C + c])
  const float* bias;    // [C] or null
  float* out;           // output row: OW * C floats
  int64_t W, C, OW, stride;
  float lo, hi; // clamp (fused activation)
};
using DwRowFn = void (*)(const DwRowParams&);

// One channel plane of a depthwise convolution in NCHW (any kernel size, stride and dilation):
// out[oy][ox] = act(clamp(bias + sum over ky, kx of w[ky * KW + kx] * in[oy * sH + ky * dH]
// [ox * sW + kx * dW])) for oy < OH, ox < OW, where `in` is a zero-padded copy of the input plane
// made by the caller: padded row r (pitch floats) holds input row r - padTop, column ix input
// column ix - padLeft, zeros elsewhere, with readable zeros for every index the vectors touch up
// to OW rounded up to whole vectors. With `half` > 0 (sW 2, dW 1) each padded row is
// deinterleaved: column 2j at [j], column 2j + 1 at [half + j].
struct DwNchwPlaneParams {
  const float* in; // the padded plane
  const float* w;  // this channel's KH x KW taps
  float bias;
  float* out; // OH x OW floats
  int64_t KH, KW, OH, OW, strideH, strideW, dilH, dilW, pitch, half;
  float lo, hi; // clamp (fused activation)
  unsigned act; // kAct*, after the clamp
  unsigned max; // nonzero: max pooling (the max over the window; w, bias, clamp and act unused,
                // the padding holds -inf)
};
using DwNchwPlaneFn = void (*)(const DwNchwPlaneParams&);

void f32_dwconv_nchw_generic(const DwNchwPlaneParams& p);
void f32_dwconv_nchw_avx2(const DwNchwPlaneParams& p);
void f32_dwconv_nchw_avx512(const DwNchwPlaneParams& p);
void f32_dwconv_nchw_neon(const DwNchwPlaneParams& p);

// Depthwise convolution of one block of up to V channels (V = the kernel's vector width), NCHW in
// and out: the kernel interleaves the block's input planes into a zero-padded [Hp, Wp, V] tile (in
// `scratch`, dwCBlockScratch floats) by V x V register transposes, runs every tap as one vector FMA
// over the V channels, and transposes the [OH, OW, V] result back into planes. Small maps (7x7)
// fill whole vectors this way, where a plane's rows fill 7 of 16 lanes.
struct DwCBlockParams {
  const float* in;   // the block's first input plane; planes H * W floats apart
  const float* w;    // the block's first channel's KH * KW taps; channels KH * KW floats apart
  const float* bias; // the block's first channel's bias, or null
  float* out;        // the block's first output plane; planes OH * OW floats apart
  float* scratch;    // dwCBlockScratch floats, zero on the first call (the kernel keeps its
                     // tile's padding zero: calls with one shape can share it)
  int64_t channels; // 1..V
  int64_t H, W, KH, KW, OH, OW, strideH, strideW, dilH, dilW, padTop, padLeft, padBottom, padRight;
  float lo, hi; // clamp (fused activation)
  unsigned act; // kAct*, after the clamp
};
using DwCBlockFn = void (*)(const DwCBlockParams&);
// The scratch floats of one call: the padded tile (Hp x Wp pixels) with slack for the reads
// past its end, the output tile with slack for the last transposed chunk, the taps and the bias.
inline int64_t dwCBlockScratch(int64_t V, int64_t Hp, int64_t Wp, int64_t KH, int64_t KW,
                               int64_t OH, int64_t OW, int64_t strideW) {
  return (Hp * Wp + 3 * strideW + KW + OH * OW + V + KH * KW + 1) * V;
}

void f32_dwconv_cblock_avx2(const DwCBlockParams& p);
void f32_dwconv_cblock_avx512(const DwCBlockParams& p);
void f32_dwconv_cblock_neon(const DwCBlockParams& p);

// One tile of a convolution on blocked activations (NCHW16c: [C/16][H][W][16], a pixel's 16
// channels one vector; kernels/conv_nchwc.h): 14 output pixels of one row (input pixels 16
// floats apart) x 2 output channel blocks of 16. The pixels are the broadcast operand, read in
// place: for each input channel block b (aBlk floats apart) and tap t (taps[t] floats from the
// pixel), 16 k steps, pixel q's lane i at a + b * aBlk + taps[t] + q * 16 + i. The weights are
// packed per pair of output blocks as [blocks][taps][16][32]. Output block v, pixel q at
// c + v * cBlk + q * 16; pixels before p0 are not stored (they overlap the previous tile), nor
// blocks >= nv.
struct NchwcTileParams {
  const float* a;
  const int64_t* taps;
  int64_t ntaps, blocks, aBlk;
  const float* w;
  float* c;
  int64_t cBlk, p0, nv;
  const float* bias; // 32 floats for the tile's blocks, or null
  const float* res;  // a residual laid out as c, added before the clamp, or null
  float lo, hi;      // clamp
  unsigned act;      // kAct*, after the clamp
  const char* pf;    // lines [0, pfLines) of 64 bytes from pf to prefetch into L2 (the next
  int64_t pfLines;   // weights' share), spread over the tile's taps
  int64_t stride;    // plane input only: floats between input pixels (the stride along W, 1 or 2)
  int64_t rowPixels; // 14, or 7: two output rows of 7 pixels (c contiguous over both), the second
  int64_t rowStride; // row's input pixels rowStride floats after the first's
};
using NchwcTileFn = void (*)(const NchwcTileParams&);
void f32_conv_nchw16c_avx512(const NchwcTileParams& p);
// The same tile on NCHW planes (a stem's few input channels): each input channel is a block of
// one lane (aBlk floats apart), weights [channels][taps][1][32], pixel q's input at
// a + b * aBlk + taps[t] + q * stride.
void f32_conv_nchw_nchw16c_avx512(const NchwcTileParams& p);

// One output row of one channel block of a depthwise convolution on NCHW16c, read in place (no
// padded copy): pixel q of the row (q < n) = sum over taps t of w[wt[t] * 16 ..] * the input
// vector at a + q * S * 16 + taps[t] (S = stride, 1 or 2), the taps being those whose input row
// lies inside the input; then bias, residual (laid out as c), clamp and activation; pixel q at
// c + q * 16. Pixels [qlo, qhi) have every column inside; the others check tap t's column
// q * S - padLeft + kw[t] against [0, W).
struct NchwcDwParams {
  const float* a;
  const int64_t* taps;
  const int64_t* kw;
  const int64_t* wt;
  int64_t ntaps, n, qlo, qhi, W, padLeft, stride;
  const float* w;    // [KH * KW][16]
  const float* bias; // 16 floats or null
  float* c;
  const float* res;
  float lo, hi;
  unsigned act;
};
using NchwcDwFn = void (*)(const NchwcDwParams&);
// One channel block's layout change: rows (<= 16) channel planes of hw floats (hw apart) to or
// from [hw][16] pixels (lanes >= rows written as zero), by 16 x 16 register transposes.
using NchwcReorderFn = void (*)(const float* in, int64_t rows, int64_t hw, float* out);
void f32_to_nchw16c_avx512(const float* in, int64_t rows, int64_t hw, float* out);
// The mean of hw pixels of one channel block ([hw][16] -> 16 floats): GlobalAveragePool on
// NCHW16c.
using NchwcMeanFn = void (*)(const float* in, int64_t hw, float* out);
void f32_mean_nchw16c_avx512(const float* in, int64_t hw, float* out);
void f32_from_nchw16c_avx512(const float* in, int64_t rows, int64_t hw, float* out);
void f32_dwconv_nchw16c_avx512(const NchwcDwParams& p);
// One output row of one channel block of a 2-D MaxPool or AveragePool on NCHW16c, read in place:
// pixel q (q < n) over the window's rows at a + rows[r] (the nrows inside the input) and columns
// q * stride - padLeft + kw inside [0, W): the max, or the sum times 1 / (rowCount * columns),
// the columns counted inside the input or, with countPad, inside the padded width W + padRight
// (rowCount likewise, from the caller). Pixel q at c + q * 16.
struct NchwcPoolParams {
  const float* a;
  const int64_t* rows;
  int64_t nrows, n, KW, W, padLeft, padRight, stride;
  float* c;
  float rowCount;
  bool max, countPad;
};
using NchwcPoolFn = void (*)(const NchwcPoolParams&);
void f32_pool_nchw16c_avx512(const NchwcPoolParams& p);

// The sum of x[0..n) (GlobalAveragePool rows), in vector lanes (4 accumulators), then the lanes.
using SumFn = float (*)(const float* x, int64_t n);
float f32_sum_generic(const float* x, int64_t n);
float f32_sum_avx2(const float* x, int64_t n);
float f32_sum_avx512(const float* x, int64_t n);
float f32_sum_neon(const float* x, int64_t n);

// Softmax rows: x[i] = exp(x[i] - shift) in place for i < n; returns the sum of the results.
using ExpSumFn = float (*)(float* x, int64_t n, float shift);
float f32_expsum_generic(float* x, int64_t n, float shift);
float f32_expsum_avx2(float* x, int64_t n, float shift);
float f32_expsum_avx512(float* x, int64_t n, float shift);
float f32_expsum_neon(float* x, int64_t n, float shift);

void f32_dwconv3x3_generic(const DwRowParams& p);
void f32_dwconv3x3_avx2(const DwRowParams& p);
void f32_dwconv3x3_avx512(const DwRowParams& p);
void f32_dwconv3x3_neon(const DwRowParams& p);

} // namespace aicc::kernels
