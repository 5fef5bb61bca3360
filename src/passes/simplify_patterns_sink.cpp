// Simplify patterns that sink data movement through elementwise ops, only where the number of
// transposes/reshapes goes down:
//   - op(Transpose(a, p), Transpose(b, p)) -> Transpose(op(a, b), p)   (two transposes -> one;
//     a and b of the same rank, so broadcasting commutes with the permutation);
//   - op(Reshape(a, s), Reshape(b, s)) -> Reshape(op(a, b), s)         (a, b of the same shape);
//   - u(Transpose(x, p)) -> Transpose(u(x), p) for a unary elementwise u, when the moved
//     Transpose then meets another one (a consumer Transpose it composes with, or the other
//     operand of a binary op above), so that a later pattern removes a transpose.
#include "ir/rewrite.h"
#include "passes/simplify_patterns.h"

#include <set>
#include <string>

namespace aicc::simplify {

namespace {

// Elementwise ops with one data input (extra inputs must be scalar constants, e.g. Clip).
bool isUnaryElementwise(const Node& n) {
  static const std::set<std::string> kOps = {"Relu",       "Sigmoid",
                                             "Tanh",       "Exp",
                                             "Log",        "Abs",
                                             "Neg",        "Sqrt",
                                             "Reciprocal", "Floor",
                                             "Ceil",       "Round",
                                             "Erf",        "Sin",
                                             "Cos",        "Softplus",
                                             "Softsign",   "LeakyRelu",
                                             "Elu",        "Selu",
                                             "Celu",       "HardSigmoid",
                                             "HardSwish",  "Gelu",
                                             "Mish",       "ThresholdedRelu",
                                             "Not",        "Sign",
                                             "Clip",       "Cast",
                                             "IsNaN",      "IsInf"};
  if (!n.domain.empty() || !kOps.count(n.op) || !n.hasInput(0) || n.outputs.size() != 1)
    return false;
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    if (!n.inputs[i]) continue;
    const Tensor* t = constData(n.inputs[i]);
    if (!t || t->rank() != 0) return false;
  }
  return true;
}

bool isBinaryElementwise(const Node& n) {
  static const std::set<std::string> kOps = {
      "Add",      "Sub",        "Mul",         "Div",
      "Pow",      "Max",        "Min",         "Mod",
      "And",      "Or",         "Xor",         "Equal",
      "Less",     "Greater",    "LessOrEqual", "GreaterOrEqual",
      "BitShift", "BitwiseAnd", "BitwiseOr",   "BitwiseXor"};
  return n.domain.empty() && kOps.count(n.op) && n.inputs.size() == 2 && n.hasInput(0) &&
         n.hasInput(1) && n.outputs.size() == 1 && n.outputs[0];
}

// A Transpose of g with perm p whose result has exactly `uses` uses.
Node* transposeWithPerm(const Graph& g, const Value* v, const std::vector<int64_t>& p,
                        int64_t uses) {
  Node* t = producerOf(g, v, "Transpose");
  if (!t || !t->hasInput(0)) return nullptr;
  auto q = transposePerm(*t);
  return q && *q == p && numUses(g, v) == uses ? t : nullptr;
}

// `v` is (a chain of single-use unary elementwise ops over) a single-use Transpose with perm p.
bool comesFromTranspose(const Graph& g, const Value* v, const std::vector<int64_t>& p, int depth) {
  if (transposeWithPerm(g, v, p, 1)) return true;
  if (depth <= 0 || !v->producer || v->producer->owner != &g) return false;
  const Node& u = *v->producer;
  return isUnaryElementwise(u) && numUses(g, v) == 1 &&
         comesFromTranspose(g, u.inputs[0], p, depth - 1);
}

// The only use of `v` (through single-use unary elementwise ops) is a Transpose, or a binary
// elementwise op whose other operand comes from a Transpose with perm p.
bool meetsTranspose(const Graph& g, const Value* v, const std::vector<int64_t>& p, int depth) {
  auto uses = usesOf(g, v);
  if (uses.size() != 1 || isGraphOutput(g, v) || depth <= 0) return false;
  const Node& c = *uses[0].node;
  if (c.owner != &g) return false;
  if (c.op == "Transpose" && c.domain.empty()) return true;
  if (isUnaryElementwise(c) && uses[0].index == 0)
    return meetsTranspose(g, c.outputs[0], p, depth - 1);
  if (isBinaryElementwise(c) && c.inputs[0] != c.inputs[1])
    return comesFromTranspose(g, c.inputs[1 - uses[0].index], p, 4);
  return false;
}

// A copy of `n` (same op, attributes, name hint) on new inputs, inserted before `n`.
Node* cloneOn(Graph& g, Node& n, std::vector<Value*> inputs) {
  Node* c = insertNode(g, &n, n.op, std::move(inputs), 1, hintFor(n) + "_sunk", n.domain);
  c->attrs = n.attrs;
  inferNodeTypes(*c);
  return c;
}

// Puts a Transpose (perm p) or a Reshape (like `mover`) after `inner`'s result and lets it
// replace n's result.
bool finish(Graph& g, Node& n, Node* inner, Node& mover) {
  Node* t = insertNode(g, &n, mover.op, {inner->outputs[0]}, 1, hintFor(mover), "");
  t->attrs = mover.attrs;
  if (mover.op == "Reshape")
    t->inputs.push_back(mover.inputs[1]);
  else if (auto p = transposePerm(mover))
    t->attrs["perm"] = Attribute{*p};
  t->outputs[0]->type = n.outputs[0]->type;
  if (replaceValue(g, n.outputs[0], t->outputs[0])) return true;
  // Not replaceable (cannot happen for a used result): drop the unused new nodes.
  eraseNodes(g, {t, inner});
  return false;
}

bool sinkTransposeBinary(Graph& g, Node& n) {
  if (!isBinaryElementwise(n)) return false;
  Node* ta = producerOf(g, n.inputs[0], "Transpose");
  if (!ta || !ta->hasInput(0)) return false;
  auto p = transposePerm(*ta);
  if (!p) return false;
  const bool same = n.inputs[0] == n.inputs[1];
  Node* tb = transposeWithPerm(g, n.inputs[1], *p, same ? 2 : 1);
  if (!tb || (!same && numUses(g, n.inputs[0]) != 1)) return false;
  Value *a = ta->inputs[0], *b = tb->inputs[0];
  auto ra = rankOf(a), rb = rankOf(b);
  if (!ra || !rb || *ra != *rb || *ra != static_cast<int64_t>(p->size())) return false;
  if (numUses(g, n.outputs[0]) == 0) return false;
  return finish(g, n, cloneOn(g, n, {a, b}), *ta);
}

bool sinkReshapeBinary(Graph& g, Node& n) {
  if (!isBinaryElementwise(n)) return false;
  Node* ra = producerOf(g, n.inputs[0], "Reshape");
  Node* rb = producerOf(g, n.inputs[1], "Reshape");
  if (!ra || !rb || !ra->hasInput(1) || !rb->hasInput(1)) return false;
  const bool same = ra == rb;
  if (numUses(g, n.inputs[0]) != (same ? 2 : 1) || (!same && numUses(g, n.inputs[1]) != 1))
    return false;
  Value *a = ra->inputs[0], *b = rb->inputs[0];
  if (!a || !b || !sameKnownShape(a, b) || !sameKnownShape(n.inputs[0], n.inputs[1])) return false;
  if (!sameKnownShape(n.inputs[0], n.outputs[0]) || numUses(g, n.outputs[0]) == 0) return false;
  return finish(g, n, cloneOn(g, n, {a, b}), *ra);
}

bool sinkTransposeUnary(Graph& g, Node& n) {
  if (!isUnaryElementwise(n) || !n.outputs[0]) return false;
  Node* t = producerOf(g, n.inputs[0], "Transpose");
  if (!t || !t->hasInput(0) || numUses(g, n.inputs[0]) != 1) return false;
  auto p = transposePerm(*t);
  if (!p || !meetsTranspose(g, n.outputs[0], *p, 8)) return false;
  std::vector<Value*> ins = n.inputs;
  ins[0] = t->inputs[0];
  return finish(g, n, cloneOn(g, n, ins), *t);
}

} // namespace

PatternFamily sinkingPatterns() {
  return {"sinking",
          {{"sink-transpose-binary", sinkTransposeBinary},
           {"sink-reshape-binary", sinkReshapeBinary},
           {"sink-transpose-unary", sinkTransposeUnary}}};
}

} // namespace aicc::simplify
