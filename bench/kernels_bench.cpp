// Microbenchmarks of the hand-written kernels (src/kernels), in GFLOP/s:
//   peak/<isa>                        FMA-only loop: the machine's per-core peak for that ISA
//   every benchmark also reports peak%: its FLOP/s over its ISA's measured f32 FMA peak x threads
//   gemm/<kernel>/MxNxK/threads:T     C = A[M,K] * B[K,N] (B pre-packed), bias + ReLU epilogue
//   dwconv/<kernel>/HxWxC/k<K>s<S>/threads:T, conv2d/<gemm kernel>/...: the NCHW convolutions the
//   engines call (depthwise over padded rows; GEMM with weights packed as A, im2col panels)
//   qdwconv/<kernel>/HxWxC/s<S>/threads:T, qconv/<kernel>/...: the int8 QLinearConv kernels
//   (kernels/qconv.h), in GOP/s (2 per multiply-add)
//   dqgemm/<kernel>/MxNxK/threads:T: the int8 GEMM with f32 results (kernels/dqgemm.h), GOP/s
//   attention/<gemm kernel>/BxHxSxD/threads:T: f32 (bf16 kernels: bf16 operands) scaled dot-product
//   attention (kernels/attention.h), GFLOP/s of its two products
//   qmatmul_pairs/<kernel>/BxMxNxK/threads:T: QLinearMatMul of two run-time operands (attention's
//   Q K^T and P V; kernels/qmatmul.h), GOP/s, b's packing included
// Run: ./build/aicc_bench [--benchmark_filter=gemm/.*14x32] (see bench/README.md).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/conv.h"
#include "kernels/conv_nchwc.h"
#include "kernels/dqgemm.h"
#include "kernels/gemm.h"
#include "kernels/qconv.h"
#include "kernels/qmatmul.h"
#include "kernels/registry.h"
#include "kernels/thread_pool.h"

namespace aicc::bench {
float fmaLoopAvx512(int64_t iters);
float fmaLoopAvx2(int64_t iters);
} // namespace aicc::bench

using namespace aicc::kernels;

namespace {

std::vector<float> randomVec(size_t n) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

ThreadPool* poolFor(int threads) {
  static std::unique_ptr<ThreadPool> pools[3];
  if (threads <= 1) return nullptr;
  auto& p = pools[threads == 2 ? 1 : 2];
  if (!p) p = std::make_unique<ThreadPool>(threads);
  return p.get();
}

// The measured per-core f32 FMA peak (FLOP/s) of the vector file a kernel of `isa` uses: the
// AVX-512 loop for the AVX-512 kernels (VNNI, BF16 and AMX ones included), the AVX2 loop for the
// AVX2 ones, the best of the two for the portable kernels. The best of 20 short runs (a run the
// VM interrupts reads low; 5 runs once gave a peak 17% low and 96% "of peak").
double measuredPeak(Isa isa) {
  auto measure = [](bool avx512) {
    const int64_t iters = 1 << 20;
    double best = 0;
    for (int r = 0; r < 20; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(avx512 ? aicc::bench::fmaLoopAvx512(iters)
                                      : aicc::bench::fmaLoopAvx2(iters));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, double(iters) * 12 * (avx512 ? 32 : 16) / s);
    }
    return best;
  };
  static const double avx512 = cpuSupports(Isa::Avx512) ? measure(true) : 0.0;
  static const double avx2 = cpuSupports(Isa::Avx2) ? measure(false) : 0.0;
  if (isa == Isa::Avx2) return avx2;
  if (isa == Isa::Generic || isa == Isa::Neon) return std::max(avx512, avx2);
  return avx512;
}

using Clock = std::chrono::steady_clock;

// FLOPS (a rate) and peak% (a plain number: FLOP/s over the measured peak of the kernel's ISA x
// threads, from the wall time of the timing loop that started at t0).
void setFlops(benchmark::State& st, double flopsPerIter, int threads = 1, Clock::time_point t0 = {},
              Isa isa = Isa::Generic) {
  st.counters["FLOPS"] =
      benchmark::Counter(flopsPerIter, benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::OneK::kIs1000);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (measuredPeak(isa) > 0 && t0 != Clock::time_point{} && s > 0)
    st.counters["peak%"] =
        100.0 * flopsPerIter * double(st.iterations()) / s / (measuredPeak(isa) * threads);
}

void benchPeak(benchmark::State& st, bool avx512) {
  const int64_t iters = 1 << 20;
  for (auto _ : st)
    benchmark::DoNotOptimize(avx512 ? aicc::bench::fmaLoopAvx512(iters)
                                    : aicc::bench::fmaLoopAvx2(iters));
  setFlops(st, double(iters) * 12 * (avx512 ? 32 : 16));
}

void benchGemm(benchmark::State& st, const KernelDesc* kd, int64_t M, int64_t N, int64_t K,
               int threads) {
  const auto A = randomVec(size_t(M * K)), B = randomVec(size_t(K * N)),
             bias = randomVec(size_t(N));
  std::vector<float> C(size_t(M * N));
  const PackedB pb = packB(*kd, B.data(), K, N, N);
  ThreadPool* pool = poolFor(threads);
  const auto t0 = Clock::now();
  for (auto _ : st) {
    gemm(pb, M, A.data(), K, C.data(), N, Epilogue::relu(bias.data()), pool);
    benchmark::ClobberMemory();
  }
  setFlops(st, 2.0 * double(M) * double(N) * double(K), threads, t0, kd->isa);
}

// The engines' depthwise path: NCHW, any kernel, padded rows (kernels/conv.h depthwiseConvNchw).
void benchDw(benchmark::State& st, const KernelDesc* kd, int64_t HW, int64_t C, int64_t K,
             int64_t stride, int threads, int channelBlocks) {
  DwShape s;
  s.C = C, s.H = s.W = HW, s.KH = s.KW = K, s.strideH = s.strideW = stride;
  s.padTop = s.padLeft = s.padBottom = s.padRight = K / 2;
  const auto in = randomVec(size_t(HW * HW * C)), w = randomVec(size_t(K * K * C)),
             b = randomVec(size_t(C));
  std::vector<float> out(size_t(s.OH() * s.OW() * C));
  ThreadPool* pool = poolFor(threads);
  const auto t0 = Clock::now();
  for (auto _ : st) {
    depthwiseConvNchw(*kd, s, w.data(), in.data(), out.data(), Epilogue::relu6(b.data()), pool,
                      channelBlocks);
    benchmark::ClobberMemory();
  }
  setFlops(st, 2.0 * double(K * K) * double(s.OH() * s.OW() * C), threads, t0, kd->isa);
}
// The engines' convolution: NCHW, weights packed at compile time as the A operand, im2col panels
// packed per call (kernels/conv.h conv2dNchwPacked).
void benchConv(benchmark::State& st, const KernelDesc* kd, Conv2dShape s, ConvRows rows,
               int threads) {
  const auto in = randomVec(size_t(s.Cin * s.H * s.W));
  const int64_t K = s.Cin * s.KH * s.KW;
  const auto w = randomVec(size_t(s.Cout * K)), b = randomVec(size_t(s.Cout));
  std::vector<float> packed(size_t(convPackedWeightFloats(*kd, s, rows)));
  packConvWeights(*kd, s, rows, w.data(), packed.data());
  std::vector<float> out(size_t(s.OH() * s.OW() * s.Cout));
  ThreadPool* pool = poolFor(threads);
  const auto t0 = Clock::now();
  for (auto _ : st) {
    conv2dNchwPacked(*kd, s, rows, packed.data(), in.data(), out.data(), Epilogue::relu(b.data()),
                     pool);
    benchmark::ClobberMemory();
  }
  setFlops(st, 2.0 * double(s.OH() * s.OW() * s.Cout) * double(K), threads, t0, kd->isa);
}

// The same convolution on NCHW16c activations (kernels/conv_nchwc.h; the layout pass's form).
// Few input channels (a stem) read NCHW planes, as the layout pass sends them.
void benchConvNchwc(benchmark::State& st, const KernelDesc* kd, Conv2dShape s, int threads) {
  const bool plane = s.Cin < kNchwcBlock;
  const auto in = randomVec(size_t((plane ? s.Cin : nchwcBlocks(s.Cin) * 16) * s.H * s.W));
  const int64_t K = s.Cin * s.KH * s.KW;
  const auto w = randomVec(size_t(s.Cout * K)), b = randomVec(size_t(s.Cout));
  std::vector<float> packed(
      size_t(plane ? nchwcPlanePackedWeightFloats(s) : nchwcPackedWeightFloats(s)));
  (plane ? packNchwcPlaneWeights : packNchwcWeights)(s, w.data(), packed.data());
  std::vector<float> out(size_t(s.OH() * s.OW() * nchwcBlocks(s.Cout) * 16));
  ThreadPool* pool = poolFor(threads);
  const auto t0 = Clock::now();
  for (auto _ : st) {
    (plane ? conv2dNchwToNchw16c : conv2dNchw16c)(*kd, s, packed.data(), in.data(), out.data(),
                                                  Epilogue::relu(b.data()), pool);
    benchmark::ClobberMemory();
  }
  setFlops(st, 2.0 * double(s.OH() * s.OW() * s.Cout) * double(K), threads, t0, kd->isa);
}

// The int8 convolutions (QLinearConv): u8 activations, int8 weights, factors below 0.99.
QConvShape qshape(int64_t HW, int64_t C, int64_t M, int64_t group, int64_t K, int64_t stride) {
  QConvShape s;
  s.C = C, s.H = s.W = HW, s.M = M, s.group = group, s.KH = s.KW = K;
  s.strideH = s.strideW = stride;
  s.padTop = s.padLeft = s.padBottom = s.padRight = K / 2;
  return s;
}
void benchQConv(benchmark::State& st, const KernelDesc* kd, QConvShape s, int threads) {
  std::mt19937 rng(3);
  std::vector<uint8_t> x(size_t(s.C * s.H * s.W)), y(size_t(s.M * s.OH() * s.OW()));
  for (auto& v : x) v = uint8_t(rng());
  std::vector<int16_t> w(size_t(s.M * s.Kc()));
  for (auto& v : w) v = int16_t(int(rng() % 255) - 127);
  std::vector<int32_t> bias(size_t(s.M), 100), rowSum(size_t(s.M), 0);
  std::vector<float> factor(size_t(s.M), 1e-3f);
  const QConvParams q{false, false, 128, 128};
  std::vector<int8_t> w8(size_t(s.M * 12));
  std::vector<uint8_t> packed;
  if (kd->op == KernelOp::QDepthwise3x3) {
    packQDepthwise3x3Weights(s.M, w.data(), w8.data());
  } else {
    packed.resize(size_t(qconvPackedBytes(*kd, s)));
    packQConvWeights(*kd, s, w.data(), packed.data());
  }
  ThreadPool* pool = poolFor(threads);
  const auto t0 = Clock::now();
  for (auto _ : st) {
    if (kd->op == KernelOp::QDepthwise3x3)
      qdepthwise3x3(*kd, s, q, x.data(), w8.data(), bias.data(), factor.data(), y.data(), pool);
    else
      qconv2d(*kd, s, q, x.data(), packed.data(), rowSum.data(), bias.data(), factor.data(),
              y.data(), pool);
    benchmark::ClobberMemory();
  }
  setFlops(st, 2.0 * double(s.OH() * s.OW() * s.M) * double(s.Kc()), threads, t0, kd->isa);
}

void benchDqGemm(benchmark::State& st, const KernelDesc* kd, int64_t M, int64_t N, int64_t K,
                 int threads) {
  std::mt19937 rng(5);
  std::vector<uint8_t> a(size_t(M * K));
  for (auto& v : a) v = uint8_t(rng());
  std::vector<int16_t> w(size_t(K * N));
  for (auto& v : w) v = int16_t(int(rng() % 255) - 127);
  std::vector<uint8_t> packed(size_t(dqgemmPackedBytes(*kd, K, N)));
  packDqGemmWeights(*kd, K, N, w.data(), packed.data());
  std::vector<int32_t> colSum(size_t(N), 0);
  std::vector<float> scale(size_t(N), 1e-4f), y(size_t(M * N));
  ThreadPool* pool = poolFor(threads);
  const auto t0 = Clock::now();
  for (auto _ : st) {
    dqgemm(*kd, M, N, K, a.data(), K, 128, packed.data(), colSum.data(), scale.data(), y.data(), N,
           pool);
    benchmark::ClobberMemory();
  }
  setFlops(st, 2.0 * double(M * N) * double(K), threads, t0, kd->isa);
}

void benchAttention(benchmark::State& st, const KernelDesc* kd, int64_t H, int64_t S, int64_t D,
                    int threads) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> q(size_t(H * S * D)), k(q.size()), v(q.size()), y(q.size());
  for (auto* t : {&q, &k, &v})
    for (auto& x : *t) x = u(rng);
  AttentionShape s;
  s.Hq = s.Hkv = H, s.Sq = s.Skv = S, s.D = s.Dv = D;
  s.scale = 1.0f / std::sqrt(float(D));
  ThreadPool* pool = poolFor(threads);
  const auto t0 = Clock::now();
  for (auto _ : st) {
    attentionF32(*kd, s, q.data(), k.data(), v.data(), y.data(), pool);
    benchmark::ClobberMemory();
  }
  setFlops(st, 4.0 * double(H * S * S) * double(D), threads, t0, kd->isa);
}

void benchQMatMulPairs(benchmark::State& st, const KernelDesc* kd, int64_t B, int64_t M, int64_t N,
                       int64_t K, int threads) {
  std::mt19937 rng(5);
  std::vector<uint8_t> a(size_t(B * M * K)), b(size_t(B * K * N)), y(size_t(B * M * N));
  for (auto& v : a) v = uint8_t(rng());
  for (auto& v : b) v = uint8_t(rng());
  QMatMulShape s;
  s.R = M, s.K = K, s.N = N, s.azp = 121, s.yzp = 130;
  QMatMulPairs p;
  p.batches = B, p.aStride = M * K, p.bStride = K * N, p.bzp = 119, p.factor = 1e-5;
  ThreadPool* pool = poolFor(threads);
  const auto t0 = Clock::now();
  for (auto _ : st) {
    qmatmulPairs(*kd, s, p, a.data(), b.data(), y.data(), pool);
    benchmark::ClobberMemory();
  }
  setFlops(st, 2.0 * double(B * M * N) * double(K), threads, t0, kd->isa);
}

Conv2dShape convShape(int64_t HW, int64_t Cin, int64_t Cout, int64_t K, int64_t stride) {
  Conv2dShape s;
  s.H = s.W = HW;
  s.Cin = Cin;
  s.Cout = Cout;
  s.KH = s.KW = K;
  s.strideH = s.strideW = stride;
  s.padTop = s.padLeft = s.padBottom = s.padRight = K / 2;
  return s;
}

void registerAll() {
  if (cpuSupports(Isa::Avx512))
    benchmark::RegisterBenchmark("peak/avx512", [](benchmark::State& st) { benchPeak(st, true); });
  if (cpuSupports(Isa::Avx2))
    benchmark::RegisterBenchmark("peak/avx2", [](benchmark::State& st) { benchPeak(st, false); });

  struct Shape {
    int64_t M, N, K;
  };
  // ResNet 3x3 conv at 56x56 (im2col), ResNet 3x3 at 14x14, BERT QKV/FFN, ResNet 3x3 at 7x7,
  // MobileNetV2's classifier (batch 1: a GEMV streaming 5 MB of weights).
  // bf16 kernels count their FLOP as f32 ones; peak% stays relative to the f32 FMA peak (their
  // own peak is twice it on CPUs with AVX512-BF16).
  const Shape shapes[] = {{1024, 1024, 1024}, {1024, 1056, 1024}, {3136, 64, 576}, {196, 256, 2304},
                          {128, 768, 768},    {128, 3072, 768},   {49, 512, 4608}, {1, 1000, 1280}};
  std::vector<const KernelDesc*> gemms = availableKernels(KernelOp::Gemm);
  for (const KernelDesc* kd : availableKernels(KernelOp::GemmBf16)) gemms.push_back(kd);
  for (const KernelDesc* kd : gemms)
    for (const Shape& s : shapes)
      for (int t : {1, 2}) {
        const std::string name = "gemm/" + std::string(kd->name) + "/" + std::to_string(s.M) + "x" +
                                 std::to_string(s.N) + "x" + std::to_string(s.K) +
                                 "/threads:" + std::to_string(t);
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
          benchGemm(st, kd, s.M, s.N, s.K, t);
        })->UseRealTime();
      }

  struct DwCase {
    int64_t HW, C, K, stride;
  };
  // MobileNetV2 (3x3) and EfficientNet-B0 (5x5) depthwise layers (7x7 maps: channel blocks).
  const DwCase dws[] = {{112, 32, 3, 1}, {112, 96, 3, 2}, {56, 144, 3, 1}, {28, 192, 3, 1},
                        {14, 576, 3, 1}, {14, 672, 5, 1}, {28, 240, 5, 2}, {7, 960, 3, 1},
                        {7, 1152, 5, 1}, {56, 144, 3, 2}, {28, 192, 3, 2}, {14, 576, 3, 2}};
  // Each case in both forms (planes, channel blocks where the kernel has them; "auto" marks
  // depthwiseChannelBlocks' choice).
  for (const KernelDesc* kd : availableKernels(KernelOp::DepthwiseConvNchw))
    for (const DwCase& s : dws)
      for (int blocks : {0, 1}) {
        if (blocks && !kd->dwCBlock) continue;
        DwShape shape;
        shape.C = s.C, shape.H = shape.W = s.HW, shape.KH = shape.KW = s.K;
        shape.strideH = shape.strideW = s.stride;
        shape.padTop = shape.padLeft = shape.padBottom = shape.padRight = s.K / 2;
        const bool chosen = depthwiseChannelBlocks(*kd, shape) == bool(blocks);
        for (int t : {1, 2}) {
          const std::string name = "dwconv/" + std::string(kd->name) + "/" + std::to_string(s.HW) +
                                   "x" + std::to_string(s.HW) + "x" + std::to_string(s.C) + "/k" +
                                   std::to_string(s.K) + "s" + std::to_string(s.stride) +
                                   (blocks ? "/channel-blocks" : "/planes") +
                                   (chosen ? "(auto)" : "") + "/threads:" + std::to_string(t);
          benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
            benchDw(st, kd, s.HW, s.C, s.K, s.stride, t, blocks);
          })->UseRealTime();
        }
      }
  // BERT-base's projections and feed-forward layers at 128 tokens (ONNX Runtime's
  // quantize_dynamic).
  for (const KernelDesc* kd : availableKernels(KernelOp::DqGemm))
    for (const Shape& s : {Shape{128, 768, 768}, Shape{128, 3072, 768}, Shape{128, 768, 3072},
                           Shape{1024, 1024, 1024}})
      for (int t : {1, 2}) {
        const std::string name = "dqgemm/" + std::string(kd->name) + "/" + std::to_string(s.M) +
                                 "x" + std::to_string(s.N) + "x" + std::to_string(s.K) +
                                 "/threads:" + std::to_string(t);
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
          benchDqGemm(st, kd, s.M, s.N, s.K, t);
        })->UseRealTime();
      }
  // BERT-base's attention at 128 tokens, 12 heads of 64 (the default f32 and bf16 kernels).
  for (KernelOp op : {KernelOp::Gemm, KernelOp::GemmBf16})
    if (const KernelDesc* kd = bestKernel(op, bestIsa()))
      for (int t : {1, 2}) {
        const std::string name =
            "attention/" + std::string(kd->name) + "/1x12x128x64/threads:" + std::to_string(t);
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
          benchAttention(st, kd, 12, 128, 64, t);
        })->UseRealTime();
      }
  // BERT-base's attention at 128 tokens, 12 heads of 64: Q K^T and P V.
  for (const KernelDesc* kd : availableKernels(KernelOp::DqGemm))
    for (const Shape& s : {Shape{128, 128, 64}, Shape{128, 64, 128}})
      for (int t : {1, 2}) {
        const std::string name = "qmatmul_pairs/" + std::string(kd->name) + "/12x" +
                                 std::to_string(s.M) + "x" + std::to_string(s.N) + "x" +
                                 std::to_string(s.K) + "/threads:" + std::to_string(t);
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
          benchQMatMulPairs(st, kd, 12, s.M, s.N, s.K, t);
        })->UseRealTime();
      }
  // mobilenetv2-12-int8's layers: the stem, pointwise expansions and projections, depthwise ones.
  const std::pair<const char*, QConvShape> qconvs[] = {
      {"224x224x3_3x3s2_32", qshape(224, 3, 32, 1, 3, 2)},
      {"112x112x16_1x1_96", qshape(112, 16, 96, 1, 1, 1)},
      {"56x56x144_1x1_24", qshape(56, 144, 24, 1, 1, 1)},
      {"14x14x64_1x1_384", qshape(14, 64, 384, 1, 1, 1)},
      {"7x7x320_1x1_1280", qshape(7, 320, 1280, 1, 1, 1)},
      {"112x112x96_dw_s2", qshape(112, 96, 96, 96, 3, 2)},
      {"56x56x144_dw_s1", qshape(56, 144, 144, 144, 3, 1)},
      {"14x14x384_dw_s1", qshape(14, 384, 384, 384, 3, 1)},
      {"7x7x960_dw_s1", qshape(7, 960, 960, 960, 3, 1)}};
  std::vector<const KernelDesc*> qkernels = availableKernels(KernelOp::QConvGemm);
  for (const KernelDesc* kd : availableKernels(KernelOp::QDepthwise3x3)) qkernels.push_back(kd);
  for (const KernelDesc* kd : qkernels)
    for (const auto& [label, s] : qconvs) {
      if ((kd->op == KernelOp::QDepthwise3x3) != (s.group > 1)) continue;
      for (int t : {1, 2}) {
        const std::string name = std::string(s.group > 1 ? "qdwconv/" : "qconv/") + kd->name + "/" +
                                 label + "/threads:" + std::to_string(t);
        const QConvShape shape = s;
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
          benchQConv(st, kd, shape, t);
        })->UseRealTime();
      }
    }
  // ResNet-50 and MobileNetV2 convolutions (3x3 and 1x1 at 56x56 to 7x7, strided 1x1, the 7x7/2
  // stem) through the default GEMM kernel and the bf16 one.
  std::vector<const KernelDesc*> convKernels = {&defaultKernel(KernelOp::Gemm)};
  for (const KernelDesc* kd : availableKernels(KernelOp::GemmBf16)) convKernels.push_back(kd);
  const std::pair<const char*, Conv2dShape> convs[] = {
      {"56x56x64_3x3_64", convShape(56, 64, 64, 3, 1)},
      {"56x56x64_1x1_256", convShape(56, 64, 256, 1, 1)},
      {"14x14x256_3x3_256", convShape(14, 256, 256, 3, 1)},
      {"28x28x128_3x3_128", convShape(28, 128, 128, 3, 1)},
      {"7x7x512_3x3_512", convShape(7, 512, 512, 3, 1)},
      {"7x7x2048_1x1_512", convShape(7, 2048, 512, 1, 1)},
      {"28x28x256_1x1s2_512", convShape(28, 256, 512, 1, 2)},
      // ResNet's strided 3x3 (the first of layers 2-4)
      {"56x56x64_3x3s2_128", convShape(56, 64, 128, 3, 2)},
      {"28x28x128_3x3s2_256", convShape(28, 128, 256, 3, 2)},
      {"14x14x256_3x3s2_512", convShape(14, 256, 512, 3, 2)},
      {"14x14x1024_1x1_256", convShape(14, 1024, 256, 1, 1)},
      {"14x14x256_1x1_1024", convShape(14, 256, 1024, 1, 1)},
      {"7x7x512_1x1_2048", convShape(7, 512, 2048, 1, 1)},
      {"7x7x320_1x1_1280", convShape(7, 320, 1280, 1, 1)},
      {"7x7x960_1x1_320", convShape(7, 960, 320, 1, 1)},
      {"224x224x3_7x7s2_64", convShape(224, 3, 64, 7, 2)},
      {"224x224x3_3x3s2_64", convShape(224, 3, 64, 3, 2)},
      {"224x224x3_3x3s2_32", convShape(224, 3, 32, 3, 2)},
      // MobileNetV2 / EfficientNet-B0 at 112x112 (few channels: memory-bound), squeeze-excite
      // 1x1 maps (pixel rows: a one-row tile per B panel)
      {"112x112x32_1x1_16", convShape(112, 32, 16, 1, 1)},
      {"112x112x16_1x1_96", convShape(112, 16, 96, 1, 1)},
      {"1x1x1152_1x1_48", convShape(1, 1152, 48, 1, 1)},
      {"1x1x48_1x1_1152", convShape(1, 48, 1152, 1, 1)},
      {"56x56x144_1x1_24", convShape(56, 144, 24, 1, 1)},
      // DenseNet-121's 3x3 layers (32 output channels: 2.3 tiles of 14 rows)
      {"56x56x128_3x3_32", convShape(56, 128, 32, 3, 1)},
      {"28x28x128_3x3_32", convShape(28, 128, 32, 3, 1)},
      {"14x14x128_3x3_32", convShape(14, 128, 32, 3, 1)},
      {"7x7x128_3x3_32", convShape(7, 128, 32, 3, 1)},
      {"14x14x640_1x1_128", convShape(14, 640, 128, 1, 1)},
      {"7x7x800_1x1_128", convShape(7, 800, 128, 1, 1)},
      // SqueezeNet 1.1's fire modules: 55- and 27-pixel rows, few input channels (K 16 to 288),
      // the last ones on 13-pixel rows (no implicit im2col under AVX-512)
      {"55x55x16_3x3_64", convShape(55, 16, 64, 3, 1)},
      {"55x55x16_1x1_64", convShape(55, 16, 64, 1, 1)},
      {"27x27x32_3x3_128", convShape(27, 32, 128, 3, 1)},
      {"13x13x512_1x1_1000", convShape(13, 512, 1000, 1, 1)},
      {"13x13x64_3x3_256", convShape(13, 64, 256, 3, 1)},
      {"13x13x48_3x3_192", convShape(13, 48, 192, 3, 1)}};
  // Each f32 case in both GEMM layouts (conv.h ConvRows; "auto" marks convRowsFor's choice).
  for (const KernelDesc* gk : convKernels)
    for (const auto& [label, s] : convs)
      for (ConvRows rows : {ConvRows::Channels, ConvRows::Pixels}) {
        if (rows == ConvRows::Pixels && gk->op != KernelOp::Gemm) continue;
        const bool chosen = convRowsFor(*gk, s) == rows;
        for (int t : {1, 2}) {
          const std::string name = "conv2d/" + std::string(gk->name) + "/" + label +
                                   (rows == ConvRows::Pixels ? "/pixel-rows" : "/channel-rows") +
                                   (chosen ? "(auto)" : "") + "/threads:" + std::to_string(t);
          const Conv2dShape shape = s;
          benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
            benchConv(st, gk, shape, rows, t);
          })->UseRealTime();
        }
      }
  for (const KernelDesc* kd : availableKernels(KernelOp::ConvNchw16c))
    for (const auto& [label, s] : convs) {
      if (!nchwcConvApplies(s)) continue;
      for (int t : {1, 2}) {
        const std::string name = "conv2d/" + std::string(kd->name) + "/" + label +
                                 (s.Cin < kNchwcBlock ? "/nchw-to-nchw16c" : "/nchw16c") +
                                 "/threads:" + std::to_string(t);
        const Conv2dShape shape = s;
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
          benchConvNchwc(st, kd, shape, t);
        })->UseRealTime();
      }
    }
}

} // namespace

int main(int argc, char** argv) {
  registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
