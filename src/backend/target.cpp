// Target descriptions: the named targets, cpuid/sysfs probing for "native", parsing, printing.
#include "backend/target.h"

#include "support/error.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace aicc {

namespace {

void addWithImplied(Target& t, CpuFeature f) {
  t.add(f);
  for (CpuFeature r : cpuFeatureRequires(f)) addWithImplied(t, r);
}

void updateVectorBytes(Target& t) {
  t.vectorBytes = t.has(CpuFeature::AVX512F) ? 64
                  : t.has(CpuFeature::AVX)   ? 32
                  : t.arch == "x86-64"       ? 16 // SSE2 is part of x86-64
                  : t.arch == "aarch64"      ? 16 // NEON is part of AArch64 Linux
                                             : 0;
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

// "32K", "1M", "4096", "1024K" -> bytes; -1 when malformed.
int64_t parseSize(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.empty()) return -1;
  int64_t mult = 1;
  char last = static_cast<char>(std::toupper(static_cast<unsigned char>(s.back())));
  if (last == 'K' || last == 'M' || last == 'G') {
    mult = last == 'K' ? 1 << 10 : last == 'M' ? 1 << 20 : int64_t{1} << 30;
    s.remove_suffix(1);
  }
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return -1;
  return v * mult;
}

std::string readLine(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  if (f) std::getline(f, s);
  return s;
}

std::string sizeText(int64_t b) {
  if (b >= (1 << 20) && b % (1 << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= (1 << 10) && b % (1 << 10) == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

int availableCpus() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

} // namespace

void Target::remove(CpuFeature f) {
  features &= ~(uint64_t{1} << static_cast<uint32_t>(f));
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t i = 0; i < static_cast<uint32_t>(CpuFeature::Count); ++i) {
      const auto rq = cpuFeatureRequires(static_cast<CpuFeature>(i));
      if (has(static_cast<CpuFeature>(i)) &&
          std::any_of(rq.begin(), rq.end(), [&](CpuFeature r) { return !has(r); })) {
        features &= ~(uint64_t{1} << i);
        changed = true;
      }
    }
  }
  updateVectorBytes(*this);
}

int Target::vectorLanes(int elemBytes) const {
  if (elemBytes <= 0 || vectorBytes < elemBytes) return 1;
  return vectorBytes / elemBytes;
}

Target genericTarget() { return Target{}; }

// A cross target: no x86 features, the portable micro-kernels, code for `triple`.
Target crossTarget(const std::string& arch, const std::string& triple) {
  Target t;
  t.name = triple;
  t.arch = arch;
  t.triple = triple;
  updateVectorBytes(t);
  return t;
}

Target x86Avx2Target() {
  Target t;
  t.name = "x86-64-avx2";
  t.arch = "x86-64";
  for (CpuFeature f : {CpuFeature::AVX2, CpuFeature::FMA, CpuFeature::F16C, CpuFeature::BMI2})
    addWithImplied(t, f);
  t.l1dBytes = 32 << 10;
  t.l2Bytes = 256 << 10;
  t.l3Bytes = 8 << 20;
  updateVectorBytes(t);
  return t;
}

Target x86Avx512Target() {
  Target t = x86Avx2Target();
  t.name = "x86-64-avx512";
  for (CpuFeature f : {CpuFeature::AVX512F, CpuFeature::AVX512CD, CpuFeature::AVX512BW,
                       CpuFeature::AVX512DQ, CpuFeature::AVX512VL})
    addWithImplied(t, f);
  t.l2Bytes = 1 << 20;
  t.l3Bytes = 32 << 20;
  updateVectorBytes(t);
  return t;
}

bool readCacheSizes(const std::string& dir, Target& t) {
  bool any = false;
  for (int i = 0; i < 16; ++i) {
    std::string idx = fmt::format("{}/index{}/", dir, i);
    std::string level = readLine(idx + "level");
    if (level.empty()) break;
    std::string type = readLine(idx + "type");
    int64_t size = parseSize(readLine(idx + "size"));
    if (size <= 0 || type == "Instruction") continue;
    if (level == "1")
      t.l1dBytes = size;
    else if (level == "2")
      t.l2Bytes = size;
    else if (level == "3")
      t.l3Bytes = size;
    else
      continue;
    any = true;
    int64_t line = parseSize(readLine(idx + "coherency_line_size"));
    if (line > 0) t.cacheLineBytes = static_cast<int>(line);
  }
  return any;
}

Target nativeTarget() {
  Target t;
#if defined(__x86_64__)
  t.arch = "x86-64";
  t.features = hostCpuFeatures();
#elif defined(__aarch64__)
  t.arch = "aarch64";
#endif
  t.name = "native";
  readCacheSizes("/sys/devices/system/cpu/cpu0/cache", t);
  t.threads = availableCpus();
  updateVectorBytes(t);
  return t;
}

const std::vector<std::string>& targetNames() {
  static const std::vector<std::string> names = {
      "native",  "x86-64-avx2",       "x86-64-avx512",
      "generic", "aarch64-linux-gnu", "riscv64-linux-gnu"};
  return names;
}

Target parseTarget(std::string_view spec) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= spec.size(); ++i)
    if (i == spec.size() || spec[i] == ',') {
      parts.emplace_back(spec.substr(start, i - start));
      start = i + 1;
    }
  std::string base = lower(parts[0]);
  Target t;
  if (base == "native")
    t = nativeTarget();
  else if (base == "x86-64-avx2" || base == "avx2")
    t = x86Avx2Target();
  else if (base == "x86-64-avx512" || base == "avx512")
    t = x86Avx512Target();
  else if (base == "generic")
    t = genericTarget();
  else if (base == "aarch64-linux-gnu" || base == "aarch64")
    t = crossTarget("aarch64", "aarch64-linux-gnu");
  else if (base == "riscv64-linux-gnu" || base == "riscv64")
    t = crossTarget("riscv64", "riscv64-linux-gnu");
  else
    fail("unknown target '{}'; known targets: {}", parts[0], fmt::join(targetNames(), ", "));
  std::string name = t.name;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& m = parts[i];
    if (m.empty()) fail("target '{}': empty modifier", spec);
    name += "," + m;
    if (m[0] == '+' || m[0] == '-') {
      CpuFeature f;
      if (!parseCpuFeature(m.substr(1), f)) {
        std::vector<std::string> known;
        for (uint32_t i = 0; i < static_cast<uint32_t>(CpuFeature::Count); ++i)
          known.emplace_back(cpuFeatureName(static_cast<CpuFeature>(i)));
        fail("target '{}': unknown CPU feature '{}'; known features: {}", spec, m.substr(1),
             fmt::join(known, ", "));
      }
      if (m[0] == '+') {
        AICC_CHECK(t.arch == "x86-64", "target '{}': feature '{}' needs an x86-64 target", spec,
                   m.substr(1));
        addWithImplied(t, f);
        updateVectorBytes(t);
      } else {
        t.remove(f);
      }
      continue;
    }
    size_t eq = m.find('=');
    std::string key = lower(m.substr(0, eq));
    std::string val = eq == std::string::npos ? "" : m.substr(eq + 1);
    int64_t v = parseSize(val);
    if (eq == std::string::npos || v <= 0)
      fail("target '{}': bad modifier '{}' (expected +FEATURE, -FEATURE, threads=N, l1=SIZE, "
           "l2=SIZE, l3=SIZE)",
           spec, m);
    if (key == "threads") {
      AICC_CHECK(v <= 4096, "target '{}': threads={} is out of range", spec, val);
      t.threads = static_cast<int>(v);
    } else if (key == "l1" || key == "l1d")
      t.l1dBytes = v;
    else if (key == "l2")
      t.l2Bytes = v;
    else if (key == "l3")
      t.l3Bytes = v;
    else
      fail("target '{}': unknown modifier '{}' (known: threads, l1, l2, l3, +FEATURE, -FEATURE)",
           spec, key);
  }
  t.name = name;
  return t;
}

std::string formatTarget(const Target& t) {
  std::vector<std::string> fs;
  for (uint32_t i = 0; i < static_cast<uint32_t>(CpuFeature::Count); ++i)
    if (t.has(static_cast<CpuFeature>(i)))
      fs.emplace_back(cpuFeatureName(static_cast<CpuFeature>(i)));
  return fmt::format(
      "target {}: arch {}, features {}, vector {} B, L1d {}, L2 {}, L3 {}, line {} B, "
      "threads {}",
      t.name, t.arch, fs.empty() ? std::string("none") : fmt::format("{}", fmt::join(fs, ",")),
      t.vectorBytes, sizeText(t.l1dBytes), sizeText(t.l2Bytes), sizeText(t.l3Bytes),
      t.cacheLineBytes, t.threads);
}

} // namespace aicc
