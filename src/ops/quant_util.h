// Quantization family, shared pieces: registration of the conv-like ops (quant_conv.cpp) and of
// the com.microsoft quantized ops (quant_ms.cpp), plus rounding/saturation helpers.
#pragma once

#include "ops/op_def.h"

#include <cmath>

namespace aicc {

void registerQuantConvOps(OpRegistry& r); // QLinearConv, ConvInteger
void registerQuantMsOps(OpRegistry& r);   // com.microsoft QLinearAdd, QLinearMul, ...

// Range of an integer quantized type (u8, i8, u16, i16, u4, i4, u2, i2, i32).
std::pair<int64_t, int64_t> quantRange(DType t);

// round-half-to-even(v) saturated to [lo, hi]; NaN gives 0 clamped into the range.
inline int64_t roundSat(double v, int64_t lo, int64_t hi) {
  if (std::isnan(v)) return std::clamp<int64_t>(0, lo, hi);
  double r = std::nearbyint(v);
  if (r <= static_cast<double>(lo)) return lo;
  if (r >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(r);
}

// `v` rounded to the precision of float type `t` (f64 unchanged, f32, f16, bf16, ...).
double roundToType(DType t, double v);

// Per-tensor or per-channel quantization parameter (scale or zero point): value for channel `c`.
// A missing tensor reads as 0 (zero points); numel 1 is per-tensor; otherwise numel must be `n`.
class QuantParam {
public:
  QuantParam(const Tensor* t, int64_t n, const char* what);
  double operator()(int64_t c) const { return v_.size() == 1 ? v_[0] : v_[static_cast<size_t>(c)]; }
  bool perChannel() const { return v_.size() > 1; }

private:
  std::vector<double> v_;
};

} // namespace aicc
