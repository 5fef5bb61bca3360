// Helpers shared by the memory planner's files (not a public interface).
#pragma once

#include "ir/graph.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace aicc::memplan {

// Reshape/Squeeze/Unsqueeze/Flatten/Identity (ai.onnx) with its data input and one output.
bool isViewNode(const Node& n);
// One output, and a kElementwise op or an aicc.Fused whose body holds only kElementwise ops.
bool isElementwiseNode(const Node& n);
// The byte offsets of a Concat's inputs in its result when they are contiguous ranges of it (the
// dims before the axis all 1, static sizes); empty otherwise.
std::vector<int64_t> concatOffsets(const Node& n);
using aicc::staticBytes; // (ir/graph.h)
// Constants of g and of its subgraphs (depth first).
void collectConstants(const Graph& g, std::vector<const Value*>& out);
std::string human(int64_t bytes); // "1.25 MiB"

} // namespace aicc::memplan
