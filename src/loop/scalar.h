// Scalar semantics of the loop IR operators, in one place: the reference executor (loop/eval.h)
// and the simplifier's constant folding both use these, so folding never disagrees with
// execution. A Scalar holds an integer/bool value in `i` (wrapped to its type's width; u64 as
// its bit pattern) or a float value in `f` (exactly representable in its type).
#pragma once

#include "loop/ir.h"

#include <optional>

namespace aicc::loop {

struct Scalar {
  int64_t i = 0;
  double f = 0;
};

// Wraps an integer to t's width (bool: 0/1) or rounds a float to t.
Scalar normalize(DType t, Scalar v, bool saturate = true); // saturate: float8 (Cast's)
// a op b for operands of type t (the result has type t, or bool for comparisons/logic).
// nullopt: integer division or remainder by zero.
std::optional<Scalar> applyBinary(Op op, DType t, Scalar a, Scalar b);
// Neg and Not.
Scalar applyUnary(Op op, DType t, Scalar a);
// Conversion; float -> integer saturates and maps NaN to 0 (like llvm.fptosi.sat).
Scalar applyCast(DType to, DType from, Scalar a, bool saturate = true);
// a's bits as `to` (Op::Bitcast: bitcastable types of one width).
Scalar applyBitcast(DType to, DType from, Scalar a);
// A math function on float arguments of type t.
Scalar applyCall(const std::string& fn, DType t, const std::vector<Scalar>& args);
// The value as a double / as a truth value.
double toDouble(DType t, Scalar v);
bool truthy(DType t, Scalar v);

} // namespace aicc::loop
