#include "rt/memory.h"

#include "rt/error.h"

#include <atomic>

namespace aicc {

namespace {
std::atomic<int64_t> budget{0}, live{0};
} // namespace

void setMemoryBudget(int64_t bytes) { budget = bytes; }
int64_t memoryBudget() { return budget; }
int64_t trackedBytes() { return live; }

void reserveMemory(int64_t n, std::string_view what) {
  const int64_t now = live.fetch_add(n) + n, limit = budget;
  if (limit > 0 && now > limit) {
    live.fetch_sub(n);
    rt::raise(rt::format(
        "{}: {} bytes would exceed the memory budget of {} bytes ({} in use; --max-memory)", what,
        n, limit, now - n));
  }
}

void releaseMemory(int64_t n) { live.fetch_sub(n); }

MemoryReservation::MemoryReservation(int64_t n, std::string_view what) {
  reserveMemory(n, what);
  n_ = n;
}

MemoryReservation::~MemoryReservation() { live.fetch_sub(n_); }

MemoryReservation& MemoryReservation::operator=(MemoryReservation&& o) noexcept {
  if (this != &o) {
    live.fetch_sub(n_);
    n_ = o.n_;
    o.n_ = 0;
  }
  return *this;
}

} // namespace aicc
