#include "passes/memory_schedule.h"

namespace aicc {

// TEMPORARY placeholder: being implemented.
bool scheduleForMemory(Model&) { return false; }
int64_t peakMemoryBytes(const Graph&) { return 0; }

} // namespace aicc
