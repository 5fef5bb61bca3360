// assign-layout: regions of the graph on blocked activations (NCHW16c, ops/layout.h), for targets
// whose convolution kernel is the blocked one (16-lane vectors: AVX-512).
//
// A Conv becomes aicc.ConvNchwc when it has a constant weight, group 1 or depthwise (group = input
// = output channels), dilation 1, a stride of 1 or 2 along W, output rows of at least 14 pixels
// (where the kernel is fastest; it runs any) and f32 shapes, static or with a symbolic batch and
// sides (their upper ends judged, assignLayout's ranges); one of fewer than 16 input channels (an
// image's stem, group 1) reads its input as NCHW planes, no reorder in. Elementwise ops that
// apply lane by lane (Relu, Clip, LeakyRelu, HardSwish, HardSigmoid, Sigmoid, Swish, Tanh, Add,
// Sub, Mul) join when one input is blocked and every other is blocked, a scalar constant, a
// tensor of the output's own static shape, a [N, C, 1, 1] activation (squeeze-excite's gate,
// reordered in), or a constant with one value per channel (it becomes a blocked [1, C/16, 1, 1,
// 16] constant); Concat along the channels joins when every input but the last has a multiple of
// 16 channels; pools of a blocked value join: GlobalAveragePool as ReduceMean over (H, W),
// MaxPool / AveragePool as the 3-D pool over (H, W, lanes) one lane wide. A region (nodes connected
// through blocked values) is kept when its convolutions' work pays for the reorders at its
// boundary: FLOPs >= kFlopsPerReorderedElement x the elements reordered. A reorder moves an element
// in 0.2-0.3 ns (16x16 register transposes, Intel Xeon), the blocked kernels save ~15-25% of a
// convolution's time; 250 admitted mobilenet_v3_small's and more of shufflenet's layers for no gain
// (shufflenet +4% at 2 threads), so 400. aicc.Reorder(to = "nchw16c") goes in front of each value
// that enters a region (one per value), aicc.Reorder(to = "nchw") behind each that leaves it,
// taking over the original value, so nodes outside and graph outputs are unchanged. Main graph
// only.
#pragma once

#include "ir/graph.h"
#include "passes/size_predicates.h"

namespace aicc {

inline constexpr double kFlopsPerReorderedElement = 400.0;
// Output rows below 14 pixels stay NCHW: the kernel's 7-pixel tile loses to the NCHW pixel-rows
// GEMM there once its weights stream from memory (resnet18's 7x7x512 3x3 layers 1.53 -> 1.70 ms
// in the model, Intel Xeon).
inline constexpr int64_t kMinBlockedRow = 14;
// 7x7 maps run two rows to a tile, at stride 1 and when a pair of output blocks' weights
// (K x 32 floats) stay within 144 KB: the map's four tiles re-read them from L2 while the next
// pair's arrive. Intel Xeon, in the models against the NCHW kernels: 7x7x512 -> 2048 1x1 (K 512)
// 0.86 -> 0.67 ms, densenet's and mobilenet_v2's 7x7 layers faster, but 3x3 512 -> 512 (K 4608)
// 1.27 -> 1.42 ms, 2048 -> 512 1x1 0.73 -> 0.89, and strided ones from 14x14 maps 10-35% slower.
inline constexpr int64_t kMax7x7K = 1152;

// Returns whether the model changed. `block` is the target's channel block (16), 0 = none.
// `ranges`: the symbols' ranges; an image's symbolic sides are judged at their upper ends (the
// plan's sizes), and the blocked values keep the symbols (every blocked lowering takes the run's
// sizes). Without ranges only a symbolic batch is blocked.
bool assignLayout(Model& m, int64_t block, const std::vector<SizeRange>& ranges = {});

} // namespace aicc
