#include "commands.h"

#include "ir/printer.h"

#include <iostream>

namespace aicc::cli {

int inspectCommand(const InspectArgs& a) {
  ImportedModel im = importOnnxFile(a.model);
  printImportWarnings(im);
  const Model& m = im.model;
  const Graph& g = *m.graph;
  if (a.ir) {
    PrintOptions po;
    po.printConstants = a.printConstants;
    std::cout << printModel(m, po);
    return 0;
  }
  std::cout << fmt::format("model: {}\nproducer: {} {}\nir_version: {}\n", a.model, m.producerName,
                           m.producerVersion, m.irVersion);
  std::cout << "opsets:";
  for (const auto& [d, v] : m.opsets) std::cout << " " << domainDisplay(d) << "=" << v;
  std::cout << "\ninputs:\n";
  for (const Value* v : g.inputs) std::cout << "  " << v->name << ": " << formatType(v->type) << "\n";
  std::cout << "outputs:\n";
  for (const Value* v : g.outputs) std::cout << "  " << v->name << ": " << formatType(v->type) << "\n";
  int64_t params = 0, bytes = 0;
  for (const Value* c : g.constants)
    if (c->constant && c->constant->defined()) {
      params += c->constant->numel();
      bytes += static_cast<int64_t>(c->constant->nbytes());
    }
  std::cout << fmt::format("parameters: {} in {} constants ({:.2f} MiB)\n", params, g.constants.size(),
                           static_cast<double>(bytes) / (1 << 20));
  std::map<std::string, int64_t> hist = opHistogram(g);
  int64_t total = 0;
  for (const auto& [_, c] : hist) total += c;
  std::cout << fmt::format("nodes: {}\nops:\n", total);
  std::vector<std::pair<int64_t, std::string>> sorted;
  for (const auto& [op, c] : hist) sorted.push_back({-c, op});
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [c, op] : sorted) std::cout << fmt::format("  {:<28} {}\n", op, -c);
  return 0;
}

} // namespace aicc::cli
