// The int8 convolution kernels (kernels/qconv.h) against a direct integer reference, bit for bit:
// every QConvGemm micro-kernel and every NCHW depthwise kernel this CPU runs (the others are
// listed as skipped), and every DqGemm kernel (the int8 GEMM with f32 results), over pointwise /
// padded / strided / dilated / grouped / depthwise shapes, u8 and i8 activations, saturating
// outputs, one and two threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/dqgemm.h"
#include "kernels/qconv.h"
#include "kernels/qmatmul.h"
#include "kernels/thread_pool.h"

namespace aicc::kernels {
namespace {

struct Case {
  QConvShape s;
  QConvParams q;
  int wLimit; // |w - wzp| <= wLimit
};

QConvShape shape(int64_t C, int64_t H, int64_t W, int64_t M, int64_t group, int64_t K,
                 int64_t stride, int64_t pad, int64_t dil) {
  QConvShape s;
  s.C = C, s.H = H, s.W = W, s.M = M, s.group = group, s.KH = s.KW = K;
  s.strideH = s.strideW = stride;
  s.padTop = s.padLeft = s.padBottom = s.padRight = pad;
  s.dilH = s.dilW = dil;
  return s;
}

// The reference kernel's arithmetic (src/ops/quant_conv.cpp) on raw bytes; the int32 sums
// before the requantization (ConvInteger's results, with the bias) into `sums`.
std::vector<uint8_t> reference(const Case& c, const std::vector<uint8_t>& x,
                               const std::vector<int16_t>& w, const std::vector<int32_t>& bias,
                               const std::vector<float>& factor, std::vector<int32_t>& sums) {
  const QConvShape& s = c.s;
  const int64_t OH = s.OH(), OW = s.OW(), cg = s.C / s.group, mg = s.M / s.group;
  std::vector<uint8_t> y(size_t(s.N * s.M * OH * OW));
  sums.assign(y.size(), 0);
  auto xval = [&](int64_t i) { return c.q.xSigned ? int32_t(int8_t(x[size_t(i)])) : x[size_t(i)]; };
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t m = 0; m < s.M; ++m)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          int64_t acc = bias.empty() ? 0 : bias[size_t(m)];
          const int64_t g = m / mg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < s.KH; ++ky)
              for (int64_t kx = 0; kx < s.KW; ++kx) {
                const int64_t iy = oy * s.strideH - s.padTop + ky * s.dilH;
                const int64_t ix = ox * s.strideW - s.padLeft + kx * s.dilW;
                if (iy < 0 || iy >= s.H || ix < 0 || ix >= s.W) continue;
                const int64_t xi = ((n * s.C + g * cg + ci) * s.H + iy) * s.W + ix;
                acc += int64_t(xval(xi) - c.q.xzp) *
                       w[size_t((m * cg + ci) * s.KH * s.KW + ky * s.KW + kx)];
              }
          sums[size_t(((n * s.M + m) * OH + oy) * OW + ox)] = int32_t(acc);
          const float v = float(int32_t(acc)) * factor[size_t(m)];
          const double lo = c.q.ySigned ? -128 : 0, hi = c.q.ySigned ? 127 : 255;
          const double r = std::clamp(double(std::nearbyint(v)) + c.q.yzp, lo, hi);
          y[size_t(((n * s.M + m) * OH + oy) * OW + ox)] = uint8_t(int32_t(r));
        }
  return y;
}

std::vector<Case> cases() {
  std::vector<Case> v;
  const QConvParams u8{false, false, 121, 130}, i8{true, true, -5, 4}, mixed{true, false, 3, 17};
  v.push_back({shape(16, 7, 9, 24, 1, 1, 1, 0, 1), u8, 127});   // pointwise
  v.push_back({shape(67, 5, 11, 37, 1, 1, 1, 0, 1), i8, 127});  // K and M tails, 55 pixels
  v.push_back({shape(3, 17, 15, 32, 1, 3, 2, 1, 1), u8, 127});  // the stem: K = 27
  v.push_back({shape(3, 12, 20, 16, 1, 5, 2, 2, 1), i8, 127});  // stride 2, 5x5, even width
  v.push_back({shape(4, 13, 16, 8, 1, 3, 3, 2, 1), u8, 127});   // stride 3
  // im2col larger than qconv.cpp's kWholeIm2colBytes: built per pixel panel.
  v.push_back({shape(64, 48, 48, 8, 1, 3, 1, 1, 1), u8, 127});
  v.push_back({shape(8, 9, 9, 16, 1, 3, 1, 2, 2), mixed, 127}); // dilated
  v.push_back({shape(8, 8, 8, 8, 4, 3, 1, 1, 1), i8, 127});     // grouped
  v.push_back({shape(64, 4, 4, 96, 1, 1, 1, 0, 1), u8, 255});   // wide weights, deep, 16 pixels
  v.push_back({shape(12, 30, 30, 20, 1, 1, 1, 0, 1), u8, 127}); // many pixel panels
  v.push_back({shape(40, 7, 7, 24, 1, 1, 1, 0, 1), i8, 127});   // a 1-pixel panel (49 = 48 + 1)
  v.push_back({shape(20, 14, 14, 12, 1, 1, 1, 0, 1), u8, 127}); // a 4-pixel panel, 4-row tail
  v.push_back({shape(9, 5, 10, 11, 1, 1, 1, 0, 1), i8, 127});   // a 2-pixel panel (50 = 48 + 2)
  return v;
}

TEST(QConvKernels, GemmTilesMatchReferenceOnEveryIsa) {
  ThreadPool pool(2);
  for (const auto& k : allKernels()) {
    if (k.op != KernelOp::QConvGemm) continue;
    if (!cpuSupports(k.isa)) {
      std::printf("[ skipped  ] %s: this CPU lacks %s\n", k.name,
                  std::string(isaName(k.isa)).c_str());
      continue;
    }
    std::mt19937 rng(11);
    for (const Case& c : cases()) {
      const QConvShape& s = c.s;
      std::vector<int16_t> w(size_t(s.M * s.Kc()));
      for (auto& e : w) e = int16_t(int(rng() % (2 * c.wLimit + 1)) - c.wLimit);
      if (!qconvGemmTakes(k, w.data(), int64_t(w.size()))) {
        EXPECT_EQ(k.kg, 4) << k.name; // only the int8-quad kernels refuse weights
        EXPECT_GT(c.wLimit, 127);
        continue;
      }
      std::vector<uint8_t> x(size_t(s.N * s.C * s.H * s.W));
      for (auto& e : x) e = uint8_t(rng());
      std::vector<int32_t> bias(size_t(s.M)), rowSum(size_t(s.M), 0);
      std::vector<float> factor(size_t(s.M));
      for (int64_t m = 0; m < s.M; ++m) {
        bias[size_t(m)] = int32_t(rng() % 20001) - 10000;
        factor[size_t(m)] = float(1e-4 * double(1 + rng() % 300)); // some saturate
        // Factors of 0.99 and up take the tiles' clamping requantization (Requant4 needs less).
        if (m % 11 == 5) factor[size_t(m)] = m % 2 ? 1.5f : 0.99f;
        for (int64_t i = 0; i < s.Kc(); ++i) rowSum[size_t(m)] += w[size_t(m * s.Kc() + i)];
      }
      std::vector<int32_t> sums;
      const auto want = reference(c, x, w, bias, factor, sums);
      std::vector<uint8_t> wp(size_t(qconvPackedBytes(k, s)));
      packQConvWeights(k, s, w.data(), wp.data());
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<uint8_t> got(want.size(), 0xEE);
        qconv2d(k, s, c.q, x.data(), wp.data(), rowSum.data(), bias.data(), factor.data(),
                got.data(), p);
        EXPECT_EQ(got, want) << k.name << " C=" << s.C << " M=" << s.M << " K=" << s.KH
                             << " group=" << s.group << (p ? " 2 threads" : "");
        // Without a factor: the int32 sums (ConvInteger).
        std::vector<int32_t> got32(sums.size(), -7);
        qconv2d(k, s, c.q, x.data(), wp.data(), rowSum.data(), bias.data(), nullptr, got32.data(),
                p);
        EXPECT_EQ(got32, sums) << k.name << " int32 C=" << s.C << " M=" << s.M << " K=" << s.KH
                               << " group=" << s.group << (p ? " 2 threads" : "");
      }
    }
  }
}

TEST(QConvKernels, DepthwiseMatchesReferenceOnEveryIsa) {
  ThreadPool pool(2);
  const QConvParams u8{false, false, 119, 128}, i8{true, true, 7, -3};
  // 3x3, pad 1, stride 1 or 2 (the row kernels where the CPU has one: rows wider than a vector,
  // odd and even widths, one pixel, a multiplier), and other geometries (the plane kernels).
  const Case dw[] = {{shape(24, 14, 14, 24, 24, 3, 1, 1, 1), u8, 127},
                     {shape(16, 15, 13, 16, 16, 3, 2, 1, 1), i8, 127},
                     {shape(5, 11, 11, 10, 5, 5, 1, 2, 1), u8, 255}, // multiplier 2, 5x5
                     {shape(40, 7, 7, 40, 40, 3, 1, 1, 1), i8, 255},
                     {shape(3, 9, 37, 3, 3, 3, 1, 1, 1), u8, 255},
                     {shape(3, 10, 36, 6, 3, 3, 2, 1, 1), u8, 127}, // multiplier 2
                     {shape(4, 1, 1, 4, 4, 3, 2, 1, 1), i8, 127},
                     {shape(2, 6, 35, 2, 2, 3, 2, 1, 1), u8, 255}};
  for (const auto& k : allKernels()) {
    if (k.op != KernelOp::DepthwiseConvNchw) continue;
    if (!cpuSupports(k.isa)) {
      std::printf("[ skipped  ] qdwconv on %s: this CPU lacks %s\n", k.name,
                  std::string(isaName(k.isa)).c_str());
      continue;
    }
    std::mt19937 rng(17);
    for (const Case& c : dw) {
      const QConvShape& s = c.s;
      std::vector<int16_t> w(size_t(s.M * s.Kc()));
      for (auto& e : w) e = int16_t(int(rng() % (2 * c.wLimit + 1)) - c.wLimit);
      std::vector<float> wf(w.begin(), w.end());
      std::vector<uint8_t> x(size_t(s.N * s.C * s.H * s.W));
      for (auto& e : x) e = uint8_t(rng());
      std::vector<int32_t> bias(size_t(s.M));
      std::vector<float> factor(size_t(s.M));
      for (int64_t m = 0; m < s.M; ++m) {
        bias[size_t(m)] = int32_t(rng() % 20001) - 10000;
        factor[size_t(m)] = float(1e-4 * double(1 + rng() % 500));
      }
      ASSERT_TRUE(qdepthwiseExact(s, wf.data(), bias.data()));
      std::vector<int32_t> sums;
      const auto want = reference(c, x, w, bias, factor, sums);
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<uint8_t> got(want.size(), 0xEE);
        qdepthwiseConv2d(k, s, c.q, x.data(), wf.data(), bias.data(), factor.data(), got.data(), p);
        EXPECT_EQ(got, want) << k.name << " C=" << s.C << " M=" << s.M << " K=" << s.KH
                             << (p ? " 2 threads" : "");
      }
    }
  }
  // A bias that could carry a partial sum past 2^24 is refused, not rounded.
  const QConvShape s = shape(2, 5, 5, 2, 2, 3, 1, 1, 1);
  const std::vector<float> wf(18, 1.0f);
  const std::vector<int32_t> big = {1 << 24, 0};
  EXPECT_FALSE(qdepthwiseExact(s, wf.data(), big.data()));
}

// The int8 depthwise 3x3 kernels: every image width around the 16-column vectors and the 64-byte
// row copies, strides 1 and 2, heights that leave 1-3 output rows for the last pass, a
// multiplier, u8 / i8 / mixed activations, weights at the int8 limits, saturating outputs.
TEST(QConvKernels, Depthwise3x3Int8MatchesReference) {
  ThreadPool pool(2);
  const QConvParams u8{false, false, 119, 128}, i8{true, true, 7, -3}, mixed{true, false, -2, 40};
  std::vector<Case> dw;
  for (int64_t W : {1, 2, 15, 16, 17, 31, 33, 63, 64, 65, 112})
    for (int64_t st : {1, 2}) dw.push_back({shape(3, 5 + W % 4, W, 3, 3, 3, st, 1, 1), u8, 127});
  dw.push_back({shape(16, 14, 14, 16, 16, 3, 1, 1, 1), i8, 128});
  dw.push_back({shape(8, 9, 10, 16, 8, 3, 2, 1, 1), mixed, 128}); // multiplier 2
  dw.push_back({shape(4, 1, 1, 4, 4, 3, 2, 1, 1), i8, 128});
  dw.push_back({shape(24, 28, 28, 24, 24, 3, 1, 1, 1), u8, 128});
  for (const auto& k : allKernels()) {
    if (k.op != KernelOp::QDepthwise3x3) continue;
    if (!cpuSupports(k.isa)) {
      std::printf("[ skipped  ] %s: this CPU lacks %s\n", k.name,
                  std::string(isaName(k.isa)).c_str());
      continue;
    }
    std::mt19937 rng(29);
    for (const Case& c : dw) {
      const QConvShape& s = c.s;
      ASSERT_TRUE(qdepthwise3x3Shape(s));
      std::vector<int16_t> w(size_t(s.M * 9));
      for (auto& e : w) e = int16_t(int(rng() % 256) - 128);
      w[0] = -128, w[1] = 127; // the int8 limits
      std::vector<int8_t> packed(size_t(s.M * 12));
      ASSERT_TRUE(packQDepthwise3x3Weights(s.M, w.data(), packed.data()));
      std::vector<uint8_t> x(size_t(s.N * s.C * s.H * s.W));
      for (auto& e : x) e = uint8_t(rng());
      std::vector<int32_t> bias(size_t(s.M));
      std::vector<float> factor(size_t(s.M));
      for (int64_t m = 0; m < s.M; ++m) {
        bias[size_t(m)] = int32_t(rng() % 200001) - 100000;
        factor[size_t(m)] = float(1e-4 * double(1 + rng() % 2000)); // some outputs saturate
        if (m % 5 == 2) factor[size_t(m)] = 3.0f;                   // the clamping requantization
      }
      std::vector<int32_t> sums;
      const auto want = reference(c, x, w, bias, factor, sums);
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<uint8_t> got(want.size(), 0xEE);
        qdepthwise3x3(k, s, c.q, x.data(), packed.data(), bias.data(), factor.data(), got.data(),
                      p);
        EXPECT_EQ(got, want) << k.name << " C=" << s.C << " M=" << s.M << " H=" << s.H
                             << " W=" << s.W << " stride " << s.strideH << (p ? " 2 threads" : "");
      }
    }
  }
  // Weights outside int8 are refused (the lowering then takes the f32 plane kernels).
  const std::vector<int16_t> wide(9, 129);
  std::vector<int8_t> packed(12, 0x11);
  EXPECT_FALSE(packQDepthwise3x3Weights(1, wide.data(), packed.data()));
  EXPECT_EQ(packed[0], 0x11);
}

// QLinearMatMul's kernel against the reference arithmetic (f64 requantization): rows, column
// counts around the 4-column passes and the thread split, u8 / i8, saturating outputs.
TEST(QMatMulKernel, MatchesReference) {
  ThreadPool pool(2);
  std::mt19937 rng(31);
  for (const auto& [R, K, N, aSigned, ySigned] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, bool, bool>>{{1, 1280, 1000, false, false},
                                                                      {3, 37, 7, true, true},
                                                                      {2, 64, 130, false, true},
                                                                      {1, 5, 1, true, false}}) {
    QMatMulShape s;
    s.R = R, s.K = K, s.N = N, s.aSigned = aSigned, s.ySigned = ySigned;
    s.azp = aSigned ? -3 : 119, s.yzp = ySigned ? 5 : 128;
    std::vector<uint8_t> a(size_t(R * K));
    for (auto& v : a) v = uint8_t(rng());
    std::vector<int16_t> b(size_t(K * N));
    for (auto& v : b) v = int16_t(int(rng() % 256) - 128);
    std::vector<int8_t> wT(size_t(N * K));
    ASSERT_TRUE(packQMatMulWeights(K, N, b.data(), wT.data()));
    std::vector<double> factor(static_cast<size_t>(N));
    for (auto& f : factor) f = double(float(1e-5 * double(1 + rng() % 3000)));
    std::vector<uint8_t> want(size_t(R * N));
    for (int64_t r = 0; r < R; ++r)
      for (int64_t n = 0; n < N; ++n) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          const int32_t x = aSigned ? int32_t(int8_t(a[size_t(r * K + k)])) : a[size_t(r * K + k)];
          acc += int64_t(x - s.azp) * b[size_t(k * N + n)];
        }
        const double v = std::nearbyint(double(int32_t(acc)) * factor[size_t(n)] + s.yzp);
        want[size_t(r * N + n)] =
            uint8_t(int32_t(std::clamp(v, ySigned ? -128.0 : 0.0, ySigned ? 127.0 : 255.0)));
      }
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      std::vector<uint8_t> got(want.size(), 0xEE);
      qmatmul(s, a.data(), wT.data(), factor.data(), got.data(), p);
      EXPECT_EQ(got, want) << "R=" << R << " K=" << K << " N=" << N << (p ? " 2 threads" : "");
    }
  }
  const std::vector<int16_t> wide = {1, -129};
  std::vector<int8_t> wT(2, 0x11);
  EXPECT_FALSE(packQMatMulWeights(2, 1, wide.data(), wT.data()));
}

// The int8 GEMM with f32 results (kernels/dqgemm.h) on every DqGemm kernel this CPU runs, against
// float(exact int32 sum) * scale, and its int32 sums (dqgemmSums): shapes on and off the tiles
// (rows around 8 / 16 / 32, K not a multiple of 4 or 64, columns past a panel), the zero point's
// extremes, a row stride wider than K, one and two threads; the extreme sums (255 * -128 in every
// product) included.
TEST(DqGemmKernels, MatchReferenceOnEveryIsa) {
  ThreadPool pool(2);
  std::mt19937 rng(41);
  int ran = 0;
  for (const KernelDesc& kd : allKernels()) {
    if (kd.op != KernelOp::DqGemm) continue;
    if (!cpuSupports(kd.isa)) {
      std::printf("[ skipped  ] %s: this CPU lacks %s\n", kd.name,
                  std::string(isaName(kd.isa)).c_str());
      continue;
    }
    ++ran;
    for (const auto& [M, K, N, lda, azp] :
         std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, int32_t>>{
             {37, 100, 70, 100, 131},
             {64, 256, 96, 256, 0},
             {1, 3, 1, 3, 255},
             {16, 128, 33, 192, 7},
             {33, 769, 130, 769, 200},
             {8, 64, 48, 64, 128}}) {
      SCOPED_TRACE(std::string(kd.name) + " M=" + std::to_string(M) + " K=" + std::to_string(K) +
                   " N=" + std::to_string(N));
      std::vector<uint8_t> a(size_t(M * lda));
      for (auto& v : a) v = uint8_t(rng());
      std::vector<int16_t> w(size_t(K * N));
      for (auto& v : w) v = int16_t(int(rng() % 256) - 128);
      if (M == 1) a[0] = 255, a[1] = 255, a[2] = 255, w[0] = w[1] = w[2] = -128; // 3 * 255 * -128
      std::vector<uint8_t> packed(size_t(dqgemmPackedBytes(kd, K, N)));
      packDqGemmWeights(kd, K, N, w.data(), packed.data());
      std::vector<int32_t> colSum(size_t(N), 0);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) colSum[size_t(n)] += w[size_t(k * N + n)];
      std::vector<float> scale(static_cast<size_t>(N));
      for (auto& f : scale) f = float(1e-4 * double(int(rng() % 2001) - 1000));
      std::vector<float> want(size_t(M * N));
      std::vector<int32_t> sums(size_t(M * N));
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          int64_t acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += int64_t(int32_t(a[size_t(m * lda + k)]) - azp) * w[size_t(k * N + n)];
          sums[size_t(m * N + n)] = int32_t(acc);
          want[size_t(m * N + n)] = float(int32_t(acc)) * scale[size_t(n)];
        }
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<float> got(want.size(), -1.0f);
        dqgemm(kd, M, N, K, a.data(), lda, azp, packed.data(), colSum.data(), scale.data(),
               got.data(), N, p);
        EXPECT_EQ(got, want) << (p ? "2 threads" : "1 thread");
        std::vector<int32_t> got32(sums.size(), -7); // the sums alone (QLinearMatMul's)
        dqgemmSums(kd, M, N, K, a.data(), lda, azp, packed.data(), colSum.data(), p,
                   [&, n = N](int64_t r0, int64_t r1, const int32_t* s) {
                     std::copy(s + r0 * n, s + r1 * n, got32.begin() + r0 * n);
                   });
        EXPECT_EQ(got32, sums) << "int32, " << (p ? "2 threads" : "1 thread");
      }
    }
  }
  std::printf("[ info     ] %d DqGemm kernels ran\n", ran);
  const std::vector<int16_t> wide = {1, -129};
  EXPECT_FALSE(dqgemmTakes(wide.data(), 2));
  EXPECT_TRUE(dqgemmTakes(wide.data(), 1));
}

} // namespace
} // namespace aicc::kernels
