// Errors of the runtime (libaicc_rt): the one exception type of aicc, and a small "{}" formatter so
// that the runtime needs no formatting library. Library code never aborts; it throws aicc::Error
// with context (file, task, node, input, kernel); the C API turns it into a status and a message.
// The compiler's support/error.h adds fmt-based formatting on top of the same Error.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace aicc {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

namespace rt {

// Appends one argument as text ("{}" in rt::format).
void appendArg(std::string& out, std::string_view s);
void appendArg(std::string& out, long long v);
void appendArg(std::string& out, unsigned long long v);
void appendArg(std::string& out, double v);
inline void appendArg(std::string& out, const char* s) {
  appendArg(out, std::string_view(s ? s : "(null)"));
}
inline void appendArg(std::string& out, const std::string& s) {
  appendArg(out, std::string_view(s));
}
inline void appendArg(std::string& out, char c) { out += c; }
inline void appendArg(std::string& out, bool b) { out += b ? "true" : "false"; }
template <typename T>
requires std::is_integral_v<T>
void appendArg(std::string& out, T v) {
  if constexpr (std::is_signed_v<T>)
    appendArg(out, static_cast<long long>(v));
  else
    appendArg(out, static_cast<unsigned long long>(v));
}
inline void appendArg(std::string& out, float v) { appendArg(out, double(v)); }

// Copies `f` up to its next "{}" into out and returns the rest after it (all of f if none).
std::string_view appendUntilHole(std::string& out, std::string_view f);

// format("input '{}': {} bytes", name, n): each "{}" takes the next argument (no format specs).
template <typename... Args> std::string format(std::string_view f, const Args&... args) {
  std::string out;
  ((f = appendUntilHole(out, f), appendArg(out, args)), ...);
  out += f;
  return out;
}

[[noreturn]] void raise(std::string msg);

// Dims as messages print them: "[2,3]".
std::string dimsText(const std::vector<int64_t>& dims);

} // namespace rt
} // namespace aicc

// AICC_RT_CHECK(cond, "fmt with {}", args...): throws aicc::Error with the message when cond is
// false.
#define AICC_RT_CHECK(cond, ...)                                                                   \
  do {                                                                                             \
    if (!(cond)) ::aicc::rt::raise(::aicc::rt::format(__VA_ARGS__));                               \
  } while (0)
