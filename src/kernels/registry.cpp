#include "kernels/registry.h"

#include <cstdlib>
#include <string>

#include "rt/cpu.h"

// The AVX2/AVX-512 kernels are compiled on x86-64 only (CMakeLists.txt); other hosts, and the
// cross-built runtimes (scripts/build-runtime.sh), have the portable ones.
#if defined(__x86_64__) || defined(__i386__)
#define AICC_X86_KERNELS 1
#else
#define AICC_X86_KERNELS 0
#endif
// The NEON kernels are compiled on AArch64 only; elsewhere their descriptors stay (without code)
// so that compiling for an aarch64 target can pick them and pack weights for their tiles.
#if defined(__aarch64__)
#define AICC_NEON(f) f
#else
#define AICC_NEON(f) nullptr
#endif

namespace aicc::kernels {

namespace {

// Best first within each op (the dispatcher takes the first one the CPU supports).
// kc: each K block is summed from zero and then added to C (simd_impl.h), so f32 rounding grows
// with about sqrt(K * kc). The x86 f32 tiles take 256: every K block costs a pass over the C tile
// (load, add, store) and the tile's setup, and on Zen 4 (1 thread) 128 -> 256 gave the GEMMs
// +10-28% (AVX2 6x16 196x256x2304: 77 -> 99 GFLOP/s) and resnet50 ~5%, for sqrt(2) x the
// rounding of the long reductions (resnet50 still within 5e-7 of its largest logit).
// nc: the B columns one packed A block (mc x kc, L2) meets before A is packed again. One B
// micro-panel (L1) meets every A micro-panel of the block, so the B block itself only streams
// from L3 once per A block; the x86 f32 tiles take 4096 (A packed once for N <= 4096): on Zen 4
// 512 -> 4096 took the 1024^3 GEMM of the 14x32 tile from ~76% to 86-89% of the FMA peak.
const KernelDesc kKernels[] = {
#if AICC_X86_KERNELS
    {.name = "f32_gemm_avx512_14x32",
     .op = KernelOp::Gemm,
     .isa = Isa::Avx512,
     .mr = 14,
     .nr = 32,
     .kc = 1024, // a tile's fixed cost per call (C prefetches and update, set-up) over more k
                 // steps; B panels from L2: 1024^3 77 -> 88% of peak (kc 256, Intel Xeon)
     .mc = 126,
     .nc = 4096,
     .vectorWidth = 16,
     .constraints = "any M,N,K; B pre-packed in 32-column panels; 28 zmm accumulators",
     .gemm = f32_gemm_avx512_14x32,
     .packA = f32_gemm_avx512_packa14},
    {.name = "f32_gemm_avx512_8x32",
     .op = KernelOp::Gemm,
     .isa = Isa::Avx512,
     .mr = 8,
     .nr = 32,
     .kc = 1024, // as the 14x32 tile: 1024^3 79 -> 85% of peak, 128x768x768 83 -> 85%
     .mc = 128,
     .nc = 4096,
     .vectorWidth = 16,
     .constraints = "any M,N,K; B pre-packed in 32-column panels; 16 zmm accumulators",
     .gemm = f32_gemm_avx512_8x32,
     .packA = f32_gemm_avx512_packa8},
    // The bf16 kernels' kc counts k values. AMX: 992 is 496 units (a multiple of its 16-unit tile
    // rows), so A's rows, 1984 bytes apart, fall in different L1 sets; at 480/512/1024 the GEMMs
    // of aicc_bench ran within noise or below (Intel Xeon). AVX512-BF16: 256 is 128 pairs, the
    // f32 tile's 128 loop steps and bytes per block.
    {.name = "bf16_gemm_amx_32x32",
     .op = KernelOp::GemmBf16,
     .isa = Isa::Amx,
     .mr = 32,
     .nr = 32,
     .kc = 992,
     .mc = 128,
     .nc = 4096,
     .vectorWidth = 16,
     .kg = 2,
     .kuAlign = 16,
     .aRows = true,
     .bf16Io = true,
     .constraints = "--precision bf16: operands rounded to bf16 (weights at compile time), f32 "
                    "accumulation; 2 x 2 AMX tiles of 16 x 16 f32, tdpbf16ps",
     .gemm = bf16_gemm_amx_32x32,
     .packA = bf16_gemm_amx_packa32,
     .packB = bf16_packb32_amx,
     .widenBf16 = bf16_widen_avx512bf16,
     .packB16 = bf16_packb32_bf16_avx512bf16},
    {.name = "bf16_gemm_avx512bf16_14x32",
     .op = KernelOp::GemmBf16,
     .isa = Isa::Avx512Bf16,
     .mr = 14,
     .nr = 32,
     .kc = 256,
     .mc = 126,
     .nc = 512,
     .vectorWidth = 16,
     .kg = 2,
     .constraints = "--precision bf16: operands rounded to bf16 (weights at compile time), f32 "
                    "accumulation; 28 zmm accumulators, vdpbf16ps",
     .gemm = bf16_gemm_avx512bf16_14x32,
     .packA = bf16_gemm_avx512bf16_packa14,
     .packB = bf16_packb32_avx512bf16,
     .widenBf16 = bf16_widen_avx512bf16,
     .packB16 = bf16_packb32_bf16_avx512bf16},
    {.name = "f32_gemm_avx2_6x16",
     .op = KernelOp::Gemm,
     .isa = Isa::Avx2,
     .mr = 6,
     .nr = 16,
     .kc = 256,
     .mc = 120,
     .nc = 4096,
     .vectorWidth = 8,
     .constraints = "any M,N,K; B pre-packed in 16-column panels; 12 ymm accumulators",
     .gemm = f32_gemm_avx2_6x16,
     .packA = f32_gemm_avx2_packa6},
#endif
    {.name = "f32_gemm_neon_8x8",
     .op = KernelOp::Gemm,
     .isa = Isa::Neon,
     .mr = 8,
     .nr = 8,
     .kc = 128,
     .mc = 128,
     .nc = 512,
     .vectorWidth = 4,
     .constraints = "any M,N,K; B pre-packed in 8-column panels; 16 q-register accumulators",
     .gemm = AICC_NEON(f32_gemm_neon_8x8)},
    {.name = "f32_gemm_generic_4x8",
     .op = KernelOp::Gemm,
     .isa = Isa::Generic,
     .mr = 4,
     .nr = 8,
     .kc = 128,
     .mc = 128,
     .nc = 512,
     .vectorWidth = 1,
     .constraints = "any M,N,K; portable C++",
     .gemm = f32_gemm_generic_4x8},
#if AICC_X86_KERNELS
    {.name = "f32_dwconv3x3_avx512",
     .op = KernelOp::DepthwiseConv3x3,
     .isa = Isa::Avx512,
     .vectorWidth = 16,
     .constraints = "NHWC, 3x3, pad 1, stride 1 or 2, any C",
     .dwRow = f32_dwconv3x3_avx512},
    {.name = "f32_dwconv3x3_avx2",
     .op = KernelOp::DepthwiseConv3x3,
     .isa = Isa::Avx2,
     .vectorWidth = 8,
     .constraints = "NHWC, 3x3, pad 1, stride 1 or 2, any C",
     .dwRow = f32_dwconv3x3_avx2},
#endif
    {.name = "f32_dwconv3x3_neon",
     .op = KernelOp::DepthwiseConv3x3,
     .isa = Isa::Neon,
     .vectorWidth = 4,
     .constraints = "NHWC, 3x3, pad 1, stride 1 or 2, any C",
     .dwRow = AICC_NEON(f32_dwconv3x3_neon)},
    {.name = "f32_dwconv3x3_generic",
     .op = KernelOp::DepthwiseConv3x3,
     .isa = Isa::Generic,
     .vectorWidth = 1,
     .constraints = "NHWC, 3x3, pad 1, stride 1 or 2, any C; portable C++",
     .dwRow = f32_dwconv3x3_generic},
#if AICC_X86_KERNELS
    {.name = "f32_dwconv_nchw_avx512",
     .op = KernelOp::DepthwiseConvNchw,
     .isa = Isa::Avx512,
     .vectorWidth = 16,
     .constraints = "NCHW, one channel per group, any kernel/stride/dilation/padding",
     .dwNchwPlane = f32_dwconv_nchw_avx512,
     .dwCBlock = f32_dwconv_cblock_avx512},
    {.name = "f32_dwconv_nchw_avx2",
     .op = KernelOp::DepthwiseConvNchw,
     .isa = Isa::Avx2,
     .vectorWidth = 8,
     .constraints = "NCHW, one channel per group, any kernel/stride/dilation/padding",
     .dwNchwPlane = f32_dwconv_nchw_avx2,
     .dwCBlock = f32_dwconv_cblock_avx2},
#endif
    {.name = "f32_dwconv_nchw_neon",
     .op = KernelOp::DepthwiseConvNchw,
     .isa = Isa::Neon,
     .vectorWidth = 4,
     .constraints = "NCHW, one channel per group, any kernel/stride/dilation/padding",
     .dwNchwPlane = AICC_NEON(f32_dwconv_nchw_neon),
     .dwCBlock = AICC_NEON(f32_dwconv_cblock_neon)},
    {.name = "f32_dwconv_nchw_generic",
     .op = KernelOp::DepthwiseConvNchw,
     .isa = Isa::Generic,
     .vectorWidth = 1,
     .constraints = "NCHW, one channel per group, any kernel/stride/dilation/padding; portable C++",
     .dwNchwPlane = f32_dwconv_nchw_generic}, // no channel blocks: a block of one lane is a plane
// Convolutions on NCHW16c activations: a pixel's 16 channels are one zmm register.
#if AICC_X86_KERNELS
    {.name = "f32_conv_nchw16c_avx512_14x32",
     .op = KernelOp::ConvNchw16c,
     .isa = Isa::Avx512,
     .mr = 14,
     .nr = 32,
     .vectorWidth = 16,
     .constraints = "NCHW16c in and out, group 1, dilation 1, stride 1 or 2 along W, output rows "
                    ">= 14 pixels; 14 pixels x 32 channels",
     .nchwc = f32_conv_nchw16c_avx512,
     .nchwcPlane = f32_conv_nchw_nchw16c_avx512,
     .nchwcDw = f32_dwconv_nchw16c_avx512,
     .toNchwc = f32_to_nchw16c_avx512,
     .fromNchwc = f32_from_nchw16c_avx512,
     .nchwcMean = f32_mean_nchw16c_avx512,
     .nchwcPool = f32_pool_nchw16c_avx512},
#endif
// int8 convolution GEMM tiles (kernels/qconv.h), best first.
#if AICC_X86_KERNELS
    {.name = "u8s8_qgemm_amx_32x32",
     .op = KernelOp::QConvGemm,
     .isa = Isa::Amx,
     .mr = 32,
     .nr = 32,
     .vectorWidth = 16,
     .kg = 4,
     .kuAlign = 16,
     .aRows = true,
     .bf16Io = true,
     .constraints = "weights minus zero point within int8; 2 x 2 AMX tiles of 16 x 16 int32, "
                    "tdpbsud, exact int32",
     .qgemm = u8s8_qgemm_amx_32x32},
    {.name = "u8s8_qgemm_avx512vnni_8x48",
     .op = KernelOp::QConvGemm,
     .isa = Isa::Avx512Vnni,
     .mr = 8,
     .nr = 48,
     .vectorWidth = 16,
     .kg = 4,
     .constraints = "weights minus zero point within int8; vpdpbusd, exact int32",
     .qgemm = u8s8_qgemm_avx512vnni_8x48},
    {.name = "u8s8_qgemm_avxvnni_4x24",
     .op = KernelOp::QConvGemm,
     .isa = Isa::AvxVnni,
     .mr = 4,
     .nr = 24,
     .vectorWidth = 8,
     .kg = 4,
     .constraints = "weights minus zero point within int8; ymm vpdpbusd (AVX-VNNI), exact int32",
     .qgemm = u8s8_qgemm_avxvnni_4x24},
    {.name = "u8i16_qgemm_avx2_4x24",
     .op = KernelOp::QConvGemm,
     .isa = Isa::Avx2,
     .mr = 4,
     .nr = 24,
     .vectorWidth = 8,
     .kg = 2,
     .constraints = "any u8/i8 weights and activations; pmaddwd on int16, exact int32",
     .qgemm = u8i16_qgemm_avx2_4x24},
#endif
    {.name = "u8i16_qgemm_generic_4x8",
     .op = KernelOp::QConvGemm,
     .isa = Isa::Generic,
     .mr = 4,
     .nr = 8,
     .vectorWidth = 1,
     .kg = 2,
     .constraints = "any u8/i8 weights and activations; portable C++, exact int32",
     .qgemm = u8i16_qgemm_generic_4x8},
// int8 GEMM tiles with f32 results (kernels/dqgemm.h), best first; no portable one (the lowering
// falls back to MatMulInteger's kernels).
#if AICC_X86_KERNELS
    {.name = "u8s8_dqgemm_amx_32x32",
     .op = KernelOp::DqGemm,
     .isa = Isa::Amx,
     .mr = 32,
     .nr = 32,
     .vectorWidth = 16,
     .kg = 4,
     .kuAlign = 16,
     .aRows = true,
     .constraints = "weights minus zero point within int8; u8 activation rows read in place, "
                    "2 x 2 AMX tiles of 16 x 16 int32, tdpbusd, exact int32",
     .dqgemm = u8s8_dqgemm_amx_32x32},
    {.name = "u8s8_dqgemm_avx512vnni_8x48",
     .op = KernelOp::DqGemm,
     .isa = Isa::Avx512Vnni,
     .mr = 8,
     .nr = 48,
     .vectorWidth = 16,
     .kg = 4,
     .constraints = "weights minus zero point within int8; activations - 128 broadcast, weights "
                    "+ 128, vpdpbusd, exact int32",
     .dqgemm = u8s8_dqgemm_avx512vnni_8x48},
#endif
// int8 depthwise convolutions (kernels/qconv.h); other geometries and weights run on the f32
// plane kernels above.
#if AICC_X86_KERNELS
    {.name = "u8s8_qdwconv3x3_avx512vnni_4x16",
     .op = KernelOp::QDepthwise3x3,
     .isa = Isa::Avx512Vnni,
     .mr = 4,
     .nr = 16,
     .vectorWidth = 16,
     .kg = 4,
     .constraints = "3x3, pad 1, stride 1 or 2, dilation 1; weights minus zero point within int8; "
                    "vpdpbusd over each row's three taps, exact int32",
     .qdw3x3 = u8s8_qdwconv3x3_avx512vnni_4x16},
#endif
};

int isaRank(Isa isa) {
  return isa == Isa::Amx                        ? 5
         : isa == Isa::Avx512Bf16               ? 4
         : isa == Isa::Avx512Vnni               ? 3
         : isa == Isa::Avx512                   ? 2
         : isa == Isa::AvxVnni                  ? 2 // a cap for bestIsa; isaWithin tells apart
         : isa == Isa::Avx2 || isa == Isa::Neon ? 1
                                                : 0;
}

bool isX86(Isa isa) {
  return isa == Isa::Avx2 || isa == Isa::AvxVnni || isa == Isa::Avx512 || isa == Isa::Avx512Vnni ||
         isa == Isa::Avx512Bf16 || isa == Isa::Amx;
}

} // namespace

std::string_view isaName(Isa isa) {
  switch (isa) {
  case Isa::Generic:
    return "generic";
  case Isa::Avx2:
    return "avx2";
  case Isa::AvxVnni:
    return "avxvnni";
  case Isa::Avx512:
    return "avx512";
  case Isa::Neon:
    return "neon";
  case Isa::Avx512Vnni:
    return "avx512vnni";
  case Isa::Avx512Bf16:
    return "avx512bf16";
  case Isa::Amx:
    return "amx";
  }
  return "?";
}

bool cpuSupports(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  switch (isa) {
  case Isa::Generic:
    return true;
  case Isa::Avx2:
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  case Isa::AvxVnni:
    return cpuSupports(Isa::Avx2) && (hostCpuFeatures() >> uint32_t(CpuFeature::AVXVNNI) & 1);
  case Isa::Avx512:
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma");
  case Isa::Avx512Vnni:
    return cpuSupports(Isa::Avx512) && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  case Isa::Avx512Bf16:
    return cpuSupports(Isa::Avx512Vnni) && __builtin_cpu_supports("avx512bf16");
  case Isa::Amx: { // cpuid and the OS's grant of the tile state (rt/cpu.cpp)
    const uint64_t f = hostCpuFeatures();
    return cpuSupports(Isa::Avx512Bf16) && (f >> uint32_t(CpuFeature::AMXBF16) & 1) &&
           (f >> uint32_t(CpuFeature::AMXINT8) & 1);
  }
  case Isa::Neon:
    return false;
  }
  return false;
#elif defined(__aarch64__)
  return isa == Isa::Generic || isa == Isa::Neon;
#else
  return isa == Isa::Generic;
#endif
}

bool isaWithin(Isa isa, Isa best) {
  if (isa == Isa::AvxVnni || best == Isa::AvxVnni)
    return isa == Isa::Generic || isa == best || (best == Isa::AvxVnni && isa == Isa::Avx2);
  return isa == Isa::Generic || isa == best ||
         (isX86(isa) && isX86(best) && isaRank(isa) <= isaRank(best));
}

Isa bestIsa() {
  static const Isa best = [] {
    Isa cap = Isa::Amx;
    if (const char* env = std::getenv("AICC_KERNEL_ISA")) {
      const std::string s = env;
      if (s == "generic")
        cap = Isa::Generic;
      else if (s == "avx2")
        cap = Isa::Avx2;
      else if (s == "avxvnni")
        cap = Isa::AvxVnni;
      else if (s == "avx512")
        cap = Isa::Avx512;
      else if (s == "avx512vnni")
        cap = Isa::Avx512Vnni;
      else if (s == "avx512bf16")
        cap = Isa::Avx512Bf16;
    }
    for (Isa isa : {Isa::Amx, Isa::Avx512Bf16, Isa::Avx512Vnni, Isa::Avx512, Isa::AvxVnni,
                    Isa::Avx2, Isa::Neon})
      if (isaRank(isa) <= isaRank(cap) && (cap != Isa::AvxVnni || isa != Isa::Avx512) &&
          cpuSupports(isa))
        return isa;
    return Isa::Generic;
  }();
  return best;
}

std::span<const KernelDesc> allKernels() { return kKernels; }

std::vector<const KernelDesc*> availableKernels(KernelOp op) {
  std::vector<const KernelDesc*> out;
  for (const auto& k : kKernels)
    if (k.op == op && cpuSupports(k.isa)) out.push_back(&k);
  return out;
}

const KernelDesc& defaultKernel(KernelOp op) { return defaultKernel(op, bestIsa()); }

const KernelDesc& defaultKernel(KernelOp op, Isa best) {
  if (const KernelDesc* k = bestKernel(op, best)) return *k;
  // The generic kernels are always present; unreachable.
  return kKernels[0];
}

const KernelDesc* bestKernel(KernelOp op, Isa best) {
  for (const auto& k : kKernels)
    if (k.op == op && isaWithin(k.isa, best)) return &k;
  return nullptr;
}

// The level whose f32 kernels `isa` runs: the AVX-512 extensions AVX-512's, AVX-VNNI AVX2's.
Isa f32Level(Isa isa) {
  return isa == Isa::Avx512Vnni || isa == Isa::Avx512Bf16 || isa == Isa::Amx ? Isa::Avx512
         : isa == Isa::AvxVnni                                               ? Isa::Avx2
                                                                             : isa;
}

SumFn sumKernel(Isa isa) {
  switch (f32Level(isa)) {
#if AICC_X86_KERNELS
  case Isa::Avx512:
    return f32_sum_avx512;
  case Isa::Avx2:
    return f32_sum_avx2;
#endif
#if defined(__aarch64__)
  case Isa::Neon:
    return f32_sum_neon;
#endif
  default:
    return f32_sum_generic;
  }
}

ExpSumFn expSumKernel() {
  switch (f32Level(bestIsa())) {
#if AICC_X86_KERNELS
  case Isa::Avx512:
    return f32_expsum_avx512;
  case Isa::Avx2:
    return f32_expsum_avx2;
#endif
#if defined(__aarch64__)
  case Isa::Neon:
    return f32_expsum_neon;
#endif
  default:
    return f32_expsum_generic;
  }
}

const KernelDesc* findKernel(std::string_view name) {
  for (const auto& k : kKernels)
    if (name == k.name) return &k;
  return nullptr;
}

} // namespace aicc::kernels
