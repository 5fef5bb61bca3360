// Binding a model's inputs for a run: files in the ONNX backend-test layout (input_<i>.pb), named
// files (.pb or .npy), and generated values for the rest.
#pragma once

#include "frontend/onnx/onnx_importer.h"
#include "ops/op_def.h"

#include <string>
#include <vector>

namespace aicc {

struct InputSpec {
  std::string inputsDir;          // input_<i>.pb files
  std::vector<std::string> named; // "NAME=FILE"
  bool generate = true;           // generate inputs that were not given
};

// Binds inputs to `m.model.graph->inputs`. input_<i>.pb binds to the i-th graph input that is not an
// initializer; only when more files are given than such inputs, to the i-th entry of the ONNX
// graph.input list (making those initializers inputs).
std::vector<RValue> bindInputs(ImportedModel& m, const InputSpec& spec);

// A deterministic generated value for an input (symbolic dims must be fixed by then).
RValue generateInput(const Value& v);

} // namespace aicc
