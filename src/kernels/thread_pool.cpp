#include "kernels/thread_pool.h"

#include "rt/trace.h"

#include <chrono>

#include <pthread.h>
#include <sched.h>

namespace aicc::kernels {

namespace {
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
thread_local const void* insideTask =
    nullptr; // the pool whose task runs here (nested calls inline)
} // namespace

namespace {
// Binds thread t to one CPU (best effort: a refused binding leaves it unpinned).
void bindTo(pthread_t t, int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  pthread_setaffinity_np(t, sizeof(one), &one);
}
thread_local const void* pinnedFor = nullptr; // the pool this thread was bound for
} // namespace

ThreadPool::ThreadPool(int numThreads, bool pin) {
  for (int i = 1; i < numThreads; ++i) workers_.emplace_back([this] { workerLoop(); });
  cpu_set_t allowed;
  if (!pin || workers_.empty() || sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (int(cpus.size()) < numThreads) return;
  for (size_t i = 0; i < workers_.size(); ++i) bindTo(workers_[i].native_handle(), cpus[i + 1]);
  callerCpu_ = cpus[0];
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  epoch_.fetch_add(1);
  {
    std::lock_guard lk(sleepMu_);
    wake_.notify_all();
  }
  for (auto& t : workers_) t.join();
}

void ThreadPool::runTasks(uint32_t tag) {
  const void* outer = insideTask;
  insideTask = this;
  for (;;) {
    uint64_t c = claim_.load(std::memory_order_acquire);
    if (uint32_t(c >> 32) != tag ||
        int64_t(c & 0xffffffffu) >= jobSize_.load(std::memory_order_acquire))
      break;
    if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel)) continue;
    try {
      const int64_t t0 = trace::on() ? trace::nowMicros() : 0;
      (*job_)(int64_t(c & 0xffffffffu));
      if (t0) trace::record(jobLabel_ ? *jobLabel_ : kUnnamed, "chunk", t0, trace::nowMicros());
    } catch (...) {
      std::lock_guard lk(errMu_);
      if (!error_) error_ = std::current_exception();
    }
    finished_.fetch_add(1, std::memory_order_acq_rel);
  }
  insideTask = outer;
}

void ThreadPool::workerLoop() {
  using Clock = std::chrono::steady_clock;
  uint32_t seen =
      0; // the epoch at construction (a late-starting thread must still see jobs and stop)
  for (;;) {
    // Spin for a while (checking the clock every 64 pauses), then sleep until the epoch moves.
    uint32_t e = epoch_.load(std::memory_order_acquire);
    if (e == seen) {
      const auto until = Clock::now() + std::chrono::microseconds(kSpinMicros);
      for (int i = 1; (e = epoch_.load(std::memory_order_acquire)) == seen; ++i) {
        cpuRelax();
        if ((i & 63) == 0 && Clock::now() > until) break;
      }
      if (e == seen) {
        // Dekker with parallelFor: sleepers_ is raised before the epoch is checked under the
        // lock; the caller moves the epoch before it reads sleepers_ (both sequentially
        // consistent), so either the caller notifies or this thread sees the new epoch.
        std::unique_lock lk(sleepMu_);
        sleepers_.fetch_add(1);
        wake_.wait(lk, [&] { return epoch_.load() != seen; });
        sleepers_.fetch_sub(1);
        e = epoch_.load();
      }
    }
    seen = e;
    if (stop_.load(std::memory_order_acquire)) return;
    active_.fetch_add(1, std::memory_order_acq_rel);
    // The job's fields were written before the epoch moved; its tag is the epoch's low bits.
    runTasks(e);
    active_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::parallelFor(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  bool expected = false;
  if (insideTask == this || workers_.empty() || n == 1 || n >= (int64_t(1) << 32) ||
      !busy_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  if (callerCpu_ >= 0 && pinnedFor != this) { // once per thread and pool
    bindTo(pthread_self(), callerCpu_);
    pinnedFor = this;
  }
  // The previous job waited for active_ == 0, but a worker that saw its epoch late may still
  // enter runTasks with its tag. Close that job's claims first (index past any size), so such a
  // worker cannot claim whatever it reads of the new job's size (ThreadSanitizer found it
  // reading jobSize_ while this thread wrote it: a task could have run twice).
  const uint32_t prev = epoch_.load(std::memory_order_relaxed);
  claim_.store(uint64_t(prev) << 32 | 0xffffffffu);
  job_ = &fn;
  jobLabel_ = trace::currentTask(); // names the chunks in a trace
  jobSize_.store(n, std::memory_order_release);
  finished_.store(0, std::memory_order_relaxed);
  const uint32_t tag = prev + 1;
  claim_.store(uint64_t(tag) << 32, std::memory_order_release);
  epoch_.store(tag);
  if (sleepers_.load() > 0) {
    std::lock_guard lk(sleepMu_);
    wake_.notify_all();
  }
  runTasks(tag);
  // Wait for the tasks other threads claimed, then for every worker to leave the job.
  for (int i = 1;
       finished_.load(std::memory_order_acquire) < n || active_.load(std::memory_order_acquire) > 0;
       ++i) {
    cpuRelax();
    if ((i & 1023) == 0) std::this_thread::yield();
  }
  std::exception_ptr err;
  {
    std::lock_guard lk(errMu_);
    err = error_;
    error_ = nullptr;
  }
  job_ = nullptr;
  busy_.store(false, std::memory_order_release);
  if (err) std::rethrow_exception(err);
}

} // namespace aicc::kernels
