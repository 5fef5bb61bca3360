// Simplify patterns: ops that do nothing (Identity, inference-mode Dropout, Cast to the same
// type, Reshape/Expand/Tile/Pad/Slice that keep the shape and data, identity Transpose, one-input
// Concat, one-output Split, OptionalGetElement / OptionalHasElement of a tensor or sequence),
// CastLike as the Cast it is, and
// arithmetic identities (x*1, 1*x, x+0, 0+x, x-0, x/1).
#include "ir/rewrite.h"
#include "passes/simplify_patterns.h"

namespace aicc::simplify {

namespace {

bool isOp(const Node& n, const char* op) { return n.op == op && n.domain.empty(); }

// Replaces n's output 0 by `x` when they are the same tensor (same dtype and known shape).
bool forwardInput(Graph& g, Node& n, Value* x) {
  if (n.outputs.empty() || !n.outputs[0] || !x) return false;
  Value* y = n.outputs[0];
  if (dtypeOf(x) == DType::Undefined || dtypeOf(x) != dtypeOf(y)) return false;
  if (!sameKnownShape(x, y)) return false;
  return replaceValue(g, y, x);
}

// Replaces n's output 0 by `x` when the node's attributes/inputs already prove it copies x.
bool forwardProven(Graph& g, Node& n, Value* x) {
  if (n.outputs.empty() || !n.outputs[0] || !x) return false;
  DType a = dtypeOf(x), b = dtypeOf(n.outputs[0]);
  if (a != DType::Undefined && b != DType::Undefined && a != b) return false;
  return replaceValue(g, n.outputs[0], x);
}

bool identity(Graph& g, Node& n) {
  if (!isOp(n, "Identity") || !n.hasInput(0)) return false;
  return forwardProven(g, n, n.inputs[0]);
}

// Dropout in inference mode (training_mode absent or a constant false) whose mask is unused.
bool dropout(Graph& g, Node& n) {
  if (!isOp(n, "Dropout") || !n.hasInput(0)) return false;
  if (n.hasInput(2)) {
    const Tensor* t = constData(n.inputs[2]);
    if (!t || t->numel() != 1 || t->getI64(0) != 0) return false;
  }
  if (n.outputs.size() > 1 && n.outputs[1] && numUses(g, n.outputs[1]) > 0) return false;
  return forwardProven(g, n, n.inputs[0]);
}

// OptionalGetElement of a tensor or a sequence (not an optional) is that value;
// OptionalHasElement of one is true.
bool optionalOfTensor(Graph& g, Node& n) {
  if (!n.hasInput(0) || n.outputs.empty() || !n.outputs[0]) return false;
  const Type::Kind k = n.inputs[0]->type.kind;
  if (k != Type::Kind::Tensor && k != Type::Kind::Sequence) return false;
  if (isOp(n, "OptionalGetElement")) // (a graph output kept: through an Identity)
    return forwardProven(g, n, n.inputs[0]) ||
           (numUses(g, n.outputs[0]) > 0 &&
            replaceValue(
                g, n.outputs[0],
                insertNode(g, &n, "Identity", {n.inputs[0]}, 1, n.outputs[0]->name)->outputs[0]));
  if (!isOp(n, "OptionalHasElement") || numUses(g, n.outputs[0]) == 0) return false;
  replaceByConstant(g, n.outputs[0], Tensor::scalar(DType::Bool, 1));
  return true;
}

bool castSameType(Graph& g, Node& n) {
  if (!isOp(n, "Cast") || !n.hasInput(0)) return false;
  return dtypeOf(n.inputs[0]) == static_cast<DType>(n.attrInt("to")) &&
         forwardProven(g, n, n.inputs[0]);
}

// CastLike(x, like) is Cast(x) to like's element type: the node no longer reads `like` (whose
// dims, symbolic ones included, it never needed), and the Cast may fold away or fuse.
bool castLikeToCast(Graph& g, Node& n) {
  if (!isOp(n, "CastLike") || !n.hasInput(0) || !n.hasInput(1) || n.outputs.empty() ||
      !n.outputs[0] || numUses(g, n.outputs[0]) == 0)
    return false;
  const DType to = dtypeOf(n.inputs[1]);
  if (to == DType::Undefined || !n.inputs[1]->type.isTensor()) return false;
  Node* c = insertNode(g, &n, "Cast", {n.inputs[0]}, 1, hintFor(n) + "_cast", "");
  c->attrs["to"] = Attribute{int64_t(to)};
  if (auto it = n.attrs.find("saturate"); it != n.attrs.end()) c->attrs["saturate"] = it->second;
  c->outputs[0]->type = n.outputs[0]->type;
  if (replaceValue(g, n.outputs[0], c->outputs[0])) return true;
  eraseNodes(g, {c});
  return false;
}

// Reshape / Expand whose result has the input's (known) shape: the data is unchanged.
bool sameShapeReshape(Graph& g, Node& n) {
  if (!(isOp(n, "Reshape") || isOp(n, "Expand")) || !n.hasInput(0)) return false;
  return forwardInput(g, n, n.inputs[0]);
}

bool identityTranspose(Graph& g, Node& n) {
  if (!isOp(n, "Transpose") || !n.hasInput(0)) return false;
  auto p = transposePerm(n);
  return p && isIdentityPerm(*p) && forwardProven(g, n, n.inputs[0]);
}

bool unitTile(Graph& g, Node& n) {
  if (!isOp(n, "Tile") || !n.hasInput(1)) return false;
  auto reps = constInts(n.inputs[1]);
  if (!reps) return false;
  for (int64_t r : *reps)
    if (r != 1) return false;
  return forwardProven(g, n, n.inputs[0]);
}

bool singleConcat(Graph& g, Node& n) {
  if (!isOp(n, "Concat") || n.inputs.size() != 1 || !n.hasInput(0)) return false;
  return forwardProven(g, n, n.inputs[0]);
}

bool singleSplit(Graph& g, Node& n) {
  if (!isOp(n, "Split") || n.outputs.size() != 1 || !n.hasInput(0)) return false;
  return forwardProven(g, n, n.inputs[0]);
}

bool zeroPad(Graph& g, Node& n) {
  if (!isOp(n, "Pad") || !n.hasInput(0) || !n.hasInput(1)) return false;
  auto pads = constInts(n.inputs[1]);
  if (!pads) return false;
  for (int64_t p : *pads)
    if (p != 0) return false;
  return forwardProven(g, n, n.inputs[0]);
}

// Slice with unit steps whose result has the input's static shape takes everything.
bool fullSlice(Graph& g, Node& n) {
  if (!isOp(n, "Slice") || !n.hasInput(0)) return false;
  if (n.hasInput(4)) {
    auto steps = constInts(n.inputs[4]);
    if (!steps) return false;
    for (int64_t s : *steps)
      if (s != 1) return false;
  }
  auto in = staticDims(n.inputs[0]), out = staticDims(n.outputs[0]);
  return in && out && *in == *out && forwardInput(g, n, n.inputs[0]);
}

// ---- Arithmetic identities ----------------------------------------------------------------------

// `op(x, c)` (or `op(c, x)` when `commutes`) where c is a constant whose elements all equal `unit`,
// replaced by x when broadcasting leaves x's shape and dtype unchanged.
bool unitOperand(Graph& g, Node& n, const char* op, double unit, bool commutes) {
  if (!isOp(n, op) || n.inputs.size() != 2 || !n.hasInput(0) || !n.hasInput(1)) return false;
  for (int side = 0; side < (commutes ? 2 : 1); ++side) {
    Value* x = n.inputs[static_cast<size_t>(side)];
    const Tensor* c = constData(n.inputs[static_cast<size_t>(1 - side)]);
    if (!c || !allEqual(*c, unit)) continue;
    if (forwardInput(g, n, x)) return true;
  }
  return false;
}

bool mulOne(Graph& g, Node& n) { return unitOperand(g, n, "Mul", 1.0, true); }
bool addZero(Graph& g, Node& n) { return unitOperand(g, n, "Add", 0.0, true); }
bool subZero(Graph& g, Node& n) { return unitOperand(g, n, "Sub", 0.0, false); }
bool divOne(Graph& g, Node& n) { return unitOperand(g, n, "Div", 1.0, false); }

} // namespace

PatternFamily identityOpPatterns() {
  return {"identity-ops",
          {{"identity", identity},
           {"dropout-inference", dropout},
           {"optional-of-tensor", optionalOfTensor},
           {"cast-same-type", castSameType},
           {"castlike-to-cast", castLikeToCast},
           {"reshape-same-shape", sameShapeReshape},
           {"transpose-identity", identityTranspose},
           {"tile-ones", unitTile},
           {"concat-one", singleConcat},
           {"split-one", singleSplit},
           {"pad-zero", zeroPad},
           {"slice-all", fullSlice}}};
}

PatternFamily arithmeticPatterns() {
  return {"arithmetic",
          {{"mul-one", mulOne}, {"add-zero", addZero}, {"sub-zero", subZero}, {"div-one", divOne}}};
}

} // namespace aicc::simplify
