// A small fork-join thread pool for the kernels: parallelFor(n, fn) runs fn(0..n-1) on the pool's
// threads plus the calling thread and returns when all are done.
//
// Latency matters more than idle CPU here: a model is a sequence of short parallel tasks (tens of
// microseconds each for a mobile network), and waking a sleeping thread costs a futex call plus,
// under a hypervisor, an IPI to a halted vCPU (50-100 us seen on KVM). So tasks are claimed with
// one atomic (no lock), and idle workers spin for kSpinMicros of wall time after their last task
// before they sleep on a condition variable. ONNX Runtime and OpenMP runtimes make
// the same trade.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace aicc::kernels {

class ThreadPool {
public:
  // numThreads counts the caller: ThreadPool(1) runs everything inline, ThreadPool(2) adds one
  // worker. pin (for a process running one model at a time on all its CPUs, as OpenVINO does by
  // default): when the process may use at least numThreads CPUs, worker i is bound to the i-th of
  // them and each thread that hands the pool a job to the first. Unpinned, the scheduler
  // sometimes left the caller and the worker on one vCPU for a whole process (Intel Xeon under
  // KVM, mlp at 2 threads: 7 of 30 processes ran at the 1-thread speed; pinned, 0 of 30).
  explicit ThreadPool(int numThreads, bool pin = false);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int numThreads() const { return int(workers_.size()) + 1; }

  // Runs fn(i) for every i in [0, n), each exactly once, on up to numThreads() threads. The first
  // exception thrown by fn is rethrown here after all tasks finished. Calls from inside fn, and
  // calls made while another thread's job holds the pool, run inline on the calling thread.
  void parallelFor(int64_t n, const std::function<void(int64_t)>& fn);

  static constexpr int kSpinMicros = 2000;

private:
  void workerLoop();
  void runTasks(uint32_t tag); // claims and runs tasks of the job tagged `tag`

  std::vector<std::thread> workers_;
  int callerCpu_ = -1; // pinned pools: the CPU of the threads that hand out jobs
  // The job: claim_ packs (tag << 32 | next index); a worker may claim only while the tag is the
  // one it joined, so a late worker never takes a task of the next job.
  std::atomic<uint64_t> claim_{0};
  std::atomic<uint32_t> epoch_{0}; // bumped per job (and at shutdown); workers wait on it
  std::atomic<int64_t> finished_{0};
  std::atomic<int> active_{0};   // workers inside runTasks
  std::atomic<int> sleepers_{0}; // workers asleep (or about to be) on wake_
  std::mutex sleepMu_;
  std::condition_variable wake_;
  std::atomic<bool> busy_{false};
  const std::function<void(int64_t)>* job_ = nullptr;
  const std::string* jobLabel_ = nullptr; // the submitting task's name, for traces
  inline static const std::string kUnnamed = "parallel chunk";
  // Atomic: a worker that joined the previous job late may read it while the next job is set up
  // (it then cannot claim: parallelFor closes the previous job's claims first).
  std::atomic<int64_t> jobSize_{0};
  std::mutex errMu_;
  std::exception_ptr error_;
  std::atomic<bool> stop_{false};
};

// fn(begin, end) over [0, n) in contiguous ranges, one per thread (at most n of them), or once
// inline when there is no pool, one thread, or `split` is false (too little work for a fork-join:
// each caller says where its threshold is).
inline void parallelRanges(ThreadPool* pool, int64_t n, bool split,
                           const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t T = pool && split ? std::min<int64_t>(pool->numThreads(), n) : 1;
  if (T <= 1) return fn(0, n);
  pool->parallelFor(T, [&](int64_t i) { fn(n * i / T, n * (i + 1) / T); });
}

} // namespace aicc::kernels
