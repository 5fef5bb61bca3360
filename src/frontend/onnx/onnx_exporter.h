// ONNX exporter: Model (graph IR) -> ModelProto. Used by `aicc opt -o X.onnx` and by autodiff.
// Nodes of aicc's own domain (aicc.Fused) are written with an "aicc" opset import: aicc reads them
// back, other engines do not (standard ONNX cannot express them).
#pragma once

#include "ir/graph.h"

#include <string>

namespace aicc {

std::string exportOnnxBytes(const Model& m);
void exportOnnxFile(const Model& m, const std::string& path);

} // namespace aicc
