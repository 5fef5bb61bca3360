#include "passes/fuse_elementwise.h"

#include "ir/rewrite.h"
#include "ops/op_def.h"
#include "passes/fuse_group.h"

#include <algorithm>
#include <set>

namespace aicc {

namespace {

// QuantizeLinear / DequantizeLinear per tensor between f32 and u8/i8, scale and zero point
// scalar constants: elementwise (loop/compute.cpp), so a DQ -> float ops -> Q chain of a QDQ model
// runs as one u8 -> u8 loop.
bool isTensorQuantization(const Node& n) {
  if (!n.domain.empty() || (n.op != "QuantizeLinear" && n.op != "DequantizeLinear") ||
      n.inputs.size() < 2 || !n.inputs[0] || !n.inputs[1] || n.outputs.size() != 1 ||
      !n.outputs[0] || n.attrInt("block_size") != 0)
    return false;
  auto scalar = [](const Value* v) { return v && v->constant && v->constant->numel() == 1; };
  if (!scalar(n.inputs[1]) || n.inputs[1]->type.dtype != DType::F32 ||
      (n.hasInput(2) && !scalar(n.inputs[2])))
    return false;
  const DType x = n.inputs[0]->type.dtype, y = n.outputs[0]->type.dtype;
  const bool q8 = n.op == "QuantizeLinear" ? y == DType::U8 || y == DType::I8
                                           : x == DType::U8 || x == DType::I8;
  return q8 && (n.op == "QuantizeLinear" ? x : y) == DType::F32 &&
         (!n.hasInput(2) || n.inputs[2]->type.dtype == (n.op == "QuantizeLinear" ? y : x));
}

bool isFusible(const Node& n) {
  if (!n.def || isFusedNode(n) || hasSubgraphs(n)) return false;
  if (n.def->props & kNondeterministic) return false;
  bool elementwise = (n.def->props & kElementwise) || (n.domain.empty() && n.op == "Identity") ||
                     isTensorQuantization(n);
  if (!elementwise || n.outputs.size() != 1 || !n.outputs[0]) return false;
  // Integer Pow loops over the exponent's bits: its own lowering (loop/lower_int_pow.cpp).
  if (n.op == "Pow" && n.inputs.size() == 2 && n.inputs[0] && n.inputs[1] &&
      isInteger(n.inputs[0]->type.dtype) && isInteger(n.inputs[1]->type.dtype))
    return false;
  return n.outputs[0]->type.isTensor() && n.outputs[0]->type.shape.has_value();
}

bool isReduction(const Node& n) {
  static const std::set<std::string> kReductions = {
      "Softmax",   "LogSoftmax",      "LayerNormalization", "RMSNormalization", "ReduceMean",
      "ReduceSum", "ReduceMax",       "ReduceMin",          "ReduceProd",       "ReduceL1",
      "ReduceL2",  "ReduceSumSquare", "ReduceLogSum",       "ReduceLogSumExp"};
  if (!n.def || !n.domain.empty() || !kReductions.count(n.op) || hasSubgraphs(n)) return false;
  if (n.def->props & kNondeterministic) return false;
  if (n.inputs.size() > 1 && n.inputs[1] && !n.inputs[1]->constant && !n.outputs.empty() &&
      n.outputs[0] && n.outputs[0]->type.shape && !toDims(*n.outputs[0]->type.shape))
    return false; // axes given at run time deciding symbolic dims: lowered alone (lower_reduce)
  // A softmax along a symbolic axis: lowered alone at the run's sizes (its prologue's temp would
  // be at the bound's).
  if ((n.op == "Softmax" || n.op == "LogSoftmax") && n.inputs[0] && n.inputs[0]->type.shape) {
    const Shape& s = *n.inputs[0]->type.shape;
    int64_t axis = n.attrInt("axis", -1);
    if (axis < 0) axis += int64_t(s.size());
    if (axis >= 0 && axis < int64_t(s.size()) && !s[size_t(axis)].isStatic()) return false;
  }
  return !n.inputs.empty() && n.inputs[0] && !n.outputs.empty() && n.outputs[0];
}

int64_t countOf(const std::map<const Value*, int64_t>& counts, const Value* v) {
  auto it = counts.find(v);
  return it == counts.end() ? 0 : it->second;
}

struct Grower {
  Graph& g;
  const std::map<const Value*, int64_t>& counts;
  const std::set<const Node*>& taken;
  ShapeOracle& shapes;
  std::vector<Node*> group;
  std::set<const Node*> inGroup;

  void add(Node* n) {
    group.push_back(n);
    inGroup.insert(n);
  }
  // Every use of v is an input slot of a group node (graph outputs and subgraph reads count as
  // uses elsewhere).
  bool usedOnlyInGroup(const Value* v) const {
    int64_t k = 0;
    for (const Node* n : group)
      for (const Value* in : n->inputs) k += in == v;
    return k == countOf(counts, v);
  }
  // Grows the group upwards from group[start..], adding fusible producers of `shape`.
  void grow(size_t start, const Value* shape) {
    for (size_t i = start; i < group.size(); ++i) {
      for (Value* v : group[i]->inputs) {
        if (!v || !v->producer || v->owner != &g) continue;
        Node* p = v->producer;
        if (inGroup.count(p) || taken.count(p) || !isFusible(*p)) continue;
        if (!shapes.same(p->outputs[0], shape) || !usedOnlyInGroup(v)) continue;
        add(p);
      }
    }
  }
};

bool fuseInGraph(Graph& g) {
  std::map<const Value*, int64_t> counts = useCounts(g);
  std::vector<Node*> order;
  for (const auto& n : g.nodes) order.push_back(n.get());
  std::set<const Node*> taken; // fused already (pointers may dangle: never dereferenced)
  ShapeOracle shapes;
  bool changed = false;
  for (size_t i = order.size(); i-- > 0;) {
    Node* n = order[i];
    if (taken.count(n)) continue;
    Grower gr{g, counts, taken, shapes, {}, {}};
    std::string kind;
    if (isFusible(*n)) {
      gr.add(n);
      gr.grow(0, n->outputs[0]);
      kind = "elementwise";
    } else if (isReduction(*n)) {
      Value* in = n->inputs[0];
      Node* p = in->producer;
      if (!p || in->owner != &g || taken.count(p) || !isFusible(*p) || countOf(counts, in) != 1)
        continue;
      gr.add(n);
      gr.add(p);
      gr.grow(1, p->outputs[0]);
      kind = "reduction";
    } else {
      continue;
    }
    if (gr.group.size() < 2) continue;
    // A reduction's prologue of f16/bf16 values (Casts to f32 before it: widen-reduced-floats)
    // stays an elementwise group of its own: the fused reduction kernels read f32.
    if (kind == "reduction" && std::any_of(gr.group.begin(), gr.group.end(), [](const Node* x) {
          return std::any_of(x->inputs.begin(), x->inputs.end(), [](const Value* v) {
            return v && (v->type.dtype == DType::F16 || v->type.dtype == DType::BF16);
          });
        }))
      continue;
    if (!fuseGroup(g, gr.group, kind, counts)) continue;
    taken.insert(gr.group.begin(), gr.group.end());
    shapes.clear();
    changed = true;
  }
  return changed;
}

} // namespace

bool fuseElementwise(Model& m) {
  bool changed = false;
  for (Graph* g : fusionScopes(*m.graph)) changed |= fuseInGraph(*g);
  return changed;
}

} // namespace aicc
