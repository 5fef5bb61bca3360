// `aicc opt -O3` on imported models: every model the importer accepts goes through the -O3
// pipeline with the verifier after each pass. A pass may reject a model with aicc::Error, but it
// must not crash or leave IR that fails the verifier.
#include "fuzz_util.h"
#include "passes/pipelines.h"

#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aicc;
  std::optional<ImportedModel> im = fuzz::importModel(data, size);
  if (!im) return 0;
  PassInstrumentation inst;
  inst.verifyEach = true;
  std::ostringstream log;
  inst.out = &log;
  PassManager<Model> pm(inst);
  for (auto& p : optPipeline(3)) pm.add(std::move(p));
  try {
    pm.run(im->model);
  } catch (const Error& e) {
    if (std::string_view(e.what()).find("produced invalid IR") != std::string_view::npos)
      fuzz::bug(e.what());
    fuzz::rejected(e);
  }
  return 0;
}
