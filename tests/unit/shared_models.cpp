#include "shared_models.h"

#include "backend/op_select.h"
#include "backend/target.h"
#include "passes/pass_manager.h"
#include "passes/pipelines.h"
#include "runtime/artifact.h"

#include <gtest/gtest.h>
#include <random>

namespace fs = std::filesystem;

namespace aicc::test {

fs::path sharedModelsDir() { return fs::path(AICC_SHARED_DIR) / "models"; }

std::vector<std::string> sharedModelNames(bool includeCustomOps) {
  std::vector<std::string> names;
  if (!fs::is_directory(sharedModelsDir())) return {"(none)"};
  for (const auto& e : fs::directory_iterator(sharedModelsDir()))
    if (fs::exists(e.path() / "model.onnx") &&
        (includeCustomOps || e.path().filename() != "superres-prepost-customops"))
      names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

ImportedModel ModelCase::reimport() const { return importOnnxFile((dir / "model.onnx").string()); }

std::optional<ModelCase> loadModelCase(const std::string& name, std::string& skipReason) {
  if (name == "(none)") {
    skipReason = "no models: " + sharedModelsDir().string() + " is missing";
    return std::nullopt;
  }
  ModelCase mc;
  mc.dir = sharedModelsDir() / name;
  fs::path data = mc.dir / "test_data_set_0";
  if (!fs::is_directory(data)) {
    skipReason = "no test_data_set_0 in " + mc.dir.string();
    return std::nullopt;
  }
  mc.ref = mc.reimport();
  InputSpec spec;
  spec.inputsDir = data.string();
  spec.generate = false;
  mc.inputs = bindInputs(mc.ref, spec);
  RunOptions ro;
  ro.checkTypes = true;
  mc.expected = interpret(*mc.ref.model.graph, mc.inputs, ro);
  return mc;
}

void expectOutputsClose(const std::vector<RValue>& expected, const std::vector<RValue>& got, Tolerance tol) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    auto mismatch = compareValues(expected[i], got[i], tol);
    EXPECT_FALSE(mismatch) << "output " << i << ": " << *mismatch;
  }
}

std::string modelParamName(const std::string& name) {
  std::string n = name;
  for (char& c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

Tensor uniformTensor(const Dims& d, uint32_t seed, float lo, float hi) {
  Tensor x(DType::F32, d);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
  return x;
}

void optimize(Model& m, int level) {
  PassManager<Model> pm;
  for (auto& p : optPipeline(level)) pm.add(std::move(p));
  pm.run(m);
}

std::filesystem::path compileArtifact(Model& m, const std::string& folder,
                                      const std::vector<rt::Symbol>& ranges) {
  // -O2 with the target's blocked layout and the symbols' ranges, as `aicc compile` runs it.
  const loop::LowerOptions lo = backend::lowerOptionsFor(nativeTarget());
  GraphPassOptions go;
  go.layoutBlock = backend::layoutBlockFor(lo);
  for (const rt::Symbol& s : ranges) go.sizeRanges.push_back({s.name, s.lo, s.hi, s.step});
  PassManager<Model> pm;
  for (auto& p : optPipeline(2, go)) pm.add(std::move(p));
  pm.run(m);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / folder;
  std::filesystem::remove_all(dir);
  runtime::writeArtifact(runtime::buildArtifact(*m.graph, lo, ranges), dir.string(),
                         nativeTarget());
  return dir;
}

} // namespace aicc::test
