// The reduction family (see reduction.cpp): Reduce*, Softmax-like ops, ArgMax/ArgMin, TopK, CumSum,
// Einsum and LpNormalization. registerReductionOps (ops/all_ops.h) calls the functions below.
#pragma once

#include "ir/tensor.h"

namespace aicc {
class OpRegistry;

// A shape seen as [outer, n, inner] around one (normalized) axis.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
inline AxisSplit splitAt(const Dims& shape, int64_t axis) {
  AxisSplit s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    int64_t v = shape[static_cast<size_t>(d)];
    if (d < axis)
      s.outer *= v;
    else if (d == axis)
      s.n = v;
    else
      s.inner *= v;
  }
  return s;
}

void registerReduceOps(OpRegistry& r);         // reduction.cpp: ReduceSum, ReduceMean, ...
void registerSoftmaxOps(OpRegistry& r);        // reduction_softmax.cpp: Softmax, LogSoftmax,
                                               // Hardmax, LpNormalization
void registerIndexReductionOps(OpRegistry& r); // reduction_index.cpp: ArgMax, ArgMin, TopK, CumSum
void registerEinsumOp(OpRegistry& r);          // reduction_einsum.cpp: Einsum
} // namespace aicc
