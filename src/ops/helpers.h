// Small shared pieces for op definitions: axis handling, broadcasting (static and symbolic),
// generic elementwise maps and common inference rules.
#pragma once

#include "ops/op_def.h"

#include <functional>

namespace aicc {

// Normalizes a possibly negative axis into [0, rank); throws when out of range.
int64_t normAxis(int64_t axis, int64_t rank);
std::vector<int64_t> normAxes(std::vector<int64_t> axes, int64_t rank);

Dims stridesOf(const Dims& shape);

// Numpy-style multidirectional broadcasting; throws naming both shapes when incompatible.
Dims broadcastDims(const Dims& a, const Dims& b);
// The same over symbolic shapes: equal symbols broadcast to themselves, a symbol against 1 stays
// the symbol, a symbol against a static d > 1 becomes d; unknown otherwise.
Shape broadcastShape(const Shape& a, const Shape& b);

// Maps flat indices of a broadcast result back to flat indices of one operand.
class BroadcastIndexer {
public:
  BroadcastIndexer(const Dims& in, const Dims& out);
  int64_t operator()(int64_t outIndex) const;

private:
  Dims outShape_, inStrides_; // inStrides_ has 0 for broadcast dims, aligned to out's rank
};

// out[i] = f(x[i]) computed in double, stored as `outType` (Undefined = x's type).
Tensor mapUnary(const Tensor& x, const std::function<double(double)>& f, DType outType = DType::Undefined);
// out = f(a, b) with broadcasting, computed in double.
Tensor mapBinary(const Tensor& a, const Tensor& b, const std::function<double(double, double)>& f,
                 DType outType = DType::Undefined);
// The same with exact 64-bit integer arithmetic.
Tensor mapBinaryI64(const Tensor& a, const Tensor& b, const std::function<int64_t(int64_t, int64_t)>& f,
                    DType outType = DType::Undefined);

// Inference: output 0 has the type of input 0.
void inferSameAsInput0(InferCtx& c);
// Inference: output 0 is the broadcast of all inputs' shapes, element type `dt` (Undefined =
// input 0's element type).
void inferBroadcast(InferCtx& c, DType dt = DType::Undefined);

// Checks that input `i` has one of the element types in `allowed`, naming the op and dtype.
void requireDType(const KernelCtx& c, size_t i, std::initializer_list<DType> allowed);

} // namespace aicc
