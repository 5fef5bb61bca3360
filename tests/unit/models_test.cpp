// The real third-party models of ../shared/models: each runs on its test_data_set_0 and matches the
// stored ONNX Runtime outputs (rtol 1e-3, atol 1e-4), with every node's result checked against
// shape inference. superres-prepost-customops must fail with a clear error naming its custom domain.
#include "frontend/onnx/inputs.h"
#include "frontend/onnx/tensor_proto.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "shared_models.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace fs = std::filesystem;
using namespace aicc;

namespace {

class RealModel : public ::testing::TestWithParam<std::string> {};

TEST_P(RealModel, MatchesReference) {
  if (GetParam() == "(none)") GTEST_SKIP() << "no models: " << test::sharedModelsDir() << " is missing";
  fs::path dir = test::sharedModelsDir() / GetParam();
  if (GetParam() == "superres-prepost-customops") {
    try {
      importOnnxFile((dir / "model.onnx").string());
      FAIL() << "expected an import error";
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("com.microsoft.extensions"), std::string::npos) << msg;
      EXPECT_NE(msg.find("DecodeImage"), std::string::npos) << msg;
    }
    return;
  }
  fs::path data = dir / "test_data_set_0";
  if (!fs::is_directory(data)) GTEST_SKIP() << "no test_data_set_0 in " << dir;
  ImportedModel m = importOnnxFile((dir / "model.onnx").string());
  InputSpec spec;
  spec.inputsDir = data.string();
  spec.generate = false;
  std::vector<RValue> inputs = bindInputs(m, spec);
  RunOptions ro;
  ro.checkTypes = true;
  std::vector<RValue> outputs = interpret(*m.model.graph, inputs, ro);
  size_t compared = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    fs::path f = data / ("output_" + std::to_string(i) + ".pb");
    if (!fs::exists(f)) continue;
    RValue expected = readValueFile(f.string(), m.model.graph->outputs[i]->type);
    auto mismatch = compareValues(expected, outputs[i], {1e-3, 1e-4});
    EXPECT_FALSE(mismatch) << "output " << i << ": " << *mismatch;
    ++compared;
  }
  EXPECT_GT(compared, 0u);
}

INSTANTIATE_TEST_SUITE_P(Shared, RealModel, ::testing::ValuesIn(test::sharedModelNames(/*includeCustomOps=*/true)),
                         [](const auto& info) { return test::modelParamName(info.param); });

} // namespace
