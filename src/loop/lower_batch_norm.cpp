// BatchNormalization (inference: one per-channel affine nest; training: the batch's statistics,
// in double as the reference) and MeanVarianceNormalization (the mean and variance over its axes,
// in double as the reference: ops/nn_norm.cpp).
#include "loop/lower_ops.h"

#include <cmath>

namespace aicc::loop::detail {

namespace {

// BatchNormalization in training mode, per channel as the reference, in double: the batch's mean
// and (biased) variance over N and the spatial dims, y = x * a + b with a = scale / sqrt(var + eps)
// and b = B - mean * a; the running statistics input * momentum + batch's * (1 - momentum), and
// (before opset 14) the batch's mean and variance.
std::optional<LoweredNode> lowerBatchNormTraining(const Node& n, FuncBuilder& b,
                                                  const LowerOptions& o) {
  const Dims id = staticDims(n.inputs.at(0), "input");
  const DType t = n.outputs[0]->type.dtype;
  if (!isComputeFloat(t) || id.size() < 2) no("a float input of rank >= 2 is needed");
  const int64_t N = id[0], C = id[1], S = N * C != 0 ? numel(id) / (N * C) : 0;
  std::vector<std::string> p;
  for (size_t i = 1; i <= 4; ++i) {
    if (numel(staticDims(n.inputs.at(i), "parameter")) != C) no("per-channel parameters only");
    if (!isComputeFloat(n.inputs[i]->type.dtype)) no("float parameters");
    p.push_back(b.input(n.inputs[i]));
  }
  const std::string x = b.input(n.inputs[0]), y = b.output(0);
  const std::string mean = b.temp("batch_mean", DType::F64, {C}),
                    vars = b.temp("batch_var", DType::F64, {C});
  const std::string cv = b.fresh("c"), nv = b.fresh("n"), sv = b.fresh("s"), av = b.fresh("a"),
                    bv = b.fresh("b");
  const ExprPtr c = var(cv), at = add(mul(add(mul(var(nv), intImm(C)), c), intImm(S)), var(sv));
  auto f64 = [](double v) { return floatImm(v, DType::F64); };
  auto param = [&](size_t k) {
    return cast(DType::F64, load(p[k], c, n.inputs[k + 1]->type.dtype));
  };
  const ExprPtr xv = cast(DType::F64, load(x, at, t)), m = load(mean, c, DType::F64),
                v = load(vars, c, DType::F64);
  const double cnt = double(N * S), eps = n.attrFloat("epsilon"), mom = n.attrFloat("momentum");
  Block body = {Stmt::store(mean, c, f64(0)), Stmt::store(vars, c, f64(0))};
  for (auto& st : nest({nv, sv}, {N, S}, {Stmt::store(mean, c, add(m, xv))}, false))
    body.push_back(std::move(st));
  body.push_back(Stmt::store(mean, c, cnt > 0 ? div(m, f64(cnt)) : f64(0)));
  for (auto& st :
       nest({nv, sv}, {N, S}, {Stmt::store(vars, c, add(v, mul(sub(xv, m), sub(xv, m))))}, false))
    body.push_back(std::move(st));
  body.push_back(Stmt::store(vars, c, cnt > 0 ? div(v, f64(cnt)) : f64(0)));
  body.push_back(Stmt::let(av, div(param(0), call("sqrt", {add(v, f64(eps))}))));
  body.push_back(Stmt::let(bv, sub(param(1), mul(m, var(av, DType::F64)))));
  for (auto& st :
       nest({nv, sv}, {N, S},
            {Stmt::store(y, at, cast(t, add(mul(xv, var(av, DType::F64)), var(bv, DType::F64))))},
            false))
    body.push_back(std::move(st));
  // Outputs 1, 2: running mean / variance; 3, 4: the batch's (legacy saved_mean / saved_var).
  for (size_t k = 1; k < n.outputs.size() && k <= 4; ++k)
    if (n.outputs[k]) {
      if (numel(staticDims(n.outputs[k], "statistics")) != C) no("statistics of another size");
      const DType st = n.outputs[k]->type.dtype;
      const ExprPtr batch = k % 2 ? m : v;
      const ExprPtr value =
          k <= 2 ? add(mul(param(k == 1 ? 2 : 3), f64(mom)), mul(batch, f64(1 - mom))) : batch;
      body.push_back(Stmt::store(b.output(k), c, cast(st, value)));
    }
  return b.finish(nest({cv}, {C}, std::move(body), true), {}, o);
}

} // namespace

std::optional<LoweredNode> lowerBatchNorm(const Node& n, const std::string& name,
                                          const LowerOptions& o) {
  if (n.attrInt("training_mode") != 0) {
    FuncBuilder b(n, name, "batchnorm");
    return lowerBatchNormTraining(n, b, o);
  }
  for (size_t k = 1; k < n.outputs.size(); ++k)
    if (n.outputs[k]) no("running statistics outputs");
  FuncBuilder b(n, name, "batchnorm");
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input");
  DType t = n.outputs[0]->type.dtype;
  if (!isComputeFloat(t) || id.size() < 2) no("a float input of rank >= 2 is needed");
  std::vector<std::string> p;
  for (size_t i = 1; i <= 4; ++i) {
    Dims pd = staticDims(n.inputs.at(i), "parameter");
    if (numel(pd) != id[1]) no("per-channel parameters of the wrong size");
    if (n.inputs[i]->type.dtype != t) no("parameters of another element type");
    p.push_back(b.input(n.inputs[i]));
  }
  std::string in = b.input(n.inputs[0]);
  double eps = n.attrFloat("epsilon");
  int64_t inner = numel(id) / (id[0] * id[1]);
  std::string nv = b.fresh("n"), cv = b.fresh("c"), iv = b.fresh("i"), sv = b.fresh("scale");
  ExprPtr c = var(cv);
  ExprPtr idx = add(mul(add(mul(var(nv), intImm(id[1])), c), intImm(inner)), var(iv));
  ExprPtr scale = div(load(p[0], c, t), call("sqrt", {add(load(p[3], c, t), constant(t, eps))}));
  Block inBody = {Stmt::store(
      out, idx, add(mul(sub(load(in, idx, t), load(p[2], c, t)), var(sv, t)), load(p[1], c, t)))};
  Block cb = {Stmt::let(sv, scale)};
  for (auto& st : nest({iv}, {inner}, std::move(inBody), false, vectorWidthFor(o, t, inner)))
    cb.push_back(std::move(st));
  return b.finish(nest({nv, cv}, {id[0], id[1]}, std::move(cb), true), {}, o);
}

// MeanVarianceNormalization: per position of the kept dims, the sum and the sum of squares over
// the axes (one pass over the input into double temps), then (x - mean) / (sqrt(max(0, E[x^2] -
// mean^2)) + 1e-9), as the reference.
std::optional<LoweredNode> lowerMvn(const Node& n, const std::string& name, const LowerOptions& o) {
  const Dims xd = staticDims(n.inputs.at(0), "input");
  const DType t = n.outputs.at(0)->type.dtype;
  if (!isComputeFloat(t)) no("a float input is needed");
  std::vector<bool> red(xd.size(), false);
  for (int64_t a : n.attrInts("axes", {0, 2, 3})) red[size_t(normAxis(a, xd.size(), n))] = true;
  std::vector<int64_t> keptStride(xd.size(), 0);
  int64_t R = 1;
  for (size_t d = xd.size(); d-- > 0;)
    if (!red[d]) keptStride[d] = R, R *= xd[d];
  FuncBuilder b(n, name, "reduce");
  const std::string x = b.input(n.inputs[0]), y = b.output(0);
  const std::string s1 = b.temp("sum", DType::F64, {R}), s2 = b.temp("sum_sq", DType::F64, {R}),
                    jv = b.fresh("j");
  std::vector<std::string> v;
  std::vector<ExprPtr> idx, ridx;
  for (size_t d = 0; d < xd.size(); ++d) {
    v.push_back(b.fresh("i"));
    idx.push_back(var(v.back()));
    ridx.push_back(mul(var(v.back()), intImm(keptStride[d])));
  }
  const ExprPtr at = linearIndex(idx, strides(xd));
  ExprPtr r = intImm(0);
  for (const ExprPtr& e : ridx) r = add(r, e);
  auto f64 = [](double c) { return floatImm(c, DType::F64); };
  const ExprPtr xv = cast(DType::F64, load(x, at, t)), a = load(s1, r, DType::F64),
                q = load(s2, r, DType::F64);
  const double cnt = double(numel(xd)) / double(std::max<int64_t>(R, 1));
  Block body;
  for (auto& st :
       nest({jv}, {R}, {Stmt::store(s1, var(jv), f64(0)), Stmt::store(s2, var(jv), f64(0))}, false))
    body.push_back(std::move(st));
  for (auto& st : nest(
           v, xd, {Stmt::store(s1, r, add(a, xv)), Stmt::store(s2, r, add(q, mul(xv, xv)))}, false))
    body.push_back(std::move(st));
  const ExprPtr m = div(a, f64(cnt)), var2 = max(f64(0), sub(div(q, f64(cnt)), mul(m, m)));
  for (auto& st :
       nest(v, xd,
            {Stmt::store(y, at, cast(t, div(sub(xv, m), add(call("sqrt", {var2}), f64(1e-9)))))},
            false))
    body.push_back(std::move(st));
  return b.finish(std::move(body), {}, o);
}

} // namespace aicc::loop::detail
