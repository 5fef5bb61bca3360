#include "ops/helpers.h"

namespace aicc {

void registerElementwiseOps(OpRegistry& r) {
  (void)r;
}

} // namespace aicc
