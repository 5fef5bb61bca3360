// Parser for the text form printed by ir/printer.h. Errors give line:column and the reason.
// Ops are resolved against the op registry (unknown op -> error); elided constants parse into
// constants with dtype and shape but no data (they cannot be executed).
#pragma once

#include "ir/graph.h"

#include <string_view>

namespace aicc {

Model parseModel(std::string_view text);

} // namespace aicc
