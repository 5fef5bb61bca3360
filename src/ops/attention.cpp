#include "ops/helpers.h"

namespace aicc {

void registerAttentionOps(OpRegistry& r) {
  (void)r;
}

} // namespace aicc
