#include "frontend/onnx/inputs.h"

#include "frontend/onnx/tensor_proto.h"

#include <filesystem>
#include <random>

namespace aicc {

namespace fs = std::filesystem;

RValue generateInput(const Value& v) {
  const Type& t = v.type;
  AICC_CHECK(t.isTensor() && t.shape && t.dtype != DType::Undefined,
             "input '{}' has type {}: give it with --input or --inputs-dir", v.name, formatType(t));
  Dims dims;
  for (const Dim& d : *t.shape) {
    AICC_CHECK(d.isStatic(), "input '{}': dimension '{}' is symbolic; set it with --dim {}=VALUE", v.name,
               d.symbol.empty() ? "?" : d.symbol, d.symbol.empty() ? "NAME" : d.symbol);
    dims.push_back(d.value);
  }
  Tensor x(t.dtype, dims);
  std::mt19937 rng(12345);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (t.dtype == DType::String) x.strings()[i] = "";
    else if (isFloat(t.dtype)) x.setF64(i, uni(rng));
    else if (t.dtype == DType::Bool) x.setF64(i, rng() & 1);
    else x.setI64(i, static_cast<int64_t>(rng() % 4)); // small ids / indices are valid for most models
  }
  return RValue::of(std::move(x));
}

std::vector<RValue> bindInputs(ImportedModel& m, const InputSpec& spec) {
  Graph& g = *m.model.graph;
  std::vector<std::string> files;
  if (!spec.inputsDir.empty()) {
    AICC_CHECK(fs::is_directory(spec.inputsDir), "--inputs-dir '{}' is not a directory", spec.inputsDir);
    for (size_t i = 0;; ++i) {
      std::string f = fmt::format("{}/input_{}.pb", spec.inputsDir, i);
      if (!fs::exists(f)) break;
      files.push_back(f);
    }
  }
  // Backend-test rule: more files than real inputs -> bind by graph.input position, which makes
  // the initializers listed there inputs as well.
  std::vector<std::string> order;
  for (const Value* v : g.inputs) order.push_back(v->name);
  if (files.size() > g.inputs.size()) {
    AICC_CHECK(files.size() <= m.allInputNames.size(), "{} input files given, the model has {} inputs",
               files.size(), m.allInputNames.size());
    for (size_t i = 0; i < files.size(); ++i) {
      Value* v = g.lookupLocal(m.allInputNames[i]);
      if (v && v->constant) promoteConstantToInput(m.model, v->name);
    }
    order.assign(m.allInputNames.begin(), m.allInputNames.begin() + static_cast<std::ptrdiff_t>(files.size()));
  }
  std::map<std::string, RValue> given;
  for (size_t i = 0; i < files.size(); ++i) {
    const Value* v = g.lookupLocal(order[i]);
    given[order[i]] = readValueFile(files[i], v->type);
  }
  for (const auto& s : spec.named) {
    auto eq = s.find('=');
    AICC_CHECK(eq != std::string::npos, "--input expects NAME=FILE, got '{}'", s);
    std::string name = s.substr(0, eq);
    const Value* v = g.lookupLocal(name);
    bool isInput = v && std::find(g.inputs.begin(), g.inputs.end(), v) != g.inputs.end();
    AICC_CHECK(isInput, "--input {}: the model has no input named '{}'", name, name);
    given[name] = readValueFile(s.substr(eq + 1), v->type);
  }
  std::vector<RValue> inputs;
  for (const Value* v : g.inputs) {
    auto it = given.find(v->name);
    if (it != given.end()) inputs.push_back(it->second);
    else {
      AICC_CHECK(spec.generate, "no value given for input '{}'", v->name);
      inputs.push_back(generateInput(*v));
    }
  }
  return inputs;
}

} // namespace aicc
