// Micro-kernel library (src/kernels): every kernel this CPU can run, plus the generic ones, against
// naive references on odd shapes, with bias/no bias and each fused activation.
#include <gtest/gtest.h>

#include <sched.h>

#include <chrono>
#include <thread>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/conv.h"
#include "kernels/conv_nchwc.h"
#include "kernels/gemm.h"
#include "kernels/lut.h"
#include "kernels/registry.h"
#include "kernels/thread_pool.h"
#include "support/error.h"

using namespace aicc::kernels;

namespace {

std::vector<float> randomVec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// |got - want| <= tol * max(1, |want|)-ish with tol = c * K * eps (inputs in [-1, 1]).
void expectClose(const std::vector<float>& got, const std::vector<float>& want, int64_t K,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double tol = 4.0 * double(std::max<int64_t>(K, 1)) * std::numeric_limits<float>::epsilon();
  double worst = 0;
  size_t worstAt = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - double(want[i]));
    if (!(err <= worst)) worst = err, worstAt = i;
  }
  EXPECT_LE(worst, tol) << what << ": at " << worstAt << " got " << got[worstAt] << " want "
                        << want[worstAt];
}

std::vector<const KernelDesc*> kernelsUnderTest(KernelOp op) {
  for (const KernelDesc& k : allKernels()) // every ISA path this CPU cannot run is named
    if (k.op == op && !cpuSupports(k.isa))
      std::printf("[ skipped  ] %s: this CPU lacks %s\n", k.name,
                  std::string(isaName(k.isa)).c_str());
  auto ks = availableKernels(op); // includes the generic one (always supported)
  EXPECT_FALSE(ks.empty());
  return ks;
}

// The f32 GEMM kernels and the bf16 ones (--precision bf16), which the same tests check against
// the reference on their operands rounded to bf16 (asSeenBy): the rounding is the kernel's
// contract, the accumulation f32 as for the others.
std::vector<const KernelDesc*> gemmKernelsUnderTest() {
  auto ks = kernelsUnderTest(KernelOp::Gemm);
  for (const KernelDesc& k : allKernels())
    if (k.op == KernelOp::GemmBf16 && !cpuSupports(k.isa))
      std::printf("[ skipped  ] %s: this CPU lacks %s\n", k.name,
                  std::string(isaName(k.isa)).c_str());
  for (const KernelDesc* k : availableKernels(KernelOp::GemmBf16)) ks.push_back(k);
  return ks;
}

std::vector<float> asSeenBy(const KernelDesc* kd, std::vector<float> v) {
  if (kd->op == KernelOp::GemmBf16)
    for (float& x : v) x = bf16Round(x);
  return v;
}

Epilogue makeEpilogue(int act, const float* bias) {
  switch (act) {
  case 0:
    return Epilogue::none(bias);
  case 1:
    return Epilogue::relu(bias);
  case 2:
    return Epilogue::relu6(bias);
  case 3:
    return {bias, Activation::Clip, -0.25f, 0.5f};
  default: { // 4, 5, 6, 7: the fused activations after no clamp
    Epilogue ep = Epilogue::none(bias);
    ep.post = act == 4 ? kActHardSwish : act == 5 ? kActSwish : act == 6 ? kActSigmoid : kActGelu;
    return ep;
  }
  }
}

struct Shape {
  int64_t M, N, K;
};
const Shape kShapes[] = {
    {1, 1, 1},      {1, 7, 1},     {5, 1, 3},    {3, 5, 7},     {14, 32, 16},  {15, 33, 17},
    {13, 31, 1},    {29, 47, 63},  {6, 16, 300}, {37, 65, 257}, {9, 100, 530}, {100, 9, 20},
    {2, 129, 5},    {49, 70, 513}, {1, 40, 301}, // one row: four partial sums over k (GEMV)
    {131, 40, 300},  // a short last row block (126 + 5) joins the one before it
    {40, 33, 1100}}; // K > 992: two K blocks of the AMX tile (C added on the second)

} // namespace

TEST(Kernels, RegistryListsEveryIsaAndDispatches) {
  int gemms = 0;
  for (const auto& k : allKernels()) {
    const std::string name = k.name;
    const char* prefix = isQuantOp(k.op) ? "u8" : k.op == KernelOp::GemmBf16 ? "bf16_" : "f32_";
    EXPECT_EQ(name.rfind(prefix, 0), 0u) << name;
    EXPECT_NE(name.find(std::string(isaName(k.isa))), std::string::npos) << name;
    // Kernels this build cannot run (NEON on x86-64) are listed without code: compiling for a
    // target that has them still picks them and packs weights for their tiles.
    const bool code = cpuSupports(k.isa) || k.isa != Isa::Neon;
    if (isGemmOp(k.op)) {
      gemms += k.op == KernelOp::Gemm;
      EXPECT_EQ(k.kg, k.op == KernelOp::GemmBf16 ? 2 : 0) << name;
      EXPECT_EQ(bool(k.gemm), code) << name;
      EXPECT_EQ(k.mc % k.mr, 0) << name;
      EXPECT_EQ(k.nc % k.nr, 0) << name;
      EXPECT_NE(name.find(std::to_string(k.mr) + "x" + std::to_string(k.nr)), std::string::npos);
    } else if (k.op == KernelOp::QConvGemm) {
      EXPECT_TRUE(k.qgemm) << name;
      EXPECT_TRUE(k.kg == 2 || k.kg == 4) << name;
      EXPECT_NE(name.find(std::to_string(k.mr) + "x" + std::to_string(k.nr)), std::string::npos);
    } else if (k.op == KernelOp::DqGemm) {
      EXPECT_TRUE(k.dqgemm) << name;
      EXPECT_EQ(k.kg, 4) << name;
      EXPECT_NE(name.find(std::to_string(k.mr) + "x" + std::to_string(k.nr)), std::string::npos);
    } else if (k.op == KernelOp::QDepthwise3x3) {
      EXPECT_TRUE(k.qdw3x3) << name;
      EXPECT_NE(name.find(std::to_string(k.mr) + "x" + std::to_string(k.nr)), std::string::npos);
    } else if (k.op == KernelOp::DepthwiseConvNchw) {
      EXPECT_EQ(bool(k.dwNchwPlane), code) << name;
    } else if (k.op == KernelOp::ConvNchw16c) {
      EXPECT_EQ(bool(k.nchwc), code) << name;
      EXPECT_NE(name.find(std::to_string(k.mr) + "x" + std::to_string(k.nr)), std::string::npos);
    } else {
      EXPECT_EQ(bool(k.dwRow), code) << name;
    }
    EXPECT_EQ(findKernel(name), &k);
  }
  EXPECT_GE(gemms, 3);
  EXPECT_TRUE(cpuSupports(Isa::Generic));
  EXPECT_TRUE(cpuSupports(defaultKernel(KernelOp::Gemm).isa));
  EXPECT_TRUE(cpuSupports(defaultKernel(KernelOp::DepthwiseConv3x3).isa));
  EXPECT_EQ(findKernel("f32_gemm_nope"), nullptr);
}

// AVX-VNNI is a side branch of the x86 chain: an AVX-512 machine may lack it (Zen 4, Skylake-X),
// so no AVX-512 level admits its kernels; where it is the best level, AVX2's run too.
TEST(Kernels, AvxVnniIsASideBranchOfTheIsaChain) {
  EXPECT_FALSE(isaWithin(Isa::AvxVnni, Isa::Avx512));
  EXPECT_FALSE(isaWithin(Isa::AvxVnni, Isa::Amx));
  EXPECT_FALSE(isaWithin(Isa::AvxVnni, Isa::Avx2));
  EXPECT_TRUE(isaWithin(Isa::AvxVnni, Isa::AvxVnni));
  EXPECT_TRUE(isaWithin(Isa::Avx2, Isa::AvxVnni));
  EXPECT_TRUE(isaWithin(Isa::Generic, Isa::AvxVnni));
  EXPECT_FALSE(isaWithin(Isa::Avx512, Isa::AvxVnni));
  EXPECT_TRUE(isaWithin(Isa::Avx2, Isa::Avx512Vnni));
  const KernelDesc* k = bestKernel(KernelOp::QConvGemm, Isa::AvxVnni);
  ASSERT_TRUE(k);
  EXPECT_EQ(std::string(k->name), "u8s8_qgemm_avxvnni_4x24");
  EXPECT_NE(std::string(bestKernel(KernelOp::QConvGemm, Isa::Avx512Vnni)->name),
            "u8s8_qgemm_avxvnni_4x24");
  EXPECT_EQ(bestKernel(KernelOp::Gemm, Isa::AvxVnni)->isa, Isa::Avx2);
}

TEST(Kernels, GemmMatchesReferenceOnOddShapes) {
  for (const KernelDesc* kd : gemmKernelsUnderTest()) {
    for (const Shape& s : kShapes) {
      const auto A = randomVec(size_t(s.M * s.K), 1);
      const auto B = randomVec(size_t(s.K * s.N), 2);
      const auto bias = randomVec(size_t(s.N), 3);
      const auto Ar = asSeenBy(kd, A), Br = asSeenBy(kd, B);
      const PackedB pb = packB(*kd, B.data(), s.K, s.N, s.N);
      for (int withBias = 0; withBias < 2; ++withBias)
        for (int act = 0; act < 4; ++act) {
          const Epilogue ep = makeEpilogue(act, withBias ? bias.data() : nullptr);
          std::vector<float> want(size_t(s.M * s.N)), got(size_t(s.M * s.N), 123.0f);
          gemmReference(s.M, s.N, s.K, Ar.data(), Br.data(), want.data(), ep);
          gemm(pb, s.M, A.data(), s.K, got.data(), s.N, ep);
          expectClose(got, want, s.K,
                      std::string(kd->name) + " M=" + std::to_string(s.M) +
                          " N=" + std::to_string(s.N) + " K=" + std::to_string(s.K) +
                          " bias=" + std::to_string(withBias) + " act=" + std::to_string(act));
        }
    }
  }
}

TEST(Kernels, GemmStridedTransposedAndThreaded) {
  ThreadPool pool(2);
  const int64_t M = 45, N = 77, K = 300, lda = K + 3, ldc = N + 5;
  const auto A = randomVec(size_t(M * lda), 4);
  const auto B = randomVec(size_t(K * N), 5);
  std::vector<float> Bt(size_t(N * K)), Adense(size_t(M * K));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) Bt[size_t(n * K + k)] = B[size_t(k * N + n)];
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) Adense[size_t(i * K + k)] = A[size_t(i * lda + k)];
  for (const KernelDesc* kd : gemmKernelsUnderTest()) {
    std::vector<float> want(size_t(M * N));
    gemmReference(M, N, K, asSeenBy(kd, Adense).data(), asSeenBy(kd, B).data(), want.data(),
                  Epilogue::relu());
    for (bool transposed : {false, true}) {
      const PackedB pb =
          transposed ? packB(*kd, Bt.data(), K, N, K, true) : packB(*kd, B.data(), K, N, N);
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<float> C(size_t(M * ldc), -7.0f);
        gemm(pb, M, A.data(), lda, C.data(), ldc, Epilogue::relu(), p);
        std::vector<float> got(size_t(M * N));
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < ldc; ++j) {
            if (j < N)
              got[size_t(i * N + j)] = C[size_t(i * ldc + j)];
            else
              EXPECT_EQ(C[size_t(i * ldc + j)], -7.0f) << "wrote past N at row " << i;
          }
        expectClose(got, want, K,
                    std::string(kd->name) + (transposed ? " transB" : "") +
                        (p ? " 2 threads" : ""));
      }
    }
  }
}

TEST(Kernels, GemmThreadSplitsAgreeOnManyShapes) {
  ThreadPool pool(2);
  const Shape shapes[] = {{1, 300, 40}, {300, 1, 40}, {200, 40, 70}, {14, 33, 9}, {3, 3, 3}};
  for (const KernelDesc* kd : gemmKernelsUnderTest())
    for (const Shape& s : shapes) {
      const auto A = randomVec(size_t(s.M * s.K), 6);
      const auto B = randomVec(size_t(s.K * s.N), 7);
      const auto bias = randomVec(size_t(s.N), 8);
      const PackedB pb = packB(*kd, B.data(), s.K, s.N, s.N);
      std::vector<float> want(size_t(s.M * s.N)), got(want.size());
      gemmReference(s.M, s.N, s.K, asSeenBy(kd, A).data(), asSeenBy(kd, B).data(), want.data(),
                    Epilogue::relu6(bias.data()));
      gemm(pb, s.M, A.data(), s.K, got.data(), s.N, Epilogue::relu6(bias.data()), &pool);
      expectClose(got, want, s.K, std::string(kd->name) + " threaded");
    }
}

TEST(Kernels, GemmEdgeCasesAndErrors) {
  const KernelDesc& kd = defaultKernel(KernelOp::Gemm);
  // K = 0: C = act(bias).
  const float bias[3] = {-1.0f, 2.0f, 9.0f};
  const PackedB empty = packB(kd, nullptr, 0, 3, 3);
  std::vector<float> C(6, 5.0f);
  gemm(empty, 2, nullptr, 0, C.data(), 3, Epilogue::relu6(bias));
  EXPECT_EQ(C, (std::vector<float>{0, 2, 6, 0, 2, 6}));
  // M = 0 touches nothing.
  gemm(empty, 0, nullptr, 0, nullptr, 3);
  // NaN propagates through the clamp (as ONNX Relu/Clip do).
  const float a[1] = {std::numeric_limits<float>::quiet_NaN()}, b[1] = {1.0f};
  for (const KernelDesc* k : gemmKernelsUnderTest()) {
    const PackedB pb = packB(*k, b, 1, 1, 1);
    float c = 0;
    gemm(pb, 1, a, 1, &c, 1, Epilogue::relu());
    EXPECT_TRUE(std::isnan(c)) << k->name;
  }
  PackedB unpacked;
  EXPECT_THROW(gemm(unpacked, 1, a, 1, C.data(), 1), aicc::Error);
  EXPECT_THROW(packB(defaultKernel(KernelOp::DepthwiseConv3x3), b, 1, 1, 1), aicc::Error);
  const PackedB pb = packB(kd, b, 1, 1, 1);
  EXPECT_THROW(gemm(pb, 1, a, 0, C.data(), 1), aicc::Error); // lda < K
}

namespace {
void depthwiseReference(int64_t N, int64_t H, int64_t W, int64_t C, int64_t stride, const float* in,
                        const float* w, const float* bias, float* out, const Epilogue& act) {
  const int64_t OH = dwOutSize(H, stride), OW = dwOutSize(W, stride);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t c = 0; c < C; ++c) {
          double acc = bias ? bias[c] : 0.0;
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 3; ++kx) {
              const int64_t iy = oy * stride - 1 + ky, ix = ox * stride - 1 + kx;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              acc += double(in[((n * H + iy) * W + ix) * C + c]) * double(w[c * 9 + ky * 3 + kx]);
            }
          out[((n * OH + oy) * OW + ox) * C + c] =
              std::min(act.hi(), std::max(act.lo(), float(acc)));
        }
}
} // namespace

TEST(Kernels, DepthwiseConv3x3MatchesReference) {
  ThreadPool pool(2);
  struct DwShape {
    int64_t N, H, W, C;
  };
  const DwShape shapes[] = {{1, 1, 1, 1},  {1, 2, 3, 5},    {2, 7, 9, 16}, {1, 8, 13, 33},
                            {1, 5, 17, 7}, {1, 12, 12, 64}, {3, 4, 4, 18}, {1, 1, 20, 40}};
  for (const KernelDesc* kd : kernelsUnderTest(KernelOp::DepthwiseConv3x3))
    for (const DwShape& s : shapes)
      for (int64_t stride : {1, 2})
        for (int act = 0; act < 3; ++act)
          for (int withBias = 0; withBias < 2; ++withBias) {
            const auto in = randomVec(size_t(s.N * s.H * s.W * s.C), 9);
            const auto w = randomVec(size_t(s.C * 9), 10);
            const auto bias = randomVec(size_t(s.C), 11);
            const float* b = withBias ? bias.data() : nullptr;
            const Epilogue ep = makeEpilogue(act, nullptr);
            const size_t outSize =
                size_t(s.N * dwOutSize(s.H, stride) * dwOutSize(s.W, stride) * s.C);
            std::vector<float> want(outSize), got(outSize, 77.0f);
            depthwiseReference(s.N, s.H, s.W, s.C, stride, in.data(), w.data(), b, want.data(), ep);
            const DwConvWeights wt = packDepthwise3x3(*kd, w.data(), b, s.C);
            depthwiseConv3x3Nhwc(wt, s.N, s.H, s.W, stride, in.data(), got.data(), ep,
                                 act == 1 ? &pool : nullptr);
            expectClose(got, want, 9,
                        std::string(kd->name) + " H=" + std::to_string(s.H) +
                            " W=" + std::to_string(s.W) + " C=" + std::to_string(s.C) +
                            " stride=" + std::to_string(stride));
          }
  const DwConvWeights wt = packDepthwise3x3(defaultKernel(KernelOp::DepthwiseConv3x3),
                                            std::vector<float>(9).data(), nullptr, 1);
  float x = 0, y = 0;
  EXPECT_THROW(depthwiseConv3x3Nhwc(wt, 1, 1, 1, 3, &x, &y), aicc::Error);
}

TEST(Kernels, Conv2dIm2colAndPointwiseMatchReference) {
  ThreadPool pool(2);
  std::vector<Conv2dShape> shapes;
  auto add = [&](int64_t N, int64_t H, int64_t W, int64_t Cin, int64_t Cout, int64_t K,
                 int64_t stride, int64_t pad, int64_t dil) {
    Conv2dShape s;
    s.N = N, s.H = H, s.W = W, s.Cin = Cin, s.Cout = Cout, s.KH = K, s.KW = K;
    s.strideH = s.strideW = stride;
    s.padTop = s.padLeft = s.padBottom = s.padRight = pad;
    s.dilH = s.dilW = dil;
    shapes.push_back(s);
  };
  add(1, 9, 11, 5, 7, 3, 1, 1, 1);   // 3x3 same
  add(2, 10, 10, 3, 17, 3, 2, 1, 1); // strided, batch 2
  add(1, 7, 7, 33, 40, 1, 1, 0, 1);  // pointwise fast path
  add(2, 5, 6, 8, 3, 1, 1, 0, 1);    // pointwise, batch 2
  add(1, 9, 9, 4, 6, 1, 2, 0, 1);    // 1x1 strided (im2col)
  add(1, 12, 13, 3, 9, 5, 2, 2, 1);  // 5x5
  add(1, 9, 9, 4, 5, 3, 1, 2, 2);    // dilated
  add(1, 20, 20, 8, 16, 3, 1, 1, 1); // several im2col chunks
  {
    Conv2dShape s; // asymmetric kernel and padding
    s.H = 6, s.W = 8, s.Cin = 3, s.Cout = 5, s.KH = 2, s.KW = 3, s.padTop = 1, s.padRight = 2;
    shapes.push_back(s);
  }
  for (const KernelDesc* kd : kernelsUnderTest(KernelOp::Gemm))
    for (const Conv2dShape& s : shapes)
      for (int withBias = 0; withBias < 2; ++withBias) {
        const auto in = randomVec(size_t(s.N * s.H * s.W * s.Cin), 12);
        const auto w = randomVec(size_t(s.Cout * s.Cin * s.KH * s.KW), 13);
        const auto bias = randomVec(size_t(s.Cout), 14);
        const float* b = withBias ? bias.data() : nullptr;
        const size_t outSize = size_t(s.N * s.OH() * s.OW() * s.Cout);
        std::vector<float> want(outSize), got(outSize, 55.0f);
        conv2dReferenceNhwc(s, in.data(), w.data(), b, want.data(), Epilogue::relu());
        const Conv2dWeights wt = packConv2d(*kd, s, w.data(), b);
        conv2dNhwc(wt, in.data(), got.data(), Epilogue::relu(), withBias ? &pool : nullptr);
        expectClose(got, want, s.KH * s.KW * s.Cin,
                    std::string(kd->name) + " conv " + std::to_string(s.KH) + "x" +
                        std::to_string(s.KW) + " stride " + std::to_string(s.strideH));
      }
}

namespace {
// Grouped NCHW convolution, one image, double accumulation: x [C, H, W], w [M, C/G, KH, KW].
std::vector<float> convNchwReference(const Conv2dShape& s, int64_t G, const std::vector<float>& x,
                                     const std::vector<float>& w, const float* bias,
                                     const Epilogue& ep) {
  const int64_t OH = s.OH(), OW = s.OW(), Cg = s.Cin / G, Mg = s.Cout / G;
  std::vector<float> y(size_t(s.Cout * OH * OW));
  for (int64_t m = 0; m < s.Cout; ++m)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        double acc = bias ? bias[m] : 0.0;
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t kh = 0; kh < s.KH; ++kh)
            for (int64_t kw = 0; kw < s.KW; ++kw) {
              const int64_t iy = oy * s.strideH - s.padTop + kh * s.dilH;
              const int64_t ix = ox * s.strideW - s.padLeft + kw * s.dilW;
              if (iy < 0 || iy >= s.H || ix < 0 || ix >= s.W) continue;
              acc += double(x[size_t(((m / Mg) * Cg + c) * s.H * s.W + iy * s.W + ix)]) *
                     double(w[size_t(((m * Cg + c) * s.KH + kh) * s.KW + kw)]);
            }
        const size_t at = size_t((m * OH + oy) * OW + ox);
        if (ep.residual) acc += double(ep.residual[at]);
        const float v = float(acc);
        y[at] = activateScalar(std::min(ep.hi(), std::max(ep.lo(), v)), ep.post);
      }
  return y;
}
// The softmax helper of every ISA this CPU runs (the others are listed as skipped): exp(x - shift)
// in place and the sum, against double-precision exp, on lengths with and without a tail.
TEST(Kernels, ExpSumMatchesExp) {
  struct Isa_ {
    const char* name;
    Isa isa;
    ExpSumFn fn;
  };
  const Isa_ isas[] = {{"generic", Isa::Generic, f32_expsum_generic},
                       {"avx2", Isa::Avx2, f32_expsum_avx2},
                       {"avx512", Isa::Avx512, f32_expsum_avx512}};
  for (const Isa_& k : isas) {
    if (!cpuSupports(k.isa)) {
      std::printf("[ skipped  ] f32_expsum_%s: this CPU lacks %s\n", k.name, k.name);
      continue;
    }
    for (int64_t n : {1, 7, 8, 9, 16, 33, 128}) {
      auto x = randomVec(size_t(n), 40 + int(n));
      for (auto& v : x) v *= 20.0f;
      const float shift = 3.0f;
      std::vector<float> got = x;
      const float sum = k.fn(got.data(), n, shift);
      double want = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double e = std::exp(double(x[size_t(i)]) - shift);
        want += e;
        EXPECT_NEAR(got[size_t(i)], e, 2e-6 * e) << k.name << " n=" << n << " i=" << i;
      }
      EXPECT_NEAR(sum, want, 1e-5 * want) << k.name << " n=" << n;
    }
  }
}

// Max pooling on the depthwise machinery, every ISA path, against a direct loop (windows past the
// input from explicit output sizes, as ceil_mode gives, see only the inside).
// A square pooling window and its geometry; `extra` output rows and columns past the floor
// formula (as ceil_mode gives).
struct PoolCase {
  int64_t C, H, W, K, stride, pad, dil, extra;
  DwShape shape() const {
    DwShape d;
    d.C = C, d.H = H, d.W = W, d.KH = d.KW = K, d.strideH = d.strideW = stride;
    d.padTop = d.padLeft = d.padBottom = d.padRight = pad, d.dilH = d.dilW = dil;
    d.outH = d.OH() + extra, d.outW = d.OW() + extra;
    return d;
  }
};

TEST(Kernels, MaxPoolNchwMatchesReference) {
  using Case = PoolCase;
  // (67 columns: one deinterleave call per plane, and an odd last column)
  const Case cases[] = {{3, 9, 11, 3, 2, 1, 1, 0},   {2, 17, 40, 2, 2, 0, 1, 1},
                        {4, 13, 13, 3, 1, 1, 1, 0},  {2, 12, 20, 3, 3, 1, 2, 1},
                        {64, 28, 28, 3, 2, 0, 1, 1}, {3, 9, 67, 3, 2, 1, 1, 0},
                        {8, 112, 112, 3, 2, 1, 1, 0}, {2, 15, 16, 5, 2, 2, 1, 1},
                        {2, 7, 9, 4, 1, 2, 1, 0}};
  ThreadPool pool(2);
  for (const KernelDesc* kd : kernelsUnderTest(KernelOp::DepthwiseConvNchw))
    for (const Case& c : cases) {
      const DwShape d = c.shape();
      const auto x = randomVec(size_t(c.C * c.H * c.W), 50);
      std::vector<float> got(size_t(c.C * d.outH * d.outW), 7.0f), want(got.size());
      for (int64_t ch = 0; ch < c.C; ++ch)
        for (int64_t oy = 0; oy < d.outH; ++oy)
          for (int64_t ox = 0; ox < d.outW; ++ox) {
            float m = -std::numeric_limits<float>::infinity();
            for (int64_t ky = 0; ky < c.K; ++ky)
              for (int64_t kx = 0; kx < c.K; ++kx) {
                const int64_t iy = oy * c.stride - c.pad + ky * c.dil;
                const int64_t ix = ox * c.stride - c.pad + kx * c.dil;
                if (iy >= 0 && iy < c.H && ix >= 0 && ix < c.W)
                  m = std::max(m, x[size_t((ch * c.H + iy) * c.W + ix)]);
              }
            want[size_t((ch * d.outH + oy) * d.outW + ox)] = m;
          }
      maxPoolNchw(*kd, d, x.data(), got.data(), c.C > 8 ? &pool : nullptr);
      EXPECT_EQ(got, want) << kd->name << " C=" << c.C << " K=" << c.K << " stride=" << c.stride;
    }
}

// AveragePool on the same machinery: window sums divided by the window's count (inside the
// input, or inside the padded extent with count_include_pad; ceil_mode's overhang never counts),
// against a direct double sum. Channel-blocked 7x7 maps (64 channels at 7x7) included.
TEST(Kernels, AvgPoolNchwMatchesReference) {
  using Case = PoolCase;
  const Case cases[] = {{3, 9, 11, 3, 2, 1, 1, 0},   {2, 17, 40, 2, 2, 0, 1, 1},
                        {4, 13, 13, 3, 1, 1, 1, 0},  {2, 12, 20, 3, 3, 1, 2, 1},
                        {64, 28, 28, 2, 2, 0, 1, 0}, {64, 14, 14, 2, 2, 0, 1, 0},
                        {5, 10, 10, 3, 2, 1, 1, 1}};
  ThreadPool pool(2);
  for (const KernelDesc* kd : kernelsUnderTest(KernelOp::DepthwiseConvNchw))
    for (const Case& c : cases)
      for (bool countPad : {false, true}) {
        const DwShape d = c.shape();
        const auto x = randomVec(size_t(c.C * c.H * c.W), 51);
        std::vector<float> got(size_t(c.C * d.outH * d.outW), 7.0f), want(got.size());
        for (int64_t ch = 0; ch < c.C; ++ch)
          for (int64_t oy = 0; oy < d.outH; ++oy)
            for (int64_t ox = 0; ox < d.outW; ++ox) {
              double sum = 0;
              int64_t count = 0;
              for (int64_t ky = 0; ky < c.K; ++ky)
                for (int64_t kx = 0; kx < c.K; ++kx) {
                  const int64_t iy = oy * c.stride - c.pad + ky * c.dil;
                  const int64_t ix = ox * c.stride - c.pad + kx * c.dil;
                  const bool inside = iy >= 0 && iy < c.H && ix >= 0 && ix < c.W;
                  if (inside) sum += x[size_t((ch * c.H + iy) * c.W + ix)];
                  count += countPad ? iy < c.H + c.pad && ix < c.W + c.pad : inside;
                }
              // (a window wholly past the input, which ceil_mode never makes: 0)
              want[size_t((ch * d.outH + oy) * d.outW + ox)] =
                  count ? float(sum / double(count)) : 0.0f;
            }
        avgPoolNchw(*kd, d, countPad, x.data(), got.data(), c.C > 8 ? &pool : nullptr);
        expectClose(got, want, c.K * c.K,
                    std::string(kd->name) + " avgpool C=" + std::to_string(c.C) +
                        " K=" + std::to_string(c.K) + " countPad=" + std::to_string(countPad));
      }
}

// GlobalAveragePool's row means for every ISA this CPU runs, against double sums (row lengths
// with and without a tail, threads split rows).
TEST(Kernels, GlobalAveragePoolMatchesMeans) {
  ThreadPool pool(2);
  for (Isa isa : {Isa::Generic, Isa::Avx2, Isa::Avx512}) {
    if (!cpuSupports(isa)) {
      std::printf("[ skipped  ] f32_sum_%s: this CPU lacks it\n", std::string(isaName(isa)).c_str());
      continue;
    }
    for (int64_t len : {1, 7, 49, 50, 196, 3136})
      for (int64_t rows : {1, 3, 64}) {
        const auto x = randomVec(size_t(rows * len), 60 + int(len));
        std::vector<float> got(size_t(rows), 9.0f);
        globalAveragePool(isa, x.data(), got.data(), rows, len, rows > 8 ? &pool : nullptr);
        for (int64_t r = 0; r < rows; ++r) {
          double want = 0;
          for (int64_t i = 0; i < len; ++i) want += x[size_t(r * len + i)];
          want /= double(len);
          EXPECT_NEAR(got[size_t(r)], want, 1e-6 + 1e-5 * std::abs(want))
              << isaName(isa) << " len=" << len << " row=" << r;
        }
      }
  }
}

} // namespace

// NCHW convolution with weights packed as GEMM A panels (the JIT's path): every GEMM kernel,
// pointwise/strided/padded/dilated/asymmetric shapes, deep layers with few pixels, threaded.
TEST(Kernels, Conv2dNchwPackedMatchesReference) {
  ThreadPool pool(2);
  std::vector<Conv2dShape> shapes;
  auto add = [&](int64_t H, int64_t W, int64_t Cin, int64_t Cout, int64_t K, int64_t stride,
                 int64_t pad, int64_t dil) {
    Conv2dShape s;
    s.H = H, s.W = W, s.Cin = Cin, s.Cout = Cout, s.KH = K, s.KW = K;
    s.strideH = s.strideW = stride;
    s.padTop = s.padLeft = s.padBottom = s.padRight = pad;
    s.dilH = s.dilW = dil;
    shapes.push_back(s);
  };
  add(9, 11, 5, 7, 3, 1, 1, 1);    // 3x3 same
  add(10, 10, 3, 17, 3, 2, 1, 1);  // strided
  add(7, 7, 33, 40, 1, 1, 0, 1);   // pointwise
  add(21, 25, 270, 60, 1, 1, 0, 1); // pointwise, P >= 512 and >= 4 weight panels: copied B block
  add(13, 13, 40, 900, 1, 1, 0, 1); // pointwise, P < 512 and >= 64 weight panels: copied B block
  add(9, 9, 4, 6, 1, 2, 0, 1);     // 1x1 strided
  add(12, 13, 3, 9, 5, 2, 2, 1);   // 5x5
  add(9, 9, 4, 5, 3, 1, 2, 2);     // dilated
  add(3, 3, 300, 70, 3, 1, 1, 1);  // K > kc, few pixels (channel split)
  add(23, 29, 6, 20, 3, 1, 1, 1);  // many pixel panels
  // Stride 1 with rows >= 14: B read through the offset table of a padded copy (implicit im2col)
  add(11, 20, 5, 7, 3, 1, 2, 2);   // dilated
  add(16, 17, 40, 13, 3, 1, 1, 1); // K = 360 > kc
  add(6, 15, 3, 8, 5, 1, 0, 1);    // no padding
  add(15, 16, 4, 6, 1, 2, 0, 1);   // 1x1 stride 2 (two column phases, one read)
  add(64, 66, 40, 12, 1, 2, 0, 1); // 1x1 stride 2, subsampled copy split over threads
  add(20, 23, 3, 5, 3, 3, 1, 2);   // stride 3, dilated: three phases
  add(30, 30, 3, 8, 7, 2, 3, 1);   // a ResNet-like stem
  add(20, 50, 3, 5, 3, 3, 1, 2);   // stride 3, dilated, rows of 16
  add(40, 40, 24, 8, 3, 1, 1, 1);  // input >= 32K floats: the padded copy split over threads
  add(36, 38, 24, 4, 3, 2, 1, 1);  // the same, strided (phases)
  // Flat panels (rows of >= one vector): vectors that continue on the next output row
  add(14, 14, 8, 9, 3, 1, 1, 1);  // 14-pixel rows (AVX-512: row segments)
  add(28, 28, 5, 13, 3, 1, 1, 1); // 28 = 3.5 vectors of 8
  add(13, 13, 6, 7, 3, 1, 1, 1);  // 13-pixel rows: splits at every offset
  add(19, 19, 3, 6, 3, 2, 1, 1);  // stride 2, 10-pixel rows (two phases, gap over two rows)
  add(10, 9, 4, 5, 3, 1, 0, 2);   // dilated, 5-pixel rows (AVX2: im2col; generic: flat)
  add(8, 17, 4, 5, 5, 1, 2, 1);   // 17-pixel rows, 5x5
  // Small maps with many channels: what ConvRows::Pixels is for (7x7 and 14x14 stages)
  add(7, 7, 40, 70, 3, 1, 1, 1);  // 49 pixels, K = 360 > kc
  add(7, 6, 130, 20, 3, 1, 1, 1); // K = 1170 > 1024, the largest kc
  add(7, 7, 64, 45, 1, 1, 0, 1);  // pointwise 7x7
  add(9, 9, 40, 20, 3, 1, 1, 1);  // one channel panel: pixel rows split the pixels over threads
  add(14, 14, 9, 33, 3, 2, 1, 1); // strided to 7x7
  add(1, 1, 301, 50, 1, 1, 0, 1); // squeeze-excite: a 1x1 map, K > kc (pixel rows: one row)
  add(2, 2, 21, 40, 1, 1, 0, 1);  // a 2x2 map: fewer pixels than a tile's rows
  {
    Conv2dShape s; // asymmetric kernel and padding
    s.H = 6, s.W = 8, s.Cin = 3, s.Cout = 5, s.KH = 2, s.KW = 3, s.padTop = 1, s.padRight = 2;
    shapes.push_back(s);
  }
  // Both GEMM layouts (conv.h ConvRows) of the f32 kernels on every shape; the bf16 kernel runs
  // channel rows only.
  for (const KernelDesc* kd : gemmKernelsUnderTest())
    for (ConvRows rows : {ConvRows::Channels, ConvRows::Pixels})
      for (const Conv2dShape& s : shapes)
        for (int variant = 0;
             variant < 8 && (rows == ConvRows::Channels || kd->op == KernelOp::Gemm);
             ++variant) { // clamps, then the activations
          // Pixel rows share the tile and its epilogue: no bias, and both residual variants (one
          // threaded) cover what is their own (the transposes, the split by channels).
          if (rows == ConvRows::Pixels && variant != 0 && variant != 2 && variant != 5) continue;
          const int64_t K = s.Cin * s.KH * s.KW;
          const auto x = randomVec(size_t(s.Cin * s.H * s.W), 21);
          const auto w = randomVec(size_t(s.Cout * K), 22);
          const auto bias = randomVec(size_t(s.Cout), 23);
          const float* b = variant ? bias.data() : nullptr;
          Epilogue ep = makeEpilogue(variant, b);
          // A residual (Conv + Add [+ clamp]) in some variants, added in the register tile.
          const auto res = randomVec(size_t(s.Cout * s.OH() * s.OW()), 24);
          if (variant == 1 || variant == 2 || variant == 5) ep.residual = res.data();
          std::vector<float> packed(size_t(convPackedWeightFloats(*kd, s, rows)));
          packConvWeights(*kd, s, rows, w.data(), packed.data());
          std::vector<float> got(size_t(s.Cout * s.OH() * s.OW()), 55.0f);
          conv2dNchwPacked(*kd, s, rows, packed.data(), x.data(), got.data(), ep,
                           variant % 3 == 2 ? &pool : nullptr);
          expectClose(got, convNchwReference(s, 1, asSeenBy(kd, x), asSeenBy(kd, w), b, ep), K,
                      std::string(kd->name) +
                          (rows == ConvRows::Pixels ? " pixel rows" : " channel rows") +
                          " nchw conv " + std::to_string(s.KH) + "x" + std::to_string(s.KW) +
                          " stride " + std::to_string(s.strideH) + " Cin " + std::to_string(s.Cin));
        }
}

// Activations stored as bf16 (Epilogue::bf16) through the bf16 kernels' channel rows: the input
// widened in each copy path (padded, gathered 7x7, subsampled 1x1/2) or paired in place
// (pointwise), and on the tiles that store bf16 (AMX) a bf16 residual and the result narrowed
// (one K block, and K > kc with f32 partial sums); 1 and 2 threads.
// Reference: the f32 one on the stored (bf16) input, weights and residual, then rounded to bf16
// when the output is bf16 (so within the f32 tolerance plus half a bf16 step).
TEST(Kernels, Conv2dBf16ActivationsMatchReference) {
  ThreadPool pool(2);
  std::vector<Conv2dShape> shapes;
  auto add = [&](int64_t H, int64_t W, int64_t Cin, int64_t Cout, int64_t K, int64_t stride,
                 int64_t pad) {
    Conv2dShape c;
    c.H = H, c.W = W, c.Cin = Cin, c.Cout = Cout, c.KH = c.KW = K;
    c.strideH = c.strideW = stride;
    c.padTop = c.padLeft = c.padBottom = c.padRight = pad;
    shapes.push_back(c);
  };
  add(16, 17, 40, 36, 3, 1, 1); // implicit im2col (padded copy)
  add(7, 7, 48, 40, 3, 1, 1);   // 7x7 map: gathered panels
  add(7, 7, 120, 33, 3, 1, 1);  // K = 1080 > kc: partial sums
  add(14, 14, 64, 70, 1, 1, 0); // pointwise: the B block copied
  add(15, 16, 24, 20, 1, 2, 0); // 1x1 stride 2: subsampled copy
  add(15, 15, 16, 24, 3, 2, 1); // stride 2 (phases)
  for (const KernelDesc& k : allKernels())
    if (k.op == KernelOp::GemmBf16 && !cpuSupports(k.isa))
      std::printf("[ skipped  ] %s: this CPU lacks %s\n", k.name,
                  std::string(isaName(k.isa)).c_str());
  for (const KernelDesc* kd : availableKernels(KernelOp::GemmBf16))
    for (const Conv2dShape& s : shapes)
      for (unsigned io : std::initializer_list<unsigned>{kBf16Input, kBf16Output, kBf16Residual,
                                                         kBf16Input | kBf16Output,
                                                         kBf16Input | kBf16Output | kBf16Residual})
        for (int variant : {1, 2, 6}) {
          // A bf16 result or residual is the tile's own (KernelDesc::bf16Io); others read bf16
          // input only.
          if (!kd->bf16Io && io != kBf16Input) continue;
          const int64_t K = s.Cin * s.KH * s.KW, n = s.Cout * s.OH() * s.OW();
          auto x = asSeenBy(kd, randomVec(size_t(s.Cin * s.H * s.W), 41));
          const auto w = randomVec(size_t(s.Cout * K), 42);
          const auto bias = randomVec(size_t(s.Cout), 43);
          auto res = randomVec(size_t(n), 44);
          if (io & kBf16Residual) res = asSeenBy(kd, res);
          Epilogue ep = makeEpilogue(variant, bias.data());
          const bool withRes = variant != 6 || (io & kBf16Residual);
          if (withRes) ep.residual = res.data();
          std::vector<float> want = convNchwReference(s, 1, x, asSeenBy(kd, w), bias.data(), ep);
          // The stored operands: bf16 bits where io says so.
          auto bits = [](const std::vector<float>& v) {
            std::vector<uint16_t> b(v.size());
            for (size_t i = 0; i < v.size(); ++i) b[i] = bf16Bits(v[i]);
            return b;
          };
          const std::vector<uint16_t> x16 = bits(x), res16 = bits(res);
          std::vector<uint16_t> out16(size_t(n), 0x7FC0);
          std::vector<float> out32(size_t(n), 55.0f);
          ep.bf16 = io;
          if (withRes && (io & kBf16Residual))
            ep.residual = reinterpret_cast<const float*>(res16.data());
          std::vector<float> packed(size_t(convPackedWeightFloats(*kd, s, ConvRows::Channels)));
          packConvWeights(*kd, s, ConvRows::Channels, w.data(), packed.data());
          const float* in = io & kBf16Input ? reinterpret_cast<const float*>(x16.data()) : x.data();
          float* out = io & kBf16Output ? reinterpret_cast<float*>(out16.data()) : out32.data();
          conv2dNchwPacked(*kd, s, ConvRows::Channels, packed.data(), in, out, ep,
                           variant == 2 ? &pool : nullptr);
          const std::string what = std::string(kd->name) + " bf16 io " + std::to_string(io) +
                                   " conv " + std::to_string(s.KH) + "x" + std::to_string(s.KW) +
                                   " stride " + std::to_string(s.strideH) + " Cin " +
                                   std::to_string(s.Cin) + " variant " + std::to_string(variant);
          if (!(io & kBf16Output)) {
            expectClose(out32, want, K, what);
            continue;
          }
          const double tol = 4.0 * double(K) * std::numeric_limits<float>::epsilon();
          double worst = 0;
          for (size_t i = 0; i < want.size(); ++i) {
            const uint32_t u = uint32_t(out16[i]) << 16;
            float got;
            std::memcpy(&got, &u, 4);
            const double err = std::fabs(double(got) - double(want[i])) -
                               std::ldexp(std::fabs(double(want[i])), -8);
            worst = std::max(worst, err);
          }
          EXPECT_LE(worst, tol) << what;
        }
}

namespace {

Conv2dShape squareConv(int64_t H, int64_t W, int64_t Cin, int64_t Cout, int64_t K, int64_t stride,
                       int64_t pad) {
  Conv2dShape s;
  s.H = H, s.W = W, s.Cin = Cin, s.Cout = Cout, s.KH = s.KW = K;
  s.strideH = s.strideW = stride;
  s.padTop = s.padLeft = s.padBottom = s.padRight = pad;
  return s;
}

// The blocked convolutions against the NCHW reference, every epilogue, 1 and 2 threads: on
// NCHW16c input, or (plane) on NCHW planes as a stem reads them.
void checkNchwcConvs(const std::vector<Conv2dShape>& shapes, bool plane) {
  ThreadPool pool(2);
  for (const KernelDesc* kd : availableKernels(KernelOp::ConvNchw16c))
    for (const Conv2dShape& s : shapes)
      for (int variant : {0, 1, 2, 5}) {
        ASSERT_TRUE(nchwcConvApplies(s));
        const int64_t K = s.Cin * s.KH * s.KW, OHW = s.OH() * s.OW();
        const auto x = randomVec(size_t(s.Cin * s.H * s.W), 31);
        const auto w = randomVec(size_t(s.Cout * K), 32);
        const auto bias = randomVec(size_t(s.Cout), 33);
        const auto res = randomVec(size_t(s.Cout * OHW), 34);
        const float* b = variant ? bias.data() : nullptr;
        Epilogue ep = makeEpilogue(variant, b);
        std::vector<float> resBlocked(size_t(nchwcBlocks(s.Cout) * OHW * 16));
        reorderToNchw16c(*kd, res.data(), s.Cout, OHW, resBlocked.data());
        if (variant == 2 || variant == 5) ep.residual = resBlocked.data();
        std::vector<float> xb(size_t(nchwcBlocks(s.Cin) * s.H * s.W * 16), 77.0f);
        reorderToNchw16c(*kd, x.data(), s.Cin, s.H * s.W, xb.data(), &pool);
        std::vector<float> packed(
            size_t(plane ? nchwcPlanePackedWeightFloats(s) : nchwcPackedWeightFloats(s)));
        (plane ? packNchwcPlaneWeights : packNchwcWeights)(s, w.data(), packed.data());
        std::vector<float> yb(resBlocked.size(), 55.0f), got(size_t(s.Cout * OHW));
        (plane ? conv2dNchwToNchw16c : conv2dNchw16c)(*kd, s, packed.data(),
                                                      plane ? x.data() : xb.data(), yb.data(), ep,
                                                      variant % 2 ? &pool : nullptr);
        reorderFromNchw16c(*kd, yb.data(), s.Cout, OHW, got.data(), &pool);
        Epilogue refEp = ep;
        refEp.residual = ep.residual ? res.data() : nullptr;
        expectClose(got, convNchwReference(s, 1, x, w, b, refEp), K,
                    std::string(kd->name) + (plane ? " plane " : " ") + std::to_string(s.KH) + "x" +
                        std::to_string(s.KW) + " stride " + std::to_string(s.strideW) + " " +
                        std::to_string(s.H) + "x" + std::to_string(s.W) + "x" +
                        std::to_string(s.Cin) + " -> " + std::to_string(s.Cout) + " variant " +
                        std::to_string(variant));
      }
}

} // namespace

TEST(Kernels, Conv2dNchw16cMatchesReference) {
  for (const KernelDesc& k : allKernels())
    if (k.op == KernelOp::ConvNchw16c && !cpuSupports(k.isa))
      std::printf("[ skipped  ] %s: this CPU lacks %s\n", k.name,
                  std::string(isaName(k.isa)).c_str());
  checkNchwcConvs({squareConv(16, 30, 32, 64, 3, 1, 1),  // two 14-pixel tiles, an overlapping third
                   squareConv(14, 14, 20, 40, 1, 1, 0),  // pointwise, partial input block and pair
                   squareConv(15, 17, 48, 16, 3, 1, 1),  // 17-pixel rows (overlap 11), one block
                   squareConv(14, 14, 64, 70, 1, 1, 0),  // pointwise, five output blocks
                   squareConv(29, 31, 16, 48, 3, 2, 1),  // stride 2 (15-pixel rows)
                   squareConv(28, 28, 40, 33, 3, 2, 1),  // stride 2 to 14x14
                   squareConv(12, 40, 5, 20, 5, 1, 2),   // 5x5, three input channels of a block
                   squareConv(30, 33, 17, 24, 1, 2, 0),  // strided pointwise (the phase copy alone)
                   squareConv(31, 29, 16, 16, 4, 2, 1),  // even kernel, stride 2, odd padded width
                   squareConv(40, 40, 256, 48, 1, 1, 0), // row chunks of 6 (40 KB rows), last of 4
                   squareConv(7, 7, 64, 48, 3, 1, 1),    // 7-pixel rows two to a tile, odd OH
                   squareConv(14, 13, 32, 40, 3, 2, 1),  // stride 2 to 7x7
                   squareConv(8, 7, 16, 32, 1, 1, 0),    // pointwise 8x7, even OH
                   // Narrow rows (under 14 pixels, symbolic sizes at a small run): one tile per
                   // row through a scratch tile.
                   squareConv(5, 10, 32, 40, 3, 1, 1),  // 10-pixel rows, partial pair
                   squareConv(3, 4, 16, 48, 3, 1, 1),   // 4-pixel rows, three blocks
                   squareConv(9, 9, 32, 32, 3, 2, 1),   // stride 2 to 5x5
                   squareConv(1, 1, 64, 64, 1, 1, 0),   // one pixel
                   squareConv(1, 7, 32, 33, 1, 1, 0),   // a 7-pixel row alone (OH 1)
                   squareConv(2, 13, 20, 16, 1, 2, 0)}, // strided pointwise to 7-pixel rows
                  false);
}

// Stems on NCHW planes -> NCHW16c (conv2dNchwToNchw16c): few input channels, 7x7 and 3x3, strides
// 1 and 2 (the tile reads every other float), padded and not.
TEST(Kernels, Conv2dNchwToNchw16cMatchesReference) {
  checkNchwcConvs({squareConv(40, 38, 3, 64, 7, 2, 3),  // a ResNet stem
                   squareConv(33, 35, 3, 32, 3, 2, 1),  // a MobileNet stem (odd sizes)
                   squareConv(16, 30, 1, 16, 3, 1, 1),  // one channel, stride 1
                   squareConv(20, 29, 15, 40, 3, 2, 0), // 15 channels, no padding (in place)
                   squareConv(10, 12, 3, 32, 3, 2, 1),  // narrow rows: 6 pixels, stride 2
                   squareConv(6, 7, 3, 16, 3, 1, 1)},   // 7-pixel rows (narrow on planes)
                  true);
}

// Depthwise convolutions on NCHW16c: 8-pixel groups, an overlapping last group, rows under 8
// pixels one pixel at a time (the kernel itself takes them; the layout pass sends rows >= 14),
// strides 1 and 2, a partial channel block, 3x3 and 5x5, every epilogue.
TEST(Kernels, DepthwiseNchw16cMatchesReference) {
  ThreadPool pool(2);
  std::vector<Conv2dShape> shapes;
  auto add = [&](int64_t H, int64_t W, int64_t C, int64_t K, int64_t stride, int64_t pad) {
    Conv2dShape s;
    s.H = H, s.W = W, s.Cin = s.Cout = C, s.KH = s.KW = K;
    s.strideH = s.strideW = stride;
    s.padTop = s.padLeft = s.padBottom = s.padRight = pad;
    shapes.push_back(s);
  };
  add(14, 14, 32, 3, 1, 1); // 14-pixel rows: one group of 8, one overlapping
  add(16, 21, 40, 3, 1, 1); // partial channel block
  add(29, 29, 16, 3, 2, 1); // stride 2, 15-pixel rows
  add(20, 18, 24, 5, 1, 2); // 5x5
  add(30, 28, 48, 5, 2, 2); // 5x5 stride 2
  add(7, 7, 32, 3, 1, 1);   // 7x7 maps (7-pixel rows, one pixel at a time)
  add(14, 14, 48, 5, 2, 2); // 5x5 stride 2 to 7x7
  add(4, 5, 32, 3, 1, 1);   // narrow rows (symbolic sizes at a small run)
  add(3, 3, 16, 3, 2, 1);   // stride 2 to 2x2
  for (const KernelDesc* kd : availableKernels(KernelOp::ConvNchw16c))
    for (const Conv2dShape& s : shapes)
      for (int variant : {0, 1, 2, 4, 5}) {
        ASSERT_TRUE(nchwcConvApplies(s));
        const int64_t taps = s.KH * s.KW, OHW = s.OH() * s.OW();
        const auto x = randomVec(size_t(s.Cin * s.H * s.W), 41);
        const auto w = randomVec(size_t(s.Cin * taps), 42);
        const auto bias = randomVec(size_t(s.Cin), 43);
        const auto res = randomVec(size_t(s.Cin * OHW), 44);
        const float* b = variant ? bias.data() : nullptr;
        Epilogue ep = makeEpilogue(variant, b);
        std::vector<float> resBlocked(size_t(nchwcBlocks(s.Cin) * OHW * 16));
        reorderToNchw16c(*kd, res.data(), s.Cin, OHW, resBlocked.data());
        if (variant == 2 || variant == 5) ep.residual = resBlocked.data();
        std::vector<float> xb(size_t(nchwcBlocks(s.Cin) * s.H * s.W * 16));
        reorderToNchw16c(*kd, x.data(), s.Cin, s.H * s.W, xb.data());
        std::vector<float> packed(size_t(nchwcDepthwiseWeightFloats(s)));
        packNchwcDepthwise(s, w.data(), packed.data());
        std::vector<float> yb(resBlocked.size(), 55.0f), got(size_t(s.Cin * OHW));
        depthwiseNchw16c(*kd, s, packed.data(), xb.data(), yb.data(), ep,
                         variant % 2 ? &pool : nullptr);
        reorderFromNchw16c(*kd, yb.data(), s.Cin, OHW, got.data());
        Epilogue refEp = ep;
        refEp.residual = ep.residual ? res.data() : nullptr;
        expectClose(got, convNchwReference(s, s.Cin, x, w, b, refEp), taps,
                    std::string(kd->name) + " depthwise " + std::to_string(s.KH) + "x" +
                        std::to_string(s.KW) + " stride " + std::to_string(s.strideW) +
                        " variant " + std::to_string(variant));
      }
}

// MaxPool / AveragePool on NCHW16c against the NCHW pooling kernels (tested against the
// interpreter in their own tests): padding, ceil_mode overhang, count_include_pad, strides.
TEST(Kernels, PoolNchw16cMatchesNchwPools) {
  ThreadPool pool(2);
  const KernelDesc& ref = defaultKernel(KernelOp::DepthwiseConvNchw, Isa::Generic);
  struct Case {
    int64_t C, H, W, K, stride, pad, extra; // extra: one more output row and column (ceil_mode)
  };
  const Case cases[] = {{64, 21, 23, 3, 2, 1, 0},
                        {40, 14, 15, 2, 2, 0, 0},
                        {16, 12, 13, 3, 2, 0, 1},
                        {24, 9, 10, 3, 1, 1, 0},
                        {16, 11, 17, 5, 3, 2, 1}};
  for (const KernelDesc* kd : availableKernels(KernelOp::ConvNchw16c))
    for (const Case& c : cases)
      for (int mode : {0, 1, 2}) { // max, average, average counting the padding
        DwShape s;
        s.C = c.C, s.H = c.H, s.W = c.W, s.KH = s.KW = c.K, s.strideH = s.strideW = c.stride;
        s.padTop = s.padLeft = s.padBottom = s.padRight = c.pad;
        s.outH = s.OH() + c.extra, s.outW = s.OW() + c.extra;
        const int64_t OHW = s.outH * s.outW;
        const auto x = randomVec(size_t(c.C * c.H * c.W), 71);
        std::vector<float> want(size_t(c.C * OHW)), got(want.size());
        if (mode == 0)
          maxPoolNchw(ref, s, x.data(), want.data());
        else
          avgPoolNchw(ref, s, mode == 2, x.data(), want.data());
        std::vector<float> xb(size_t(nchwcBlocks(c.C) * c.H * c.W * 16));
        reorderToNchw16c(*kd, x.data(), c.C, c.H * c.W, xb.data());
        std::vector<float> yb(size_t(nchwcBlocks(c.C) * OHW * 16), 55.0f);
        poolNchw16c(*kd, s, mode == 0, mode == 2, xb.data(), yb.data(), mode ? &pool : nullptr);
        reorderFromNchw16c(*kd, yb.data(), c.C, OHW, got.data());
        expectClose(got, want, c.K * c.K,
                    std::string(kd->name) + " pool mode " + std::to_string(mode) + " " +
                        std::to_string(c.K) + "x" + std::to_string(c.K) + " stride " +
                        std::to_string(c.stride) + " pad " + std::to_string(c.pad) +
                        (c.extra ? " ceil" : ""));
      }
}

// GlobalAveragePool on NCHW16c (squeeze-excite regions): one 16-lane mean per channel.
TEST(Kernels, MeanNchw16cMatchesReference) {
  ThreadPool pool(2);
  for (const KernelDesc* kd : availableKernels(KernelOp::ConvNchw16c))
    for (auto [C, HW] : {std::pair<int64_t, int64_t>{16, 1}, {40, 49}, {96, 3136}, {1280, 7}}) {
      const auto x = randomVec(size_t(C * HW), 61);
      std::vector<float> xb(size_t(nchwcBlocks(C) * HW * 16));
      reorderToNchw16c(*kd, x.data(), C, HW, xb.data());
      std::vector<float> yb(size_t(nchwcBlocks(C) * 16), 55.0f), got(static_cast<size_t>(C));
      meanNchw16c(*kd, xb.data(), nchwcBlocks(C), HW, yb.data(), HW > 100 ? &pool : nullptr);
      reorderFromNchw16c(*kd, yb.data(), C, 1, got.data());
      std::vector<float> want(static_cast<size_t>(C));
      for (int64_t c = 0; c < C; ++c) {
        double sum = 0;
        for (int64_t i = 0; i < HW; ++i) sum += x[size_t(c * HW + i)];
        want[size_t(c)] = float(sum / double(HW));
      }
      expectClose(got, want, int(HW),
                  std::string(kd->name) + " mean C=" + std::to_string(C) +
                      " HW=" + std::to_string(HW));
      for (int64_t l = C; l < nchwcBlocks(C) * 16; ++l)
        EXPECT_EQ(yb[size_t(l)], 0.0f) << "padding lane " << l << " of the mean is not zero";
    }
}

// NCHW depthwise (any kernel size, stride, dilation, padding, channel multiplier).
TEST(Kernels, DepthwiseNchwMatchesReference) {
  ThreadPool pool(2);
  struct Case {
    int64_t C, mult, H, W, K, stride, pad, dil;
  };
  const Case cases[] = {{8, 1, 9, 11, 3, 1, 1, 1},
                        {5, 1, 10, 21, 3, 2, 1, 1},
                        {4, 1, 9, 70, 3, 2, 1, 1}, // rows of >= 64: one deinterleave call per plane
                        {3, 2, 12, 13, 5, 2, 2, 1},
                        {16, 1, 7, 40, 5, 1, 2, 1},
                        {4, 1, 9, 9, 3, 1, 2, 2},
                        {2, 3, 6, 5, 1, 1, 0, 1},
                        {7, 1, 1, 1, 3, 1, 1, 1},
                        {6, 1, 17, 33, 7, 3, 3, 1},
                        // wide rows: full vectors, the overlapping tail, stride-2 deinterleaving
                        {3, 1, 5, 75, 3, 2, 1, 1},
                        {2, 1, 4, 77, 5, 2, 2, 1},
                        {2, 2, 3, 53, 3, 1, 1, 1},
                        // channel blocks: partial last blocks, the row kernels (3x3, 5x5,
                        // strides 1 and 2) and the any-kernel loop (dilation, 7x7, stride 3)
                        {37, 1, 7, 7, 5, 1, 2, 1},
                        {33, 1, 7, 7, 3, 1, 1, 1},
                        {20, 1, 14, 14, 3, 2, 1, 1},
                        {16, 1, 8, 6, 5, 2, 2, 1},
                        {17, 1, 9, 9, 3, 1, 2, 2},
                        {9, 1, 11, 10, 7, 3, 3, 1}};
  // Each case through the plane kernels and, with one channel per group, the channel blocks.
  for (const KernelDesc* kd : kernelsUnderTest(KernelOp::DepthwiseConvNchw))
    for (const Case& c : cases)
      for (int form = 0; form < 2; ++form)
        for (int variant = 0; variant < 7; ++variant) {
          if (form == 1 && (c.mult != 1 || !kd->dwCBlock)) continue;
          DwShape d;
          d.C = c.C, d.mult = c.mult, d.H = c.H, d.W = c.W, d.KH = d.KW = c.K;
          d.strideH = d.strideW = c.stride, d.dilH = d.dilW = c.dil;
          d.padTop = d.padLeft = d.padBottom = d.padRight = c.pad;
          Conv2dShape s;
          s.H = c.H, s.W = c.W, s.Cin = c.C, s.Cout = c.C * c.mult, s.KH = s.KW = c.K;
          s.strideH = s.strideW = c.stride, s.dilH = s.dilW = c.dil;
          s.padTop = s.padLeft = s.padBottom = s.padRight = c.pad;
          const auto x = randomVec(size_t(c.C * c.H * c.W), 31);
          const auto w = randomVec(size_t(s.Cout * c.K * c.K), 32);
          const auto bias = randomVec(size_t(s.Cout), 33);
          const float* b = variant ? bias.data() : nullptr;
          const Epilogue ep = makeEpilogue(variant + 1, b);
          std::vector<float> got(size_t(s.Cout * s.OH() * s.OW()), 55.0f);
          ASSERT_EQ(d.OH(), s.OH());
          depthwiseConvNchw(*kd, d, w.data(), x.data(), got.data(), ep,
                            variant % 3 == 2 ? &pool : nullptr, form);
          expectClose(got, convNchwReference(s, c.C, x, w, b, ep), c.K * c.K,
                      std::string(kd->name) + (form ? " channel blocks" : " planes") + " dw " +
                          std::to_string(c.K) + " stride " + std::to_string(c.stride) + " mult " +
                          std::to_string(c.mult) + " C " + std::to_string(c.C));
        }
}

// A pinned pool binds its worker to the second allowed CPU and the thread that hands it a job to
// the first; the tasks still run once each. (The caller's mask is restored for the next tests.)
TEST(Kernels, PinnedThreadPoolBindsItsThreads) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  if (CPU_COUNT(&before) < 2)
    GTEST_SKIP() << "one CPU allowed: a pinned pool of 2 threads stays unpinned";
  int first = -1, second = -1;
  for (int c = 0; c < CPU_SETSIZE && second < 0; ++c)
    if (CPU_ISSET(c, &before)) (first < 0 ? first : second) = c;
  {
    ThreadPool pool(2, true);
    std::vector<std::atomic<int>> hits(100);
    pool.parallelFor(100, [&](int64_t i) { ++hits[size_t(i)]; });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    cpu_set_t now;
    ASSERT_EQ(sched_getaffinity(0, sizeof(now), &now), 0);
    EXPECT_EQ(CPU_COUNT(&now), 1);
    EXPECT_TRUE(CPU_ISSET(first, &now)) << "the caller is bound to the first allowed CPU";
    // Tasks of 2 ms: while the caller sleeps in one, the worker claims the other.
    std::atomic<int> workerSeen{0};
    const auto caller = std::this_thread::get_id();
    for (int rep = 0; rep < 50 && !workerSeen; ++rep)
      pool.parallelFor(2, [&](int64_t) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        if (std::this_thread::get_id() == caller) return;
        cpu_set_t mine;
        if (sched_getaffinity(0, sizeof(mine), &mine) == 0 && CPU_COUNT(&mine) == 1 &&
            CPU_ISSET(second, &mine))
          workerSeen = 1;
        else
          workerSeen = 2;
      });
    EXPECT_EQ(workerSeen.load(), 1) << "the worker runs bound to the second allowed CPU";
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(before), &before), 0);
}

TEST(Kernels, ThreadPoolRunsEveryTaskOnceAndPropagatesErrors) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.numThreads(), threads);
    for (int64_t n : {0, 1, 2, 5, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      for (int rep = 0; rep < 3; ++rep) pool.parallelFor(n, [&](int64_t i) { ++hits[size_t(i)]; });
      for (auto& h : hits) EXPECT_EQ(h.load(), 3);
    }
    EXPECT_THROW(pool.parallelFor(10,
                                  [](int64_t i) {
                                    if (i == 7) aicc::fail("task {}", i);
                                  }),
                 aicc::Error);
    // Still usable afterwards; nested calls run inline.
    std::atomic<int> total{0};
    pool.parallelFor(4, [&](int64_t) { pool.parallelFor(3, [&](int64_t) { ++total; }); });
    EXPECT_EQ(total.load(), 12);
  }
}

// The byte table lookups (kernels/lut.h), vector (AVX512-VBMI, where this CPU has it) and
// portable, against tables[c][x ^ flip]: lengths around the 64-byte vector and its tail, u8 and
// i8 indexing, one table and one per channel, in place, split over two threads.
TEST(Kernels, Lut8MatchesTheTableOnEveryPath) {
  if (!lut8HasVector()) std::printf("[ skipped  ] lut8 vector form: this CPU lacks avx512vbmi\n");
  ThreadPool pool(2);
  std::mt19937 rng(17);
  struct Shape {
    int64_t outer, channels, inner;
  };
  for (const Shape& s :
       {Shape{1, 1, 0}, Shape{1, 1, 1}, Shape{1, 1, 63}, Shape{1, 1, 65}, Shape{1, 1, 600000},
        Shape{2, 3, 49}, Shape{1, 32, 12544}, Shape{3, 5, 64}})
    for (uint8_t flip : {uint8_t(0), uint8_t(0x80)}) {
      const int64_t n = s.outer * s.channels * s.inner;
      std::vector<uint8_t> tables(static_cast<size_t>(s.channels * 256));
      for (auto& t : tables) t = uint8_t(rng());
      std::vector<uint8_t> x(static_cast<size_t>(n)), want(static_cast<size_t>(n));
      for (auto& v : x) v = uint8_t(rng());
      for (int64_t i = 0; i < n; ++i)
        want[size_t(i)] = tables[size_t((i / s.inner) % s.channels * 256 + (x[size_t(i)] ^ flip))];
      for (bool vector : {true, false}) {
        std::vector<uint8_t> y(static_cast<size_t>(n), 0xEE), inPlace = x;
        lut8(x.data(), tables.data(), y.data(), s.outer, s.channels, s.inner, flip, &pool, vector);
        EXPECT_EQ(y, want) << s.outer << "x" << s.channels << "x" << s.inner
                           << " flip=" << int(flip) << " vector=" << vector;
        lut8(inPlace.data(), tables.data(), inPlace.data(), s.outer, s.channels, s.inner, flip,
             nullptr, vector);
        EXPECT_EQ(inPlace, want) << "in place, " << s.outer << "x" << s.channels << "x" << s.inner;
      }
    }
}
