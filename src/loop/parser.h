// Parser for the loop IR text form (loop/printer.h, docs/loop-ir.md). Errors give line:column and
// the reason. The parser checks syntax only: scoping, typing and bounds are the verifier's job
// (loop/verifier.h), so invalid IR can be written down in tests. A variable not in scope parses
// as an i64 variable; a load from an undeclared buffer parses with type f32.
#pragma once

#include "loop/ir.h"

#include <string_view>

namespace aicc::loop {

Module parseModule(std::string_view text);
// One expression, with the given variables (name -> type) and buffers in scope.
ExprPtr parseExpr(std::string_view text, const std::map<std::string, DType>& vars = {},
                  const std::vector<Buffer>& buffers = {});

} // namespace aicc::loop
