// The reference executor of the loop IR: interprets a Func on real buffers, with the scalar
// semantics of loop/scalar.h. It is the loop-level oracle: lowered code is checked against the
// graph interpreter through it, and generated native code can be checked against it.
// Parallel and vectorized loops run serially (their meaning is the serial loop's). Every load
// and store is bounds-checked (an out-of-range index is an error naming the statement).
#pragma once

#include "loop/ir.h"

#include <functional>
#include <map>
#include <optional>

namespace aicc::kernels {
class ThreadPool;
}

namespace aicc::loop {

// A micro-kernel called by `call @name(...)`: receives buffer arguments as (tensor, element
// offset) and value arguments as doubles/ints, in call order.
struct KernelArg {
  Tensor* buffer = nullptr; // buffer arguments
  int64_t offset = 0;
  int64_t i = 0; // integer value arguments
  double f = 0;  // float value arguments
  bool isFloat = false;
};
using ExternKernel = std::function<void(std::vector<KernelArg>&)>;

struct EvalOptions {
  std::map<std::string, ExternKernel> kernels; // callee name -> implementation
};

// The micro-kernels of src/kernels under the callee names the lowerings emit (see
// loop/lower_kernels.cpp for the contracts); nullopt when `name` is not one of them or this CPU
// cannot run it. `evaluate` uses them for calls that EvalOptions::kernels does not name.
// The kernels run on `pool`'s threads when one is given.
std::optional<ExternKernel> builtinKernel(const std::string& name,
                                          kernels::ThreadPool* pool = nullptr);

// Runs f with buffers bound by name. `in` buffers must be bound; `out` and `temp` buffers that
// are not bound are allocated (zero-filled) and added to `buffers`. A bound tensor must have the
// buffer's element type and element count.
void evaluate(const Func& f, std::map<std::string, Tensor>& buffers, const EvalOptions& opts = {});

} // namespace aicc::loop
