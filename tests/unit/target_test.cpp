// Target descriptions (backend/target.h): the named targets, parsing with modifiers and errors,
// feature dependencies, sysfs cache reading, and the native target agreeing with the compiler's
// view of this machine.
#include "backend/target.h"
#include "support/error.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace aicc;
using F = CpuFeature;

namespace {

TEST(Target, NamedTargets) {
  Target g = parseTarget("generic");
  EXPECT_EQ(g.arch, "generic");
  EXPECT_EQ(g.features, 0u);
  EXPECT_EQ(g.vectorBytes, 0);
  EXPECT_EQ(g.vectorLanes(4), 1);

  Target a2 = parseTarget("x86-64-avx2");
  EXPECT_EQ(a2.arch, "x86-64");
  EXPECT_TRUE(a2.has(F::AVX2) && a2.has(F::FMA) && a2.has(F::SSE42) && a2.has(F::AVX));
  EXPECT_FALSE(a2.has(F::AVX512F));
  EXPECT_EQ(a2.vectorBytes, 32);
  EXPECT_EQ(a2.vectorLanes(4), 8);

  Target a5 = parseTarget("x86-64-avx512");
  EXPECT_TRUE(a5.has(F::AVX512F) && a5.has(F::AVX512BW) && a5.has(F::AVX2));
  EXPECT_FALSE(a5.has(F::AVX512VNNI));
  EXPECT_EQ(a5.vectorBytes, 64);
  EXPECT_EQ(a5.vectorLanes(2), 32);
  EXPECT_EQ(a5, x86Avx512Target());

  // Cross targets: no x86 features, their triple, NEON vectors on aarch64, scalar riscv64.
  Target arm = parseTarget("aarch64-linux-gnu");
  EXPECT_EQ(arm.arch, "aarch64");
  EXPECT_EQ(arm.triple, "aarch64-linux-gnu");
  EXPECT_EQ(arm.features, 0u);
  EXPECT_EQ(arm.vectorBytes, 16);
  Target rv = parseTarget("riscv64");
  EXPECT_EQ(rv.name, "riscv64-linux-gnu");
  EXPECT_EQ(rv.arch, "riscv64");
  EXPECT_EQ(rv.vectorBytes, 0);
  EXPECT_THROW(parseTarget("aarch64-linux-gnu,+avx2"), Error);
  EXPECT_EQ(targetNames().size(), 6u);
}

TEST(Target, Modifiers) {
  Target t = parseTarget("x86-64-avx2,+avx512vnni,threads=4,l2=2M,l1=48K");
  EXPECT_TRUE(t.has(F::AVX512VNNI));
  EXPECT_TRUE(t.has(F::AVX512F)); // implied
  EXPECT_EQ(t.vectorBytes, 64);
  EXPECT_EQ(t.threads, 4);
  EXPECT_EQ(t.l2Bytes, 2 << 20);
  EXPECT_EQ(t.l1dBytes, 48 << 10);
  EXPECT_EQ(t.name, "x86-64-avx2,+avx512vnni,threads=4,l2=2M,l1=48K");

  Target d = parseTarget("x86-64-avx512,-avx2");
  EXPECT_FALSE(d.has(F::AVX2));
  EXPECT_FALSE(d.has(F::AVX512F)); // depends on avx2
  EXPECT_FALSE(d.has(F::AVX512BW));
  EXPECT_TRUE(d.has(F::FMA));
  EXPECT_EQ(d.vectorBytes, 32);
  d.remove(F::SSE42);
  EXPECT_FALSE(d.has(F::AVX));
  EXPECT_EQ(d.vectorBytes, 16); // x86-64 baseline SSE2
}

void expectError(const std::string& spec, const std::string& needle) {
  try {
    parseTarget(spec);
    ADD_FAILURE() << "expected an error for " << spec;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Target, Errors) {
  expectError("x86-64-avx1024",
              "unknown target 'x86-64-avx1024'; known targets: native, x86-64-avx2");
  expectError("generic,+avx2", "needs an x86-64 target");
  expectError("x86-64-avx2,+avx9000", "unknown CPU feature 'avx9000'");
  expectError("x86-64-avx2,threads=0", "bad modifier 'threads=0'");
  expectError("x86-64-avx2,frobs=3", "unknown modifier 'frobs'");
  expectError("x86-64-avx2,,threads=2", "empty modifier");
}

TEST(Target, FeatureNames) {
  for (uint32_t i = 0; i < static_cast<uint32_t>(F::Count); ++i) {
    F f = static_cast<F>(i), back{};
    ASSERT_TRUE(parseCpuFeature(cpuFeatureName(f), back)) << cpuFeatureName(f);
    EXPECT_EQ(back, f);
  }
  F f{};
  EXPECT_TRUE(parseCpuFeature("sse4_2", f));
  EXPECT_EQ(f, F::SSE42);
  EXPECT_TRUE(parseCpuFeature("AVX512_VNNI", f));
  EXPECT_EQ(f, F::AVX512VNNI);
  EXPECT_FALSE(parseCpuFeature("neon", f));
}

TEST(Target, Printing) {
  std::string s = formatTarget(parseTarget("x86-64-avx2,threads=2"));
  EXPECT_EQ(s, "target x86-64-avx2,threads=2: arch x86-64, features sse4.2,avx,avx2,fma,f16c,bmi2, "
               "vector 32 B, L1d 32 KiB, L2 256 KiB, L3 8 MiB, line 64 B, threads 2");
  EXPECT_NE(formatTarget(genericTarget()).find("features none, vector 0 B"), std::string::npos);
}

TEST(Target, ReadsSysfsCacheSizes) {
  fs::path dir = fs::temp_directory_path() / ("aicc_cache_test_" + std::to_string(::getpid()));
  auto put = [&](int idx, const std::string& level, const std::string& type,
                 const std::string& size) {
    fs::create_directories(dir / ("index" + std::to_string(idx)));
    std::ofstream(dir / ("index" + std::to_string(idx)) / "level") << level << "\n";
    std::ofstream(dir / ("index" + std::to_string(idx)) / "type") << type << "\n";
    std::ofstream(dir / ("index" + std::to_string(idx)) / "size") << size << "\n";
  };
  put(0, "1", "Data", "48K");
  put(1, "1", "Instruction", "32K");
  put(2, "2", "Unified", "2048K");
  put(3, "3", "Unified", "105M");
  Target t;
  EXPECT_TRUE(readCacheSizes(dir.string(), t));
  EXPECT_EQ(t.l1dBytes, 48 << 10);
  EXPECT_EQ(t.l2Bytes, 2048 << 10);
  EXPECT_EQ(t.l3Bytes, int64_t{105} << 20);
  fs::remove_all(dir);
  Target u;
  EXPECT_FALSE(readCacheSizes((dir / "missing").string(), u));
  EXPECT_EQ(u, Target{});
}

TEST(Target, NativeMatchesThisMachine) {
  Target n = parseTarget("native");
  std::cout << "[target] " << formatTarget(n) << "\n";
  EXPECT_GE(n.threads, 1);
  EXPECT_GT(n.l1dBytes, 0);
#if defined(__x86_64__)
  EXPECT_EQ(n.arch, "x86-64");
  __builtin_cpu_init();
  EXPECT_EQ(n.has(F::AVX2), __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(n.has(F::AVX512F), __builtin_cpu_supports("avx512f") != 0);
  EXPECT_EQ(n.vectorBytes, n.has(F::AVX512F) ? 64 : n.has(F::AVX) ? 32 : 16);
#endif
  Target m = parseTarget("native,threads=3,-avx512f");
  EXPECT_EQ(m.threads, 3);
  EXPECT_FALSE(m.has(F::AVX512F));
  EXPECT_LE(m.vectorBytes, 32);
}

} // namespace
