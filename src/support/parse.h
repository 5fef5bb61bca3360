// Checked number parsing for text that comes from users and files (flags, environment variables,
// .npy headers, ONNX external-data entries, plan and cache files): the whole text must be the
// number, or the caller gets nullopt / an aicc::Error naming what was being read. Never
// std::stoll, whose std::invalid_argument escapes as an "internal error" and which accepts
// trailing garbage ("12abc" -> 12).
#pragma once

#include "support/error.h"

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace aicc {

// Surrounding spaces are allowed; anything else must be part of the number.
inline std::string_view trimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

inline std::optional<int64_t> tryParseInt(std::string_view s) {
  s = trimSpaces(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

inline std::optional<double> tryParseFloat(std::string_view s) {
  s = trimSpaces(s);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// `what` names the text in the error: "--dim N", "AICC_NUM_THREADS", "'x.npy': shape".
inline int64_t parseInt(std::string_view s, std::string_view what, int64_t min = INT64_MIN,
                        int64_t max = INT64_MAX) {
  auto v = tryParseInt(s);
  AICC_CHECK(v, "{}: '{}' is not an integer", what, trimSpaces(s));
  AICC_CHECK(*v >= min && *v <= max, "{}: {} is out of range [{}, {}]", what, *v, min, max);
  return *v;
}

inline double parseFloat(std::string_view s, std::string_view what) {
  auto v = tryParseFloat(s);
  AICC_CHECK(v, "{}: '{}' is not a number", what, trimSpaces(s));
  return *v;
}

} // namespace aicc
