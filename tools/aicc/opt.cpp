// aicc opt: runs a graph pass pipeline (-O0..-O3 or an explicit list) with the pass manager's
// instrumentation, writes the text IR (or ONNX for a .onnx output) and optional statistics.
#include "commands.h"

#include "frontend/onnx/onnx_exporter.h"
#include "ir/printer.h"
#include "passes/memory_schedule.h"

#include <fstream>
#include <iostream>
#include <sstream>

namespace aicc::cli {

namespace {

std::string jsonCounts(const std::map<std::string, int64_t>& m) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : m) parts.push_back(fmt::format("\"{}\": {}", k, v));
  return "{" + fmt::format("{}", fmt::join(parts, ", ")) + "}";
}

int64_t total(const std::map<std::string, int64_t>& m) {
  int64_t n = 0;
  for (const auto& [_, v] : m) n += v;
  return n;
}

} // namespace

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<PassRecord> optimize(Model& m, const OptArgs& a) {
  PassInstrumentation inst;
  inst.printAfterAll = a.printAfterAll;
  inst.printAfterChange = a.printAfterChange;
  auto known = [](const std::string& flag, const std::string& n) {
    for (const auto& p : graphPasses())
      if (p.name == n) return n;
    fail("{} {}: no graph pass of that name (aicc opt --list-passes lists them)", flag, n);
  };
  for (const auto& n : a.printBefore) inst.printBefore.insert(known("--print-ir-before", n));
  for (const auto& n : a.printAfter) inst.printAfter.insert(known("--print-ir-after", n));
  inst.timing = a.timePasses;
  inst.stopAfter = a.stopAfter;
  inst.verifyEach = a.verifyEach;
  inst.reproducerPath = a.reproducer;
  PassManager<Model> pm(inst);
  GraphPassOptions go;
  go.layoutBlock = a.layoutBlock;
  go.sizeRanges = a.sizeRanges;
  go.sizeSplit = a.sizeSplit;
  if (!a.passes.empty())
    for (const auto& n : splitList(a.passes)) pm.add(makeGraphPass(n, go));
  else
    for (auto& p : optPipeline(a.optLevel, go)) pm.add(std::move(p));
  pm.run(m);
  return pm.records();
}

int optCommand(const OptArgs& a) {
  ImportedModel im = loadModel(a.input, parseDims(a.dims));
  applyShapes(im, a.shapes);
  Model& m = im.model;
  auto opsBefore = opHistogram(*m.graph);
  const MemoryReport memBefore = analyzeMemory(*m.graph);
  OptArgs o = a; // --dim N=LO..HI: the ranges conditions on the sizes fold over
  for (const rt::Symbol& r : parseDimRanges(a.dims)) o.sizeRanges.push_back({r.name, r.lo, r.hi});
  std::vector<PassRecord> records = optimize(m, o);
  auto opsAfter = opHistogram(*m.graph);
  if (a.output.empty() || a.output == "-") {
    PrintOptions po;
    po.printConstants = a.printConstants;
    std::cout << printModel(m, po);
  } else if (a.output.size() > 5 && a.output.substr(a.output.size() - 5) == ".onnx") {
    exportOnnxFile(m, a.output);
  } else {
    PrintOptions po;
    po.printConstants = a.printConstants;
    std::ofstream f(a.output);
    AICC_CHECK(f.good(), "cannot write '{}'", a.output);
    f << printModel(m, po);
  }
  if (!a.statsJson.empty()) {
    // A peak is only a number when every result's size is known (null otherwise: a partial sum
    // would understate it); unknown_sizes_* count the results without a static size.
    const MemoryReport memAfter = analyzeMemory(*m.graph);
    auto peakJson = [](const MemoryReport& r) {
      return r.unknownSizes ? std::string("null") : std::to_string(r.peakBytes);
    };
    std::vector<std::string> passes;
    for (const auto& r : records)
      passes.push_back(fmt::format("{{\"name\": \"{}\", \"ms\": {:.3f}, \"changed\": {}}}", r.name, r.ms, r.changed));
    std::ofstream f(a.statsJson);
    AICC_CHECK(f.good(), "cannot write '{}'", a.statsJson);
    f << fmt::format("{{\n  \"model\": \"{}\",\n  \"opt_level\": {},\n  \"nodes_before\": {},\n  "
                     "\"nodes_after\": {},\n"
                     "  \"ops_before\": {},\n  \"ops_after\": {},\n  \"fused_groups\": {},\n"
                     "  \"peak_memory_before\": {},\n  \"peak_memory_after\": {},\n"
                     "  \"unknown_sizes_before\": {},\n  \"unknown_sizes_after\": {},\n  "
                     "\"passes\": [\n    {}\n  ]\n}}\n",
                     jsonEscape(a.input), a.passes.empty() ? std::to_string(a.optLevel) : "null",
                     total(opsBefore), total(opsAfter), jsonCounts(opsBefore), jsonCounts(opsAfter),
                     opsAfter.count("aicc.Fused") ? opsAfter["aicc.Fused"] : 0, peakJson(memBefore),
                     peakJson(memAfter), memBefore.unknownSizes, memAfter.unknownSizes,
                     fmt::join(passes, ",\n    "));
  }
  return 0;
}

} // namespace aicc::cli
