// Tensor files for aicc-run, without protobuf: ONNX TensorProto (.pb, as in ONNX's backend-test
// folders: input_<i>.pb / output_<i>.pb) decoded and encoded from the protobuf wire format
// directly, and NumPy .npy (version 1-3, little-endian, C order). Enough of both for the
// tensors a compiled model takes and gives: numeric element types, data inline (raw_data or the
// typed repeated fields); strings and external data are refused with a message.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aicc_run {

struct HostTensor {
  std::string name;
  int32_t onnxType = 0; // TensorProto.DataType (1 float, 7 int64, ...)
  std::vector<int64_t> dims;
  std::vector<unsigned char> data; // little-endian elements, C order
};

// The element size of an ONNX data type this reader handles (0: not handled).
int64_t elementBytes(int32_t onnxType);
// "f32" -> 1, as include/aicc/runtime.h names element types; 0 when unknown.
int32_t onnxTypeOf(const char* aiccDtype);

// Read a .pb TensorProto or a .npy file (by extension). Throws std::runtime_error naming the file.
HostTensor readTensorFile(const std::string& path);
// Writes t as a TensorProto (dims, data_type, name, raw_data).
void writeTensorPb(const std::string& path, const HostTensor& t);

} // namespace aicc_run
