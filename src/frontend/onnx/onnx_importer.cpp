#include "frontend/onnx/onnx_importer.h"
#include "support/file.h"

#include "frontend/onnx/tensor_proto.h"
#include "ops/op_def.h"
#include "passes/shape_inference.h"

#include <onnx/onnx_pb.h>

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <set>

namespace aicc {
namespace {

constexpr int64_t kMinOpset = 1;
// Nodes that inlining model-local functions may add to a model, all calls together (call nodes
// included); real models stay far below (the largest exported graphs have ~10^5 nodes).
constexpr int64_t kMaxInlinedNodes = 1 << 18;

std::string normDomain(const std::string& d) { return d == "ai.onnx" ? "" : d; }

Type typeFromProto(const onnx::TypeProto& t, const std::string& what) {
  switch (t.value_case()) {
  case onnx::TypeProto::kTensorType: {
    auto dt = t.tensor_type().elem_type() == 0 ? std::optional<DType>(DType::Undefined)
                                               : dtypeFromOnnx(t.tensor_type().elem_type());
    AICC_CHECK(dt, "{}: unsupported element type code {}", what, t.tensor_type().elem_type());
    if (!t.tensor_type().has_shape()) return Type::tensor(*dt);
    Shape s;
    for (const auto& d : t.tensor_type().shape().dim()) {
      if (d.has_dim_value()) {
        AICC_CHECK(d.dim_value() >= 0, "{}: negative dimension {}", what, d.dim_value());
        s.push_back(Dim::known(d.dim_value()));
      } else if (d.has_dim_param() && !d.dim_param().empty()) s.push_back(Dim::sym(d.dim_param()));
      else s.push_back(Dim{});
    }
    return Type::tensor(*dt, s);
  }
  case onnx::TypeProto::kSequenceType:
    return Type::sequence(t.sequence_type().has_elem_type() ? typeFromProto(t.sequence_type().elem_type(), what) : Type{});
  case onnx::TypeProto::kOptionalType:
    return Type::optional(t.optional_type().has_elem_type() ? typeFromProto(t.optional_type().elem_type(), what) : Type{});
  case onnx::TypeProto::kMapType: {
    auto kt = dtypeFromOnnx(t.map_type().key_type());
    AICC_CHECK(kt, "{}: unsupported map key type code {}", what, t.map_type().key_type());
    return Type::map(*kt, t.map_type().has_value_type()
                              ? typeFromProto(t.map_type().value_type(), what)
                              : Type{});
  }
  case onnx::TypeProto::VALUE_NOT_SET: return Type{};
  default:
    fail("{}: unsupported type (sparse tensors are not supported)", what);
  }
}

class Importer {
public:
  Importer(std::shared_ptr<onnx::ModelProto> proto, std::string baseDir)
      : proto_(std::move(proto)) {
    ext_.baseDir = std::move(baseDir);
  }

  ImportedModel run(const ImportOptions& opts);

private:
  void importGraph(const onnx::GraphProto& gp, Graph& g, bool isMain);
  void importNode(const onnx::NodeProto& np, Graph& g);
  void inlineFunction(const onnx::FunctionProto& fp, const onnx::NodeProto& np, Graph& g);
  const onnx::FunctionProto* localFunction(const onnx::NodeProto& np) const;
  int64_t expandedNodes(const onnx::FunctionProto& fp, const std::string& label);
  int64_t expandedNodes(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
                        const std::string& label);
  Attribute convertAttr(const onnx::AttributeProto& ap, Graph& g, const std::string& what);
  std::vector<int> topoOrder(const onnx::GraphProto& gp, const Graph& g);

  std::shared_ptr<onnx::ModelProto> proto_;
  ExternalData ext_;
  std::map<std::string, int64_t> opsets_;
  std::map<std::pair<std::string, std::string>, const onnx::FunctionProto*> functions_;
  int inlineDepth_ = 0;
  std::map<const onnx::FunctionProto*, int64_t> expanded_; // expandedNodes, -1 while counting
  int64_t inlineCounter_ = 0;
  int64_t countedNodes_ = 0, inlinedNodes_ = 0;
  // The main graph's declared types of computed values (value_info, outputs), adopted after a
  // first inference (adoptDeclared).
  std::vector<std::pair<Value*, Type>> declared_;
  void adoptDeclared(Graph& g);
  ImportedModel result_;
};

// Names a subgraph's nodes read that it does not define itself (outer-scope references).
void freeNames(const onnx::GraphProto& gp, std::set<std::string>& out) {
  std::set<std::string> defined;
  for (const auto& i : gp.input()) defined.insert(i.name());
  for (const auto& i : gp.initializer()) defined.insert(i.name());
  for (const auto& n : gp.node())
    for (const auto& o : n.output()) defined.insert(o);
  auto use = [&](const std::string& s) {
    if (!s.empty() && !defined.count(s)) out.insert(s);
  };
  for (const auto& n : gp.node()) {
    for (const auto& i : n.input()) use(i);
    for (const auto& a : n.attribute()) {
      std::set<std::string> inner;
      if (a.has_g()) freeNames(a.g(), inner);
      for (const auto& sg : a.graphs()) freeNames(sg, inner);
      for (const auto& s : inner) use(s);
    }
  }
  for (const auto& o : gp.output()) use(o.name());
}

std::string nodeLabel(const onnx::NodeProto& n) {
  std::string op = n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type() : n.domain() + "." + n.op_type();
  return n.name().empty() ? fmt::format("node ({})", op) : fmt::format("node '{}' ({})", n.name(), op);
}

// Nodes in a topological order (ONNX requires one, but not every exporter delivers it); throws on
// a cycle or on a value that is never defined.
std::vector<int> Importer::topoOrder(const onnx::GraphProto& gp, const Graph& g) {
  int n = gp.node_size();
  std::map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const auto& o : gp.node(i).output())
      if (!o.empty()) producer[o] = i;
  std::vector<std::vector<int>> deps(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto& nd = gp.node(i);
    std::set<std::string> reads(nd.input().begin(), nd.input().end());
    for (const auto& a : nd.attribute()) {
      if (a.has_g()) freeNames(a.g(), reads);
      for (const auto& sg : a.graphs()) freeNames(sg, reads);
    }
    for (const auto& r : reads) {
      if (r.empty()) continue;
      auto it = producer.find(r);
      if (it != producer.end()) deps[static_cast<size_t>(i)].push_back(it->second);
      else if (!g.lookup(r))
        fail("{}: input '{}' is not defined (no graph input, initializer or node output)", nodeLabel(nd), r);
    }
  }
  std::vector<int> order, state(static_cast<size_t>(n), 0); // 0 new, 1 visiting, 2 done
  for (int root = 0; root < n; ++root) {
    if (state[static_cast<size_t>(root)]) continue;
    std::vector<std::pair<int, size_t>> stack{{root, 0}};
    state[static_cast<size_t>(root)] = 1;
    while (!stack.empty()) {
      auto& [v, k] = stack.back();
      auto& dv = deps[static_cast<size_t>(v)];
      if (k < dv.size()) {
        int w = dv[k++];
        if (state[static_cast<size_t>(w)] == 1)
          fail("graph '{}' has a cycle through {}", gp.name(), nodeLabel(gp.node(w)));
        if (state[static_cast<size_t>(w)] == 0) {
          state[static_cast<size_t>(w)] = 1;
          stack.push_back({w, 0});
        }
      } else {
        state[static_cast<size_t>(v)] = 2;
        order.push_back(v);
        stack.pop_back();
      }
    }
  }
  return order;
}

Attribute Importer::convertAttr(const onnx::AttributeProto& ap, Graph& g, const std::string& what) {
  using AP = onnx::AttributeProto;
  AICC_CHECK(ap.ref_attr_name().empty(), "{}: attribute '{}' refers to a function attribute outside a function",
             what, ap.name());
  AP::AttributeType type = ap.type();
  if (type == AP::UNDEFINED) { // very old models: infer from the field that is set
    if (ap.has_f()) type = AP::FLOAT;
    else if (ap.has_i()) type = AP::INT;
    else if (ap.has_s()) type = AP::STRING;
    else if (ap.has_t()) type = AP::TENSOR;
    else if (ap.has_g()) type = AP::GRAPH;
    else if (ap.floats_size()) type = AP::FLOATS;
    else if (ap.ints_size()) type = AP::INTS;
    else if (ap.strings_size()) type = AP::STRINGS;
    else fail("{}: attribute '{}' has no type and no value", what, ap.name());
  }
  auto subgraph = [&](const onnx::GraphProto& gp) {
    auto sg = std::make_shared<Graph>();
    sg->parent = &g;
    importGraph(gp, *sg, false);
    return sg;
  };
  switch (type) {
  case AP::FLOAT: return {ap.f()};
  case AP::INT: return {ap.i()};
  case AP::STRING: return {ap.s()};
  case AP::TENSOR: return {tensorFromProto(ap.t(), proto_, &ext_)};
  case AP::GRAPH: return {subgraph(ap.g())};
  case AP::FLOATS: return {std::vector<float>(ap.floats().begin(), ap.floats().end())};
  case AP::INTS: return {std::vector<int64_t>(ap.ints().begin(), ap.ints().end())};
  case AP::STRINGS: return {std::vector<std::string>(ap.strings().begin(), ap.strings().end())};
  case AP::TENSORS: {
    std::vector<Tensor> ts;
    for (const auto& t : ap.tensors()) ts.push_back(tensorFromProto(t, proto_, &ext_));
    return {std::move(ts)};
  }
  case AP::GRAPHS: {
    std::vector<GraphPtr> gs;
    for (const auto& gp : ap.graphs()) gs.push_back(subgraph(gp));
    return {std::move(gs)};
  }
  case AP::TYPE_PROTO: return {typeFromProto(ap.tp(), what)};
  default: fail("{}: attribute '{}' has unsupported type {}", what, ap.name(), static_cast<int>(type));
  }
}

void Importer::importNode(const onnx::NodeProto& np, Graph& g) {
  std::string domain = normDomain(np.domain());
  std::string label = nodeLabel(np);
  auto os = opsets_.find(domain);
  AICC_CHECK(os != opsets_.end(), "{}: domain '{}' is not in the model's opset imports", label,
             domainDisplay(domain));
  int64_t opset = os->second;
  const OpDef* def = OpRegistry::instance().find(domain, np.op_type());
  if (const onnx::FunctionProto* fn = localFunction(np)) {
    inlineFunction(*fn, np, g);
    return;
  }
  AICC_CHECK(def, "{}: unsupported op '{}' in domain '{}' (opset {})", label, np.op_type(),
             domainDisplay(domain), opset);
  AICC_CHECK(opset >= def->sinceVersion, "{}: op '{}' needs {} opset {} or later, the model imports {}",
             label, np.op_type(), domainDisplay(domain), def->sinceVersion, opset);
  AICC_CHECK(np.input_size() >= def->minInputs && np.input_size() <= def->maxInputs,
             "{}: has {} inputs, op '{}' takes {} to {}", label, np.input_size(), np.op_type(),
             def->minInputs, def->maxInputs);
  AICC_CHECK(np.output_size() >= def->minOutputs && np.output_size() <= def->maxOutputs,
             "{}: has {} outputs, op '{}' produces {} to {}", label, np.output_size(), np.op_type(),
             def->minOutputs, def->maxOutputs);
  const ImportRule* rule = nullptr;
  for (const auto& r : def->imports)
    if (opset >= r.from && opset <= r.to) rule = &r;

  std::vector<Value*> inputs;
  for (const auto& in : np.input()) {
    if (in.empty()) {
      inputs.push_back(nullptr);
      continue;
    }
    Value* v = g.lookup(in);
    AICC_CHECK(v, "{}: input '{}' is not defined", label, in);
    inputs.push_back(v);
  }
  std::vector<std::string> outs(np.output().begin(), np.output().end());
  for (const auto& o : outs)
    AICC_CHECK(o.empty() || !g.lookupLocal(o), "{}: output '{}' is already defined (values must be assigned once)",
               label, o);
  Node* n = g.addNode(np.op_type(), std::move(inputs), outs, domain);
  n->name = np.name();
  n->def = def;
  for (const auto& ap : np.attribute()) {
    const AttrSpec* spec = def->findAttr(ap.name());
    if (!spec && rule)
      for (const auto& la : rule->legacyAttrs)
        if (la.name == ap.name()) spec = &la;
    AICC_CHECK(spec, "{}: unknown attribute '{}' for op '{}' ({} opset {})", label, ap.name(), np.op_type(),
               domainDisplay(domain), opset);
    Attribute a = convertAttr(ap, g, label);
    AICC_CHECK(a.kind() == spec->kind, "{}: attribute '{}' is {}, expected {}", label, ap.name(),
               attrKindName(a.kind()), attrKindName(spec->kind));
    n->attrs[ap.name()] = std::move(a);
  }
  for (const auto& spec : def->attrs)
    AICC_CHECK(!spec.required || n->attrs.count(spec.name), "{}: missing required attribute '{}'", label, spec.name);
  if (rule && rule->fn) {
    ImportCtx ctx(g, *n, opset);
    try {
      rule->fn(ctx);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", label, e.what()));
    }
  }
}

// Model-local functions (ModelProto.functions) are inlined where they are called: the body's
// values get fresh names, formal inputs/outputs map to the call's, and attribute references
// (ref_attr_name) take the call's attribute or the function's default.
void Importer::inlineFunction(const onnx::FunctionProto& fp, const onnx::NodeProto& call, Graph& g) {
  std::string label = nodeLabel(call);
  // The whole expansion is counted before anything is inlined: calls that fan out (each body
  // calling the next function twice) are refused at once instead of expanding exponentially.
  // Graph attributes passed by reference (ref_attr_name) can call functions the count does not
  // see: the depth and the nodes actually inlined are bounded too.
  AICC_CHECK(inlineDepth_ < 64, "{}: function '{}' calls itself too deeply", label, fp.name());
  if (inlineDepth_++ == 0) {
    countedNodes_ += expandedNodes(fp, label);
    AICC_CHECK(countedNodes_ <= kMaxInlinedNodes,
               "{}: inlining function '{}' makes more than {} nodes", label, fp.name(),
               kMaxInlinedNodes);
  }
  inlinedNodes_ += fp.node_size();
  AICC_CHECK(inlinedNodes_ <= kMaxInlinedNodes,
             "{}: inlining function '{}' makes more than {} nodes", label, fp.name(),
             kMaxInlinedNodes);
  std::map<std::string, std::string> rename;
  for (int i = 0; i < fp.input_size(); ++i) rename[fp.input(i)] = i < call.input_size() ? call.input(i) : "";
  for (int i = 0; i < fp.output_size(); ++i) rename[fp.output(i)] = i < call.output_size() ? call.output(i) : "";
  std::map<std::string, const onnx::AttributeProto*> given, defaults;
  for (const auto& a : call.attribute()) given[a.name()] = &a;
  // FunctionProto.attribute_proto (field 11, default values) is newer than Debian's onnx.proto:
  // read it from the unknown fields.
  std::vector<onnx::AttributeProto> defaultProtos;
  const auto& unknown = fp.GetReflection()->GetUnknownFields(fp);
  for (int i = 0; i < unknown.field_count(); ++i)
    if (unknown.field(i).number() == 11 && unknown.field(i).type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      defaultProtos.emplace_back();
      AICC_CHECK(defaultProtos.back().ParseFromString(unknown.field(i).length_delimited()),
                 "{}: function '{}' has a malformed default attribute", label, fp.name());
    }
  for (const auto& a : defaultProtos) defaults[a.name()] = &a;
  std::string prefix = fmt::format("{}/{}#{}/", call.name().empty() ? fp.name() : call.name(), fp.name(), inlineCounter_++);
  auto mapName = [&](const std::string& n) -> std::string {
    if (n.empty()) return n;
    auto it = rename.find(n);
    if (it != rename.end()) return it->second;
    return rename[n] = prefix + n;
  };
  for (const auto& body : fp.node()) {
    onnx::NodeProto n = body;
    for (auto& in : *n.mutable_input()) in = mapName(in);
    for (auto& out : *n.mutable_output()) out = mapName(out);
    if (!n.name().empty()) n.set_name(prefix + n.name());
    n.clear_attribute();
    for (const auto& a : body.attribute()) {
      if (a.ref_attr_name().empty()) {
        *n.add_attribute() = a;
        continue;
      }
      const onnx::AttributeProto* src = given.count(a.ref_attr_name()) ? given[a.ref_attr_name()]
                                        : defaults.count(a.ref_attr_name()) ? defaults[a.ref_attr_name()] : nullptr;
      if (!src) continue; // not given: the op's own default applies
      onnx::AttributeProto* copy = n.add_attribute();
      *copy = *src;
      copy->set_name(a.name());
    }
    importNode(n, g);
  }
  --inlineDepth_;
}

const onnx::FunctionProto* Importer::localFunction(const onnx::NodeProto& np) const {
  auto fn = functions_.find({normDomain(np.domain()), np.op_type()});
  return fn == functions_.end() ? nullptr : fn->second;
}

// Nodes that inlining fp adds: its body with every call of a local function expanded, subgraphs
// included; at most kMaxInlinedNodes + 1. Throws naming the function when it calls itself
// (ONNX functions are not recursive).
int64_t Importer::expandedNodes(const onnx::FunctionProto& fp, const std::string& label) {
  auto [it, fresh] = expanded_.try_emplace(&fp, -1);
  AICC_CHECK(fresh || it->second >= 0, "{}: function '{}' calls itself", label, fp.name());
  if (fresh) {
    int64_t n = expandedNodes(fp.node(), label);
    expanded_[&fp] = n;
  }
  return expanded_[&fp];
}

int64_t Importer::expandedNodes(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
                                const std::string& label) {
  int64_t n = 0;
  for (const auto& np : nodes) {
    const onnx::FunctionProto* fn = localFunction(np);
    n += fn ? 1 + expandedNodes(*fn, label) : 1; // the call counts, as in inlineFunction
    for (const auto& a : np.attribute()) {
      if (a.has_g()) n += expandedNodes(a.g().node(), label);
      for (const auto& sg : a.graphs()) n += expandedNodes(sg.node(), label);
    }
    n = std::min(n, kMaxInlinedNodes + 1);
  }
  return n;
}

void Importer::importGraph(const onnx::GraphProto& gp, Graph& g, bool isMain) {
  g.name = gp.name();
  std::set<std::string> initNames;
  for (const auto& ip : gp.initializer()) {
    AICC_CHECK(!ip.name().empty(), "graph '{}': initializer without a name", gp.name());
    g.addConstant(ip.name(), tensorFromProto(ip, proto_, &ext_));
    initNames.insert(ip.name());
  }
  AICC_CHECK(gp.sparse_initializer_size() == 0, "graph '{}': sparse initializers are not supported", gp.name());
  for (const auto& vi : gp.input()) {
    if (isMain) result_.allInputNames.push_back(vi.name());
    Type t = vi.has_type() ? typeFromProto(vi.type(), fmt::format("input '{}'", vi.name())) : Type{};
    if (initNames.count(vi.name())) continue; // old IR: initializer listed as input (a default)
    g.addInput(vi.name(), t);
  }
  for (int i : topoOrder(gp, g)) importNode(gp.node(i), g);
  // Declared types of intermediate values and outputs (merged with inference later; the main
  // graph's after a first inference without them, adoptDeclared).
  auto declare = [&](const onnx::ValueInfoProto& vi) {
    Value* v = g.lookupLocal(vi.name());
    if (!v || !vi.has_type() || v->constant) return;
    Type t = typeFromProto(vi.type(), fmt::format("value '{}'", vi.name()));
    if (isMain && v->producer)
      declared_.push_back({v, std::move(t)});
    else
      v->type = v->producer ? t : mergeTypes(v->type, t, fmt::format("value '{}'", vi.name()));
  };
  for (const auto& vi : gp.value_info()) declare(vi);
  for (const auto& vi : gp.output()) {
    Value* v = g.lookup(vi.name());
    AICC_CHECK(v, "graph '{}': output '{}' is not defined", gp.name(), vi.name());
    declare(vi);
    g.outputs.push_back(v);
  }
}

ImportedModel Importer::run(const ImportOptions& opts) {
  const onnx::ModelProto& mp = *proto_;
  AICC_CHECK(mp.has_graph(), "model has no graph");
  for (const auto& os : mp.opset_import()) opsets_[normDomain(os.domain())] = os.version();
  for (const auto& f : mp.functions()) functions_[{normDomain(f.domain()), f.name()}] = &f;
  if (mp.ir_version() < 3 && !opsets_.count("")) opsets_[""] = kMinOpset; // IR v1/2: implicit ai.onnx
  Model& m = result_.model;
  m.opsets = opsets_;
  m.irVersion = mp.ir_version();
  m.producerName = mp.producer_name();
  m.producerVersion = mp.producer_version();
  m.graph = std::make_shared<Graph>();
  importGraph(mp.graph(), *m.graph, true);
  if (!opts.dims.empty()) specializeDims(m, opts.dims);
  else inferShapes(*m.graph);
  adoptDeclared(*m.graph);
  return std::move(result_);
}

// Exporters' declared shapes are hints, as ONNX Runtime takes them: one that contradicts the
// inferred shape (another rank, another static size: ddddocr's output declared [1, seqlen] is
// [(W+7)/8, 1, 8210]) is dropped with a warning; a declared name that is no input's symbol
// (PyTorch's "floor(floor(width/2 - 1/2)/2) + 1" for a Range's length) is not adopted, so the
// dim stays the inferred expression or a data-dependent one the passes name; the rest fills the
// inferred type's unknown dims, and inference runs again to carry them on. Element types must
// agree.
void Importer::adoptDeclared(Graph& g) {
  std::set<std::string> inputSymbols;
  for (const Value* v : g.inputs)
    if (v->type.isTensor() && v->type.shape)
      for (const Dim& d : *v->type.shape)
        if (!d.isStatic() && !d.symbol.empty()) inputSymbols.insert(d.symbol);
  bool adopted = false;
  for (auto& [v, t] : declared_) {
    const std::string what = fmt::format("value '{}'", v->name), as = formatType(t);
    if (t.isTensor() && t.shape) {
      for (Dim& d : *t.shape)
        if (!d.isStatic() && !inputSymbols.count(d.symbol)) d = Dim{};
      const Type& got = v->type;
      if (got.isTensor() && got.shape && shapesContradict(*t.shape, *got.shape)) {
        result_.warnings.push_back(
            fmt::format("{} is declared {} but computes {}: the declaration is ignored", what, as,
                        formatType(got)));
        continue;
      }
    }
    const Type merged = mergeTypes(t, v->type, what);
    adopted = adopted || !(merged == v->type);
    v->type = merged;
  }
  declared_.clear();
  if (adopted) inferShapes(g);
}

} // namespace

ImportedModel importOnnxBytes(const std::string& bytes, const std::string& baseDir, const ImportOptions& opts) {
  auto proto = std::make_shared<onnx::ModelProto>();
  google::protobuf::io::CodedInputStream cis(reinterpret_cast<const uint8_t*>(bytes.data()),
                                             static_cast<int>(std::min<size_t>(bytes.size(), INT32_MAX)));
  cis.SetTotalBytesLimit(INT32_MAX);
  AICC_CHECK(proto->ParseFromCodedStream(&cis) && cis.ConsumedEntireMessage(),
             "not a valid ONNX model: the protobuf is malformed or truncated");
  return Importer(proto, baseDir).run(opts);
}

ImportedModel importOnnxFile(const std::string& path, const ImportOptions& opts) {
  std::string bytes = readFile(path);
  auto slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  try {
    return importOnnxBytes(bytes, dir, opts);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", path, e.what()));
  }
}

void promoteConstantToInput(Model& m, const std::string& name) {
  Graph& g = *m.graph;
  Value* v = g.lookupLocal(name);
  AICC_CHECK(v && v->constant, "'{}' is not an initializer of the model", name);
  v->constant.reset();
  std::erase(g.constants, v);
  g.inputs.push_back(v);
  inferShapes(g);
}

void specializeDims(Model& m, const std::map<std::string, int64_t>& dims) {
  for (Value* in : m.graph->inputs) {
    if (!in->type.isTensor() || !in->type.shape) continue;
    for (Dim& d : *in->type.shape) {
      auto it = dims.find(d.symbol);
      if (!d.isStatic() && it != dims.end()) d = Dim::known(it->second);
    }
  }
  inferShapes(*m.graph);
}

} // namespace aicc
