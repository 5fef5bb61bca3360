#include "ops/op_def.h"

#include "ops/all_ops.h"

namespace aicc {

const AttrSpec* OpDef::findAttr(const std::string& n) const {
  for (const auto& a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}

bool computesPerSample(const Node& n, size_t dims) {
  if (!n.def) return false;
  return (n.def->props & kElementwise) || (n.def->perSample && n.def->perSample(n, dims));
}

std::function<bool(const Node&, size_t)> perSampleOutsideAxis(int64_t dflt) {
  return [dflt](const Node& n, size_t dims) {
    const Value* x = n.inputs.empty() ? nullptr : n.inputs[0];
    if (!x || !x->type.shape) return false;
    const int64_t r = int64_t(x->type.shape->size());
    int64_t a = n.attrInt("axis", dflt);
    if (a < 0) a += r;
    return a >= int64_t(dims) && a < r;
  };
}

bool perSampleAnyDims(const Node&, size_t) { return true; }

std::function<std::optional<DataDim>(const Node&, size_t, size_t)>
dataDimAlongAxis(std::optional<int64_t> dflt) {
  return [dflt](const Node& n, size_t, size_t) -> std::optional<DataDim> {
    const Value* x = n.inputs.empty() ? nullptr : n.inputs[0];
    if (!x || !x->type.shape) return std::nullopt;
    const Shape& s = *x->type.shape;
    const auto axis = n.attrs.count("axis") ? std::optional<int64_t>(n.attrInt("axis", 0)) : dflt;
    if (!axis) { // the elements
      Dim e = Dim::known(1);
      for (const Dim& d : s) e = dimMul(e, d);
      return DataDim{e, 0};
    }
    const int64_t a = *axis < 0 ? *axis + int64_t(s.size()) : *axis;
    if (a < 0 || a >= int64_t(s.size())) return std::nullopt;
    return DataDim{s[size_t(a)], 0};
  };
}

std::optional<DataDim> dataDimOfInput0(const Node& n, size_t out, size_t dim) {
  const Value* x = n.inputs.empty() ? nullptr : n.inputs[0];
  if (out != 0 || !x || !x->type.shape || dim >= x->type.shape->size()) return std::nullopt;
  return DataDim{(*x->type.shape)[dim], int(dim)};
}

std::optional<DataDim> dataDimAtRunTime(const Node&, size_t out, size_t dim) {
  return DataDim{Dim{}, int(out * 4096 + dim)};
}

std::string OpDef::qualifiedName() const { return domain.empty() ? op : domain + "." + op; }

std::string domainDisplay(const std::string& domain) { return domain.empty() ? "ai.onnx" : domain; }

const OpRegistry& OpRegistry::instance() {
  static const OpRegistry reg = [] {
    OpRegistry r;
    registerAllOps(r);
    return r;
  }();
  return reg;
}

OpBuilder OpRegistry::op(std::string name, std::string domain) {
  auto key = std::make_pair(domain, name);
  AICC_CHECK(!ops_.count(key), "op {} registered twice", name);
  auto d = std::make_unique<OpDef>();
  d->domain = std::move(domain);
  d->op = std::move(name);
  OpDef& ref = *d;
  ops_[key] = std::move(d);
  return OpBuilder(ref);
}

const OpDef* OpRegistry::find(const std::string& domain, const std::string& op) const {
  auto it = ops_.find({domain, op});
  return it == ops_.end() ? nullptr : it->second.get();
}

OpDef& OpRegistry::at(const std::string& op, const std::string& domain) {
  auto it = ops_.find({domain, op});
  AICC_CHECK(it != ops_.end(), "op {} is not registered", op);
  return *it->second;
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> v;
  for (const auto& [_, d] : ops_) v.push_back(d.get());
  return v;
}

// ---- KernelCtx --------------------------------------------------------------------------------

const RValue& KernelCtx::value(size_t i) const {
  if (!has(i)) fail("input {} is required but missing", i);
  return *args_[i];
}

const Tensor& KernelCtx::in(size_t i) const {
  const RValue& v = value(i);
  if (v.kind != RValue::Kind::Tensor) fail("input {} must be a tensor", i);
  return v.tensor;
}

// ---- InferCtx ---------------------------------------------------------------------------------

const Type& InferCtx::inType(size_t i) const {
  static const Type unknown;
  return has(i) ? node.inputs[i]->type : unknown;
}

DType InferCtx::inDType(size_t i) const {
  const Type& t = inType(i);
  return t.isTensor() ? t.dtype : DType::Undefined;
}

const std::optional<Shape>& InferCtx::inShape(size_t i) const {
  static const std::optional<Shape> none;
  const Type& t = inType(i);
  return t.isTensor() ? t.shape : none;
}

const Tensor* InferCtx::constInput(size_t i) const {
  if (!has(i)) return nullptr;
  const Value* v = node.inputs[i];
  if (v->constant) return &*v->constant;
  // A Constant node's tensor, before constant folding makes it a constant value (an exporter's
  // Resize scales).
  if (const Node* p = v->producer; p && p->op == "Constant" && p->domain.empty())
    if (const Attribute* a = p->attr("value"))
      if (const auto* t = std::get_if<Tensor>(&a->v)) return t;
  return nullptr;
}

const std::vector<Dim>* InferCtx::shapeValue(size_t i) {
  if (!has(i)) return nullptr;
  auto it = shapeValues_.find(node.inputs[i]);
  if (it != shapeValues_.end()) return &it->second;
  const Tensor* c = constInput(i);
  if (!c || !isInteger(c->dtype()) || c->rank() > 1 || c->numel() > 64) return nullptr;
  scratch_.clear();
  for (int64_t v : c->toI64Vector()) scratch_.push_back(Dim::known(v));
  return &scratch_;
}

void InferCtx::setOutput(size_t i, Type t) {
  if (i < node.outputs.size() && node.outputs[i]) node.outputs[i]->type = std::move(t);
}

void InferCtx::setShapeValue(size_t i, std::vector<Dim> v) {
  if (i < node.outputs.size() && node.outputs[i]) shapeValues_[node.outputs[i]] = std::move(v);
}

// ---- ImportCtx --------------------------------------------------------------------------------

Value* ImportCtx::constant(Tensor t, const std::string& hint) {
  std::string base = (node.name.empty() ? node.op : node.name) + "_" + hint;
  return graph.addConstant(graph.uniqueName(base), std::move(t));
}

void ImportCtx::attrToInput(const std::string& attrName, size_t index, DType dt) {
  auto it = node.attrs.find(attrName);
  if (it == node.attrs.end()) return;
  Tensor t;
  const Attribute& a = it->second;
  if (auto* ints = std::get_if<std::vector<int64_t>>(&a.v)) t = Tensor::fromI64(*ints, {static_cast<int64_t>(ints->size())});
  else if (auto* i = std::get_if<int64_t>(&a.v)) t = Tensor::fromI64({*i}).reshaped({}); // a scalar
  else if (auto* fs = std::get_if<std::vector<float>>(&a.v)) t = Tensor::fromF32(*fs);
  else if (auto* f = std::get_if<float>(&a.v)) t = Tensor::fromF32({*f}).reshaped({});
  else fail("{}: attribute '{}' cannot become an input", node.describe(), attrName);
  if (t.dtype() != dt) t = t.castTo(dt);
  if (node.inputs.size() <= index) node.inputs.resize(index + 1, nullptr);
  node.inputs[index] = constant(std::move(t), attrName);
  node.attrs.erase(it);
}

static Node* emitAt(ImportCtx& c, size_t pos, const std::string& op, std::vector<Value*> inputs,
                    int numOutputs) {
  std::vector<std::string> names;
  for (int i = 0; i < numOutputs; ++i)
    names.push_back(c.graph.uniqueName((c.node.name.empty() ? c.node.op : c.node.name) + "_" + op));
  Node* n = c.graph.addNode(op, std::move(inputs), names);
  n->def = OpRegistry::instance().find("", op);
  AICC_CHECK(n->def, "internal: upgrade of {} emits unknown op {}", c.node.describe(), op);
  // addNode appended at the end; move it to `pos`.
  auto owned = std::move(c.graph.nodes.back());
  c.graph.nodes.pop_back();
  c.graph.nodes.insert(c.graph.nodes.begin() + static_cast<std::ptrdiff_t>(pos), std::move(owned));
  return n;
}

static size_t positionOf(const Graph& g, const Node& n) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].get() == &n) return i;
  fail("internal: node not in its graph");
}

Node* ImportCtx::emitBefore(const std::string& op, std::vector<Value*> inputs, int numOutputs) {
  return emitAt(*this, positionOf(graph, node), op, std::move(inputs), numOutputs);
}

Node* ImportCtx::emitAfter(const std::string& op, std::vector<Value*> inputs, int numOutputs) {
  return emitAt(*this, positionOf(graph, node) + 1, op, std::move(inputs), numOutputs);
}

} // namespace aicc
