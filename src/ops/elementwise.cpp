// The elementwise op family: unary math, activations, binary arithmetic/logic/comparison,
// variadic Max/Min/Sum/Mean, Where, Clip, Cast/CastLike. Each group lives in its own file
// (see ops/elementwise.h); this file wires them up and holds the pieces they share.
#include "ops/elementwise.h"

namespace aicc {

std::vector<AttrSpec> legacyConsumedInputs() {
  return {{"consumed_inputs", Attribute::Kind::Ints, std::nullopt, false}};
}

void appendUnitDims(ImportCtx& c, size_t input, int64_t count) {
  if (count <= 0) return;
  Value* v = c.node.inputs.at(input);
  int64_t rank = v->type.shape ? static_cast<int64_t>(v->type.shape->size()) : -1;
  if (v->constant) {
    Dims d = v->constant->shape();
    d.insert(d.end(), static_cast<size_t>(count), 1);
    c.node.inputs[input] = c.constant(v->constant->reshaped(d), "bcast");
    return;
  }
  AICC_CHECK(rank >= 0, "legacy broadcast needs the rank of input {}", input);
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < count; ++i) axes.push_back(rank + i);
  Node* u = c.emitBefore("Unsqueeze", {v, c.constant(Tensor::fromI64(axes), "axes")}, 1);
  c.node.inputs[input] = u->outputs[0];
}

void requireSameInDTypes(InferCtx& c, size_t from) {
  DType first = DType::Undefined;
  size_t firstIdx = 0;
  for (size_t i = from; i < c.numInputs(); ++i) {
    DType t = c.inDType(i);
    if (t == DType::Undefined) continue;
    if (first == DType::Undefined) {
      first = t;
      firstIdx = i;
    } else {
      AICC_CHECK(t == first, "input {} has element type {} but input {} has {}", i, dtypeName(t),
                 firstIdx, dtypeName(first));
    }
  }
}

void requireFloat(const KernelCtx& c, size_t i) {
  DType t = c.in(i).dtype();
  AICC_CHECK(isFloat(t), "input {} has unsupported element type {} (a float type is required)", i,
             dtypeName(t));
}

void registerElementwiseOps(OpRegistry& r) {
  registerElementwiseUnaryOps(r);
  registerElementwiseActivationOps(r);
  registerElementwiseBinaryOps(r);
  registerElementwiseVariadicOps(r);
  registerElementwiseCastOps(r);
}

} // namespace aicc
