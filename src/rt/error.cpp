#include "rt/error.h"

#include <cstdio>

namespace aicc::rt {

void appendArg(std::string& out, std::string_view s) { out.append(s.data(), s.size()); }

void appendArg(std::string& out, long long v) { out += std::to_string(v); }

void appendArg(std::string& out, unsigned long long v) { out += std::to_string(v); }

void appendArg(std::string& out, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  out += buf;
}

std::string_view appendUntilHole(std::string& out, std::string_view f) {
  const size_t at = f.find("{}");
  if (at == std::string_view::npos) {
    out.append(f.data(), f.size());
    return {};
  }
  out.append(f.data(), at);
  return f.substr(at + 2);
}

void raise(std::string msg) { throw Error(msg); }

std::string dimsText(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

} // namespace aicc::rt
