#include "rt/parallel.h"

#include "kernels/thread_pool.h"
#include "rt/callees.h"
#include "rt/error.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace aicc::runtime {

namespace {

// The whole of s as a base-10 integer (surrounding spaces allowed), else nullopt.
std::optional<long long> wholeInt(const char* s) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s, &end, 10);
  while (end && *end == ' ') ++end;
  if (end == s || !end || *end || errno) return std::nullopt;
  return v;
}

// AICC_NUM_THREADS when set and valid (checkThreadsEnv reports an invalid one where errors can
// propagate; here, possibly under generated code, an invalid value falls back), else the cores.
int defaultThreads() {
  if (const char* env = std::getenv("AICC_NUM_THREADS"))
    if (auto n = wholeInt(env); n && *n >= 1 && *n <= kMaxThreads) return int(*n);
  return std::max(1u, std::thread::hardware_concurrency());
}

std::mutex poolMu;
std::unique_ptr<kernels::ThreadPool> pool;
int threads = 0;
std::optional<bool> pinThreads; // unset: AICC_PIN_THREADS

kernels::ThreadPool& getPool() {
  std::lock_guard<std::mutex> lock(poolMu);
  if (!pool) {
    if (threads <= 0) threads = defaultThreads();
    const char* env = std::getenv("AICC_PIN_THREADS");
    const bool pin = pinThreads.value_or(env && std::strcmp(env, "1") == 0);
    pool = std::make_unique<kernels::ThreadPool>(threads, pin);
  }
  return *pool;
}

} // namespace

void clearKernelCache(); // the cached kernels hold the pool

void checkThreadsEnv() {
  if (const char* env = std::getenv("AICC_NUM_THREADS")) {
    const auto n = wholeInt(env);
    AICC_RT_CHECK(n, "AICC_NUM_THREADS (worker threads): '{}' is not an integer", env);
    AICC_RT_CHECK(*n >= 1 && *n <= kMaxThreads,
                  "AICC_NUM_THREADS (worker threads): {} is out of range [1, {}]", *n, kMaxThreads);
  }
  if (const char* env = std::getenv("AICC_PIN_THREADS"))
    AICC_RT_CHECK(std::strcmp(env, "0") == 0 || std::strcmp(env, "1") == 0,
                  "AICC_PIN_THREADS (bind threads to CPUs): '{}' is not 0 or 1", env);
}

void setNumThreads(int n) {
  {
    std::lock_guard<std::mutex> lock(poolMu);
    threads = std::max(1, n);
    pool.reset();
  }
  clearKernelCache();
}

void setPinThreads(bool pin) {
  {
    std::lock_guard<std::mutex> lock(poolMu);
    pinThreads = pin;
    pool.reset();
  }
  clearKernelCache();
}

int numThreads() { return getPool().numThreads(); }

} // namespace aicc::runtime

extern "C" int32_t aicc_rt_parallel_for(aicc_rt_body_fn body, void** buffers, int64_t* captures,
                                        int64_t lo, int64_t hi) {
  int64_t n = hi - lo;
  if (n <= 0) return 0;
  auto& pool = aicc::runtime::getPool();
  int64_t chunks = std::min<int64_t>(n, int64_t(pool.numThreads()) * 4);
  if (chunks <= 1 || pool.numThreads() == 1) return body(buffers, captures, lo, hi);
  std::atomic<int32_t> err{0};
  pool.parallelFor(chunks, [&](int64_t c) {
    int64_t b = lo + n * c / chunks, e = lo + n * (c + 1) / chunks;
    if (b < e) err.fetch_or(body(buffers, captures, b, e));
  });
  return err.load();
}

namespace {
thread_local std::string lastError;
std::mutex kernelMu;
std::map<std::string, aicc::rt::KernelFn> kernelCache;
} // namespace

namespace aicc::runtime {
void clearKernelCache() {
  std::lock_guard<std::mutex> lock(kernelMu);
  kernelCache.clear();
}
} // namespace aicc::runtime

extern "C" const char* aicc_rt_last_error() { return lastError.c_str(); }

extern "C" void aicc_rt_clear_last_error() { lastError.clear(); }

extern "C" int32_t aicc_rt_call_kernel(const char* name, int64_t n, int64_t* slots,
                                       int32_t* kinds) {
  try {
    const aicc::rt::KernelFn* k;
    {
      std::lock_guard<std::mutex> lock(kernelMu);
      auto it = kernelCache.find(name);
      if (it == kernelCache.end()) {
        auto found = aicc::rt::builtinKernel(name, &aicc::runtime::getPool());
        AICC_RT_CHECK(found, "unknown micro-kernel @{}", name);
        it = kernelCache.emplace(name, std::move(*found)).first;
      }
      k = &it->second;
    }
    // Buffers are passed unbounded (generated code carries no extents; the verifier and the
    // lowering guarantee them).
    std::vector<aicc::rt::KernelArg> args(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      if (kinds[i] == 0) {
        args[i].isBuffer = true;
        args[i].ptr = reinterpret_cast<void*>(slots[i]);
      } else if (kinds[i] == 2) {
        args[i].f = std::bit_cast<double>(slots[i]);
        args[i].isFloat = true;
      } else {
        args[i].i = slots[i];
      }
    }
    (*k)(args);
    return 0;
  } catch (const std::exception& e) {
    if (lastError.empty()) lastError = std::string("call @") + name + ": " + e.what();
    return 2;
  }
}
