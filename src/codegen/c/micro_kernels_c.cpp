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

const char* kConv =
    R"(/* One image, one group, NCHW: x [Cin,H,W], w [Cout,Cin,KH,KW], bias [Cout] or NULL,
   y [Cout,OH,OW]. Portable stand-in for the conv2d_nchw_* micro-kernels. */
static void aicc_conv2d_nchw_f32(const float* x, const float* w, const float* bias, float* y,
                                 int64_t Cin, int64_t H, int64_t W, int64_t Cout, int64_t KH,
                                 int64_t KW, int64_t sH, int64_t sW, int64_t padTop,
                                 int64_t padLeft, int64_t padBottom, int64_t padRight,
                                 int64_t dilH, int64_t dilW) {
  const int64_t OH = (H + padTop + padBottom - dilH * (KH - 1) - 1) / sH + 1;
  const int64_t OW = (W + padLeft + padRight - dilW * (KW - 1) - 1) / sW + 1;
  int64_t co, ci, ky, kx, oy, ox;
  for (co = 0; co < Cout; ++co) {
    float* yp = y + co * OH * OW;
    const float b = bias ? bias[co] : 0.0f;
    for (oy = 0; oy < OH * OW; ++oy) yp[oy] = b;
    for (ci = 0; ci < Cin; ++ci)
      for (ky = 0; ky < KH; ++ky)
        for (kx = 0; kx < KW; ++kx) {
          const float wv = w[((co * Cin + ci) * KH + ky) * KW + kx];
          for (oy = 0; oy < OH; ++oy) {
            const int64_t iy = oy * sH - padTop + ky * dilH;
            const float* xr;
            float* yr;
            if (iy < 0 || iy >= H) continue;
            xr = x + (ci * H + iy) * W;
            yr = yp + oy * OW;
            for (ox = 0; ox < OW; ++ox) {
              const int64_t ix = ox * sW - padLeft + kx * dilW;
              if (ix >= 0 && ix < W) yr[ox] += wv * xr[ix];
            }
          }
        }
  }
}
)";

const char* kDw =
    R"(/* Depthwise 3x3, pad 1, one image, NCHW: x [C,H,W], w [C,1,3,3], bias [C] or NULL,
   y [C,OH,OW]. Portable stand-in for the dwconv_nchw_* micro-kernels. */
static void aicc_dwconv3x3_nchw_f32(const float* x, const float* w, const float* bias, float* y,
                                    int64_t C, int64_t H, int64_t W, int64_t stride) {
  const int64_t OH = (H - 1) / stride + 1, OW = (W - 1) / stride + 1;
  int64_t c, oy, ox, ky, kx;
  for (c = 0; c < C; ++c)
    for (oy = 0; oy < OH; ++oy)
      for (ox = 0; ox < OW; ++ox) {
        float acc = bias ? bias[c] : 0.0f;
        for (ky = 0; ky < 3; ++ky) {
          const int64_t iy = oy * stride - 1 + ky;
          if (iy < 0 || iy >= H) continue;
          for (kx = 0; kx < 3; ++kx) {
            const int64_t ix = ox * stride - 1 + kx;
            if (ix >= 0 && ix < W) acc += w[c * 9 + ky * 3 + kx] * x[(c * H + iy) * W + ix];
          }
        }
        y[(c * OH + oy) * OW + ox] = acc;
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
  if (key == "conv") return kConv;
  if (key == "dwconv") return kDw;
  fail("C codegen: internal: unknown micro-kernel helper '{}'", key);
}

} // namespace aicc::codegen
