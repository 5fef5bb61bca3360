// Simplify patterns over chains of data-movement ops and casts:
//   - Transpose(Transpose(x)): composed into one Transpose, removed when the composition is the
//     identity;
//   - Reshape(R(x)) with R in Reshape/Flatten/Squeeze/Unsqueeze: one Reshape of x;
//   - reshape-like round trips (Unsqueeze(Squeeze(x)) with the same axes, any pair giving back
//     x's known shape): x;
//   - Cast(Cast(x, T1), T2) where x -> T1 is exact (every value of x's type is representable in
//     T1): Cast(x, T2) (which the identity patterns remove when T2 is x's type).
#include "passes/simplify_patterns.h"

#include "ops/helpers.h"

#include <algorithm>

namespace aicc::simplify {

namespace {

bool isOp(const Node& n, const char* op) { return n.op == op && n.domain.empty(); }

bool isReshapeLike(const Node& n) {
  return isOp(n, "Reshape") || isOp(n, "Flatten") || isOp(n, "Squeeze") || isOp(n, "Unsqueeze");
}

Node* reshapeLikeProducer(const Graph& g, const Value* v) {
  if (!v || !v->producer || v->producer->owner != &g || !isReshapeLike(*v->producer))
    return nullptr;
  return v->producer->hasInput(0) ? v->producer : nullptr;
}

bool transposePair(Graph& g, Node& n) {
  if (!isOp(n, "Transpose") || !n.hasInput(0) || !n.outputs[0]) return false;
  Node* inner = producerOf(g, n.inputs[0], "Transpose");
  if (!inner || !inner->hasInput(0)) return false;
  auto p1 = transposePerm(*inner), p2 = transposePerm(n);
  if (!p1 || !p2 || p1->size() != p2->size()) return false;
  std::vector<int64_t> q;
  for (int64_t a : *p2) q.push_back((*p1)[static_cast<size_t>(a)]);
  Value* x = inner->inputs[0];
  if (isIdentityPerm(q)) {
    if (dtypeOf(x) != dtypeOf(n.outputs[0])) return false;
    return replaceValue(g, n.outputs[0], x);
  }
  // Composing keeps the transpose count unless the inner one then goes away.
  if (numUses(g, inner->outputs[0]) != 1) return false;
  n.inputs[0] = x;
  n.attrs["perm"] = Attribute{q};
  return true;
}

// Reshape(R(x), s) -> Reshape(x, s'): s' is s when it has no 0 ("copy the input dim", which
// referred to R's result) or allowzero is set, else the static result shape.
bool reshapeChain(Graph& g, Node& n) {
  if (!isOp(n, "Reshape") || !n.hasInput(0) || !n.hasInput(1) || !n.outputs[0]) return false;
  Node* inner = reshapeLikeProducer(g, n.inputs[0]);
  if (!inner || numUses(g, inner->outputs[0]) != 1) return false;
  Value* x = inner->inputs[0];
  if (dtypeOf(x) != dtypeOf(n.outputs[0])) return false;
  auto s = constInts(n.inputs[1]);
  bool keep = s && (n.attrInt("allowzero") != 0 || std::find(s->begin(), s->end(), 0) == s->end());
  if (!keep) {
    auto out = staticDims(n.outputs[0]);
    if (!out) return false;
    n.inputs[1] = addConstant(g, Tensor::fromI64(*out, {static_cast<int64_t>(out->size())}),
                              hintFor(n) + "_shape");
    n.attrs["allowzero"] = Attribute{int64_t{1}}; // the shape is literal
  }
  n.inputs[0] = x;
  return true;
}

// Normalized, sorted axes of a Squeeze/Unsqueeze against `rank`; for a Squeeze without axes,
// the static unit dims of its input.
std::optional<std::vector<int64_t>> squeezeAxes(const Node& n, int64_t rank) {
  std::vector<int64_t> axes;
  if (n.hasInput(1)) {
    auto a = constInts(n.inputs[1]);
    if (!a) return std::nullopt;
    for (int64_t v : *a) {
      if (v < -rank || v >= rank) return std::nullopt;
      axes.push_back(v < 0 ? v + rank : v);
    }
  } else {
    if (!isOp(n, "Squeeze")) return std::nullopt;
    auto d = staticDims(n.inputs[0]);
    if (!d) return std::nullopt;
    for (size_t i = 0; i < d->size(); ++i)
      if ((*d)[i] == 1) axes.push_back(static_cast<int64_t>(i));
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  return axes;
}

// Unsqueeze(Squeeze(x, a), a) and Squeeze(Unsqueeze(x, a), a) give x back.
bool squeezePair(Graph& g, Node& n) {
  const bool unsq = isOp(n, "Unsqueeze");
  if (!(unsq || isOp(n, "Squeeze")) || !n.hasInput(0) || !n.outputs[0]) return false;
  Node* inner = producerOf(g, n.inputs[0], unsq ? "Squeeze" : "Unsqueeze");
  if (!inner || !inner->hasInput(0)) return false;
  Value* x = inner->inputs[0];
  auto rx = rankOf(x), ry = rankOf(n.outputs[0]);
  if (!rx || !ry || *rx != *ry) return false;
  // Both axis lists index the rank of the larger tensor: x (unsqueeze of squeeze) or the middle.
  auto rMid = rankOf(inner->outputs[0]);
  if (!rMid) return false;
  const int64_t big = unsq ? *rx : *rMid;
  auto a = squeezeAxes(*inner, big), b = squeezeAxes(n, big);
  if (!a || !b || *a != *b || dtypeOf(x) != dtypeOf(n.outputs[0])) return false;
  return replaceValue(g, n.outputs[0], x);
}

// Any two reshape-like ops whose result has x's known shape: x (row-major data is unchanged).
bool reshapeRoundTrip(Graph& g, Node& n) {
  if (!isReshapeLike(n) || !n.hasInput(0) || !n.outputs[0]) return false;
  Node* inner = reshapeLikeProducer(g, n.inputs[0]);
  if (!inner) return false;
  Value* x = inner->inputs[0];
  if (!sameKnownShape(x, n.outputs[0]) || dtypeOf(x) != dtypeOf(n.outputs[0])) return false;
  return replaceValue(g, n.outputs[0], x);
}

// Significand bits (with the implicit one) of the standard float types; 0 for others.
int significandBits(DType t) {
  switch (t) {
  case DType::F16:
    return 11;
  case DType::BF16:
    return 8;
  case DType::F32:
    return 24;
  case DType::F64:
    return 53;
  default:
    return 0;
  }
}

bool isPlainInt(DType t) {
  switch (t) {
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
    return true;
  default:
    return false;
  }
}

// Whether every value of `from` converts exactly (and back-distinguishably) into `to`.
bool castIsExact(DType from, DType to) {
  if (from == to) return true;
  const bool fromInt = isPlainInt(from), toInt = isPlainInt(to);
  const int fb = dtypeBits(from), tb = dtypeBits(to);
  if (from == DType::Bool) return toInt || significandBits(to) > 0;
  if (fromInt && toInt) {
    if (isSigned(from) && !isSigned(to)) return false;
    return tb > fb; // wider, same signedness or unsigned -> signed
  }
  if (fromInt && significandBits(to) > 0)
    return (isSigned(from) ? fb - 1 : fb) <= significandBits(to);
  const int fs = significandBits(from), ts = significandBits(to);
  if (fs > 0 && ts > 0) return to == DType::F64 || (to == DType::F32 && from != DType::F64);
  return false;
}

bool castChain(Graph& g, Node& n) {
  if (!isOp(n, "Cast") || !n.hasInput(0) || !n.outputs[0]) return false;
  Node* inner = producerOf(g, n.inputs[0], "Cast");
  if (!inner || !inner->hasInput(0)) return false;
  DType t0 = dtypeOf(inner->inputs[0]), t1 = dtypeOf(inner->outputs[0]);
  if (t0 == DType::Undefined || t1 != static_cast<DType>(inner->attrInt("to"))) return false;
  if (!castIsExact(t0, t1)) return false;
  n.inputs[0] = inner->inputs[0];
  return true;
}

} // namespace

PatternFamily shapeChainPatterns() {
  return {"shape-chains",
          {{"transpose-pair", transposePair},
           {"squeeze-pair", squeezePair},
           {"reshape-round-trip", reshapeRoundTrip},
           {"reshape-chain", reshapeChain}}};
}

PatternFamily castChainPatterns() { return {"cast-chains", {{"cast-chain", castChain}}}; }

} // namespace aicc::simplify
