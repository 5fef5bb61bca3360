// Conversion between ONNX's serialized values (TensorProto, SequenceProto, OptionalProto) and
// aicc's Tensor/RValue, plus .npy reading. All errors name the tensor and the reason.
#pragma once

#include "ops/op_def.h"

#include <memory>
#include <string>

namespace onnx {
class TensorProto;
}

namespace aicc {

// Where external-data files are looked up (the model's directory), with a cache of mappings.
struct ExternalData {
  std::string baseDir;
  std::map<std::string, std::shared_ptr<const void>> mapped; // path -> mapping
  std::map<std::string, size_t> sizes;
};

// Converts a TensorProto. `owner` keeps `p` alive: raw data is then viewed, not copied.
// `ext` is needed only for tensors with external data.
Tensor tensorFromProto(const onnx::TensorProto& p, const std::shared_ptr<const void>& owner,
                       ExternalData* ext);
void tensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto& p);

// Reads a value file: a serialized TensorProto, SequenceProto or OptionalProto (chosen by the
// expected type), or a .npy array.
RValue readValueFile(const std::string& path, const Type& expected);
// The same for a value file's bytes; `path` names it in errors (and ".npy" selects .npy).
RValue readValueBytes(const std::string& bytes, const std::string& path, const Type& expected);
// Writes a value as TensorProto / SequenceProto / OptionalProto (per `declared`) named `name`.
void writeValueFile(const std::string& path, const RValue& v, const Type& declared, const std::string& name);

} // namespace aicc
