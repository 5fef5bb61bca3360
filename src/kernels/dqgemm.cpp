#include "kernels/dqgemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kernels/thread_pool.h"

namespace aicc::kernels {

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Quads of k per packed panel row, padded to the kernel's K alignment.
int64_t kgroupsOf(const KernelDesc& kd, int64_t K) {
  const int64_t u = std::max(1, kd.kuAlign);
  return ceilDiv(ceilDiv(K, 4), u) * u;
}

// Wrap-around int32 of an int64 (the offsets are exact modulo 2^32, as the kernels' adds).
int32_t wrap32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

} // namespace

bool dqgemmTakes(const int16_t* w, int64_t count) {
  return std::all_of(w, w + count, [](int16_t v) { return v >= -128 && v <= 127; });
}

int64_t dqgemmPackedBytes(const KernelDesc& kd, int64_t K, int64_t N) {
  return ceilDiv(N, kd.nr) * kgroupsOf(kd, K) * kd.nr * 4;
}

void packDqGemmWeights(const KernelDesc& kd, int64_t K, int64_t N, const int16_t* w, void* dst) {
  // w within int8 as its bytes: the run-time packer's i8 form (c = 0).
  std::vector<uint8_t> bytes(size_t(K * N));
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(int8_t(w[i]));
  std::vector<int32_t> colSum(static_cast<size_t>(N)); // (the callers keep their own)
  packDqGemmBytes(kd, K, N, bytes.data(), true, dst, colSum.data());
}

// Four input rows interleaved into int8 quads: d[j * 4 + c] = r[c][j] ^ flip for j < n.
void interleave4(const uint8_t* const r[4], int64_t n, uint8_t flip, uint8_t* d) {
  int64_t j = 0;
#if defined(__SSE2__)
  const __m128i f = _mm_set1_epi8(char(flip));
  for (; j + 16 <= n; j += 16) {
    __m128i a = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[0] + j)), f);
    __m128i b = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[1] + j)), f);
    __m128i c = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[2] + j)), f);
    __m128i e = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[3] + j)), f);
    const __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
    const __m128i ce0 = _mm_unpacklo_epi8(c, e), ce1 = _mm_unpackhi_epi8(c, e);
    auto* out = reinterpret_cast<__m128i*>(d + 4 * j);
    _mm_storeu_si128(out + 0, _mm_unpacklo_epi16(ab0, ce0));
    _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(ab0, ce0));
    _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(ab1, ce1));
    _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(ab1, ce1));
  }
#endif
  for (; j < n; ++j)
    for (int c = 0; c < 4; ++c) d[j * 4 + c] = r[c][j] ^ flip;
}

void packDqGemmBytes(const KernelDesc& kd, int64_t K, int64_t N, const uint8_t* b, bool bSigned,
                     void* dst, int32_t* colSum) {
  // The packed byte of w: AMX's signed operand holds w (u8: b ^ 0x80), the VNNI tile's unsigned
  // one w + 128 (i8: b ^ 0x80); padding (k past K, columns past N) is byte 0, which adds nothing
  // in either orientation (the activations past K are packed as 0 too).
  const uint8_t flip = kd.aRows != bSigned ? 0x80 : 0;
  const int64_t kg = kgroupsOf(kd, K), NR = kd.nr;
  auto* d = static_cast<uint8_t*>(dst);
  std::memset(d, 0, size_t(dqgemmPackedBytes(kd, K, N)));
  const std::vector<uint8_t> padRow(size_t(NR), flip); // k past K: flip ^ flip = 0
  for (int64_t p = 0; p * NR < N; ++p) {
    const int64_t n0 = p * NR, nr = std::min(NR, N - n0);
    for (int64_t k = 0; k < K; k += 4) {
      const uint8_t* r[4];
      for (int64_t c = 0; c < 4; ++c) r[c] = k + c < K ? b + (k + c) * N + n0 : padRow.data();
      interleave4(r, nr, flip, d + ((p * kg + k / 4) * NR) * 4);
    }
  }
  const int32_t c = bSigned ? 0 : 128;
  for (int64_t n = 0; n < N; ++n) colSum[n] = int32_t(-c * K);
  for (int64_t k = 0; k < K; ++k)
    if (bSigned)
      for (int64_t n = 0; n < N; ++n) colSum[n] += int32_t(int8_t(b[k * N + n]));
    else
      for (int64_t n = 0; n < N; ++n) colSum[n] += int32_t(b[k * N + n]);
}

namespace {

// y (f32, scaled) or y32 (the int32 sums): the one driver of both.
void run(const KernelDesc& kd, int64_t M, int64_t N, int64_t K, const uint8_t* a, int64_t lda,
         int32_t azp, const void* wp, const int32_t* colSum, const float* scale, float* y,
         int32_t* y32, int64_t ldy, ThreadPool* pool) {
  if (M <= 0 || N <= 0) return;
  const int64_t kg = kgroupsOf(kd, K), MR = kd.mr, NR = kd.nr;
  const int64_t panels = ceilDiv(N, NR), blocks = ceilDiv(M, MR);
  // Per-call buffers, grown once per thread (the workers get their pointers).
  thread_local std::vector<int32_t> colOff, rowOff;
  thread_local std::vector<float> sc;
  thread_local std::vector<uint8_t> packedA;
  const int32_t shift = kd.aRows ? 0 : 128; // VNNI: the weights are stored plus 128
  colOff.assign(size_t(panels * NR), 0);
  sc.assign(size_t(panels * NR), 0.0f);
  for (int64_t n = 0; n < N; ++n) {
    colOff[size_t(n)] = wrap32(int64_t(shift - azp) * colSum[n]);
    sc[size_t(n)] = scale ? scale[n] : 0.0f;
  }
  rowOff.assign(size_t(blocks * MR), 0);
  const uint8_t* A = a;
  int64_t aStride = lda;
  if (kd.aRows) {
    // AMX reads 64 bytes of k a step and 16 or 32 rows a tile: in place when those exist.
    if (K % 64 != 0 || M % 16 != 0) {
      aStride = kg * 4;
      packedA.assign(size_t(blocks * MR * aStride), 0);
      for (int64_t m = 0; m < M; ++m)
        std::memcpy(packedA.data() + m * aStride, a + m * lda, size_t(K));
      A = packedA.data();
    }
  } else {
    // VNNI: blocks of MR rows as [kg][MR][4] int8 quads of a - 128 (k past K and rows past M: 0),
    // with sum_k (a - 128) (w + 128) = sum a w + 128 sum a - 128 sum w - 16384 K undone by
    // rowOff = 16384 K - 128 sum a and colOff = (128 - azp) sum w.
    packedA.assign(size_t(blocks * kg * MR * 4), 0);
    for (int64_t m = 0; m < M; ++m) {
      const uint8_t* row = a + m * lda;
      uint8_t* d = packedA.data() + (m / MR) * kg * MR * 4 + (m % MR) * 4;
      int64_t sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += row[k];
      const int64_t whole = K / 4;
      for (int64_t q = 0; q < whole; ++q) {
        uint32_t v;
        std::memcpy(&v, row + 4 * q, 4);
        v ^= 0x80808080u;
        std::memcpy(d + q * MR * 4, &v, 4);
      }
      for (int64_t k = whole * 4; k < K; ++k) d[whole * MR * 4 + k % 4] = row[k] ^ 0x80;
      rowOff[size_t(m)] = wrap32(16384 * K - 128 * sum);
    }
    A = packedA.data();
  }
  const int32_t *co = colOff.data(), *ro = rowOff.data();
  const float* s = sc.data();
  const auto* w = static_cast<const uint8_t*>(wp);
  // Tiles panel-major (each panel's row blocks in a row, its weights staying in cache), split into
  // one contiguous range per thread.
  const int64_t tiles = panels * blocks;
  const int64_t T = pool ? std::min<int64_t>(pool->numThreads(), tiles) : 1;
  auto part = [&](int64_t t) {
    for (int64_t i = tiles * t / T; i < tiles * (t + 1) / T; ++i) {
      const int64_t p = i / blocks, blk = i % blocks;
      DqGemmTileParams tp;
      tp.a = kd.aRows ? A + blk * MR * aStride : A + blk * kg * MR * 4;
      tp.lda = aStride;
      tp.b = w + p * kg * NR * 4;
      tp.kgroups = kg;
      tp.mr = std::min(MR, M - blk * MR);
      tp.nr = std::min(NR, N - p * NR);
      tp.rowOffset = ro + blk * MR;
      tp.colOffset = co + p * NR;
      tp.scale = s + p * NR;
      tp.y = y ? y + blk * MR * ldy + p * NR : nullptr;
      tp.y32 = y32 ? y32 + blk * MR * ldy + p * NR : nullptr;
      tp.ldy = ldy;
      kd.dqgemm(tp);
    }
  };
  if (T > 1)
    pool->parallelFor(T, part);
  else
    part(0);
}

} // namespace

void dqgemm(const KernelDesc& kd, int64_t M, int64_t N, int64_t K, const uint8_t* a, int64_t lda,
            int32_t azp, const void* wp, const int32_t* colSum, const float* scale, float* y,
            int64_t ldy, ThreadPool* pool) {
  run(kd, M, N, K, a, lda, azp, wp, colSum, scale, y, nullptr, ldy, pool);
}

void dqgemmSums(const KernelDesc& kd, int64_t M, int64_t N, int64_t K, const uint8_t* a,
                int64_t lda, int32_t azp, const void* wp, const int32_t* colSum, ThreadPool* pool,
                const std::function<void(int64_t r0, int64_t r1, const int32_t* sums)>& rows) {
  thread_local std::vector<int32_t> acc;
  acc.resize(size_t(M * N));
  const int32_t* sums = acc.data(); // the workers' view of the caller's buffer
  run(kd, M, N, K, a, lda, azp, wp, colSum, nullptr, nullptr, acc.data(), N, pool);
  const int64_t T = pool ? std::min<int64_t>(pool->numThreads(), M) : 1;
  if (T > 1)
    pool->parallelFor(T, [&](int64_t t) { rows(M * t / T, M * (t + 1) / T, sums); });
  else
    rows(0, M, sums);
}

} // namespace aicc::kernels
