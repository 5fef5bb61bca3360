// The micro-kernels of src/kernels under the callee names the lowerings emit (`call @name(...)` in
// the loop IR): each name decodes to a kernel descriptor and a calling contract (rt/callees.cpp
// lists them). Generated code reaches them through aicc_rt_call_kernel (rt/parallel.h); the loop
// IR evaluator (loop/eval.h) calls them directly with bounded buffers.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace aicc::kernels {
class ThreadPool;
}

namespace aicc::rt {

// One argument of a call, in call order.
struct KernelArg {
  bool isBuffer = false;
  void* ptr = nullptr;         // buffers: the address of the first element passed
  int64_t bytes = INT64_MAX;   // buffers: the bytes available from ptr (unbounded from generated
                               // code, whose extents the verifier and the lowering guarantee)
  const char* dtype = nullptr; // buffers: element type name when known ("f32"), else null
  int64_t i = 0;               // integer value arguments
  double f = 0;                // float value arguments
  bool isFloat = false;
};
using KernelFn = std::function<void(std::vector<KernelArg>&)>;

// The kernel for callee `name`, running on `pool`'s threads when one is given; nullopt when
// `name` is not a callee or this CPU cannot run its kernel. Errors (bad arguments) throw
// aicc::Error naming the callee.
std::optional<KernelFn> builtinKernel(const std::string& name, kernels::ThreadPool* pool = nullptr);

} // namespace aicc::rt
