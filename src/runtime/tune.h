// `aicc tune`: measures the applicable candidates of every node with a choice (Conv, Gemm,
// MatMul and their fused epilogues) on this machine and records them in a tuning cache
// (backend/tuning.h). Each candidate runs as a one-node graph through the JIT (the same lowering
// and micro-kernels as a compiled model), on constant weights and generated activations: a
// warm-up run, then the median of `reps` runs. Nodes are visited most expensive first (by the
// cost model) until the time budget is spent; equal signatures are measured once; candidates
// whose estimate is over `skipFactor` times the best estimate are not timed (listed as skipped).
#pragma once

#include "backend/target.h"
#include "backend/tuning.h"
#include "ir/graph.h"

#include <functional>
#include <string>

namespace aicc::runtime {

struct TuneOptions {
  double budgetSeconds = 20;
  int reps = 5;
  double skipFactor = 20;
  std::function<void(const std::string&)> log; // one line per measured node (optional)
};

struct TuneSummary {
  int nodes = 0, measured = 0, skippedForBudget = 0, candidatesTimed = 0;
  int changed = 0; // measured choice differs from the cost model's
  double seconds = 0;
};

// Measures g's nodes into `cache` (existing records are kept unless re-measured). The cache's
// target is set to formatTarget(t).
TuneSummary tuneGraph(const Graph& g, const Target& t, backend::TuningCache& cache,
                      const TuneOptions& o = {});

// Median seconds of one run of node n lowered with `candidate` (JIT, one-node graph).
double timeCandidate(const Node& n, const std::string& candidate, int reps);

} // namespace aicc::runtime
