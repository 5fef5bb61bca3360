#include "passes/fuse_elementwise.h"

namespace aicc {

// TEMPORARY placeholder: being implemented.
bool fuseElementwise(Model&) { return false; }

} // namespace aicc
