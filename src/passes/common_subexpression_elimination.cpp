#include "passes/common_subexpression_elimination.h"

namespace aicc {

// TEMPORARY placeholder: being implemented.
bool eliminateCommonSubexpressions(Model&) { return false; }

} // namespace aicc
