// The C99 bundle of a whole model (docs/codegen-c.md): model.c (kernels, static arena, task
// sequence, C API), model.h (the API and the inputs'/outputs' names, types and shapes) and
// model.weights (the read-only weight blob, read by model_init from a file path).
//
// Input: a graph (after the graph pipeline), its memory plan (backend/memory_plan.h) and the
// lowerings of its nodes (loop/lower.h). Every node must lower (or be a view the plan turned
// into a no-op): otherwise emitCBundle fails listing every node that does not, with its op and
// the reason. The bundle needs libc and libm only (micro-kernel calls get portable C versions).
#pragma once

#include "backend/memory_plan.h"
#include "ir/graph.h"
#include "loop/lower.h"

#include <string>
#include <vector>

namespace aicc::codegen {

struct CBundleOptions {
  std::string prefix = "model"; // API prefix and file names: model.c, model_init, ...
  loop::LowerOptions lower;
  // Weights as a const array in <prefix>_weights.c (flash / rodata on a microcontroller) instead
  // of a file read by <prefix>_init: the bundle then uses no stdio at all (and never malloc).
  bool embedWeights = false;
};

struct CBundle {
  std::string prefix;
  std::string source;  // <prefix>.c
  std::string header;  // <prefix>.h
  std::string weights; // <prefix>.weights (raw bytes, plan offsets); empty when embedded
  std::string weightsSource; // <prefix>_weights.c when embedded
  int64_t arenaBytes = 0, scratchBytes = 0;
  int64_t kernels = 0;                   // C functions emitted (one per lowered node)
  int64_t noOps = 0;                     // view nodes with no code
  std::vector<std::string> microKernels; // callees with portable implementations used
};

CBundle emitCBundle(const Graph& g, const MemoryPlan& plan, const CBundleOptions& opts = {});
// Writes <dir>/<prefix>.c, .h and .weights or _weights.c (creating dir).
void writeCBundle(const CBundle& b, const std::string& dir);

} // namespace aicc::codegen
