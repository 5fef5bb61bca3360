// Errors: library code never aborts; it throws aicc::Error with context (node, op, tensor, shape),
// and the CLI turns it into one line on stderr and a non-zero exit.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rt/error.h" // aicc::Error

#include <string>

namespace aicc {

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

} // namespace aicc

// AICC_CHECK(cond, "fmt", args...): throws aicc::Error with the formatted message when cond is false.
#define AICC_CHECK(cond, ...)                                                                      \
  do {                                                                                             \
    if (!(cond)) ::aicc::fail(__VA_ARGS__);                                                        \
  } while (0)
