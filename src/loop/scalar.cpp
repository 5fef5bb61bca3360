#include "loop/scalar.h"

#include "loop/simplify.h"
#include "support/error.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace aicc::loop {

namespace {

int bitsOf(DType t) { return static_cast<int>(dtypeSize(t) * 8); }

int64_t wrapInt(DType t, int64_t v) {
  switch (t) {
  case DType::Bool:
    return v != 0;
  case DType::I8:
    return static_cast<int8_t>(v);
  case DType::I16:
    return static_cast<int16_t>(v);
  case DType::I32:
    return static_cast<int32_t>(v);
  case DType::U8:
    return static_cast<uint8_t>(v);
  case DType::U16:
    return static_cast<uint16_t>(v);
  case DType::U32:
    return static_cast<uint32_t>(v);
  case DType::I4:
    return static_cast<int64_t>(static_cast<uint64_t>(v) << 60) >> 60;
  case DType::U4:
    return v & 0xf;
  case DType::I2:
    return static_cast<int64_t>(static_cast<uint64_t>(v) << 62) >> 62;
  case DType::U2:
    return v & 0x3;
  default:
    return v; // i64, u64 (bit pattern)
  }
}

bool isUnsigned64(DType t) { return t == DType::U64; }

template <typename T> int compare3(T a, T b) { return a < b ? -1 : (a > b ? 1 : 0); }

} // namespace

Scalar normalize(DType t, Scalar v, bool saturate) {
  if (isFloat(t)) {
    if (t == DType::F32)
      v.f = static_cast<float>(v.f);
    else if (t != DType::F64 && !std::isnan(v.f))
      v.f = reducedToFloat(t, floatToReduced(t, static_cast<float>(v.f), saturate));
    return v;
  }
  v.i = wrapInt(t, v.i);
  return v;
}

std::optional<Scalar> applyBinary(Op op, DType t, Scalar a, Scalar b) {
  Scalar r;
  if (isFloat(t)) {
    double x = a.f, y = b.f;
    switch (op) {
    case Op::Add:
      r.f = x + y;
      break;
    case Op::Sub:
      r.f = x - y;
      break;
    case Op::Mul:
      r.f = x * y;
      break;
    case Op::Div:
      r.f = x / y;
      break;
    case Op::Mod:
      r.f = std::fmod(x, y);
      break;
    case Op::Min:
      r.f = std::fmin(x, y);
      break;
    case Op::Max:
      r.f = std::fmax(x, y);
      break;
    case Op::Lt:
      r.i = x < y;
      return r;
    case Op::Le:
      r.i = x <= y;
      return r;
    case Op::Gt:
      r.i = x > y;
      return r;
    case Op::Ge:
      r.i = x >= y;
      return r;
    case Op::Eq:
      r.i = x == y;
      return r;
    case Op::Ne:
      r.i = x != y;
      return r;
    default:
      fail("operator {} is not defined on {}", opName(op), dtypeName(t));
    }
    return normalize(t, r);
  }
  // Integers and bool. Arithmetic wraps: compute on uint64 and wrap to the type's width.
  uint64_t x = static_cast<uint64_t>(a.i), y = static_cast<uint64_t>(b.i);
  bool u = isUnsigned64(t);
  int c = u ? compare3(x, y) : compare3(a.i, b.i);
  switch (op) {
  case Op::Add:
    r.i = static_cast<int64_t>(x + y);
    break;
  case Op::Sub:
    r.i = static_cast<int64_t>(x - y);
    break;
  case Op::Mul:
    r.i = static_cast<int64_t>(x * y);
    break;
  case Op::Div:
  case Op::Mod:
    if (b.i == 0) return std::nullopt;
    if (u)
      r.i = static_cast<int64_t>(op == Op::Div ? x / y : x % y);
    else if (b.i == -1)
      r.i = op == Op::Div ? static_cast<int64_t>(0 - x) : 0; // INT64_MIN / -1 wraps
    else
      r.i = op == Op::Div ? a.i / b.i : a.i % b.i;
    break;
  case Op::BitAnd:
    r.i = static_cast<int64_t>(x & y);
    break;
  case Op::BitOr:
    r.i = static_cast<int64_t>(x | y);
    break;
  case Op::BitXor:
    r.i = static_cast<int64_t>(x ^ y);
    break;
  case Op::Shl:
  case Op::Shr: { // amounts of the width or more: 0, or a signed value's sign for Shr
    const uint64_t w = dtypeSize(t) * 8;
    if (op == Op::Shr && isSigned(t))
      r.i = a.i >> (y >= 63 ? 63 : y);
    else if (y >= w)
      r.i = 0;
    else
      r.i = static_cast<int64_t>(op == Op::Shl ? x << y : x >> y);
    break;
  }
  case Op::Min:
    r.i = c <= 0 ? a.i : b.i;
    break;
  case Op::Max:
    r.i = c >= 0 ? a.i : b.i;
    break;
  case Op::Lt:
    r.i = c < 0;
    return r;
  case Op::Le:
    r.i = c <= 0;
    return r;
  case Op::Gt:
    r.i = c > 0;
    return r;
  case Op::Ge:
    r.i = c >= 0;
    return r;
  case Op::Eq:
    r.i = c == 0;
    return r;
  case Op::Ne:
    r.i = c != 0;
    return r;
  case Op::And:
    r.i = (a.i != 0) && (b.i != 0);
    return r;
  case Op::Or:
    r.i = (a.i != 0) || (b.i != 0);
    return r;
  default:
    fail("operator {} is not defined on {}", opName(op), dtypeName(t));
  }
  return normalize(t, r);
}

Scalar applyUnary(Op op, DType t, Scalar a) {
  Scalar r;
  if (op == Op::Not) {
    r.i = a.i == 0;
    return r;
  }
  if (isFloat(t))
    r.f = -a.f;
  else
    r.i = static_cast<int64_t>(0 - static_cast<uint64_t>(a.i));
  return normalize(t, r);
}

double toDouble(DType t, Scalar v) {
  if (isFloat(t)) return v.f;
  if (isUnsigned64(t)) return static_cast<double>(static_cast<uint64_t>(v.i));
  return static_cast<double>(v.i);
}

bool truthy(DType t, Scalar v) { return isFloat(t) ? v.f != 0 : v.i != 0; }

Scalar applyCast(DType to, DType from, Scalar a, bool saturate) {
  Scalar r;
  if (to == DType::Bool) {
    r.i = truthy(from, a);
    return r;
  }
  if (isFloat(to)) {
    r.f = toDouble(from, a);
    return normalize(to, r, saturate);
  }
  if (!isFloat(from)) {
    r.i = a.i;
    return normalize(to, r);
  }
  // Float -> integer: truncate, saturate to the type's range, NaN -> 0.
  double v = std::trunc(a.f);
  if (std::isnan(v)) return r;
  if (isUnsigned64(to)) {
    if (v <= 0)
      r.i = 0;
    else if (v >= 18446744073709551616.0)
      r.i = -1;
    else
      r.i = static_cast<int64_t>(static_cast<uint64_t>(v));
    return r;
  }
  int bits = bitsOf(to);
  if (to == DType::I4 || to == DType::U4) bits = 4;
  if (to == DType::I2 || to == DType::U2) bits = 2;
  double lo = isSigned(to) ? -std::ldexp(1.0, bits - 1) : 0.0;
  double hi = isSigned(to) ? std::ldexp(1.0, bits - 1) - 1 : std::ldexp(1.0, bits) - 1;
  // For 64-bit targets `hi` (2^63 - 1) is not representable in double and rounds up to 2^63:
  // compare against the exclusive bound instead, so no out-of-range conversion happens.
  if (v < lo) v = lo;
  if (bits == 64 && v >= std::ldexp(1.0, 63)) {
    r.i = std::numeric_limits<int64_t>::max();
    return r;
  }
  if (v > hi) v = hi;
  r.i = static_cast<int64_t>(v);
  return r;
}

Scalar applyBitcast(DType to, DType from, Scalar a) {
  uint64_t bits = 0; // the low bitsOf(from) bits of a's representation
  if (from == DType::F32) {
    const float f = static_cast<float>(a.f);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    bits = u;
  } else if (from == DType::F64) {
    std::memcpy(&bits, &a.f, 8);
  } else {
    bits = static_cast<uint64_t>(a.i);
  }
  Scalar r;
  if (to == DType::F32) {
    const uint32_t u = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &u, 4);
    r.f = f;
    return r;
  }
  if (to == DType::F64) {
    std::memcpy(&r.f, &bits, 8);
    return r;
  }
  r.i = static_cast<int64_t>(bits);
  return normalize(to, r); // wraps to the width (a bool's byte: its truth value)
}

Scalar applyCall(const std::string& fn, DType t, const std::vector<Scalar>& args) {
  Scalar r;
  r.f = applyMath(fn, args.empty() ? 0 : args[0].f, args.size() > 1 ? args[1].f : 0);
  return normalize(t, r);
}

double applyMath(const std::string& fn, double a, double b) {
  const auto it = mathFunctions().find(fn);
  if (it == mathFunctions().end()) fail("unknown math function '{}'", fn);
  return it->second.unary ? it->second.unary(a) : it->second.binary(a, b);
}

} // namespace aicc::loop
