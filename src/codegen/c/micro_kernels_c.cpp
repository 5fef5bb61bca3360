#include "codegen/c/micro_kernels_c.h"

#include "kernels/registry.h"
#include "support/error.h"

namespace aicc::codegen {

namespace {

const char* kGemm = R"(/* C[m*ldc + n] = sum_k A[m*lda + k] * B(k, n); B(k, n) = B[k*ldb + n], or
   B[n*ldb + k] when transB. Portable stand-in for the f32_gemm_* micro-kernels: every element
   sums from 0 in k order; with vectors, four rows of A on the register tiles (N >= 8; the last
   tile of a row overlaps the one before), the other rows 8 columns at a time; transB four
   independent sums at a time. */
static void aicc_gemm_f32(const float* A, const float* B, float* C, int64_t M, int64_t N,
                          int64_t K, int64_t lda, int64_t ldb, int64_t ldc, int64_t transB) {
  int64_t m, n, k;
  if (transB) {
    const int64_t N4 = N / 4 * 4;
    for (m = 0; m < M; ++m) {
      const float* a = A + m * lda;
      float* c = C + m * ldc;
      for (n = 0; n < N4; n += 4) {
        const float* b0 = B + n * ldb;
        const float* b1 = b0 + ldb;
        const float* b2 = b1 + ldb;
        const float* b3 = b2 + ldb;
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
        for (k = 0; k < K; ++k) {
          s0 += a[k] * b0[k];
          s1 += a[k] * b1[k];
          s2 += a[k] * b2[k];
          s3 += a[k] * b3[k];
        }
        c[n] = s0, c[n + 1] = s1, c[n + 2] = s2, c[n + 3] = s3;
      }
      for (n = N4; n < N; ++n) {
        const float* b = B + n * ldb;
        float s = 0.0f;
        for (k = 0; k < K; ++k) s += a[k] * b[k];
        c[n] = s;
      }
    }
    return;
  }
#if defined(AICC_V8)
  const int64_t M4 = N >= 8 ? M / 4 * 4 : 0, N8 = N / 8 * 8;
  const int64_t T = N >= 16 ? 16 : 8;
  for (m = 0; m < M4; m += 4)
    for (n = 0; n < N; n += T) {
      if (n + T > N) n = N - T; /* overlaps the tile before */
      if (T == 16)
        aicc_tile_4x16(B + n, ldb, A + m * lda, lda, 0, 1, C + m * ldc + n, ldc, K);
      else
        aicc_tile_4x8(B + n, ldb, A + m * lda, lda, 0, 1, C + m * ldc + n, ldc, K);
    }
#else
  const int64_t M4 = 0, N8 = 0;
#endif
  for (m = M4; m < M; ++m) {
    const float* a = A + m * lda;
    float* c = C + m * ldc;
#if defined(AICC_V8)
    for (n = 0; n < N8; n += 8) {
      aicc_v8 acc = AICC_SPLAT8(0.0f), bv;
      for (k = 0; k < K; ++k) {
        memcpy(&bv, B + k * ldb + n, sizeof bv);
        acc += bv * a[k];
      }
      memcpy(c + n, &acc, sizeof acc);
    }
#endif
    for (n = N8; n < N; ++n) {
      float s = 0.0f;
      for (k = 0; k < K; ++k) s += a[k] * B[k * ldb + n];
      c[n] = s;
    }
  }
}
)";

// Opens the micro-kernel group (kKernelsEnd closes it), so the generated loops after it keep
// their exact semantics:
// - fused multiply-adds where the target has them: GCC contracts a * b + c in this group only
//   (fp-contract=fast; -std=c99 turns contraction off elsewhere), Clang contracts within
//   expressions by default. The vector and the scalar code of a kernel then do the same
//   operations, so they give the same bits on a target.
// - 8-lane GCC/Clang vector extensions where the compiler has them and the target has SIMD;
//   other compilers and targets (a Cortex-M4) get scalar loops. Stride-2 depthwise convolutions
//   deinterleave with shuffles (__builtin_shufflevector in Clang and GCC >= 12, __builtin_shuffle
//   in older GCC).
const char* kSimd = R"(#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")
#endif
#if defined(__GNUC__) && !defined(AICC_SCALAR_ONLY) && \
    (defined(__SSE2__) || defined(__ARM_NEON) || defined(__riscv_vector))
typedef float aicc_v8 __attribute__((vector_size(32)));
typedef float aicc_v4 __attribute__((vector_size(16)));
#define AICC_V8 1
#define AICC_NOINLINE __attribute__((noinline, unused))
#define AICC_SPLAT8(s) ((aicc_v8){s, s, s, s, s, s, s, s})
#define AICC_SPLAT4(s) ((aicc_v4){s, s, s, s})
#if defined(__clang__) || __GNUC__ >= 12
#define AICC_SHUFFLE8(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
  __builtin_shufflevector(a, b, i0, i1, i2, i3, i4, i5, i6, i7)
#define AICC_SHUFFLE4(a, b, i0, i1, i2, i3) __builtin_shufflevector(a, b, i0, i1, i2, i3)
#else
typedef int aicc_v8i __attribute__((vector_size(32)));
typedef int aicc_v4i __attribute__((vector_size(16)));
#define AICC_SHUFFLE8(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
  __builtin_shuffle(a, b, (aicc_v8i){i0, i1, i2, i3, i4, i5, i6, i7})
#define AICC_SHUFFLE4(a, b, i0, i1, i2, i3) __builtin_shuffle(a, b, (aicc_v4i){i0, i1, i2, i3})
#endif
/* Keeps a loaded vector in a register: x86 compilers otherwise fold its load into every
   multiply that uses it, and the loads, not the arithmetic, then bound a register tile. */
#if defined(__AVX__)
#define AICC_IN_REGISTER(v) __asm__("" : "+x"(v))
#else
#define AICC_IN_REGISTER(v) (void)0
#endif
#endif
#if defined(AICC_V8)
/* Register tiles: y[j * P + i] = (first ? bias[j] or 0 : y[j * P + i]) + sum over k < n in order
   of w[j * ws + k] * x[k * xs + i], for four output channels j and 16 (8) pixels i. Not inlined:
   alone, the compiler keeps every pointer and accumulator in registers. */
static AICC_NOINLINE void aicc_tile_4x16(const float* x, int64_t xs, const float* w, int64_t ws,
                                         const float* bias, int first, float* y, int64_t P,
                                         int64_t n) {
  const float* w1 = w + ws;
  const float* w2 = w1 + ws;
  const float* w3 = w2 + ws;
  aicc_v8 a00, a01, a10, a11, a20, a21, a30, a31;
  int64_t k;
  if (first) {
    a00 = AICC_SPLAT8(bias ? bias[0] : 0.0f), a01 = a00;
    a10 = AICC_SPLAT8(bias ? bias[1] : 0.0f), a11 = a10;
    a20 = AICC_SPLAT8(bias ? bias[2] : 0.0f), a21 = a20;
    a30 = AICC_SPLAT8(bias ? bias[3] : 0.0f), a31 = a30;
  } else {
    memcpy(&a00, y, sizeof a00);
    memcpy(&a01, y + 8, sizeof a01);
    memcpy(&a10, y + P, sizeof a10);
    memcpy(&a11, y + P + 8, sizeof a11);
    memcpy(&a20, y + 2 * P, sizeof a20);
    memcpy(&a21, y + 2 * P + 8, sizeof a21);
    memcpy(&a30, y + 3 * P, sizeof a30);
    memcpy(&a31, y + 3 * P + 8, sizeof a31);
  }
  for (k = 0; k < n; ++k, x += xs) {
    aicc_v8 x0, x1;
    memcpy(&x0, x, sizeof x0);
    memcpy(&x1, x + 8, sizeof x1);
    AICC_IN_REGISTER(x0);
    AICC_IN_REGISTER(x1);
    a00 += x0 * w[k];
    a01 += x1 * w[k];
    a10 += x0 * w1[k];
    a11 += x1 * w1[k];
    a20 += x0 * w2[k];
    a21 += x1 * w2[k];
    a30 += x0 * w3[k];
    a31 += x1 * w3[k];
  }
  memcpy(y, &a00, sizeof a00);
  memcpy(y + 8, &a01, sizeof a01);
  memcpy(y + P, &a10, sizeof a10);
  memcpy(y + P + 8, &a11, sizeof a11);
  memcpy(y + 2 * P, &a20, sizeof a20);
  memcpy(y + 2 * P + 8, &a21, sizeof a21);
  memcpy(y + 3 * P, &a30, sizeof a30);
  memcpy(y + 3 * P + 8, &a31, sizeof a31);
}

static AICC_NOINLINE void aicc_tile_4x8(const float* x, int64_t xs, const float* w, int64_t ws,
                                        const float* bias, int first, float* y, int64_t P,
                                        int64_t n) {
  const float* w1 = w + ws;
  const float* w2 = w1 + ws;
  const float* w3 = w2 + ws;
  aicc_v8 a0, a1, a2, a3;
  int64_t k;
  if (first) {
    a0 = AICC_SPLAT8(bias ? bias[0] : 0.0f), a1 = AICC_SPLAT8(bias ? bias[1] : 0.0f);
    a2 = AICC_SPLAT8(bias ? bias[2] : 0.0f), a3 = AICC_SPLAT8(bias ? bias[3] : 0.0f);
  } else {
    memcpy(&a0, y, sizeof a0);
    memcpy(&a1, y + P, sizeof a1);
    memcpy(&a2, y + 2 * P, sizeof a2);
    memcpy(&a3, y + 3 * P, sizeof a3);
  }
  for (k = 0; k < n; ++k, x += xs) {
    aicc_v8 x0;
    memcpy(&x0, x, sizeof x0);
    AICC_IN_REGISTER(x0);
    a0 += x0 * w[k];
    a1 += x0 * w1[k];
    a2 += x0 * w2[k];
    a3 += x0 * w3[k];
  }
  memcpy(y, &a0, sizeof a0);
  memcpy(y + P, &a1, sizeof a1);
  memcpy(y + 2 * P, &a2, sizeof a2);
  memcpy(y + 3 * P, &a3, sizeof a3);
}
#endif

)";

const char* kKernelsEnd = R"(#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
)";

const char* kConv =
    R"(/* y_j[i] += w[j] * x[i] for i in [0, m) and the n <= 4 output planes y_j = y + j * P (four
   planes 8 lanes at a time). */
static void aicc_axpy_planes_f32(float* y, int64_t P, int64_t n, const float* w, const float* x,
                                 int64_t m) {
  int64_t i = 0, j;
  if (n == 4) {
    float* y0 = y;
    float* y1 = y + P;
    float* y2 = y + 2 * P;
    float* y3 = y + 3 * P;
    const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
#if defined(AICC_V8)
    for (; i + 8 <= m; i += 8) {
      aicc_v8 xv, v0, v1, v2, v3;
      memcpy(&xv, x + i, sizeof xv);
      memcpy(&v0, y0 + i, sizeof v0);
      memcpy(&v1, y1 + i, sizeof v1);
      memcpy(&v2, y2 + i, sizeof v2);
      memcpy(&v3, y3 + i, sizeof v3);
      v0 += xv * w0;
      v1 += xv * w1;
      v2 += xv * w2;
      v3 += xv * w3;
      memcpy(y0 + i, &v0, sizeof v0);
      memcpy(y1 + i, &v1, sizeof v1);
      memcpy(y2 + i, &v2, sizeof v2);
      memcpy(y3 + i, &v3, sizeof v3);
    }
#endif
    for (; i < m; ++i) {
      const float xv = x[i];
      y0[i] += w0 * xv;
      y1[i] += w1 * xv;
      y2[i] += w2 * xv;
      y3[i] += w3 * xv;
    }
    return;
  }
  for (j = 0; j < n; ++j) {
    float* yj = y + j * P;
    const float wj = w[j];
    i = 0;
#if defined(AICC_V8)
    for (; i + 8 <= m; i += 8) {
      aicc_v8 xv, v;
      memcpy(&xv, x + i, sizeof xv);
      memcpy(&v, yj + i, sizeof v);
      v += xv * wj;
      memcpy(yj + i, &v, sizeof v);
    }
#endif
    for (; i < m; ++i) yj[i] += wj * x[i];
  }
}

/* A pointwise convolution (1x1, stride 1, no padding) as y[co][p] = bias + sum over ci in order
   of w[co][ci] * x[ci][p] (the same order per element as the general loop): with vectors,
   register tiles of 4 output channels x 16 pixels, then 8, the last 8-pixel tile overlapping
   the one before when P % 8 != 0 (an output computed twice gets the same bits); without them,
   or when P < 8, four output channels of one pixel at a time (four independent sums). Returns
   the number of output channels done (a multiple of 4; the caller does the rest). */
static int64_t aicc_pointwise_f32(const float* x, const float* w, const float* bias, float* y,
                                  int64_t Cin, int64_t P, int64_t Cout) {
  const int64_t C4 = Cout / 4 * 4;
  int64_t co, p, ci;
#if defined(AICC_V8)
  if (P >= 8) {
    /* Pixel tiles outside, channel groups inside: a tile's Cin x 16 inputs stay in cache while
       every group of four output channels reads them. */
    for (p = 0; p + 16 <= P; p += 16)
      for (co = 0; co < C4; co += 4)
        aicc_tile_4x16(x + p, P, w + co * Cin, Cin, bias ? bias + co : 0, 1, y + co * P + p, P,
                       Cin);
    for (; p < P; p += 8) {
      if (p + 8 > P) p = P - 8;
      for (co = 0; co < C4; co += 4)
        aicc_tile_4x8(x + p, P, w + co * Cin, Cin, bias ? bias + co : 0, 1, y + co * P + p, P,
                      Cin);
    }
    return C4;
  }
#endif
  for (co = 0; co < C4; co += 4) {
    const float* w0 = w + co * Cin;
    const float* w1 = w0 + Cin;
    const float* w2 = w1 + Cin;
    const float* w3 = w2 + Cin;
    for (p = 0; p < P; ++p) {
      float s0 = bias ? bias[co] : 0.0f, s1 = bias ? bias[co + 1] : 0.0f;
      float s2 = bias ? bias[co + 2] : 0.0f, s3 = bias ? bias[co + 3] : 0.0f;
      for (ci = 0; ci < Cin; ++ci) {
        const float xv = x[ci * P + p];
        s0 += w0[ci] * xv;
        s1 += w1[ci] * xv;
        s2 += w2[ci] * xv;
        s3 += w3[ci] * xv;
      }
      y[co * P + p] = s0;
      y[(co + 1) * P + p] = s1;
      y[(co + 2) * P + p] = s2;
      y[(co + 3) * P + p] = s3;
    }
  }
  return C4;
}

#if defined(AICC_V8)
/* Any other convolution with at least 8 output columns, as an implicit GEMM on the register
   tiles: for each output row and 16 (8) output columns, the K = Cin * KH * KW taps (in that
   order, 128 at a time) are packed from the input with zeros for the padding, and every group
   of four output channels sums them (ONNX's zero padding: a padded tap adds w * 0). Returns the
   number of output channels done (a multiple of 4). */
static int64_t aicc_conv_tiles_f32(const float* x, const float* w, const float* bias, float* y,
                                   int64_t Cin, int64_t H, int64_t W, int64_t Cout, int64_t KH,
                                   int64_t KW, int64_t sH, int64_t sW, int64_t padTop,
                                   int64_t padLeft, int64_t dilH, int64_t dilW, int64_t OH,
                                   int64_t OW) {
  const int64_t C4 = Cout / 4 * 4, K = Cin * KH * KW, P = OH * OW, T = OW >= 16 ? 16 : 8;
  float xp[128 * 16];
  int64_t oy, ox, k0, k, i, co;
  if (OW < 8) return 0;
  for (oy = 0; oy < OH; ++oy)
    for (ox = 0; ox < OW; ox += T) {
      if (ox + T > OW) ox = OW - T;
      for (k0 = 0; k0 < K; k0 += 128) {
        const int64_t n = K - k0 < 128 ? K - k0 : 128;
        for (k = 0; k < n; ++k) { /* tap k0 + k = (ci, ky, kx) */
          const int64_t kx = (k0 + k) % KW, ky = (k0 + k) / KW % KH, ci = (k0 + k) / (KW * KH);
          const int64_t iy = oy * sH - padTop + ky * dilH;
          float* d = xp + k * T;
          if (iy < 0 || iy >= H) {
            for (i = 0; i < T; ++i) d[i] = 0.0f;
            continue;
          }
          for (i = 0; i < T; ++i) {
            const int64_t ix = (ox + i) * sW - padLeft + kx * dilW;
            d[i] = ix >= 0 && ix < W ? x[(ci * H + iy) * W + ix] : 0.0f;
          }
        }
        for (co = 0; co < C4; co += 4)
          if (T == 16)
            aicc_tile_4x16(xp, 16, w + co * K + k0, K, bias ? bias + co : 0, k0 == 0,
                           y + co * P + oy * OW + ox, P, n);
          else
            aicc_tile_4x8(xp, 8, w + co * K + k0, K, bias ? bias + co : 0, k0 == 0,
                          y + co * P + oy * OW + ox, P, n);
      }
    }
  return C4;
}
#endif

/* The output columns [*a, *b) whose input column ox * s + off lies in [0, W). */
static void aicc_valid_cols(int64_t off, int64_t s, int64_t W, int64_t OW, int64_t* a,
                            int64_t* b) {
  *a = off >= 0 ? 0 : (-off + s - 1) / s;
  *b = W - 1 - off >= 0 ? (W - 1 - off) / s + 1 : 0;
  if (*b > OW) *b = OW;
  if (*a > *b) *a = *b;
}

/* One image, one group, NCHW: x [Cin,H,W], w [Cout,Cin,KH,KW], bias [Cout] or NULL,
   y [Cout,OH,OW]. Portable stand-in for the conv2d_nchw_* micro-kernels: every output element
   sums bias, then its taps in (ci, ky, kx) order. Pointwise convolutions and (with vectors) the
   others with 8 or more output columns run on register tiles; the remaining channels add each
   tap of an input row over the valid output columns of the row, for every output plane, four
   planes at a time (a strided row's inputs gathered once, in chunks, for all the planes). */
static void aicc_conv2d_nchw_f32(const float* x, const float* w, const float* bias, float* y,
                                 int64_t Cin, int64_t H, int64_t W, int64_t Cout, int64_t KH,
                                 int64_t KW, int64_t sH, int64_t sW, int64_t padTop,
                                 int64_t padLeft, int64_t padBottom, int64_t padRight,
                                 int64_t dilH, int64_t dilW) {
  const int64_t OH = (H + padTop + padBottom - dilH * (KH - 1) - 1) / sH + 1;
  const int64_t OW = (W + padLeft + padRight - dilW * (KW - 1) - 1) / sW + 1;
  const int64_t P = OH * OW;
  int64_t co = 0, ci, ky, kx, oy, j, k;
  if (KH == 1 && KW == 1 && sH == 1 && sW == 1 && padTop == 0 && padLeft == 0 && padBottom == 0 &&
      padRight == 0)
    co = aicc_pointwise_f32(x, w, bias, y, Cin, P, Cout);
#if defined(AICC_V8)
  else
    co = aicc_conv_tiles_f32(x, w, bias, y, Cin, H, W, Cout, KH, KW, sH, sW, padTop, padLeft, dilH,
                             dilW, OH, OW);
#endif
  if (co == Cout) return;
  y += co * P, w += co * Cin * KH * KW, Cout -= co;
  if (bias) bias += co;
  for (co = 0; co < Cout; ++co)
    for (oy = 0; oy < P; ++oy) y[co * P + oy] = bias ? bias[co] : 0.0f;
  for (ci = 0; ci < Cin; ++ci)
    for (ky = 0; ky < KH; ++ky)
      for (oy = 0; oy < OH; ++oy) {
        const int64_t iy = oy * sH - padTop + ky * dilH;
        if (iy < 0 || iy >= H) continue;
        for (kx = 0; kx < KW; ++kx) {
          const int64_t off = kx * dilW - padLeft;
          const float* xr = x + (ci * H + iy) * W + off;
          int64_t a, b, c0;
          aicc_valid_cols(off, sW, W, OW, &a, &b);
          for (c0 = a; c0 < b; c0 += 64) {
            const int64_t c1 = sW == 1 || b - c0 < 64 ? b : c0 + 64;
            const float* src = xr + c0;
            float g[64];
            if (sW != 1) {
              for (k = c0; k < c1; ++k) g[k - c0] = xr[k * sW];
              src = g;
            }
            for (co = 0; co < Cout; co += 4) {
              const int64_t n = Cout - co < 4 ? Cout - co : 4;
              float wv[4];
              for (j = 0; j < n; ++j) wv[j] = w[(((co + j) * Cin + ci) * KH + ky) * KW + kx];
              aicc_axpy_planes_f32(y + co * P + oy * OW + c0, P, n, wv, src, c1 - c0);
            }
            if (sW == 1) break;
          }
        }
      }
}
)";

const char* kDw =
    R"(/* Depthwise 3x3, pad 1, one image, NCHW: x [C,H,W], w [C,1,3,3], bias [C] or NULL,
   y [C,OH,OW]. Portable stand-in for the dwconv_nchw_* micro-kernels. Every output element sums
   bias, then the taps in (ky, kx) order over the rows and columns inside the image. Two output
   rows at a time (they share input rows): the edge columns with their valid taps, the interior
   without bounds checks, 8 (narrow rows: 4) outputs at a time with vectors (stride 2
   deinterleaves its inputs with shuffles; a row's last step overlaps the one before: an output
   computed twice gets the same bits). */
static float aicc_dw_point(const float* const* r, const float* wc, float b, int64_t ix0,
                           int64_t W) {
  const int64_t k0 = ix0 < 0 ? -ix0 : 0, k1 = W - ix0 < 3 ? W - ix0 : 3;
  float acc = b;
  int64_t ky, kx;
  for (ky = 0; ky < 3; ++ky)
    if (r[ky])
      for (kx = k0; kx < k1; ++kx) acc += wc[ky * 3 + kx] * r[ky][ix0 + kx];
  return acc;
}

#if defined(AICC_V8)
/* Interior outputs [ox, ox + LANES) of the output rows (one or two) as vectors of type T (a
   statement macro for the 8- and 4-lane forms). Input row q (r[q], q < nq) holds the taps t0,
   t1, t2 of output row 0 (ky = q) and of output row 1 (ky = q - stride); stride 2 deinterleaves
   p[0..2 LANES] with shuffles (SHUF_EVEN, SHUF_ODD, SHUF_NEXT). */
#define AICC_DW_STEP(T, SPLAT, LANES, SHUF_EVEN, SHUF_ODD, SHUF_NEXT)                              \
  {                                                                                                \
    T a0 = SPLAT(b), a1 = a0, t0, t1, t2;                                                          \
    for (q = 0; q < nq; ++q) {                                                                     \
      const float* p;                                                                              \
      if (!r[q]) continue;                                                                         \
      p = r[q] + ox * stride - 1;                                                                  \
      if (stride == 1) {                                                                           \
        memcpy(&t0, p, sizeof t0);                                                                 \
        memcpy(&t1, p + 1, sizeof t1);                                                             \
        memcpy(&t2, p + 2, sizeof t2);                                                             \
      } else {                                                                                     \
        T lo, hi, last = SPLAT(p[2 * LANES]);                                                      \
        memcpy(&lo, p, sizeof lo);                                                                 \
        memcpy(&hi, p + LANES, sizeof hi);                                                         \
        t0 = SHUF_EVEN(lo, hi);                                                                    \
        t1 = SHUF_ODD(lo, hi);                                                                     \
        t2 = SHUF_NEXT(t0, last);                                                                  \
      }                                                                                            \
      if (q < 3) {                                                                                 \
        a0 += t0 * wc[q * 3];                                                                      \
        a0 += t1 * wc[q * 3 + 1];                                                                  \
        a0 += t2 * wc[q * 3 + 2];                                                                  \
      }                                                                                            \
      if (rows == 2 && q >= stride) {                                                              \
        a1 += t0 * wc[(q - stride) * 3];                                                           \
        a1 += t1 * wc[(q - stride) * 3 + 1];                                                       \
        a1 += t2 * wc[(q - stride) * 3 + 2];                                                       \
      }                                                                                            \
    }                                                                                              \
    memcpy(yr + ox, &a0, sizeof a0);                                                               \
    if (rows == 2) memcpy(yr + OW + ox, &a1, sizeof a1);                                           \
  }
#define AICC_EVEN8(a, b) AICC_SHUFFLE8(a, b, 0, 2, 4, 6, 8, 10, 12, 14)
#define AICC_ODD8(a, b) AICC_SHUFFLE8(a, b, 1, 3, 5, 7, 9, 11, 13, 15)
#define AICC_NEXT8(a, b) AICC_SHUFFLE8(a, b, 1, 2, 3, 4, 5, 6, 7, 8)
#define AICC_EVEN4(a, b) AICC_SHUFFLE4(a, b, 0, 2, 4, 6)
#define AICC_ODD4(a, b) AICC_SHUFFLE4(a, b, 1, 3, 5, 7)
#define AICC_NEXT4(a, b) AICC_SHUFFLE4(a, b, 1, 2, 3, 4)
#endif

static void aicc_dwconv3x3_nchw_f32(const float* x, const float* w, const float* bias, float* y,
                                    int64_t C, int64_t H, int64_t W, int64_t stride) {
  const int64_t OH = (H - 1) / stride + 1, OW = (W - 1) / stride + 1;
  /* Interior columns: ox * stride - 1 >= 0 and ox * stride + 1 <= W - 1; beyond them, the right
     edge's valid taps are kx = 0, 1. */
  const int64_t hi = W >= 2 ? ((W - 2) / stride + 1 < OW ? (W - 2) / stride + 1 : OW) : 0;
  int64_t c, oy, ox, q, j, rows, nq;
  for (c = 0; c < C; ++c) {
    const float* wc = w + c * 9;
    const float b = bias ? bias[c] : 0.0f;
    for (oy = 0; oy < OH; oy += rows) {
      float* yr = y + (c * OH + oy) * OW;
      const float* r[5]; /* input rows oy * stride - 1 + q, NULL outside the image */
      rows = oy + 1 < OH && stride <= 2 ? 2 : 1;
      nq = (rows - 1) * stride + 3;
      for (q = 0; q < nq; ++q) {
        const int64_t iy = oy * stride - 1 + q;
        r[q] = iy >= 0 && iy < H ? x + (c * H + iy) * W : 0;
      }
      if (hi <= 1) { /* too narrow for an interior */
        for (j = 0; j < rows; ++j)
          for (ox = 0; ox < OW; ++ox)
            yr[j * OW + ox] = aicc_dw_point(r + j * stride, wc, b, ox * stride - 1, W);
        continue;
      }
      ox = 1;
#if defined(AICC_V8)
      if (stride <= 2 && hi - 1 >= 8) {
        for (;; ox += 8) {
          if (ox + 8 > hi) ox = hi - 8;
          AICC_DW_STEP(aicc_v8, AICC_SPLAT8, 8, AICC_EVEN8, AICC_ODD8, AICC_NEXT8)
          if (ox + 8 >= hi) break;
        }
        ox = hi;
      } else if (stride <= 2 && hi - 1 >= 4) {
        for (;; ox += 4) {
          if (ox + 4 > hi) ox = hi - 4;
          AICC_DW_STEP(aicc_v4, AICC_SPLAT4, 4, AICC_EVEN4, AICC_ODD4, AICC_NEXT4)
          if (ox + 4 >= hi) break;
        }
        ox = hi;
      }
#endif
      for (j = 0; j < rows; ++j) {
        const float* const* rj = r + j * stride;
        float* yj = yr + j * OW;
        int64_t ky, o;
        float left = b;
        for (ky = 0; ky < 3; ++ky)
          if (rj[ky]) {
            left += wc[ky * 3 + 1] * rj[ky][0];
            left += wc[ky * 3 + 2] * rj[ky][1];
          }
        yj[0] = left;
        for (o = ox; o < OW; ++o) { /* what the vectors left, then the right edge (kx = 0, 1) */
          const int64_t ix = o * stride - 1;
          float acc = b;
          for (ky = 0; ky < 3; ++ky)
            if (rj[ky]) {
              acc += wc[ky * 3] * rj[ky][ix];
              acc += wc[ky * 3 + 1] * rj[ky][ix + 1];
              if (o < hi) acc += wc[ky * 3 + 2] * rj[ky][ix + 2];
            }
          yj[o] = acc;
        }
      }
    }
  }
}
)";

} // namespace

std::optional<MicroKernelC> findMicroKernelC(const std::string& name, std::string* why) {
  using kernels::KernelOp;
  auto isOp = [](const std::string& desc, KernelOp op) {
    const auto* d = kernels::findKernel(desc);
    return d && d->op == op;
  };
  if (isOp(name, KernelOp::Gemm)) return MicroKernelC{"aicc_gemm_f32", "gemm", "rrwiiiiiii"};
  const std::string conv = "conv2d_nchw_", dw = "dwconv_nchw_";
  if (name.rfind(conv, 0) == 0 && isOp(name.substr(conv.size()), KernelOp::Gemm))
    return MicroKernelC{"aicc_conv2d_nchw_f32", "conv", "rrnwiiiiiiiiiiiiii"};
  if (name.rfind(dw, 0) == 0 && isOp(name.substr(dw.size()), KernelOp::DepthwiseConv3x3))
    return MicroKernelC{"aicc_dwconv3x3_nchw_f32", "dwconv", "rrnwiiii"};
  if (why) *why = "not a known micro-kernel (see src/codegen/c/micro_kernels_c.h)";
  return std::nullopt;
}

std::string microKernelCSource(const std::string& key) {
  if (key == "gemm") return kGemm;
  if (key == "simd") return kSimd;
  if (key == "end") return kKernelsEnd;
  if (key == "conv") return kConv;
  if (key == "dwconv") return kDw;
  fail("C codegen: internal: unknown micro-kernel helper '{}'", key);
}

} // namespace aicc::codegen
