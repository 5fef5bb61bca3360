// Quantized 2-D convolution (ONNX QLinearConv, NCHW, u8/i8) with exact int32 accumulation and
// the requantization of the reference kernel (src/ops/quant_conv.cpp):
//   acc[n, m, p] = bias[m] + sum_k (x - xzp) * (w[m, k] - wzp[m])   (int32; padding reads xzp)
//   y = saturate(nearbyint(float(acc) * factor[m]) + yzp)          (round half to even)
// The weights arrive pre-shifted (w - wzp[m]) as int16 rows [M][Cg*KH*KW] (packed at lowering
// time), the per-channel factors as f32. Groups (depthwise included), strides, pads, dilations.
#pragma once

#include <cstdint>

namespace aicc::kernels {

class ThreadPool;

struct QConvShape {
  int64_t N = 1, C = 0, H = 0, W = 0, M = 0, group = 1, KH = 1, KW = 1;
  int64_t strideH = 1, strideW = 1, padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t dilH = 1, dilW = 1;
  int64_t OH() const { return (H + padTop + padBottom - dilH * (KH - 1) - 1) / strideH + 1; }
  int64_t OW() const { return (W + padLeft + padRight - dilW * (KW - 1) - 1) / strideW + 1; }
  int64_t Kc() const { return C / group * KH * KW; } // reduction length per output channel
};

// Element types and zero points of the activations.
struct QConvParams {
  bool xSigned = false, ySigned = false; // i8 (true) or u8
  int32_t xzp = 0, yzp = 0;
};

// x [N, C, H, W] (u8/i8 bytes), w16 [M, Kc], bias [M] or null, factor [M], y [N, M, OH, OW].
// Runs on `pool` (over groups, or over output channels when there is one group).
void qlinearConv2d(const QConvShape& s, const QConvParams& q, const void* x, const int16_t* w16,
                   const int32_t* bias, const float* factor, void* y, ThreadPool* pool);

} // namespace aicc::kernels
