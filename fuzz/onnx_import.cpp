// ONNX importer (bytes -> ModelProto -> graph IR, with shape inference): any bytes import or throw
// aicc::Error, and an imported model satisfies the verifier and prints.
#include "fuzz_util.h"
#include "ir/printer.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aicc;
  std::optional<ImportedModel> im = fuzz::importModel(data, size);
  if (!im) return 0;
  try {
    verifyModel(im->model);
  } catch (const Error& e) {
    fuzz::bug(std::string("the importer accepted a model that fails the verifier: ") + e.what());
  }
  (void)printModel(im->model);
  return 0;
}
