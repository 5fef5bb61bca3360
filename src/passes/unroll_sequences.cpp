#include "passes/unroll_sequences.h"

#include "ir/rewrite.h"
#include "passes/shape_inference.h"

#include <map>
#include <optional>

namespace aicc {
namespace {

// The constant scalar integer input i, nullopt when absent; false when present but not constant.
bool constInt(const Node& n, size_t i, std::optional<int64_t>& out) {
  out.reset();
  if (!n.hasInput(i)) return true;
  const Value* v = n.inputs[i];
  if (!v->constant || v->constant->numel() != 1 || !isInteger(v->constant->dtype())) return false;
  out = v->constant->getI64(0);
  return true;
}

// Position input i of n against a list of `size` (negative from the end; absent: `dflt`) into
// [0, size + extra), or nullopt when it is not a constant in range (the reference says why).
std::optional<int64_t> position(const Node& n, size_t i, int64_t size, int64_t dflt,
                                int64_t extra) {
  std::optional<int64_t> p;
  if (!constInt(n, i, p)) return std::nullopt;
  int64_t at = p ? *p : dflt;
  if (at < 0) at += size;
  if (at < 0 || at >= size + extra) return std::nullopt;
  return at;
}

// A list element: a tensor value, or chunk k of a SplitToSequence made into a Split only when a
// reader needs it (a sequence nothing reads as tensors costs no node).
struct Elem {
  Value* v = nullptr;
  Node* split = nullptr;
  int64_t chunk = 0;
};
using List = std::vector<Elem>;

// SplitToSequence n's chunks: with a 1-D split input, as many as it has entries (its values may
// be given at run time: a Split takes them); else the sizes along the axis (a static size), in
// chunks of the scalar split or of 1. nullopt when not known.
struct Chunks {
  int64_t count = 0;
  std::vector<int64_t> sizes; // empty: the split input's values
};
std::optional<Chunks> splitChunks(const Node& n) {
  const Value* x = n.inputs.at(0);
  if (!x->type.isTensor() || !x->type.shape || x->type.shape->empty()) return std::nullopt;
  const Shape& xs = *x->type.shape;
  int64_t axis = n.attrInt("axis", 0);
  if (axis < 0) axis += int64_t(xs.size());
  if (axis < 0 || axis >= int64_t(xs.size())) return std::nullopt;
  if (n.hasInput(1)) {
    const Value* s = n.inputs[1];
    if (!s->type.isTensor() || !s->type.shape || s->type.shape->size() > 1) return std::nullopt;
    if (s->type.shape->size() == 1) {
      const Dim& k = (*s->type.shape)[0];
      if (!k.isStatic() || k.value < 1) return std::nullopt;
      return Chunks{k.value, {}};
    }
  }
  if (!xs[size_t(axis)].isStatic()) return std::nullopt;
  const int64_t len = xs[size_t(axis)].value;
  int64_t c = 1;
  if (n.hasInput(1)) {
    const Value* s = n.inputs[1];
    if (!s->constant || !isInteger(s->constant->dtype())) return std::nullopt;
    c = s->constant->getI64(0);
    if (c <= 0) return std::nullopt;
  }
  Chunks r;
  for (int64_t at = 0; at < len; at += c) r.sizes.push_back(std::min(c, len - at));
  r.count = int64_t(r.sizes.size());
  if (r.count == 0) return std::nullopt;
  return r;
}

class Unroller {
public:
  explicit Unroller(Graph& g) : g_(g) {}

  bool run() {
    bool changed = false;
    std::vector<Node*> nodes;
    for (const auto& n : g_.nodes) nodes.push_back(n.get());
    for (Node* n : nodes) changed = visit(*n) || changed;
    return changed;
  }

private:
  // Tracks n's result as a list, or replaces n (a reader) by tensor ops; true for the latter.
  bool visit(Node& n) {
    if (!n.domain.empty() || n.outputs.empty() || !n.outputs[0]) return false;
    Value* out = n.outputs[0];
    if (n.op == "SequenceEmpty") {
      lists_[out] = {};
      return false;
    }
    if (n.op == "SequenceConstruct") {
      List r;
      for (Value* v : n.inputs) r.push_back({v});
      lists_[out] = std::move(r);
      return false;
    }
    if (n.op == "SplitToSequence") {
      if (auto c = splitChunks(n)) {
        List r;
        for (int64_t k = 0; k < c->count; ++k) r.push_back({nullptr, &n, k});
        lists_[out] = std::move(r);
      }
      return false;
    }
    auto it = n.hasInput(0) ? lists_.find(n.inputs[0]) : lists_.end();
    if (it == lists_.end()) return false;
    const List l = it->second;
    const int64_t size = int64_t(l.size());
    if (n.op == "Identity") {
      lists_[out] = l;
    } else if (n.op == "SequenceInsert") {
      if (auto at = position(n, 2, size, size, 1)) {
        List r = l;
        r.insert(r.begin() + *at, Elem{n.inputs[1]});
        lists_[out] = std::move(r);
      }
    } else if (n.op == "SequenceErase") {
      if (auto at = position(n, 1, size, size - 1, 0)) {
        List r = l;
        r.erase(r.begin() + *at);
        lists_[out] = std::move(r);
      }
    } else if (n.op == "SequenceAt") {
      auto at = position(n, 1, size, 0, 0);
      if (!at || !n.hasInput(1)) return false;
      redirect(n, out, value(l[size_t(*at)]));
      return true;
    } else if (n.op == "SequenceLength") {
      replaceByConstant(g_, out, Tensor::scalar(DType::I64, double(size)));
      return true;
    } else if (n.op == "ConcatFromSequence" && size > 0) {
      std::vector<Value*> parts;
      for (const Elem& e : l) parts.push_back(value(e));
      const int64_t axis = n.attrInt("axis");
      if (n.attrInt("new_axis", 0) != 0) {
        Value* axes = constI64(out->name + "_axis", {axis});
        for (Value*& v : parts)
          v = insertNode(g_, &n, "Unsqueeze", {v, axes}, 1, out->name + "_item")->outputs[0];
      }
      Node* c = insertNode(g_, &n, "Concat", parts, 1, out->name + "_concat");
      c->attrs["axis"] = Attribute{axis};
      redirect(n, out, c->outputs[0]);
      return true;
    }
    return false;
  }

  // The tensor of an element: a chunk's Split made (once per SplitToSequence) before it.
  Value* value(const Elem& e) {
    if (e.v) return e.v;
    List& made = splits_[e.split];
    if (made.empty()) {
      Node& n = *e.split;
      const Chunks c = *splitChunks(n);
      const std::string base = n.outputs[0]->name;
      Value* sizes = c.sizes.empty() ? n.inputs[1] : constI64(base + "_sizes", c.sizes);
      Node* split = insertNode(g_, &n, "Split", {n.inputs[0], sizes}, int(c.count), base + "_part");
      split->attrs["axis"] = Attribute{n.attrInt("axis", 0)};
      Value* axes = nullptr;
      for (Value* v : split->outputs) {
        if (!n.hasInput(1) && n.attrInt("keepdims", 1) == 0) {
          if (!axes) axes = constI64(base + "_axis", {n.attrInt("axis", 0)});
          v = insertNode(g_, &n, "Squeeze", {v, axes}, 1, base + "_item")->outputs[0];
        }
        made.push_back({v});
      }
    }
    return made[size_t(e.chunk)].v;
  }

  Value* constI64(const std::string& base, std::vector<int64_t> v) {
    return g_.addConstant(freshName(g_, base), Tensor::fromI64(v));
  }

  // Replaces `from` (a result of n) by `to` wherever it is used.
  void redirect(Node& n, Value* from, Value* to) {
    if (!canRedirectUses(g_, from, to))
      to = insertNode(g_, &n, "Identity", {to}, 1, from->name)->outputs[0];
    replaceAllUses(g_, from, to);
  }

  Graph& g_;
  std::map<const Value*, List> lists_;
  std::map<const Node*, List> splits_;
};

} // namespace

bool unrollSequences(Model& m) {
  bool changed = false;
  forEachGraph(*m.graph, [&](Graph& g) { changed = Unroller(g).run() || changed; });
  if (changed) inferShapes(*m.graph);
  return changed;
}

} // namespace aicc
