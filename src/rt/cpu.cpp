#include "rt/cpu.h"

#include <array>
#include <cctype>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <asm/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace aicc {

namespace {

struct FeatureInfo {
  CpuFeature f;
  const char* name;
  std::array<CpuFeature, 3> requires_;
  int nRequires;
};

using F = CpuFeature;
constexpr FeatureInfo kFeatures[] = {
    {F::SSE42, "sse4.2", {}, 0},
    {F::AVX, "avx", {F::SSE42}, 1},
    {F::AVX2, "avx2", {F::AVX}, 1},
    {F::FMA, "fma", {F::AVX}, 1},
    {F::F16C, "f16c", {F::AVX}, 1},
    {F::BMI2, "bmi2", {}, 0},
    {F::AVX512F, "avx512f", {F::AVX2, F::FMA, F::F16C}, 3},
    {F::AVX512CD, "avx512cd", {F::AVX512F}, 1},
    {F::AVX512BW, "avx512bw", {F::AVX512F}, 1},
    {F::AVX512DQ, "avx512dq", {F::AVX512F}, 1},
    {F::AVX512VL, "avx512vl", {F::AVX512F}, 1},
    {F::AVX512VNNI, "avx512vnni", {F::AVX512F}, 1},
    {F::AVX512BF16, "avx512bf16", {F::AVX512BW}, 1},
    {F::AVX512FP16, "avx512fp16", {F::AVX512BW, F::AVX512DQ, F::AVX512VL}, 3},
    {F::AVXVNNI, "avxvnni", {F::AVX2}, 1},
    {F::AMXTILE, "amx-tile", {}, 0},
    {F::AMXBF16, "amx-bf16", {F::AMXTILE}, 1},
    {F::AMXINT8, "amx-int8", {F::AMXTILE}, 1},
};
static_assert(std::size(kFeatures) == size_t(F::Count));

const FeatureInfo& info(CpuFeature f) { return kFeatures[static_cast<size_t>(f)]; }

// Whether this process may use the AMX tile registers: Linux hands out the 8 KB tile state only to
// a process that asks for it (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA = 18; every
// thread, later ones too), and an AMX instruction without it is SIGILL. Asked once, by the
// one reading of the features (hostCpuFeatures).
#if defined(__x86_64__)
bool amxPermitted() {
#if defined(__linux__) && defined(ARCH_REQ_XCOMP_PERM)
  return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, 18) == 0;
#else
  return false;
#endif
}
#endif

} // namespace

std::string_view cpuFeatureName(CpuFeature f) { return info(f).name; }

std::span<const CpuFeature> cpuFeatureRequires(CpuFeature f) {
  const FeatureInfo& i = info(f);
  return {i.requires_.data(), size_t(i.nRequires)};
}

bool parseCpuFeature(std::string_view name, CpuFeature& out) {
  std::string n(name);
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "sse4_2" || n == "sse42") n = "sse4.2";
  if (n == "avx512_vnni") n = "avx512vnni";
  if (n == "avx512_bf16") n = "avx512bf16";
  if (n == "avx512_fp16") n = "avx512fp16";
  if (n == "avx_vnni") n = "avxvnni";
  if (n.rfind("amx_", 0) == 0) n[3] = '-'; // amx_tile, amx_bf16, amx_int8
  for (const FeatureInfo& i : kFeatures)
    if (n == i.name) {
      out = i.f;
      return true;
    }
  return false;
}

const char* hostArch() {
#if defined(__x86_64__)
  return "x86-64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#else
  return "generic";
#endif
}

namespace {
uint64_t readCpuFeatures() {
  uint64_t bits = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  auto set = [&](F f, bool on) {
    if (on) bits |= uint64_t{1} << static_cast<uint32_t>(f);
  };
  set(F::SSE42, __builtin_cpu_supports("sse4.2"));
  set(F::AVX, __builtin_cpu_supports("avx"));
  set(F::AVX2, __builtin_cpu_supports("avx2"));
  set(F::FMA, __builtin_cpu_supports("fma"));
#if defined(__clang__) // clang 14's __builtin_cpu_supports does not know "f16c"
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  set(F::F16C, __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C));
#else
  set(F::F16C, __builtin_cpu_supports("f16c"));
#endif
  set(F::BMI2, __builtin_cpu_supports("bmi2"));
  set(F::AVX512F, __builtin_cpu_supports("avx512f"));
  set(F::AVX512CD, __builtin_cpu_supports("avx512cd"));
  set(F::AVX512BW, __builtin_cpu_supports("avx512bw"));
  set(F::AVX512DQ, __builtin_cpu_supports("avx512dq"));
  set(F::AVX512VL, __builtin_cpu_supports("avx512vl"));
  set(F::AVX512VNNI, __builtin_cpu_supports("avx512vnni"));
  set(F::AVX512BF16, __builtin_cpu_supports("avx512bf16"));
#if !defined(__clang__)
  set(F::AVX512FP16, __builtin_cpu_supports("avx512fp16"));
#endif
  { // AVX-VNNI: cpuid leaf 7 subleaf 1, EAX bit 4 (clang 14's __builtin_cpu_supports lacks it)
    unsigned a = 0, b = 0, c = 0, d = 0;
    set(F::AVXVNNI, __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1u));
  }
  {
    // cpuid leaf 7: EDX bits 22 (AMX-BF16), 24 (AMX-TILE), 25 (AMX-INT8); the tile state must be
    // enabled in XCR0 (bits 17, 18) and granted by the OS (amxPermitted).
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 24 & 1u)) {
      unsigned lo = 0, hi = 0;
      __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
      if ((lo & 0x60000u) == 0x60000u && amxPermitted()) {
        set(F::AMXTILE, true);
        set(F::AMXBF16, d >> 22 & 1u);
        set(F::AMXINT8, d >> 25 & 1u);
      }
    }
  }
  // Closed under the requirements: drop a feature whose prerequisite is missing, to a fixed point.
  for (bool changed = true; changed;) {
    changed = false;
    for (const FeatureInfo& i : kFeatures) {
      const uint64_t bit = uint64_t{1} << static_cast<uint32_t>(i.f);
      if (!(bits & bit)) continue;
      for (int r = 0; r < i.nRequires; ++r)
        if (!(bits >> static_cast<uint32_t>(i.requires_[size_t(r)]) & 1)) {
          bits &= ~bit;
          changed = true;
          break;
        }
    }
  }
#endif
  return bits;
}
} // namespace

// Read once: cpuid traps to the hypervisor under KVM (microseconds a call), and the kernel
// dispatch asks per call (cpuSupports(Isa::Amx) from the bf16 packers).
uint64_t hostCpuFeatures() {
  static const uint64_t bits = readCpuFeatures();
  return bits;
}

} // namespace aicc
