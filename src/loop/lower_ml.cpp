// ai.onnx.ml ops with a numeric kernel worth a nest: Binarizer (1 where x > threshold, else 0, in
// x's type) and ArrayFeatureExtractor (the last dim's elements at the indices given, checked at run
// time: @check_targets, the reference's range error), as the reference (ops/ml.cpp).
#include "loop/lower_ops.h"
#include "ops/op_def.h"

namespace aicc::loop::detail {

namespace {

std::optional<LoweredNode> lowerBinarizer(const Node& n, const std::string& name,
                                          const LowerOptions& o) {
  const Value* xv = n.inputs.at(0);
  const DType t = xv->type.dtype;
  if (t != DType::F32 && t != DType::F64 && t != DType::I32 && t != DType::I64)
    no("Binarizer of f32, f64, int32 or int64");
  const Dims xd = staticDims(xv, "X");
  FuncBuilder b(n, name, "elementwise");
  const std::string x = b.input(xv), y = b.output(0), iv = b.fresh("i");
  // (compared in double, as the reference)
  const ExprPtr v = cast(DType::F64, load(x, var(iv), t));
  const ExprPtr one = isFloat(t) ? constant(t, 1) : intImm(1, t),
                zero = isFloat(t) ? constant(t, 0) : intImm(0, t);
  return b.finish(
      nest({iv}, {numel(xd)},
           {Stmt::store(
               y, var(iv),
               select(cmp(Op::Gt, v, floatImm(n.attrFloat("threshold"), DType::F64)), one, zero))},
           true),
      {}, o);
}

std::optional<LoweredNode> lowerArrayFeatureExtractor(const Node& n, const std::string& name,
                                                      const LowerOptions& o) {
  const Value *xv = n.inputs.at(0), *iv = n.inputs.at(1);
  const DType t = xv->type.dtype;
  if (t == DType::String) no("strings are not compiled");
  if (iv->type.dtype != DType::I64) no("int64 indices");
  const Dims xd = staticDims(xv, "X"), id = staticDims(iv, "Y");
  if (xd.empty()) no("a scalar X");
  const int64_t last = xd.back(), k = numel(id), rows = last ? numel(xd) / last : 0;
  FuncBuilder b(n, name, "data");
  const std::string x = b.input(xv), ind = b.input(iv), y = b.output(0);
  const std::string rv = b.fresh("r"), jv = b.fresh("j");
  if (iv->constant) { // (out of range: the reference kernel's error, at run time)
    for (int64_t v : iv->constant->toI64Vector())
      if (v < 0 || v >= last) no("an index out of range");
  } else if (!o.runtimeKernels) {
    no("run-time indices (checked by the runtime only)");
  }
  Block body = iv->constant ? Block{} : checkValuesBelow(ind, DType::I64, k, last, o);
  const ExprPtr at = max(min(load(ind, var(jv), DType::I64), intImm(last - 1)), intImm(0));
  for (auto& st : nest({rv, jv}, {rows, k},
                       {Stmt::store(y, add(mul(var(rv), intImm(k)), var(jv)),
                                    load(x, add(mul(var(rv), intImm(last)), at), t))},
                       false))
    body.push_back(std::move(st));
  return b.finish(std::move(body), {}, o);
}

} // namespace

std::optional<LoweredNode> lowerMlFamily(const Node& n, const std::string& name,
                                         const LowerOptions& o) {
  if (n.domain != kMlDomain) return std::nullopt;
  if (n.op == "Binarizer") return lowerBinarizer(n, name, o);
  if (n.op == "ArrayFeatureExtractor") return lowerArrayFeatureExtractor(n, name, o);
  return std::nullopt;
}

} // namespace aicc::loop::detail
