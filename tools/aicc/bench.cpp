// aicc bench MODEL [--engine jit|interp] [--threads N] [--iters N] [--warmup N] [--json FILE]
// [--profile] [--trace FILE]: times whole-model runs on generated (or given) inputs and prints the
// median latency. The JIT is compiled once before timing; --profile adds a per-node table (time per
// run, share, op, engine, schedule), the first place to look when a model is slow.
#include "commands.h"

#include "interp/interpreter.h"
#include "kernels/registry.h"
#include "rt/parallel.h"
#include "rt/trace.h"
#include "runtime/jit_executor.h"
#include "support/memory.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <numeric>
#include <thread>

namespace aicc::cli {

namespace {

// This machine's f32 peak for the roofline: the default GEMM micro-kernel's register tile on
// L1-resident operands (kc 128, the tile alone: 85-90% of the FMA ports' rate), on `threads`
// threads at once; GFLOP/s.
double measurePeakGflops(int threads) {
  const kernels::KernelDesc& kd = kernels::defaultKernel(kernels::KernelOp::Gemm);
  const int64_t kc = 128, iters = 4000;
  auto work = [&] {
    std::vector<float> a(size_t(kc * kd.mr), 0.5f), w(size_t(kc * kd.nr), 0.25f),
        c(size_t(kd.mr * kd.nr));
    kernels::GemmTileParams p{};
    p.a = a.data(), p.w = w.data(), p.c = c.data(), p.ldc = kd.nr, p.mr = kd.mr, p.nr = kd.nr;
    p.kc = kc, p.flags = kernels::kGemmFirst | kernels::kGemmLast;
    p.lo = -1e30f, p.hi = 1e30f;
    for (int64_t i = 0; i < iters; ++i) kd.gemm(p);
  };
  work(); // warm up
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return 2.0 * double(kd.mr * kd.nr * kc * iters) * threads / s / 1e9;
}

// Copy bandwidth (read + write bytes per second) of 64 MiB buffers; GB/s.
double measureCopyGBs() {
  std::vector<char> src(size_t(64) << 20, 1), dst(src.size());
  std::memcpy(dst.data(), src.data(), src.size());
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), src.size());
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * double(src.size()) / best / 1e9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} // namespace

int benchCommand(const BenchArgs& a) {
  AICC_CHECK(a.iters >= 1, "bench: --iters must be at least 1");
  AICC_CHECK(a.threads >= 1, "bench: --threads must be at least 1");
  runtime::setNumThreads(a.threads);
  if (a.pinThreads) runtime::setPinThreads(true);
  std::unique_ptr<runtime::LoadedArtifact> art;
  std::unique_ptr<ImportedModel> owned;
  std::vector<RValue> inputs;
  std::unique_ptr<runtime::JitExecutable> exe;
  const Graph* graph = nullptr;
  auto t0 = std::chrono::steady_clock::now();
  std::string engine = a.engine;
  bool bf16 = false;
  if (isArtifactDir(a.model)) { // a compiled artifact: load it (no compiler involved)
    if (a.precision != "f32") fail("--precision applies to a model, not to a compiled folder");
    art = std::make_unique<runtime::LoadedArtifact>(a.model);
    inputs = bindArtifactInputs(*art, a.inputs, parseDims(a.dims));
    engine = "artifact";
  } else {
    owned = std::make_unique<ImportedModel>(loadModel(a.model, parseDims(a.dims)));
    bf16 = applyPrecision(*owned, a.precision, a.calibration);
    AICC_CHECK(!bf16 || a.engine == "jit",
               "--precision bf16 runs through --engine jit (the interpreter defines f32 results)");
    inputs = bindInputs(*owned, a.inputs);
    if (a.engine == "jit") specializeToInputs(*owned, inputs); // compiled for these shapes
    OptArgs opt;
    opt.optLevel = a.optLevel;
    if (a.engine == "jit" && !bf16) opt.layoutBlock = jitLayoutBlock();
    optimize(owned->model, opt);
    graph = owned->model.graph.get();
    runtime::JitRunOptions jo;
    setJitPrecision(bf16, jo);
    if (a.engine == "jit") exe = std::make_unique<runtime::JitExecutable>(*graph, jo);
  }
  double compileSec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto once = [&] {
    if (art) return art->run(inputs);
    if (exe) return exe->run(inputs);
    return interpret(*graph, inputs);
  };
  for (int i = 0; i < a.warmup; ++i) once();
  if (exe && a.profile) exe->setProfiling(true);
  // A compiled folder is profiled through the trace's task events.
  const bool artProfile = art && a.profile;
  AICC_CHECK(a.reportHtml.empty() || artProfile,
             "bench --report-html needs a folder written by aicc compile and --profile");
  if (!a.trace.empty() || artProfile) trace::start();
  std::vector<double> ms;
  for (int i = 0; i < a.iters; ++i) {
    auto s = std::chrono::steady_clock::now();
    once();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s)
                     .count());
  }
  trace::stop();
  double med = median(ms), lo = *std::min_element(ms.begin(), ms.end());
  const int64_t rss = peakRssBytes();
  std::cout << fmt::format("{}: engine {}, {} thread(s), {} runs: median {:.3f} ms, min {:.3f} ms; "
                           "{} {:.2f} s; peak RSS {:.1f} MiB\n",
                           a.model, engine, a.threads, a.iters, med, lo, art ? "load" : "compile",
                           compileSec, rss / 1048576.0);
  if (bf16 && a.calibration.empty()) // agreement with the f32 engine on the timed inputs
    reportBf16Agreement(*owned, {inputs});
  else if (bf16)
    reportBf16Agreement(*owned, a.calibration);
  if (!a.trace.empty())
    std::cout << fmt::format("  trace: {} events of {} runs in {} (ui.perfetto.dev)\n",
                             trace::write(a.trace), a.iters, a.trace);
  if (artProfile) {
    const std::map<std::string, double> byTask = trace::totals("task"); // seconds, all runs
    std::vector<std::pair<std::string, double>> order(byTask.begin(), byTask.end());
    std::stable_sort(order.begin(), order.end(),
                     [](auto& x, auto& y) { return x.second > y.second; });
    double total = 0;
    for (const auto& [_, sec] : order) total += sec;
    std::cout << fmt::format("  profile: {:.3f} ms per run in tasks; top tasks:\n",
                             total * 1e3 / a.iters);
    for (size_t i = 0; i < order.size() && i < size_t(a.top); ++i)
      std::cout << fmt::format("  {:>9.3f} ms {:5.1f}%  {}\n", order[i].second * 1e3 / a.iters,
                               total > 0 ? 100 * order[i].second / total : 0, order[i].first);
    if (!a.reportHtml.empty()) {
      std::string tasks;
      for (const auto& [node, sec] : byTask)
        tasks += fmt::format("{}\"{}\": {}", tasks.empty() ? "" : ", ", jsonEscape(node),
                             sec * 1e3 / a.iters);
      const double peak = measurePeakGflops(a.threads), bw = measureCopyGBs();
      writeReportHtml(a.model, a.reportHtml,
                      fmt::format("{{\"threads\": {}, \"runs\": {}, \"median_ms\": {}, "
                                  "\"peak_gflops\": {}, \"peak_gbs\": {}, \"tasks\": {{{}}}}}",
                                  a.threads, a.iters, med, peak, bw, tasks));
      std::cout << fmt::format("  report: {} (peak {:.1f} GFLOP/s, copy {:.1f} GB/s measured)\n",
                               a.reportHtml, peak, bw);
    }
  }
  if (exe) {
    const auto& st = exe->stats();
    std::cout << fmt::format("  {} tasks compiled, {} fallback; arena {} bytes\n", st.lowered,
                             st.fallback, st.arenaBytes);
  }
  if (exe && a.profile) {
    std::vector<const runtime::TaskInfo*> order;
    double total = 0;
    for (const auto& t : exe->tasks()) order.push_back(&t), total += t.seconds;
    std::stable_sort(order.begin(), order.end(),
                     [](auto* x, auto* y) { return x->seconds > y->seconds; });
    std::map<std::string, double> byOp;
    for (const auto* t : order) byOp[t->op] += t->seconds;
    std::cout << fmt::format("  profile: {:.3f} ms per run in tasks\n", total * 1e3 / a.iters);
    std::vector<std::pair<std::string, double>> ops(byOp.begin(), byOp.end());
    std::sort(ops.begin(), ops.end(), [](auto& x, auto& y) { return x.second > y.second; });
    for (const auto& [op, s] : ops)
      std::cout << fmt::format("  {:>9.3f} ms {:5.1f}%  {}\n", s * 1e3 / a.iters,
                               total > 0 ? 100 * s / total : 0, op);
    std::cout << "  top tasks:\n";
    for (size_t i = 0; i < order.size() && i < size_t(a.top); ++i)
      std::cout << fmt::format("  {:>9.3f} ms {:5.1f}%  {} [{}] {}\n",
                               order[i]->seconds * 1e3 / a.iters,
                               total > 0 ? 100 * order[i]->seconds / total : 0, order[i]->node,
                               order[i]->engine, order[i]->schedule);
  }
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    AICC_CHECK(f.good(), "bench: cannot write '{}'", a.json);
    f << "{\"model\": \"" << jsonEscape(a.model) << "\", \"engine\": \"" << engine
      << "\", \"threads\": " << a.threads << ", \"median_ms\": " << med << ", \"min_ms\": " << lo
      << ", \"compile_s\": " << compileSec << ", \"peak_rss_bytes\": " << rss
      << ", \"times_ms\": [";
    for (size_t i = 0; i < ms.size(); ++i) f << (i ? ", " : "") << ms[i];
    f << "]";
    if (exe) {
      f << ", \"tasks\": [";
      const auto& ts = exe->tasks();
      for (size_t i = 0; i < ts.size(); ++i)
        f << (i ? ", " : "") << "{\"node\": \"" << jsonEscape(ts[i].node) << "\", \"op\": \""
          << jsonEscape(ts[i].op) << "\", \"engine\": \"" << ts[i].engine
          << "\", \"ms_per_run\": " << (a.profile ? ts[i].seconds * 1e3 / a.iters : 0.0) << "}";
      f << "]";
    }
    f << "}\n";
  }
  return 0;
}

} // namespace aicc::cli
