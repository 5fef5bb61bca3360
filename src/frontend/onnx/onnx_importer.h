// ONNX importer: ModelProto -> Model (graph IR). Handles IR versions 3+, ai.onnx opsets 7+,
// initializers (also when listed as graph inputs, old IR style), Constant nodes, external data,
// subgraph attributes and the opset upgrade rules of each op. Errors name the node, op, domain
// and opset. Shape inference runs at the end.
#pragma once

#include "ir/graph.h"

#include <map>
#include <string>

namespace aicc {

struct ImportOptions {
  // Symbolic input dims to fix before shape inference (--dim NAME=VALUE).
  std::map<std::string, int64_t> dims;
};

struct ImportedModel {
  Model model;
  // Names of the ONNX graph.input entries in their original order, initializers included (for the
  // backend-test binding rule of `aicc run`).
  std::vector<std::string> allInputNames;
  // What the import ignored of the model, said once (a declared shape the graph does not
  // compute: "value 'y' is declared f32[1,seqlen] but computes f32[32,1,8210]: ...").
  std::vector<std::string> warnings;
};

ImportedModel importOnnxFile(const std::string& path, const ImportOptions& opts = {});
ImportedModel importOnnxBytes(const std::string& bytes, const std::string& baseDir,
                              const ImportOptions& opts = {});

// Makes the constant `name` of the main graph an input (appended), for models whose initializers
// may be overridden by inputs. Re-runs shape inference.
void promoteConstantToInput(Model& m, const std::string& name);

// Replaces symbolic dims of graph inputs by values and re-infers shapes.
void specializeDims(Model& m, const std::map<std::string, int64_t>& dims);

} // namespace aicc
