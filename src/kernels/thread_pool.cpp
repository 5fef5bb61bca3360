#include "kernels/thread_pool.h"

namespace aicc::kernels {

namespace {
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
constexpr int kSpinIterations = 4000; // roughly 50-100 us before a worker goes to sleep
} // namespace

ThreadPool::ThreadPool(int numThreads) {
  for (int i = 1; i < numThreads; ++i) workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
    ++epoch_;
    epochSpin_.store(epoch_, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

bool ThreadPool::runTasks() {
  bool ran = false;
  std::unique_lock lk(mu_);
  while (job_ && next_ < jobSize_) {
    const int64_t i = next_++;
    const auto* fn = job_;
    lk.unlock();
    std::exception_ptr err;
    try {
      (*fn)(i);
    } catch (...) {
      err = std::current_exception();
    }
    ran = true;
    lk.lock();
    if (err && !error_) error_ = err;
    if (++finished_ == jobSize_) done_.notify_all();
  }
  return ran;
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    for (int spin = 0; spin < kSpinIterations; ++spin) {
      if (epochSpin_.load(std::memory_order_acquire) != seen) break;
      cpuRelax();
    }
    {
      std::unique_lock lk(mu_);
      wake_.wait(lk, [&] { return stop_ || epoch_ != seen; });
      if (stop_) return;
      seen = epoch_;
    }
    runTasks();
  }
}

void ThreadPool::parallelFor(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  bool nested;
  {
    std::lock_guard lk(mu_);
    nested = inJob_;
    if (!nested && !workers_.empty() && n > 1) {
      inJob_ = true;
      job_ = &fn;
      jobSize_ = n;
      next_ = 0;
      finished_ = 0;
      error_ = nullptr;
      ++epoch_;
      epochSpin_.store(epoch_, std::memory_order_release);
    } else {
      nested = true; // run inline
    }
  }
  if (nested) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  wake_.notify_all();
  runTasks();
  std::exception_ptr err;
  {
    std::unique_lock lk(mu_);
    done_.wait(lk, [&] { return finished_ == jobSize_; });
    job_ = nullptr;
    inJob_ = false;
    err = error_;
    error_ = nullptr;
  }
  if (err) std::rethrow_exception(err);
}

} // namespace aicc::kernels
