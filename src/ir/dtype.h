// Element types. The numeric values are ONNX's TensorProto.DataType codes, so import/export is a cast.
// In memory every element takes whole bytes: sub-byte types (int4, uint4, float4e2m1, int2, uint2) are
// stored unpacked, one element per byte (packing happens only at (de)serialization); float16, bfloat16
// and the float8 variants are stored as their raw bit patterns; string tensors hold std::string.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace aicc {

enum class DType : int32_t {
  Undefined = 0,
  F32 = 1,
  U8 = 2,
  I8 = 3,
  U16 = 4,
  I16 = 5,
  I32 = 6,
  I64 = 7,
  String = 8,
  Bool = 9,
  F16 = 10,
  F64 = 11,
  U32 = 12,
  U64 = 13,
  C64 = 14,
  C128 = 15,
  BF16 = 16,
  F8E4M3FN = 17,
  F8E4M3FNUZ = 18,
  F8E5M2 = 19,
  F8E5M2FNUZ = 20,
  U4 = 21,
  I4 = 22,
  F4E2M1 = 23,
  F8E8M0 = 24,
  U2 = 25,
  I2 = 26,
};

constexpr int32_t kMaxDTypeCode = 26;

// Short name used by the text IR ("f32", "i64", "bool", "f8e4m3fn", ...).
std::string_view dtypeName(DType t);
// Inverse of dtypeName; nullopt for an unknown name.
std::optional<DType> dtypeFromName(std::string_view name);
// DType for an ONNX code; nullopt when the code is not a known element type.
std::optional<DType> dtypeFromOnnx(int32_t code);

// Bytes per element in memory (see the header comment); 0 for String and Undefined.
size_t dtypeSize(DType t);
// Bits per element in the ONNX serialized form (4 for int4, 2 for int2, ...).
int dtypeBits(DType t);

bool isFloat(DType t);   // any floating type, including f16/bf16/f8/f4 (not complex)
bool isInteger(DType t); // signed or unsigned integers, including sub-byte ones (not bool)
bool isSigned(DType t);  // signed integers and floats
bool isComplex(DType t);
bool isQ8(DType t); // u8 or i8 (the quantized ops' types)
// Types stored as bit patterns that kernels compute through float: f16, bf16, f8*, f4e2m1.
bool isReducedFloat(DType t);
// float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz) and float4 (e2m1): one code per byte, decoded through
// ir/dtype.cpp's MiniFloat formats (not float8e8m0, with its own rounding modes).
bool isByteFloat(DType t);
// 4- and 2-bit integers (i4, u4, i2, u2), one value per byte in memory.
bool isSubByteInt(DType t);

// Bit-pattern conversions for the reduced float types (round to nearest even).
// `saturate` follows ONNX Cast: out-of-range finite values clamp to the largest finite value
// for the float8 types that have no infinity.
float reducedToFloat(DType t, uint32_t bits);
uint32_t floatToReduced(DType t, float v, bool saturate = true);

} // namespace aicc
