#include "autodiff/grad_emit.h"

namespace aicc {

Value* GradEmit::cast(Value* a, DType to) {
  return op("Cast", {a}, {{"to", Attribute{static_cast<int64_t>(to)}}});
}

Value* GradEmit::shape(Value* a, int64_t start, int64_t end) {
  AttrMap attrs;
  if (start != 0) attrs["start"] = Attribute{start};
  if (end != INT64_MAX) attrs["end"] = Attribute{end};
  return op("Shape", {a}, std::move(attrs));
}

Value* GradEmit::transpose(Value* a, const std::vector<int64_t>& perm) {
  return op("Transpose", {a}, {{"perm", Attribute{perm}}});
}

Value* GradEmit::concat(std::vector<Value*> vs, int64_t axis) {
  if (vs.size() == 1) return vs[0];
  return op("Concat", std::move(vs), {{"axis", Attribute{axis}}});
}

Value* GradEmit::reduceSum(Value* a, const std::vector<int64_t>& axes, bool keepdims) {
  return op("ReduceSum", {a, ints(axes)}, {{"keepdims", Attribute{int64_t{keepdims}}}});
}

Value* GradEmit::reduceMean(Value* a, const std::vector<int64_t>& axes, bool keepdims) {
  return op("ReduceMean", {a, ints(axes)}, {{"keepdims", Attribute{int64_t{keepdims}}}});
}

std::vector<Value*> GradEmit::split(Value* a, int64_t axis, const std::vector<int64_t>& sizes) {
  return c.emitN("Split", {a, ints(sizes)}, static_cast<int>(sizes.size()),
                 {{"axis", Attribute{axis}}});
}

Value* GradEmit::stack(const std::vector<Value*>& vs) {
  std::vector<Value*> parts;
  for (Value* v : vs) parts.push_back(unsqueeze(v, {0}));
  return concat(parts, 0);
}

} // namespace aicc
