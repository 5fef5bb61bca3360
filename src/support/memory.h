// The memory budget (rt/memory.h) as the compiler's tools use it: sizes parsed from flags, and the
// process's peak resident set for the reports.
#pragma once

#include "rt/memory.h"

#include <cstdint>
#include <string_view>

namespace aicc {

// "512M", "4G", "1.5GiB", "1000000": bytes (K/M/G/T are powers of 1024). Throws naming `what`.
int64_t parseByteSize(std::string_view text, std::string_view what);

// The peak resident set size of this process so far (getrusage), in bytes.
int64_t peakRssBytes();

} // namespace aicc
