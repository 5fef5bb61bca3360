// f32 scaled dot-product attention on the GEMM micro-kernels, one (batch, head) pair at a time:
//   Y[b, h] = softmax(cap(scale * Q[b, h] K[b, h / rep]^T) + bias) V[b, h / rep]
// with Q [B, Hq, Sq, D], K [B, Hkv, Skv, D], V [B, Hkv, Skv, Dv], Y [B, Hq, Sq, Dv],
// rep = Hq / Hkv (grouped-query attention), each contiguous row-major or, with seqMajor, laid
// out [B, S, H * D] (ONNX Attention's 3-D form). cap(x) = softcap * tanh(x / softcap) when
// softcap > 0. The bias is the optional mask (additive f32, or bool: false = -inf), read through
// element strides (0 = broadcast dim), plus -inf where `causal` and j > i + causalOffset (the
// past length). A row whose scores are all -inf gives zeros, a row holding NaN gives NaN (as
// ONNX Attention's reference). The (b, h) pairs are split over the pool's threads. With a bf16
// GEMM kernel (--precision bf16) both products take bf16 operands (Q, K, V and the probabilities
// rounded to nearest even) with f32 accumulation; the softmax stays f32.
#pragma once

#include <cstdint>

#include "kernels/registry.h"

namespace aicc::kernels {

class ThreadPool;

struct AttentionShape {
  int64_t B = 1, Hq = 1, Hkv = 1, Sq = 1, Skv = 1, D = 1, Dv = 1;
  float scale = 1.0f;
  bool causal = false;
  int64_t causalOffset = 0;
  float softcap = 0.0f;
  bool seqMajor[4] = {false, false, false, false}; // Q, K, V, Y
  // Optional: the scores [B, Hq, Sq, Skv] at stage qkMode (0 scale * QK, 1 after the softcap,
  // 2 plus the bias, 3 the softmax), as ONNX Attention's qk_matmul_output.
  float* qk = nullptr;
  int qkMode = 0;
  // Mask: f32 (maskF) or bool bytes (maskB), element (b, h, i, j) at
  // b * maskStride[0] + h * maskStride[1] + i * maskStride[2] + j * maskStride[3].
  const float* maskF = nullptr;
  const uint8_t* maskB = nullptr;
  int64_t maskStride[4] = {0, 0, 0, 0};
};

void attentionF32(const KernelDesc& gemmKernel, const AttentionShape& s, const float* Q,
                  const float* K, const float* V, float* Y, ThreadPool* pool = nullptr);

} // namespace aicc::kernels
