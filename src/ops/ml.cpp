#include "ops/helpers.h"

namespace aicc {

void registerMlOps(OpRegistry& r) {
  (void)r;
}

} // namespace aicc
