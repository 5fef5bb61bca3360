// f32 transcendental functions as plain LLVM IR (arithmetic, selects, bit casts): no libm calls,
// so loops that use them vectorize. The argument may be a float or a vector of floats. Accuracy,
// checked against double-precision libm over their whole ranges (tests/unit/vector_math_test.cpp):
//   exp:     ~2 ulp; results below 2^-126 flush to 0 (no subnormals), overflow gives +inf
//   sigmoid: ~2.2 ulp  (1 / (1 + exp(-|x|)) with the sign trick)
//   tanh:    ~1.1 ulp  (odd polynomial for |x| < 0.625, else through exp)
//   erf:     ~2.3 ulp (odd polynomial for |x| < 0.5, else
//            1 - t * exp(-x^2 + P(t)) with t = 1 / (1 + |x| / 2))
// NaN propagates through all of them.
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace aicc::codegen {

llvm::Value* emitExpF32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* emitSigmoidF32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* emitTanhF32(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* emitErfF32(llvm::IRBuilder<>& b, llvm::Value* x);

} // namespace aicc::codegen
