// f32 GEMM on the micro-kernels: C[M,N] = act(A[M,K] * B[K,N] + bias[N]), A and C row-major,
// B pre-packed once (at compile time for weights) into the chosen kernel's panel layout.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>

#include "kernels/registry.h"

namespace aicc::kernels {

class ThreadPool;

// 64-byte aligned float storage.
struct AlignedFloats {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> ptr;
  int64_t size = 0;
  static AlignedFloats make(int64_t n); // zero-filled
  float* data() { return ptr.get(); }
  const float* data() const { return ptr.get(); }
};

enum class Activation { None, Relu, Clip }; // Relu6 is Clip(0, 6)

enum : unsigned { kBf16Input = 1u, kBf16Output = 2u, kBf16Residual = 4u };

// The fused epilogue: bias[N] (optional), a residual (optional), a clamp, an activation.
struct Epilogue {
  const float* bias = nullptr;
  Activation act = Activation::None;
  float clipMin = 0.0f, clipMax = 6.0f; // for Clip
  unsigned post = kActNone;             // ukernel.h kAct*, applied after the clamp
  const float* residual = nullptr;      // added before the clamp; C's shape and leading dimension
  // Activations stored as bf16 (--precision bf16; the convolution driver with a bf16 GEMM kernel):
  // kBf16Input (the input), kBf16Output (the output), kBf16Residual (the residual) hold bf16 bits
  // (uint16_t, the same element counts) where the pointers say float.
  unsigned bf16 = 0;
  static Epilogue none(const float* bias = nullptr) { return {bias, Activation::None}; }
  static Epilogue relu(const float* bias = nullptr) { return {bias, Activation::Relu}; }
  static Epilogue relu6(const float* bias = nullptr) { return {bias, Activation::Clip, 0.f, 6.f}; }
  float lo() const {
    return act == Activation::None   ? -std::numeric_limits<float>::infinity()
           : act == Activation::Relu ? 0.0f
                                     : clipMin;
  }
  float hi() const {
    return act == Activation::Clip ? clipMax : std::numeric_limits<float>::infinity();
  }
};

// B packed for one GEMM kernel. Layout: K is cut into blocks of kernel->kc rows; block b (rows
// k0..k0+kc) starts at k0 * Npad and holds ceil(N / nr) panels of kc x nr floats (k-major), the
// columns past N zero-filled. Npad = ceil(N / nr) * nr. For a bf16 kernel (kg 2) each float is a
// unit of two bf16 values of consecutive k (ukernel.h): block b starts at k0 / 2 * Npad and its
// panels are ceil(kc / 2) x nr units, the k past K zero.
struct PackedB {
  const KernelDesc* kernel = nullptr;
  int64_t K = 0, N = 0, Npad = 0;
  AlignedFloats data;
};

// Packs B for `kernel` (a KernelOp::Gemm or GemmBf16 descriptor). Element (k, n) is read from
// B[k * ldb + n], or from B[n * ldb + k] when transposed (e.g. ONNX Gemm transB / [N,K] weights).
PackedB packB(const KernelDesc& kernel, const float* B, int64_t K, int64_t N, int64_t ldb,
              bool transposed = false);
inline PackedB packB(const float* B, int64_t K, int64_t N) {
  return packB(defaultKernel(KernelOp::Gemm), B, K, N, N);
}

// C = act(A * B + bias) with A [M, K] (leading dimension lda) and C [M, N] (ldc). Splits the
// tiles over `pool`'s threads when given. Throws aicc::Error on bad arguments.
void gemm(const PackedB& b, int64_t M, const float* A, int64_t lda, float* C, int64_t ldc,
          const Epilogue& ep = {}, ThreadPool* pool = nullptr);

// The same product with B packed in place by the caller (e.g. a weight packed at compile time
// into a blob): `packedB` holds packedBFloats(kernel, K, N) floats in PackedB's layout.
int64_t packedBFloats(const KernelDesc& kernel, int64_t K, int64_t N);
void packBInto(const KernelDesc& kernel, const float* B, int64_t K, int64_t N, int64_t ldb,
               bool transposed, float* dst);
void gemmPackedB(const KernelDesc& kernel, const float* packedB, int64_t K, int64_t N, int64_t M,
                 const float* A, int64_t lda, float* C, int64_t ldc, const Epilogue& ep = {},
                 ThreadPool* pool = nullptr);

// A packed for one GEMM kernel (A is the constant operand, e.g. NCHW convolution weights
// [Cout, Cin*KH*KW]): K is cut into blocks of kernel->kc columns; block b (columns k0..k0+kc)
// starts at k0 * Mpad and holds ceil(M / mr) micro-panels of kc x mr floats (k-major, rows past
// M zero-filled). Mpad = ceil(M / mr) * mr. bf16 kernels: units of k pairs, as for B.
int64_t packedAFloats(const KernelDesc& kernel, int64_t M, int64_t K);
void packAInto(const KernelDesc& kernel, const float* A, int64_t M, int64_t K, int64_t lda,
               float* dst);

// Row blocks of a GEMM's packed operand (gemm.cpp, and conv.cpp's pixel rows): mc rows, but a
// short last one (up to mc / 4 rows) joins the block before it, so the B panels are not streamed
// once more for a few rows (M = 128 on the 14-row tile's mc 126 was 126 + 2: 128x3072x768 +7%,
// 128x768x768 +3% on an Intel Xeon). rowBlock: the rows of the block with `left` rows to go;
// rowBlockCapacity: the packed rows the largest block takes (whole micro-panels of mr).
inline int64_t rowBlock(int64_t mc, int64_t left) {
  const int64_t rows = std::min(mc, left);
  return left - rows <= mc / 4 ? left : rows;
}
inline int64_t rowBlockCapacity(int64_t mc, int64_t mr) { return (mc + mc / 4 + mr - 1) / mr * mr; }

// Tile j of `tiles` over the current weight panel prefetches its share of the next panel's bytes
// into L2 (GemmTileParams::pf: spread over its k loop): the lines of [nextBytes * j / tiles,
// nextBytes * (j + 1) / tiles) after next, none for a null next. Returns the first line's address.
inline const char* tileShare(const float* next, int64_t nextBytes, int64_t j, int64_t tiles,
                             int64_t& lines) {
  lines = 0;
  if (!next) return nullptr;
  const int64_t b0 = nextBytes * j / tiles / 64 * 64, b1 = nextBytes * (j + 1) / tiles;
  lines = b1 > b0 ? (b1 - b0 + 63) / 64 : 0;
  return reinterpret_cast<const char*>(next) + b0;
}

// The packed units of k values of K: k floats, or (k + 1) / 2 bf16 pairs for a bf16 kernel
// (inline: the convolution drivers ask per tile, where a call was ~1% of squeezenet's time).
inline int64_t packedKUnits(const KernelDesc& kernel, int64_t k) {
  const int64_t units = kernel.op == KernelOp::GemmBf16 ? (k + 1) / 2 : k;
  const int64_t align = std::max(1, kernel.kuAlign);
  return (units + align - 1) / align * align;
}

// f32 -> bf16 bits, rounded to nearest even (NaN stays NaN), as vcvtneps2bf16 for normal
// numbers; and its value as a float.
uint16_t bf16Bits(float x);
float bf16Round(float x);

// The fused activation kAct* of one value, in double (the tests' reference).
float activateScalar(float x, unsigned act);

// Plain reference GEMM (double accumulation) for tests: same contract, B unpacked [K, N].
void gemmReference(int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C,
                   const Epilogue& ep = {});

} // namespace aicc::kernels
