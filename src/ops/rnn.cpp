#include "ops/helpers.h"

namespace aicc {

void registerRnnOps(OpRegistry& r) {
  (void)r;
}

} // namespace aicc
