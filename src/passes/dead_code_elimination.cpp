#include "passes/dead_code_elimination.h"

namespace aicc {

// TEMPORARY placeholder: being implemented.
bool eliminateDeadCode(Model&) { return false; }

} // namespace aicc
