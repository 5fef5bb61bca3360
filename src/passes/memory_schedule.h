// Execution order for memory: liveness of every tensor, peak memory of an order, and a
// reordering that lowers the peak (never raises it).
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether the model changed.
bool scheduleForMemory(Model& m);

// Peak bytes of simultaneously live tensors when the main graph runs in its current node order
// (inputs and constants excluded: they live for the whole run). Unknown sizes count as 0.
int64_t peakMemoryBytes(const Graph& g);

} // namespace aicc
