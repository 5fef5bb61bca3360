#include "codegen/llvm/vector_math.h"

#include <llvm/IR/Intrinsics.h>

#include <initializer_list>

namespace aicc::codegen {

namespace {

struct F {
  llvm::IRBuilder<>& b;
  llvm::Type* ty; // float or <N x float>
  llvm::Value* c(double v) { return llvm::ConstantFP::get(ty, v); }
  llvm::Value* add(llvm::Value* x, llvm::Value* y) { return b.CreateFAdd(x, y); }
  llvm::Value* sub(llvm::Value* x, llvm::Value* y) { return b.CreateFSub(x, y); }
  llvm::Value* mul(llvm::Value* x, llvm::Value* y) { return b.CreateFMul(x, y); }
  llvm::Value* div(llvm::Value* x, llvm::Value* y) { return b.CreateFDiv(x, y); }
  llvm::Value* fma(llvm::Value* x, llvm::Value* y, llvm::Value* z) {
    return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ty}, {x, y, z});
  }
  llvm::Value* abs(llvm::Value* x) { return b.CreateIntrinsic(llvm::Intrinsic::fabs, {ty}, {x}); }
  llvm::Value* sel(llvm::Value* cond, llvm::Value* x, llvm::Value* y) {
    return b.CreateSelect(cond, x, y);
  }
  // Horner: coefficients from the highest power down.
  llvm::Value* poly(llvm::Value* x, std::initializer_list<double> cs) {
    llvm::Value* r = nullptr;
    for (double k : cs) r = r ? fma(r, x, c(k)) : c(k);
    return r;
  }
  llvm::Value* isNan(llvm::Value* x) { return b.CreateFCmpUNO(x, x); }
  llvm::Value* copySign(llvm::Value* mag, llvm::Value* sgn) {
    return b.CreateIntrinsic(llvm::Intrinsic::copysign, {ty}, {mag, sgn});
  }
};

F make(llvm::IRBuilder<>& b, llvm::Value* x) { return F{b, x->getType()}; }

} // namespace

llvm::Value* emitExpF32(llvm::IRBuilder<>& b, llvm::Value* x) {
  F f = make(b, x);
  llvm::Type* ity = x->getType()->isVectorTy()
                        ? static_cast<llvm::Type*>(llvm::VectorType::get(
                              b.getInt32Ty(), llvm::cast<llvm::VectorType>(x->getType())))
                        : b.getInt32Ty();
  // exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 (Cody-Waite, two parts). x is
  // clamped to [-104, 88.73] (beyond: 0 and +inf by the final scaling itself).
  llvm::Value* xc = b.CreateIntrinsic(llvm::Intrinsic::minnum, {f.ty}, {x, f.c(88.73)});
  xc = b.CreateIntrinsic(llvm::Intrinsic::maxnum, {f.ty}, {xc, f.c(-104.0)});
  llvm::Value* n = b.CreateIntrinsic(llvm::Intrinsic::rint, {f.ty},
                                     {f.mul(xc, f.c(1.44269504088896341))});
  llvm::Value* r = f.fma(n, f.c(-0.693359375), xc);
  r = f.fma(n, f.c(2.12194440e-4), r);
  llvm::Value* r2 = f.mul(r, r);
  llvm::Value* p = f.poly(r, {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2,
                              1.6666665459E-1, 5.0000001201E-1});
  p = f.add(f.fma(p, r2, r), f.c(1.0));
  // 2^n as 2^h * 2^(n-h), h = n >> 1: both factors are normal for n in [-150, 128], so overflow
  // and gradual underflow happen in the multiplications.
  llvm::Value* ni = b.CreateFPToSI(n, ity);
  llvm::Value* h = b.CreateAShr(ni, llvm::ConstantInt::get(ity, 1));
  auto pow2 = [&](llvm::Value* e) {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, llvm::ConstantInt::get(ity, 127)),
                                       llvm::ConstantInt::get(ity, 23)),
                           f.ty);
  };
  llvm::Value* res = f.mul(f.mul(p, pow2(h)), pow2(b.CreateSub(ni, h)));
  return f.sel(f.isNan(x), x, res);
}

llvm::Value* emitSigmoidF32(llvm::IRBuilder<>& b, llvm::Value* x) {
  F f = make(b, x);
  llvm::Value* e = emitExpF32(b, f.b.CreateFNeg(f.abs(x))); // exp(-|x|) in (0, 1]
  llvm::Value* pos = f.div(f.c(1.0), f.add(f.c(1.0), e));
  llvm::Value* neg = f.div(e, f.add(f.c(1.0), e));
  llvm::Value* r = f.sel(b.CreateFCmpOGE(x, f.c(0.0)), pos, neg);
  return f.sel(f.isNan(x), x, r);
}

llvm::Value* emitTanhF32(llvm::IRBuilder<>& b, llvm::Value* x) {
  F f = make(b, x);
  llvm::Value* ax = f.abs(x);
  // Small: x + x^3 P(x^2) (Cephes tanhf).
  llvm::Value* z = f.mul(x, x);
  llvm::Value* p = f.poly(z, {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2,
                              1.33314422036E-1, -3.33332819422E-1});
  llvm::Value* small = f.fma(f.mul(p, z), x, x);
  // Large: 1 - 2 / (exp(2|x|) + 1), with the sign of x; exactly 1 past 9.
  llvm::Value* e = emitExpF32(b, f.mul(ax, f.c(2.0)));
  llvm::Value* big = f.sub(f.c(1.0), f.div(f.c(2.0), f.add(e, f.c(1.0))));
  big = f.sel(b.CreateFCmpOGT(ax, f.c(9.0)), f.c(1.0), big);
  big = f.copySign(big, x);
  llvm::Value* r = f.sel(b.CreateFCmpOLT(ax, f.c(0.625)), small, big);
  return f.sel(f.isNan(x), x, r);
}

llvm::Value* emitErfF32(llvm::IRBuilder<>& b, llvm::Value* x) {
  F f = make(b, x);
  llvm::Value* ax = f.abs(x);
  // |x| < 0.5: Maclaurin series 2/sqrt(pi) * (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - ...).
  llvm::Value* z = f.mul(x, x);
  const double k = 1.1283791670955126; // 2 / sqrt(pi)
  llvm::Value* p = f.poly(z, {-k / 75600.0, k / 9360.0, -k / 1320.0, k / 216.0, -k / 42.0,
                              k / 10.0, -k / 3.0, k});
  llvm::Value* small = f.mul(p, x);
  // Otherwise erfc(|x|) = t exp(-x^2 - 1.26551223 + t P(t)), t = 1 / (1 + |x|/2) (fractional
  // error < 1.2e-7, Numerical Recipes' erfcc); erf = sign(x) (1 - erfc).
  llvm::Value* t = f.div(f.c(1.0), f.fma(ax, f.c(0.5), f.c(1.0)));
  llvm::Value* q = f.poly(t, {0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807,
                              -0.18628806, 0.09678418, 0.37409196, 1.00002368, -1.26551223});
  llvm::Value* erfc = f.mul(t, emitExpF32(b, f.sub(q, z)));
  llvm::Value* big = f.copySign(f.sub(f.c(1.0), erfc), x);
  llvm::Value* r = f.sel(b.CreateFCmpOLT(ax, f.c(0.5)), small, big);
  return f.sel(f.isNan(x), x, r);
}

} // namespace aicc::codegen
