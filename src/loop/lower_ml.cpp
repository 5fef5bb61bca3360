// ai.onnx.ml ops with a numeric kernel worth a nest: Binarizer (1 where x > threshold, else 0, in
// x's type), ArrayFeatureExtractor (the last dim's elements at the indices given, checked at run
// time: @check_targets, the reference's range error), OneHotEncoder of numbers, as the reference
// (ops/ml.cpp, ops/ml_encode.cpp); the scores' post transform and the label store the model
// lowerings share (lower_ml_tree.cpp, lower_ml_linear.cpp, lower_ml_svm.cpp); the family's
// dispatch.
#include "loop/lower_ml.h"
#include "ops/op_def.h"

#include <limits>

namespace aicc::loop::detail {

bool isMlNumeric(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::I32 || t == DType::I64;
}

std::pair<int64_t, int64_t> rowsOfX(const Value* xv) {
  const Dims d = staticDims(xv, "X");
  if (d.size() == 1) return {1, d[0]};
  if (d.size() != 2) no("an X of rank other than 1 or 2");
  return {d[0], d[1]};
}

ExprPtr logisticOf(const ExprPtr& v) {
  const ExprPtr one = floatImm(1, DType::F64);
  const ExprPtr e = div(one, add(one, call("exp", {neg(call("abs", {v}))})));
  return select(cmp(Op::Lt, v, floatImm(0, DType::F64)), sub(one, e), e);
}

Stmt storeLabel(FuncBuilder& b, const std::vector<int64_t>& labels, const std::string& out,
                const ExprPtr& r, const ExprPtr& cls) {
  const std::string L = b.constant("labels", Tensor::fromI64(labels), "class labels");
  const int64_t last = std::max<int64_t>(int64_t(labels.size()) - 1, 0);
  return Stmt::store(out, r, load(L, max(min(cls, intImm(last)), intImm(0)), DType::I64));
}

Block postTransformRow(FuncBuilder& b, const std::string& acc, int64_t n, PostTransform pt) {
  const std::string jv = b.fresh("j");
  auto i64 = [](int64_t v) { return intImm(v); };
  auto f64 = [](double v) { return floatImm(v, DType::F64); };
  const ExprPtr v = load(acc, var(jv), DType::F64);
  Block row;
  if (pt == PostTransform::Logistic) {
    row.push_back(Stmt::forLoop(jv, i64(0), i64(n), {Stmt::store(acc, var(jv), logisticOf(v))}));
  } else if (pt == PostTransform::Softmax || pt == PostTransform::SoftmaxZero) { // (zeros stay)
    const std::string st = b.temp("softmax", DType::F64, {2});                   // [max, sum]
    const ExprPtr mx = load(st, i64(0), DType::F64), sum = load(st, i64(1), DType::F64);
    row.push_back(Stmt::store(st, i64(0), f64(-std::numeric_limits<double>::infinity())));
    row.push_back(Stmt::store(st, i64(1), f64(0)));
    row.push_back(Stmt::forLoop(jv, i64(0), i64(n), {Stmt::store(st, i64(0), max(mx, v))}));
    ExprPtr ex = call("exp", {sub(v, mx)});
    if (pt == PostTransform::SoftmaxZero) ex = select(cmp(Op::Eq, v, f64(0)), f64(0), ex);
    row.push_back(Stmt::forLoop(
        jv, i64(0), i64(n), {Stmt::store(acc, var(jv), ex), Stmt::store(st, i64(1), add(sum, v))}));
    row.push_back(Stmt::forLoop(
        jv, i64(0), i64(n),
        {Stmt::store(acc, var(jv), select(cmp(Op::Gt, sum, f64(0)), div(v, sum), f64(0)))}));
  } else if (pt != PostTransform::None) {
    no("post_transform PROBIT");
  }
  return row;
}

namespace {

std::optional<LoweredNode> lowerBinarizer(const Node& n, const std::string& name,
                                          const LowerOptions& o) {
  const Value* xv = n.inputs.at(0);
  const DType t = xv->type.dtype;
  if (!isMlNumeric(t)) no("Binarizer of f32, f64, int32 or int64");
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

// OneHotEncoder of numbers (sklearn's on integer categories): each element's position among
// cats_int64s (its first), a row of k with 1 there; an element of no category is zeros, or with
// zeros = 0 the runtime's range error on the position (-1) at its index (@check_targets_i64).
std::optional<LoweredNode> lowerOneHotEncoder(const Node& n, const std::string& name,
                                              const LowerOptions& o) {
  const Value* xv = n.inputs.at(0);
  const DType t = xv->type.dtype;
  if (!isMlNumeric(t))
    no(t == DType::String ? "strings are not compiled" : "OneHotEncoder of another type");
  const std::vector<int64_t> cats = n.attrInts("cats_int64s", {});
  const int64_t k = int64_t(cats.size()), count = numel(staticDims(xv, "X"));
  if (k == 0) no("no integer categories");
  const bool zeros = n.attrInt("zeros") != 0;
  if (!zeros && !o.runtimeKernels) no("unknown categories checked by the runtime only");
  FuncBuilder b(n, name, "data");
  const std::string x = b.input(xv), y = b.output(0),
                    C = b.constant("categories", Tensor::fromI64(cats), "cats_int64s"),
                    pos = b.temp("position", DType::I64, {count});
  const std::string iv = b.fresh("i"), cv = b.fresh("c");
  const ExprPtr i = var(iv), c = var(cv), p = load(pos, i, DType::I64);
  Block body = {
      Stmt::forLoop(iv, intImm(0), intImm(count),
                    {Stmt::store(pos, i, intImm(-1)),
                     Stmt::forLoop(cv, intImm(0), intImm(k),
                                   {Stmt::ifThen(binary(Op::And, cmp(Op::Lt, p, intImm(0)),
                                                        cmp(Op::Eq, load(C, c, DType::I64),
                                                            cast(DType::I64, load(x, i, t)))),
                                                 {Stmt::store(pos, i, c)})}),
                     Stmt::forLoop(cv, intImm(0), intImm(k),
                                   {Stmt::store(y, add(mul(i, intImm(k)), c),
                                                select(cmp(Op::Eq, c, p), constant(DType::F32, 1),
                                                       constant(DType::F32, 0)))})})};
  if (!zeros)
    for (auto& st : checkValuesBelow(pos, DType::I64, count, k, o)) body.push_back(std::move(st));
  return b.finish(std::move(body), {}, o);
}

} // namespace

std::optional<LoweredNode> lowerMlFamily(const Node& n, const std::string& name,
                                         const LowerOptions& o) {
  if (n.domain != kMlDomain) return std::nullopt;
  if (n.op == "Binarizer") return lowerBinarizer(n, name, o);
  if (n.op == "ArrayFeatureExtractor") return lowerArrayFeatureExtractor(n, name, o);
  if (n.op == "OneHotEncoder") return lowerOneHotEncoder(n, name, o);
  if (auto r = lowerMlTreeFamily(n, name, o)) return r;
  return lowerMlLinearFamily(n, name, o);
}

} // namespace aicc::loop::detail
