// A process-wide memory budget (`aicc ... --max-memory SIZE`, AICC_MAX_MEMORY, or
// aicc_set_max_memory): the bytes held by tensors (the interpreter's values, constants, inputs) and
// by the compiled engines' arenas, scratch and weights are counted, and an allocation that would
// take the live total over the budget fails with an aicc::Error naming what was being allocated,
// before it is made, instead of the process being killed by the OOM killer (or swapping) on a
// hostile or mistaken model. No budget (0) by default.
#pragma once

#include <cstdint>
#include <string_view>

namespace aicc {

void setMemoryBudget(int64_t bytes); // 0: unlimited
int64_t memoryBudget();
int64_t trackedBytes(); // live now

// Counts n bytes against the budget (throws aicc::Error naming `what` and the budget when they do
// not fit); releaseMemory gives them back.
void reserveMemory(int64_t n, std::string_view what);
void releaseMemory(int64_t n);

// Counts n bytes against the budget for its lifetime; throws aicc::Error naming `what` and the
// budget when they do not fit.
class MemoryReservation {
public:
  MemoryReservation() = default;
  MemoryReservation(int64_t n, std::string_view what);
  ~MemoryReservation();
  MemoryReservation(MemoryReservation&& o) noexcept : n_(o.n_) { o.n_ = 0; }
  MemoryReservation& operator=(MemoryReservation&& o) noexcept;
  MemoryReservation(const MemoryReservation&) = delete;
  MemoryReservation& operator=(const MemoryReservation&) = delete;

private:
  int64_t n_ = 0;
};

} // namespace aicc
