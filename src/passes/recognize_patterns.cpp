#include "passes/recognize_patterns.h"

namespace aicc {

// TEMPORARY placeholder: being implemented.
bool recognizePatterns(Model&) { return false; }

} // namespace aicc
