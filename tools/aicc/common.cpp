#include "common.h"

namespace aicc::cli {

std::map<std::string, int64_t> parseDims(const std::vector<std::string>& specs) {
  std::map<std::string, int64_t> dims;
  for (const auto& s : specs) {
    auto eq = s.find('=');
    AICC_CHECK(eq != std::string::npos && eq > 0, "--dim expects NAME=VALUE, got '{}'", s);
    int64_t v = 0;
    try {
      v = std::stoll(s.substr(eq + 1));
    } catch (...) {
      fail("--dim {}: '{}' is not an integer", s.substr(0, eq), s.substr(eq + 1));
    }
    AICC_CHECK(v >= 0, "--dim {}: negative size {}", s.substr(0, eq), v);
    dims[s.substr(0, eq)] = v;
  }
  return dims;
}

std::string summarize(const RValue& v, size_t maxElems) {
  if (v.kind == RValue::Kind::None) return "(empty optional)";
  if (v.kind == RValue::Kind::Sequence) return fmt::format("sequence of {} tensors", v.seq.size());
  const Tensor& t = v.tensor;
  std::vector<std::string> elems;
  for (int64_t i = 0; i < t.numel() && elems.size() < maxElems; ++i) {
    if (t.dtype() == DType::String) elems.push_back("\"" + t.strings()[i] + "\"");
    else if (isFloat(t.dtype())) elems.push_back(fmt::format("{:.6g}", t.getF64(i)));
    else if (isComplex(t.dtype())) elems.push_back(fmt::format("{}+{}i", t.getC(i).real(), t.getC(i).imag()));
    else elems.push_back(std::to_string(t.getI64(i)));
  }
  return fmt::format("{}{} = [{}{}]", dtypeName(t.dtype()), formatDims(t.shape()), fmt::join(elems, ", "),
                     t.numel() > static_cast<int64_t>(maxElems) ? ", ..." : "");
}

} // namespace aicc::cli
