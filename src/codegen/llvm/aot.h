// Ahead-of-time compilation of loop IR: the same emission and optimization as the JIT
// (emit_llvm.h, optimizeModule), written as a relocatable ELF object for a Target.
//
// The object needs nothing from the process that loads it but libc/libm: its calls of the runtime
// entry points (aicc_rt_call_kernel, aicc_rt_parallel_for: src/runtime/parallel.h) go through a
// table the loader fills in once, by calling the exported
//   void aicc_artifact_bind(void* const* table)   // table[0] = call_kernel, [1] = parallel_for
// before the first task runs (src/runtime/artifact.cpp). It also exports
//   const char aicc_artifact_signature[]   // "fn bytes0/elem0 bytes1/elem1 ...\n" per function
// the byte size and element size of every parameter of every task function, which the loader
// checks the plan's bindings against (size, and offset alignment).
#pragma once

#include "backend/target.h"
#include "loop/ir.h"

#include <string>

namespace aicc::codegen {

struct AotOptions {
  int optLevel = 2;
  bool parallel = true;
};

// The object file bytes for every Func of m, compiled for `target` (native: this CPU's name and
// features; x86-64-avx2 / -avx512 / generic: baseline x86-64 plus the target's features).
std::string emitObject(const loop::Module& m, const Target& target, const AotOptions& o = {});

// The LLVM CPU name and feature string used for `target`.
std::pair<std::string, std::string> llvmCpuFor(const Target& target);

} // namespace aicc::codegen
