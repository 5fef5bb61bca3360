// Execution order for memory: liveness of every tensor, peak memory of an order, and a
// reordering that lowers the peak (never raises it).
//
// Memory model (per graph, in its current node order):
//   - every node result is a tensor allocated when its node runs and freed after its last reader
//     runs (readers: nodes taking it as an input, or holding a subgraph that reads it); results
//     nobody reads are freed right after their node; graph outputs live until the end;
//   - graph inputs and constants are excluded (they live for the whole run);
//   - a tensor's size comes from its static type (numel * element size); sequences, strings and
//     tensors with a dynamic dim count as 0 bytes and are reported as unknown;
//   - memory while node i runs = sizes of the tensors alive at i (its inputs that are still live,
//     and its outputs); the peak is the maximum over the nodes. Intermediates inside subgraphs
//     (and inside aicc.Fused bodies) are not counted.
// scheduleForMemory reorders each graph (main graph and subgraphs) with greedy list schedulers
// (among the nodes whose producers have run, pick the one with the smallest net allocation:
// output bytes minus the input bytes it frees; ties by original position, or by most recently
// enabled) and keeps the best order only when its peak is strictly lower than the current one.
// Random (kNondeterministic) nodes keep their relative order.
#pragma once

#include "ir/graph.h"

#include <vector>

namespace aicc {

// Liveness of one node result of a graph.
struct TensorLiveness {
  const Value* value = nullptr;
  int64_t bytes = 0;  // 0 when unknown
  bool known = true;  // false: dynamic shape, sequence, string, ...
  size_t def = 0;     // index of the producing node
  size_t lastUse = 0; // index of the last node during which it is live
};

struct MemoryReport {
  std::vector<TensorLiveness> tensors; // node results, in definition order
  int64_t peakBytes = 0;
  size_t peakNode = 0;      // index of the node at which the peak is reached
  int64_t unknownSizes = 0; // results whose size is unknown (counted as 0)
};

// Liveness and peak of g in its current node order.
MemoryReport analyzeMemory(const Graph& g);

// Returns whether the model changed.
bool scheduleForMemory(Model& m);

// Peak bytes of simultaneously live tensors when the main graph runs in its current node order
// (inputs and constants excluded: they live for the whole run). Unknown sizes count as 0.
int64_t peakMemoryBytes(const Graph& g);

} // namespace aicc
