// Blocked activation layouts on the graph (NCHW16c, kernels/conv_nchwc.h): a tensor [N, C, H, W]
// stored as the tensor [N, ceil(C / 16), H, W, 16], lanes past C zero. They are plain tensors to
// every pass and to the interpreter; aicc.Reorder converts, aicc.ConvNchwc convolves them (or an
// NCHW stem into them), elementwise ops apply lane by lane, and pools are ordinary ONNX pools
// over (H, W, lanes) one lane wide (passes/assign_layout.h).
#pragma once

#include "ir/tensor.h"

namespace aicc {

inline constexpr int64_t kLayoutBlock = 16;

// [N, C, spatial...] -> [N, ceil(C / 16), spatial..., 16] (zeros past C), and back to C channels.
Tensor blockChannels(const Tensor& x);
Tensor unblockChannels(const Tensor& x, int64_t channels);

} // namespace aicc
