// Text form of the loop IR (grammar in docs/loop-ir.md). It parses back exactly
// (loop/parser.h): print(parse(print(m))) == print(m), and the parsed module is structurally
// identical to the printed one (float immediates down to their bits).
#pragma once

#include "loop/ir.h"

#include <string>

namespace aicc::loop {

std::string printModule(const Module& m);
std::string printFunc(const Func& f);
std::string printExpr(const ExprPtr& e);
std::string printBlock(const Block& b, int indent = 0);
std::string printSchedule(const Schedule& s); // "{tile = [32, 64], vector_width = 16}"
std::string printAttrValue(const AttrValue& v);

// `%name`, quoted when the name is not [A-Za-z_][A-Za-z0-9_]*.
std::string varName(const std::string& n);

} // namespace aicc::loop
