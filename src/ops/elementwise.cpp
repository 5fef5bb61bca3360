// The elementwise op family: unary math, activations, binary arithmetic/logic/comparison,
// variadic Max/Min/Sum/Mean, Where, Clip, Cast/CastLike. Each group lives in its own file
// (see ops/elementwise.h); this file wires them up and holds the pieces they share.
#include "ops/elementwise.h"

namespace aicc {

std::vector<AttrSpec> legacyConsumedInputs() {
  return {{"consumed_inputs", Attribute::Kind::Ints, std::nullopt, false}};
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
