// Common-subexpression elimination. Each node gets a structural key: op, domain, input values,
// which outputs are present, and its attributes compared exactly (floats by bits, tensors by
// dtype/shape/bytes, subgraphs structurally with their local values numbered in definition
// order and outer-scope references by identity). A node whose key was seen earlier in the same
// graph is redundant: its uses go to the earlier node's outputs. Identical constants (same
// dtype, shape and bytes) of one graph are merged the same way. Nondeterministic nodes (random
// ops, Dropout in training mode, anything holding one in a subgraph) are never merged.
// Subgraphs are processed innermost first, so their keys see already-merged bodies.
#include "passes/common_subexpression_elimination.h"

#include "ir/rewrite.h"
#include "ops/op_def.h"

#include <map>
#include <string_view>
#include <unordered_map>

namespace aicc {
namespace {

void put(std::string& k, const void* p, size_t n) { k.append(static_cast<const char*>(p), n); }
template <typename T> void putPod(std::string& k, const T& v) { put(k, &v, sizeof v); }
void putStr(std::string& k, const std::string& s) {
  putPod(k, s.size());
  k += s;
}

// Tensors up to this many bytes are keyed by content; bigger ones by their storage (identity:
// conservative, equal copies of big tensors are just not merged through attributes).
constexpr size_t kKeyBytes = size_t{1} << 16;

void putTensor(std::string& k, const Tensor& t) {
  putPod(k, static_cast<int>(t.dtype()));
  putPod(k, t.shape().size());
  for (int64_t d : t.shape()) putPod(k, d);
  if (!t.defined()) return;
  if (t.dtype() == DType::String)
    for (int64_t i = 0; i < t.numel(); ++i) putStr(k, t.strings()[i]);
  else if (t.nbytes() <= kKeyBytes)
    put(k, t.raw(), t.nbytes());
  else
    putPod(k, t.raw());
}

void putType(std::string& k, const Type& t) { putStr(k, formatType(t)); }

using LocalIds = std::map<const Value*, int64_t>;
void putGraph(std::string& k, const Graph& g, LocalIds& ids);

void putValueRef(std::string& k, const Value* v, const LocalIds& ids) {
  if (!v) return k.push_back('_');
  if (auto it = ids.find(v); it != ids.end()) {
    k.push_back('L');
    putPod(k, it->second);
  } else {
    k.push_back('O'); // outer-scope (or top-level) value: by identity
    putPod(k, v);
  }
}

void putAttr(std::string& k, const Attribute& a, LocalIds& ids) {
  putPod(k, static_cast<int>(a.kind()));
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, int64_t>)
          putPod(k, x);
        else if constexpr (std::is_same_v<T, std::string>)
          putStr(k, x);
        else if constexpr (std::is_same_v<T, Tensor>)
          putTensor(k, x);
        else if constexpr (std::is_same_v<T, GraphPtr>)
          putGraph(k, *x, ids);
        else if constexpr (std::is_same_v<T, Type>)
          putType(k, x);
        else {
          putPod(k, x.size());
          for (const auto& e : x) {
            using E = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<E, float> || std::is_same_v<E, int64_t>)
              putPod(k, e);
            else if constexpr (std::is_same_v<E, std::string>)
              putStr(k, e);
            else if constexpr (std::is_same_v<E, Tensor>)
              putTensor(k, e);
            else
              putGraph(k, *e, ids);
          }
        }
      },
      a.v);
}

void putAttrs(std::string& k, const Node& n, LocalIds& ids) {
  putPod(k, n.attrs.size());
  for (const auto& [name, a] : n.attrs) {
    putStr(k, name);
    putAttr(k, a, ids);
  }
}

// A subgraph's structure: local values numbered in definition order (names don't matter).
void putGraph(std::string& k, const Graph& g, LocalIds& ids) {
  auto define = [&](const Value* v) {
    int64_t id = static_cast<int64_t>(ids.size());
    ids[v] = id;
    putType(k, v->type);
  };
  k += "G";
  putPod(k, g.inputs.size());
  for (const Value* v : g.inputs) define(v);
  putPod(k, g.constants.size());
  for (const Value* v : g.constants) {
    define(v);
    putTensor(k, v->constant ? *v->constant : Tensor());
  }
  putPod(k, g.nodes.size());
  for (const auto& n : g.nodes) {
    putStr(k, n->domain);
    putStr(k, n->op);
    putPod(k, n->inputs.size());
    for (const Value* v : n->inputs) putValueRef(k, v, ids);
    putAttrs(k, *n, ids);
    putPod(k, n->outputs.size());
    for (const Value* o : n->outputs) {
      if (o)
        define(o);
      else
        k.push_back('_');
    }
  }
  putPod(k, g.outputs.size());
  for (const Value* v : g.outputs) putValueRef(k, v, ids);
}

bool nondeterministic(const Node& n) {
  if (!n.def || (n.def->props & kNondeterministic)) return true;
  if (n.op == "Dropout" && n.domain.empty() && n.hasInput(2)) {
    const Value* t = n.inputs[2];
    if (!(t->isConstant() && t->constant->defined() && t->constant->numel() == 1 &&
          t->constant->getI64(0) == 0))
      return true;
  }
  for (const auto& [_, a] : n.attrs) {
    std::vector<GraphPtr> subs;
    if (auto* sg = std::get_if<GraphPtr>(&a.v)) subs.push_back(*sg);
    if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v)) subs = *sgs;
    for (const auto& s : subs)
      for (const auto& sn : s->nodes)
        if (nondeterministic(*sn)) return true;
  }
  return false;
}

std::string nodeKey(const Node& n) {
  std::string k;
  putStr(k, n.domain);
  putStr(k, n.op);
  putPod(k, n.inputs.size());
  LocalIds none;
  for (const Value* v : n.inputs) putValueRef(k, v, none);
  putPod(k, n.outputs.size());
  for (const Value* o : n.outputs) k.push_back(o ? 'o' : '_');
  LocalIds ids;
  putAttrs(k, n, ids);
  return k;
}

// Redirects the uses of `from` to `to` when that is faithful (no shadowing in subgraphs).
bool redirect(Graph& g, Value* from, Value* to) {
  if (!canRedirectUses(g, from, to)) return false;
  replaceAllUses(g, from, to);
  return true;
}

// A hash of up to 64 evenly spaced 8-byte pieces of t's data: cheap for big weights; equal
// tensors hash equally, and candidates are compared in full anyway.
size_t sampleHash(const Tensor& t) {
  const char* p = static_cast<const char*>(t.raw());
  size_t n = t.nbytes(), piece = std::min<size_t>(n, 8), pieces = std::min<size_t>(64, n / 8 + 1);
  std::string sample;
  for (size_t i = 0; i < pieces && n; ++i) {
    size_t off = std::min(n - piece, (n - piece) * i / std::max<size_t>(1, pieces - 1));
    sample.append(p + off, piece);
  }
  return std::hash<std::string>{}(sample);
}

// Constants are grouped by dtype and shape, then by a hash of their bytes, and merged when
// their contents are the same (Tensor::sameAs: bitwise).
bool mergeConstants(Graph& g) {
  std::map<std::pair<int, Dims>, std::vector<Value*>> groups;
  for (Value* c : g.constants)
    if (c->constant && c->constant->defined() && !isGraphOutput(g, c))
      groups[{static_cast<int>(c->constant->dtype()), c->constant->shape()}].push_back(c);
  bool changed = false;
  for (auto& [_, group] : groups) {
    if (group.size() < 2) continue;
    std::unordered_map<size_t, std::vector<Value*>> byHash;
    for (Value* c : group) {
      const Tensor& t = *c->constant;
      size_t h = 0;
      if (t.dtype() == DType::String)
        for (int64_t i = 0; i < t.numel(); ++i)
          h = h * 31 + std::hash<std::string>{}(t.strings()[i]);
      else
        h = sampleHash(t);
      std::vector<Value*>& seen = byHash[h];
      Value* same = nullptr;
      for (Value* s : seen)
        if (s->constant->sameAs(t)) same = s;
      if (same && redirect(g, c, same))
        changed = true;
      else if (!same)
        seen.push_back(c);
    }
  }
  if (changed) g.eraseUnusedValues();
  return changed;
}

bool mergeNodes(Graph& g) {
  std::unordered_map<std::string, Node*> seen;
  std::vector<Node*> dead;
  bool changed = false;
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes) nodes.push_back(n.get());
  for (Node* n : nodes) {
    if (n->outputs.empty() || nondeterministic(*n)) continue;
    auto [it, inserted] = seen.emplace(nodeKey(*n), n);
    if (inserted) continue;
    Node* keep = it->second;
    bool all = true;
    for (size_t i = 0; i < n->outputs.size(); ++i)
      if (n->outputs[i]) {
        bool moved = redirect(g, n->outputs[i], keep->outputs[i]);
        changed |= moved;
        all = all && moved;
      }
    if (all) dead.push_back(n);
  }
  // Duplicates whose outputs all moved are erased now (a graph-output duplicate became an
  // Identity of the kept node's output, see replaceAllUses).
  if (!dead.empty()) eraseNodes(g, dead);
  return changed;
}

} // namespace

bool eliminateCommonSubexpressions(Model& m) {
  std::vector<Graph*> graphs;
  forEachGraph(*m.graph, [&](Graph& g) { graphs.push_back(&g); });
  bool changed = false;
  for (auto it = graphs.rbegin(); it != graphs.rend(); ++it) { // innermost first
    changed |= mergeConstants(**it);
    changed |= mergeNodes(**it);
  }
  return changed;
}

} // namespace aicc
