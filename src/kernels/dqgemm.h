// The int8 GEMM with f32 results (com.microsoft.MatMulIntegerToFloat with a constant B: what
// ONNX Runtime's quantize_dynamic MatMuls become, passes/fold_qdq.h), with the arithmetic of the
// reference kernel (src/ops/quant.cpp):
//   y[m, n] = float(sum over k of (a[m, k] - azp) * w[k, n]) * scale[n]
// for a [M, K] uint8 (DynamicQuantizeLinear's output), w = b - b_zero_point within int8 (packed at
// compile time), scale[n] = f32(a_scale * b_scale[n]) (formed per call: a_scale is a run-time
// value), the sums exact in int32 and converted with round to nearest even, as the reference.
// The micro-kernels (KernelOp::DqGemm, ukernel.h's DqGemmTileParams) take the activations as rows:
//   - AMX (tdpbusd: unsigned A x signed B): a's rows read in place (copied when K is not a
//     multiple of 64 or M of 16), w as int8 panels;
//   - AVX512-VNNI (vpdpbusd, its broadcast operand signed): a - 128 packed per call as int8, w +
//     128 as uint8 panels; the offsets sum_k 128 * (128 - a) per row and (128 - azp) * sum_k w per
//     column undo both shifts and the zero point.
// The columns are split over the threads in panels; each thread runs every row block of its
// panels, the panel staying in cache.
#pragma once

#include <cstdint>
#include <functional>

#include "kernels/registry.h"

namespace aicc::kernels {

class ThreadPool;

// Whether every value of w (b - b_zero_point, `count` int16 values) is within int8.
bool dqgemmTakes(const int16_t* w, int64_t count);
// Bytes of w [K, N] packed for `kd`: ceil(N / NR) panels of kgroups x NR x 4 bytes.
int64_t dqgemmPackedBytes(const KernelDesc& kd, int64_t K, int64_t N);
// Packs w [K, N] (int16 values within int8) into dst (dqgemmPackedBytes bytes): packDqGemmBytes
// of its bytes.
void packDqGemmWeights(const KernelDesc& kd, int64_t K, int64_t N, const int16_t* w, void* dst);
// Four byte rows interleaved into quads, the packed layout: d[j * 4 + c] = r[c][j] ^ flip, j < n.
void interleave4(const uint8_t* const r[4], int64_t n, uint8_t flip, uint8_t* d);
// The same for a run-time b [K, N] of bytes (QLinearMatMul of two run-time operands): w = b - c,
// c = 128 for u8 (bSigned false), 0 for i8, always within int8; colSum [N] = sum over k of w.
void packDqGemmBytes(const KernelDesc& kd, int64_t K, int64_t N, const uint8_t* b, bool bSigned,
                     void* dst, int32_t* colSum);
// y [M, N] (rows ldy floats apart) from a [M, K] (rows lda bytes apart), the packed weights, their
// column sums colSum [N] (sum over k of w[k, n]) and scale [N]. Runs on `pool`.
void dqgemm(const KernelDesc& kd, int64_t M, int64_t N, int64_t K, const uint8_t* a, int64_t lda,
            int32_t azp, const void* wp, const int32_t* colSum, const float* scale, float* y,
            int64_t ldy, ThreadPool* pool);
// The same without the scaling, for the ops that requantize the exact int32 sums themselves
// (QLinearMatMul, a 1x1 QLinearConv over one-pixel images): the sums into a buffer of the calling
// thread, then rows(r0, r1, sums) over ranges of rows split across `pool` (sums [M, N] row-major,
// valid during the call).
void dqgemmSums(const KernelDesc& kd, int64_t M, int64_t N, int64_t K, const uint8_t* a,
                int64_t lda, int32_t azp, const void* wp, const int32_t* colSum, ThreadPool* pool,
                const std::function<void(int64_t r0, int64_t r1, const int32_t* sums)>& rows);

} // namespace aicc::kernels
