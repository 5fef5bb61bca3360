// The ai.onnx.ml op family, split over several files:
//   ml.cpp       LabelEncoder, ArrayFeatureExtractor, Binarizer (and registerMlOps, which calls
//                the others)
//   ml_tree.cpp  TreeEnsemble (ai.onnx.ml opset 5)
#pragma once

#include "ops/helpers.h"

namespace aicc {

void registerMlTreeOps(OpRegistry& r);

} // namespace aicc
