// aicc tune MODEL -o CACHE [--budget-s S] [--reps N]: times every node's applicable candidates
// (runtime/tune.h) after the same graph passes as `aicc compile`, and writes the tuning cache
// that `aicc compile --tuning-cache CACHE` (and the report's "measured" selections) read.
#include "commands.h"

#include "backend/target.h"
#include "runtime/tune.h"

#include <filesystem>
#include <iostream>
#include <unistd.h>

namespace aicc::cli {

int tuneCommand(const TuneArgs& a) {
  ImportedModel im = loadModel(a.model, parseDims(a.dims));
  applyShapes(im, a.shapes);
  OptArgs opt;
  opt.optLevel = a.optLevel;
  opt.layoutBlock = jitLayoutBlock(); // tuned as compiled for the native target
  optimize(im.model, opt);
  const Target target = nativeTarget();
  backend::TuningCache cache;
  if (std::filesystem::exists(a.output)) cache = backend::TuningCache::load(a.output);
  runtime::TuneOptions o;
  o.budgetSeconds = a.budgetSeconds;
  o.reps = a.reps;
  const bool tty = isatty(STDERR_FILENO);
  int n = 0;
  o.log = [&](const std::string& line) {
    ++n;
    if (tty)
      std::cerr << fmt::format("\r[{}] measured {}\x1b[K", n, line.substr(0, 100)) << std::flush;
  };
  runtime::TuneSummary s = runtime::tuneGraph(*im.model.graph, target, cache, o);
  if (tty) std::cerr << "\r\x1b[K";
  cache.save(a.output);
  std::cout << fmt::format(
      "tuned {} of {} nodes with choices ({} candidates timed, {} left for lack of budget) in "
      "{:.1f} s; {} measured choices differ from the cost model's; wrote {}\n",
      s.measured, s.nodes, s.candidatesTimed, s.skippedForBudget, s.seconds, s.changed, a.output);
  for (const auto& [cand, f] : cache.calibration())
    std::cout << fmt::format("  cost model calibration {}: measured/estimated {:.2f}\n", cand, f);
  return 0;
}

} // namespace aicc::cli
