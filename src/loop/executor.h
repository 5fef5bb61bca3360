// A first execution path through the loop IR: runs a graph node by node, each lowerable node
// (loop/lower.h) as its lowered Func on the reference loop executor (loop/eval.h), every other
// node through its reference kernel (an explicit fallback, counted in the stats). This makes
// the loop IR testable end to end against the graph interpreter before native codegen exists.
#pragma once

#include "loop/lower.h"
#include "ops/op_def.h"

namespace aicc::loop {

struct LoopRunStats {
  int64_t lowered = 0;                      // nodes run as loop IR
  int64_t fallback = 0;                     // nodes run with the interpreter's kernel
  std::vector<std::string> fallbackReasons; // "node: reason"
};

// Runs g (top level) with inputs bound by position to g.inputs; returns g.outputs in order.
std::vector<RValue> runLowered(const Graph& g, const std::vector<RValue>& inputs,
                               const LowerOptions& opts = {}, LoopRunStats* stats = nullptr);

} // namespace aicc::loop
