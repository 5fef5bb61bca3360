// Text form of the graph IR. It is meant for people and parses back exactly (ir/parser.h):
// print(parse(print(m))) == print(m). Constants above `maxConstantElems` elements are printed
// elided (`<elided>`: dtype and shape kept, data dropped) unless `printConstants` is set.
// The grammar is documented in docs/ir.md.
#pragma once

#include "ir/graph.h"

#include <string>

namespace aicc {

struct PrintOptions {
  bool printConstants = false;     // print every constant's data
  int64_t maxConstantElems = 16;   // constants up to this size are always printed in full
};

std::string printModel(const Model& m, const PrintOptions& opts = {});
std::string printGraph(const Graph& g, const PrintOptions& opts = {});

} // namespace aicc
