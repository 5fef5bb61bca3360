// Constant folding: evaluates nodes whose inputs are all constants with the op's reference kernel
// (the interpreter's meaning of the op) and replaces their outputs by constants.
//
// Not folded: nondeterministic ops (random ops, Dropout in training mode), ops with subgraph
// attributes, nodes whose kernel fails (the error stays a run-time error), results that are not
// plain tensors or disagree with the inferred type, results with more than `limit` elements,
// and an Identity of a constant that names a graph output (folding it again would loop).
#include "passes/constant_folding.h"

#include "ir/rewrite.h"
#include "ops/op_def.h"

namespace aicc {
namespace {

bool hasSubgraph(const Node& n) {
  for (const auto& [_, a] : n.attrs)
    if (a.kind() == Attribute::Kind::Graph || a.kind() == Attribute::Kind::Graphs) return true;
  return false;
}

bool allInputsConstant(const Node& n) {
  for (const Value* v : n.inputs)
    if (v && !(v->isConstant() && v->constant->defined())) return false;
  return true;
}

// Dropout draws random masks in training mode (input 2 true or not constant).
bool isRandom(const Node& n) {
  if (n.def && (n.def->props & kNondeterministic)) return true;
  if (n.op == "Dropout" && n.domain.empty() && n.hasInput(2)) {
    const Value* t = n.inputs[2];
    return !(t->isConstant() && t->constant->defined() && t->constant->numel() == 1 &&
             t->constant->getI64(0) == 0);
  }
  return false;
}

// Elements of `t` when its shape is fully static, else -1.
int64_t staticNumel(const Type& t) {
  if (!t.isTensor() || !t.shape) return -1;
  int64_t n = 1;
  for (const Dim& d : *t.shape) {
    if (!d.isStatic()) return -1;
    if (d.value != 0 && n > (int64_t{1} << 62) / d.value) return int64_t{1} << 62;
    n *= d.value;
  }
  return n;
}

// Does the computed tensor agree with the value's inferred type (dtype, rank, static dims)?
bool agrees(const Tensor& t, const Type& ty) {
  if (ty.kind == Type::Kind::Unknown) return true;
  if (!ty.isTensor()) return false;
  if (ty.dtype != DType::Undefined && ty.dtype != t.dtype()) return false;
  if (!ty.shape) return true;
  if (ty.shape->size() != t.shape().size()) return false;
  for (size_t i = 0; i < ty.shape->size(); ++i)
    if ((*ty.shape)[i].isStatic() && (*ty.shape)[i].value != t.shape()[i]) return false;
  return true;
}

// Evaluates `n` when it qualifies; returns one tensor per output (undefined for omitted outputs),
// or nothing when the node must stay.
std::optional<std::vector<Tensor>> evaluate(const Node& n, int64_t limit) {
  bool isConstantNode = n.op == "Constant" && n.domain.empty();
  if (!n.def || !n.def->kernel || n.outputs.empty() || isRandom(n) || hasSubgraph(n) ||
      !allInputsConstant(n))
    return std::nullopt;
  if (!isConstantNode)
    for (const Value* o : n.outputs)
      if (o && staticNumel(o->type) > limit) return std::nullopt; // known too big: don't compute
  std::vector<RValue> args;
  args.reserve(n.inputs.size());
  for (const Value* v : n.inputs) args.push_back(v ? RValue::of(*v->constant) : RValue::none());
  std::vector<const RValue*> argPtrs;
  for (size_t i = 0; i < n.inputs.size(); ++i) argPtrs.push_back(n.inputs[i] ? &args[i] : nullptr);
  KernelCtx ctx(n, std::move(argPtrs),
                [](const Graph&, const std::vector<RValue>&) -> std::vector<RValue> {
                  fail("internal: constant folding does not run subgraphs");
                });
  std::vector<RValue> outs;
  try {
    outs = n.def->kernel(ctx);
  } catch (const Error&) {
    return std::nullopt; // fails at run time too: leave it there
  }
  std::vector<Tensor> result(n.outputs.size());
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const Value* o = n.outputs[i];
    if (!o) continue;
    if (i >= outs.size() || outs[i].kind != RValue::Kind::Tensor) return std::nullopt;
    const Tensor& t = outs[i].tensor;
    if (!t.defined() || !agrees(t, o->type)) return std::nullopt;
    if (!isConstantNode && t.numel() > limit) return std::nullopt;
    result[i] = t;
  }
  return result;
}

bool foldGraph(Graph& g, int64_t limit) {
  std::vector<Node*> folded;
  // Snapshot: replaceByConstant may append Identity nodes for graph outputs.
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes) nodes.push_back(n.get());
  for (Node* n : nodes) {
    bool isIdentity = n->op == "Identity" && n->domain.empty();
    if (isIdentity && isGraphOutput(g, n->outputs[0])) continue; // names a graph output: keep
    auto result = evaluate(*n, limit);
    if (!result) continue;
    for (size_t i = 0; i < n->outputs.size(); ++i)
      if (Value* o = n->outputs[i]) {
        Tensor t = (*result)[i];
        // A shared-storage result (e.g. Reshape of a weight) is copied to own its data.
        replaceByConstant(g, o, t.clone());
      }
    folded.push_back(n);
  }
  if (!folded.empty()) eraseNodes(g, folded);
  return !folded.empty();
}

} // namespace

bool foldConstants(Model& m, int64_t limit) {
  bool changed = false;
  forEachGraph(*m.graph, [&](Graph& g) { changed |= foldGraph(g, limit); });
  return changed;
}

} // namespace aicc
