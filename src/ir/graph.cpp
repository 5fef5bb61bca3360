#include "ir/graph.h"

#include <limits>

#include "ops/op_def.h"
#include "support/error.h"

#include <algorithm>
#include <set>

namespace aicc {

std::optional<DimExpr> dimExpr(const Dim& d) {
  if (d.isStatic()) return DimExpr::constant(d.value);
  if (d.symbol.empty()) return std::nullopt;
  if (!d.derived) return DimExpr::symbol(d.symbol);
  return DimExpr::parse(d.symbol);
}

Dim dimOf(const DimExpr& e) {
  if (auto c = e.constantValue()) return *c >= 0 ? Dim::known(*c) : Dim{};
  if (auto s = e.singleSymbol()) return Dim::sym(*s);
  return Dim{-1, e.str(), true};
}

Shape withSymbols(const Shape& s, const std::map<std::string, int64_t>& values) {
  Shape out = s;
  for (Dim& d : out)
    if (!d.isStatic() && !d.symbol.empty())
      if (auto e = dimExpr(d))
        if (auto v = e->evaluate(values); v && *v >= 0) d = Dim::known(*v);
  return out;
}

namespace {

// f of the dims' expressions as a dim: unknown when one is, or when f overflows.
template <typename F> Dim dimCombine(const Dim& a, const Dim& b, F f) {
  auto x = dimExpr(a), y = dimExpr(b);
  if (!x || !y) return Dim{};
  try {
    return dimOf(f(*x, *y));
  } catch (const std::exception&) {
    return Dim{};
  }
}
template <typename F> Dim dimApply(const Dim& a, F f) {
  return dimCombine(a, Dim::known(0), [&](const DimExpr& x, const DimExpr&) { return f(x); });
}

} // namespace

Dim dimAdd(const Dim& a, const Dim& b) {
  return dimCombine(a, b, [](const DimExpr& x, const DimExpr& y) { return x + y; });
}
Dim dimSub(const Dim& a, const Dim& b) {
  return dimCombine(a, b, [](const DimExpr& x, const DimExpr& y) { return x - y; });
}
Dim dimMul(const Dim& a, const Dim& b) {
  return dimCombine(a, b, [](const DimExpr& x, const DimExpr& y) { return x * y; });
}
Dim dimFloorDiv(const Dim& a, int64_t d) {
  return d <= 0 ? Dim{} : dimApply(a, [&](const DimExpr& x) { return x.floorDiv(d); });
}
Dim dimCeilDiv(const Dim& a, int64_t d) {
  return d <= 0 ? Dim{} : dimApply(a, [&](const DimExpr& x) { return x.ceilDiv(d); });
}

std::string formatShape(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    if (s[i].isStatic()) out += std::to_string(s[i].value);
    else out += s[i].symbol.empty() ? "?" : s[i].symbol;
  }
  return out + "]";
}

Shape staticShape(const Dims& d) {
  Shape s;
  for (int64_t v : d) s.push_back(Dim::known(v));
  return s;
}

std::optional<Dims> toDims(const Shape& s) {
  Dims d;
  for (const Dim& x : s) {
    if (!x.isStatic()) return std::nullopt;
    d.push_back(x.value);
  }
  return d;
}

bool Type::operator==(const Type& o) const {
  if (kind != o.kind || dtype != o.dtype || shape != o.shape) return false;
  if (!elem || !o.elem) return !elem && !o.elem;
  return *elem == *o.elem;
}

std::string formatType(const Type& t) {
  switch (t.kind) {
  case Type::Kind::Unknown: return "?";
  case Type::Kind::Tensor: {
    std::string s(t.dtype == DType::Undefined ? "?" : dtypeName(t.dtype));
    return t.shape ? s + formatShape(*t.shape) : s + "[*]";
  }
  case Type::Kind::Sequence: return "seq<" + formatType(*t.elem) + ">";
  case Type::Kind::Optional: return "opt<" + formatType(*t.elem) + ">";
  case Type::Kind::Map:
    return fmt::format("map<{},{}>", dtypeName(t.dtype), formatType(*t.elem));
  }
  return "?";
}

std::optional<int64_t> staticBytes(const Type& t) {
  if (!t.isTensor() || !t.shape || t.dtype == DType::String) return std::nullopt;
  int64_t n = static_cast<int64_t>(dtypeSize(t.dtype));
  if (n == 0) return std::nullopt;
  for (const Dim& d : *t.shape) {
    if (!d.isStatic()) return std::nullopt;
    if (d.value != 0 && n > std::numeric_limits<int64_t>::max() / 4 / d.value) return std::nullopt;
    n *= d.value;
  }
  return n;
}

std::string_view attrKindName(Attribute::Kind k) {
  static constexpr std::string_view names[] = {"float",  "int",     "string",  "tensor",
                                               "graph",  "floats",  "ints",    "strings",
                                               "tensors", "graphs", "type"};
  return names[static_cast<size_t>(k)];
}

// ---- Node -------------------------------------------------------------------------------------

const Attribute* Node::attr(const std::string& n) const {
  auto it = attrs.find(n);
  if (it != attrs.end()) return &it->second;
  if (def)
    if (const AttrSpec* s = def->findAttr(n); s && s->dflt) return &*s->dflt;
  return nullptr;
}

std::string Node::describe() const {
  std::string opName = domain.empty() ? op : domain + "." + op;
  if (!name.empty()) return fmt::format("node '{}' ({})", name, opName);
  if (!outputs.empty() && outputs[0]) return fmt::format("node producing '{}' ({})", outputs[0]->name, opName);
  return fmt::format("node ({})", opName);
}

template <typename T>
static const T& getAttr(const Node& n, const std::string& name, Attribute::Kind k) {
  const Attribute* a = n.attr(name);
  if (!a) fail("{}: missing required attribute '{}'", n.describe(), name);
  if (a->kind() != k)
    fail("{}: attribute '{}' is {}, expected {}", n.describe(), name, attrKindName(a->kind()),
         attrKindName(k));
  return std::get<T>(a->v);
}

int64_t Node::attrInt(const std::string& n) const { return getAttr<int64_t>(*this, n, Attribute::Kind::Int); }
float Node::attrFloat(const std::string& n) const { return getAttr<float>(*this, n, Attribute::Kind::Float); }
std::string Node::attrString(const std::string& n) const {
  return getAttr<std::string>(*this, n, Attribute::Kind::String);
}
std::vector<int64_t> Node::attrInts(const std::string& n) const {
  return getAttr<std::vector<int64_t>>(*this, n, Attribute::Kind::Ints);
}
std::vector<float> Node::attrFloats(const std::string& n) const {
  return getAttr<std::vector<float>>(*this, n, Attribute::Kind::Floats);
}
int64_t Node::attrInt(const std::string& n, int64_t dflt) const { return attr(n) ? attrInt(n) : dflt; }
std::vector<int64_t> Node::attrInts(const std::string& n, std::vector<int64_t> dflt) const {
  return attr(n) ? attrInts(n) : dflt;
}

// ---- Graph ------------------------------------------------------------------------------------

Value* Graph::addValue(std::string name, Type type) {
  AICC_CHECK(!name.empty(), "graph '{}': value with an empty name", this->name);
  AICC_CHECK(!byName_.count(name), "graph '{}': value '{}' is defined twice", this->name, name);
  auto v = std::make_unique<Value>();
  v->name = std::move(name);
  v->type = std::move(type);
  v->owner = this;
  Value* p = v.get();
  byName_[p->name] = p;
  values_.push_back(std::move(v));
  return p;
}

Value* Graph::addInput(std::string name, Type type) {
  Value* v = addValue(std::move(name), std::move(type));
  inputs.push_back(v);
  return v;
}

Value* Graph::addConstant(std::string name, Tensor t) {
  Type ty = Type::tensor(t.dtype(), staticShape(t.shape()));
  Value* v = addValue(std::move(name), std::move(ty));
  v->constant = std::move(t);
  constants.push_back(v);
  return v;
}

Node* Graph::addNode(std::string op, std::vector<Value*> ins, const std::vector<std::string>& outputNames,
                     std::string domain) {
  auto n = std::make_unique<Node>();
  n->op = std::move(op);
  n->domain = std::move(domain);
  n->inputs = std::move(ins);
  n->owner = this;
  for (const auto& o : outputNames) {
    if (o.empty()) {
      n->outputs.push_back(nullptr);
      continue;
    }
    Value* v = addValue(o);
    v->producer = n.get();
    n->outputs.push_back(v);
  }
  nodes.push_back(std::move(n));
  return nodes.back().get();
}

Value* Graph::lookupLocal(const std::string& n) const {
  auto it = byName_.find(n);
  return it == byName_.end() ? nullptr : it->second;
}

Value* Graph::lookup(const std::string& n) const {
  for (const Graph* g = this; g; g = g->parent)
    if (Value* v = g->lookupLocal(n)) return v;
  return nullptr;
}

std::string Graph::uniqueName(const std::string& base) {
  for (;;) {
    std::string n = fmt::format("{}_{}", base, nameCounter_++);
    if (!lookup(n)) return n;
  }
}

void Graph::renameValue(Value* v, const std::string& newName) {
  AICC_CHECK(v->owner == this, "value '{}' does not belong to graph '{}'", v->name, name);
  AICC_CHECK(!newName.empty() && !byName_.count(newName), "graph '{}': cannot rename '{}' to '{}'", name,
             v->name, newName);
  byName_.erase(v->name);
  v->name = newName;
  byName_[newName] = v;
}

void Graph::adoptValue(Graph& from, Value* v, const std::string& newName) {
  AICC_CHECK(v->owner == &from && &from != this, "internal: value '{}' is not in graph '{}'",
             v->name, from.name);
  AICC_CHECK(!newName.empty() && !byName_.count(newName), "graph '{}': cannot adopt '{}' as '{}'",
             name, v->name, newName);
  auto it = std::find_if(from.values_.begin(), from.values_.end(),
                         [&](const std::unique_ptr<Value>& p) { return p.get() == v; });
  from.byName_.erase(v->name);
  std::unique_ptr<Value> owned = std::move(*it);
  from.values_.erase(it);
  if (std::erase(from.constants, v)) constants.push_back(v);
  v->name = newName;
  v->owner = this;
  byName_[newName] = v;
  values_.push_back(std::move(owned));
}

void Graph::eraseUnusedValues() {
  std::set<const Value*> used(inputs.begin(), inputs.end());
  used.insert(outputs.begin(), outputs.end());
  for (const auto& n : nodes) {
    used.insert(n->inputs.begin(), n->inputs.end());
    used.insert(n->outputs.begin(), n->outputs.end());
  }
  // Values used by subgraphs (outer-scope references) must stay as well.
  std::function<void(const Graph&)> scan = [&](const Graph& g) {
    for (const auto& n : g.nodes) {
      used.insert(n->inputs.begin(), n->inputs.end());
      for (const auto& [_, a] : n->attrs) {
        if (auto* sg = std::get_if<GraphPtr>(&a.v)) scan(**sg);
        if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
          for (const auto& s : *sgs) scan(*s);
      }
    }
    used.insert(g.outputs.begin(), g.outputs.end());
  };
  scan(*this);
  std::erase_if(constants, [&](Value* v) { return !used.count(v); });
  std::erase_if(values_, [&](const std::unique_ptr<Value>& v) {
    if (used.count(v.get())) return false;
    byName_.erase(v->name);
    return true;
  });
}

void forEachValue(const Graph& g, const std::function<void(Value&)>& f) {
  for (const auto& v : g.values()) f(*v);
  for (const auto& n : g.nodes)
    for (const auto& [_, a] : n->attrs) {
      if (const auto* sg = std::get_if<GraphPtr>(&a.v); sg && *sg) forEachValue(**sg, f);
      if (const auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
        for (const auto& s : *sgs)
          if (s) forEachValue(*s, f);
    }
}

} // namespace aicc
