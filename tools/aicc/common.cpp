#include "common.h"
#include "support/file.h"

#include "frontend/onnx/tensor_proto.h"
#include "ir/parser.h"
#include "passes/shape_inference.h"
#include "support/parse.h"

#include <filesystem>
#include <functional>
#include <iostream>
#include <sstream>

namespace aicc::cli {

void printImportWarnings(const ImportedModel& im) {
  for (const std::string& w : im.warnings) std::cerr << "aicc: warning: " << w << "\n";
}

ImportedModel loadModel(const std::string& path, const std::map<std::string, int64_t>& dims) {
  if (path.size() > 5 && path.substr(path.size() - 5) == ".onnx") {
    ImportOptions opts;
    opts.dims = dims;
    ImportedModel im = importOnnxFile(path, opts);
    printImportWarnings(im);
    return im;
  }
  ImportedModel im;
  try {
    im.model = parseModel(readFile(path));
  } catch (const Error& e) {
    throw Error(fmt::format("{}:{}", path, e.what()));
  }
  for (const Value* v : im.model.graph->inputs) im.allInputNames.push_back(v->name);
  if (!dims.empty()) specializeDims(im.model, dims);
  return im;
}

std::map<std::string, int64_t> opHistogram(const Graph& g) {
  std::map<std::string, int64_t> hist;
  std::function<void(const Graph&)> walk = [&](const Graph& sg) {
    for (const auto& n : sg.nodes) {
      ++hist[n->domain.empty() ? n->op : n->domain + "." + n->op];
      if (n->domain == kAiccDomain) continue;
      for (const auto& [_, a] : n->attrs) {
        if (auto* s = std::get_if<GraphPtr>(&a.v)) walk(**s);
        if (auto* ss = std::get_if<std::vector<GraphPtr>>(&a.v))
          for (const auto& x : *ss) walk(*x);
      }
    }
  };
  walk(g);
  return hist;
}

std::string jsonEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) o += fmt::format("\\u{:04x}", int(c));
    else o += c;
  }
  return o;
}

bool isArtifactDir(const std::string& path) {
  // model.plan, or a self-contained model.so (--static-runtime) that carries it.
  const std::filesystem::path p(path);
  return std::filesystem::is_directory(p) &&
         (std::filesystem::exists(p / "model.plan") || std::filesystem::exists(p / "model.so"));
}

Type typeOf(const runtime::TensorDesc& d, const std::vector<rt::Symbol>& symbols) {
  if (!d.dynamic.empty()) return parseType(d.dynamic); // a sequence, optional or strings
  Shape s;
  for (size_t k = 0; k < d.dims.size(); ++k)
    s.push_back(d.symbolAt(k) < 0 ? Dim::known(d.dims[k])
                                  : Dim::sym(symbols[size_t(d.symbolAt(k))].name));
  return Type::tensor(d.dtype, s);
}

std::vector<RValue> bindArtifactInputs(const runtime::LoadedArtifact& art, const InputSpec& spec,
                                       const std::map<std::string, int64_t>& dims) {
  ImportedModel m; // a graph of just the inputs, so the usual binding rules apply
  m.model.graph = std::make_shared<Graph>();
  for (const auto& d : art.inputs()) {
    Type t = typeOf(d, art.symbols());
    if (t.shape) *t.shape = withSymbols(*t.shape, dims); // --dim: generated inputs' sizes
    m.model.graph->addInput(d.name, t);
    m.allInputNames.push_back(d.name);
  }
  return bindInputs(m, spec);
}

std::map<std::string, int64_t> dimsFromInputs(const Graph& g, const std::vector<RValue>& inputs,
                                              std::set<std::string>* conflicting) {
  std::map<std::string, int64_t> dims;
  std::set<std::string> conflicts;
  for (size_t i = 0; i < g.inputs.size() && i < inputs.size(); ++i) {
    const Type& t = g.inputs[i]->type;
    if (!t.isTensor() || !t.shape || inputs[i].kind != RValue::Kind::Tensor) continue;
    const Dims& actual = inputs[i].tensor.shape();
    if (actual.size() != t.shape->size()) continue; // the engine's input check reports it
    for (size_t d = 0; d < actual.size(); ++d) {
      const Dim& dim = (*t.shape)[d];
      if (dim.isStatic() || dim.symbol.empty()) continue;
      auto [it, fresh] = dims.emplace(dim.symbol, actual[d]);
      if (!fresh && it->second != actual[d] && conflicts.insert(dim.symbol).second)
        std::cerr << fmt::format("aicc: warning: input '{}': dimension '{}' is {} here but {} in "
                                 "an earlier input; the name is taken as a hint (as ONNX Runtime "
                                 "does): each such dimension takes its input's size\n",
                                 g.inputs[i]->name, dim.symbol, actual[d], it->second);
    }
  }
  for (const std::string& s : conflicts) dims.erase(s);
  if (conflicting) *conflicting = std::move(conflicts);
  return dims;
}

void specializeToInputs(ImportedModel& m, const std::vector<RValue>& inputs) {
  std::set<std::string> conflicting; // names given to dims of different sizes: hints only
  auto dims = dimsFromInputs(*m.model.graph, inputs, &conflicting);
  bool unnamed = false; // dims declared '?' (or with a conflicting name) take the input's size
  Graph& g = *m.model.graph;
  for (size_t i = 0; i < g.inputs.size() && i < inputs.size(); ++i) {
    Type& t = g.inputs[i]->type;
    if (!t.isTensor() || !t.shape || inputs[i].kind != RValue::Kind::Tensor) continue;
    const Dims& actual = inputs[i].tensor.shape();
    if (actual.size() != t.shape->size()) continue;
    for (size_t d = 0; d < actual.size(); ++d)
      if (!(*t.shape)[d].isStatic() &&
          ((*t.shape)[d].symbol.empty() || conflicting.count((*t.shape)[d].symbol))) {
        (*t.shape)[d] = Dim::known(actual[d]);
        unnamed = true;
      }
  }
  if (!dims.empty() || unnamed) specializeDims(m.model, dims);
}

void applyShapes(ImportedModel& m, const std::vector<std::string>& specs) {
  if (specs.empty()) return;
  Graph& g = *m.model.graph;
  std::map<std::string, int64_t> dims;
  for (const auto& s : specs) {
    auto eq = s.find('=');
    AICC_CHECK(eq != std::string::npos && eq > 0, "--shape expects NAME=D0,D1,..., got '{}'", s);
    const std::string name = s.substr(0, eq);
    Value* in = nullptr;
    for (Value* v : g.inputs) in = v->name == name ? v : in;
    AICC_CHECK(in, "--shape {}: the model has no input '{}'", s, name);
    AICC_CHECK(in->type.isTensor(), "--shape {}: input '{}' is not a tensor", s, name);
    Dims want;
    std::stringstream ss(s.substr(eq + 1));
    for (std::string x; std::getline(ss, x, ',');) {
      auto v = tryParseInt(x);
      AICC_CHECK(v && *v >= 0, "--shape {}: '{}' is not a size", s, x);
      want.push_back(*v);
    }
    Shape& have = *(in->type.shape ? &*in->type.shape : &in->type.shape.emplace(Shape(want.size())));
    AICC_CHECK(have.size() == want.size(), "--shape {}: input '{}' has rank {} ({})", s, name,
               have.size(), formatShape(have));
    for (size_t d = 0; d < want.size(); ++d) {
      Dim& dim = have[d];
      AICC_CHECK(!dim.isStatic() || dim.value == want[d],
                 "--shape {}: dimension {} of input '{}' is {}", s, d, name, dim.value);
      if (!dim.symbol.empty()) {
        auto [it, fresh] = dims.emplace(dim.symbol, want[d]);
        AICC_CHECK(fresh || it->second == want[d], "--shape {}: dimension '{}' is {} elsewhere", s,
                   dim.symbol, it->second);
      }
      dim = Dim::known(want[d]);
    }
  }
  specializeDims(m.model, dims);
}

std::map<std::string, int64_t> parseDims(const std::vector<std::string>& specs) {
  std::map<std::string, int64_t> dims;
  for (const auto& s : specs) {
    auto eq = s.find('=');
    AICC_CHECK(eq != std::string::npos && eq > 0, "--dim expects NAME=VALUE, got '{}'", s);
    if (s.find("..", eq) != std::string::npos) continue; // a range: parseDimRanges
    dims[s.substr(0, eq)] = parseInt(s.substr(eq + 1), "--dim " + s.substr(0, eq), 0);
  }
  return dims;
}

std::vector<rt::Symbol> parseDimRanges(const std::vector<std::string>& specs) {
  std::vector<rt::Symbol> out;
  for (const auto& s : specs) {
    const auto eq = s.find('='), dots = s.find("..", eq == std::string::npos ? 0 : eq);
    if (eq == std::string::npos || dots == std::string::npos) continue;
    const std::string name = s.substr(0, eq), what = "--dim " + name;
    rt::Symbol sym{name, parseInt(s.substr(eq + 1, dots - eq - 1), what, 0),
                   parseInt(s.substr(dots + 2), what, 1)};
    AICC_CHECK(sym.lo <= sym.hi, "--dim {}: the range {}..{} is empty", s, sym.lo, sym.hi);
    out.push_back(sym);
  }
  return out;
}

std::string summarize(const RValue& v, size_t maxElems) {
  if (v.kind == RValue::Kind::None) return "(empty optional)";
  if (v.kind == RValue::Kind::Sequence)
    return v.isMapSeq() ? fmt::format("sequence of {} maps", v.maps.size())
                        : fmt::format("sequence of {} tensors", v.seq.size());
  if (v.kind == RValue::Kind::Map) return fmt::format("map of {} entries", v.seq[0].numel());
  const Tensor& t = v.tensor;
  std::vector<std::string> elems;
  for (int64_t i = 0; i < t.numel() && elems.size() < maxElems; ++i) {
    if (t.dtype() == DType::String) elems.push_back("\"" + t.strings()[i] + "\"");
    else if (isFloat(t.dtype())) elems.push_back(fmt::format("{:.6g}", t.getF64(i)));
    else if (isComplex(t.dtype())) elems.push_back(fmt::format("{}+{}i", t.getC(i).real(), t.getC(i).imag()));
    else elems.push_back(std::to_string(t.getI64(i)));
  }
  return fmt::format("{}{} = [{}{}]", dtypeName(t.dtype()), formatDims(t.shape()), fmt::join(elems, ", "),
                     t.numel() > static_cast<int64_t>(maxElems) ? ", ..." : "");
}

} // namespace aicc::cli
