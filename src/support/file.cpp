#include "support/file.h"

#include "support/error.h"

#include <fstream>
#include <sstream>

namespace aicc {

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  AICC_CHECK(f.good(), "cannot open '{}'", path);
  std::ostringstream s;
  s << f.rdbuf();
  AICC_CHECK(!f.bad(), "cannot read '{}'", path);
  return s.str();
}

void writeFile(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  AICC_CHECK(f.good(), "cannot write '{}'", path);
}

} // namespace aicc
