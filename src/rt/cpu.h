// CPU features: their names (as compile targets and artifact plans spell them), what each needs,
// and this CPU's set (cpuid). An artifact's plan lists the features its code was compiled for and
// the loader refuses a CPU that lacks one; backend/target.h builds compile targets on the same
// table.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace aicc {

enum class CpuFeature : uint32_t {
  SSE42,
  AVX,
  AVX2,
  FMA,
  F16C,
  BMI2,
  AVX512F,
  AVX512CD,
  AVX512BW,
  AVX512DQ,
  AVX512VL,
  AVX512VNNI,
  AVX512BF16,
  AVX512FP16,
  AVXVNNI,
  AMXTILE, // AMX tiles: on only when the OS also grants this process the tile state (Linux
  AMXBF16, // arch_prctl ARCH_REQ_XCOMP_PERM, asked for by hostCpuFeatures)
  AMXINT8,
  Count
};

// "sse4.2", "avx2", "avx512vnni", "amx-bf16", ... (LLVM's spelling of the target feature)
std::string_view cpuFeatureName(CpuFeature f);
// Inverse of cpuFeatureName (also accepts "sse4_2" as /proc/cpuinfo spells it).
bool parseCpuFeature(std::string_view name, CpuFeature& out);
// The features f needs: implied when f is added to a target, dropped with them when removed.
std::span<const CpuFeature> cpuFeatureRequires(CpuFeature f);
// This CPU's features as bits (1 << CpuFeature), from cpuid (__builtin_cpu_supports, which also
// checks that the OS saves the AVX/AVX-512 state), closed under cpuFeatureRequires (a hypervisor
// may hide a prerequisite). 0 off x86-64.
uint64_t hostCpuFeatures();
// This machine's architecture as targets name it: "x86-64", "aarch64", "riscv64" (else "generic").
const char* hostArch();

} // namespace aicc
