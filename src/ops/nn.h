// Shared pieces of the neural-network op family (ops/nn*.cpp) and linear algebra (ops/linalg.cpp):
// sliding-window geometry (Conv, ConvTranspose, pooling), the float GEMM inner loop, and the
// "compute reduced floats through f32" convention.
#pragma once

#include "ops/helpers.h"

#include <array>

namespace aicc {

// Sub-registrations called from registerNnOps (ops/nn.cpp).
void registerNnConvOps(OpRegistry& r); // ops/nn_conv.cpp: Conv, ConvTranspose
void registerNnPoolOps(OpRegistry& r); // ops/nn_pool.cpp: *Pool, MaxUnpool, RoiAlign, MaxRoiPool
void registerNnNormOps(OpRegistry& r); // ops/nn_norm.cpp: *Normalization, LRN
void registerNnRoiOps(OpRegistry& r);  // ops/nn_roi.cpp: RoiAlign, MaxRoiPool

// C[M,N] += A[M,K] * B[K,N], all row-major and contiguous. Instantiated for float, double, int64_t.
// float sums in double and rounds each C element once: the reference is then more accurate than
// any f32 engine it checks, so an engine's error is its own and not the sum of two f32 errors.
template <typename T> void gemmAcc(int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C);

// ---- Sliding windows ----------------------------------------------------------------------------
inline int64_t floorDiv(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}
inline int64_t ceilDiv(int64_t a, int64_t b) { return -floorDiv(-a, b); }

// One spatial dimension of a sliding window op.
struct Window {
  int64_t in = 1, kernel = 1, stride = 1, dilation = 1, padBegin = 0, padEnd = 0, out = 1;
  int64_t extent() const { return (kernel - 1) * dilation + 1; }
};

// The window attributes of a node (strides, dilations, pads, auto_pad), validated against the
// number of spatial dims, with the spec's defaults filled in.
struct WindowAttrs {
  std::string autoPad = "NOTSET";
  Dims strides, dilations, pads; // pads: [x1_begin, x2_begin, ..., x1_end, x2_end, ...]
};
WindowAttrs readWindowAttrs(const Node& n, size_t spatial);

// Output size and padding of one dimension for Conv / pooling (ceilMode for pooling only).
// Throws when the window does not fit.
Window slideDim(const WindowAttrs& a, size_t i, int64_t in, int64_t kernel, bool ceilMode);
// The output size of a symbolic input size `in` (ir/dim_expr.h): SAME ceil(in / stride), else
// floor((in + pads - extent) / stride) + 1 (ceilMode: ceil, where no last window can start in the
// end padding; else unknown); unknown when `in` is.
Dim slideSymbolic(const WindowAttrs& a, size_t i, const Dim& in, int64_t kernel,
                  bool ceilMode = false);
std::vector<Window> slideDims(const WindowAttrs& a, const Dims& inSpatial, const Dims& kernel,
                              bool ceilMode);

// Left-pads 1-D / 2-D windows to three dims with trivial ones (in = kernel = out = 1), so kernels
// loop over exactly three spatial dims; throws for more than three spatial dims.
std::array<Window, 3> windows3(const std::vector<Window>& ws);

// The kernel_shape attribute if present, else `fallback` (e.g. the weights' spatial dims).
Dims kernelShapeOf(const Node& n, const Dims& fallback);

// Inference for Conv-like and pooling ops: [N, channels, out...], spatial dims computed where the
// input dims are static (unknown otherwise). `kernel` empty = unknown kernel.
void inferSliding(InferCtx& c, Dim channels, const std::optional<Dims>& kernel, bool ceilMode,
                  DType dt);

// ---- Float compute convention -------------------------------------------------------------------
// f64 computes in double; every other float type (f32, f16, bf16, f8) computes in f32.
inline DType computeType(DType t) { return t == DType::F64 ? DType::F64 : DType::F32; }
// `t` converted to its compute type (no copy when already there).
inline Tensor toCompute(const Tensor& t) {
  DType c = computeType(t.dtype());
  return t.dtype() == c ? t : t.castTo(c);
}
inline Tensor fromCompute(const Tensor& t, DType orig) {
  return t.dtype() == orig ? t : t.castTo(orig);
}
// Calls f(float{}) or f(double{}) for the compute type of `t`.
template <typename F> decltype(auto) withComputeType(DType t, F&& f) {
  if (t == DType::F64) return f(double{});
  return f(float{});
}
// Checks that input i is a floating-point tensor.
void requireFloatInput(const KernelCtx& c, size_t i);

} // namespace aicc
