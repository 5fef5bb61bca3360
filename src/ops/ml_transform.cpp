// Feature transforms of ai.onnx.ml: Scaler, Normalizer, Imputer, FeatureVectorizer.
#include "ops/ml.h"

#include <cmath>
#include <limits>

namespace aicc {
namespace {

void requireNumericInput(const KernelCtx& c, size_t i) {
  requireDType(c, i, {DType::F32, DType::F64, DType::I64, DType::I32});
}

// A per-feature parameter (one value for all features, or one per feature of the last axis).
double perFeature(const std::vector<float>& v, int64_t f) {
  return v.size() == 1 ? v[0] : v[static_cast<size_t>(f)];
}

void checkPerFeature(const std::vector<float>& v, const char* name, int64_t features) {
  AICC_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == features,
             "{} has {} entries; expected 1 or {} (the features)", name, v.size(), features);
}

int64_t lastDim(const Tensor& x) { return x.rank() == 0 ? 1 : x.dim(x.rank() - 1); }

// ---- Scaler ------------------------------------------------------------------------------------

std::vector<RValue> scalerKernel(KernelCtx& c) {
  requireNumericInput(c, 0);
  const Tensor& x = c.in(0);
  const std::vector<float> offset = c.node.attrFloats("offset"), scale = c.node.attrFloats("scale");
  const int64_t features = lastDim(x);
  checkPerFeature(offset, "offset", features);
  checkPerFeature(scale, "scale", features);
  Tensor y(DType::F32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t f = features ? i % features : 0;
    y.data<float>()[i] = static_cast<float>(
        (static_cast<float>(x.getF64(i)) - perFeature(offset, f)) * perFeature(scale, f));
  }
  return {RValue::of(y)};
}

void inferFloatSameShape(InferCtx& c) { c.setTensor(0, DType::F32, c.inShape(0)); }

// ---- Normalizer --------------------------------------------------------------------------------

std::vector<RValue> normalizerKernel(KernelCtx& c) {
  requireNumericInput(c, 0);
  const Tensor& x = c.in(0);
  AICC_CHECK(x.rank() == 1 || x.rank() == 2, "input X must have shape [N, C] or [C], got {}",
             formatDims(x.shape()));
  const std::string norm = c.node.attrString("norm");
  AICC_CHECK(norm == "MAX" || norm == "L1" || norm == "L2", "norm must be MAX, L1 or L2, got '{}'",
             norm);
  const int64_t cols = lastDim(x), rows = cols ? x.numel() / cols : 0;
  Tensor y(DType::F32, x.shape());
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j)
      row[static_cast<size_t>(j)] = static_cast<float>(x.getF64(r * cols + j));
    float d = 0;
    if (norm == "MAX") { // the largest value (not magnitude), as ONNX Runtime
      d = std::numeric_limits<float>::lowest();
      for (float v : row) d = std::max(d, v);
    } else if (norm == "L1") {
      for (float v : row) d += std::abs(v);
    } else {
      for (float v : row) d += v * v;
      d = std::sqrt(d);
    }
    for (int64_t j = 0; j < cols; ++j) {
      const float v = row[static_cast<size_t>(j)];
      y.data<float>()[r * cols + j] = d != 0 ? v / d : v;
    }
  }
  return {RValue::of(y)};
}

// ---- Imputer -----------------------------------------------------------------------------------

std::vector<RValue> imputerKernel(KernelCtx& c) {
  requireNumericInput(c, 0);
  const Tensor& x = c.in(0);
  const Node& n = c.node;
  const int64_t features = lastDim(x);
  Tensor y = x.clone();
  if (isFloat(x.dtype())) {
    const std::vector<float> values = n.attrFloats("imputed_value_floats");
    AICC_CHECK(!values.empty(), "imputed_value_floats is required for a {} input",
               dtypeName(x.dtype()));
    checkPerFeature(values, "imputed_value_floats", features);
    const float replaced = n.attrFloat("replaced_value_float");
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = x.getF64(i);
      if (std::isnan(replaced) ? std::isnan(v) : v == replaced)
        y.setF64(i, perFeature(values, features ? i % features : 0));
    }
  } else {
    const std::vector<int64_t> values = n.attrInts("imputed_value_int64s");
    AICC_CHECK(values.size() == 1 || static_cast<int64_t>(values.size()) == features,
               "imputed_value_int64s has {} entries; expected 1 or {} (the features)",
               values.size(), features);
    const int64_t replaced = n.attrInt("replaced_value_int64");
    for (int64_t i = 0; i < x.numel(); ++i)
      if (x.getI64(i) == replaced)
        y.setI64(i, values.size() == 1 ? values[0] : values[static_cast<size_t>(i % features)]);
  }
  return {RValue::of(y)};
}

// ---- FeatureVectorizer -------------------------------------------------------------------------

std::vector<RValue> featureVectorizerKernel(KernelCtx& c) {
  const std::vector<int64_t> dims = c.node.attrInts("inputdimensions");
  AICC_CHECK(dims.size() == c.numInputs(), "inputdimensions has {} entries for {} inputs",
             dims.size(), c.numInputs());
  int64_t total = 0, rows = -1;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    requireNumericInput(c, i);
    AICC_CHECK(dims[i] >= 0, "inputdimensions has negative entry {}", dims[i]);
    total += dims[i];
    const Tensor& x = c.in(i);
    const int64_t r = x.rank() <= 1 ? 1 : x.numel() / lastDim(x);
    AICC_CHECK(rows < 0 || r == rows, "input {} has {} rows, input 0 {}", i, r, rows);
    rows = r;
  }
  Tensor y(DType::F32, {rows, total});
  int64_t at = 0;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    const Tensor& x = c.in(i);
    const int64_t cols = x.rank() == 0 ? 1 : lastDim(x);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < dims[i]; ++j) // missing columns are 0, extra ones dropped
        y.data<float>()[r * total + at + j] =
            j < cols ? static_cast<float>(x.getF64(r * cols + j)) : 0.f;
    at += dims[i];
  }
  return {RValue::of(y)};
}

void inferFeatureVectorizer(InferCtx& c) {
  int64_t total = 0;
  for (int64_t d : c.node.attrInts("inputdimensions")) total += d;
  const auto& s = c.inShape(0);
  Dim rows = s && s->size() >= 2 ? (*s)[0] : (s ? Dim::known(1) : Dim{});
  c.setTensor(0, DType::F32, Shape{rows, Dim::known(total)});
}

} // namespace

void registerMlTransformOps(OpRegistry& r) {
  r.op("Scaler", kMlDomain)
      .perSample(perRow)
      .since(1)
      .inputs(1, 1)
      .attrFloats("offset", {0.0f})
      .attrFloats("scale", {1.0f})
      .infer(inferFloatSameShape)
      .kernel(scalerKernel);
  r.op("Normalizer", kMlDomain)
      .perSample(perRow)
      .since(1)
      .inputs(1, 1)
      .attrString("norm", "MAX")
      .infer(inferFloatSameShape)
      .kernel(normalizerKernel);
  r.op("Imputer", kMlDomain)
      .perSample(perRow)
      .since(1)
      .inputs(1, 1)
      .attrFloats("imputed_value_floats", {})
      .attrInts("imputed_value_int64s", {})
      .attrFloat("replaced_value_float", 0.0f)
      .attrInt("replaced_value_int64", 0)
      .infer(inferSameAsInput0)
      .kernel(imputerKernel);
  r.op("FeatureVectorizer", kMlDomain)
      .since(1)
      .inputs(1, 1 << 30)
      .attrInts("inputdimensions", {})
      .infer(inferFeatureVectorizer)
      .kernel(featureVectorizerKernel);
}

} // namespace aicc
