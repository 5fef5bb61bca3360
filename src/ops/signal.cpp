#include "ops/helpers.h"

namespace aicc {

void registerSignalOps(OpRegistry& r) {
  (void)r;
}

} // namespace aicc
