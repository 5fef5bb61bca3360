// Value comparison with ONNX's backend-test semantics: same kind, element type and shape; strings
// exactly; numbers |a - e| <= atol + rtol * |e|; NaN matches NaN, infinities match themselves.
#pragma once

#include "ops/op_def.h"

#include <optional>

namespace aicc {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

// nullopt when `actual` matches `expected`, else a one-line description of the first mismatch.
std::optional<std::string> compareValues(const RValue& expected, const RValue& actual, Tolerance tol = {});
std::optional<std::string> compareTensors(const Tensor& expected, const Tensor& actual, Tolerance tol = {});

} // namespace aicc
