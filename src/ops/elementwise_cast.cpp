// Cast and CastLike: conversions between every numeric type (integers wrap around, floats to
// integers truncate, float8 saturation, float8e8m0 rounding modes) and to/from strings.
#include "ops/elementwise.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace aicc {

namespace {

// float -> float8e8m0 following the ONNX reference: the float32 exponent, rounded per
// `mode` ("up", "down", "nearest"); NaN and infinities become 0xff; the sign is ignored.
uint8_t toE8m0(float v, bool saturate, const std::string& mode) {
  uint32_t bits = std::bit_cast<uint32_t>(v);
  uint32_t exp = (bits >> 23) & 0xff;
  if (exp == 0xff) return 0xff;
  bool roundUp = false;
  if (mode == "up") {
    roundUp = (bits & 0x7fffff) != 0;
  } else if (mode == "nearest") {
    bool g = bits & 0x400000, r = bits & 0x200000, s = bits & 0x1fffff, lsb = exp > 0;
    roundUp = g && (r || s || lsb);
  } else {
    AICC_CHECK(mode == "down",
               "attribute 'round_mode' must be \"up\", \"down\" or \"nearest\", got \"{}\"", mode);
  }
  if (roundUp && !(saturate && exp == 0xfe)) ++exp;
  return static_cast<uint8_t>(exp);
}

// Stores an integer value into element i, wrapping around to the target width (bool: != 0).
void storeInt(Tensor& out, int64_t i, int64_t v) {
  switch (out.dtype()) {
  case DType::Bool:
    out.data<uint8_t>()[i] = v != 0;
    return;
  case DType::I8:
    out.data<int8_t>()[i] = static_cast<int8_t>(v);
    return;
  case DType::I16:
    out.data<int16_t>()[i] = static_cast<int16_t>(v);
    return;
  case DType::I32:
    out.data<int32_t>()[i] = static_cast<int32_t>(v);
    return;
  case DType::I64:
    out.data<int64_t>()[i] = v;
    return;
  case DType::U8:
    out.data<uint8_t>()[i] = static_cast<uint8_t>(v);
    return;
  case DType::U16:
    out.data<uint16_t>()[i] = static_cast<uint16_t>(v);
    return;
  case DType::U32:
    out.data<uint32_t>()[i] = static_cast<uint32_t>(v);
    return;
  case DType::U64:
    out.data<uint64_t>()[i] = static_cast<uint64_t>(v);
    return;
  case DType::I4:
    out.data<int8_t>()[i] = static_cast<int8_t>(((v & 0xf) ^ 0x8) - 0x8);
    return;
  case DType::U4:
    out.data<uint8_t>()[i] = static_cast<uint8_t>(v & 0xf);
    return;
  case DType::I2:
    out.data<int8_t>()[i] = static_cast<int8_t>(((v & 0x3) ^ 0x2) - 0x2);
    return;
  case DType::U2:
    out.data<uint8_t>()[i] = static_cast<uint8_t>(v & 0x3);
    return;
  default:
    fail("internal: {} is not an integer type", dtypeName(out.dtype()));
  }
}

// float -> int64 by truncation; out-of-range values saturate, NaN becomes 0.
int64_t truncToI64(double v) {
  if (std::isnan(v)) return 0;
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  if (v >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(v);
}

void storeFloat(Tensor& out, int64_t i, double v, bool saturate, const std::string& roundMode) {
  DType t = out.dtype();
  switch (t) {
  case DType::F32:
    out.data<float>()[i] = static_cast<float>(v);
    return;
  case DType::F64:
    out.data<double>()[i] = v;
    return;
  case DType::F16:
  case DType::BF16:
    out.data<uint16_t>()[i] = static_cast<uint16_t>(floatToReduced(t, static_cast<float>(v)));
    return;
  case DType::F8E8M0:
    out.data<uint8_t>()[i] = toE8m0(static_cast<float>(v), saturate, roundMode);
    return;
  default:
    AICC_CHECK(isReducedFloat(t), "internal: {} is not a float type", dtypeName(t));
    // The spec saturates +-inf to +-max for every float8 type (floatToReduced gives NaN for the
    // fnuz types, which have no infinity), so pass a huge finite value instead.
    if (saturate && std::isinf(v)) v = std::copysign(std::numeric_limits<float>::max(), v);
    out.data<uint8_t>()[i] =
        static_cast<uint8_t>(floatToReduced(t, static_cast<float>(v), saturate));
  }
}

// Formats a float like numpy's str(): the shortest digits that round-trip, positional for
// 1e-4 <= |v| < cutoff (with a ".0" for integral values), else scientific ("1e+10").
template <typename F> std::string formatFloat(F v, double cutoff) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  double a = std::fabs(static_cast<double>(v));
  bool positional = a == 0 || (a >= 1e-4 && a < cutoff);
  auto res = std::to_chars(buf, buf + sizeof buf, v,
                           positional ? std::chars_format::fixed : std::chars_format::scientific);
  std::string str(buf, res.ptr);
  if (positional && str.find('.') == std::string::npos) str += ".0";
  return str;
}

std::string formatElem(const Tensor& x, int64_t i) {
  DType t = x.dtype();
  if (t == DType::Bool) return x.data<uint8_t>()[i] ? "True" : "False";
  if (t == DType::U64) return fmt::format("{}", x.data<uint64_t>()[i]);
  if (isInteger(t)) return fmt::format("{}", x.getI64(i));
  if (t == DType::F64) return formatFloat(x.data<double>()[i], 1e16);
  return formatFloat(static_cast<float>(x.getF64(i)), t == DType::F16 ? 1e3 : 1e6);
}

// Parses a numeric string ("3.14", "1e-5", "INF", "-inf", "NaN", "100").
double parseDouble(const std::string& s) {
  const char* b = s.c_str();
  char* e = nullptr;
  double v = std::strtod(b, &e);
  AICC_CHECK(e != b, "cannot cast string \"{}\" to a number", s);
  return v;
}

int64_t parseInt(const std::string& s) {
  const char* b = s.c_str();
  char* e = nullptr;
  long long v = std::strtoll(b, &e, 10);
  if (e != b && *e == '\0') return v;
  return truncToI64(parseDouble(s));
}

Tensor castTensor(const Tensor& x, DType to, bool saturate, const std::string& roundMode) {
  DType from = x.dtype();
  if (from == to) return x;
  AICC_CHECK(!isComplex(from) && !isComplex(to), "cast from {} to {} is not supported",
             dtypeName(from), dtypeName(to));
  Tensor out(to, x.shape());
  int64_t n = x.numel();
  bool toInt = isInteger(to) || to == DType::Bool;
  bool fromInt = isInteger(from) || from == DType::Bool;
  if (to == DType::String) {
    for (int64_t i = 0; i < n; ++i) out.strings()[i] = formatElem(x, i);
  } else if (from == DType::String) {
    for (int64_t i = 0; i < n; ++i) {
      const std::string& s = x.strings()[i];
      if (toInt)
        storeInt(out, i, to == DType::Bool ? parseDouble(s) != 0 : parseInt(s));
      else
        storeFloat(out, i, parseDouble(s), saturate, roundMode);
    }
  } else if (fromInt && toInt) {
    for (int64_t i = 0; i < n; ++i) storeInt(out, i, x.getI64(i));
  } else if (toInt) { // float -> integer: truncate toward zero
    for (int64_t i = 0; i < n; ++i) {
      double v = x.getF64(i);
      if (to == DType::Bool)
        out.data<uint8_t>()[i] = v != 0;
      else
        storeInt(out, i, truncToI64(v));
    }
  } else if (from == DType::F32 && to == DType::F64) {
    for (int64_t i = 0; i < n; ++i) out.data<double>()[i] = x.data<float>()[i];
  } else if (fromInt && from != DType::U64 && to == DType::F32) { // avoid double rounding of i64
    for (int64_t i = 0; i < n; ++i) out.data<float>()[i] = static_cast<float>(x.getI64(i));
  } else {
    for (int64_t i = 0; i < n; ++i) storeFloat(out, i, x.getF64(i), saturate, roundMode);
  }
  return out;
}

DType targetType(const Node& n) {
  int64_t code = n.attrInt("to");
  auto t = dtypeFromOnnx(static_cast<int32_t>(code));
  AICC_CHECK(t && *t != DType::Undefined, "attribute 'to' is not a valid element type: {}", code);
  return *t;
}

void checkRoundMode(const Node& n) {
  std::string m = n.attrString("round_mode");
  AICC_CHECK(m == "up" || m == "down" || m == "nearest",
             "attribute 'round_mode' must be \"up\", \"down\" or \"nearest\", got \"{}\"", m);
}

// Integer shape values survive a cast to another integer type.
void propagateCast(InferCtx& c, DType to) {
  if (!isInteger(to) || !isInteger(c.inDType(0))) return;
  if (const auto* v = c.shapeValue(0)) c.setShapeValue(0, *v);
}

} // namespace

void registerElementwiseCastOps(OpRegistry& r) {
  r.op("Cast")
      .since(1)
      .inputs(1, 1)
      .attr("to", Attribute::Kind::Int, /*required=*/true)
      .attrInt("saturate", 1)
      .attrString("round_mode", "up")
      .props(kElementwise)
      .infer([](InferCtx& c) {
        DType to = targetType(c.node);
        checkRoundMode(c.node);
        c.setTensor(0, to, c.inShape(0));
        propagateCast(c, to);
      })
      .kernel([](KernelCtx& c) {
        Tensor out = castTensor(c.in(0), targetType(c.node), c.node.attrInt("saturate") != 0,
                                c.node.attrString("round_mode"));
        return std::vector<RValue>{RValue::of(out)};
      });

  r.op("CastLike")
      .since(15)
      .inputs(2, 2)
      .attrInt("saturate", 1)
      .attrString("round_mode", "up")
      .props(kElementwise)
      .infer([](InferCtx& c) {
        checkRoundMode(c.node);
        c.setTensor(0, c.inDType(1), c.inShape(0));
        propagateCast(c, c.inDType(1));
      })
      .kernel([](KernelCtx& c) {
        Tensor out = castTensor(c.in(0), c.in(1).dtype(), c.node.attrInt("saturate") != 0,
                                c.node.attrString("round_mode"));
        return std::vector<RValue>{RValue::of(out)};
      });
}

} // namespace aicc
