// Value files as `aicc run` reads them (frontend/onnx/tensor_proto.h): the bytes as a serialized
// TensorProto, SequenceProto and OptionalProto in turn. Each reads into a value whose every byte is
// readable, or throws aicc::Error.
#include "frontend/onnx/tensor_proto.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aicc;
  const std::string bytes(fuzz::text(data, size));
  const Type tensor = Type::tensor(DType::Undefined);
  for (const Type& t : {tensor, Type::sequence(tensor), Type::optional(tensor)})
    fuzz::guarded([&] { fuzz::keep(fuzz::touch(readValueBytes(bytes, "fuzz.pb", t))); });
  return 0;
}
