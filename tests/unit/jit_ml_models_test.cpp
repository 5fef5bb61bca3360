// The ai.onnx.ml ops sklearn pipelines export, compiled (loop/lower_ml_linear.cpp,
// loop/lower_ml.cpp) through the JIT against the interpreter, with no fallback: Scaler (one
// offset, per-feature scales, integer input), Normalizer (MAX / L1 / L2, a zero row), Imputer
// (NaN and a value replaced; integers), LinearRegressor (one target, several under each post
// transform), LinearClassifier (several classes, one row with two labels, one row with other
// labels: the literal 0 / 1) and TreeEnsembleClassifier (three classes with base values, the
// binary case with positive weights and with negative ones under LOGISTIC, two classes both
// reached with two base values or none, leaves that give one class only), SVMRegressor (RBF,
// polynomial and sigmoid kernels, one_class, linear without supports) and SVMClassifier
// (LIBLINEAR with three and two classes, LIBSVM's votes, Platt probabilities, two classes),
// OneHotEncoder (an unknown category as zeros, or the runtime's error); and an artifact with a
// symbolic batch, the ops per row.
#include "interp/interpreter.h"
#include "jit_check.h"
#include "runtime/artifact.h"
#include "shared_models.h"
#include "support/file.h"

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

// A float list of n values (a fixed pseudo-random pattern in [-1, 1)) for the SVM attributes.
std::string floats(int n, int seed) {
  std::string r = "[";
  for (int i = 0; i < n; ++i)
    r += (i ? ", " : "") + std::to_string(double((i * 37 + seed * 11) % 29) / 14.5 - 1.0);
  return r + "]";
}

TEST(JitMl, SvmModelsMatchTheInterpreter) {
  const Tensor x = values(DType::F32, {5, 3}, kRows);
  const std::string rbf = "kernel_type = \"RBF\", kernel_params = [0.3, 0.0, 3.0]",
                    poly = "kernel_type = \"POLY\", kernel_params = [0.5, 1.0, 2.0]",
                    sigmoid = "kernel_type = \"SIGMOID\", kernel_params = [0.2, -0.5, 3.0]";
  for (const std::string& kern : {rbf, poly, sigmoid}) {
    check("f32[5,3]", "SVMRegressor",
          kern + ", n_supports = 4, support_vectors = " + floats(12, 1) +
              ", coefficients = " + floats(4, 2) + ", rho = [0.25]",
          "f32[5,1]", x, kern.c_str());
    check("f32[5,3]", "SVMRegressor",
          kern + ", n_supports = 4, one_class = 1, support_vectors = " + floats(12, 3) +
              ", coefficients = " + floats(4, 4) + ", rho = [-0.1]",
          "f32[5,1]", x, "one class");
  }
  check("f64[5,3]", "SVMRegressor", "coefficients = [0.5, -1.0, 2.0], rho = [0.25]", "f32[5,1]",
        values(DType::F64, {5, 3}, kRows), "linear, no supports");
  // LIBLINEAR: a row per class; two classes with positive coefficients (the 0.5 threshold).
  check("f32[5,3]", "SVMClassifier",
        "coefficients = " + floats(9, 5) +
            ", rho = [0.1], classlabels_ints = [1, 2, 3], post_transform = \"SOFTMAX\"",
        "i64[5], f32[5,3]", x, "liblinear, three classes");
  check("f32[5,3]", "SVMClassifier",
        "coefficients = [0.5, 0.25, 0.0, 0.1, 0.75, 0.3], rho = [0.05], classlabels_ints = [4, 9]",
        "i64[5], f32[5,2]", x, "liblinear, two classes");
  // LIBSVM one-vs-one: three classes (votes), with Platt probabilities, two classes under NONE
  // ([-v, v]) and LOGISTIC ([1 - v, v]).
  const std::string three = ", vectors_per_class = [2, 1, 2], support_vectors = " + floats(15, 6) +
                            ", coefficients = " + floats(10, 7) +
                            ", rho = [0.1, -0.2, 0.05], classlabels_ints = [0, 1, 2]";
  for (const std::string& kern : {rbf, poly}) {
    check("f32[5,3]", "SVMClassifier", kern + three, "i64[5], f32[5,3]", x, "libsvm, votes");
    check("f32[5,3]", "SVMClassifier",
          kern + three + ", prob_a = [-1.5, -0.75, -2.0], prob_b = [0.1, -0.2, 0.3]",
          "i64[5], f32[5,3]", x, "libsvm, probabilities");
  }
  for (const char* pt : {"NONE", "LOGISTIC"})
    check("f32[5,3]", "SVMClassifier",
          rbf + ", vectors_per_class = [2, 2], support_vectors = " + floats(12, 8) +
              ", coefficients = " + floats(4, 9) +
              ", rho = [0.15], classlabels_ints = [3, 7], post_transform = \"" + pt + "\"",
          "i64[5], f32[5,2]", x, pt);
}

// OneHotEncoder of integer and float categories (a repeated category: its first position), an
// unknown one as zeros, or (zeros = 0) the runtime's error.
TEST(JitMl, OneHotEncoderMatchesTheInterpreter) {
  const std::string cats = "cats_int64s = [3, 1, 4, 1, 5]";
  check("i64[4,2]", "OneHotEncoder", cats + ", zeros = 1", "f32[4,2,5]",
        values(DType::I64, {4, 2}, {1, 3, 9, 5, 4, 1, 0, 3}), "ints, unknown ones");
  check("f32[6]", "OneHotEncoder", cats + ", zeros = 0", "f32[6,5]",
        values(DType::F32, {6}, {1, 3, 5, 5, 4, 1}), "floats, all known");
  Model m = parseWithShapes("graph @g(%x: i64[3]) {\n  %y = ai.onnx.ml.OneHotEncoder(%x) {" + cats +
                            ", zeros = 0} : f32[3,5]\n  return %y\n}\n");
  runtime::JitExecutable exe(*m.graph);
  EXPECT_EQ(exe.stats().fallback, 0);
  try {
    exe.run({RValue::of(values(DType::I64, {3}, {1, 7, 3}))});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("value -1 at index 1"), std::string::npos) << e.what();
  }
}

// Through `aicc compile` with the batch symbolic (1..8): the ml ops compute each row alone
// (OpDef::perSample when X has rows), so the artifact compiles them per sample, no fallback,
// and matches the interpreter at batches 1, 3 and 8.
TEST(JitMl, ArtifactsWithASymbolicBatchCompilePerRow) {
  const std::string tree =
      forest("[0, 1, 1, 2, 0, 2, 2, 1]", "[1, 1, 2, 2, 1, 1, 2, 2]", "[0, 0, 0, 0, 1, 1, 1, 1]",
             "[0.5, 0.25, 1.0, 0.75, 0.125, 2.0, 0.5, 0.25]") +
      ", classlabels_int64s = [1, 2, 3], post_transform = \"SOFTMAX\"";
  const std::string ir = "graph @g(%x: f32[N,3]) {\n"
                         "  %s = ai.onnx.ml.Scaler(%x) {offset = [0.5], scale = [2.0, -1.0, 0.25]}"
                         " : f32[N,3]\n"
                         "  %n = ai.onnx.ml.Normalizer(%s) {norm = \"L2\"} : f32[N,3]\n"
                         "  %l, %p = ai.onnx.ml.TreeEnsembleClassifier(%n) {" +
                         tree + "} : i64[N], f32[N,3]\n  return %l, %p\n}\n";
  Model m = parseWithShapes(ir), ref = parseWithShapes(ir);
  const auto dir = test::compileArtifact(m, "aicc_ml_symbolic_batch", {{"N", 1, 8}});
  EXPECT_EQ(readFile((dir / "model.plan").string()).find("\nfallback "), std::string::npos);
  runtime::LoadedArtifact art(dir.string());
  for (int64_t n : {1, 3, 8}) {
    const std::vector<RValue> in = {RValue::of(values(DType::F32, {n, 3}, kRows))};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {1e-6, 1e-7});
  }
}

} // namespace
} // namespace aicc
