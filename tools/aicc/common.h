// Shared pieces of the CLI subcommands: loading a model and binding its inputs.
#pragma once

#include "frontend/onnx/onnx_importer.h"
#include "ops/op_def.h"

#include <map>
#include <string>
#include <vector>

namespace aicc::cli {

// Inputs for a run: files from an inputs dir (input_<i>.pb, backend-test binding), NAME=FILE
// pairs, and generated values for the rest.
struct InputSpec {
  std::string inputsDir;
  std::vector<std::string> named; // "NAME=FILE"
  bool generate = true;           // generate inputs that were not given
};

// Binds inputs to `m.model.graph->inputs` (may promote initializers to inputs, per the
// backend-test rule: more files than non-initializer inputs bind to graph.input entries).
std::vector<RValue> bindInputs(ImportedModel& m, const InputSpec& spec);

// A deterministic generated value for an input type (symbolic dims must be fixed by then).
RValue generateInput(const Value& v);

// Parses "NAME=VALUE" strings into a dims map.
std::map<std::string, int64_t> parseDims(const std::vector<std::string>& specs);

// One-line summary of a value: "f32[1,10] = [0.1, 0.2, ...]".
std::string summarize(const RValue& v, size_t maxElems = 8);

} // namespace aicc::cli
