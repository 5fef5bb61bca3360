// The ai.onnx.ml ops sklearn pipelines export, compiled (loop/lower_ml_linear.cpp,
// loop/lower_ml.cpp) through the JIT against the interpreter, with no fallback: Scaler (one
// offset, per-feature scales, integer input), Normalizer (MAX / L1 / L2, a zero row), Imputer
// (NaN and a value replaced; integers), LinearRegressor (one target, several under each post
// transform), LinearClassifier (several classes, one row with two labels, one row with other
// labels: the literal 0 / 1) and TreeEnsembleClassifier (three classes with base values, the
// binary case with positive weights and with negative ones under LOGISTIC, two classes both
// reached with two base values or none, leaves that give one class only).
#include "jit_check.h"

#include <gtest/gtest.h>

#include <cmath>

namespace aicc {
namespace {

Tensor values(DType t, const Dims& d, const std::vector<double>& v) {
  Tensor x(t, d);
  for (int64_t i = 0; i < x.numel(); ++i) x.setF64(i, v[size_t(i) % v.size()]);
  return x;
}

void check(const std::string& x, const std::string& op, const std::string& attrs,
           const std::string& outs, const Tensor& in, const char* what) {
  SCOPED_TRACE(what);
  const std::string results = outs.find("], ") == std::string::npos ? "%y" : "%l, %y";
  Model m = parseWithShapes("graph @g(%x: " + x + ") {\n  " + results + " = ai.onnx.ml." + op +
                            "(%x) {" + attrs + "} : " + outs + "\n  return " + results + "\n}\n");
  expectJitMatches(m, {RValue::of(in)}, {1e-6, 1e-7}, "");
}

const std::vector<double> kRows = {0.25, -1.5, 2, 0, 3.5, -0.75, 1, 0.5, -2, 0, 0, 0, 4, 1, -3};

TEST(JitMl, ScalerNormalizerImputerMatchTheInterpreter) {
  const Tensor x = values(DType::F32, {5, 3}, kRows);
  check("f32[5,3]", "Scaler", "offset = [0.5], scale = [2.0, -1.0, 0.25]", "f32[5,3]", x, "scaler");
  check("i64[5,3]", "Scaler", "offset = [1.0, 2.0, 3.0], scale = [0.5]", "f32[5,3]",
        values(DType::I64, {5, 3}, {1, -2, 7, 0, 3}), "scaler of ints");
  for (const char* norm : {"MAX", "L1", "L2"})
    check("f32[5,3]", "Normalizer", std::string("norm = \"") + norm + "\"", "f32[5,3]", x, norm);
  check("f64[5,3]", "Imputer", "imputed_value_floats = [9.0, 8.0, 7.0], replaced_value_float = nan",
        "f64[5,3]", values(DType::F64, {5, 3}, {1, NAN, 2, 0, NAN, 3, -1}), "imputer of NaN");
  check("f32[5,3]", "Imputer", "imputed_value_floats = [5.0], replaced_value_float = 0.0",
        "f32[5,3]", x, "imputer of 0");
  check("i64[5,3]", "Imputer", "imputed_value_int64s = [4, 5, 6], replaced_value_int64 = 0",
        "i64[5,3]", values(DType::I64, {5, 3}, {0, 1, 2, 0, 5}), "imputer of ints");
}

TEST(JitMl, LinearModelsMatchTheInterpreter) {
  const Tensor x = values(DType::F32, {5, 3}, kRows);
  const std::string coef = "coefficients = [0.5, -1.0, 2.0, 1.5, 0.25, -0.5, -2.0, 1.0, 0.75]";
  check("f32[5,3]", "LinearRegressor", "coefficients = [0.5, -1.0, 2.0], intercepts = [0.25]",
        "f32[5,1]", x, "one target");
  for (const char* pt : {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"}) {
    check("f32[5,3]", "LinearRegressor",
          coef + ", intercepts = [0.0, 1.0, -1.0], targets = 3, post_transform = \"" + pt + "\"",
          "f32[5,3]", x, pt);
    check("f32[5,3]", "LinearClassifier",
          coef +
              ", intercepts = [0.0, 1.0, -1.0], classlabels_ints = [4, 7, 9], "
              "post_transform = \"" +
              pt + "\"",
          "i64[5], f32[5,3]", x, pt);
  }
  check("f64[5,3]", "LinearClassifier",
        "coefficients = [0.5, -1.0, 2.0], intercepts = [-0.5], classlabels_ints = [3, 8]",
        "i64[5], f32[5,2]", values(DType::F64, {5, 3}, kRows), "one row, two labels");
  check("f32[5,3]", "LinearClassifier",
        "coefficients = [0.5, -1.0, 2.0], intercepts = [-0.5], classlabels_ints = [3]",
        "i64[5], f32[5,1]", x, "one row, one label: 0 / 1");
}

// Two trees over f0 and f1; leaf weights per case (class_ids / class_weights of leaves 1 and 2
// of tree 0, 1 and 2 of tree 1).
std::string forest(const std::string& ids, const std::string& nodes, const std::string& trees,
                   const std::string& weights) {
  return "nodes_treeids = [0, 0, 0, 1, 1, 1], nodes_nodeids = [0, 1, 2, 0, 1, 2], "
         "nodes_featureids = [0, 0, 0, 1, 0, 0], nodes_modes = [\"BRANCH_LEQ\", \"LEAF\", "
         "\"LEAF\", \"BRANCH_GT\", \"LEAF\", \"LEAF\"], nodes_values = [0.5, 0.0, 0.0, 0.0, 0.0, "
         "0.0], nodes_truenodeids = [1, 0, 0, 1, 0, 0], nodes_falsenodeids = [2, 0, 0, 2, 0, 0], "
         "class_treeids = " +
         trees + ", class_nodeids = " + nodes + ", class_ids = " + ids +
         ", class_weights = " + weights;
}

TEST(JitMl, TreeEnsembleClassifierMatchesTheInterpreter) {
  const Tensor x = values(DType::F32, {5, 3}, kRows);
  // Three classes, each leaf weighing two of them.
  const std::string three =
      forest("[0, 1, 1, 2, 0, 2, 2, 1]", "[1, 1, 2, 2, 1, 1, 2, 2]", "[0, 0, 0, 0, 1, 1, 1, 1]",
             "[0.5, 0.25, 1.0, 0.75, 0.125, 2.0, 0.5, 0.25]");
  for (const char* pt : {"NONE", "SOFTMAX", "LOGISTIC"})
    check("f32[5,3]", "TreeEnsembleClassifier",
          three +
              ", classlabels_int64s = [1, 2, 3], base_values = [0.1, -0.2, 0.3], "
              "post_transform = \"" +
              pt + "\"",
          "i64[5], f32[5,3]", x, pt);
  // Two classes, only class 1 weighed (the binary case): positive weights, then negative ones.
  const std::string ones = "[1, 1, 1, 1]", nodes = "[1, 2, 1, 2]", trees = "[0, 0, 1, 1]";
  check("f32[5,3]", "TreeEnsembleClassifier",
        forest(ones, nodes, trees, "[0.1, 0.3, 0.2, 0.4]") + ", classlabels_int64s = [5, 6]",
        "i64[5], f32[5,2]", x, "binary, positive");
  check("f32[5,3]", "TreeEnsembleClassifier",
        forest(ones, nodes, trees, "[-0.5, 0.75, 1.0, -2.0]") +
            ", classlabels_int64s = [5, 6], post_transform = \"LOGISTIC\"",
        "i64[5], f32[5,2]", x, "binary, negative, logistic");
  // Two classes both weighed: two base values, none, one; class 1 reached by some rows only.
  const std::string both = forest("[0, 1, 0, 1]", nodes, trees, "[0.5, -0.25, 1.0, 0.75]");
  const std::string some = forest("[0, 0, 1, 0]", nodes, trees, "[0.5, -0.25, 1.0, 0.75]");
  for (const std::string& f : {both, some})
    for (const char* base : {", base_values = [0.25, -0.5]", "", ", base_values = [0.25]"})
      check("f32[5,3]", "TreeEnsembleClassifier", f + ", classlabels_int64s = [5, 6]" + base,
            "i64[5], f32[5,2]", x, base);
}

} // namespace
} // namespace aicc
