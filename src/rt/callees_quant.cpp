// Quantized micro-kernel calls of lowered code, next to the f32 ones of rt/callees.cpp. Contract
// (ONNX QLinearConv, kernels/qconv.h; x [N,C,H,W] u8/i8, y [N,M,OH,OW] u8/i8, bias [M] i32,
// factor [M] f32; G = the 16 geometry arguments N, C, H, W, M, group, KH, KW, sH, sW, padTop,
// padLeft, padBottom, padRight, dilH, dilW; flags bit 0 = x is i8, bit 1 = y is i8):
//   @qconv2d_nchw_<QConvGemm desc>(x, wp, rowSum, bias | 0, factor | 0, y, G, xzp, yzp, flags)
//       wp = w - wzp packed by kernels::packQConvWeights for that kernel, rowSum [M] i32; with
//       factor 0, y is i32, the exact sums (ONNX ConvInteger: xzp may be a u8/i8 scalar buffer)
//   @qdwconv_nchw_<DepthwiseConvNchw desc>(x, w, bias | 0, factor | 0, y, G, xzp, yzp, flags)
//       group == C; w [M, KH*KW] f32 (w - wzp); factor 0: y i32, the exact sums (ConvInteger)
//   @qdwconv_nchw_<QDepthwise3x3 desc>(x, w, bias | 0, factor, y, G, xzp, yzp, flags)
//       group == C, 3x3, pad 1, stride 1 or 2; w [M, 3, 4] i8 by kernels::packQDepthwise3x3Weights
//   @qmatmul_u8s8(a, wT, factor, y, R, K, N, azp, yzp, flags)   ONNX QLinearMatMul with constant b
//       (kernels/qmatmul.h): a [R, K] u8/i8, wT [N, K] i8 (b - bzp transposed), factor [N] f64,
//       y [R, N] u8/i8
//   @qconv_rows_<DqGemm desc>(x, wp, colSum, bias | 0, factor, y, rows, C, M, xzp, yzp, flags)
//       QLinearConv 1x1 over `rows` 1x1 images (kernels/qconv.h qconvRows): x u8 [rows, C], wp =
//       w - wzp as [C, M] packed by kernels::packDqGemmWeights, y [rows, M]
//   @qmatmul_tiles_<DqGemm desc>(a, wp, colSum, factor, y, R, K, N, azp, yzp, flags)   the same
//       on the int8 GEMM tiles (kernels/qmatmul.h): a u8, wp = b - bzp packed by
//       kernels::packDqGemmWeights, colSum [N] i32
//   @qmatmul_pairs_<DqGemm desc>(a, b, factor, y, batches, R, K, N, aStride, bStride, azp, bzp,
//       yzp, flags)   QLinearMatMul of two run-time operands, per tensor (kernels/qmatmul.h
//       qmatmulPairs): a u8 [.., R, K], b [.., K, N] (flags bit 2: i8), factor [1] f64, y [batches,
//       R, N] (bit 1: i8); product i reads a + i * aStride and b + i * bStride
//   @dqgemm_<DqGemm desc>(a, azp | 0, wp, colSum, aScale, bScale, y, M, N, K, flags)
//       com.microsoft.MatMulIntegerToFloat with constant b (kernels/dqgemm.h): a [M, K] u8, azp
//       u8 scalar, wp = b - bzp packed by kernels::packDqGemmWeights, colSum [N] i32, aScale f32
//       scalar, bScale f32 [N] (flags bit 0) or scalar, y [M, N] f32
//   @lut8(x, tables, y, outer, channels, inner, flip)   y = tables[c][x ^ flip] over
//       [outer, channels, inner] bytes (kernels/lut.h), tables [channels][256]
// Buffer arguments: see rt/callees.h.
#include <cmath>

#include "kernels/dqgemm.h"
#include "kernels/lut.h"
#include "kernels/qconv.h"
#include "kernels/qmatmul.h"
#include "rt/callees.h"
#include "rt/error.h"

namespace aicc::rt {

namespace {

// Address of buffer argument i, checked to hold `need` elements of `elemBytes` bytes.
void* bytesAt(const std::string& k, std::vector<KernelArg>& a, size_t i, int64_t need,
              size_t elemBytes, const char* what) {
  AICC_RT_CHECK(i < a.size() && a[i].isBuffer, "call @{}: argument {} ({}) must be a buffer", k, i,
                what);
  AICC_RT_CHECK(need >= 0 && need <= a[i].bytes / int64_t(elemBytes),
                "call @{}: {} needs {} elements of {} bytes but the buffer has {} bytes", k, what,
                need, elemBytes, a[i].bytes);
  return a[i].ptr;
}

int64_t intArg(const std::string& k, const std::vector<KernelArg>& a, size_t i) {
  AICC_RT_CHECK(i < a.size() && !a[i].isBuffer && !a[i].isFloat,
                "call @{}: argument {} must be an integer", k, i);
  return a[i].i;
}

// The geometry (arguments first..first+15), zero points and flags.
void convArgs(const std::string& k, std::vector<KernelArg>& a, size_t first, kernels::QConvShape& s,
              kernels::QConvParams& q) {
  for (size_t j = 0; j < 16; ++j) s.*kernels::QConvShape::kGeometry[j] = intArg(k, a, first + j);
  q.yzp = static_cast<int32_t>(intArg(k, a, first + 17));
  const int64_t flags = intArg(k, a, first + 18);
  q.xSigned = flags & 1, q.ySigned = flags & 2;
  if (first + 16 < a.size() && a[first + 16].isBuffer) { // a run-time x zero point
    const auto* z = static_cast<const uint8_t*>(bytesAt(k, a, first + 16, 1, 1, "xzp"));
    q.xzp = q.xSigned ? int32_t(int8_t(*z)) : int32_t(*z);
  } else {
    q.xzp = static_cast<int32_t>(intArg(k, a, first + 16));
  }
  AICC_RT_CHECK(s.N > 0 && s.C > 0 && s.H > 0 && s.W > 0 && s.M > 0 && s.group > 0 &&
                    s.C % s.group == 0 && s.M % s.group == 0 && s.KH > 0 && s.KW > 0 &&
                    s.strideH > 0 && s.strideW > 0 && s.dilH > 0 && s.dilW > 0 && s.padTop >= 0 &&
                    s.padLeft >= 0 && s.padBottom >= 0 && s.padRight >= 0 && s.OH() > 0 &&
                    s.OW() > 0,
                "call @{}: bad convolution shape", k);
  AICC_RT_CHECK(q.xzp >= (q.xSigned ? -128 : 0) && q.xzp <= (q.xSigned ? 127 : 255) &&
                    q.yzp >= (q.ySigned ? -128 : 0) && q.yzp <= (q.ySigned ? 127 : 255),
                "call @{}: zero point out of range", k);
}

} // namespace

void callQConv(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
               kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 25, "call @{}: expects 25 arguments, got {}", k, a.size());
  kernels::QConvShape s;
  kernels::QConvParams q;
  convArgs(k, a, 6, s, q);
  const void* x = bytesAt(k, a, 0, s.N * s.C * s.H * s.W, 1, "x");
  const void* wp = bytesAt(k, a, 1, kernels::qconvPackedBytes(d, s), 1, "wp");
  const auto* rowSum = static_cast<const int32_t*>(bytesAt(k, a, 2, s.M, 4, "rowSum"));
  const int32_t* bias = nullptr;
  if (a[3].isBuffer) bias = static_cast<const int32_t*>(bytesAt(k, a, 3, s.M, 4, "bias"));
  const bool sums = !a[4].isBuffer; // ConvInteger: int32 results
  const auto* factor =
      sums ? nullptr : static_cast<const float*>(bytesAt(k, a, 4, s.M, 4, "factor"));
  void* y = bytesAt(k, a, 5, s.N * s.M * s.OH() * s.OW(), sums ? 4 : 1, "y");
  kernels::qconv2d(d, s, q, x, wp, rowSum, bias, factor, y, pool);
}

void callQDwConv(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                 kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 24, "call @{}: expects 24 arguments, got {}", k, a.size());
  kernels::QConvShape s;
  kernels::QConvParams q;
  convArgs(k, a, 5, s, q);
  AICC_RT_CHECK(s.group == s.C, "call @{}: {} groups for {} channels", k, s.group, s.C);
  const void* x = bytesAt(k, a, 0, s.N * s.C * s.H * s.W, 1, "x");
  const auto* w = static_cast<const float*>(bytesAt(k, a, 1, s.M * s.KH * s.KW, 4, "w"));
  const int32_t* bias = nullptr;
  if (a[2].isBuffer) bias = static_cast<const int32_t*>(bytesAt(k, a, 2, s.M, 4, "bias"));
  const bool sums = !a[3].isBuffer; // ConvInteger: int32 results
  const auto* factor =
      sums ? nullptr : static_cast<const float*>(bytesAt(k, a, 3, s.M, 4, "factor"));
  void* y = bytesAt(k, a, 4, s.N * s.M * s.OH() * s.OW(), sums ? 4 : 1, "y");
  kernels::qdepthwiseConv2d(d, s, q, x, w, bias, factor, y, pool);
}

void callQDw3x3(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 24, "call @{}: expects 24 arguments, got {}", k, a.size());
  kernels::QConvShape s;
  kernels::QConvParams q;
  convArgs(k, a, 5, s, q);
  AICC_RT_CHECK(kernels::qdepthwise3x3Shape(s) && s.M % s.C == 0,
                "call @{}: not a 3x3 depthwise convolution with pad 1 and stride 1 or 2", k);
  const void* x = bytesAt(k, a, 0, s.N * s.C * s.H * s.W, 1, "x");
  const auto* w = static_cast<const int8_t*>(bytesAt(k, a, 1, s.M * 12, 1, "w"));
  const int32_t* bias = nullptr;
  if (a[2].isBuffer) bias = static_cast<const int32_t*>(bytesAt(k, a, 2, s.M, 4, "bias"));
  const auto* factor = static_cast<const float*>(bytesAt(k, a, 3, s.M, 4, "factor"));
  void* y = bytesAt(k, a, 4, s.N * s.M * s.OH() * s.OW(), 1, "y");
  kernels::qdepthwise3x3(d, s, q, x, w, bias, factor, y, pool);
}

void callQMatMul(const std::string& k, std::vector<KernelArg>& a, kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 10, "call @{}: expects 10 arguments, got {}", k, a.size());
  kernels::QMatMulShape s;
  s.R = intArg(k, a, 4), s.K = intArg(k, a, 5), s.N = intArg(k, a, 6);
  s.azp = static_cast<int32_t>(intArg(k, a, 7));
  s.yzp = static_cast<int32_t>(intArg(k, a, 8));
  const int64_t flags = intArg(k, a, 9);
  s.aSigned = flags & 1, s.ySigned = flags & 2;
  AICC_RT_CHECK(s.R > 0 && s.K > 0 && s.K < (int64_t(1) << 16) && s.N > 0,
                "call @{}: bad matrix shape", k);
  AICC_RT_CHECK(s.azp >= (s.aSigned ? -128 : 0) && s.azp <= (s.aSigned ? 127 : 255) &&
                    s.yzp >= (s.ySigned ? -128 : 0) && s.yzp <= (s.ySigned ? 127 : 255),
                "call @{}: zero point out of range", k);
  const auto* x = static_cast<const uint8_t*>(bytesAt(k, a, 0, s.R * s.K, 1, "a"));
  const auto* wT = static_cast<const int8_t*>(bytesAt(k, a, 1, s.N * s.K, 1, "wT"));
  const auto* factor = static_cast<const double*>(bytesAt(k, a, 2, s.N, 8, "factor"));
  auto* y = static_cast<uint8_t*>(bytesAt(k, a, 3, s.R * s.N, 1, "y"));
  kernels::qmatmul(s, x, wT, factor, y, pool);
}

void callQMatMulTiles(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                      kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 11, "call @{}: expects 11 arguments, got {}", k, a.size());
  kernels::QMatMulShape s;
  s.R = intArg(k, a, 5), s.K = intArg(k, a, 6), s.N = intArg(k, a, 7);
  s.azp = static_cast<int32_t>(intArg(k, a, 8));
  s.yzp = static_cast<int32_t>(intArg(k, a, 9));
  const int64_t flags = intArg(k, a, 10);
  s.aSigned = flags & 1, s.ySigned = flags & 2;
  AICC_RT_CHECK(s.R > 0 && s.K > 0 && s.K < (int64_t(1) << 16) && s.N > 0 && !s.aSigned,
                "call @{}: bad matrix shape or a signed a", k);
  AICC_RT_CHECK(s.azp >= 0 && s.azp <= 255 && s.yzp >= (s.ySigned ? -128 : 0) &&
                    s.yzp <= (s.ySigned ? 127 : 255),
                "call @{}: zero point out of range", k);
  const auto* x = static_cast<const uint8_t*>(bytesAt(k, a, 0, s.R * s.K, 1, "a"));
  const void* wp = bytesAt(k, a, 1, kernels::dqgemmPackedBytes(d, s.K, s.N), 1, "wp");
  const auto* colSum = static_cast<const int32_t*>(bytesAt(k, a, 2, s.N, 4, "colSum"));
  const auto* factor = static_cast<const double*>(bytesAt(k, a, 3, s.N, 8, "factor"));
  auto* y = static_cast<uint8_t*>(bytesAt(k, a, 4, s.R * s.N, 1, "y"));
  kernels::qmatmulTiles(d, s, x, wp, colSum, factor, y, pool);
}

void callQMatMulPairs(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                      kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 14, "call @{}: expects 14 arguments, got {}", k, a.size());
  kernels::QMatMulShape s;
  kernels::QMatMulPairs p;
  p.batches = intArg(k, a, 4);
  s.R = intArg(k, a, 5), s.K = intArg(k, a, 6), s.N = intArg(k, a, 7);
  p.aStride = intArg(k, a, 8), p.bStride = intArg(k, a, 9);
  s.azp = static_cast<int32_t>(intArg(k, a, 10));
  p.bzp = static_cast<int32_t>(intArg(k, a, 11));
  s.yzp = static_cast<int32_t>(intArg(k, a, 12));
  const int64_t flags = intArg(k, a, 13);
  s.ySigned = flags & 2, p.bSigned = flags & 4;
  AICC_RT_CHECK(p.batches > 0 && s.R > 0 && s.K > 0 && s.K < (int64_t(1) << 15) && s.N > 0 &&
                    (p.aStride == 0 || p.aStride == s.R * s.K) &&
                    (p.bStride == 0 || p.bStride == s.K * s.N) && !(flags & 1),
                "call @{}: bad matrix shape or a signed a", k);
  AICC_RT_CHECK(s.azp >= 0 && s.azp <= 255 && p.bzp >= (p.bSigned ? -128 : 0) &&
                    p.bzp <= (p.bSigned ? 127 : 255) && s.yzp >= (s.ySigned ? -128 : 0) &&
                    s.yzp <= (s.ySigned ? 127 : 255),
                "call @{}: zero point out of range", k);
  const auto last = [&](int64_t stride, int64_t one) { return stride * (p.batches - 1) + one; };
  const auto* x = static_cast<const uint8_t*>(bytesAt(k, a, 0, last(p.aStride, s.R * s.K), 1, "a"));
  const auto* b = static_cast<const uint8_t*>(bytesAt(k, a, 1, last(p.bStride, s.K * s.N), 1, "b"));
  p.factor = *static_cast<const double*>(bytesAt(k, a, 2, 1, 8, "factor"));
  auto* y = static_cast<uint8_t*>(bytesAt(k, a, 3, p.batches * s.R * s.N, 1, "y"));
  AICC_RT_CHECK(std::isfinite(p.factor), "call @{}: factor is not finite", k);
  kernels::qmatmulPairs(d, s, p, x, b, y, pool);
}

void callQConvRows(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                   kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 12, "call @{}: expects 12 arguments, got {}", k, a.size());
  const int64_t rows = intArg(k, a, 6), C = intArg(k, a, 7), M = intArg(k, a, 8);
  kernels::QConvParams q;
  q.xzp = static_cast<int32_t>(intArg(k, a, 9));
  q.yzp = static_cast<int32_t>(intArg(k, a, 10));
  const int64_t flags = intArg(k, a, 11);
  q.xSigned = flags & 1, q.ySigned = flags & 2;
  AICC_RT_CHECK(rows > 0 && C > 0 && C < (int64_t(1) << 16) && M > 0 && !q.xSigned && q.xzp >= 0 &&
                    q.xzp <= 255 && q.yzp >= (q.ySigned ? -128 : 0) &&
                    q.yzp <= (q.ySigned ? 127 : 255),
                "call @{}: bad shape or zero point", k);
  const auto* x = static_cast<const uint8_t*>(bytesAt(k, a, 0, rows * C, 1, "x"));
  const void* wp = bytesAt(k, a, 1, kernels::dqgemmPackedBytes(d, C, M), 1, "wp");
  const auto* colSum = static_cast<const int32_t*>(bytesAt(k, a, 2, M, 4, "colSum"));
  const int32_t* bias = nullptr;
  if (a[3].isBuffer) bias = static_cast<const int32_t*>(bytesAt(k, a, 3, M, 4, "bias"));
  const auto* factor = static_cast<const float*>(bytesAt(k, a, 4, M, 4, "factor"));
  auto* y = static_cast<uint8_t*>(bytesAt(k, a, 5, rows * M, 1, "y"));
  kernels::qconvRows(d, rows, C, M, q, x, wp, colSum, bias, factor, y, pool);
}

void callLut8(const std::string& k, std::vector<KernelArg>& a, kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 7, "call @{}: expects 7 arguments, got {}", k, a.size());
  const int64_t outer = intArg(k, a, 3), channels = intArg(k, a, 4), inner = intArg(k, a, 5);
  const int64_t flip = intArg(k, a, 6);
  AICC_RT_CHECK(outer >= 0 && channels > 0 && inner >= 0 && (flip == 0 || flip == 0x80),
                "call @{}: bad sizes or flip", k);
  const int64_t n = outer * channels * inner;
  const auto* x = static_cast<const uint8_t*>(bytesAt(k, a, 0, n, 1, "x"));
  const auto* tables = static_cast<const uint8_t*>(bytesAt(k, a, 1, channels * 256, 1, "tables"));
  auto* y = static_cast<uint8_t*>(bytesAt(k, a, 2, n, 1, "y"));
  kernels::lut8(x, tables, y, outer, channels, inner, uint8_t(flip), pool);
}

void callDqGemm(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 11, "call @{}: expects 11 arguments, got {}", k, a.size());
  const int64_t M = intArg(k, a, 7), N = intArg(k, a, 8), K = intArg(k, a, 9);
  const bool perColumn = intArg(k, a, 10) & 1;
  AICC_RT_CHECK(M >= 0 && N > 0 && K > 0 && K < (int64_t(1) << 16), "call @{}: bad matrix shape",
                k);
  const auto* x = static_cast<const uint8_t*>(bytesAt(k, a, 0, M * K, 1, "a"));
  const int32_t azp =
      a[1].isBuffer ? *static_cast<const uint8_t*>(bytesAt(k, a, 1, 1, 1, "azp")) : 0;
  const void* wp = bytesAt(k, a, 2, kernels::dqgemmPackedBytes(d, K, N), 1, "wp");
  const auto* colSum = static_cast<const int32_t*>(bytesAt(k, a, 3, N, 4, "colSum"));
  const float as = *static_cast<const float*>(bytesAt(k, a, 4, 1, 4, "aScale"));
  const auto* bs = static_cast<const float*>(bytesAt(k, a, 5, perColumn ? N : 1, 4, "bScale"));
  auto* y = static_cast<float*>(bytesAt(k, a, 6, M * N, 4, "y"));
  // The reference's multiplier, f32(a_scale * b_scale[n]).
  thread_local std::vector<float> scale;
  scale.resize(size_t(N));
  for (int64_t n = 0; n < N; ++n) scale[size_t(n)] = as * bs[perColumn ? n : 0];
  kernels::dqgemm(d, M, N, K, x, K, azp, wp, colSum, scale.data(), y, N, pool);
}

} // namespace aicc::rt
