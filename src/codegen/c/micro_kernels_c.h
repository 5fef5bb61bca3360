// Portable C99 implementations of the micro-kernels that lowered code calls (`call @name(...)`),
// so a generated C bundle needs only libc/libm. The contracts are those of
// src/rt/callees.cpp (the reference executor's bindings):
//   @<gemm desc>(A, B, C, M, N, K, lda, ldb, ldc, transB)           -> aicc_gemm_f32
//   @conv2d_nchw_<gemm desc>(x, w, bias | 0, y, Cin, H, W, Cout, KH, KW, sH, sW, padTop, padLeft,
//                            padBottom, padRight, dilH, dilW)       -> aicc_conv2d_nchw_f32
//   @dwconv_nchw_<dw desc>(x, w, bias | 0, y, C, H, W, stride)      -> aicc_dwconv3x3_nchw_f32
// Every descriptor (ISA, tile) maps to the same portable function: tiles and ISAs are a
// performance choice, not a semantic one.
#pragma once

#include <optional>
#include <string>

namespace aicc::codegen {

struct MicroKernelC {
  std::string cName; // the portable C function
  std::string key;   // helper key (one definition per key)
  // One character per parameter: 'r' read-only f32 pointer, 'w' written f32 pointer,
  // 'n' nullable read-only f32 pointer (a value argument passes NULL), 'i' int64 value.
  std::string params;
};

// The portable implementation of callee `name`, or nullopt with *why set.
std::optional<MicroKernelC> findMicroKernelC(const std::string& name, std::string* why = nullptr);
// The C definition of a helper key returned by findMicroKernelC. The kernels form one group:
// "simd" (vector types and macros, fused multiply-adds on) once before them, "end" after.
std::string microKernelCSource(const std::string& key);

} // namespace aicc::codegen
