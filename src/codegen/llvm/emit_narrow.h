// Narrow float storage for the LLVM emitter (codegen/llvm/emit_llvm.cpp): f16 and bf16 (16
// bits), float8 and float4 (a code per byte) are held as f32 in registers. widenNarrow turns a
// stored pattern into its exact f32 value; narrowFloat rounds an f32 to the type's pattern, as
// ir/dtype.cpp defines it (f16 / bf16 to nearest even with a quieted NaN; float8 / float4 with
// saturation, ONNX Cast's default). The emitter rounds every computed value of such a type with
// the pair, so each op rounds its result as the reference kernels do.
#pragma once

#include "ir/dtype.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

namespace aicc::codegen {

// f16, bf16, and the byte-sized float8 / float4 (ir/dtype.h's isByteFloat); not float8e8m0.
bool isReduced(DType t);
llvm::Value* widenNarrow(llvm::IRBuilder<>& b, llvm::Module& m, DType t, llvm::Value* bits);
// saturate = false (float8): values past the largest finite one become inf, or NaN for the types
// without inf (ONNX Cast's saturate = 0).
llvm::Value* narrowFloat(llvm::IRBuilder<>& b, llvm::Module& m, DType t, llvm::Value* f,
                         bool saturate = true);

} // namespace aicc::codegen
