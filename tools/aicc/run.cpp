#include "commands.h"

#include "frontend/onnx/tensor_proto.h"
#include "interp/interpreter.h"
#include "runtime/jit_executor.h"

#include <chrono>

#include <filesystem>
#include <iostream>

namespace aicc::cli {

namespace {

// `aicc run ARTIFACT_DIR`: the compiled model, no compiler involved.
int runArtifact(const RunArgs& a) {
  runtime::LoadedArtifact art(a.model);
  std::vector<RValue> inputs = bindArtifactInputs(art, a.inputs, parseDims(a.dims));
  auto t0 = std::chrono::steady_clock::now();
  std::vector<RValue> outputs = art.run(inputs);
  double runSec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (a.engineStats) std::cerr << fmt::format("artifact: run {:.3f} ms\n", runSec * 1e3);
  if (!a.outputDir.empty()) std::filesystem::create_directories(a.outputDir);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const runtime::TensorDesc& d = art.outputs()[i];
    if (!a.outputDir.empty())
      writeValueFile(fmt::format("{}/output_{}.pb", a.outputDir, i), outputs[i],
                     typeOf(d, art.outputSymbols()), d.name);
    else
      std::cout << d.name << ": " << summarize(outputs[i]) << "\n";
  }
  return 0;
}

} // namespace

int runCommand(const RunArgs& a) {
  if (isArtifactDir(a.model)) {
    AICC_CHECK(a.precision == "f32", "--precision applies to a model; a compiled folder keeps the "
                                     "precision it was compiled with");
    return runArtifact(a);
  }
  ImportOptions opts;
  opts.dims = parseDims(a.dims);
  ImportedModel m = importOnnxFile(a.model, opts);
  printImportWarnings(m);
  const bool bf16 = applyPrecision(m, a.precision, {});
  AICC_CHECK(!bf16 || a.engine == "jit", "--precision bf16 runs through --engine jit (the "
                                         "interpreter defines f32 results)");
  std::vector<RValue> inputs = bindInputs(m, a.inputs);
  if (a.engine == "jit") specializeToInputs(m, inputs); // compiled for these shapes
  OptArgs opt;
  opt.optLevel = a.optLevel;
  if (a.engine == "jit" && !bf16) opt.layoutBlock = jitLayoutBlock();
  optimize(m.model, opt);
  const Graph& g = *m.model.graph;
  RunOptions ro;
  ro.checkTypes = a.checkTypes;
  std::vector<RValue> outputs;
  if (a.engine == "jit") {
    runtime::JitRunOptions jo;
    setJitPrecision(bf16, jo);
    runtime::JitExecutable exe(g, jo);
    auto t0 = std::chrono::steady_clock::now();
    outputs = exe.run(inputs);
    double runSec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const runtime::JitStats& st = exe.stats();
    if (a.engineStats) {
      std::cerr << fmt::format("jit: {} nodes compiled, {} fallback; compile {:.3f} s, run {:.3f} "
                               "ms; {}\n",
                               st.lowered, st.fallback, st.compileSeconds, runSec * 1e3,
                               st.planNote);
      for (const auto& r : st.fallbackReasons) std::cerr << "  fallback: " << r << "\n";
      for (const auto& r : st.interpretedBranches)
        std::cerr << "  not compiled (interpreted if taken): " << r << "\n";
    }
  } else {
    outputs = interpret(g, inputs, ro);
  }
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
