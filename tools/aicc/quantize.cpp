// aicc quantize: post-training int8 quantization (src/quant/ptq.h). Calibrates on the input sets
// of the --calibration folders, writes the QDQ model, and reports each activation's range and,
// per output, the SQNR of the quantized model (its literal QDQ semantics, the reference
// interpreter) against the float model on the calibration inputs.
#include "commands.h"

#include "frontend/onnx/inputs.h"
#include "frontend/onnx/onnx_exporter.h"
#include "interp/interpreter.h"
#include "quant/ptq.h"
#include "runtime/jit_executor.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>

namespace aicc::cli {

namespace {

// The input sets of a folder: its test_data_set_* subfolders, or the folder itself.
std::vector<std::string> inputSets(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) fail("--calibration: '{}' is not a folder", dir);
  std::vector<std::string> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path().string());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) sets.push_back(dir);
  return sets;
}

std::vector<std::vector<RValue>> calibrationSets(ImportedModel& im,
                                                 const std::vector<std::string>& dirs) {
  std::vector<std::vector<RValue>> calib;
  for (const std::string& dir : dirs)
    for (const std::string& set : inputSets(dir)) {
      InputSpec spec;
      spec.inputsDir = set;
      spec.generate = false;
      calib.push_back(bindInputs(im, spec));
    }
  return calib;
}

} // namespace

bool applyPrecision(ImportedModel& im, const std::string& precision,
                    const std::vector<std::string>& calibration) {
  if (precision == "bf16") return true; // --calibration: sets to report the agreement on
  if (precision == "f32") {
    if (!calibration.empty()) fail("--calibration is for --precision int8 or bf16");
    return false;
  }
  if (precision != "int8") fail("--precision must be f32, bf16 or int8, got '{}'", precision);
  if (calibration.empty())
    fail("--precision int8 needs --calibration DIR (input sets to calibrate on)");
  const PtqReport r = quantizeModel(im.model, calibrationSets(im, calibration));
  std::cerr << fmt::format("quantized: {} Conv, {} MatMul, {} Add (int8, min-max)\n", r.convs,
                           r.matmuls, r.adds);
  return false;
}

void setJitPrecision(bool bf16, runtime::JitRunOptions& o) {
  if (!bf16) return;
  AICC_CHECK(kernels::cpuSupports(kernels::Isa::Avx512Bf16) &&
                 kernels::isaWithin(kernels::Isa::Avx512Bf16, kernels::bestIsa()),
             "--precision bf16 needs a CPU with AVX512-BF16 (the bf16 GEMM kernels' ISA){}; use "
             "--precision f32 (or int8)",
             kernels::cpuSupports(kernels::Isa::Avx512Bf16) ? " and AICC_KERNEL_ISA caps it" : "");
  o.lower = backend::engineLowerOptions(nativeTarget(), true);
}

int64_t jitLayoutBlock() {
  return backend::layoutBlockFor(backend::lowerOptionsFor(nativeTarget()));
}

void reportBf16Agreement(const ImportedModel& im, const std::vector<std::vector<RValue>>& sets) {
  const Graph& g = *im.model.graph;
  runtime::JitRunOptions bf;
  setJitPrecision(true, bf);
  runtime::JitExecutable f32Exe(g), bf16Exe(g, bf);
  std::vector<std::vector<RValue>> ref, got;
  for (const auto& in : sets) {
    ref.push_back(f32Exe.run(in));
    got.push_back(bf16Exe.run(in));
  }
  const std::vector<OutputAccuracy> acc = compareOutputs(ref, got);
  for (size_t k = 0; k < acc.size(); ++k)
    std::cout << fmt::format(
        "  bf16 vs f32, output '{}' ({} input set{}): max |error| / max |f32| {:.3g}, SQNR "
        "{:.1f} dB{}\n",
        g.outputs[k]->name, sets.size(), sets.size() == 1 ? "" : "s", acc[k].maxRelError,
        acc[k].sqnrDb,
        acc[k].rows ? fmt::format(", top-1 agreement {}/{}", acc[k].top1Same, acc[k].rows) : "");
}

void reportBf16Agreement(ImportedModel& im, const std::vector<std::string>& dirs) {
  reportBf16Agreement(im, calibrationSets(im, dirs));
}

int quantizeCommand(const QuantizeArgs& a) {
  ImportedModel im = loadModel(a.model, parseDims(a.dims));
  std::vector<std::vector<RValue>> calib = calibrationSets(im, a.calibration);
  PtqOptions o;
  o.method = a.method;
  o.percentile = a.percentile;
  o.perChannel = !a.perTensor;
  o.minSqnrDb = a.minSqnr;
  const PtqReport r = quantizeModel(im.model, calib, o);
  exportOnnxFile(im.model, a.output);
  std::cout << fmt::format("{}: {} Conv, {} MatMul, {} Add quantized (int8 weights {}, uint8 "
                           "activations, {} ranges over {} input sets)\n",
                           a.output, r.convs, r.matmuls, r.adds,
                           o.perChannel ? "per channel" : "per tensor", a.method, calib.size());
  if (a.minSqnr > 0) {
    std::cout << fmt::format(
        "  mixed precision: all int8 {:.1f} dB, target {:.1f} dB; {} op(s) kept "
        "float\n",
        r.sqnrAllInt8, a.minSqnr, r.keptFloat.size());
    for (const auto& [op, db] : r.keptFloat)
      std::cout << fmt::format("    float: {} (quantized alone: {:.1f} dB)\n", op, db);
  }
  for (const PtqTensor& t : r.activations)
    std::cout << fmt::format("  {:40} [{:.6g}, {:.6g}]  scale {:.6g}  zero point {}\n", t.name,
                             t.lo, t.hi, t.scale, t.zeroPoint);
  // Accuracy against the float model (its outputs from the calibration runs): the worst SQNR,
  // and the top-1 agreement of classifier outputs or else the largest relative error.
  const Graph& g = *im.model.graph;
  std::vector<std::vector<RValue>> got;
  for (const auto& in : calib) got.push_back(interpret(g, in));
  const std::vector<OutputAccuracy> acc = compareOutputs(r.floatOutputs, got);
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const OutputAccuracy& x = acc[k];
    const std::string extra = x.rows > 0
                                  ? fmt::format("top-1 agreement {}/{} ({:.1f}%)", x.top1Same,
                                                x.rows, 100.0 * double(x.top1Same) / double(x.rows))
                                  : fmt::format("max |error| / max |float| {:.3g}", x.maxRelError);
    std::cout << fmt::format("  output '{}': SQNR vs float {:.1f} dB (worst input set), {}\n",
                             g.outputs[k]->name, x.sqnrDb, extra);
  }
  return 0;
}

} // namespace aicc::cli
