// QLinearMatMul with a constant b (ONNX), with the reference kernel's arithmetic
// (src/ops/quant.cpp): for rows r < R of a [R, K] (u8/i8) and columns n < N,
//   acc = sum over k of (a[r, k] - azp) * (b[k, n] - bzp[n])      (exact int32)
//   y[r, n] = saturate(nearbyint(double(acc) * factor[n] + yzp))  (round half to even)
// where factor[n] is the reference's f32 (a_scale * b_scale[n]) / y_scale, held as a double.
// The weights b - bzp are stored transposed, wT [N, K] int8 (packQMatMulWeights), so each output
// is one contiguous dot product: a batch-1 classifier streams its weights once, split over the
// threads by columns.
#pragma once

#include <cstdint>

namespace aicc::kernels {

class ThreadPool;
struct KernelDesc;

struct QMatMulShape {
  int64_t R = 1, K = 0, N = 0;
  bool aSigned = false, ySigned = false;
  int32_t azp = 0, yzp = 0;
};

// b [K, N] (b - bzp as int16 values) as wT [N, K] int8; false (wT untouched) when a value is
// outside int8.
bool packQMatMulWeights(int64_t K, int64_t N, const int16_t* b, int8_t* wT);
// a [R, K] bytes, wT [N, K], factor [N] (finite), y [R, N] bytes. Runs on `pool`.
void qmatmul(const QMatMulShape& s, const uint8_t* a, const int8_t* wT, const double* factor,
             uint8_t* y, ThreadPool* pool);
// The same for many rows of a u8 a on the int8 GEMM tiles of `kd` (KernelOp::DqGemm,
// kernels/dqgemm.h: b - bzp packed by packDqGemmWeights, colSum its column sums): the exact int32
// sums, then the requantization above.
void qmatmulTiles(const KernelDesc& kd, const QMatMulShape& s, const uint8_t* a, const void* wp,
                  const int32_t* colSum, const double* factor, uint8_t* y, ThreadPool* pool);

// QLinearMatMul of two run-time operands (a QDQ attention's Q K^T and P V), per tensor scales and
// zero points: `batches` products of a [R, K] u8 (a + i * aStride) and b [K, N] u8/i8 (b + i *
// bStride; a stride 0 broadcasts) into y [batches, R, N]. Per product b is packed for the tiles of
// `kd` as w = b - c (c = 128 for u8, 0 for i8: within int8), the tiles give sum (a - azp) w, and
// (c - bzp) * sum (a - azp) per row completes the exact int32 sums; then the requantization above
// with the one factor. The products are split over the threads (one product: its columns).
struct QMatMulPairs {
  int64_t batches = 1, aStride = 0, bStride = 0;
  bool bSigned = false;
  int32_t bzp = 0;
  double factor = 0;
};
void qmatmulPairs(const KernelDesc& kd, const QMatMulShape& s, const QMatMulPairs& p,
                  const uint8_t* a, const uint8_t* b, uint8_t* y, ThreadPool* pool);

} // namespace aicc::kernels
