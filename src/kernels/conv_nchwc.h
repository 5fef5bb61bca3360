// Convolutions on blocked activations, NCHW16c: a tensor [N, C, H, W] is stored as
// [N, ceil(C / 16), H, W, 16], channel c of pixel (h, w) at ((c / 16 * H + h) * W + w) * 16 + c %
// 16, lanes past C zero (or any finite value: every consumer multiplies them by zero weights or
// drops them). A pixel's 16 channels are one AVX-512 vector, so a convolution tile broadcasts input
// lanes read in place and multiplies whole vectors of 16 output channels (NchwcTileParams): no
// im2col, no split-row loads, stride 2 as cheap as stride 1. The layout pass (passes/
// assign_layout.h) puts whole chains of convolutions in this layout, reordering at their ends.
#pragma once

#include <cstdint>

#include "kernels/conv.h"

namespace aicc::kernels {

inline constexpr int64_t kNchwcBlock = 16;
inline constexpr int64_t kNchwcTilePixels = 14; // the tile: 14 pixels of a row x 32 channels
inline int64_t nchwcBlocks(int64_t channels) { return (channels + kNchwcBlock - 1) / kNchwcBlock; }

// Whether conv2dNchw16c runs this (group-1) convolution: dilation 1, stride 1 or 2 along W. Rows
// of any width: 14+ pixels in 14-pixel tiles, 7 two rows to a tile (7x7 maps), narrower ones one
// tile per row through a scratch tile (a symbolic size's small run). Where the blocked kernel is
// worth it is the layout pass's choice (passes/assign_layout.h: rows of 14+, or 7 with a small
// K; a 7-pixel tile lost to the NCHW pixel-rows GEMM on resnet18's 7x7x512 layers once their
// weights streamed from memory, 1.53 -> 1.70 ms).
bool nchwcConvApplies(const Conv2dShape& s);

// The packed weights: per pair of output blocks, [input blocks][KH * KW][16][32] (zeros past Cin
// and Cout). From ONNX weights [Cout, Cin, KH, KW].
int64_t nchwcPackedWeightFloats(const Conv2dShape& s);
void packNchwcWeights(const Conv2dShape& s, const float* wOIHW, float* dst);

// One image: in [ceil(Cin/16), H, W, 16] -> out [ceil(Cout/16), OH, OW, 16], weights packed by
// packNchwcWeights, ep.bias per output channel (Cout floats), ep.residual laid out as out.
// `kernel` is a KernelOp::ConvNchw16c descriptor.
void conv2dNchw16c(const KernelDesc& kernel, const Conv2dShape& s, const float* packedW,
                   const float* in, float* out, const Epilogue& ep = {},
                   ThreadPool* pool = nullptr);

// A stem: the same convolution on NCHW input ([Cin, H, W], best for few channels, an image's 3),
// each input channel a block of one lane: weights packed as [Cin][KH * KW][1][32] per pair of
// output blocks; out [ceil(Cout/16), OH, OW, 16].
int64_t nchwcPlanePackedWeightFloats(const Conv2dShape& s);
void packNchwcPlaneWeights(const Conv2dShape& s, const float* wOIHW, float* dst);
void conv2dNchwToNchw16c(const KernelDesc& kernel, const Conv2dShape& s, const float* packedW,
                         const float* in, float* out, const Epilogue& ep = {},
                         ThreadPool* pool = nullptr);

// Depthwise (one channel per group, Cin == Cout, multiplier 1) on NCHW16c, same conditions:
// weights [C, 1, KH, KW] packed as [blocks][KH * KW][16] (zeros past C).
int64_t nchwcDepthwiseWeightFloats(const Conv2dShape& s);
void packNchwcDepthwise(const Conv2dShape& s, const float* wC1HW, float* dst);
void depthwiseNchw16c(const KernelDesc& kernel, const Conv2dShape& s, const float* packedW,
                      const float* in, float* out, const Epilogue& ep = {},
                      ThreadPool* pool = nullptr);

// GlobalAveragePool of one image on NCHW16c: [blocks, HW, 16] -> [blocks, 16].
void meanNchw16c(const KernelDesc& kernel, const float* in, int64_t blocks, int64_t HW, float* out,
                 ThreadPool* pool = nullptr);

// MaxPool (isMax) or AveragePool of one image on NCHW16c: [ceil(C/16), H, W, 16] ->
// [ceil(C/16), OH, OW, 16] (DwShape: C, sizes, kernel, strides, pads, outH/outW for ceil_mode;
// dilation 1). Windows see only what lies inside the input; AveragePool divides by the count
// inside it, or inside the padded extent with countPad.
void poolNchw16c(const KernelDesc& kernel, const DwShape& s, bool isMax, bool countPad,
                 const float* in, float* out, ThreadPool* pool = nullptr);

// Layout changes of one image: [C, HW] <-> [ceil(C/16), HW, 16] (padding lanes written as zero).
void reorderToNchw16c(const KernelDesc& kernel, const float* in, int64_t C, int64_t HW, float* out,
                      ThreadPool* pool = nullptr);
void reorderFromNchw16c(const KernelDesc& kernel, const float* in, int64_t C, int64_t HW,
                        float* out, ThreadPool* pool = nullptr);

} // namespace aicc::kernels
