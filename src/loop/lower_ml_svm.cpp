// SVMRegressor and SVMClassifier (sklearn's SVR, SVC, NuSVC, OneClassSVM, LinearSVC exports) as
// the reference kernels compute them (ops/ml_svm.cpp, ONNX Runtime's arithmetic): the inputs as
// float, each kernel k(x, v) summed over the features in float (exp, pow and tanh through double,
// rounded), the support-vector sums in double;
//   regressor   sum of coef * k + rho (one_class: its sign as 1 / -1), post transform of one
//   classifier  LIBLINEAR: a kernel row per class + rho, the first largest class;
//               LIBSVM: one-vs-one decision values per class pair, the first class with the most
//               votes; with prob_a / prob_b the pairs' Platt probabilities coupled into class
//               probabilities (Wu, Lin and Weng's method, in float, at most 100 iterations);
//               two classes: ONNX Runtime's rules for the label and the second score column.
// Declined: string labels, PROBIT, attributes the reference refuses (it says why at run time).
#include "loop/lower_ml.h"

namespace aicc::loop::detail {

namespace {

ExprPtr f32(double v) { return constant(DType::F32, v); }

// float(x[r, f]) for an input of type t (through double, as the reference reads it).
ExprPtr feature(const std::string& x, DType t, const ExprPtr& r, int64_t F, const ExprPtr& f) {
  return cast(DType::F32, cast(DType::F64, load(x, add(mul(r, intImm(F)), f), t)));
}

// f(v) for a float v computed in double and rounded (the reference's float libm calls).
ExprPtr viaDouble(const char* fn, std::vector<ExprPtr> args) {
  for (ExprPtr& a : args) a = cast(DType::F64, a);
  return cast(DType::F32, call(fn, std::move(args)));
}

// k(x[r], V[v]) into the f32 temp `k` (element 0): the kernel over F features.
Block kernelValue(FuncBuilder& b, const SvmKernel& kern, const std::string& x, DType t,
                  const ExprPtr& r, int64_t F, const std::string& V, const ExprPtr& v,
                  const std::string& k) {
  const std::string fv = b.fresh("f");
  const ExprPtr xf = feature(x, t, r, F, var(fv)),
                vf = load(V, add(mul(v, intImm(F)), var(fv)), DType::F32),
                s = load(k, intImm(0), DType::F32);
  const bool rbf = kern.type == SvmKernel::Rbf;
  const ExprPtr term = rbf ? mul(sub(xf, vf), sub(xf, vf)) : mul(xf, vf);
  Block out = {Stmt::store(k, intImm(0), f32(0)),
               Stmt::forLoop(fv, intImm(0), intImm(F), {Stmt::store(k, intImm(0), add(s, term))})};
  const ExprPtr lin = add(mul(f32(kern.gamma), s), f32(kern.coef0));
  switch (kern.type) {
  case SvmKernel::Rbf:
    out.push_back(Stmt::store(k, intImm(0), viaDouble("exp", {mul(f32(-kern.gamma), s)})));
    break;
  case SvmKernel::Poly:
    out.push_back(Stmt::store(k, intImm(0), viaDouble("pow", {lin, f32(kern.degree)})));
    break;
  case SvmKernel::Sigmoid:
    out.push_back(Stmt::store(k, intImm(0), viaDouble("tanh", {lin})));
    break;
  case SvmKernel::Linear:
    break;
  }
  return out;
}

std::string floatTable(FuncBuilder& b, const char* what, const std::vector<float>& v) {
  Tensor t(DType::F32, {std::max<int64_t>(1, int64_t(v.size()))});
  for (size_t k = 0; k < v.size(); ++k) t.data<float>()[k] = v[k];
  return b.constant(what, std::move(t), what);
}

// X's rows and features, which must be the model's (else the reference's error at run time).
std::pair<int64_t, int64_t> svmRows(const Value* xv, int64_t features) {
  if (!isMlNumeric(xv->type.dtype)) no("an SVM of f32, f64, int32 or int64");
  const auto rf = rowsOfX(xv);
  if (rf.second != features) no("an X of another feature count (the reference's error)");
  return rf;
}

std::optional<LoweredNode> lowerSvmRegressor(const Node& n, const std::string& name,
                                             const LowerOptions& o) {
  SvmRegressor m;
  try {
    m = parseSvmRegressor(n);
  } catch (const Error& e) {
    no(e.what());
  }
  if (m.post == PostTransform::Probit) no("post_transform PROBIT");
  const Value* xv = n.inputs.at(0);
  const auto [rows, F] = svmRows(xv, m.features);
  FuncBuilder b(n, name, "data");
  const std::string x = b.input(xv), y = b.output(0), k = b.temp("kernel", DType::F32, {1}),
                    acc = b.temp("score", DType::F64, {1});
  const std::string rv = b.fresh("r"), vv = b.fresh("v");
  const ExprPtr r = var(rv), a = load(acc, intImm(0), DType::F64);
  const std::string C = floatTable(b, "coefficients", m.coef);
  Block row = {Stmt::store(acc, intImm(0), floatImm(0, DType::F64))};
  // (coef * k is a float product, added to the double sum)
  auto addKernel = [&](const std::string& V, const ExprPtr& v, ExprPtr weight) {
    Block s = kernelValue(b, m.kernel, x, xv->type.dtype, r, F, V, v, k);
    ExprPtr kv = load(k, intImm(0), DType::F32);
    s.push_back(
        Stmt::store(acc, intImm(0), add(a, cast(DType::F64, weight ? mul(weight, kv) : kv))));
    return s;
  };
  if (m.nSupports > 0) {
    const std::string V = floatTable(b, "support_vectors", m.vectors);
    row.push_back(Stmt::forLoop(vv, intImm(0), intImm(m.nSupports),
                                addKernel(V, var(vv), load(C, var(vv), DType::F32))));
  } else {
    for (auto& s : addKernel(C, intImm(0), nullptr)) row.push_back(std::move(s));
  }
  ExprPtr s = add(a, floatImm(double(m.rho[0]), DType::F64));
  if (m.oneClass)
    s = select(cmp(Op::Gt, s, floatImm(0, DType::F64)), floatImm(1, DType::F64),
               floatImm(-1, DType::F64));
  row.push_back(Stmt::store(acc, intImm(0), cast(DType::F64, cast(DType::F32, s))));
  // (one score: no transform but probit, as finishScores)
  row.push_back(Stmt::store(y, r, cast(DType::F32, a)));
  return b.finish(nest({rv}, {rows}, std::move(row), false), {}, o);
}

// Wu, Lin and Weng's coupling of the pairwise probabilities `pr` [K, K] into `p` [K], in float
// (ops/ml_svm.cpp coupleProbabilities): at most 100 iterations, until the error is below
// 0.005 / K.
Block coupleProbabilities(FuncBuilder& b, int64_t K, const std::string& pr, const std::string& p) {
  const std::string q = b.temp("q", DType::F32, {K * K}), qp = b.temp("qp", DType::F32, {K}),
                    st = b.temp("state", DType::F32, {3}); // pqp, max error, diff
  const std::string done = b.temp("done", DType::I64, {1});
  const std::string iv = b.fresh("i"), jv = b.fresh("j"), itv = b.fresh("iter");
  const ExprPtr i = var(iv), j = var(jv), kk = intImm(K);
  auto at = [&](const std::string& buf, const ExprPtr& e) { return load(buf, e, DType::F32); };
  auto ij = [&](const ExprPtr& a, const ExprPtr& c) { return add(mul(a, kk), c); };
  const ExprPtr pqp = at(st, intImm(0)), err = at(st, intImm(1)), diff = at(st, intImm(2));
  const ExprPtr qii = at(q, ij(i, i));
  Block out = {
      Stmt::forLoop(iv, intImm(0), intImm(K * K), {Stmt::store(q, i, f32(0))}),
      Stmt::forLoop(
          iv, intImm(0), kk,
          {Stmt::forLoop(
              jv, intImm(0), kk,
              {Stmt::ifThen(
                  cmp(Op::Ne, j, i),
                  {Stmt::store(q, ij(i, i), add(qii, mul(at(pr, ij(j, i)), at(pr, ij(j, i))))),
                   Stmt::store(q, ij(i, j),
                               select(cmp(Op::Lt, j, i), at(q, ij(j, i)),
                                      neg(mul(at(pr, ij(j, i)), at(pr, ij(i, j))))))})})}),
      Stmt::forLoop(iv, intImm(0), kk, {Stmt::store(p, i, f32(1.0 / double(float(K))))}),
      Stmt::store(done, intImm(0), intImm(0))};
  const float eps = 0.005f / static_cast<float>(K);
  const ExprPtr one = f32(1), d1 = add(one, diff);
  Block iter = {
      Stmt::store(st, intImm(0), f32(0)),
      Stmt::forLoop(
          iv, intImm(0), kk,
          {Stmt::store(qp, i, f32(0)),
           Stmt::forLoop(jv, intImm(0), kk,
                         {Stmt::store(qp, i, add(at(qp, i), mul(at(q, ij(i, j)), at(p, j))))}),
           Stmt::store(st, intImm(0), add(pqp, mul(at(p, i), at(qp, i))))}),
      Stmt::store(st, intImm(1), f32(0)),
      Stmt::forLoop(iv, intImm(0), kk,
                    {Stmt::store(st, intImm(1),
                                 select(cmp(Op::Lt, err, call("abs", {sub(at(qp, i), pqp)})),
                                        call("abs", {sub(at(qp, i), pqp)}), err))}),
      Stmt::ifThen(
          cmp(Op::Lt, err, f32(eps)), {Stmt::store(done, intImm(0), intImm(1))},
          {Stmt::forLoop(
              iv, intImm(0), kk,
              {Stmt::store(st, intImm(2), div(add(neg(at(qp, i)), pqp), qii)),
               Stmt::store(p, i, add(at(p, i), diff)),
               Stmt::store(
                   st, intImm(0),
                   div(div(add(pqp, mul(diff, add(mul(diff, qii), mul(f32(2), at(qp, i))))), d1),
                       d1)),
               Stmt::forLoop(
                   jv, intImm(0), kk,
                   {Stmt::store(qp, j, div(add(at(qp, j), mul(diff, at(q, ij(i, j)))), d1)),
                    Stmt::store(p, j, div(at(p, j), d1))})})})};
  out.push_back(Stmt::forLoop(
      itv, intImm(0), intImm(100),
      {Stmt::ifThen(cmp(Op::Eq, load(done, intImm(0), DType::I64), intImm(0)), std::move(iter))}));
  return out;
}

std::optional<LoweredNode> lowerSvmClassifier(const Node& n, const std::string& name,
                                              const LowerOptions& o) {
  SvmClassifier m;
  try {
    m = parseSvmClassifier(n);
  } catch (const Error& e) {
    no(e.what());
  }
  if (m.labels.isString()) no("string labels (strings are not compiled)");
  if (m.post == PostTransform::Probit) no("post_transform PROBIT");
  const int64_t K = m.classes, P = m.pairs(), cols = m.columns();
  if (K < 1 || (!m.svc && int64_t(m.coef.size()) != K * m.features)) no("unexpected attributes");
  const Value* xv = n.inputs.at(0);
  const DType t = xv->type.dtype;
  const auto [rows, F] = svmRows(xv, m.features);
  FuncBuilder b(n, name, "data");
  const std::string x = b.input(xv), label = b.output(0), z = b.output(1),
                    k = b.temp("kernel", DType::F32, {1}),
                    sc = b.temp("scores", DType::F64, {std::max(K, P)}),
                    best = b.temp("best", DType::I64, {1});
  const std::string rv = b.fresh("r"), cv = b.fresh("c");
  const ExprPtr r = var(rv), c = var(cv), bi = load(best, intImm(0), DType::I64);
  auto score = [&](const ExprPtr& e) { return load(sc, e, DType::F64); };
  const std::string C = floatTable(b, "coefficients", m.coef);
  Block row;
  int64_t nScores = K;
  if (!m.svc) { // a kernel row per class + rho[0], in float; the first largest class
    for (int64_t cls = 0; cls < K; ++cls) {
      for (auto& s : kernelValue(b, m.kernel, x, t, r, F, C, intImm(cls), k))
        row.push_back(std::move(s));
      row.push_back(Stmt::store(
          sc, intImm(cls), cast(DType::F64, add(load(k, intImm(0), DType::F32), f32(m.rho[0])))));
    }
    row.push_back(Stmt::store(best, intImm(0), intImm(0)));
    row.push_back(Stmt::forLoop(
        cv, intImm(1), intImm(K),
        {Stmt::ifThen(cmp(Op::Gt, score(c), score(bi)), {Stmt::store(best, intImm(0), c)})}));
    if (P == 1 && !m.proba()) { // two classes: 1 past the threshold, else the first largest
      const ExprPtr w = score(bi);
      row.push_back(Stmt::store(best, intImm(0),
                                select(m.allPositive ? cmp(Op::Ge, w, floatImm(0.5, DType::F64))
                                                     : cmp(Op::Gt, w, floatImm(0, DType::F64)),
                                       intImm(1), bi)));
    }
  } else {
    // Each support vector's kernel, then per class pair i < j the decision value (class i's
    // vectors weighed by coefficient row j - 1, class j's by row i) and a vote.
    const std::string V = floatTable(b, "support_vectors", m.vectors),
                      kern = b.temp("kernels", DType::F32, {m.nVectors}),
                      votes = b.temp("votes", DType::I64, {K}), dv = b.temp("sum", DType::F64, {1});
    const std::string vv = b.fresh("v");
    Block perVector = kernelValue(b, m.kernel, x, t, r, F, V, var(vv), k);
    perVector.push_back(Stmt::store(kern, var(vv), load(k, intImm(0), DType::F32)));
    row.push_back(Stmt::forLoop(vv, intImm(0), intImm(m.nVectors), std::move(perVector)));
    row.push_back(Stmt::forLoop(cv, intImm(0), intImm(K), {Stmt::store(votes, c, intImm(0))}));
    int64_t pair = 0;
    const ExprPtr sum = load(dv, intImm(0), DType::F64);
    for (int64_t i = 0; i < K - 1; ++i)
      for (int64_t j = i + 1; j < K; ++j, ++pair) {
        row.push_back(Stmt::store(dv, intImm(0), floatImm(0, DType::F64)));
        for (auto [coefRow, cls] : {std::pair{j - 1, i}, std::pair{i, j}}) {
          const int64_t s0 = m.start[size_t(cls)], cnt = m.perClass[size_t(cls)];
          const ExprPtr at = add(var(vv), intImm(s0));
          row.push_back(Stmt::forLoop(
              vv, intImm(0), intImm(cnt),
              {Stmt::store(
                  dv, intImm(0),
                  add(sum, cast(DType::F64,
                                mul(load(C, add(intImm(coefRow * m.nVectors), at), DType::F32),
                                    load(kern, at, DType::F32)))))}));
        }
        const ExprPtr d = add(sum, floatImm(double(m.rho[size_t(pair)]), DType::F64));
        row.push_back(Stmt::store(sc, intImm(pair), cast(DType::F64, cast(DType::F32, d))));
        const ExprPtr winner =
            select(cmp(Op::Gt, d, floatImm(0, DType::F64)), intImm(i), intImm(j));
        row.push_back(Stmt::store(votes, winner, add(load(votes, winner, DType::I64), intImm(1))));
      }
    // The first class with the most votes (with two classes too: the threshold never holds).
    const ExprPtr vote = load(votes, c, DType::I64), top = load(votes, bi, DType::I64);
    row.push_back(Stmt::store(best, intImm(0), intImm(0)));
    row.push_back(
        Stmt::forLoop(cv, intImm(1), intImm(K),
                      {Stmt::ifThen(cmp(Op::Gt, vote, top), {Stmt::store(best, intImm(0), c)})}));
    nScores = P;
    if (m.proba()) { // Platt's pairwise probabilities, coupled
      const std::string pr = b.temp("pairwise", DType::F32, {K * K}),
                        pk = b.temp("probabilities", DType::F32, {K});
      row.push_back(Stmt::forLoop(cv, intImm(0), intImm(K * K), {Stmt::store(pr, c, f32(0))}));
      int64_t at = 0;
      for (int64_t i = 0; i < K - 1; ++i)
        for (int64_t j = i + 1; j < K; ++j, ++at) {
          const ExprPtr arg =
              add(mul(cast(DType::F32, score(intImm(at))), f32(m.probA[size_t(at)])),
                  f32(m.probB[size_t(at)]));
          const ExprPtr v = sub(f32(1), cast(DType::F32, logisticOf(cast(DType::F64, arg))));
          const ExprPtr pv = min(max(v, f32(1e-7f)), f32(1 - 1e-7f));
          row.push_back(Stmt::store(pr, intImm(i * K + j), pv));
          row.push_back(Stmt::store(pr, intImm(j * K + i),
                                    sub(f32(1), load(pr, intImm(i * K + j), DType::F32))));
        }
      for (auto& s : coupleProbabilities(b, K, pr, pk)) row.push_back(std::move(s));
      row.push_back(Stmt::forLoop(cv, intImm(0), intImm(K),
                                  {Stmt::store(sc, c, cast(DType::F64, load(pk, c, DType::F32)))}));
      nScores = K;
    }
  }
  // The scores: two or more post-transformed; one (LIBSVM, two classes, no probabilities) as
  // [-v, v] without a transform, else [1 - v, v] (finishScores).
  if (!m.svc && nScores == 1) { // (one class: its score as it is)
    row.push_back(Stmt::store(z, r, cast(DType::F32, score(intImm(0)))));
  } else if (nScores != 1) {
    for (auto& s : postTransformRow(b, sc, nScores, m.post)) row.push_back(std::move(s));
    row.push_back(
        Stmt::forLoop(cv, intImm(0), intImm(std::min(cols, nScores)),
                      {Stmt::store(z, add(mul(r, intImm(cols)), c), cast(DType::F32, score(c)))}));
  } else {
    const ExprPtr v = score(intImm(0)), one = floatImm(1, DType::F64);
    const bool negate = m.post == PostTransform::None;
    row.push_back(
        Stmt::store(z, mul(r, intImm(cols)), cast(DType::F32, negate ? neg(v) : sub(one, v))));
    row.push_back(Stmt::store(z, add(mul(r, intImm(cols)), intImm(1)), cast(DType::F32, v)));
  }
  ClassLabels labels = m.labels;
  if (P == 1 && K != 2) labels = literalBinaryLabels(false);
  row.push_back(storeLabel(b, labels.ints, label, r, bi));
  return b.finish(nest({rv}, {rows}, std::move(row), false), {}, o);
}

} // namespace

std::optional<LoweredNode> lowerMlSvmFamily(const Node& n, const std::string& name,
                                            const LowerOptions& o) {
  if (n.op == "SVMRegressor") return lowerSvmRegressor(n, name, o);
  if (n.op == "SVMClassifier") return lowerSvmClassifier(n, name, o);
  return std::nullopt;
}

} // namespace aicc::loop::detail
