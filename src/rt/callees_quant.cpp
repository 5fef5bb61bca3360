// Quantized micro-kernel calls of lowered code (JIT only: LowerOptions::runtimeKernels), next to
// the f32 ones of rt/callees.cpp. Contract:
//   @qconv2d_nchw(x, w16, bias | 0, factor, y, N, C, H, W, M, group, KH, KW, sH, sW, padTop,
//       padLeft, padBottom, padRight, dilH, dilW, xzp, yzp, flags)
//       ONNX QLinearConv (kernels/qconv.h): x [N,C,H,W] u8/i8, w16 [M, C/group*KH*KW] int16
//       (w - wzp[m]), bias [M] i32, factor [M] f32, y [N,M,OH,OW] u8/i8;
//       flags bit 0 = x is i8, bit 1 = y is i8.
// Buffer arguments: see rt/callees.h.
#include "kernels/qconv.h"
#include "rt/callees.h"
#include "rt/error.h"

namespace aicc::rt {

namespace {

// Address of buffer argument i, checked to hold `need` elements of `elemBytes` bytes.
void* bytesAt(const std::string& k, std::vector<KernelArg>& a, size_t i, int64_t need,
              size_t elemBytes, const char* what) {
  AICC_RT_CHECK(i < a.size() && a[i].isBuffer, "call @{}: argument {} ({}) must be a buffer", k, i,
                what);
  AICC_RT_CHECK(need >= 0 && need <= a[i].bytes / int64_t(elemBytes),
                "call @{}: {} needs {} elements of {} bytes but the buffer has {} bytes", k, what,
                need, elemBytes, a[i].bytes);
  return a[i].ptr;
}

int64_t intArg(const std::string& k, const std::vector<KernelArg>& a, size_t i) {
  AICC_RT_CHECK(i < a.size() && !a[i].isBuffer && !a[i].isFloat,
                "call @{}: argument {} must be an integer", k, i);
  return a[i].i;
}

void callQConv(const std::string& k, std::vector<KernelArg>& a, kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 24, "call @{}: expects 24 arguments, got {}", k, a.size());
  kernels::QConvShape s;
  int64_t* f[] = {&s.N,         &s.C,        &s.H,       &s.W,       &s.M,      &s.group,
                  &s.KH,        &s.KW,       &s.strideH, &s.strideW, &s.padTop, &s.padLeft,
                  &s.padBottom, &s.padRight, &s.dilH,    &s.dilW};
  for (size_t j = 0; j < 16; ++j) *f[j] = intArg(k, a, 5 + j);
  kernels::QConvParams q;
  q.xzp = static_cast<int32_t>(intArg(k, a, 21));
  q.yzp = static_cast<int32_t>(intArg(k, a, 22));
  const int64_t flags = intArg(k, a, 23);
  q.xSigned = flags & 1, q.ySigned = flags & 2;
  AICC_RT_CHECK(s.N > 0 && s.C > 0 && s.H > 0 && s.W > 0 && s.M > 0 && s.group > 0 &&
                    s.C % s.group == 0 && s.M % s.group == 0 && s.KH > 0 && s.KW > 0 &&
                    s.strideH > 0 && s.strideW > 0 && s.dilH > 0 && s.dilW > 0 && s.padTop >= 0 &&
                    s.padLeft >= 0 && s.padBottom >= 0 && s.padRight >= 0 && s.OH() > 0 &&
                    s.OW() > 0,
                "call @{}: bad convolution shape", k);
  const void* x = bytesAt(k, a, 0, s.N * s.C * s.H * s.W, 1, "x");
  const auto* w = static_cast<const int16_t*>(bytesAt(k, a, 1, s.M * s.Kc(), 2, "w16"));
  const int32_t* bias = nullptr;
  if (a[2].isBuffer) bias = static_cast<const int32_t*>(bytesAt(k, a, 2, s.M, 4, "bias"));
  const auto* factor = static_cast<const float*>(bytesAt(k, a, 3, s.M, 4, "factor"));
  void* y = bytesAt(k, a, 4, s.N * s.M * s.OH() * s.OW(), 1, "y");
  kernels::qlinearConv2d(s, q, x, w, bias, factor, y, pool);
}

} // namespace

// The quantized callees (nullopt for any other name); rt/callees.cpp's builtinKernel
// consults it first.
std::optional<KernelFn> quantBuiltinKernel(const std::string& name, kernels::ThreadPool* pool) {
  if (name == "qconv2d_nchw")
    return KernelFn([name, pool](std::vector<KernelArg>& a) { callQConv(name, a, pool); });
  return std::nullopt;
}

} // namespace aicc::rt
