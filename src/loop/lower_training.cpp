// The ai.onnx.preview.training optimizers (ops/training.cpp): Adagrad, Momentum and Adam update n
// tensors elementwise from R (learning rate), T (update count), the tensors, their gradients and
// their states. One loop per tensor, in double as the reference:
//   Adagrad:  r = R / (1 + T decay); g' = norm x + g; h' = h + g'^2; x' = x - r g' / (sqrt(h') +
//   eps) Momentum: g' = norm x + g; v' = alpha v + (T > 0 ? beta : 1) g';
//             x' = x - R v' (standard), x - R (g' + alpha v') (nesterov)
//   Adam:     g' = norm x + g; m' = alpha m + (1 - alpha) g'; v' = beta v + (1 - beta) g'^2;
//             r = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R;
//             x' = (1 - post) (x - r m' / (sqrt(v') + eps))
#include "loop/lower_ops.h"

namespace aicc::loop::detail {

std::optional<LoweredNode> lowerTrainingFamily(const Node& n, const std::string& name,
                                               const LowerOptions& o) {
  if (n.domain != "ai.onnx.preview.training") return std::nullopt;
  const size_t states = n.op == "Adam" ? 2 : n.op == "Adagrad" || n.op == "Momentum" ? 1 : 0;
  if (!states) return std::nullopt;
  const size_t groups = 2 + states;
  if (n.inputs.size() <= 2 || (n.inputs.size() - 2) % groups) no(n.op + ": R, T and tensor groups");
  const size_t count = (n.inputs.size() - 2) / groups;
  if (n.outputs.size() != (1 + states) * count) no(n.op + ": its outputs");
  FuncBuilder b(n, name, "elementwise");
  const DType rt = n.inputs[0]->type.dtype;
  if ((rt != DType::F32 && rt != DType::F64) || n.inputs[1]->type.dtype != DType::I64 ||
      numel(staticDims(n.inputs[0], "R")) != 1 || numel(staticDims(n.inputs[1], "T")) != 1)
    no(n.op + ": R and T scalars (f32/f64, int64)");
  auto d = [](double v) { return floatImm(v, DType::F64); };
  auto f64 = [](ExprPtr e) { return cast(DType::F64, std::move(e)); };
  const ExprPtr R = f64(load(b.input(n.inputs[0]), intImm(0), rt));
  const ExprPtr T = load(b.input(n.inputs[1]), intImm(0), DType::I64);
  const double norm = n.attrFloat("norm_coefficient");
  const std::string mode = n.op == "Momentum" ? n.attrString("mode") : "";
  if (n.op == "Momentum" && mode != "standard" && mode != "nesterov") no("Momentum mode " + mode);
  Block body;
  for (size_t k = 0; k < count; ++k) {
    const Value* xv = n.inputs[2 + k];
    const Dims xd = staticDims(xv, "X");
    const DType t = xv->type.dtype;
    if (t != DType::F32 && t != DType::F64) no(n.op + " of f32/f64 tensors");
    std::vector<const Value*> group = {xv, n.inputs[2 + count + k]};
    for (size_t j = 0; j < states; ++j) group.push_back(n.inputs[2 + (2 + j) * count + k]);
    for (const Value* v : group)
      if (!v || staticDims(v, "input") != xd || v->type.dtype != t)
        no(n.op + ": a gradient or state of another shape or type");
    for (size_t j = 0; j <= states; ++j)
      if (!n.outputs[j * count + k]) no(n.op + " with an omitted result");
    const std::string iv = b.fresh("i");
    const ExprPtr i = var(iv);
    auto in = [&](size_t g) { return f64(load(b.input(group[g]), i, t)); };
    auto out = [&](size_t j, ExprPtr v) {
      return Stmt::store(b.output(j * count + k), i, cast(t, std::move(v)));
    };
    Block e;
    auto let = [&](const std::string& base, ExprPtr v) {
      const std::string s = b.fresh(base);
      e.push_back(Stmt::let(s, std::move(v)));
      return var(s, DType::F64);
    };
    const ExprPtr x = let("x", in(0));
    const ExprPtr g = let("g", add(mul(d(norm), x), in(1)));
    if (n.op == "Adagrad") {
      const ExprPtr r = div(R, add(d(1), mul(f64(T), d(n.attrFloat("decay_factor")))));
      const ExprPtr h = let("h", add(in(2), mul(g, g)));
      e.push_back(out(1, h));
      e.push_back(
          out(0, sub(x, div(mul(r, g), add(call("sqrt", {h}), d(n.attrFloat("epsilon")))))));
    } else if (n.op == "Momentum") {
      const double alpha = n.attrFloat("alpha"), beta = n.attrFloat("beta");
      const ExprPtr b1 = select(cmp(Op::Gt, T, intImm(0)), d(beta), d(1));
      const ExprPtr v = let("v", add(mul(d(alpha), in(2)), mul(b1, g)));
      e.push_back(out(1, v));
      e.push_back(out(0, mode == "nesterov" ? sub(x, mul(R, add(g, mul(d(alpha), v))))
                                            : sub(x, mul(R, v))));
    } else { // Adam
      const double alpha = n.attrFloat("alpha"), beta = n.attrFloat("beta");
      const ExprPtr m = let("m", add(mul(d(alpha), in(2)), mul(d(1 - alpha), g)));
      const ExprPtr v = let("v", add(mul(d(beta), in(3)), mul(mul(d(1 - beta), g), g)));
      const ExprPtr tf = f64(T);
      const ExprPtr r = select(cmp(Op::Gt, T, intImm(0)),
                               div(mul(R, call("sqrt", {sub(d(1), call("pow", {d(beta), tf}))})),
                                   sub(d(1), call("pow", {d(alpha), tf}))),
                               R);
      e.push_back(out(1, m));
      e.push_back(out(2, v));
      const ExprPtr xn = sub(x, div(mul(r, m), add(call("sqrt", {v}), d(n.attrFloat("epsilon")))));
      e.push_back(out(0, mul(d(1 - double(n.attrFloat("norm_coefficient_post"))), xn)));
    }
    body.push_back(Stmt::forLoop(iv, intImm(0), intImm(numel(xd)), std::move(e)));
  }
  Schedule sch;
  sch["precision"] = std::string("f64 arithmetic");
  return b.finish(std::move(body), std::move(sch), o);
}

} // namespace aicc::loop::detail
