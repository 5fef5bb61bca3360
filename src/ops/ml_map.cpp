// The map ops of ai.onnx.ml: ZipMap (rows of scores to a sequence of maps, label -> score) and
// DictVectorizer (a map to a dense row over a vocabulary). A map runs as RValue::Kind::Map: its
// keys and values as two 1-D tensors.
#include "ops/ml.h"

#include <map>

namespace aicc {
namespace {

// ---- ZipMap ------------------------------------------------------------------------------------

std::vector<RValue> zipMapKernel(KernelCtx& c) {
  requireDType(c, 0, {DType::F32});
  const Tensor& x = c.in(0);
  const ClassLabels labels = classLabels(c.node, "classlabels_int64s");
  const Rows rows = rowsOf(x);
  AICC_CHECK(rows.features == static_cast<int64_t>(labels.size()),
             "input has {} columns for {} class labels", rows.features, labels.size());
  std::vector<int64_t> all(labels.size());
  for (size_t k = 0; k < all.size(); ++k) all[k] = static_cast<int64_t>(k);
  const Tensor keys = labelTensor(labels, all);
  std::vector<RValue> maps;
  for (int64_t r = 0; r < rows.n; ++r) {
    Tensor values(DType::F32, {rows.features});
    for (int64_t k = 0; k < rows.features; ++k)
      values.data<float>()[k] = x.data<float>()[r * rows.features + k];
    maps.push_back(RValue::ofMap(keys, std::move(values)));
  }
  return {RValue::ofMapSeq(std::move(maps))};
}

void inferZipMap(InferCtx& c) {
  const ClassLabels labels = classLabels(c.node, "classlabels_int64s");
  const DType t = c.inDType(0);
  AICC_CHECK(t == DType::Undefined || t == DType::F32, "input must be float, got {}", dtypeName(t));
  c.setOutput(0, Type::sequence(Type::map(labels.isString() ? DType::String : DType::I64,
                                          Type::tensor(DType::F32))));
}

// ---- DictVectorizer ----------------------------------------------------------------------------

std::vector<RValue> dictVectorizerKernel(KernelCtx& c) {
  const RValue& in = c.value(0);
  AICC_CHECK(in.kind == RValue::Kind::Map, "input must be a map");
  const Tensor &keys = in.seq[0], &values = in.seq[1];
  const Node& n = c.node;
  const Attribute* sv = n.attr("string_vocabulary");
  const std::vector<int64_t> iv = n.attrInts("int64_vocabulary", {});
  AICC_CHECK((sv != nullptr) != !iv.empty(),
             "exactly one of string_vocabulary and int64_vocabulary must be given");
  const bool strings = sv != nullptr;
  AICC_CHECK(strings == (keys.dtype() == DType::String),
             "the map's keys are {} but the "
             "vocabulary is {}",
             dtypeName(keys.dtype()), strings ? "string" : "int64");
  std::map<std::string, int64_t> sIndex;
  std::map<int64_t, int64_t> iIndex;
  int64_t size = 0;
  if (strings) {
    for (const auto& s : std::get<std::vector<std::string>>(sv->v)) sIndex.emplace(s, size++);
  } else {
    for (int64_t v : iv) iIndex.emplace(v, size++);
  }
  Tensor y(values.dtype(), {1, size}); // zeros (empty strings) for absent keys
  for (int64_t i = 0; i < keys.numel(); ++i) {
    int64_t at = -1;
    if (strings) {
      auto it = sIndex.find(keys.strings()[i]);
      at = it == sIndex.end() ? -1 : it->second;
    } else {
      auto it = iIndex.find(keys.getI64(i));
      at = it == iIndex.end() ? -1 : it->second;
    }
    if (at < 0) continue; // a key outside the vocabulary is ignored
    if (values.dtype() == DType::String)
      y.strings()[at] = values.strings()[i];
    else
      y.setF64(at, values.getF64(i));
  }
  return {RValue::of(y)};
}

void inferDictVectorizer(InferCtx& c) {
  const Type& t = c.inType(0);
  AICC_CHECK(t.kind == Type::Kind::Map || t.kind == Type::Kind::Unknown,
             "input must be a map, got {}", formatType(t));
  const DType vt = t.kind == Type::Kind::Map && t.elem ? t.elem->dtype : DType::Undefined;
  int64_t size = static_cast<int64_t>(c.node.attrInts("int64_vocabulary", {}).size());
  if (const Attribute* sv = c.node.attr("string_vocabulary"))
    size = static_cast<int64_t>(std::get<std::vector<std::string>>(sv->v).size());
  c.setTensor(0, vt, Shape{Dim::known(1), Dim::known(size)});
}

} // namespace

void registerMlMapOps(OpRegistry& r) {
  r.op("ZipMap", kMlDomain)
      .since(1)
      .inputs(1, 1)
      .attr("classlabels_int64s", Attribute::Kind::Ints)
      .attr("classlabels_strings", Attribute::Kind::Strings)
      .infer(inferZipMap)
      .kernel(zipMapKernel);
  r.op("DictVectorizer", kMlDomain)
      .since(1)
      .inputs(1, 1)
      .attr("int64_vocabulary", Attribute::Kind::Ints)
      .attr("string_vocabulary", Attribute::Kind::Strings)
      .infer(inferDictVectorizer)
      .kernel(dictVectorizerKernel);
}

} // namespace aicc
