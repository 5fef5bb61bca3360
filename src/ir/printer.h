// Text form of the graph IR. It is meant for people and parses back exactly (ir/parser.h):
// print(parse(print(m))) == print(m). Constants above `maxConstantElems` elements are printed
// elided (`<elided>`: dtype and shape kept, data dropped) unless `printConstants` is set.
// The grammar is documented in docs/ir.md.
#pragma once

#include "ir/graph.h"

#include <string>
#include <string_view>

namespace aicc {

struct PrintOptions {
  bool printConstants = false;   // print every constant's data
  int64_t maxConstantElems = 16; // constants up to this size are always printed in full
};

std::string printModel(const Model& m, const PrintOptions& opts = {});
std::string printGraph(const Graph& g, const PrintOptions& opts = {});

// Pieces of the text form, shared with the parser and usable in messages.
std::string printType(const Type& t);           // like formatType, but symbols quoted when needed
std::string quoteString(std::string_view s);    // "..." with C-style escapes
std::string printValueName(std::string_view s); // %name or %"odd name"
// A tensor literal: `f32[2,2] [1, 2.5, -0, inf]` (every element, exactly).
std::string printTensorLiteral(const Tensor& t);

namespace text {
// Value and graph names print bare after % / @ when they match [A-Za-z0-9_.]+, else quoted.
bool isBareName(std::string_view s);
// Shape symbols and attribute names print bare when they match [A-Za-z_][A-Za-z0-9_.]*.
bool isBareSymbol(std::string_view s);
} // namespace text

} // namespace aicc
