// Shared pieces of the quantized lowerings (lower_quant.cpp, lower_qconv.cpp).
#pragma once

#include "loop/lower_ops.h"

namespace aicc::loop::detail {

// The values of constant input i of n: one value (per tensor) or `count` values (rank 1, per
// channel); an omitted input reads as {0} (zero points). Declines when not constant.
std::vector<double> quantConst(const Node& n, size_t i, int64_t count, const char* what);

// Scalar input i of n as `t` (0 when omitted; a float one must be f32); `what` names it when
// declining.
ExprPtr scalarIn(FuncBuilder& b, const Node& n, size_t i, DType t, const char* what);

// Declines unless o.runtimeKernels (the quantized lowerings are JIT only).
void requireRuntimeKernels(const Node& n, const LowerOptions& o);

// The weight arguments of a DqGemm kernel's calls (kernels/dqgemm.h): w16 [K, N] (int16 values
// within int8: b - b_zero_point) packed for kd at compile time, then its column sums (i32 [N]).
std::vector<CallArg> dqgemmWeights(FuncBuilder& b, const kernels::KernelDesc& kd, const Tensor& w16,
                                   const LowerOptions& o);

} // namespace aicc::loop::detail
