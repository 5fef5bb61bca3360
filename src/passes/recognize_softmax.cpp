// Softmax before opset 13 flattened its input to 2-D; the importer's upgrade spells that as
// Reshape(Softmax(Flatten(x, a), -1), Shape(x)). When a is the last axis of x this is exactly
// Softmax(x, -1); recognizing it first lets attention see its Softmax.
#include "ir/rewrite.h"
#include "passes/recognize_internal.h"

namespace aicc::recognize {

namespace {

Node* trySoftmaxLegacy(Ctx& c, Node* r) {
  if (r->op != "Reshape" || !r->domain.empty() || !r->hasInput(1)) return nullptr;
  Node* s = c.producer(r->inputs[0], "Softmax");
  Node* shape = c.producer(r->inputs[1], "Shape");
  if (!s || !shape || !c.singleUse(r->inputs[0])) return nullptr;
  Node* f = c.producer(s->inputs[0], "Flatten");
  if (!f || !c.singleUse(s->inputs[0]) || f->inputs[0] != shape->inputs[0]) return nullptr;
  Value* x = f->inputs[0];
  auto rank = rankOf(x);
  if (!rank || *rank == 0 || shape->attrInt("start", 0) != 0 || shape->attr("end")) return nullptr;
  int64_t fa = f->attrInt("axis"), sa = s->attrInt("axis");
  if (fa < 0) fa += *rank;
  if (fa != *rank - 1 || (sa != -1 && sa != 1)) return nullptr;
  // allowzero = 0 would copy a 0 dim of Shape(x) from the flattened input instead.
  if (r->attrInt("allowzero") != 1)
    for (const Dim& d : *x->type.shape)
      if (!d.isStatic() || d.value == 0) return nullptr;
  Node* n = c.add(r, "Softmax", {x}, "softmax");
  n->attrs["axis"] = Attribute{int64_t{-1}};
  c.replace(r, n->outputs[0], {r, s, f});
  // Shape(x) usually had no other user: drop it so that x's uses are exact for attention.
  if (c.uses.count(shape->outputs[0]) == 0) {
    eraseNodes(c.g, {shape});
    c.refresh();
  }
  return n;
}

} // namespace

int64_t recognizeSoftmaxLegacy(Ctx& c) { return sweep(c, trySoftmaxLegacy); }

} // namespace aicc::recognize
