#include "passes/algebraic_simplify.h"

namespace aicc {

// TEMPORARY placeholder: being implemented.
bool simplifyAlgebra(Model&) { return false; }

} // namespace aicc
