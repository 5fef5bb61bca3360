// Internal to the ai.onnx.ml lowerings (lower_ml.cpp: the element ops, the shared helpers and the
// dispatch; lower_ml_tree.cpp: the forests; lower_ml_linear.cpp: the feature transforms and linear
// models; lower_ml_svm.cpp: SVMs).
#pragma once

#include "loop/lower_ops.h"
#include "ops/ml.h"

namespace aicc::loop::detail {

// The input types the ml ops read (as the reference kernels: f32, f64, int32, int64).
bool isMlNumeric(DType t);
// X as rows of features: [N, F], or a 1-D X as one row (the reference's rowsOf); declines
// other ranks.
std::pair<int64_t, int64_t> rowsOfX(const Value* xv);

// The reference's logistic (ops/ml.cpp): 1 / (1 + exp(-|v|)), mirrored below 0, in f64.
ExprPtr logisticOf(const ExprPtr& v);
// out[r] = labels[cls] (a constant table; cls clamped into it): a classifier's label.
Stmt storeLabel(FuncBuilder& b, const std::vector<int64_t>& labels, const std::string& out,
                const ExprPtr& r, const ExprPtr& cls);
// One row of scores (f64 temp `acc`, n of them) post-transformed in place as the reference's
// postTransform (ops/ml.cpp): none, logistic, softmax, softmax_zero (probit declined).
Block postTransformRow(FuncBuilder& b, const std::string& acc, int64_t n, PostTransform pt);

// TreeEnsemble, TreeEnsembleRegressor, TreeEnsembleClassifier (lower_ml_tree.cpp).
std::optional<LoweredNode> lowerMlTreeFamily(const Node& n, const std::string& name,
                                             const LowerOptions& o);
// Scaler, Normalizer, Imputer, LinearRegressor, LinearClassifier (lower_ml_linear.cpp).
std::optional<LoweredNode> lowerMlLinearFamily(const Node& n, const std::string& name,
                                               const LowerOptions& o);
// SVMRegressor, SVMClassifier (lower_ml_svm.cpp).
std::optional<LoweredNode> lowerMlSvmFamily(const Node& n, const std::string& name,
                                            const LowerOptions& o);

} // namespace aicc::loop::detail
