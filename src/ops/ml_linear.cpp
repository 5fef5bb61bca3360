// LinearClassifier and LinearRegressor: scores = X * coefficients^T + intercepts, then the
// post-transform; the classifier also picks a label. Binary details follow ONNX Runtime.
#include "ops/ml.h"

namespace aicc {

Linear linearModel(const Node& n, int64_t features, int64_t rowsHint) {
  Linear m;
  m.coef = floatsOrTensor(n, "coefficients");
  m.intercepts = floatsOrTensor(n, "intercepts", false);
  const int64_t total = static_cast<int64_t>(m.coef.size());
  m.rows = rowsHint > 0 ? rowsHint : static_cast<int64_t>(m.intercepts.size());
  if (m.rows <= 0 && features > 0) m.rows = total / features;
  AICC_CHECK(m.rows > 0 && total == m.rows * features,
             "coefficients has {} entries, not {} rows of {} features", total, m.rows, features);
  AICC_CHECK(m.intercepts.empty() || static_cast<int64_t>(m.intercepts.size()) == m.rows,
             "intercepts has {} entries for {} coefficient rows", m.intercepts.size(), m.rows);
  return m;
}

// One coefficient row with two labels: [1 - s, s]; the label is labels[1] when s > 0.
int64_t classifierRows(const Node& n, const ClassLabels& labels) {
  const std::vector<double> icpt = floatsOrTensor(n, "intercepts", false);
  if (!icpt.empty()) return static_cast<int64_t>(icpt.size());
  return static_cast<int64_t>(labels.size() == 2 ? 1 : labels.size());
}

int64_t classifierColumns(int64_t rows, const ClassLabels& labels, PostTransform p) {
  return rows == 1 && labels.size() == 2 && p != PostTransform::Probit ? 2 : rows;
}

namespace {

// Scores of row r: one per coefficient row.
std::vector<double> linearScores(const Linear& m, const Tensor& x, int64_t r, int64_t features) {
  std::vector<double> s(static_cast<size_t>(m.rows));
  for (int64_t k = 0; k < m.rows; ++k) {
    double acc = m.intercepts.empty() ? 0.0 : m.intercepts[static_cast<size_t>(k)];
    for (int64_t f = 0; f < features; ++f)
      acc += static_cast<double>(static_cast<float>(x.getF64(r * features + f))) *
             m.coef[static_cast<size_t>(k * features + f)];
    s[static_cast<size_t>(k)] = acc;
  }
  return s;
}

void requireNumeric(const KernelCtx& c) {
  requireDType(c, 0, {DType::F32, DType::F64, DType::I64, DType::I32});
}

// ---- LinearClassifier ---------------------------------------------------------------------------

std::vector<RValue> linearClassifierKernel(KernelCtx& c) {
  requireNumeric(c);
  const Tensor& x = c.in(0);
  const Rows rows = rowsOf(x);
  ClassLabels labels = classLabels(c.node, "classlabels_ints");
  const Linear m = linearModel(c.node, rows.features, classifierRows(c.node, labels));
  const PostTransform p = postTransformAttr(c.node);
  AICC_CHECK(m.rows == 1 || static_cast<int64_t>(labels.size()) >= m.rows,
             "{} coefficient rows but only {} class labels", m.rows, labels.size());
  const bool binary = m.rows == 1;
  const int64_t cols = classifierColumns(m.rows, labels, p);
  if (binary && labels.size() != 2) // one score and no pair of labels: 1 or 0
    labels = literalBinaryLabels(labels.isString());
  Tensor z(DType::F32, {rows.n, cols});
  std::vector<int64_t> best(static_cast<size_t>(rows.n));
  for (int64_t r = 0; r < rows.n; ++r) {
    std::vector<double> s = linearScores(m, x, r, rows.features);
    // Scores are float in ONNX Runtime: compare and transform the rounded values.
    for (double& v : s) v = static_cast<float>(v);
    size_t k = 0;
    for (size_t j = 1; j < s.size(); ++j)
      if (s[j] > s[k]) k = j;
    best[static_cast<size_t>(r)] = binary ? (s[0] > 0 ? 1 : 0) : static_cast<int64_t>(k);
    const std::vector<double> out =
        finishScores(s, p, binary && cols == 2 ? SecondClass::Complement : SecondClass::None);
    for (int64_t j = 0; j < cols; ++j) z.setF64(r * cols + j, out[static_cast<size_t>(j)]);
  }
  return {RValue::of(labelTensor(labels, best)), RValue::of(z)};
}

void inferLinearClassifier(InferCtx& c) {
  const ClassLabels labels = classLabels(c.node, "classlabels_ints");
  const int64_t rows = classifierRows(c.node, labels);
  const Dim n = rowsDimOf(c);
  c.setTensor(0, labels.isString() ? DType::String : DType::I64, Shape{n});
  c.setTensor(1, DType::F32,
              Shape{n, Dim::known(classifierColumns(rows, labels, postTransformAttr(c.node)))});
}

// ---- LinearRegressor ----------------------------------------------------------------------------

std::vector<RValue> linearRegressorKernel(KernelCtx& c) {
  requireNumeric(c);
  const Tensor& x = c.in(0);
  const Rows rows = rowsOf(x);
  const int64_t targets = c.node.attrInt("targets");
  AICC_CHECK(targets >= 1, "targets must be positive, got {}", targets);
  const Linear m = linearModel(c.node, rows.features, targets);
  const PostTransform p = postTransformAttr(c.node);
  Tensor y(DType::F32, {rows.n, targets});
  for (int64_t r = 0; r < rows.n; ++r) {
    const std::vector<double> s =
        finishScores(linearScores(m, x, r, rows.features), p, SecondClass::None);
    for (int64_t t = 0; t < targets; ++t) y.setF64(r * targets + t, s[static_cast<size_t>(t)]);
  }
  return {RValue::of(y)};
}

void inferLinearRegressor(InferCtx& c) {
  c.setTensor(0, DType::F32, Shape{rowsDimOf(c), Dim::known(c.node.attrInt("targets"))});
}

} // namespace

void registerMlLinearOps(OpRegistry& r) {
  r.op("LinearClassifier", kMlDomain)
      .perSample(perRow)
      .since(1)
      .inputs(1, 1)
      .outputs(2, 2)
      .attr("coefficients", Attribute::Kind::Floats, true)
      .attr("intercepts", Attribute::Kind::Floats)
      .attr("classlabels_ints", Attribute::Kind::Ints)
      .attr("classlabels_strings", Attribute::Kind::Strings)
      .attrInt("multi_class", 0)
      .attrString("post_transform", "NONE")
      .infer(inferLinearClassifier)
      .kernel(linearClassifierKernel);
  r.op("LinearRegressor", kMlDomain)
      .perSample(perRow)
      .since(1)
      .inputs(1, 1)
      .attr("coefficients", Attribute::Kind::Floats)
      .attr("intercepts", Attribute::Kind::Floats)
      .attrInt("targets", 1)
      .attrString("post_transform", "NONE")
      .infer(inferLinearRegressor)
      .kernel(linearRegressorKernel);
}

} // namespace aicc
