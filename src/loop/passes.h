// Loop IR passes and their pass-manager integration: IrTraits<loop::Module> plugs the loop IR
// into passes/pass_manager.h, so the graph level's instrumentation (print after pass, timing,
// stop-after, verify-each, reproducer files) works unchanged at this level.
#pragma once

#include "loop/ir.h"
#include "passes/pass_manager.h"

#include <string>
#include <vector>

namespace aicc {

template <> struct IrTraits<loop::Module> {
  static std::string print(const loop::Module& m);
  static void verify(const loop::Module& m);
};

namespace loop {

using LoopPass = Pass<Module>;

struct LoopPassInfo {
  std::string name;
  std::string summary;
};

// Every loop pass.
const std::vector<LoopPassInfo>& loopPasses();
// The pass called `name`; throws naming the known passes when there is none.
LoopPass makeLoopPass(const std::string& name);
// The default loop pipeline (simplify to a fixed point).
std::vector<LoopPass> defaultLoopPipeline();

// Schedule transformations (also used by the passes):
// Unrolls every `unroll(U)` loop with constant bounds: fully when its trip count is <= U,
// else by U when U divides the trip count (the copies of the body sit in a serial loop over
// the trip count / U). Returns whether anything changed.
bool unrollLoops(Func& f);
// Splits the loop over `var` into an outer loop over blocks of `factor` and an inner loop of
// `factor` iterations (a guard `if` covers a partial last block). The inner loop takes the old
// loop's kind; the outer one is serial, or parallel if the old loop was.
bool splitLoop(Func& f, const std::string& var, int64_t factor);

} // namespace loop
} // namespace aicc
