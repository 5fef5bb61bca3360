// Internal to the ai.onnx.ml lowerings (lower_ml.cpp: the element ops and the forests;
// lower_ml_linear.cpp: the feature transforms, linear and SVM models).
#pragma once

#include "loop/lower_ops.h"
#include "ops/ml.h"

namespace aicc::loop::detail {

// The reference's logistic (ops/ml.cpp): 1 / (1 + exp(-|v|)), mirrored below 0, in f64.
ExprPtr logisticOf(const ExprPtr& v);
// One row of scores (f64 temp `acc`, n of them) post-transformed in place as the reference's
// postTransform (ops/ml.cpp): none, logistic, softmax, softmax_zero (probit declined).
Block postTransformRow(FuncBuilder& b, const std::string& acc, int64_t n, PostTransform pt);

// Scaler, Normalizer, Imputer, LinearRegressor, LinearClassifier, SVMRegressor, SVMClassifier.
std::optional<LoweredNode> lowerMlLinearFamily(const Node& n, const std::string& name,
                                               const LowerOptions& o);

} // namespace aicc::loop::detail
