// Graph passes by name, and the -O pipelines (flat, commented lists in pipelines.cpp).
#pragma once

#include "ir/graph.h"
#include "passes/pass_manager.h"
#include "passes/size_predicates.h"

#include <memory>
#include <string>
#include <vector>

namespace aicc {

template <> struct IrTraits<Model> {
  static std::string print(const Model& m);
  static void verify(const Model& m);
};

using GraphPass = Pass<Model>;

struct GraphPassOptions {
  // Constant folding produces at most this many elements per folded value (bigger results
  // would bloat the weights; they stay computed at run time).
  int64_t constantFoldLimit = int64_t{1} << 20;
  // The target's blocked activation layout (16: NCHW16c, passes/assign_layout.h), 0 for none:
  // the pipeline runs assign-layout only for targets whose convolution kernels take it.
  int64_t layoutBlock = 0;
  // The symbols' ranges (a compile's, passes/size_predicates.h): conditions on the sizes that
  // have one value over them fold. Empty: none fold.
  std::vector<SizeRange> sizeRanges;
  // Where fold-size-predicates leaves the first condition that changes over them (after the
  // cleanup, before fusion merges the conditions' nodes), when set.
  std::shared_ptr<std::optional<SizeSplit>> sizeSplit;
};

struct GraphPassInfo {
  std::string name;
  std::string summary;
};

// Every graph pass, in the order of the -O3 pipeline.
const std::vector<GraphPassInfo>& graphPasses();
// The pass called `name`; throws naming the known passes when there is none.
GraphPass makeGraphPass(const std::string& name, const GraphPassOptions& opts = {});
// The pipeline of optimization level 0..3.
std::vector<GraphPass> optPipeline(int level, const GraphPassOptions& opts = {});

} // namespace aicc
