// assign-layout: regions of the graph on blocked activations (NCHW16c, ops/layout.h), for targets
// whose convolution kernel is the blocked one (16-lane vectors: AVX-512).
//
// A Conv becomes aicc.ConvNchwc when it has a constant weight, group 1 or depthwise (group = input
// = output channels), dilation 1, a stride of 1 or 2 along W, output rows of at least 14 pixels
// and static f32 shapes (what kernels/conv_nchwc.h runs); one of fewer than 16 input channels (an
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

namespace aicc {

inline constexpr double kFlopsPerReorderedElement = 400.0;
// Output rows below 14 pixels stay NCHW: the kernel's 7-pixel tile loses to the NCHW pixel-rows
// GEMM there once its weights stream from memory (resnet18's 7x7x512 3x3 layers 1.53 -> 1.70 ms
// in the model, Intel Xeon).
inline constexpr int64_t kMinBlockedRow = 14;

// Returns whether the model changed. `block` is the target's channel block (16), 0 = none.
bool assignLayout(Model& m, int64_t block);

} // namespace aicc
