// .npy value files (frontend/onnx/tensor_proto.h): any bytes read into a tensor whose every byte
// is readable, or throw aicc::Error.
#include "frontend/onnx/tensor_proto.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aicc;
  return fuzz::guarded([&] {
    fuzz::keep(fuzz::touch(readValueBytes(std::string(fuzz::text(data, size)), "fuzz.npy",
                                          Type::tensor(DType::Undefined))));
  });
}
