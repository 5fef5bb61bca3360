#include "support/memory.h"

#include "support/error.h"
#include "support/parse.h"

#include <cctype>

#include <sys/resource.h>

namespace aicc {

int64_t parseByteSize(std::string_view text, std::string_view what) {
  std::string_view s = trimSpaces(text);
  size_t unitAt = s.size();
  while (unitAt > 0 && std::isalpha(static_cast<unsigned char>(s[unitAt - 1]))) --unitAt;
  std::string unit(s.substr(unitAt));
  for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB")
    scale = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB")
    scale = 1024.0 * 1024 * 1024 * 1024;
  auto v = tryParseFloat(s.substr(0, unitAt));
  AICC_CHECK(scale > 0 && v && *v >= 0 && *v * scale < 9.2e18,
             "{}: '{}' is not a size (bytes, or a number with K, M, G or T)", what, text);
  return int64_t(*v * scale);
}

int64_t peakRssBytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return int64_t(u.ru_maxrss) * 1024; // kilobytes on Linux
}

} // namespace aicc
