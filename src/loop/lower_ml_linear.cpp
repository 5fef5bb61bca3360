// The ai.onnx.ml feature transforms and linear models sklearn pipelines export, as the reference
// kernels compute them (ops/ml_transform.cpp, ops/ml_linear.cpp):
//   Scaler      y = (float(x) - offset[f]) * scale[f], in double, rounded to f32
//   Normalizer  each row over its max (the largest value), L1 or L2 norm, in float
//   Imputer     x where it is not the replaced value (NaN: where x is NaN), else the feature's
//   LinearRegressor   scores = intercepts + float(x) . coefficients in double, post transform
//                     (none for a single target), f32
//   LinearClassifier  the same scores rounded to float, the first largest class (one row: 1 when
//                     its score is > 0), the label table's label; scores post-transformed, or one
//                     row with two labels as [1 - s, s]
// Declined (the reference kernel runs): string labels (strings are not compiled), PROBIT,
// attributes the reference refuses (it says why at run time).
#include "loop/lower_ml.h"

#include <limits>

namespace aicc::loop::detail {

namespace {

// A per-feature parameter (one value, or one per feature): an immediate, or a constant table
// read at feature `f`.
ExprPtr perFeature(FuncBuilder& b, const std::vector<double>& v, const char* what, DType t,
                   const ExprPtr& f) {
  if (v.size() == 1) return isFloat(t) ? floatImm(v[0], t) : intImm(int64_t(v[0]), t);
  Tensor table(t, {int64_t(v.size())});
  for (size_t k = 0; k < v.size(); ++k) table.setF64(int64_t(k), v[k]);
  return load(b.constant(what, std::move(table), what), f, t);
}

std::vector<double> perFeatureAttr(const Node& n, const char* name, int64_t features) {
  std::vector<double> v;
  if (const Attribute* a = n.attr(name)) {
    if (const auto* fs = std::get_if<std::vector<float>>(&a->v)) v.assign(fs->begin(), fs->end());
    if (const auto* is = std::get_if<std::vector<int64_t>>(&a->v)) v.assign(is->begin(), is->end());
  }
  if (v.size() != 1 && int64_t(v.size()) != features)
    no(std::string(name) + " of neither 1 nor one entry per feature");
  return v;
}

// Elementwise over x's elements with f = the feature (the last dim's index).
LoweredNode featureNest(FuncBuilder& b, const Dims& xd, const LowerOptions& o,
                        const std::function<ExprPtr(const ExprPtr& at, const ExprPtr& f)>& value) {
  const int64_t F = xd.empty() ? 1 : xd.back(), rows = F ? numel(xd) / F : 0;
  const std::string rv = b.fresh("r"), fv = b.fresh("f");
  const ExprPtr at = add(mul(var(rv), intImm(F)), var(fv));
  return b.finish(nest({rv, fv}, {rows, F}, {Stmt::store(b.output(0), at, value(at, var(fv)))}), {},
                  o);
}

std::optional<LoweredNode> lowerScaler(const Node& n, const std::string& name,
                                       const LowerOptions& o) {
  const Value* xv = n.inputs.at(0);
  const DType t = xv->type.dtype;
  if (!isMlNumeric(t)) no("Scaler of f32, f64, int32 or int64");
  const Dims xd = staticDims(xv, "X");
  const int64_t F = xd.empty() ? 1 : xd.back();
  const std::vector<double> offset = perFeatureAttr(n, "offset", F),
                            scale = perFeatureAttr(n, "scale", F);
  FuncBuilder b(n, name, "elementwise");
  const std::string x = b.input(xv);
  return featureNest(b, xd, o, [&](const ExprPtr& at, const ExprPtr& f) {
    const ExprPtr v = cast(DType::F64, cast(DType::F32, load(x, at, t)));
    return cast(DType::F32, mul(sub(v, perFeature(b, offset, "offset", DType::F64, f)),
                                perFeature(b, scale, "scale", DType::F64, f)));
  });
}

std::optional<LoweredNode> lowerImputer(const Node& n, const std::string& name,
                                        const LowerOptions& o) {
  const Value* xv = n.inputs.at(0);
  const DType t = xv->type.dtype;
  if (!isMlNumeric(t)) no("Imputer of f32, f64, int32 or int64");
  const Dims xd = staticDims(xv, "X");
  const int64_t F = xd.empty() ? 1 : xd.back();
  const bool real = isFloat(t);
  const std::vector<double> values =
      perFeatureAttr(n, real ? "imputed_value_floats" : "imputed_value_int64s", F);
  FuncBuilder b(n, name, "elementwise");
  const std::string x = b.input(xv);
  return featureNest(b, xd, o, [&](const ExprPtr& at, const ExprPtr& f) {
    const ExprPtr v = load(x, at, t);
    ExprPtr hit;
    if (real) {
      const double r = n.attrFloat("replaced_value_float");
      const ExprPtr d = cast(DType::F64, v);
      hit = std::isnan(r) ? cmp(Op::Ne, d, d) : cmp(Op::Eq, d, floatImm(r, DType::F64));
    } else {
      hit = cmp(Op::Eq, cast(DType::I64, v), intImm(n.attrInt("replaced_value_int64")));
    }
    return select(hit, perFeature(b, values, "imputed", t, f), v);
  });
}

std::optional<LoweredNode> lowerNormalizer(const Node& n, const std::string& name,
                                           const LowerOptions& o) {
  const Value* xv = n.inputs.at(0);
  const DType t = xv->type.dtype;
  if (!isMlNumeric(t)) no("Normalizer of f32, f64, int32 or int64");
  const std::string norm = n.attrString("norm");
  if (norm != "MAX" && norm != "L1" && norm != "L2") no("an invalid norm");
  const auto [rows, cols] = rowsOfX(xv);
  FuncBuilder b(n, name, "reduce");
  const std::string x = b.input(xv), y = b.output(0), d = b.temp("norm", DType::F32, {1});
  const std::string rv = b.fresh("r"), jv = b.fresh("j");
  const ExprPtr at = add(mul(var(rv), intImm(cols)), var(jv));
  const ExprPtr v = cast(DType::F32, load(x, at, t)), dv = load(d, intImm(0), DType::F32);
  // (in order, in float, as the reference; MAX is std::max(d, v): NaN never taken)
  const ExprPtr step = norm == "MAX"  ? select(cmp(Op::Lt, dv, v), v, dv)
                       : norm == "L1" ? add(dv, call("abs", {v}))
                                      : add(dv, mul(v, v));
  Block row = {
      Stmt::store(
          d, intImm(0),
          constant(DType::F32, norm == "MAX" ? double(std::numeric_limits<float>::lowest()) : 0.0)),
      Stmt::forLoop(jv, intImm(0), intImm(cols), {Stmt::store(d, intImm(0), step)})};
  if (norm == "L2") row.push_back(Stmt::store(d, intImm(0), call("sqrt", {dv})));
  row.push_back(Stmt::forLoop(
      jv, intImm(0), intImm(cols),
      {Stmt::store(y, at, select(cmp(Op::Ne, dv, constant(DType::F32, 0)), div(v, dv), v))}));
  return b.finish(nest({rv}, {rows}, std::move(row), false), {}, o);
}

// The scores of row `r` into the f64 temp `acc` [m.rows]: intercept + sum of float(x) * coef,
// in feature order, in double.
Block linearScores(FuncBuilder& b, const Linear& m, const std::string& x, DType t,
                   const std::string& acc, const ExprPtr& r, int64_t F) {
  Tensor coef(DType::F64, {m.rows, F});
  for (size_t k = 0; k < m.coef.size(); ++k) coef.setF64(int64_t(k), m.coef[k]);
  const std::string C = b.constant("coefficients", std::move(coef), "[rows, features]");
  const std::string kv = b.fresh("k"), fv = b.fresh("f");
  const ExprPtr k = var(kv), f = var(fv), a = load(acc, k, DType::F64);
  const ExprPtr xf = cast(DType::F64, cast(DType::F32, load(x, add(mul(r, intImm(F)), f), t)));
  std::vector<double> icpt = m.intercepts;
  icpt.resize(size_t(m.rows), 0.0);
  return {Stmt::forLoop(
      kv, intImm(0), intImm(m.rows),
      {Stmt::store(acc, k, perFeature(b, icpt, "intercepts", DType::F64, k)),
       Stmt::forLoop(
           fv, intImm(0), intImm(F),
           {Stmt::store(acc, k,
                        add(a, mul(xf, load(C, add(mul(k, intImm(F)), f), DType::F64))))})})};
}

std::optional<LoweredNode> lowerLinearRegressor(const Node& n, const std::string& name,
                                                const LowerOptions& o) {
  const Value* xv = n.inputs.at(0);
  const DType t = xv->type.dtype;
  if (!isMlNumeric(t)) no("LinearRegressor of f32, f64, int32 or int64");
  const auto [rows, F] = rowsOfX(xv);
  const int64_t targets = n.attrInt("targets");
  Linear m;
  PostTransform p;
  try {
    if (targets < 1) no("targets < 1");
    m = linearModel(n, F, targets);
    p = postTransformAttr(n);
  } catch (const Error& e) {
    no(e.what());
  }
  FuncBuilder b(n, name, "data");
  const std::string x = b.input(xv), y = b.output(0), acc = b.temp("scores", DType::F64, {targets});
  const std::string rv = b.fresh("r"), jv = b.fresh("t");
  Block row = linearScores(b, m, x, t, acc, var(rv), F);
  if (targets != 1 || p == PostTransform::Probit) // (finishScores)
    for (auto& s : postTransformRow(b, acc, targets, p)) row.push_back(std::move(s));
  row.push_back(Stmt::forLoop(jv, intImm(0), intImm(targets),
                              {Stmt::store(y, add(mul(var(rv), intImm(targets)), var(jv)),
                                           cast(DType::F32, load(acc, var(jv), DType::F64)))}));
  return b.finish(nest({rv}, {rows}, std::move(row), false), {}, o);
}

std::optional<LoweredNode> lowerLinearClassifier(const Node& n, const std::string& name,
                                                 const LowerOptions& o) {
  const Value* xv = n.inputs.at(0);
  const DType t = xv->type.dtype;
  if (!isMlNumeric(t)) no("LinearClassifier of f32, f64, int32 or int64");
  const auto [rows, F] = rowsOfX(xv);
  ClassLabels labels;
  Linear m;
  PostTransform p;
  try {
    labels = classLabels(n, "classlabels_ints");
    m = linearModel(n, F, classifierRows(n, labels));
    p = postTransformAttr(n);
  } catch (const Error& e) {
    no(e.what());
  }
  if (labels.isString()) no("string labels (strings are not compiled)");
  if (m.rows != 1 && int64_t(labels.size()) < m.rows) no("fewer labels than coefficient rows");
  if (p == PostTransform::Probit) no("post_transform PROBIT");
  const bool binary = m.rows == 1;
  const int64_t cols = classifierColumns(m.rows, labels, p);
  if (binary && labels.size() != 2) labels = literalBinaryLabels(false);
  FuncBuilder b(n, name, "data");
  const std::string x = b.input(xv), label = b.output(0), z = b.output(1),
                    acc = b.temp("scores", DType::F64, {m.rows}),
                    best = b.temp("best", DType::I64, {1});
  const std::string rv = b.fresh("r"), jv = b.fresh("j");
  const ExprPtr r = var(rv), j = var(jv), bi = load(best, intImm(0), DType::I64);
  auto score = [&](const ExprPtr& k) { return load(acc, k, DType::F64); };
  Block row = linearScores(b, m, x, t, acc, r, F);
  // Scores are float in ONNX Runtime: compared and transformed rounded.
  row.push_back(Stmt::forLoop(jv, intImm(0), intImm(m.rows),
                              {Stmt::store(acc, j, cast(DType::F64, cast(DType::F32, score(j))))}));
  if (binary) {
    row.push_back(Stmt::store(
        best, intImm(0),
        select(cmp(Op::Gt, score(intImm(0)), floatImm(0, DType::F64)), intImm(1), intImm(0))));
  } else {
    row.push_back(Stmt::store(best, intImm(0), intImm(0)));
    row.push_back(Stmt::forLoop(
        jv, intImm(1), intImm(m.rows),
        {Stmt::ifThen(cmp(Op::Gt, score(j), score(bi)), {Stmt::store(best, intImm(0), j)})}));
  }
  row.push_back(storeLabel(b, labels.ints, label, r, bi));
  const ExprPtr zAt = add(mul(r, intImm(cols)), j);
  if (!binary) {
    for (auto& s : postTransformRow(b, acc, m.rows, p)) row.push_back(std::move(s));
    row.push_back(Stmt::forLoop(jv, intImm(0), intImm(cols),
                                {Stmt::store(z, zAt, cast(DType::F32, score(j)))}));
  } else if (cols == 2) { // [1 - s, s], untransformed (finishScores' Complement)
    const ExprPtr s = score(intImm(0));
    row.push_back(
        Stmt::store(z, mul(r, intImm(2)), cast(DType::F32, sub(floatImm(1, DType::F64), s))));
    row.push_back(Stmt::store(z, add(mul(r, intImm(2)), intImm(1)), cast(DType::F32, s)));
  } else {
    row.push_back(Stmt::store(z, r, cast(DType::F32, score(intImm(0)))));
  }
  return b.finish(nest({rv}, {rows}, std::move(row), false), {}, o);
}

} // namespace

std::optional<LoweredNode> lowerMlLinearFamily(const Node& n, const std::string& name,
                                               const LowerOptions& o) {
  if (n.op == "Scaler") return lowerScaler(n, name, o);
  if (n.op == "Imputer") return lowerImputer(n, name, o);
  if (n.op == "Normalizer") return lowerNormalizer(n, name, o);
  if (n.op == "LinearRegressor") return lowerLinearRegressor(n, name, o);
  if (n.op == "LinearClassifier") return lowerLinearClassifier(n, name, o);
  return lowerMlSvmFamily(n, name, o);
}

} // namespace aicc::loop::detail
