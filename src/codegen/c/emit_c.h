// Portable C99 code generation from the loop IR (docs/codegen-c.md).
//
// emitCFunctions turns loop Funcs into `static void` C functions with the exact scalar semantics
// of loop/scalar.h: integers wrap (computed on unsigned types), `/` and `%` truncate toward zero
// (C's own operators; helpers for non-constant divisors avoid C's undefined cases), f32
// arithmetic rounds per operation (plain float arithmetic; C99 with FLT_EVAL_METHOD 0, no
// -ffast-math), float min/max are fminf/fmaxf, math functions are computed in double and rounded
// to the expression's type (as the reference executor does), float->int casts saturate and map
// NaN to 0. Loop kinds are hints only: `parallel`, `vectorize(W)` and `unroll(U)` loops become
// plain serial loops carrying a comment. Only the helpers a function uses are emitted.
#pragma once

#include "codegen/c/micro_kernels_c.h"
#include "loop/ir.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace aicc::codegen {

// The C element type of a loop IR dtype (f32 -> "float", bool -> "uint8_t", ...); throws for
// types without a native C type (reduced floats, 4-bit types, strings).
std::string cTypeName(DType t);

// Accumulates generated C: functions and the helper definitions they need.
class CEmitter {
public:
  // Emits f as `static void <cName>(...)`: parameters in f's order, `in` buffers as `const T*`,
  // `out`/`temp` buffers as `T*`. Throws aicc::Error for constructs C cannot express here
  // (unsupported element types, calls to micro-kernels without a portable C implementation).
  void addFunction(const loop::Func& f, const std::string& cName);

  // The helpers used so far (inline functions), then the functions, in the order added.
  std::string helpers() const;
  const std::string& functions() const { return functions_; }
  // The micro-kernels called (callee names), for reports.
  const std::set<std::string>& microKernels() const { return microKernels_; }

private:
  std::set<std::string> helperKeys_; // which helpers are needed (ordered for determinism)
  std::vector<std::string> helperOrder_;
  std::set<std::string> microKernels_;
  std::string functions_;

  friend class FuncEmitter;
  void need(const std::string& key);
};

// A whole module as one C translation-unit fragment (helpers + functions named after the Funcs,
// prefixed with `prefix`): includes <math.h>/<stdint.h>, nothing else. For tests and tools.
std::string emitCModule(const loop::Module& m, const std::string& prefix = "k_");

// A C identifier made from an arbitrary name: non [A-Za-z0-9_] characters become '_'.
std::string cIdentifier(const std::string& name);

} // namespace aicc::codegen
