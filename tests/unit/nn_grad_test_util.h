// Shared bits of the nn gradient-rule tests (tests/unit/nn_*grad_test.cpp).
#pragma once

#include "grad_check.h"
#include "support/error.h"

#include <gtest/gtest.h>

namespace aicc::test {

inline constexpr double kTol = 1e-6;

inline Tensor rnd(Dims shape, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  return randomTensor(std::move(shape), seed, lo, hi);
}
inline Tensor scalarT(double v, DType dt = DType::F64) { return Tensor::scalar(dt, v); }
inline Tensor boolT(bool v) {
  Tensor t(DType::Bool, {});
  t.data<bool>()[0] = v;
  return t;
}
inline Tensor i64T(const std::vector<int64_t>& v, Dims shape) {
  return Tensor::fromI64(v, std::move(shape));
}
inline Attribute ints(std::vector<int64_t> v) { return Attribute{std::move(v)}; }
inline Attribute i(int64_t v) { return Attribute{v}; }
inline Attribute s(const char* v) { return Attribute{std::string(v)}; }
inline Attribute f(float v) { return Attribute{v}; }

} // namespace aicc::test
