// A tiny fork-join thread pool for the kernels: parallelFor(n, fn) runs fn(0..n-1) on the pool's
// threads plus the calling thread and returns when all are done. Workers spin briefly after a job
// (cheap back-to-back kernels) and then sleep on a condition variable.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace aicc::kernels {

class ThreadPool {
public:
  // numThreads counts the caller: ThreadPool(1) runs everything inline, ThreadPool(2) adds one
  // worker.
  explicit ThreadPool(int numThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int numThreads() const { return int(workers_.size()) + 1; }

  // Runs fn(i) for every i in [0, n), each exactly once, on up to numThreads() threads. The first
  // exception thrown by fn is rethrown here after all tasks finished. Not reentrant: fn must not
  // call parallelFor on the same pool (nested calls run inline).
  void parallelFor(int64_t n, const std::function<void(int64_t)>& fn);

private:
  void workerLoop();
  bool runTasks(); // claims and runs tasks of the current job; true if it ran at least one

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_; // workers wait for a new job
  std::condition_variable done_; // the caller waits for the job's last task
  uint64_t epoch_ = 0;           // guarded by mu_ (plus the relaxed copy below for spinning)
  std::atomic<uint64_t> epochSpin_{0};
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t jobSize_ = 0, next_ = 0, finished_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
  bool inJob_ = false;
};

} // namespace aicc::kernels
