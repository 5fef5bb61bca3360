// Parser for the text form printed by ir/printer.h. Errors give line:column and the reason.
// Ops are resolved against the op registry (unknown op -> error); elided constants parse into
// constants with dtype and shape but no data (they cannot be executed).
#pragma once

#include "ir/graph.h"

#include <string_view>

namespace aicc {

class OpRegistry;

struct ParseOptions {
  const OpRegistry* registry = nullptr; // nullptr: OpRegistry::instance()
  bool allowUnregistered = false;       // unknown ops parse with Node::def == nullptr
};

// Parses `model ... { graph ... }` or a bare `graph @name(...) {...}` (a model with no opsets).
Model parseModel(std::string_view text, const ParseOptions& opts = {});
// One type as printed ("f32[N,3]", "seq<string[?]>", "opt<i64[]>").
Type parseType(std::string_view text);

} // namespace aicc
