// Loop IR -> LLVM IR. Each loop::Func becomes one LLVM function with a fixed ABI:
//
//   int32_t NAME(void** buffers)
//
// `buffers[i]` points at the first element of the Func's i-th buffer parameter (in declaration
// order). The result is 0 on success, 2 when a micro-kernel call failed, 1 when an integer division
// or remainder by zero happened (the reference executor reports an error there; the generated code
// computes a harmless value and reports it after the run).
//
// Semantics follow loop/scalar.h exactly: integers wrap (no nsw/nuw), `/` `%` truncate toward
// zero (INT_MIN / -1 wraps), floats round to their type after every operation (no contraction,
// no fast-math), min/max on floats are llvm.minnum/maxnum (fmin/fmax), float -> int casts are
// llvm.fptosi.sat/fptoui.sat, math functions are computed in double through libm and rounded
// (as the executor does) -- except f32 exp/sigmoid/tanh/erf, which are inline approximations
// within 2.3 ulp (vector_math.h) so that loops using them vectorize; the approximations use
// fmuladd, which may contract. Bool is i1 in registers and one byte in memory.
//
// Loops become basic blocks. `vectorize(W)` loops carry llvm.loop.vectorize.{enable,width}
// metadata plus llvm.loop.parallel_accesses (their iterations are independent by contract), so
// LLVM's loop vectorizer widens them and handles the tail. `unroll(U)` loops get
// llvm.loop.unroll.count. `parallel` loops are outlined into a body function
// `NAME.par<k>(void** buffers, i64* captures, i64 begin, i64 end)` and run through the thread
// pool (src/kernels/thread_pool.h) via the extern "C" trampoline `aicc_rt_parallel_for` (see
// runtime_symbols.h), when EmitOptions::parallel is set; otherwise they run serially.
//
// Micro-kernel calls `call @k(args)` become calls of the runtime trampoline
// `int32_t aicc_rt_call_kernel(const char* k, int64_t n, int64_t* slots, int32_t* kinds)`
// (src/runtime/parallel.h): one i64 slot per argument (buffer: element address; integer: value;
// float: the bits of a double), dispatched to the micro-kernel implementations of
// rt/callees.cpp. A failing kernel makes the function return 2 (message:
// aicc_rt_last_error()).
#pragma once

#include "loop/ir.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
} // namespace llvm

namespace aicc::codegen {

struct EmitOptions {
  bool parallel = true; // outline `parallel` loops and run them on the thread pool
};

// The ABI of an emitted function.
using LoopFnPtr = int32_t (*)(void** buffers);

// Initializes LLVM's native target, asm printer and parser once per process.
void initNativeTarget();

// Emits every Func of `m` into a new LLVM module. Throws aicc::Error for constructs not supported
// yet (reduced-float or sub-byte element types), naming the function.
std::unique_ptr<llvm::Module> emitModule(const loop::Module& m, llvm::LLVMContext& ctx,
                                         const EmitOptions& opts = {});
// Emits one Func into an existing module.
void emitFunc(const loop::Func& f, llvm::Module& mod, const EmitOptions& opts = {});

// Runs the standard O0..O3 pipeline (PassBuilder) on `mod` for target machine `tm` (sets the
// module's data layout and triple, and the functions' target-cpu/features).
void optimizeModule(llvm::Module& mod, llvm::TargetMachine& tm, int optLevel = 2);

// Whether the emitter supports element type t.
bool supportedDType(DType t);

// The module's textual IR (debugging, tests).
std::string printModule(const llvm::Module& mod);

} // namespace aicc::codegen
