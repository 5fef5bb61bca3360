// The IR verifier: checks the numbered invariants of ir/verifier.h, walking each graph in order
// with a stack of name scopes (what is visible at each point), recursing into subgraphs.
#include "ir/verifier.h"

#include "ir/printer.h"
#include "ops/op_def.h"

#include <set>

namespace aicc {
namespace {

class Verifier {
public:
  explicit Verifier(const VerifyOptions& o)
      : opts_(o), reg_(o.registry ? *o.registry : OpRegistry::instance()) {}

  void graph(const Graph& g, const Graph* expectedParent, bool checkParent) {
    path_.push_back(g.name.empty() ? "graph <unnamed>" : fmt::format("graph '{}'", g.name));
    if (checkParent && g.parent != expectedParent)
      violated(7, "the subgraph's parent is not the graph holding the node");
    std::set<const Value*> owned;
    for (const auto& v : g.values()) owned.insert(v.get());
    // Every value the graph defines (to tell "used before its definition" from "undefined").
    std::set<const Value*> definedHere(g.inputs.begin(), g.inputs.end());
    definedHere.insert(g.constants.begin(), g.constants.end());
    for (const auto& n : g.nodes)
      if (n) definedHere.insert(n->outputs.begin(), n->outputs.end());

    scopes_.emplace_back();
    definedIn_.push_back(&definedHere);
    for (const Value* v : g.inputs) define(g, owned, v, "graph input", nullptr);
    for (const Value* v : g.constants) {
      define(g, owned, v, "constant", nullptr);
      constant(*v);
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node* n = g.nodes[i].get();
      if (!n) violated(2, fmt::format("node #{} is null", i));
      node(g, *n, i, owned);
    }
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      const Value* v = g.outputs[i];
      if (!v) violated(6, fmt::format("graph output #{} is null", i));
      reference(v, 6, fmt::format("graph output #{}", i));
    }
    scopes_.pop_back();
    definedIn_.pop_back();
    path_.pop_back();
  }

private:
  [[noreturn]] void violated(int n, const std::string& msg) {
    fail("invariant {} violated: {}: {}", n, fmt::join(path_, ": "), msg);
  }

  void define(const Graph& g, const std::set<const Value*>& owned, const Value* v, const char* as,
              const Node* producer) {
    if (!v) violated(2, fmt::format("a {} is null", as));
    std::string vn = printValueName(v->name);
    if (v->name.empty()) violated(1, fmt::format("a {} has an empty name", as));
    auto& scope = scopes_.back();
    if (defined_.count(v))
      violated(2, fmt::format("value {} ({}) is defined more than once", vn, as));
    if (scope.count(v->name))
      violated(1, fmt::format("two values are named {} (the second is a {})", vn, as));
    if (v->owner != &g)
      violated(2, fmt::format("value {} ({}) has Value::owner set to another graph", vn, as));
    if (!owned.count(v))
      violated(2, fmt::format("value {} ({}) is not owned by the graph", vn, as));
    if (v->producer != producer)
      violated(2, producer
                      ? fmt::format("value {} ({}) has Value::producer not set to its node", vn, as)
                      : fmt::format("value {} ({}) has a producer node", vn, as));
    if (std::string_view(as) != "constant" && v->isConstant())
      violated(2, fmt::format("value {} ({}) carries a constant tensor", vn, as));
    type(v->type, fmt::format("value {}", vn));
    scope[v->name] = v;
    defined_.insert(v);
  }

  void constant(const Value& v) {
    std::string vn = printValueName(v.name);
    if (!v.constant) violated(5, fmt::format("constant {} has no tensor", vn));
    const Tensor& t = *v.constant;
    if (!t.defined()) {
      if (!v.type.isTensor())
        violated(5, fmt::format("elided constant {} is not a tensor type", vn));
      return;
    }
    Type expect = Type::tensor(t.dtype(), staticShape(t.shape()));
    if (!(v.type == expect))
      violated(5, fmt::format("constant {} has type {} but holds a tensor of type {}", vn,
                              printType(v.type), printType(expect)));
  }

  // Checks that `v` is visible here by its name (invariants 3 and 9, or `inv` for outputs).
  void reference(const Value* v, int inv, const std::string& what) {
    std::string vn = printValueName(v->name);
    const Value* found = nullptr;
    for (auto it = scopes_.rbegin(); it != scopes_.rend() && !found; ++it) {
      auto f = it->find(v->name);
      if (f != it->end()) found = f->second;
    }
    if (found == v) return;
    bool later = false;
    for (const auto* d : definedIn_) later |= d->count(v) > 0;
    if (later && !defined_.count(v))
      violated(3, fmt::format("{} {} is used before its definition", what, vn));
    if (found)
      violated(9, fmt::format("{} {} is shadowed by another value of the same name", what, vn));
    violated(inv, fmt::format("{} {} is not defined in this graph or an enclosing one", what, vn));
  }

  void node(const Graph& g, const Node& n, size_t index, const std::set<const Value*>& owned) {
    bool anonymous = n.name.empty() && (n.outputs.empty() || !n.outputs[0]);
    std::string label = anonymous ? fmt::format("node #{} ({})", index,
                                                n.domain.empty() ? n.op : n.domain + "." + n.op)
                                  : n.describe();
    path_.push_back(label);
    if (n.owner != &g) violated(7, "Node::owner is not the graph holding the node");
    opDef(n);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i]) reference(n.inputs[i], 3, fmt::format("input {}", i));
    for (const auto& [name, a] : n.attrs) {
      auto sub = [&, &name = name](const GraphPtr& sg) {
        if (!sg) violated(7, fmt::format("attribute '{}' holds a null graph", name));
        path_.push_back(fmt::format("attribute '{}'", name));
        graph(*sg, &g, true);
        path_.pop_back();
      };
      if (auto* sg = std::get_if<GraphPtr>(&a.v)) sub(*sg);
      if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
        for (const auto& s : *sgs) sub(s);
      if (auto* t = std::get_if<Type>(&a.v)) type(*t, fmt::format("attribute '{}'", name));
    }
    for (const Value* o : n.outputs)
      if (o) define(g, owned, o, "node output", &n);
    path_.pop_back();
  }

  void opDef(const Node& n) {
    if (!n.def && opts_.allowUnregistered) return;
    const OpDef* def = reg_.find(n.domain, n.op);
    if (!def)
      violated(4, fmt::format("op '{}' of domain '{}' is not registered", n.op,
                              domainDisplay(n.domain)));
    if (n.def != def) violated(4, "Node::def is not the registered definition of the node's op");
    auto in = static_cast<int64_t>(n.inputs.size()), out = static_cast<int64_t>(n.outputs.size());
    if (in < def->minInputs || in > def->maxInputs)
      violated(4, fmt::format("has {} inputs, the op takes {} to {}", in, def->minInputs,
                              def->maxInputs));
    if (out < def->minOutputs || out > def->maxOutputs)
      violated(4, fmt::format("has {} outputs, the op produces {} to {}", out, def->minOutputs,
                              def->maxOutputs));
    for (const auto& [name, a] : n.attrs) {
      const AttrSpec* s = def->findAttr(name);
      if (!s) violated(4, fmt::format("attribute '{}' is not declared by the op", name));
      if (s->kind != a.kind())
        violated(4, fmt::format("attribute '{}' is {}, the op declares {}", name,
                                attrKindName(a.kind()), attrKindName(s->kind)));
    }
    for (const auto& s : def->attrs)
      if (s.required && !n.attrs.count(s.name))
        violated(4, fmt::format("required attribute '{}' is missing", s.name));
  }

  void type(const Type& t, const std::string& what) {
    switch (t.kind) {
    case Type::Kind::Unknown:
      if (t.dtype != DType::Undefined || t.shape || t.elem)
        violated(8,
                 fmt::format("{}: an unknown type carries a dtype, shape or element type", what));
      return;
    case Type::Kind::Tensor:
      if (t.elem) violated(8, fmt::format("{}: a tensor type has an element type", what));
      if (t.shape)
        for (const Dim& d : *t.shape) {
          if (d.isStatic() && !d.symbol.empty())
            violated(8, fmt::format("{}: type {} has a static dim with a symbol '{}'", what,
                                    printType(t), d.symbol));
          if (!d.isStatic() && d.value != -1)
            violated(8,
                     fmt::format("{}: type {} has a dim of value {}", what, printType(t), d.value));
        }
      return;
    case Type::Kind::Sequence:
    case Type::Kind::Optional:
      if (!t.elem)
        violated(8, fmt::format("{}: {} type without an element type", what, printType(t)));
      if (t.dtype != DType::Undefined || t.shape)
        violated(8, fmt::format("{}: a sequence/optional type carries a dtype or shape", what));
      type(*t.elem, what);
      return;
    case Type::Kind::Map:
      if (!t.elem || t.shape)
        violated(8, fmt::format("{}: a map type without a value type, or with a shape", what));
      else
        type(*t.elem, what);
      return;
    }
    violated(8, fmt::format("{}: bad type kind", what));
  }

  const VerifyOptions& opts_;
  const OpRegistry& reg_;
  std::vector<std::string> path_;
  std::vector<std::map<std::string, const Value*>> scopes_;
  std::set<const Value*> defined_;
  std::vector<const std::set<const Value*>*> definedIn_; // values each enclosing graph defines
};

} // namespace

void verifyGraph(const Graph& g, const VerifyOptions& opts) {
  Verifier v(opts);
  v.graph(g, nullptr, false);
}

void verifyModel(const Model& m, const VerifyOptions& opts) {
  AICC_CHECK(m.graph, "invariant 2 violated: the model has no graph");
  verifyGraph(*m.graph, opts);
}

} // namespace aicc
