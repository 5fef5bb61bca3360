#include "ops/helpers.h"

namespace aicc {

void registerMiscOps(OpRegistry& r) {
  (void)r;
}

} // namespace aicc
