// The real models of ../shared/models for tests: their names, and each one loaded with its
// test_data_set_0 inputs and its -O0 reference-interpreter outputs. Tests skip (printing why) when
// the shared folder or a model's data is missing.
#pragma once

#include "frontend/onnx/inputs.h"
#include "interp/compare.h"
#include "interp/interpreter.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace aicc::rt {
struct Symbol;
}

namespace aicc::test {

std::filesystem::path sharedModelsDir();
// Model folder names (sorted), without superres-prepost-customops (custom ops, no reference
// data); {"(none)"} when the shared folder is missing, so parameterized suites still instantiate.
std::vector<std::string> sharedModelNames(bool includeCustomOps = false);

struct ModelCase {
  std::filesystem::path dir;
  ImportedModel ref;             // the imported model, unoptimized
  std::vector<RValue> inputs;    // test_data_set_0 inputs bound to ref's graph inputs
  std::vector<RValue> expected;  // the -O0 interpreter's outputs (type-checked run)
  ImportedModel reimport() const; // a fresh copy to transform
};

// Loads `name`; nullopt with `skipReason` set when it cannot be tested here.
std::optional<ModelCase> loadModelCase(const std::string& name, std::string& skipReason);

// EXPECTs every output of `got` to match `expected` within `tol`.
void expectOutputsClose(const std::vector<RValue>& expected, const std::vector<RValue>& got, Tolerance tol);

// A gtest parameter name for a model folder name ("ppocrv4-det" -> "ppocrv4_det").
std::string modelParamName(const std::string& name);

// Runs the -O<level> graph pipeline (passes/pipelines.h) on m.
void optimize(Model& m, int level);

// An f32 tensor of uniform draws in [lo, hi) (std::mt19937 seeded with `seed`).
Tensor uniformTensor(const Dims& d, uint32_t seed, float lo = -1, float hi = 1);

// m optimized (-O2) and compiled as `aicc compile` does (runtime kernels, the symbols' ranges
// given) into a fresh temp folder `folder`, returned.
std::filesystem::path compileArtifact(Model& m, const std::string& folder,
                                      const std::vector<rt::Symbol>& ranges);

} // namespace aicc::test
