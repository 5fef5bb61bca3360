// Many threads, many instances: compiled artifacts (runtime/artifact.h and the C API of
// include/aicc/runtime.h) run from N threads over M instances, K runs each, and every output must
// equal, bit for bit, the output of a single-threaded run on the same input. Run under
// ThreadSanitizer by the `tsan` preset (scripts/test.sh --tsan), which also proves the shared
// worker pool, kernel cache and error strings race-free.
#include "aicc/runtime.h"
#include "backend/target.h"
#include "frontend/onnx/inputs.h"
#include "frontend/onnx/onnx_importer.h"
#include "passes/pipelines.h"
#include "rt/parallel.h"
#include "runtime/artifact.h"
#include "shared_models.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <thread>

namespace aicc {
namespace {

namespace fs = std::filesystem;

constexpr int kThreads = 4, kInstances = 3, kRuns = 12;

// mnist-8 (in the repository) compiled once into a temp folder; its input with each element
// scaled by (1 + v / 8) for variant v, so threads run different data.
struct Fixture {
  fs::path dir;
  std::vector<Tensor> inputs; // one per variant
  std::vector<Tensor> expected;

  Fixture() {
    fs::path model = fs::path(AICC_SOURCE_DIR) / "models" / "mnist-8";
    ImportedModel im = importOnnxFile((model / "model.onnx").string());
    InputSpec spec;
    spec.inputsDir = (model / "test_data_set_0").string();
    spec.generate = false;
    Tensor x = bindInputs(im, spec).at(0).tensor;
    test::optimize(im.model, 2);
    loop::LowerOptions lo;
    lo.runtimeKernels = true;
    dir = fs::temp_directory_path() / ("aicc_concurrency_" + std::to_string(getpid()));
    fs::remove_all(dir);
    runtime::writeArtifact(runtime::buildArtifact(*im.model.graph, lo), dir.string(),
                           nativeTarget());
    runtime::LoadedArtifact ref(dir.string());
    for (int v = 0; v < kThreads; ++v) {
      Tensor t = x.clone();
      for (int64_t i = 0; i < t.numel(); ++i) t.setF64(i, x.getF64(i) * (1 + v / 8.0));
      expected.push_back(ref.run({RValue::of(t)}).at(0).tensor);
      inputs.push_back(std::move(t));
    }
  }
  ~Fixture() { fs::remove_all(dir); }
};

bool sameBits(const Tensor& a, const void* b, size_t bytes) {
  return a.nbytes() == bytes && std::memcmp(a.raw(), b, bytes) == 0;
}

// Threads share instances through the checked run, which serializes runs of one instance.
TEST(Concurrency, SharedInstancesThroughTheCheckedRun) {
  runtime::setNumThreads(2); // the generated code's parallel loops use the shared pool too
  Fixture f;
  std::vector<std::unique_ptr<runtime::LoadedArtifact>> models;
  for (int m = 0; m < kInstances; ++m)
    models.push_back(std::make_unique<runtime::LoadedArtifact>(f.dir.string()));
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < kRuns; ++k) {
        try {
          auto out = models[size_t((t + k) % kInstances)]->run({RValue::of(f.inputs[size_t(t)])});
          const Tensor& y = out.at(0).tensor;
          wrong += !sameBits(f.expected[size_t(t)], y.raw(), y.nbytes());
        } catch (const Error&) {
          ++failed;
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0) << "outputs differ from the single-threaded run";
}

// The C API: one instance per thread, each loaded and freed on its thread; plus raw calls on a
// shared instance, which either run or fail with "in use by another thread".
TEST(Concurrency, CApiInstancePerThreadAndSharedInstanceErrors) {
  runtime::setNumThreads(2);
  Fixture f;
  aicc_model* shared = aicc_model_load(f.dir.c_str());
  ASSERT_TRUE(shared) << aicc_last_error();
  std::atomic<int> wrong{0}, failed{0}, busy{0}, sharedRuns{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      aicc_model* m = aicc_model_load(f.dir.c_str());
      if (!m) {
        ++failed;
        return;
      }
      const Tensor& x = f.inputs[size_t(t)];
      for (int k = 0; k < kRuns; ++k) {
        size_t bytes = 0;
        if (aicc_model_set_input(m, 0, x.raw(), x.nbytes()) != 0 || aicc_model_run(m) != 0) {
          ++failed;
          continue;
        }
        const void* y = aicc_model_output(m, 0, &bytes);
        wrong += !y || !sameBits(f.expected[size_t(t)], y, bytes);
        // The shared instance: no data race whatever the interleaving; an error names the cause.
        if (aicc_model_set_input(shared, 0, x.raw(), x.nbytes()) == 0 &&
            aicc_model_run(shared) == 0)
          ++sharedRuns;
        else if (std::strstr(aicc_last_error(), "in use by another thread"))
          ++busy;
        else
          ++failed;
      }
      aicc_model_free(m);
    });
  for (auto& th : threads) th.join();
  aicc_model_free(shared);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0) << "outputs differ from the single-threaded run";
  EXPECT_EQ(sharedRuns + busy, kThreads * kRuns);
  std::cout << "[ concurrency ] shared instance: " << sharedRuns << " runs, " << busy
            << " refused as busy\n";
}

} // namespace
} // namespace aicc
