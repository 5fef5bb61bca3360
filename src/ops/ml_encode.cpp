// Categorical encoders of ai.onnx.ml: OneHotEncoder, CategoryMapper.
#include "ops/ml.h"

#include <map>

namespace aicc {
namespace {

// ---- OneHotEncoder -----------------------------------------------------------------------------

std::vector<RValue> oneHotEncoderKernel(KernelCtx& c) {
  const Tensor& x = c.in(0);
  requireDType(c, 0, {DType::String, DType::I64, DType::I32, DType::F32, DType::F64});
  const Node& n = c.node;
  const bool strings = x.dtype() == DType::String;
  const Attribute* cats = n.attr(strings ? "cats_strings" : "cats_int64s");
  AICC_CHECK(cats, "a {} input needs attribute '{}'", dtypeName(x.dtype()),
             strings ? "cats_strings" : "cats_int64s");
  std::map<std::string, int64_t> sIndex;
  std::map<int64_t, int64_t> iIndex;
  int64_t k = 0;
  if (strings) {
    for (const auto& s : std::get<std::vector<std::string>>(cats->v)) sIndex.emplace(s, k++);
  } else {
    for (int64_t v : std::get<std::vector<int64_t>>(cats->v)) iIndex.emplace(v, k++);
  }
  AICC_CHECK(k > 0, "the category list is empty");
  const bool zeros = n.attrInt("zeros") != 0;
  Dims ys = x.shape();
  ys.push_back(k);
  Tensor y(DType::F32, ys);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t at = -1;
    if (strings) {
      auto it = sIndex.find(x.strings()[i]);
      at = it == sIndex.end() ? -1 : it->second;
      AICC_CHECK(at >= 0 || zeros, "unknown category '{}' (zeros=0)", x.strings()[i]);
    } else {
      auto it = iIndex.find(x.getI64(i));
      at = it == iIndex.end() ? -1 : it->second;
      AICC_CHECK(at >= 0 || zeros, "unknown category {} (zeros=0)", x.getI64(i));
    }
    if (at >= 0) y.data<float>()[i * k + at] = 1.f;
  }
  return {RValue::of(y)};
}

void inferOneHotEncoder(InferCtx& c) {
  const bool strings = c.inDType(0) == DType::String;
  const Attribute* cats = c.node.attr(strings ? "cats_strings" : "cats_int64s");
  if (!cats) cats = c.node.attr(strings ? "cats_int64s" : "cats_strings");
  int64_t k = -1;
  if (cats)
    k = cats->kind() == Attribute::Kind::Strings
            ? static_cast<int64_t>(std::get<std::vector<std::string>>(cats->v).size())
            : static_cast<int64_t>(std::get<std::vector<int64_t>>(cats->v).size());
  std::optional<Shape> s = c.inShape(0);
  if (s) s->push_back(k >= 0 ? Dim::known(k) : Dim{});
  c.setTensor(0, DType::F32, s);
}

// ---- CategoryMapper ----------------------------------------------------------------------------

std::pair<std::vector<std::string>, std::vector<int64_t>> categoryTable(const Node& n) {
  const std::vector<int64_t> ints = n.attrInts("cats_int64s", {});
  const Attribute* s = n.attr("cats_strings");
  std::vector<std::string> strs =
      s ? std::get<std::vector<std::string>>(s->v) : std::vector<std::string>{};
  AICC_CHECK(ints.size() == strs.size(), "cats_int64s has {} entries, cats_strings {}", ints.size(),
             strs.size());
  return {strs, ints};
}

std::vector<RValue> categoryMapperKernel(KernelCtx& c) {
  requireDType(c, 0, {DType::String, DType::I64});
  const Tensor& x = c.in(0);
  const auto [strs, ints] = categoryTable(c.node);
  if (x.dtype() == DType::String) {
    std::map<std::string, int64_t> table;
    for (size_t i = 0; i < strs.size(); ++i) table.emplace(strs[i], ints[i]);
    const int64_t dflt = c.node.attrInt("default_int64");
    Tensor y(DType::I64, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
      auto it = table.find(x.strings()[i]);
      y.data<int64_t>()[i] = it == table.end() ? dflt : it->second;
    }
    return {RValue::of(y)};
  }
  std::map<int64_t, std::string> table;
  for (size_t i = 0; i < strs.size(); ++i) table.emplace(ints[i], strs[i]);
  const std::string dflt = c.node.attrString("default_string");
  Tensor y(DType::String, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto it = table.find(x.getI64(i));
    y.strings()[i] = it == table.end() ? dflt : it->second;
  }
  return {RValue::of(y)};
}

void inferCategoryMapper(InferCtx& c) {
  const DType t = c.inDType(0);
  AICC_CHECK(t == DType::Undefined || t == DType::String || t == DType::I64,
             "input must be string or int64, got {}", dtypeName(t));
  categoryTable(c.node);
  c.setTensor(
      0, t == DType::String ? DType::I64 : (t == DType::I64 ? DType::String : DType::Undefined),
      c.inShape(0));
}

} // namespace

void registerMlEncodeOps(OpRegistry& r) {
  r.op("OneHotEncoder", kMlDomain)
      .perSample(perRow)
      .since(1)
      .inputs(1, 1)
      .attr("cats_int64s", Attribute::Kind::Ints)
      .attr("cats_strings", Attribute::Kind::Strings)
      .attrInt("zeros", 1)
      .infer(inferOneHotEncoder)
      .kernel(oneHotEncoderKernel);
  r.op("CategoryMapper", kMlDomain)
      .since(1)
      .inputs(1, 1)
      .attr("cats_int64s", Attribute::Kind::Ints)
      .attr("cats_strings", Attribute::Kind::Strings)
      .attrInt("default_int64", -1)
      .attrString("default_string", "_Unused")
      .infer(inferCategoryMapper)
      .kernel(categoryMapperKernel);
}

} // namespace aicc
