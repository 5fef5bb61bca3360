#include "commands.h"

#include "frontend/onnx/tensor_proto.h"
#include "interp/interpreter.h"

#include <filesystem>
#include <iostream>

namespace aicc::cli {

int runCommand(const RunArgs& a) {
  ImportOptions opts;
  opts.dims = parseDims(a.dims);
  ImportedModel m = importOnnxFile(a.model, opts);
  std::vector<RValue> inputs = bindInputs(m, a.inputs);
  OptArgs opt;
  opt.optLevel = a.optLevel;
  optimize(m.model, opt);
  const Graph& g = *m.model.graph;
  RunOptions ro;
  ro.checkTypes = a.checkTypes;
  std::vector<RValue> outputs = interpret(g, inputs, ro);
  if (!a.outputDir.empty()) std::filesystem::create_directories(a.outputDir);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Value* o = g.outputs[i];
    if (!a.outputDir.empty())
      writeValueFile(fmt::format("{}/output_{}.pb", a.outputDir, i), outputs[i], o->type, o->name);
    else
      std::cout << o->name << ": " << summarize(outputs[i]) << "\n";
  }
  return 0;
}

} // namespace aicc::cli
