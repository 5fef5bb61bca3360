#include "codegen/llvm/emit_narrow.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace aicc::codegen {

bool isReduced(DType t) {
  return t == DType::F16 || t == DType::BF16 || isByteFloat(t) || t == DType::F8E8M0;
}

namespace {

// A constant table in the module (created once per name).
llvm::GlobalVariable* table(llvm::Module& m, const std::string& name, llvm::Constant* init) {
  if (auto* g = m.getNamedGlobal(name)) return g;
  return new llvm::GlobalVariable(m, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init,
                                  name);
}
llvm::Value* at(llvm::IRBuilder<>& b, llvm::GlobalVariable* g, llvm::Type* elem, llvm::Value* i) {
  return b.CreateLoad(elem, b.CreateInBoundsGEP(g->getValueType(), g, {b.getInt64(0), i}));
}
// float8 / float4 codes as f32: a table of every code's value (ir/dtype.cpp's decoding).
llvm::Value* f8Decode(llvm::IRBuilder<>& b, llvm::Module& m, DType t, llvm::Value* code) {
  const uint32_t n = t == DType::F4E2M1 ? 16 : 256;
  std::vector<float> v(n);
  for (uint32_t c = 0; c < n; ++c) v[c] = reducedToFloat(t, c);
  auto* g = table(m, "aicc.dec." + std::string(dtypeName(t)),
                  llvm::ConstantDataArray::get(b.getContext(), llvm::ArrayRef<float>(v)));
  llvm::Value* i = b.CreateZExt(code, b.getInt64Ty());
  if (n == 16) i = b.CreateAnd(i, b.getInt64(15));
  return at(b, g, b.getFloatTy(), i);
}
// f32 -> code as ir/dtype.cpp's miniEncode with saturation (ONNX Cast's default): NaN to the
// type's NaN code (float4: 0), |v| at or past max + half its ulp (inf too) to +-max, else the
// nearest positive finite value (a branchless binary search over them, in increasing order),
// a tie going to the upper one when its code is even; the sign kept except on fnuz zero.
llvm::Value* f8Encode(llvm::IRBuilder<>& b, llvm::Module& m, DType t, llvm::Value* f,
                      bool saturate) {
  const uint32_t n = t == DType::F4E2M1 ? 16 : 256, signBit = n / 2;
  std::vector<float> vals;
  std::vector<uint8_t> codes;
  for (uint32_t c = 0; c < signBit; ++c)
    if (const float d = reducedToFloat(t, c); std::isfinite(d)) {
      vals.push_back(d); // increasing with the code over the positive range
      codes.push_back(uint8_t(c));
    }
  const std::string nm(dtypeName(t));
  auto* gv = table(m, "aicc.encv." + nm,
                   llvm::ConstantDataArray::get(b.getContext(), llvm::ArrayRef<float>(vals)));
  auto* gc = table(m, "aicc.encc." + nm,
                   llvm::ConstantDataArray::get(b.getContext(), llvm::ArrayRef<uint8_t>(codes)));
  const int64_t K = int64_t(vals.size());
  auto val = [&](llvm::Value* i) { return at(b, gv, b.getFloatTy(), i); };
  auto code = [&](llvm::Value* i) { return at(b, gc, b.getInt8Ty(), i); };
  llvm::Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, f);
  llvm::Value* idx = b.getInt64(0); // the last value <= a
  for (int64_t step = 128; step >= 1; step >>= 1) {
    if (step >= K) continue;
    llvm::Value* cand = b.CreateAdd(idx, b.getInt64(step));
    llvm::Value* in = b.CreateICmpSLT(cand, b.getInt64(K));
    llvm::Value* safe = b.CreateSelect(in, cand, b.getInt64(K - 1));
    idx = b.CreateSelect(b.CreateAnd(in, b.CreateFCmpOLE(val(safe), a)), cand, idx);
  }
  llvm::Value* up =
      b.CreateSelect(b.CreateICmpSLT(idx, b.getInt64(K - 1)), b.CreateAdd(idx, b.getInt64(1)), idx);
  llvm::Value *dl = b.CreateFSub(a, val(idx)), *du = b.CreateFSub(val(up), a);
  llvm::Value* upEven = b.CreateICmpEQ(b.CreateAnd(code(up), b.getInt8(1)), b.getInt8(0));
  llvm::Value* takeUp =
      b.CreateOr(b.CreateFCmpOLT(du, dl), b.CreateAnd(b.CreateFCmpOEQ(du, dl), upEven));
  llvm::Value* c = b.CreateSelect(takeUp, code(up), code(idx));
  const float maxv = vals.back(), ulpTop = maxv - vals[vals.size() - 2];
  llvm::Value* over =
      b.CreateFCmpOGE(a, llvm::ConstantFP::get(b.getFloatTy(), double(maxv + ulpTop / 2)));
  // Past the range: the largest finite code, or (saturate = 0) the type's inf, else its NaN.
  const uint8_t overflow =
      saturate ? codes.back()
               : uint8_t(floatToReduced(t, std::numeric_limits<float>::infinity(), false));
  c = b.CreateSelect(over, b.getInt8(overflow), c);
  llvm::Value* neg = b.CreateICmpSLT(b.CreateBitCast(f, b.getInt32Ty()), b.getInt32(0));
  if (t == DType::F8E4M3FNUZ || t == DType::F8E5M2FNUZ) // no negative zero
    neg = b.CreateAnd(neg, b.CreateICmpNE(c, b.getInt8(0)));
  c = b.CreateSelect(neg, b.CreateOr(c, b.getInt8(uint8_t(signBit))), c);
  const uint32_t nan = floatToReduced(t, std::numeric_limits<float>::quiet_NaN(), true);
  return b.CreateSelect(b.CreateFCmpUNO(f, f), b.getInt8(uint8_t(nan)), c);
}

} // namespace

// A stored pattern as its exact f32: float8 / float4 through the table, f16 / bf16 directly.
llvm::Value* widenNarrow(llvm::IRBuilder<>& b, llvm::Module& m, DType t, llvm::Value* bits) {
  if (isByteFloat(t) || t == DType::F8E8M0) return f8Decode(b, m, t, bits);
  if (t == DType::F16) return b.CreateFPExt(b.CreateBitCast(bits, b.getHalfTy()), b.getFloatTy());
  return b.CreateBitCast(b.CreateShl(b.CreateZExt(bits, b.getInt32Ty()), 16), b.getFloatTy());
}
// An f32 rounded to the type's pattern: f16 / bf16 to nearest even (as ir/dtype.cpp's floatToHalf
// / floatToBf16), float8 / float4 by f8Encode.
llvm::Value* narrowFloat(llvm::IRBuilder<>& b, llvm::Module& m, DType t, llvm::Value* f,
                         bool saturate) {
  if (isByteFloat(t)) return f8Encode(b, m, t, f, saturate);
  if (t == DType::F8E8M0) { // f32's exponent field: the value is a power of two (loop/compute.cpp
                            // castToE8m0 rounds first), 2^-127 (field 0: code 0) or NaN (0xff)
    llvm::Value* x = b.CreateBitCast(f, b.getInt32Ty());
    llvm::Value* e = b.CreateAnd(b.CreateLShr(x, 23), b.getInt32(0xff));
    return b.CreateTrunc(b.CreateSelect(b.CreateFCmpUNO(f, f), b.getInt32(0xff), e), b.getInt8Ty());
  }
  if (t == DType::F16) return b.CreateBitCast(b.CreateFPTrunc(f, b.getHalfTy()), b.getInt16Ty());
  llvm::Value* x = b.CreateBitCast(f, b.getInt32Ty());
  llvm::Value* lsb = b.CreateAnd(b.CreateLShr(x, 16), b.getInt32(1));
  llvm::Value* rounded = b.CreateLShr(b.CreateAdd(x, b.CreateAdd(lsb, b.getInt32(0x7fff))), 16);
  llvm::Value* nan = b.CreateOr(b.CreateLShr(x, 16), b.getInt32(0x40)); // quieted
  return b.CreateTrunc(b.CreateSelect(b.CreateFCmpUNO(f, f), nan, rounded), b.getInt16Ty());
}

} // namespace aicc::codegen
