// aicc compile MODEL -o OUTDIR [--emit so|c] [--target T] [--dim N=V] [-O0..-O3]: runs the graph
// pipeline, plans memory, lowers every node to loop IR and writes the artifact:
//   --emit so (default): model.so + model.o + model.weights + model.plan (runtime/artifact.h),
//                        loaded by `aicc run OUTDIR` or the C API (include/aicc/runtime.h);
//   --emit c:            the portable C99 bundle (model.c, model.h, model.weights;
//                        docs/codegen-c.md), libc/libm only.
// Both write report.txt and report.json: per task the op and the schedule with the chosen
// candidate, arena / lower bound / weights sizes, code size, and the time of every phase.
#include "commands.h"

#include "backend/op_select.h"

#include "backend/memory_plan.h"
#include "backend/target.h"
#include "codegen/c/bundle.h"
#include "kernels/registry.h"
#include "passes/dim_steps.h"
#include "runtime/artifact.h"
#include "support/memory.h"

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace aicc::cli {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string jsonStr(const std::string& s) { return "\"" + jsonEscape(s) + "\""; }

struct ReportTask {
  std::string node, op, schedule;
  backend::Cost cost; // the cost model's (zeros for nodes without candidates)
  std::vector<std::pair<int64_t, int64_t>> arena; // (offset, bytes) of its arena bindings
};

struct Report {
  std::vector<std::pair<std::string, double>> phases;         // name -> seconds
  std::vector<std::pair<std::string, std::string>> numbers;   // name -> JSON value
  std::vector<ReportTask> tasks;
  void write(const std::string& dir, const std::string& title) const {
    std::ofstream txt(std::filesystem::path(dir) / "report.txt");
    txt << title << "\n";
    for (const auto& [k, v] : numbers) txt << fmt::format("  {:<22} {}\n", k, v);
    double total = 0;
    for (const auto& [k, s] : phases) {
      txt << fmt::format("  time {:<17} {:.3f} s\n", k, s);
      total += s;
    }
    txt << fmt::format("  time {:<17} {:.3f} s\n", "total", total);
    for (const auto& t : tasks) txt << "  " << t.node << " [" << t.op << "] " << t.schedule << "\n";
    std::ofstream js(std::filesystem::path(dir) / "report.json");
    js << "{\n";
    for (const auto& [k, v] : numbers) js << "  " << jsonStr(k) << ": " << v << ",\n";
    js << "  \"phases_s\": {";
    for (size_t i = 0; i < phases.size(); ++i)
      js << (i ? ", " : "") << jsonStr(phases[i].first) << ": " << phases[i].second;
    js << fmt::format(", \"total\": {}}},\n  \"tasks\": [", total);
    for (size_t i = 0; i < tasks.size(); ++i) {
      const ReportTask& t = tasks[i];
      js << (i ? ",\n    " : "\n    ") << "{\"node\": " << jsonStr(t.node)
         << ", \"op\": " << jsonStr(t.op) << ", \"schedule\": " << jsonStr(t.schedule)
         << fmt::format(", \"flops\": {}, \"bytes\": {}, \"est_s\": {}, \"arena\": [", t.cost.flops,
                        t.cost.bytes, t.cost.seconds);
      for (size_t j = 0; j < t.arena.size(); ++j)
        js << (j ? ", " : "") << "[" << t.arena[j].first << ", " << t.arena[j].second << "]";
      js << "]}";
    }
    js << "\n  ]\n}\n";
  }
};

} // namespace

namespace {

// A split's pieces within the ranges as planned (the lower ends raised to the smallest sizes the
// model's shapes take): none when fewer than two are left.
std::optional<SizeSplit> clipSplit(SizeSplit s, const std::vector<rt::Symbol>& planned) {
  for (const rt::Symbol& r : planned) {
    if (r.name != s.symbol) continue;
    std::erase_if(s.pieces, [&](const auto& p) { return p.second < r.lo || p.first > r.hi; });
    for (auto& [lo, hi] : s.pieces) lo = std::max(lo, r.lo), hi = std::min(hi, r.hi);
  }
  return s.pieces.size() > 1 ? std::optional(s) : std::nullopt;
}

} // namespace

int compileCommand(const CompileArgs& a) {
  AICC_CHECK(a.emit == "so" || a.emit == "c", "compile: --emit {} is not supported (so, c)",
             a.emit);
  AICC_CHECK(a.specializes.empty() || a.emit == "so",
             "--specialize is for --emit so (a C bundle has fixed sizes)");
  AICC_CHECK(!a.staticRuntime || a.emit == "so",
             "--static-runtime is for --emit so (a C bundle needs no runtime)");
  Report rep;
  auto t = Clock::now();
  ImportedModel im = loadModel(a.model, parseDims(a.dims));
  applyShapes(im, a.shapes);
  if (!a.variantOf.empty())
    for (const Value* v : im.model.graph->inputs)
      AICC_CHECK(!v->type.isTensor() || (v->type.shape && toDims(*v->type.shape)),
                 "--specialize {}: input '{}' is still {}; a variant fixes every input's size",
                 a.variantOf, v->name, formatType(v->type));
  // Symbols whose shapes agree only at multiples of a step (passes/dim_steps.h): written as
  // step * "S/step", the artifact takes multiples of the step.
  const std::vector<rt::Symbol> given = parseDimRanges(a.dims); // the user's ranges
  std::vector<rt::Symbol> ranges = given;                       // with the steps found
  if (a.emit == "so") {
    // Unnamed dims ('?') as symbols, merged where the shapes need them equal.
    const std::vector<std::string> named = nameUnknownInputDims(*im.model.graph);
    // `--dim input.0=V` fixes an unnamed dim by the name it just got (the importer saw none).
    std::map<std::string, int64_t> fixed;
    for (const auto& [name, v] : parseDims(a.dims))
      if (std::find(named.begin(), named.end(), name) != named.end()) fixed[name] = v;
    if (!fixed.empty()) specializeDims(im.model, fixed);
    // A length's default range as far as memory allows (before anything folds over the ranges).
    ranges = runtime::widenDefaultLength(*im.model.graph, ranges);
    // Conditions on the sizes fold first (the cleanup group, fold-size-predicates over the
    // ranges): the shapes they guard resolve for the merges and steps found below.
    if (const auto at = runtime::inputSymbolRanges(*im.model.graph, ranges); !at.empty()) {
      OptArgs early;
      early.passes = "cleanup";
      for (const rt::Symbol& s : at) early.sizeRanges.push_back({s.name, s.lo, s.hi, s.step});
      optimize(im.model, early);
    }
    const std::map<std::string, std::string> merged = mergeNamedDims(*im.model.graph, named);
    if (!a.quiet)
      for (const std::string& n : named)
        std::cout << fmt::format("unnamed dim {}: {}{}\n", n,
                                 fixed.count(n) ? "fixed at " + std::to_string(fixed.at(n))
                                                : std::string("symbolic"),
                                 merged.count(n) ? " (equal to " + merged.at(n) + ")" : "");
    const std::map<std::string, int64_t> steps = findDimSteps(*im.model.graph);
    applyDimSteps(*im.model.graph, steps);
    for (const auto& [name, step] : steps) {
      auto r = std::find_if(ranges.begin(), ranges.end(),
                            [&](const rt::Symbol& x) { return x.name == name; });
      if (r == ranges.end()) // multiples of the step up to kDefaultSteps of them
        r = ranges.insert(ranges.end(), {name, step, step * runtime::kDefaultSteps});
      r->step = step;
      if (!a.quiet)
        std::cout << fmt::format("symbolic dim {}: multiples of {} only (the model's shapes "
                                 "agree for those)\n",
                                 name, step);
    }
    // Symbols a Reshape holds at one value (an export that baked the batch in): fixed there, so
    // the nodes past it compile; any other size is refused by the artifact's input checks.
    std::map<std::string, int64_t> pins;
    for (const auto& [name, pin] : findPinnedDims(*im.model.graph)) {
      const auto r = std::find_if(given.begin(), given.end(),
                                  [&](const rt::Symbol& x) { return x.name == name; });
      AICC_CHECK(r == given.end() || (r->lo <= pin.value && pin.value <= r->hi),
                 "--dim {}={}..{}: {} (to {}) runs only at {} = {}", name, r->lo, r->hi, pin.node,
                 pin.shape, name, pin.value);
      pins[name] = pin.value;
      if (!a.quiet)
        std::cout << fmt::format("symbolic dim {}: fixed at {}: {} reshapes to {}, which "
                                 "holds the elements of no other size (the export baked the size "
                                 "in)\n",
                                 name, pin.value, pin.node, pin.shape);
    }
    if (!pins.empty()) specializeDims(im.model, pins);
  }
  const bool bf16 = applyPrecision(im, a.precision, a.calibration);
  AICC_CHECK(!bf16 || a.emit == "so",
             "--precision bf16 is for --emit so (the C bundle is portable f32 code)");
  rep.phases.push_back({"import", since(t)});
  t = Clock::now();
  OptArgs opt;
  opt.optLevel = a.optLevel;
  // The target's blocked layout, for native code (the C bundle's kernels are NCHW).
  if (a.emit == "so")
    opt.layoutBlock =
        backend::layoutBlockFor(backend::lowerOptionsFor(parseTarget(a.target), bf16));
  // Conditions on the sizes fold where they have one value over the symbols' ranges.
  if (a.emit == "so")
    for (const rt::Symbol& s : runtime::inputSymbolRanges(*im.model.graph, ranges))
      opt.sizeRanges.push_back({s.name, s.lo, s.hi, s.step});
  opt.sizeSplit = std::make_shared<std::optional<SizeSplit>>();
  optimize(im.model, opt);
  rep.phases.push_back({"graph passes", since(t)});
  // One that changes over them splits the ranges into size classes, each compiled on its own
  // (compile_variants.cpp); a class's own compile hands a further split back instead.
  std::optional<SizeSplit> split;
  CompileArgs classes = a; // the size classes' args: the ranges as planned here, narrowed
  if (a.emit == "so" && !a.staticRuntime && a.variantOf.empty() && *opt.sizeSplit) {
    const std::vector<rt::Symbol> planned = runtime::inputSymbolRanges(*im.model.graph, ranges);
    split = clipSplit(**opt.sizeSplit, planned);
    for (const rt::Symbol& r : planned)
      if (std::none_of(a.dims.begin(), a.dims.end(),
                       [&](const std::string& d) { return d.rfind(r.name + "=", 0) == 0; }))
        classes.dims.push_back(fmt::format("{}={}..{}", r.name, r.lo, r.hi));
  }
  if (split && a.furtherSplit) {
    *a.furtherSplit = split;
    return 0;
  }
  const Graph& g = *im.model.graph;
  rep.numbers.push_back({"model", jsonStr(a.model)});
  rep.numbers.push_back({"emit", jsonStr(a.emit)});
  rep.numbers.push_back({"opt_level", std::to_string(a.optLevel)});
  rep.numbers.push_back({"nodes", std::to_string(g.nodes.size())});
  if (a.emit == "c") {
    // The portable bundle has no shape block: fixed sizes only.
    for (const Value* v : g.inputs)
      if (v->type.isTensor() && v->type.shape && !toDims(*v->type.shape))
        fail("--emit c compiles fixed sizes, and input '{}' is {}: fix its dims with --dim "
             "NAME=VALUE or --shape (a dynamic batch is for --emit so)",
             v->name, formatType(v->type));
    t = Clock::now();
    MemoryPlan plan = planMemory(g);
    codegen::CBundleOptions co;
    co.prefix = a.prefix;
    co.embedWeights = a.embedWeights;
    codegen::CBundle b = codegen::emitCBundle(g, plan, co);
    rep.phases.push_back({"plan + lower + emit C", since(t)});
    codegen::writeCBundle(b, a.outputDir);
    rep.numbers.push_back({"target", jsonStr("generic (portable C99)")});
    rep.numbers.push_back({"arena_bytes", std::to_string(b.arenaBytes)});
    rep.numbers.push_back({"lower_bound_bytes", std::to_string(plan.lowerBoundBytes)});
    rep.numbers.push_back({"scratch_bytes", std::to_string(b.scratchBytes)});
    rep.numbers.push_back({"weights_bytes", std::to_string(plan.weightBytes)});
    rep.numbers.push_back({"weights_embedded", a.embedWeights ? "true" : "false"});
    rep.numbers.push_back({"c_source_bytes", std::to_string(b.source.size())});
    rep.numbers.push_back({"c_kernels", std::to_string(b.kernels)});
    rep.numbers.push_back({"peak_rss_bytes", std::to_string(peakRssBytes())});
    rep.write(a.outputDir, "aicc compile --emit c " + a.model);
    std::cout << fmt::format(
        "wrote {0}/{1}.c ({2} bytes, {3} kernels, {4} no-op views), {0}/{1}.h, "
        "{0}/{1}{5} ({6} bytes of weights); arena {7} bytes; report "
        "{0}/report.txt\n",
        a.outputDir, b.prefix, b.source.size(), b.kernels, b.noOps,
        a.embedWeights ? "_weights.c" : ".weights", plan.weightBytes, b.arenaBytes);
    return 0;
  }
  AICC_CHECK(!a.embedWeights || a.staticRuntime,
             "--embed-weights needs --emit c or --static-runtime (a compiled folder reads its "
             "weights from model.weights)");
  Target target = parseTarget(a.target);
  // bf16 GEMM kernels exist for AVX512-BF16 only (AMX-BF16 CPUs have it too): elsewhere a clear
  // error rather than an f32 artifact that claims bf16.
  AICC_CHECK(!bf16 || (target.has(CpuFeature::AVX512BF16) && target.triple.empty() &&
                       kernels::cpuSupports(kernels::Isa::Avx512Bf16)),
             "--precision bf16 needs a target and a compiling CPU with AVX512-BF16 (the bf16 GEMM "
             "kernels' ISA); target {} {}; use --precision f32 (or int8)",
             target.name,
             target.has(CpuFeature::AVX512BF16) ? "has it, this CPU does not" : "lacks it");
  t = Clock::now();
  loop::LowerOptions lo = backend::lowerOptionsFor(target, bf16);
  std::map<std::string, std::string> pins; // --select NODE=CANDIDATE overrides the cost model
  for (const auto& sel : a.selects) {
    auto eq = sel.find('=');
    AICC_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < sel.size(),
               "--select expects NODE=CANDIDATE, got '{}'", sel);
    pins[sel.substr(0, eq)] = sel.substr(eq + 1);
  }
  backend::checkPins(g, target, pins, lo);
  std::shared_ptr<const backend::TuningCache> cache;
  if (!a.tuningCache.empty()) {
    auto c = std::make_shared<backend::TuningCache>(backend::TuningCache::load(a.tuningCache));
    if (c->target != formatTarget(target))
      std::cerr << fmt::format("aicc: warning: tuning cache '{}' was measured on '{}', compiling "
                               "for '{}'\n",
                               a.tuningCache, c->target, formatTarget(target));
    cache = std::move(c);
  }
  // The candidate each node is lowered with (pinned, measured or the cost model's), kept for the
  // report's cost of that candidate.
  std::map<std::string, std::string> chosen;
  lo.chooseCandidate = [&chosen, choose = backend::candidateChooser(target, pins, true, cache,
                                                                    bf16)](const Node& n) {
    loop::CandidateChoice c = choose(n);
    chosen[n.describe()] = c.name;
    return c;
  };
  runtime::ArtifactSpec spec = runtime::buildArtifact(g, lo, ranges);
  for (const rt::Symbol& r : ranges) // a range for a name the inputs do not have: a typo?
    if (!a.quiet && std::none_of(spec.symbols.begin(), spec.symbols.end(),
                                 [&](const rt::Symbol& s) { return s.name == r.name; }))
      std::cerr << fmt::format("aicc: warning: --dim {}={}..{}: the model's inputs have no "
                               "symbolic dim '{}'\n",
                               r.name, r.lo, r.hi, r.name);
  rep.phases.push_back({"plan + lower", since(t)});
  spec.variants = compileVariants(classes, split);
  runtime::WriteOptions wo;
  wo.staticRuntime = a.staticRuntime;
  wo.embedWeights = a.embedWeights;
  runtime::WrittenArtifact w = runtime::writeArtifact(spec, a.outputDir, target, wo);
  rep.phases.push_back({"llvm codegen", w.codegenSeconds});
  rep.phases.push_back({"link", w.linkSeconds});
  rep.numbers.push_back({"target", jsonStr(formatTarget(target))});
  rep.numbers.push_back({"tasks", std::to_string(spec.tasks.size())});
  std::string symbols = "{";
  for (size_t i = 0; i < spec.symbols.size(); ++i)
    symbols += fmt::format("{}{}: [{}, {}{}]", i ? ", " : "", jsonStr(spec.symbols[i].name),
                           spec.symbols[i].lo, spec.symbols[i].hi,
                           spec.symbols[i].step > 1 ? fmt::format(", {}", spec.symbols[i].step)
                                                    : ""); // [lo, hi(, step)]
  rep.numbers.push_back({"symbols", symbols + "}"});
  std::string fallbacks = "[";
  for (size_t i = 0; i < spec.fallbacks.size(); ++i)
    fallbacks += (i ? ", " : "") + jsonStr(spec.fallbacks[i]);
  rep.numbers.push_back({"fallbacks", std::to_string(spec.fallbacks.size())});
  rep.numbers.push_back({"fallback_nodes", fallbacks + "]"});
  rep.numbers.push_back({"arena_bytes", std::to_string(spec.arenaBytes)});
  rep.numbers.push_back({"lower_bound_bytes", std::to_string(spec.lowerBoundBytes)});
  rep.numbers.push_back({"nodes_in_place", std::to_string(spec.nodesInPlace)});
  rep.numbers.push_back({"scratch_bytes", std::to_string(spec.scratchBytes)});
  rep.numbers.push_back({"weights_bytes", std::to_string(w.weightBytes)});
  rep.numbers.push_back({"packed_weight_bytes", std::to_string(spec.packedBytes)});
  rep.numbers.push_back({"object_bytes", std::to_string(w.objectBytes)});
  rep.numbers.push_back({"shared_library_bytes", std::to_string(w.sharedBytes)});
  rep.numbers.push_back({"static_runtime", a.staticRuntime ? "true" : "false"});
  if (a.staticRuntime) {
    rep.numbers.push_back({"static_archive_bytes", std::to_string(w.archiveBytes)});
    rep.numbers.push_back({"weights_embedded", a.embedWeights ? "true" : "false"});
  }
  std::string fails = "[";
  for (size_t i = 0; i < spec.failBranches.size(); ++i)
    fails += (i ? ", " : "") + jsonStr(spec.failBranches[i]);
  rep.numbers.push_back({"uncompiled_branches", fails + "]"});
  int measured = 0, estimated = 0, bf16Tasks = 0; // how each task with a choice was decided
  // The cost model's view (flops, bytes, estimate) of the candidate each task runs, by the name
  // tasks carry.
  std::map<std::string, backend::Cost> costs;
  for (const auto& n : g.nodes) {
    auto c = chosen.find(n->describe());
    if (c == chosen.end() || c->second.empty()) continue;
    if (auto sel = backend::selectCandidate(*n, target, c->second, lo)) costs[c->first] = sel->cost;
  }
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    ReportTask rt{spec.tasks[i].node, spec.schedules[i].first, spec.schedules[i].second, {}, {}};
    if (auto c = costs.find(rt.node); c != costs.end()) rt.cost = c->second;
    for (const runtime::Binding& b : spec.tasks[i].params)
      if (b.region == runtime::Region::Arena && b.bytes > 0)
        rt.arena.push_back({b.offset, b.bytes});
    rep.tasks.push_back(std::move(rt));
    const std::string& sch = spec.schedules[i].second;
    bf16Tasks += sch.find("precision = \"bf16") != std::string::npos;
    if (sch.find("selection = \"measured") != std::string::npos)
      ++measured;
    else if (sch.find("selection = \"") != std::string::npos)
      ++estimated;
  }
  rep.numbers.push_back({"precision", jsonStr(a.precision)});
  rep.numbers.push_back({"bf16_tasks", std::to_string(bf16Tasks)});
  rep.numbers.push_back({"selections_measured", std::to_string(measured)});
  rep.numbers.push_back({"selections_estimated", std::to_string(estimated)});
  rep.numbers.push_back({"tuning_cache", jsonStr(a.tuningCache)});
  rep.numbers.push_back({"peak_rss_bytes", std::to_string(peakRssBytes())}); // of the compile
  rep.write(a.outputDir, "aicc compile --emit so " + a.model);
  if (!a.reportHtml.empty()) writeReportHtml(a.outputDir, a.reportHtml, "");
  for (const auto& f : spec.fallbacks)
    std::cerr << "aicc: note: runs through the reference kernel (no lowering): " << f << "\n";
  for (const auto& f : spec.failBranches) // the run fails if it takes one
    std::cerr << "aicc: warning: not compiled, taking it at run time is an error: " << f << "\n";
  for (const rt::Symbol& sym : spec.symbols) // what the arena was planned for
    if (!a.quiet && sym.runSized)
      std::cout << fmt::format("data-dependent dim {}: no bound, set during the run (its values "
                               "live in buffers that grow to the largest run; at most {})\n",
                               sym.name, sym.hi);
    else if (!a.quiet && sym.data)
      std::cout << fmt::format("data-dependent dim {}: 0..{}, set during the run (the arena is "
                               "planned for {}: the most the model's shapes allow)\n",
                               sym.name, sym.hi, sym.hi);
    else if (!a.quiet)
      std::cout << fmt::format("symbolic dim {}: runs any value in {}..{}{} (the arena is "
                               "planned for {}; --dim {}=LO..HI to change)\n",
                               sym.name, sym.lo, sym.hi,
                               sym.step > 1 ? fmt::format(", multiples of {}", sym.step) : "",
                               sym.hi, sym.name);
  // Default ranges can plan a large arena (a detector's 16 pages of 1024x1024): say so, with the
  // flag that sizes it.
  constexpr int64_t kLargeArena = int64_t(512) << 20;
  std::vector<std::string> defaulted;
  for (const rt::Symbol& sym : spec.symbols)
    if (!sym.data && std::none_of(given.begin(), given.end(),
                                  [&](const rt::Symbol& g) { return g.name == sym.name; }))
      defaulted.push_back(sym.name);
  if (spec.arenaBytes >= kLargeArena && !defaulted.empty())
    std::cerr << fmt::format("aicc: warning: the arena is {} MiB, planned for the default ranges "
                             "of {}; give the sizes you run with --dim NAME=LO..HI\n",
                             spec.arenaBytes >> 20, fmt::join(defaulted, ", "));
  if (bf16 && !a.quiet) // the per-task precision is in report.txt (precision = ...)
    std::cout << fmt::format("precision: bf16 GEMM kernels (f32 accumulation) in {} of {} tasks; "
                             "the others f32\n",
                             bf16Tasks, spec.tasks.size());
  if (bf16 && !a.calibration.empty()) reportBf16Agreement(im, a.calibration);
  double total = 0;
  for (const auto& [k, s] : rep.phases) total += s;
  if (!a.quiet && a.staticRuntime)
    std::cout << fmt::format(
        "wrote {0}/model.so ({1} bytes, {2} tasks; runtime and plan{3} linked in), model.a "
        "({4} bytes), aicc_runtime.h{5}; arena {6} bytes; compile {7:.2f} s; report "
        "{0}/report.txt\n",
        a.outputDir, w.sharedBytes, spec.tasks.size(), a.embedWeights ? " and weights" : "",
        w.archiveBytes,
        a.embedWeights ? "" : fmt::format(", model.weights ({} bytes)", w.weightBytes),
        spec.arenaBytes, total);
  else if (!a.quiet)
    std::cout << fmt::format(
        "wrote {0}/model.so ({1} bytes, {2} tasks), model.weights ({3} bytes), "
        "model.plan; arena {4} bytes (lower bound {5}); compile {6:.2f} s; "
        "report {0}/report.txt\n",
        a.outputDir, w.sharedBytes, spec.tasks.size(), w.weightBytes, spec.arenaBytes,
        spec.lowerBoundBytes, total);
  return 0;
}

} // namespace aicc::cli
