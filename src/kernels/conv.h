// Convolutions on the micro-kernels, NHWC activations:
//  - depthwise 3x3, pad 1, stride 1 or 2 (direct kernel, channels vectorized);
//  - general 2-D convolution (group 1) as im2col + GEMM, with a 1x1 / stride 1 / pad 0 fast path
//    that feeds the input to the GEMM directly.
// NHWC rather than NCHW/NCHWc: it is NCHWc with one block of all C channels, so the depthwise
// kernel vectorizes over channels for every stride and the GEMM convolution sees [pixels, channels]
// rows (M = output pixels, N = output channels, K = KH*KW*Cin; weights are the pre-packed B).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/gemm.h"

// Marks a portable loop of conv.cpp / qconv.cpp (compiled at -O3) to be cloned for the x86 vector
// ISAs, the best clone picked at load time (the baseline x86-64 has only SSE2). Not under
// ThreadSanitizer: the clones' resolvers run during relocation, before its runtime starts. Not
// under clang (only the fuzzing build, scripts/fuzz.sh): clang 14 does not multiversion function
// templates, so that build runs the baseline code.
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__) && !defined(__clang__)
#define AICC_KERNEL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define AICC_KERNEL_CLONES
#endif

namespace aicc::kernels {
// dst[j * ldd + i] = src[i * lds + j] for i < rows, j < cols, in 16 x 16 blocks (each block's
// rows and columns stay in L1; a plain column walk missed on every element).
void transposeBlocked(const float* src, int64_t rows, int64_t cols, int64_t lds, float* dst,
                      int64_t ldd);
} // namespace aicc::kernels

namespace aicc::kernels {

class ThreadPool;

// ---- depthwise 3x3 ----
struct DwConvWeights {
  const KernelDesc* kernel = nullptr;
  int64_t C = 0;
  std::vector<float> w;    // [9][C]
  std::vector<float> bias; // [C] or empty
};
// From ONNX weights [C, 1, 3, 3] and optional bias [C].
DwConvWeights packDepthwise3x3(const KernelDesc& kernel, const float* weightC133, const float* bias,
                               int64_t C);
inline int64_t dwOutSize(int64_t in, int64_t stride) { return (in + 2 - 3) / stride + 1; }
// in [N, H, W, C] -> out [N, OH, OW, C] with OH = dwOutSize(H, stride) (pad 1 on every side).
void depthwiseConv3x3Nhwc(const DwConvWeights& wt, int64_t N, int64_t H, int64_t W, int64_t stride,
                          const float* in, float* out, const Epilogue& act = {},
                          ThreadPool* pool = nullptr);

// ---- general conv2d (group 1) ----
struct Conv2dShape {
  int64_t N = 1, H = 0, W = 0, Cin = 0, Cout = 0, KH = 1, KW = 1;
  int64_t strideH = 1, strideW = 1, padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t dilH = 1, dilW = 1;
  int64_t OH() const { return (H + padTop + padBottom - dilH * (KH - 1) - 1) / strideH + 1; }
  int64_t OW() const { return (W + padLeft + padRight - dilW * (KW - 1) - 1) / strideW + 1; }
  bool isPointwise() const {
    return KH == 1 && KW == 1 && strideH == 1 && strideW == 1 && padTop == 0 && padLeft == 0 &&
           padBottom == 0 && padRight == 0;
  }
};
struct Conv2dWeights {
  Conv2dShape shape;
  PackedB w;               // [KH*KW*Cin, Cout] packed; row index (kh * KW + kw) * Cin + ci
  std::vector<float> bias; // [Cout] or empty
};
// From ONNX weights [Cout, Cin, KH, KW] and optional bias [Cout].
Conv2dWeights packConv2d(const KernelDesc& gemmKernel, const Conv2dShape& s,
                         const float* weightOIHW, const float* bias);
// in [N, H, W, Cin] -> out [N, OH, OW, Cout].
void conv2dNhwc(const Conv2dWeights& wt, const float* in, float* out, const Epilogue& act = {},
                ThreadPool* pool = nullptr);

// ---- NCHW, weights packed at compile time ----
// General conv2d of one group in NCHW as GEMM with the weights as the A operand:
// y[Cout, P] = W[Cout, K] * im2col(x)[K, P] (P = OH*OW, K = Cin*KH*KW ordered (ci, kh, kw), the
// ONNX weight layout), so the output is written in NCHW directly. `packedW` holds
// packedAFloats(gemmKernel, Cout, K) floats from packAInto(gemmKernel, W, Cout, K, K, ...);
// im2col panels are packed per call into a thread-local buffer. `ep.bias` is per output channel
// (Cout floats) and the clamp is applied on the last K block. in [Cin, H, W] -> out [Cout, OH, OW]
// (one image; s.N is ignored).
void conv2dNchwPacked(const KernelDesc& gemmKernel, const Conv2dShape& s, const float* packedW,
                      const float* in, float* out, const Epilogue& ep = {},
                      ThreadPool* pool = nullptr);

// Which GEMM conv2dNchwPacked runs. Channels: the output channels are the rows (weights as A
// panels, pixel panels of nr columns: above). Pixels: the output pixels are the rows,
// y^T[P, Cout] = im2col^T[P, K] W^T[K, Cout], with the weights as B panels (packBInto, transposed)
// and A micro-panels gathered per call from the input (zero-padded copy when padded), the result
// transposed into NCHW. Pixels is taken where its tiles are fuller: small maps, whose pixels fill
// nr-lane panels badly (7x7: 49 pixels in 64 lanes, 14x14: rows of 14 in 16 lanes), by enough
// to pay for gathering A (f32 kernels only). A function of the kernel and the shape, so the
// compiler (packing the weights) and the runtime (running them) agree.
enum class ConvRows { Channels, Pixels };
ConvRows convRowsFor(const KernelDesc& gemmKernel, const Conv2dShape& s);
// The form as a flag of @conv2d_nchw_packed_'s last argument (beside kBf16*): the compiler's
// choice, which the runtime follows for any run size (a symbolic map's weights are packed for
// one form, chosen at the planned size). Neither flag: convRowsFor of the call's shape.
enum : unsigned { kConvChannelRows = 8u, kConvPixelRows = 16u };
// The floats of one group's packed weights for conv2dNchwPacked, and the packing of W [Cout, K].
int64_t convPackedWeightFloats(const KernelDesc& gemmKernel, const Conv2dShape& s);
void packConvWeights(const KernelDesc& gemmKernel, const Conv2dShape& s, const float* w,
                     float* dst);
// conv2dNchwPacked with the layout forced (tests and benchmarks; `packedW` packed for `rows`).
void conv2dNchwPacked(const KernelDesc& gemmKernel, const Conv2dShape& s, ConvRows rows,
                      const float* packedW, const float* in, float* out, const Epilogue& ep = {},
                      ThreadPool* pool = nullptr);
int64_t convPackedWeightFloats(const KernelDesc& gemmKernel, const Conv2dShape& s, ConvRows rows);
void packConvWeights(const KernelDesc& gemmKernel, const Conv2dShape& s, ConvRows rows,
                     const float* w, float* dst);

// Depthwise (one input channel per group, `mult` output channels per group) conv2d in NCHW with
// any kernel size, stride, dilation and padding: in [C, H, W] -> out [C * mult, OH, OW] (one
// image). w is the ONNX weight [C * mult, 1, KH, KW]; ep.bias per output channel.
struct DwShape {
  int64_t C = 0, mult = 1, H = 0, W = 0, KH = 3, KW = 3, strideH = 1, strideW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0, dilH = 1, dilW = 1;
  int64_t outH = 0, outW = 0; // set: the output size (pooling's ceil_mode), else the floor formula
  int64_t OH() const {
    return outH ? outH : (H + padTop + padBottom - dilH * (KH - 1) - 1) / strideH + 1;
  }
  int64_t OW() const {
    return outW ? outW : (W + padLeft + padRight - dilW * (KW - 1) - 1) / strideW + 1;
  }
};
// Max pooling on the same machinery (C planes, mult 1; padding reads as -inf; windows past the
// input, as ceil_mode makes them, see only what lies inside): in [C, H, W] -> out [C, OH, OW].
void maxPoolNchw(const KernelDesc& dwKernel, const DwShape& s, const float* in, float* out,
                 ThreadPool* pool = nullptr);
// Average pooling the same way (window sums over zero padding, then divided by the window's
// count: the positions inside the input, or inside the padded extent with countIncludePad).
void avgPoolNchw(const KernelDesc& dwKernel, const DwShape& s, bool countIncludePad,
                 const float* in, float* out, ThreadPool* pool = nullptr);
// Small maps run channel-blocked (depthwiseChannelBlocks: a block of vector-width channels
// interleaved into a padded tile, every tap one FMA over the block); `channelBlocks` 1 or 0
// forces the form (tests, benchmarks), -1 picks it.
bool depthwiseChannelBlocks(const KernelDesc& dwKernel, const DwShape& s);
void depthwiseConvNchw(const KernelDesc& dwKernel, const DwShape& s, const float* w,
                       const float* in, float* out, const Epilogue& ep = {},
                       ThreadPool* pool = nullptr, int channelBlocks = -1);

// The same machinery with the input planes written by `rows(c, top, pitch, first, second)`:
// input row y of channel c as floats at top + y * pitch + first, or, when second >= 0 (stride-2
// rows), its columns 2m at top + y * pitch + first + m and 2m + 1 at ... + second + m (the int8
// depthwise convolution of kernels/qconv.h converts there). Each output plane co (OH*OW floats,
// thread-local) is handed to sink(co, plane) instead of memory. `bias` holds C * mult floats or
// is null.
using PlaneRows =
    std::function<void(int64_t c, float* top, int64_t pitch, int64_t first, int64_t second)>;
void depthwiseConvNchwRows(const KernelDesc& dwKernel, const DwShape& s, const float* w,
                           const float* bias, const PlaneRows& rows,
                           const std::function<void(int64_t, const float*)>& sink,
                           ThreadPool* pool = nullptr);

// GlobalAveragePool: out[r] = mean of in[r * len .. (r + 1) * len) for r < rows, rows split over
// the threads; the sums in `isa`'s vector lanes.
void globalAveragePool(Isa isa, const float* in, float* out, int64_t rows, int64_t len,
                       ThreadPool* pool = nullptr);

// Plain references (NHWC, double accumulation) for tests.
void conv2dReferenceNhwc(const Conv2dShape& s, const float* in, const float* weightOIHW,
                         const float* bias, float* out, const Epilogue& act = {});

} // namespace aicc::kernels
