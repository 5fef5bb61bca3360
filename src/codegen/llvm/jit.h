// The ORC LLJIT engine for loop IR: emits a loop::Module to LLVM IR (emit_llvm.h), optimizes it
// for the host CPU (name and features from llvm::sys), compiles it in memory and hands out the
// entry points (int32_t fn(void** buffers), see emit_llvm.h for the ABI).
//
// Symbols: libm and the rest of the process are resolved through the process's dynamic symbol
// table; the runtime trampolines (aicc_rt_parallel_for, src/runtime/parallel.h) and any extra
// symbols given in JitOptions::symbols (micro-kernel wrappers) are registered explicitly.
#pragma once

#include "codegen/llvm/emit_llvm.h"

#include <map>
#include <memory>
#include <string>

namespace aicc::codegen {

struct JitOptions {
  int optLevel = 2; // 0..3
  EmitOptions emit;
  std::map<std::string, void*> symbols; // extra symbols (micro-kernel wrappers)
  bool keepIR = false;                  // keep the optimized IR text (irText())
};

class JitEngine {
public:
  explicit JitEngine(JitOptions opts = {});
  ~JitEngine();
  JitEngine(const JitEngine&) = delete;
  JitEngine& operator=(const JitEngine&) = delete;

  // Emits, optimizes and compiles every Func of m. Function names must be new to this engine.
  void addModule(const loop::Module& m);
  // The entry point of a Func added before; throws aicc::Error if unknown.
  LoopFnPtr lookup(const std::string& name);

  const std::string& irText() const { return ir_; } // optimized IR (keepIR)
  double compileSeconds() const { return compileSec_; } // emission + optimization + codegen
  std::string hostCpu() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  JitOptions opts_;
  std::string ir_;
  double compileSec_ = 0;
};

} // namespace aicc::codegen
