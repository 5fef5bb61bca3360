// aicc bench MODEL [--engine jit|interp] [--threads N] [--iters N] [--warmup N] [--json FILE]
// [--profile] [--trace FILE]: times whole-model runs on generated (or given) inputs and prints the
// median latency. The JIT is compiled once before timing; --profile adds a per-node table (time per
// run, share, op, engine, schedule), the first place to look when a model is slow.
#include "commands.h"

#include "interp/interpreter.h"
#include "runtime/jit_executor.h"
#include "runtime/parallel.h"
#include "support/memory.h"
#include "support/trace.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <numeric>

namespace aicc::cli {

namespace {

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
  std::unique_ptr<runtime::LoadedArtifact> art;
  std::unique_ptr<ImportedModel> owned;
  std::vector<RValue> inputs;
  std::unique_ptr<runtime::JitExecutable> exe;
  const Graph* graph = nullptr;
  auto t0 = std::chrono::steady_clock::now();
  std::string engine = a.engine;
  if (isArtifactDir(a.model)) { // a compiled artifact: load it (no compiler involved)
    art = std::make_unique<runtime::LoadedArtifact>(a.model);
    inputs = bindArtifactInputs(*art, a.inputs);
    engine = "artifact";
  } else {
    owned = std::make_unique<ImportedModel>(loadModel(a.model, parseDims(a.dims)));
    inputs = bindInputs(*owned, a.inputs);
    if (a.engine == "jit") specializeToInputs(*owned, inputs); // compiled for these shapes
    OptArgs opt;
    opt.optLevel = a.optLevel;
    optimize(owned->model, opt);
    graph = owned->model.graph.get();
    if (a.engine == "jit") exe = std::make_unique<runtime::JitExecutable>(*graph);
  }
  double compileSec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto once = [&] {
    if (art) return art->run(inputs);
    if (exe) return exe->run(inputs);
    return interpret(*graph, inputs);
  };
  for (int i = 0; i < a.warmup; ++i) once();
  if (exe && a.profile) exe->setProfiling(true);
  if (!a.trace.empty()) trace::start();
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
  if (!a.trace.empty())
    std::cout << fmt::format("  trace: {} events of {} runs in {} (ui.perfetto.dev)\n",
                             trace::write(a.trace), a.iters, a.trace);
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
