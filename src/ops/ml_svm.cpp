// SVMClassifier and SVMRegressor: support-vector machines (LIBSVM's one-vs-one classifiers with
// optional Platt probabilities) and linear ones (LIBLINEAR). Binary details follow ONNX Runtime,
// which computes in float: the kernels and probabilities are computed in float here too.
#include "ops/ml.h"

#include <cmath>

namespace aicc {
namespace {

std::vector<float> floatsAttr(const Node& n, const std::string& name) {
  const Attribute* a = n.attr(name);
  return a ? std::get<std::vector<float>>(a->v) : std::vector<float>{};
}

} // namespace

float SvmKernel::operator()(const float* x, const float* v, int64_t n) const {
  float s = 0;
  if (type == SvmKernel::Rbf) {
    for (int64_t i = 0; i < n; ++i) s += (x[i] - v[i]) * (x[i] - v[i]);
    return std::exp(-gamma * s);
  }
  for (int64_t i = 0; i < n; ++i) s += x[i] * v[i];
  switch (type) {
  case SvmKernel::Poly:
    return std::pow(gamma * s + coef0, degree);
  case SvmKernel::Sigmoid:
    return std::tanh(gamma * s + coef0);
  default:
    return s;
  }
}

SvmKernel svmKernel(const Node& n) {
  static const std::pair<const char*, SvmKernel::Type> names[] = {{"LINEAR", SvmKernel::Linear},
                                                                  {"POLY", SvmKernel::Poly},
                                                                  {"RBF", SvmKernel::Rbf},
                                                                  {"SIGMOID", SvmKernel::Sigmoid}};
  SvmKernel k;
  const std::string t = n.attrString("kernel_type");
  bool found = false;
  for (auto [name, v] : names)
    if (t == name) k.type = v, found = true;
  AICC_CHECK(found, "kernel_type must be LINEAR, POLY, RBF or SIGMOID, got '{}'", t);
  const std::vector<float> p = floatsAttr(n, "kernel_params");
  AICC_CHECK(p.empty() || p.size() == 3, "kernel_params must hold gamma, coef0, degree; got {}",
             p.size());
  if (!p.empty()) k.gamma = p[0], k.coef0 = p[1], k.degree = p[2];
  return k;
}

SvmClassifier parseSvmClassifier(const Node& n) {
  SvmClassifier m;
  m.labels = classLabels(n, "classlabels_ints");
  m.classes = static_cast<int64_t>(m.labels.size());
  m.kernel = svmKernel(n);
  m.coef = floatsAttr(n, "coefficients");
  m.rho = floatsAttr(n, "rho");
  m.probA = floatsAttr(n, "prob_a");
  m.probB = floatsAttr(n, "prob_b");
  m.vectors = floatsAttr(n, "support_vectors");
  m.perClass = n.attrInts("vectors_per_class", {});
  m.post = postTransformAttr(n);
  AICC_CHECK(!m.coef.empty(), "attribute 'coefficients' is required");
  AICC_CHECK(!m.rho.empty(), "attribute 'rho' is required");
  AICC_CHECK(m.probA.size() == m.probB.size(), "prob_a has {} entries, prob_b {}", m.probA.size(),
             m.probB.size());
  for (int64_t v : m.perClass) {
    AICC_CHECK(v >= 0, "vectors_per_class has negative entry {}", v);
    m.start.push_back(m.nVectors);
    m.nVectors += v;
  }
  for (float c : m.coef) m.allPositive = m.allPositive && c >= 0;
  m.svc = m.nVectors > 0;
  if (m.svc) {
    AICC_CHECK(static_cast<int64_t>(m.perClass.size()) == m.classes,
               "vectors_per_class has {} entries for {} classes", m.perClass.size(), m.classes);
    AICC_CHECK(m.classes >= 2, "an SVM classifier needs two classes or more, got {}", m.classes);
    m.features = static_cast<int64_t>(m.vectors.size()) / m.nVectors;
    AICC_CHECK(m.features * m.nVectors == static_cast<int64_t>(m.vectors.size()),
               "support_vectors has {} entries, not a multiple of {} vectors", m.vectors.size(),
               m.nVectors);
    AICC_CHECK(static_cast<int64_t>(m.coef.size()) == (m.classes - 1) * m.nVectors,
               "coefficients has {} entries, expected {} (classes - 1) x {} (vectors)",
               m.coef.size(), m.classes - 1, m.nVectors);
    AICC_CHECK(static_cast<int64_t>(m.rho.size()) >= m.pairs(),
               "rho has {} entries for {} class pairs", m.rho.size(), m.pairs());
    AICC_CHECK(m.probA.empty() || static_cast<int64_t>(m.probA.size()) >= m.pairs(),
               "prob_a has {} entries for {} class pairs", m.probA.size(), m.pairs());
  } else {
    m.kernel.type = SvmKernel::Linear;
    m.features = static_cast<int64_t>(m.coef.size()) / m.classes;
    AICC_CHECK(m.features * m.classes == static_cast<int64_t>(m.coef.size()),
               "coefficients has {} entries, not a multiple of {} classes", m.coef.size(),
               m.classes);
  }
  return m;
}

SvmRegressor parseSvmRegressor(const Node& n) {
  SvmRegressor m;
  m.kernel = svmKernel(n);
  m.coef = floatsAttr(n, "coefficients");
  m.rho = floatsAttr(n, "rho");
  m.vectors = floatsAttr(n, "support_vectors");
  m.nSupports = n.attrInt("n_supports");
  AICC_CHECK(!m.coef.empty() && !m.rho.empty(), "attributes 'coefficients' and 'rho' are required");
  m.features = static_cast<int64_t>(m.coef.size());
  if (m.nSupports > 0) {
    m.features = static_cast<int64_t>(m.vectors.size()) / m.nSupports;
    AICC_CHECK(m.features * m.nSupports == static_cast<int64_t>(m.vectors.size()),
               "support_vectors has {} entries, not a multiple of n_supports {}", m.vectors.size(),
               m.nSupports);
    AICC_CHECK(static_cast<int64_t>(m.coef.size()) >= m.nSupports,
               "coefficients has {} entries for {} support vectors", m.coef.size(), m.nSupports);
  } else {
    m.kernel.type = SvmKernel::Linear;
  }
  m.oneClass = n.attrInt("one_class") != 0;
  m.post = postTransformAttr(n);
  return m;
}

namespace {

// The input as float rows (ONNX Runtime casts every input type to float).
std::vector<float> floatRows(const KernelCtx& c, const Rows& rows, int64_t features) {
  requireDType(c, 0, {DType::F32, DType::F64, DType::I64, DType::I32});
  AICC_CHECK(rows.features == features, "input X has {} features, the model {}", rows.features,
             features);
  const Tensor& x = c.in(0);
  std::vector<float> v(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(x.getF64(i));
  return v;
}

// Pairwise coupling of one-vs-one probabilities r[i][j] into class probabilities (Wu, Lin and
// Weng 2004, method 2, as in LIBSVM), in float like ONNX Runtime.
std::vector<float> coupleProbabilities(int64_t k, const std::vector<float>& r) {
  const size_t K = static_cast<size_t>(k);
  std::vector<float> q(K * K, 0.f), qp(K), p(K, 1.f / static_cast<float>(k));
  for (size_t i = 0; i < K; ++i)
    for (size_t j = 0; j < K; ++j) {
      if (j == i) continue;
      q[i * K + i] += r[j * K + i] * r[j * K + i];
      q[i * K + j] = j < i ? q[j * K + i] : -r[j * K + i] * r[i * K + j];
    }
  const float eps = 0.005f / static_cast<float>(k);
  for (int iter = 0; iter < 100; ++iter) {
    float pqp = 0;
    for (size_t i = 0; i < K; ++i) {
      qp[i] = 0;
      for (size_t j = 0; j < K; ++j) qp[i] += q[i * K + j] * p[j];
      pqp += p[i] * qp[i];
    }
    float maxErr = 0;
    for (size_t i = 0; i < K; ++i) maxErr = std::max(maxErr, std::fabs(qp[i] - pqp));
    if (maxErr < eps) break;
    for (size_t i = 0; i < K; ++i) {
      const float diff = (-qp[i] + pqp) / q[i * K + i];
      p[i] += diff;
      pqp = (pqp + diff * (diff * q[i * K + i] + 2 * qp[i])) / (1 + diff) / (1 + diff);
      for (size_t j = 0; j < K; ++j) {
        qp[j] = (qp[j] + diff * q[i * K + j]) / (1 + diff);
        p[j] /= (1 + diff);
      }
    }
  }
  return p;
}

// ---- SVMClassifier ------------------------------------------------------------------------------

// The class of a two-class model (ONNX Runtime's rule, with the literal labels 1 / 0 when
// there are not two labels).
int64_t binaryClass(const SvmClassifier& m, float maxWeight, int64_t maxClass) {
  if (m.classes != 2) return maxWeight > 0 ? 1 : 0;
  if (m.proba()) return maxClass;
  if (m.allPositive ? maxWeight >= 0.5f : maxWeight > 0) return 1;
  return maxClass;
}

std::vector<RValue> svmClassifierKernel(KernelCtx& c) {
  const SvmClassifier m = parseSvmClassifier(c.node);
  const Rows rows = rowsOf(c.in(0));
  const std::vector<float> x = floatRows(c, rows, m.features);
  const int64_t cols = m.columns(), K = m.classes;
  Tensor z(DType::F32, {rows.n, cols});
  std::vector<int64_t> best(static_cast<size_t>(rows.n));
  std::vector<float> kern(static_cast<size_t>(m.nVectors));
  for (int64_t r = 0; r < rows.n; ++r) {
    const float* xr = x.data() + r * m.features;
    std::vector<float> scores;
    std::vector<int64_t> votes(static_cast<size_t>(K), 0);
    if (!m.svc) {
      for (int64_t k = 0; k < K; ++k)
        scores.push_back(m.kernel(xr, m.coef.data() + k * m.features, m.features) + m.rho[0]);
    } else {
      for (int64_t v = 0; v < m.nVectors; ++v)
        kern[static_cast<size_t>(v)] = m.kernel(xr, m.vectors.data() + v * m.features, m.features);
      size_t pair = 0;
      for (int64_t i = 0; i < K - 1; ++i)
        for (int64_t j = i + 1; j < K; ++j, ++pair) {
          // Class i's vectors use coefficient row j - 1, class j's row i.
          double sum = 0;
          auto add = [&](int64_t row, int64_t cls) {
            const int64_t s = m.start[static_cast<size_t>(cls)];
            for (int64_t v = 0; v < m.perClass[static_cast<size_t>(cls)]; ++v)
              sum += m.coef[static_cast<size_t>(row * m.nVectors + s + v)] *
                     kern[static_cast<size_t>(s + v)];
          };
          add(j - 1, i);
          add(i, j);
          sum += m.rho[pair];
          scores.push_back(static_cast<float>(sum));
          ++votes[static_cast<size_t>(sum > 0 ? i : j)];
        }
      if (m.proba()) {
        std::vector<float> pairwise(static_cast<size_t>(K * K), 0.f);
        size_t at = 0;
        for (int64_t i = 0; i < K - 1; ++i)
          for (int64_t j = i + 1; j < K; ++j, ++at) {
            const float v =
                1 - static_cast<float>(logistic(scores[at] * m.probA[at] + m.probB[at]));
            const float p = std::min(std::max(v, 1e-7f), 1 - 1e-7f);
            pairwise[static_cast<size_t>(i * K + j)] = p;
            pairwise[static_cast<size_t>(j * K + i)] = 1 - p;
          }
        scores = coupleProbabilities(K, pairwise);
      }
    }
    float maxWeight = 0;
    int64_t maxClass = 0;
    if (m.svc) {
      maxClass = std::max_element(votes.begin(), votes.end()) - votes.begin();
    } else {
      maxClass = std::max_element(scores.begin(), scores.end()) - scores.begin();
      maxWeight = scores[static_cast<size_t>(maxClass)];
    }
    best[static_cast<size_t>(r)] = m.pairs() == 1 ? binaryClass(m, maxWeight, maxClass) : maxClass;
    SecondClass second = SecondClass::None;
    if (m.svc && !m.proba() && K <= 2)
      second = m.post == PostTransform::None ? SecondClass::Negate : SecondClass::Complement;
    const std::vector<double> out =
        finishScores(std::vector<double>(scores.begin(), scores.end()), m.post, second);
    for (int64_t j = 0; j < cols && j < static_cast<int64_t>(out.size()); ++j)
      z.setF64(r * cols + j, out[static_cast<size_t>(j)]);
  }
  ClassLabels labels = m.labels;
  if (m.pairs() == 1 && m.classes != 2) labels = literalBinaryLabels(labels.isString());
  return {RValue::of(labelTensor(labels, best)), RValue::of(z)};
}

void inferSvmClassifier(InferCtx& c) {
  const SvmClassifier m = parseSvmClassifier(c.node);
  const Dim n = rowsDimOf(c);
  c.setTensor(0, m.labels.isString() ? DType::String : DType::I64, Shape{n});
  c.setTensor(1, DType::F32, Shape{n, Dim::known(m.columns())});
}

// ---- SVMRegressor -------------------------------------------------------------------------------

std::vector<RValue> svmRegressorKernel(KernelCtx& c) {
  const SvmRegressor m = parseSvmRegressor(c.node);
  const Rows rows = rowsOf(c.in(0));
  const std::vector<float> x = floatRows(c, rows, m.features);
  Tensor y(DType::F32, {rows.n, 1});
  for (int64_t r = 0; r < rows.n; ++r) {
    const float* xr = x.data() + r * m.features;
    double s = 0;
    if (m.nSupports > 0) {
      for (int64_t v = 0; v < m.nSupports; ++v)
        s += m.coef[static_cast<size_t>(v)] *
             m.kernel(xr, m.vectors.data() + v * m.features, m.features);
    } else {
      s = m.kernel(xr, m.coef.data(), m.features);
    }
    s += m.rho[0];
    if (m.oneClass) s = s > 0 ? 1 : -1;
    y.setF64(r, finishScores({static_cast<float>(s)}, m.post, SecondClass::None)[0]);
  }
  return {RValue::of(y)};
}

void inferSvmRegressor(InferCtx& c) {
  c.setTensor(0, DType::F32, Shape{rowsDimOf(c), Dim::known(1)});
}

} // namespace

void registerMlSvmOps(OpRegistry& r) {
  r.op("SVMClassifier", kMlDomain)
      .perSample(perRow)
      .since(1)
      .inputs(1, 1)
      .outputs(2, 2)
      .attr("classlabels_ints", Attribute::Kind::Ints)
      .attr("classlabels_strings", Attribute::Kind::Strings)
      .attr("coefficients", Attribute::Kind::Floats)
      .attr("kernel_params", Attribute::Kind::Floats)
      .attrString("kernel_type", "LINEAR")
      .attrString("post_transform", "NONE")
      .attr("prob_a", Attribute::Kind::Floats)
      .attr("prob_b", Attribute::Kind::Floats)
      .attr("rho", Attribute::Kind::Floats)
      .attr("support_vectors", Attribute::Kind::Floats)
      .attr("vectors_per_class", Attribute::Kind::Ints)
      .infer(inferSvmClassifier)
      .kernel(svmClassifierKernel);
  r.op("SVMRegressor", kMlDomain)
      .perSample(perRow)
      .since(1)
      .inputs(1, 1)
      .attr("coefficients", Attribute::Kind::Floats)
      .attr("kernel_params", Attribute::Kind::Floats)
      .attrString("kernel_type", "LINEAR")
      .attrInt("n_supports", 0)
      .attrInt("one_class", 0)
      .attrString("post_transform", "NONE")
      .attr("rho", Attribute::Kind::Floats)
      .attr("support_vectors", Attribute::Kind::Floats)
      .infer(inferSvmRegressor)
      .kernel(svmRegressorKernel);
}

} // namespace aicc
