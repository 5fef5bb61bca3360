// Runtime support called by generated code. `parallel` loops are outlined by the LLVM emitter into
// a body function over a sub-range and run through aicc_rt_parallel_for, which splits [lo, hi)
// into chunks on the runtime's thread pool (src/kernels/thread_pool.h).
#pragma once

#include <cstdint>

extern "C" {
using aicc_rt_body_fn = int32_t (*)(void** buffers, int64_t* captures, int64_t begin, int64_t end);
// Runs body over [lo, hi) in chunks; returns the OR of the bodies' results.
int32_t aicc_rt_parallel_for(aicc_rt_body_fn body, void** buffers, int64_t* captures, int64_t lo,
                             int64_t hi);
// Runs micro-kernel `name` (loop/eval.h builtinKernel) on n arguments: kinds[i] 0 = buffer
// (slots[i] = element address), 1 = integer, 2 = float (double bits). Returns 0, or 2 on error
// (the message is kept for aicc_rt_last_error()). Generated code runs on after a failed call (its
// indices are clamped) and returns the OR of the results: the first failure's message is kept
// until aicc_rt_clear_last_error (before each task), the root cause rather than what followed.
int32_t aicc_rt_call_kernel(const char* name, int64_t n, int64_t* slots, int32_t* kinds);
const char* aicc_rt_last_error();
void aicc_rt_clear_last_error();
}

namespace aicc::runtime {

// Threads used by generated code (counting the caller). Default: AICC_NUM_THREADS, else the
// hardware concurrency. Not to be changed while generated code runs.
void setNumThreads(int n);
int numThreads();
constexpr int kMaxThreads = 1024;
// Whether the pool binds its threads to CPUs (kernels::ThreadPool's `pin`: for a process running
// one model at a time on all its CPUs). Default: AICC_PIN_THREADS=1, else off. Not to be changed
// while generated code runs.
void setPinThreads(bool pin);
// Throws aicc::Error when AICC_NUM_THREADS is set but not an integer in [1, kMaxThreads], or
// AICC_PIN_THREADS is set but not 0 or 1; the engines call it when a model is loaded or compiled,
// where an error can reach the user.
void checkThreadsEnv();

} // namespace aicc::runtime
