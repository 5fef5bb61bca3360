#include "interp/compare.h"

#include <cmath>

namespace aicc {

std::optional<std::string> compareTensors(const Tensor& e, const Tensor& a, Tolerance tol) {
  if (e.dtype() != a.dtype())
    return fmt::format("element type {} expected, got {}", dtypeName(e.dtype()), dtypeName(a.dtype()));
  if (e.shape() != a.shape())
    return fmt::format("shape {} expected, got {}", formatDims(e.shape()), formatDims(a.shape()));
  if (e.dtype() == DType::String) {
    for (int64_t i = 0; i < e.numel(); ++i)
      if (e.strings()[i] != a.strings()[i])
        return fmt::format("element {}: '{}' expected, got '{}'", i, e.strings()[i], a.strings()[i]);
    return std::nullopt;
  }
  bool cplx = isComplex(e.dtype());
  for (int64_t i = 0; i < e.numel(); ++i) {
    for (int part = 0; part < (cplx ? 2 : 1); ++part) {
      double ev = cplx ? (part ? e.getC(i).imag() : e.getC(i).real()) : e.getF64(i);
      double av = cplx ? (part ? a.getC(i).imag() : a.getC(i).real()) : a.getF64(i);
      if (isInteger(e.dtype()) || e.dtype() == DType::Bool) {
        if (e.getI64(i) != a.getI64(i)) return fmt::format("element {}: {} expected, got {}", i, e.getI64(i), a.getI64(i));
        continue;
      }
      if (std::isnan(ev) && std::isnan(av)) continue;
      if (std::isinf(ev) || std::isinf(av)) {
        if (ev == av) continue;
      } else if (std::fabs(av - ev) <= tol.atol + tol.rtol * std::fabs(ev)) {
        continue;
      }
      return fmt::format("element {}: {} expected, got {} (rtol {}, atol {})", i, ev, av, tol.rtol, tol.atol);
    }
  }
  return std::nullopt;
}

std::optional<std::string> compareValues(const RValue& e, const RValue& a, Tolerance tol) {
  if (e.kind != a.kind) {
    static constexpr const char* names[] = {"empty optional", "tensor", "sequence", "map"};
    return fmt::format("{} expected, got {}", names[static_cast<int>(e.kind)], names[static_cast<int>(a.kind)]);
  }
  if (e.kind == RValue::Kind::Tensor) return compareTensors(e.tensor, a.tensor, tol);
  if (e.kind == RValue::Kind::Map) { // same keys in the same order, values compared
    for (int k = 0; k < 2; ++k)
      if (auto m = compareTensors(e.seq[k], a.seq[k], tol))
        return fmt::format("map {}: {}", k == 0 ? "keys" : "values", *m);
    return std::nullopt;
  }
  if (e.kind == RValue::Kind::Sequence) {
    if (e.maps.size() != a.maps.size())
      return fmt::format("sequence of {} maps expected, got {}", e.maps.size(), a.maps.size());
    for (size_t i = 0; i < e.maps.size(); ++i)
      if (auto m = compareValues(e.maps[i], a.maps[i], tol))
        return fmt::format("sequence element {}: {}", i, *m);
    if (e.seq.size() != a.seq.size())
      return fmt::format("sequence of {} expected, got {}", e.seq.size(), a.seq.size());
    for (size_t i = 0; i < e.seq.size(); ++i)
      if (auto m = compareTensors(e.seq[i], a.seq[i], tol)) return fmt::format("sequence element {}: {}", i, *m);
  }
  return std::nullopt;
}

} // namespace aicc
