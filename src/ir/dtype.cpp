#include "ir/dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace aicc {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size; // bytes in memory
  int bits;    // bits serialized
};

constexpr std::array<DTypeInfo, kMaxDTypeCode + 1> kInfo = {{
    {DType::Undefined, "undefined", 0, 0},
    {DType::F32, "f32", 4, 32},
    {DType::U8, "u8", 1, 8},
    {DType::I8, "i8", 1, 8},
    {DType::U16, "u16", 2, 16},
    {DType::I16, "i16", 2, 16},
    {DType::I32, "i32", 4, 32},
    {DType::I64, "i64", 8, 64},
    {DType::String, "string", 0, 0},
    {DType::Bool, "bool", 1, 8},
    {DType::F16, "f16", 2, 16},
    {DType::F64, "f64", 8, 64},
    {DType::U32, "u32", 4, 32},
    {DType::U64, "u64", 8, 64},
    {DType::C64, "c64", 8, 64},
    {DType::C128, "c128", 16, 128},
    {DType::BF16, "bf16", 2, 16},
    {DType::F8E4M3FN, "f8e4m3fn", 1, 8},
    {DType::F8E4M3FNUZ, "f8e4m3fnuz", 1, 8},
    {DType::F8E5M2, "f8e5m2", 1, 8},
    {DType::F8E5M2FNUZ, "f8e5m2fnuz", 1, 8},
    {DType::U4, "u4", 1, 4},
    {DType::I4, "i4", 1, 4},
    {DType::F4E2M1, "f4e2m1", 1, 4},
    {DType::F8E8M0, "f8e8m0", 1, 8},
    {DType::U2, "u2", 1, 2},
    {DType::I2, "i2", 1, 2},
}};

const DTypeInfo& info(DType t) {
  auto i = static_cast<size_t>(t);
  return i < kInfo.size() ? kInfo[i] : kInfo[0];
}

// --- IEEE half -------------------------------------------------------------------------------
float halfToFloat(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31) v = man ? std::numeric_limits<float>::quiet_NaN() : INFINITY;
  else v = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

uint16_t floatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t exp = (x >> 23) & 0xff, man = x & 0x7fffff;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (man ? 0x200 : 0));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (e <= 0) { // subnormal or zero in half
    if (e < -10) return static_cast<uint16_t>(sign);
    man |= 0x800000;
    int shift = 14 - e;
    uint32_t h = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(e) << 10) | (man >> 13);
  uint32_t rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h; // may carry into the exponent: correct
  return static_cast<uint16_t>(sign | h);
}

// --- bfloat16 ---------------------------------------------------------------------------------
float bf16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t floatToBf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40);
  uint32_t lsb = (x >> 16) & 1;
  x += 0x7fff + lsb;
  return static_cast<uint16_t>(x >> 16);
}

// --- small float formats (float8 variants, float4e2m1), decoded through a table ----------------
struct MiniFloat {
  int expBits, manBits, bias;
  bool hasInf;   // E5M2 only
  bool uz;       // "fnuz": no negative zero, 0x80 is NaN
  bool nanAllOnes; // E4M3FN: S.1111.111 is NaN (no inf)
  bool hasNan;
};

MiniFloat miniFormat(DType t) {
  switch (t) {
  case DType::F8E4M3FN: return {4, 3, 7, false, false, true, true};
  case DType::F8E4M3FNUZ: return {4, 3, 8, false, true, false, true};
  case DType::F8E5M2: return {5, 2, 15, true, false, false, true};
  case DType::F8E5M2FNUZ: return {5, 2, 16, false, true, false, true};
  case DType::F4E2M1: return {2, 1, 1, false, false, false, false};
  default: return {0, 0, 0, false, false, false, false};
  }
}

float miniDecode(const MiniFloat& m, uint32_t code) {
  int total = 1 + m.expBits + m.manBits;
  uint32_t sign = (code >> (total - 1)) & 1;
  uint32_t exp = (code >> m.manBits) & ((1u << m.expBits) - 1);
  uint32_t man = code & ((1u << m.manBits) - 1);
  uint32_t expMax = (1u << m.expBits) - 1;
  if (m.uz && code == (1u << (total - 1))) return std::numeric_limits<float>::quiet_NaN();
  if (m.hasInf && exp == expMax) return man ? std::numeric_limits<float>::quiet_NaN()
                                            : (sign ? -INFINITY : INFINITY);
  if (m.nanAllOnes && exp == expMax && man == (1u << m.manBits) - 1)
    return std::numeric_limits<float>::quiet_NaN();
  float v = exp == 0 ? std::ldexp(static_cast<float>(man), 1 - m.bias - m.manBits)
                     : std::ldexp(static_cast<float>(man | (1u << m.manBits)),
                                  static_cast<int>(exp) - m.bias - m.manBits);
  return sign ? -v : v;
}

uint32_t miniEncode(DType t, float v, bool saturate) {
  MiniFloat m = miniFormat(t);
  int total = 1 + m.expBits + m.manBits;
  uint32_t signBit = 1u << (total - 1);
  uint32_t nanCode = m.uz ? signBit : (m.hasInf ? (((1u << m.expBits) - 1) << m.manBits) | 1
                                                : (signBit - 1));
  if (std::isnan(v)) return m.hasNan ? nanCode : 0;
  bool neg = std::signbit(v);
  float a = std::fabs(v);
  // Positive finite codes, in increasing order of value.
  std::vector<std::pair<float, uint32_t>> codes;
  for (uint32_t c = 0; c < signBit; ++c) {
    float d = miniDecode(m, c);
    if (std::isfinite(d)) codes.push_back({d, c});
  }
  float maxv = codes.back().first;
  float ulpTop = maxv - codes[codes.size() - 2].first;
  auto withSign = [&](uint32_t c) {
    if (c == 0 && m.uz) return 0u; // no negative zero
    return neg ? (c | signBit) : c;
  };
  bool overflow = std::isinf(a) || a >= maxv + ulpTop / 2;
  if (overflow) {
    if (!m.hasNan) return withSign(codes.back().second); // float4: always saturates
    if (saturate) return withSign(codes.back().second); // ONNX Cast: +-inf saturate to +-max too
    if (m.hasInf) return withSign(((1u << m.expBits) - 1) << m.manBits);
    return nanCode;
  }
  // Nearest code, ties to even mantissa.
  size_t best = 0;
  for (size_t i = 1; i < codes.size(); ++i) {
    float db = std::fabs(codes[best].first - a), di = std::fabs(codes[i].first - a);
    if (di < db || (di == db && (codes[i].second & 1) == 0)) best = i;
  }
  return withSign(codes[best].second);
}

// --- float8e8m0: exponent only, value 2^(e-127); 0xff is NaN --------------------------------------
float e8m0ToFloat(uint32_t c) {
  if (c == 0xff) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(c) - 127);
}

uint32_t floatToE8m0(float v, bool saturate) {
  if (std::isnan(v) || (std::isinf(v) && !saturate)) return 0xff;
  float a = std::fabs(v);
  if (std::isinf(a)) return 0xfe;
  if (a == 0) return 0;
  // round_mode "up" (the ONNX default): the smallest power of two not below |v|.
  int e;
  float fr = std::frexp(a, &e); // a = fr * 2^e, fr in [0.5, 1)
  int p = (fr == 0.5f) ? e - 1 : e;
  int code = p + 127;
  if (code < 0) return 0;
  if (code > 0xfe) return saturate ? 0xfe : 0xff;
  return static_cast<uint32_t>(code);
}

} // namespace

std::string_view dtypeName(DType t) { return info(t).name; }

std::optional<DType> dtypeFromName(std::string_view name) {
  for (const auto& i : kInfo)
    if (i.name == name && i.type != DType::Undefined) return i.type;
  return std::nullopt;
}

std::optional<DType> dtypeFromOnnx(int32_t code) {
  if (code <= 0 || code > kMaxDTypeCode) return std::nullopt;
  return static_cast<DType>(code);
}

size_t dtypeSize(DType t) { return info(t).size; }
int dtypeBits(DType t) { return info(t).bits; }

bool isReducedFloat(DType t) {
  switch (t) {
  case DType::F16: case DType::BF16: case DType::F8E4M3FN: case DType::F8E4M3FNUZ:
  case DType::F8E5M2: case DType::F8E5M2FNUZ: case DType::F4E2M1: case DType::F8E8M0:
    return true;
  default: return false;
  }
}

bool isFloat(DType t) { return t == DType::F32 || t == DType::F64 || isReducedFloat(t); }

bool isInteger(DType t) {
  switch (t) {
  case DType::U8: case DType::I8: case DType::U16: case DType::I16: case DType::I32:
  case DType::I64: case DType::U32: case DType::U64: case DType::U4: case DType::I4:
  case DType::U2: case DType::I2:
    return true;
  default: return false;
  }
}

bool isSigned(DType t) {
  switch (t) {
  case DType::I8: case DType::I16: case DType::I32: case DType::I64: case DType::I4: case DType::I2:
    return true;
  default: return isFloat(t);
  }
}

bool isQ8(DType t) { return t == DType::U8 || t == DType::I8; }

bool isByteFloat(DType t) {
  return t == DType::F8E4M3FN || t == DType::F8E4M3FNUZ || t == DType::F8E5M2 ||
         t == DType::F8E5M2FNUZ || t == DType::F4E2M1;
}

bool isSubByteInt(DType t) {
  return t == DType::I4 || t == DType::U4 || t == DType::I2 || t == DType::U2;
}

bool isComplex(DType t) { return t == DType::C64 || t == DType::C128; }

float reducedToFloat(DType t, uint32_t bits) {
  switch (t) {
  case DType::F16: return halfToFloat(static_cast<uint16_t>(bits));
  case DType::BF16: return bf16ToFloat(static_cast<uint16_t>(bits));
  case DType::F8E8M0: return e8m0ToFloat(bits & 0xff);
  default: return miniDecode(miniFormat(t), bits);
  }
}

uint32_t floatToReduced(DType t, float v, bool saturate) {
  switch (t) {
  case DType::F16: return floatToHalf(v);
  case DType::BF16: return floatToBf16(v);
  case DType::F8E8M0: return floatToE8m0(v, saturate);
  default: return miniEncode(t, v, saturate);
  }
}

} // namespace aicc
