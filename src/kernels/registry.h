// The micro-kernel table: one descriptor per hand-written kernel (name, ISA, register tile,
// blocking, constraints), so the backend's operator selection can list the candidates that apply
// on a target and a cost model can pick one. Kernels are named <dtype>_<op>_<isa>_<tile>.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/ukernel.h"

namespace aicc::kernels {

// x86 levels form a chain: each runs the kernels of the ones before it (generic < avx2 < avx512 <
// avx512vnni < avx512bf16 < amx, avx512vnni adding AVX512-BW/VL/VNNI for the int8 kernels,
// avx512bf16 AVX512-BF16 for the bf16 GEMM, amx the AMX tiles (AMX-TILE/BF16/INT8, granted by the
// OS); every CPU with BF16 so far also has VNNI, and every one with AMX AVX512-BF16).
// AvxVnni (AVX2 + AVX-VNNI without AVX-512) is a side branch of the x86 chain: the AVX-512 levels
// do not imply it, and it implies only AVX2.
enum class Isa { Generic, Avx2, Avx512, Neon, Avx512Vnni, Avx512Bf16, Amx, AvxVnni };
std::string_view isaName(Isa isa);
// True when this CPU (and OS) can run code for `isa` (cpuid via __builtin_cpu_supports; NEON is
// part of every AArch64 Linux machine).
bool cpuSupports(Isa isa);
// True when code for a machine whose best ISA is `best` may call kernels of `isa`: the portable
// ones everywhere, the lower levels of the x86 chain, and AvxVnni's only where it is the best.
bool isaWithin(Isa isa, Isa best);
// The best ISA of this CPU, optionally capped by the AICC_KERNEL_ISA environment variable
// ("generic", "avx2", "avxvnni", "avx512", "avx512vnni", "avx512bf16", "amx") for testing other
// paths.
Isa bestIsa();

// GemmBf16: the GEMM contract on bf16 pairs (ukernel.h), chosen only under --precision bf16.
// QConvGemm and QDepthwise3x3: QLinearConv's own (lower_qconv.cpp), DqGemm MatMulIntegerToFloat's
// (lower_qlinear.cpp); never operator-selection candidates.
enum class KernelOp {
  Gemm,
  DepthwiseConv3x3,
  DepthwiseConvNchw,
  QConvGemm,
  GemmBf16,
  QDepthwise3x3,
  ConvNchw16c, // convolution on NCHW16c activations (kernels/conv_nchwc.h)
  DqGemm       // int8 GEMM with f32 results, MatMulIntegerToFloat's own (kernels/dqgemm.h)
};
inline bool isQuantOp(KernelOp op) {
  return op == KernelOp::QConvGemm || op == KernelOp::QDepthwise3x3 || op == KernelOp::DqGemm;
}
inline bool isGemmOp(KernelOp op) { return op == KernelOp::Gemm || op == KernelOp::GemmBf16; }

struct KernelDesc {
  const char* name; // e.g. "f32_gemm_avx512_14x32"
  KernelOp op;
  Isa isa;
  int mr = 0, nr = 0;  // register tile (GEMM): rows of A/C, columns of B/C per micro-kernel call
  int kc = 0;          // K block (B panel rows kept hot in L1/L2)
  int mc = 0;          // rows of A packed per block (L2)
  int nc = 0;          // columns of B per block (L2/L3), a multiple of nr
  int vectorWidth = 1; // f32 lanes per vector register
  int kg = 0; // k values per 32-bit lane: int8 GEMM (ukernel.h's QGemmTileParams), bf16 GEMM (2)
  int kuAlign = 1;    // packed units of k per K block padded to a multiple (zeros; AMX tiles: 16)
  bool aRows = false; // A micro-panels row-major, a[i * units + q] (AMX), not k-major a[q * MR + i]
  bool bf16Io = false; // the tile stores bf16 and reads a bf16 residual (GemmTileParams::cb, resb)
  const char* constraints; // human-readable applicability notes
  GemmUkernelFn gemm = nullptr;
  GemmPackAFn packA = nullptr; // ISA-specific A packing (GEMM), or null for the portable one
  GemmPackBFn packB = nullptr; // bf16 GEMM: packs a B panel per call (convolution inputs)
  Bf16WidenFn widenBf16 = nullptr; // bf16 GEMM: activations stored as bf16 (Epilogue::bf16)
  GemmPackB16Fn packB16 = nullptr; // read in place (pointwise) or widened where copied
  DwRowFn dwRow = nullptr;
  DwNchwPlaneFn dwNchwPlane = nullptr;
  DwCBlockFn dwCBlock = nullptr; // the same op on channel blocks (small maps: conv.cpp)
  QGemmUkernelFn qgemm = nullptr;
  DqGemmUkernelFn dqgemm = nullptr;
  QDw3x3Fn qdw3x3 = nullptr;
  NchwcTileFn nchwc = nullptr;
  NchwcTileFn nchwcPlane = nullptr;                      // the same tile on a stem's NCHW planes
  NchwcDwFn nchwcDw = nullptr;                           // the depthwise row of the same layout
  NchwcReorderFn toNchwc = nullptr, fromNchwc = nullptr; // its layout changes
  NchwcMeanFn nchwcMean = nullptr;                       // and its GlobalAveragePool
  NchwcPoolFn nchwcPool = nullptr;                       // and its MaxPool / AveragePool row
};

// Every kernel compiled into this build (including ones this CPU cannot run).
std::span<const KernelDesc> allKernels();
// The kernels of `op` this CPU can run, best first.
std::vector<const KernelDesc*> availableKernels(KernelOp op);
// The dispatch choice for `op` on this CPU (respects AICC_KERNEL_ISA). Never null.
const KernelDesc& defaultKernel(KernelOp op);
// The best kernel of `op` of ISA `best` or below (a compile target's choice; the portable ones
// exist for every op). Never null.
const KernelDesc& defaultKernel(KernelOp op, Isa best);
// The same for ops without a portable kernel (GemmBf16): null when `best` has none.
const KernelDesc* bestKernel(KernelOp op, Isa best);
// The softmax helper for this CPU (respects AICC_KERNEL_ISA).
ExpSumFn expSumKernel();
// The row-sum helper for `isa` (GlobalAveragePool; a kernel descriptor's ISA).
SumFn sumKernel(Isa isa);
// Lookup by name; null if unknown.
const KernelDesc* findKernel(std::string_view name);

} // namespace aicc::kernels
