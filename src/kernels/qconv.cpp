#include "kernels/qconv.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <type_traits>
#include <vector>

#include "kernels/thread_pool.h"

namespace aicc::kernels {

namespace {

// Accumulation of one output channel over its reduction: o[p] += w[k] * col[k][p] (int32 products
// of int16 operands, exact). Zero weights are skipped as the reference kernel does (same result).
// Cloned for AVX2 so the inner loop vectorizes 8 lanes wide where the CPU allows.
#if defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
void accumulateRow(const int16_t* __restrict w, const int16_t* __restrict col, int64_t Kc, int64_t P,
              int32_t* __restrict o) {
  for (int64_t k = 0; k < Kc; ++k) {
    const int32_t wk = w[k];
    if (wk == 0) continue;
    const int16_t* __restrict c = col + k * P;
    for (int64_t p = 0; p < P; ++p) o[p] += wk * static_cast<int32_t>(c[p]);
  }
}

// x - xzp as int16 for one channel plane.
template <typename T> int16_t shifted(const void* x, int64_t i, int32_t zp) {
  return static_cast<int16_t>(static_cast<int32_t>(static_cast<const T*>(x)[i]) - zp);
}

// im2col of one image and group: col[(c, ky, kx)][(oy, ox)] = x - xzp, 0 outside the image (the
// reference kernel's padding, which reads as the zero point).
template <typename T>
void im2col(const QConvShape& s, const void* x, int64_t c0, int32_t xzp, int16_t* col) {
  const int64_t OH = s.OH(), OW = s.OW(), cg = s.C / s.group;
  for (int64_t ci = 0; ci < cg; ++ci) {
    const int64_t plane = (c0 + ci) * s.H * s.W;
    for (int64_t ky = 0; ky < s.KH; ++ky)
      for (int64_t kx = 0; kx < s.KW; ++kx)
        for (int64_t oy = 0; oy < OH; ++oy) {
          const int64_t iy = oy * s.strideH - s.padTop + ky * s.dilH;
          const bool rowOk = iy >= 0 && iy < s.H;
          for (int64_t ox = 0; ox < OW; ++ox) {
            const int64_t ix = ox * s.strideW - s.padLeft + kx * s.dilW;
            *col++ = rowOk && ix >= 0 && ix < s.W ? shifted<T>(x, plane + iy * s.W + ix, xzp) : 0;
          }
        }
  }
}

// y = saturate(nearbyint(float(acc) * factor) + yzp), exactly as the reference kernel.
template <typename T> void requantize(const int32_t* acc, int64_t P, float factor, int32_t yzp,
                                      T* y) {
  const double lo = std::is_signed_v<T> ? -128.0 : 0.0, hi = std::is_signed_v<T> ? 127.0 : 255.0;
  for (int64_t p = 0; p < P; ++p) {
    const float v = static_cast<float>(acc[p]) * factor;
    double q = std::nearbyint(static_cast<double>(std::nearbyint(v)) + yzp);
    if (std::isnan(q)) q = 0.0;
    y[p] = static_cast<T>(std::clamp(q, lo, hi));
  }
}

struct Job {
  const QConvShape& s;
  const QConvParams& q;
  const void* x;
  const int16_t* w16;
  const int32_t* bias;
  const float* factor;
  void* y;
};

// Output channels [m0, m1) of image n from its group's im2col buffer.
template <typename Y>
void channels(const Job& j, int64_t n, const int16_t* col, int64_t m0, int64_t m1,
              std::vector<int32_t>& acc) {
  const int64_t P = j.s.OH() * j.s.OW(), Kc = j.s.Kc();
  acc.resize(static_cast<size_t>(P));
  for (int64_t m = m0; m < m1; ++m) {
    std::fill(acc.begin(), acc.end(), j.bias ? j.bias[m] : 0);
    accumulateRow(j.w16 + m * Kc, col, Kc, P, acc.data());
    requantize(acc.data(), P, j.factor[m], j.q.yzp, static_cast<Y*>(j.y) + (n * j.s.M + m) * P);
  }
}

template <typename X, typename Y> void run(const Job& j, ThreadPool* pool) {
  const QConvShape& s = j.s;
  const int64_t P = s.OH() * s.OW(), Kc = s.Kc(), cg = s.C / s.group, mg = s.M / s.group;
  const size_t colSize = static_cast<size_t>(Kc * P);
  auto parallel = [&](int64_t n, const std::function<void(int64_t)>& f) {
    if (pool && n > 1)
      pool->parallelFor(n, f);
    else
      for (int64_t i = 0; i < n; ++i) f(i);
  };
  for (int64_t n = 0; n < s.N; ++n) {
    const void* xn = static_cast<const X*>(j.x) + n * s.C * s.H * s.W;
    if (s.group == 1) { // one im2col, output channels in parallel chunks
      std::vector<int16_t> col(colSize);
      im2col<X>(s, xn, 0, j.q.xzp, col.data());
      const int64_t chunk = std::max<int64_t>(1, (s.M + 31) / 32);
      parallel((s.M + chunk - 1) / chunk, [&](int64_t c) {
        std::vector<int32_t> acc;
        channels<Y>(j, n, col.data(), c * chunk, std::min(s.M, (c + 1) * chunk), acc);
      });
      continue;
    }
    parallel(s.group, [&](int64_t g) { // groups in parallel, each with its own im2col
      std::vector<int16_t> col(colSize);
      std::vector<int32_t> acc;
      im2col<X>(s, xn, g * cg, j.q.xzp, col.data());
      channels<Y>(j, n, col.data(), g * mg, (g + 1) * mg, acc);
    });
  }
}

} // namespace

void qlinearConv2d(const QConvShape& s, const QConvParams& q, const void* x, const int16_t* w16,
                   const int32_t* bias, const float* factor, void* y, ThreadPool* pool) {
  const Job j{s, q, x, w16, bias, factor, y};
  if (q.xSigned)
    q.ySigned ? run<int8_t, int8_t>(j, pool) : run<int8_t, uint8_t>(j, pool);
  else
    q.ySigned ? run<uint8_t, int8_t>(j, pool) : run<uint8_t, uint8_t>(j, pool);
}

} // namespace aicc::kernels
