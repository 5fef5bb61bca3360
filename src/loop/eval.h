// The reference executor of the loop IR: interprets a Func on real buffers, with the scalar
// semantics of loop/scalar.h. It is the loop-level oracle: lowered code is checked against the
// graph interpreter through it, and generated native code can be checked against it.
// Parallel and vectorized loops run serially (their meaning is the serial loop's). Every load
// and store is bounds-checked (an out-of-range index is an error naming the statement).
#pragma once

#include "loop/ir.h"
#include "rt/callees.h"

#include <functional>
#include <map>
#include <optional>

namespace aicc::loop {

// A micro-kernel called by `call @name(...)`: receives buffer arguments as addresses with their
// bytes, and value arguments as integers/doubles, in call order (rt/callees.h).
using KernelArg = rt::KernelArg;
using ExternKernel = rt::KernelFn;

struct EvalOptions {
  std::map<std::string, ExternKernel> kernels; // callee name -> implementation
};

// Runs f with buffers bound by name. `in` buffers must be bound; `out` and `temp` buffers that
// are not bound are allocated (zero-filled) and added to `buffers`. A bound tensor must have the
// buffer's element type and element count.
void evaluate(const Func& f, std::map<std::string, Tensor>& buffers, const EvalOptions& opts = {});

} // namespace aicc::loop
