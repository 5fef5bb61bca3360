// Target descriptions: what the code generator and operator selection may assume about the
// machine (ISA features, vector width, cache sizes, threads). See docs/backend.md ("Targets").
//
// Named targets:
//   native         this machine: features from cpuid (__builtin_cpu_supports, which also checks
//                  that the OS saves the AVX/AVX-512 state), caches from
//                  /sys/devices/system/cpu/cpu0/cache, threads = CPUs this process may use;
//   x86-64-avx2    Haswell-class x86-64: sse4.2, avx, avx2, fma, f16c, bmi2; 32-byte vectors;
//   x86-64-avx512  Skylake-server-class: avx2 set + avx512f/cd/bw/dq/vl; 64-byte vectors;
//   generic        no SIMD assumptions: portable scalar code (vectorBytes 0), e.g. the C99 backend
//                  on any machine;
//   aarch64-linux-gnu  64-bit Arm Linux (cross-compiled: LLVM's AArch64 backend, linked with
//                  Debian's aarch64-linux-gnu-gcc): NEON (16-byte vectors), the portable
//                  micro-kernels;
//   riscv64-linux-gnu  64-bit RISC-V Linux, rv64gc / lp64d (linked with riscv64-linux-gnu-gcc):
//                  scalar code, the portable micro-kernels.
// A target string is a name followed by comma-separated modifiers:
//   "x86-64-avx512,+avx512vnni,threads=4,l2=2M", "native,-avx512f" (features removed with '-'
//   also drop the features that depend on them, and the vector width follows).
#pragma once

#include "rt/cpu.h" // CpuFeature

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace aicc {

struct Target {
  std::string name = "generic"; // the string it was made from, normalized
  std::string arch = "generic"; // "x86-64", "aarch64", "riscv64" or "generic"
  std::string triple;           // the code's target triple for a cross target; "" = this host
  uint64_t features = 0;        // bit (1 << CpuFeature)
  int vectorBytes = 0;          // widest vector register the code may use; 0 = scalar only
  int64_t l1dBytes = 32 << 10, l2Bytes = 256 << 10, l3Bytes = 8 << 20; // per core / shared
  int cacheLineBytes = 64;
  int threads = 1; // worker threads the runtime may start

  bool has(CpuFeature f) const { return features >> static_cast<uint32_t>(f) & 1; }
  void add(CpuFeature f) { features |= uint64_t{1} << static_cast<uint32_t>(f); }
  // Removes f and every feature that depends on it (avx2 -> fma, avx512*, ...); updates
  // vectorBytes.
  void remove(CpuFeature f);
  // Lanes of a vector register for elements of `elemBytes` (1 when scalar only).
  int vectorLanes(int elemBytes) const;
  bool operator==(const Target&) const = default;
};

Target genericTarget();
Target x86Avx2Target();
Target x86Avx512Target();
// This machine (generic on non-x86 hosts).
Target nativeTarget();

// The named targets, for help texts and errors.
const std::vector<std::string>& targetNames();
// Parses "NAME[,MODIFIER...]" (see the header comment); throws aicc::Error naming the unknown
// target, feature or modifier and listing what is known.
Target parseTarget(std::string_view spec);

// "target x86-64-avx512: arch x86-64, features sse4.2,avx,..., vector 64 B, L1d 32 KiB, L2 1 MiB,
//  L3 32 MiB, line 64 B, threads 1"
std::string formatTarget(const Target& t);

// Cache sizes read from a sysfs cache directory such as /sys/devices/system/cpu/cpu0/cache
// (index*/level, type, size). Leaves a size unchanged when it is not found. Returns whether
// anything was read.
bool readCacheSizes(const std::string& dir, Target& t);

} // namespace aicc
