// Quantized 2-D convolution (ONNX QLinearConv, NCHW, u8/i8) with exact int32 accumulation and
// the requantization of the reference kernel (src/ops/quant_conv.cpp):
//   acc[n, m, p] = bias[m] + sum_k (x - xzp) * (w[m, k] - wzp[m])   (int32; padding reads xzp)
//   y = saturate(nearbyint(float(acc) * factor[m]) + yzp)          (round half to even)
// Two forms, both bit-exact with that kernel:
//  - GEMM (any group count): y[m, p] = requant(sum_k w'[m, k] * u(x)[k, p] + bias[m] -
//    uzp * rowSum[m]) with w' = w - wzp packed at compile time for a QConvGemm micro-kernel
//    (ukernel.h's QGemmTileParams: int8 quads for vpdpbusd, or int16 pairs), u(x) the input as
//    uint8 (int8 inputs shifted by 128, so uzp = xzp + 128) packed per call into the kernel's
//    panels (im2col, or the planes themselves for 1x1 convolutions).
//  - Depthwise 3x3 (pad 1, stride 1 or 2) with w - wzp within int8: a QDepthwise3x3 kernel,
//    exact int32 sums over the input as uint8 (ukernel.h's QDw3x3Params).
//  - Other depthwise ones (one input channel per group): the f32 plane kernels of kernels/conv.h
//    over float(x - xzp), exact because every partial sum is an integer below 2^24 (checked at
//    lowering), then requantized.
#pragma once

#include <cstdint>

#include "kernels/registry.h"

namespace aicc::kernels {

class ThreadPool;

struct QConvShape {
  int64_t N = 1, C = 0, H = 0, W = 0, M = 0, group = 1, KH = 1, KW = 1;
  int64_t strideH = 1, strideW = 1, padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t dilH = 1, dilW = 1;
  int64_t OH() const { return (H + padTop + padBottom - dilH * (KH - 1) - 1) / strideH + 1; }
  int64_t OW() const { return (W + padLeft + padRight - dilW * (KW - 1) - 1) / strideW + 1; }
  int64_t Kc() const { return C / group * KH * KW; } // reduction length per output channel
  bool isPointwise() const {
    return KH == 1 && KW == 1 && strideH == 1 && strideW == 1 && padTop == 0 && padLeft == 0 &&
           padBottom == 0 && padRight == 0;
  }
  // The 16 geometry fields in the order of the call contracts (rt/callees_quant.cpp), which the
  // lowering writes and the callee reads.
  static constexpr int64_t QConvShape::*kGeometry[16] = {
      &QConvShape::N,         &QConvShape::C,        &QConvShape::H,      &QConvShape::W,
      &QConvShape::M,         &QConvShape::group,    &QConvShape::KH,     &QConvShape::KW,
      &QConvShape::strideH,   &QConvShape::strideW,  &QConvShape::padTop, &QConvShape::padLeft,
      &QConvShape::padBottom, &QConvShape::padRight, &QConvShape::dilH,   &QConvShape::dilW};
};

// Element types and zero points of the activations.
struct QConvParams {
  bool xSigned = false, ySigned = false; // i8 (true) or u8
  int32_t xzp = 0, yzp = 0;
};

// ---- GEMM form ----
// Whether kernel `kd` (KernelOp::QConvGemm) takes these shifted weights (w - wzp, `count`
// values): the int8-quad kernels need them within [-128, 127].
bool qconvGemmTakes(const KernelDesc& kd, const int16_t* w, int64_t count);
// Bytes of the packed weights of `kd` for shape s: per group, ceil(M/group / MR) panels of
// ceil(Kc / KG) x MR x KG elements (int8 for KG 4, int16 for KG 2; padding rows and k are 0).
int64_t qconvPackedBytes(const KernelDesc& kd, const QConvShape& s);
// Packs w [M, Kc] (w - wzp, int16 rows) into dst (qconvPackedBytes bytes).
void packQConvWeights(const KernelDesc& kd, const QConvShape& s, const int16_t* w, void* dst);
// x [N, C, H, W] (u8/i8 bytes), wp packed by packQConvWeights, rowSum [M] (sum of each row of
// w - wzp), bias [M] or null, factor [M] (finite), y [N, M, OH, OW]. Runs on `pool`. With factor
// null, y is int32: the exact sums bias + sum (x - xzp) (w - wzp) (ONNX ConvInteger, no bias).
void qconv2d(const KernelDesc& kd, const QConvShape& s, const QConvParams& q, const void* x,
             const void* wp, const int32_t* rowSum, const int32_t* bias, const float* factor,
             void* y, ThreadPool* pool);

// ---- 1x1 convolutions of 1x1 images (a QDQ Gemm over many rows, passes/fold_qdq.h) ----
// x [rows, C] u8 (rows = the images), y [rows, M]: each row one pixel, so the convolution is a GEMM
// with the rows as the activations' rows. On a DqGemm kernel (kernels/dqgemm.h: w - wzp packed by
// packDqGemmWeights as [C, M], colSum its column sums), then the same requantization as qconv2d,
// bias included. q.xSigned must be false.
void qconvRows(const KernelDesc& dq, int64_t rows, int64_t C, int64_t M, const QConvParams& q,
               const uint8_t* x, const void* wp, const int32_t* colSum, const int32_t* bias,
               const float* factor, uint8_t* y, ThreadPool* pool);

// ---- int8 depthwise 3x3 (KernelOp::QDepthwise3x3; group == C, M = C * multiplier) ----
// Whether this shape is the kernels' geometry: 3x3, pad 1, stride 1 or 2 on both axes, dilation 1.
bool qdepthwise3x3Shape(const QConvShape& s);
// w - wzp [M, 9] (int16) within int8, as the kernels' weights: per channel three 4-byte groups
// (w[ky][0], w[ky][1], w[ky][2], 0). False (dst untouched) when a value is outside int8.
bool packQDepthwise3x3Weights(int64_t M, const int16_t* w, int8_t* dst);
// x [N, C, H, W], w packed (M * 12 bytes), bias [M] or null, factor [M], y [N, M, OH, OW].
void qdepthwise3x3(const KernelDesc& kd, const QConvShape& s, const QConvParams& q, const void* x,
                   const int8_t* w, const int32_t* bias, const float* factor, void* y,
                   ThreadPool* pool);

// ---- depthwise form on f32 plane kernels (group == C, M = C * multiplier) ----
// Whether every partial sum stays an integer below 2^24: |bias[m]| + 255 * sum |w'[m, .]|.
bool qdepthwiseExact(const QConvShape& s, const float* w, const int32_t* bias);
// `dwKernel` a DepthwiseConvNchw kernel; w [M, KH*KW] as floats (w - wzp), bias [M] or null; the
// caller has checked qdepthwiseExact (the lowering, on constant weights and bias). With factor
// null, y is int32: the exact sums (ConvInteger).
void qdepthwiseConv2d(const KernelDesc& dwKernel, const QConvShape& s, const QConvParams& q,
                      const void* x, const float* w, const int32_t* bias, const float* factor,
                      void* y, ThreadPool* pool);

} // namespace aicc::kernels
