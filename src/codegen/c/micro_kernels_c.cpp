#include "codegen/c/micro_kernels_c.h"

#include "kernels/registry.h"
#include "support/error.h"

namespace aicc::codegen {

namespace {

const char* kGemm = R"(/* C[m*ldc + n] = sum_k A[m*lda + k] * B(k, n); B(k, n) = B[k*ldb + n], or
   B[n*ldb + k] when transB. Portable stand-in for the f32_gemm_* micro-kernels. */
static void aicc_gemm_f32(const float* A, const float* B, float* C, int64_t M, int64_t N,
                          int64_t K, int64_t lda, int64_t ldb, int64_t ldc, int64_t transB) {
  int64_t m, n, k;
  for (m = 0; m < M; ++m) {
    float* c = C + m * ldc;
    const float* a = A + m * lda;
    if (transB) {
      for (n = 0; n < N; ++n) {
        const float* b = B + n * ldb;
        float acc = 0.0f;
        for (k = 0; k < K; ++k) acc += a[k] * b[k];
        c[n] = acc;
      }
    } else {
      for (n = 0; n < N; ++n) c[n] = 0.0f;
      for (k = 0; k < K; ++k) {
        const float av = a[k];
        const float* b = B + k * ldb;
        for (n = 0; n < N; ++n) c[n] += av * b[n];
      }
    }
  }
}
)";

// Shared by the convolutions: y_j[ox] += w[j] * x[ox * s] for ox in [a, b) and the n <= 4 output
// planes y_j = y + j * P. The stride-1 case of four planes (pointwise and most 3x3 convolutions)
// runs 8 lanes at a time with GCC/Clang vector extensions where the compiler has them and the
// target has SIMD (mul then add, as the scalar code: without -ffast-math and with C99's
// contraction rules, the same bits); other compilers and targets (a Cortex-M4) get scalar loops.
const char* kAxpy = R"(#if defined(__GNUC__) && !defined(AICC_SCALAR_ONLY) && \
    (defined(__SSE2__) || defined(__ARM_NEON) || defined(__riscv_vector))
typedef float aicc_v8 __attribute__((vector_size(32)));
typedef float aicc_v4 __attribute__((vector_size(16)));
#define AICC_V8 1
#endif
static void aicc_axpy_planes_f32(float* y, int64_t P, int64_t n, const float* w, const float* x,
                                 int64_t s, int64_t a, int64_t b) {
  int64_t ox = a, j;
  if (s != 1 && n > 1) { /* gather the strided inputs once for the n planes, in chunks */
    float g[64];
    int64_t c0, k;
    for (c0 = a; c0 < b; c0 += 64) {
      const int64_t c1 = b - c0 < 64 ? b : c0 + 64;
      for (k = c0; k < c1; ++k) g[k - c0] = x[k * s];
      aicc_axpy_planes_f32(y + c0, P, n, w, g, 1, 0, c1 - c0);
    }
    return;
  }
  if (n == 4 && s == 1) {
    float* y0 = y;
    float* y1 = y + P;
    float* y2 = y + 2 * P;
    float* y3 = y + 3 * P;
    const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
#if defined(AICC_V8)
    for (; ox + 8 <= b; ox += 8) {
      aicc_v8 xv, v0, v1, v2, v3;
      memcpy(&xv, x + ox, sizeof xv);
      memcpy(&v0, y0 + ox, sizeof v0);
      memcpy(&v1, y1 + ox, sizeof v1);
      memcpy(&v2, y2 + ox, sizeof v2);
      memcpy(&v3, y3 + ox, sizeof v3);
      v0 += xv * w0;
      v1 += xv * w1;
      v2 += xv * w2;
      v3 += xv * w3;
      memcpy(y0 + ox, &v0, sizeof v0);
      memcpy(y1 + ox, &v1, sizeof v1);
      memcpy(y2 + ox, &v2, sizeof v2);
      memcpy(y3 + ox, &v3, sizeof v3);
    }
#endif
    for (; ox < b; ++ox) {
      const float xv = x[ox];
      y0[ox] += w0 * xv;
      y1[ox] += w1 * xv;
      y2[ox] += w2 * xv;
      y3[ox] += w3 * xv;
    }
    return;
  }
  for (j = 0; j < n; ++j) {
    float* yj = y + j * P;
    const float wj = w[j];
#if defined(AICC_V8)
    if (s == 1)
      for (ox = a; ox + 8 <= b; ox += 8) {
        aicc_v8 xv, v;
        memcpy(&xv, x + ox, sizeof xv);
        memcpy(&v, yj + ox, sizeof v);
        v += xv * wj;
        memcpy(yj + ox, &v, sizeof v);
      }
    else
      ox = a;
#else
    ox = a;
#endif
    for (; ox < b; ++ox) yj[ox] += wj * x[ox * s];
  }
}

/* A pointwise convolution (1x1, stride 1, no padding) as y[co][p] = bias + sum over ci in order
   of w[co][ci] * x[ci][p]: register tiles of 4 output channels x 16 pixels, the channel sum
   innermost (the same order per element as the general loop, so the same bits). Returns the
   number of output channels done (a multiple of 4; the caller does the rest). */
static int64_t aicc_pointwise_f32(const float* x, const float* w, const float* bias, float* y,
                                  int64_t Cin, int64_t P, int64_t Cout) {
#if defined(AICC_V8)
  const int64_t C4 = Cout / 4 * 4;
  int64_t co, p, ci, j;
  /* Pixel tiles outside, channel groups inside: a tile's Cin x 16 inputs stay in cache while
     every group of four output channels reads them. */
  for (p = 0; p + 16 <= P; p += 16)
    for (co = 0; co < C4; co += 4) {
      /* Named accumulators: an array of them would live in memory at -O2. */
      const float b0 = bias ? bias[co] : 0.0f, b1 = bias ? bias[co + 1] : 0.0f;
      const float b2 = bias ? bias[co + 2] : 0.0f, b3 = bias ? bias[co + 3] : 0.0f;
      const float* w0 = w + co * Cin;
      const float* w1 = w0 + Cin;
      const float* w2 = w1 + Cin;
      const float* w3 = w2 + Cin;
      aicc_v8 a00 = {b0, b0, b0, b0, b0, b0, b0, b0}, a01 = a00;
      aicc_v8 a10 = {b1, b1, b1, b1, b1, b1, b1, b1}, a11 = a10;
      aicc_v8 a20 = {b2, b2, b2, b2, b2, b2, b2, b2}, a21 = a20;
      aicc_v8 a30 = {b3, b3, b3, b3, b3, b3, b3, b3}, a31 = a30;
      for (ci = 0; ci < Cin; ++ci) {
        aicc_v8 x0, x1;
        memcpy(&x0, x + ci * P + p, sizeof x0);
        memcpy(&x1, x + ci * P + p + 8, sizeof x1);
        a00 += x0 * w0[ci];
        a01 += x1 * w0[ci];
        a10 += x0 * w1[ci];
        a11 += x1 * w1[ci];
        a20 += x0 * w2[ci];
        a21 += x1 * w2[ci];
        a30 += x0 * w3[ci];
        a31 += x1 * w3[ci];
      }
      memcpy(y + co * P + p, &a00, sizeof a00);
      memcpy(y + co * P + p + 8, &a01, sizeof a01);
      memcpy(y + (co + 1) * P + p, &a10, sizeof a10);
      memcpy(y + (co + 1) * P + p + 8, &a11, sizeof a11);
      memcpy(y + (co + 2) * P + p, &a20, sizeof a20);
      memcpy(y + (co + 2) * P + p + 8, &a21, sizeof a21);
      memcpy(y + (co + 3) * P + p, &a30, sizeof a30);
      memcpy(y + (co + 3) * P + p + 8, &a31, sizeof a31);
    }
  if (p + 8 <= P) /* an 8-pixel tile */
    for (co = 0; co < C4; co += 4) {
      const float* w0 = w + co * Cin;
      aicc_v8 a[4];
      for (j = 0; j < 4; ++j) {
        const float bj = bias ? bias[co + j] : 0.0f;
        a[j] = (aicc_v8){bj, bj, bj, bj, bj, bj, bj, bj};
      }
      for (ci = 0; ci < Cin; ++ci) {
        aicc_v8 x0;
        memcpy(&x0, x + ci * P + p, sizeof x0);
        a[0] += x0 * w0[ci];
        a[1] += x0 * w0[Cin + ci];
        a[2] += x0 * w0[2 * Cin + ci];
        a[3] += x0 * w0[3 * Cin + ci];
      }
      for (j = 0; j < 4; ++j) memcpy(y + (co + j) * P + p, &a[j], sizeof a[j]);
    }
  if (p + 8 <= P) p += 8;
  for (co = 0; co < C4; ++co) { /* the last pixels */
    int64_t q;
    for (q = p; q < P; ++q) {
      float acc = bias ? bias[co] : 0.0f;
      for (ci = 0; ci < Cin; ++ci) acc += w[co * Cin + ci] * x[ci * P + q];
      y[co * P + q] = acc;
    }
  }
  return C4;
#else
  (void)x, (void)w, (void)bias, (void)y, (void)Cin, (void)P, (void)Cout;
  return 0;
#endif
}

/* The output columns [*a, *b) whose input column ox * s + off lies in [0, W). */
static void aicc_valid_cols(int64_t off, int64_t s, int64_t W, int64_t OW, int64_t* a,
                            int64_t* b) {
  *a = off >= 0 ? 0 : (-off + s - 1) / s;
  *b = W - 1 - off >= 0 ? (W - 1 - off) / s + 1 : 0;
  if (*b > OW) *b = OW;
  if (*a > *b) *a = *b;
}
)";

const char* kConv =
    R"(/* One image, one group, NCHW: x [Cin,H,W], w [Cout,Cin,KH,KW], bias [Cout] or NULL,
   y [Cout,OH,OW]. Portable stand-in for the conv2d_nchw_* micro-kernels: output planes in
   groups of four, each (ci, ky, kx) tap added over the valid output columns of a row (every
   output element sums bias, then the taps in (ci, ky, kx) order). */
static void aicc_conv2d_nchw_f32(const float* x, const float* w, const float* bias, float* y,
                                 int64_t Cin, int64_t H, int64_t W, int64_t Cout, int64_t KH,
                                 int64_t KW, int64_t sH, int64_t sW, int64_t padTop,
                                 int64_t padLeft, int64_t padBottom, int64_t padRight,
                                 int64_t dilH, int64_t dilW) {
  const int64_t OH = (H + padTop + padBottom - dilH * (KH - 1) - 1) / sH + 1;
  const int64_t OW = (W + padLeft + padRight - dilW * (KW - 1) - 1) / sW + 1;
  const int64_t P = OH * OW;
  int64_t co = 0, ci, ky, kx, oy, j;
  if (KH == 1 && KW == 1 && sH == 1 && sW == 1 && padTop == 0 && padLeft == 0 && padBottom == 0 &&
      padRight == 0) {
    co = aicc_pointwise_f32(x, w, bias, y, Cin, P, Cout);
    y += co * P, w += co * Cin, Cout -= co;
    if (bias) bias += co;
  }
  for (co = 0; co < Cout; ++co)
    for (oy = 0; oy < P; ++oy) y[co * P + oy] = bias ? bias[co] : 0.0f;
  for (co = 0; co < Cout; co += 4) {
    const int64_t n = Cout - co < 4 ? Cout - co : 4;
    for (ci = 0; ci < Cin; ++ci)
      for (ky = 0; ky < KH; ++ky)
        for (kx = 0; kx < KW; ++kx) {
          const int64_t off = kx * dilW - padLeft;
          int64_t a, b;
          float wv[4];
          aicc_valid_cols(off, sW, W, OW, &a, &b);
          if (a >= b) continue;
          for (j = 0; j < n; ++j) wv[j] = w[(((co + j) * Cin + ci) * KH + ky) * KW + kx];
          for (oy = 0; oy < OH; ++oy) {
            const int64_t iy = oy * sH - padTop + ky * dilH;
            if (iy < 0 || iy >= H) continue;
            aicc_axpy_planes_f32(y + co * P + oy * OW, P, n, wv, x + (ci * H + iy) * W + off, sW,
                                 a, b);
          }
        }
  }
}
)";

const char* kDw =
    R"(/* Depthwise 3x3, pad 1, one image, NCHW: x [C,H,W], w [C,1,3,3], bias [C] or NULL,
   y [C,OH,OW]. Portable stand-in for the dwconv_nchw_* micro-kernels. Every output element sums
   bias, then the taps in (ky, kx) order over the rows and columns inside the image: the edge
   columns with bounds checks, the others without (8 lanes at a time for stride 1). */
static float aicc_dw_point(const float* const* r, const float* wc, float b, int64_t ix0,
                           int64_t W) {
  float acc = b;
  int64_t ky, kx;
  for (ky = 0; ky < 3; ++ky) {
    if (!r[ky]) continue;
    for (kx = 0; kx < 3; ++kx)
      if (ix0 + kx >= 0 && ix0 + kx < W) acc += wc[ky * 3 + kx] * r[ky][ix0 + kx];
  }
  return acc;
}

static void aicc_dwconv3x3_nchw_f32(const float* x, const float* w, const float* bias, float* y,
                                    int64_t C, int64_t H, int64_t W, int64_t stride) {
  const int64_t OH = (H - 1) / stride + 1, OW = (W - 1) / stride + 1;
  /* Interior columns: ox * stride - 1 >= 0 and ox * stride + 1 <= W - 1. */
  const int64_t hi = W >= 2 ? ((W - 2) / stride + 1 < OW ? (W - 2) / stride + 1 : OW) : 0;
  int64_t c, oy, ox, ky;
  for (c = 0; c < C; ++c) {
    const float* wc = w + c * 9;
    const float b = bias ? bias[c] : 0.0f;
    for (oy = 0; oy < OH; ++oy) {
      float* yr = y + (c * OH + oy) * OW;
      const float* r[3];
      for (ky = 0; ky < 3; ++ky) {
        const int64_t iy = oy * stride - 1 + ky;
        r[ky] = iy >= 0 && iy < H ? x + (c * H + iy) * W : 0;
      }
      ox = 0;
      if (hi > 1) {
        yr[0] = aicc_dw_point(r, wc, b, -1, W);
        ox = 1;
#if defined(AICC_V8)
/* The nine taps of LANES outputs from ox on (stride 1) as one vector of type T. */
#define AICC_DW_STEP(T, LANES)                                                                     \
  {                                                                                                \
    T acc, t;                                                                                      \
    int64_t l;                                                                                     \
    for (l = 0; l < LANES; ++l) acc[l] = b;                                                        \
    for (ky = 0; ky < 3; ++ky) {                                                                   \
      if (!r[ky]) continue;                                                                        \
      memcpy(&t, r[ky] + ox - 1, sizeof t);                                                        \
      acc += t * wc[ky * 3];                                                                       \
      memcpy(&t, r[ky] + ox, sizeof t);                                                            \
      acc += t * wc[ky * 3 + 1];                                                                   \
      memcpy(&t, r[ky] + ox + 1, sizeof t);                                                        \
      acc += t * wc[ky * 3 + 2];                                                                   \
    }                                                                                              \
    memcpy(yr + ox, &acc, sizeof acc);                                                             \
  }
        if (stride == 1)
          for (; ox + 8 <= hi; ox += 8) AICC_DW_STEP(aicc_v8, 8)
        if (stride == 1 && ox + 4 <= hi) {
          AICC_DW_STEP(aicc_v4, 4)
          ox += 4;
        }
        if (stride != 1) /* stride 2: the three taps of a row gathered into vectors */
          for (; ox + 8 <= hi; ox += 8) {
            aicc_v8 acc = {b, b, b, b, b, b, b, b}, t0, t1, t2;
            float g0[8], g1[8], g2[8];
            int64_t i;
            for (ky = 0; ky < 3; ++ky) {
              const float* q;
              if (!r[ky]) continue;
              q = r[ky] + ox * stride - 1;
              for (i = 0; i < 8; ++i) {
                g0[i] = q[i * stride];
                g1[i] = q[i * stride + 1];
                g2[i] = q[i * stride + 2];
              }
              memcpy(&t0, g0, sizeof t0);
              memcpy(&t1, g1, sizeof t1);
              memcpy(&t2, g2, sizeof t2);
              acc += t0 * wc[ky * 3];
              acc += t1 * wc[ky * 3 + 1];
              acc += t2 * wc[ky * 3 + 2];
            }
            memcpy(yr + ox, &acc, sizeof acc);
          }
#endif
        for (; ox < hi; ++ox) {
          const int64_t ix = ox * stride - 1;
          float acc = b;
          for (ky = 0; ky < 3; ++ky) {
            if (!r[ky]) continue;
            acc += wc[ky * 3] * r[ky][ix];
            acc += wc[ky * 3 + 1] * r[ky][ix + 1];
            acc += wc[ky * 3 + 2] * r[ky][ix + 2];
          }
          yr[ox] = acc;
        }
      }
      for (; ox < OW; ++ox) yr[ox] = aicc_dw_point(r, wc, b, ox * stride - 1, W);
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
  if (key == "axpy") return kAxpy;
  if (key == "conv") return kConv;
  if (key == "dwconv") return kDw;
  fail("C codegen: internal: unknown micro-kernel helper '{}'", key);
}

} // namespace aicc::codegen
