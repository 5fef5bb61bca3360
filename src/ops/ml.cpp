// ai.onnx.ml ops: LabelEncoder, ArrayFeatureExtractor, Binarizer; the score helpers of the
// classifiers and regressors (ops/ml.h).
#include "ops/ml.h"

#include <cmath>
#include <limits>
#include <map>

namespace aicc {
namespace {

// ---- LabelEncoder ------------------------------------------------------------------------------

// The keys or values of a LabelEncoder as a 1-D tensor, from whichever of the `<prefix>_tensor`,
// `<prefix>_strings`, `<prefix>_int64s`, `<prefix>_floats` attributes is given (exactly one).
Tensor labelTable(const Node& n, const std::string& prefix) {
  std::vector<Tensor> found;
  if (const Attribute* a = n.attr(prefix + "_tensor")) found.push_back(std::get<Tensor>(a->v));
  if (const Attribute* a = n.attr(prefix + "_strings")) {
    const auto& v = std::get<std::vector<std::string>>(a->v);
    Tensor t(DType::String, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.strings()[i] = v[i];
    found.push_back(t);
  }
  if (const Attribute* a = n.attr(prefix + "_int64s"))
    found.push_back(Tensor::fromI64(std::get<std::vector<int64_t>>(a->v)));
  if (const Attribute* a = n.attr(prefix + "_floats"))
    found.push_back(Tensor::fromF32(std::get<std::vector<float>>(a->v)));
  AICC_CHECK(found.size() == 1,
             "exactly one of the attributes {0}_tensor, {0}_strings, "
             "{0}_int64s, {0}_floats must be given, found {1}",
             prefix, found.size());
  static const DType allowed[] = {DType::String, DType::I64, DType::F32,
                                  DType::I32,    DType::I16, DType::F64};
  DType dt = found[0].dtype();
  AICC_CHECK(std::find(std::begin(allowed), std::end(allowed), dt) != std::end(allowed),
             "{} has unsupported element type {}", prefix, dtypeName(dt));
  return found[0].reshaped({found[0].numel()});
}

// The value used for keys that are not in the table: default_tensor, else the default_*
// attribute of the values' kind.
Tensor labelDefault(const Node& n, DType dt) {
  if (const Attribute* a = n.attr("default_tensor")) {
    const Tensor& d = std::get<Tensor>(a->v);
    AICC_CHECK(d.dtype() == dt && d.numel() == 1,
               "default_tensor must hold one {} element, got {} {}", dtypeName(dt),
               dtypeName(d.dtype()), formatDims(d.shape()));
    return d.reshaped({1});
  }
  Tensor d(dt, {1});
  if (dt == DType::String)
    d.strings()[0] = n.attrString("default_string");
  else if (isFloat(dt))
    d.setF64(0, n.attrFloat("default_float"));
  else
    d.setI64(0, n.attrInt("default_int64"));
  return d;
}

void copyElem(Tensor& dst, int64_t di, const Tensor& src, int64_t si) {
  if (dst.dtype() == DType::String)
    dst.strings()[di] = src.strings()[si];
  else if (isFloat(dst.dtype()))
    dst.setF64(di, src.getF64(si));
  else
    dst.setI64(di, src.getI64(si));
}

std::vector<RValue> labelEncoderKernel(KernelCtx& c) {
  const Tensor& x = c.in(0);
  const Tensor keys = labelTable(c.node, "keys");
  const Tensor values = labelTable(c.node, "values");
  AICC_CHECK(keys.numel() == values.numel(), "{} keys but {} values", keys.numel(), values.numel());
  AICC_CHECK(x.dtype() == keys.dtype(), "input is {} but the keys are {}", dtypeName(x.dtype()),
             dtypeName(keys.dtype()));
  const Tensor dflt = labelDefault(c.node, values.dtype());
  Tensor y(values.dtype(), x.shape());
  // Later duplicates of a key do not override the first one.
  if (keys.dtype() == DType::String) {
    std::map<std::string, int64_t> table;
    for (int64_t i = 0; i < keys.numel(); ++i) table.emplace(keys.strings()[i], i);
    for (int64_t i = 0; i < x.numel(); ++i) {
      auto it = table.find(x.strings()[i]);
      it == table.end() ? copyElem(y, i, dflt, 0) : copyElem(y, i, values, it->second);
    }
  } else if (isFloat(keys.dtype())) {
    std::map<double, int64_t> table;
    int64_t nanKey = -1; // a NaN key matches NaN inputs
    for (int64_t i = 0; i < keys.numel(); ++i) {
      double k = keys.getF64(i);
      if (std::isnan(k))
        nanKey = nanKey < 0 ? i : nanKey;
      else
        table.emplace(k, i);
    }
    for (int64_t i = 0; i < x.numel(); ++i) {
      double v = x.getF64(i);
      int64_t at = -1;
      if (std::isnan(v))
        at = nanKey;
      else if (auto it = table.find(v); it != table.end())
        at = it->second;
      at < 0 ? copyElem(y, i, dflt, 0) : copyElem(y, i, values, at);
    }
  } else {
    std::map<int64_t, int64_t> table;
    for (int64_t i = 0; i < keys.numel(); ++i) table.emplace(keys.getI64(i), i);
    for (int64_t i = 0; i < x.numel(); ++i) {
      auto it = table.find(x.getI64(i));
      it == table.end() ? copyElem(y, i, dflt, 0) : copyElem(y, i, values, it->second);
    }
  }
  return {RValue::of(y)};
}

void inferLabelEncoder(InferCtx& c) {
  const Tensor keys = labelTable(c.node, "keys");
  const Tensor values = labelTable(c.node, "values");
  DType t = c.inDType(0);
  AICC_CHECK(t == DType::Undefined || t == keys.dtype(), "input is {} but the keys are {}",
             dtypeName(t), dtypeName(keys.dtype()));
  c.setTensor(0, values.dtype(), c.inShape(0));
}

// LabelEncoder-1 mapped strings to their index in classes_strings, or indices back to strings.
void upgradeLabelEncoder1(ImportCtx& c) {
  auto it = c.node.attrs.find("classes_strings");
  std::vector<std::string> classes;
  if (it != c.node.attrs.end()) {
    classes = std::get<std::vector<std::string>>(it->second.v);
    c.node.attrs.erase(it);
  }
  std::vector<int64_t> ids(classes.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  DType t = c.node.hasInput(0) ? c.node.inputs[0]->type.dtype : DType::Undefined;
  if (t == DType::String) {
    c.node.attrs["keys_strings"] = Attribute{classes};
    c.node.attrs["values_int64s"] = Attribute{ids};
  } else if (t == DType::I64) {
    c.node.attrs["keys_int64s"] = Attribute{ids};
    c.node.attrs["values_strings"] = Attribute{classes};
  } else {
    fail("LabelEncoder-1 needs its input's element type (string or int64) to be known, got {}",
         dtypeName(t));
  }
}

// ---- ArrayFeatureExtractor ---------------------------------------------------------------------

std::vector<RValue> arrayFeatureExtractorKernel(KernelCtx& c) {
  const Tensor& x = c.in(0);
  requireDType(c, 0, {DType::F32, DType::F64, DType::I64, DType::I32, DType::String});
  requireDType(c, 1, {DType::I64});
  AICC_CHECK(x.rank() >= 1, "input X must have rank >= 1");
  const std::vector<int64_t> idx = c.in(1).toI64Vector();
  const int64_t last = x.dim(x.rank() - 1), k = static_cast<int64_t>(idx.size());
  for (int64_t v : idx)
    AICC_CHECK(v >= 0 && v < last, "index {} is out of range for a last dimension of {}", v, last);
  Dims ys = x.rank() == 1 ? Dims{1, k} : x.shape();
  ys.back() = k;
  Tensor y(x.dtype(), ys);
  const int64_t rows = last == 0 ? 0 : x.numel() / last;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j)
      copyElem(y, r * k + j, x, r * last + idx[static_cast<size_t>(j)]);
  return {RValue::of(y)};
}

void inferArrayFeatureExtractor(InferCtx& c) {
  const auto &xs = c.inShape(0), &is = c.inShape(1);
  if (!xs) return c.setTensor(0, c.inDType(0), std::nullopt);
  AICC_CHECK(!xs->empty(), "input X must have rank >= 1");
  Dim k;
  if (is) {
    if (auto d = toDims(*is))
      k = Dim::known(checkedNumel(*d));
    else if (is->size() == 1)
      k = (*is)[0];
  }
  Shape ys = xs->size() == 1 ? Shape{Dim::known(1), k} : *xs;
  ys.back() = k;
  c.setTensor(0, c.inDType(0), ys);
}

// ---- Binarizer ---------------------------------------------------------------------------------

std::vector<RValue> binarizerKernel(KernelCtx& c) {
  requireDType(c, 0, {DType::F32, DType::F64, DType::I64, DType::I32});
  const double t = c.node.attrFloat("threshold");
  return {RValue::of(mapUnary(c.in(0), [t](double v) { return v > t ? 1.0 : 0.0; }))};
}

} // namespace

// ---- Scores of the classifiers and regressors ---------------------------------------------------

namespace {

// Inverse of the error function: a rational first guess refined by Newton steps.
double erfInv(double y) {
  if (y <= -1) return -std::numeric_limits<double>::infinity();
  if (y >= 1) return std::numeric_limits<double>::infinity();
  const double a = 0.147, l = std::log(1 - y * y), t = 2 / (M_PI * a) + l / 2;
  double x = std::copysign(std::sqrt(std::sqrt(t * t - l / a) - t), y);
  for (int k = 0; k < 3; ++k) x -= (std::erf(x) - y) / (2 / std::sqrt(M_PI) * std::exp(-x * x));
  return x;
}

} // namespace

void postTransform(PostTransform p, double* v, int64_t n) {
  if (p == PostTransform::None) return;
  if (p == PostTransform::Logistic) {
    for (int64_t i = 0; i < n; ++i) v[i] = logistic(v[i]);
  } else if (p == PostTransform::Probit) {
    for (int64_t i = 0; i < n; ++i) v[i] = std::sqrt(2.0) * erfInv(2 * v[i] - 1);
  } else { // softmax; SOFTMAX_ZERO leaves zeros at zero
    const bool zero = p == PostTransform::SoftmaxZero;
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t i = 0; i < n; ++i) mx = std::max(mx, v[i]);
    for (int64_t i = 0; i < n; ++i) sum += v[i] = (zero && v[i] == 0) ? 0 : std::exp(v[i] - mx);
    for (int64_t i = 0; i < n; ++i) v[i] = sum > 0 ? v[i] / sum : 0;
  }
}

double logistic(double v) {
  const double e = 1 / (1 + std::exp(-std::abs(v))); // no overflow for large |v|
  return v < 0 ? 1 - e : e;
}

PostTransform postTransformAttr(const Node& n) {
  static const std::pair<const char*, PostTransform> names[] = {
      {"NONE", PostTransform::None},
      {"SOFTMAX", PostTransform::Softmax},
      {"LOGISTIC", PostTransform::Logistic},
      {"SOFTMAX_ZERO", PostTransform::SoftmaxZero},
      {"PROBIT", PostTransform::Probit}};
  const std::string s = n.attrString("post_transform");
  for (auto [name, p] : names)
    if (s == name) return p;
  fail("post_transform must be NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT, got '{}'", s);
}

std::vector<double> finishScores(std::vector<double> s, PostTransform p, SecondClass second) {
  if (s.size() != 1 || p == PostTransform::Probit) {
    postTransform(p, s.data(), static_cast<int64_t>(s.size()));
    return s;
  }
  const double v = s[0];
  switch (second) {
  case SecondClass::None:
    return s;
  case SecondClass::Complement:
    return {1 - v, v};
  case SecondClass::Negate:
    if (p == PostTransform::Logistic) return {logistic(-v), logistic(v)};
    return {-v, v};
  }
  return s;
}

bool perRow(const Node& n) {
  const Value* x = n.inputs.empty() ? nullptr : n.inputs[0];
  return x && x->type.isTensor() && x->type.shape && x->type.shape->size() >= 2;
}

ClassLabels classLabels(const Node& n, const std::string& intsName) {
  ClassLabels l;
  if (const Attribute* a = n.attr("classlabels_strings"))
    l.strings = std::get<std::vector<std::string>>(a->v);
  if (const Attribute* a = n.attr(intsName)) {
    AICC_CHECK(l.strings.empty(), "only one of classlabels_strings and {} may be given", intsName);
    l.ints = std::get<std::vector<int64_t>>(a->v);
  }
  AICC_CHECK(l.size() > 0, "one of classlabels_strings and {} is required (and not empty)",
             intsName);
  return l;
}

ClassLabels literalBinaryLabels(bool strings) {
  return strings ? ClassLabels{{"0", "1"}, {}} : ClassLabels{{}, {0, 1}};
}

Tensor labelTensor(const ClassLabels& labels, const std::vector<int64_t>& classIndex) {
  const int64_t rows = static_cast<int64_t>(classIndex.size());
  Tensor y(labels.isString() ? DType::String : DType::I64, {rows});
  for (int64_t r = 0; r < rows; ++r) {
    const size_t k = static_cast<size_t>(classIndex[static_cast<size_t>(r)]);
    AICC_CHECK(k < labels.size(), "class index {} is out of range for {} class labels", k,
               labels.size());
    if (labels.isString())
      y.strings()[r] = labels.strings[k];
    else
      y.data<int64_t>()[r] = labels.ints[k];
  }
  return y;
}

std::vector<double> floatsOrTensor(const Node& n, const std::string& name, bool required) {
  if (const Attribute* a = n.attr(name)) {
    const auto& v = std::get<std::vector<float>>(a->v);
    return {v.begin(), v.end()};
  }
  if (const Attribute* a = n.attr(name + "_as_tensor")) return std::get<Tensor>(a->v).toF64Vector();
  AICC_CHECK(!required, "attribute '{}' (or '{}_as_tensor') is required", name, name);
  return {};
}

Rows rowsOf(const Tensor& x) {
  AICC_CHECK(x.rank() == 1 || x.rank() == 2, "input X must have shape [N, F] or [F], got {}",
             formatDims(x.shape()));
  if (x.rank() == 1) return {1, x.dim(0)};
  return {x.dim(0), x.dim(1)};
}

Dim rowsDimOf(InferCtx& c) {
  const auto& s = c.inShape(0);
  if (!s) return Dim{};
  AICC_CHECK(s->size() == 1 || s->size() == 2, "input X must have shape [N, F] or [F], got {}",
             formatShape(*s));
  return s->size() == 1 ? Dim::known(1) : (*s)[0];
}

void registerMlOps(OpRegistry& r) {
  r.op("LabelEncoder", kMlDomain)
      .since(1)
      .inputs(1, 1)
      .attr("default_tensor", Attribute::Kind::Tensor)
      .attrInt("default_int64", -1)
      .attrFloat("default_float", -0.0f)
      .attrString("default_string", "_Unused")
      .attr("keys_tensor", Attribute::Kind::Tensor)
      .attr("keys_strings", Attribute::Kind::Strings)
      .attr("keys_int64s", Attribute::Kind::Ints)
      .attr("keys_floats", Attribute::Kind::Floats)
      .attr("values_tensor", Attribute::Kind::Tensor)
      .attr("values_strings", Attribute::Kind::Strings)
      .attr("values_int64s", Attribute::Kind::Ints)
      .attr("values_floats", Attribute::Kind::Floats)
      .infer(inferLabelEncoder)
      .kernel(labelEncoderKernel)
      .upgrade(1, 1, upgradeLabelEncoder1,
               {{"classes_strings", Attribute::Kind::Strings, std::nullopt, false}});
  r.op("ArrayFeatureExtractor", kMlDomain)
      .perSample(perRow)
      .since(1)
      .inputs(2, 2)
      .infer(inferArrayFeatureExtractor)
      .kernel(arrayFeatureExtractorKernel);
  r.op("Binarizer", kMlDomain)
      .since(1)
      .inputs(1, 1)
      .attrFloat("threshold", 0.0f)
      .props(kElementwise)
      .infer(inferSameAsInput0)
      .kernel(binarizerKernel);
  registerMlTreeOps(r);
  registerMlTreeLegacyOps(r);
  registerMlTransformOps(r);
  registerMlEncodeOps(r);
  registerMlLinearOps(r);
  registerMlSvmOps(r);
  registerMlMapOps(r);
}

} // namespace aicc
