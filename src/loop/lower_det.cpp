// Det: each [M, M] matrix's determinant by Gaussian elimination with partial pivoting in double,
// step for step as the reference (ops/misc.cpp determinant()): per column the row of the largest
// magnitude (the first on ties) is the pivot, a row swap flips the sign, the pivot multiplies the
// determinant, the rows below subtract their multiple of it (skipped where that is 0); a zero
// pivot makes the determinant 0 and ends that matrix.
#include "loop/lower_ops.h"

namespace aicc::loop::detail {

std::optional<LoweredNode> lowerDet(const Node& n, const std::string& name, const LowerOptions& o) {
  if (!n.domain.empty() || n.op != "Det") return std::nullopt;
  FuncBuilder b(n, name, "reduce");
  const Dims xd = staticDims(n.inputs.at(0), "input");
  const DType t = n.inputs[0]->type.dtype;
  if (t != DType::F32 && t != DType::F64) no("Det is lowered for f32/f64");
  if (xd.size() < 2 || xd.back() != xd[xd.size() - 2]) no("Det of non-square matrices");
  const int64_t M = xd.back(), count = numel(xd) / std::max<int64_t>(M * M, 1);
  if (M < 1) no("Det of empty matrices");
  const std::string x = b.input(n.inputs[0]), y = b.output(0);
  const std::string a = b.temp("lu", DType::F64, {M * M}), det = b.temp("det", DType::F64, {1}),
                    piv = b.temp("pivot_row", DType::I64, {1}),
                    done = b.temp("zero", DType::I64, {1});
  const std::string bv = b.fresh("b"), kv = b.fresh("k"), iv = b.fresh("i"), jv = b.fresh("j"),
                    ev = b.fresh("e"), pvv = b.fresh("pv"), fv = b.fresh("f"), tv = b.fresh("t");
  const ExprPtr k = var(kv), i = var(iv), j = var(jv);
  auto at = [&](const ExprPtr& r, const ExprPtr& c) { return add(mul(r, intImm(M)), c); };
  auto A = [&](const ExprPtr& r, const ExprPtr& c) { return load(a, at(r, c), DType::F64); };
  const ExprPtr p = clampIndex(load(piv, intImm(0), DType::I64), M);
  const ExprPtr d = load(det, intImm(0), DType::F64);
  const ExprPtr zero = floatImm(0, DType::F64);
  // Column k: the pivot row, then (a nonzero pivot) the swap, the product and the elimination.
  Block swap = {Stmt::let(tv, A(k, j)), Stmt::store(a, at(k, j), A(p, j)),
                Stmt::store(a, at(p, j), var(tv, DType::F64))};
  Block eliminate = {
      Stmt::let(fv, div(A(i, k), var(pvv, DType::F64))),
      Stmt::ifThen(
          cmp(Op::Ne, var(fv, DType::F64), zero),
          {Stmt::forLoop(
              jv, add(k, intImm(1)), intImm(M),
              {Stmt::store(a, at(i, j), sub(A(i, j), mul(var(fv, DType::F64), A(k, j))))})})};
  Block nonzero = {
      Stmt::ifThen(cmp(Op::Ne, p, k), {Stmt::forLoop(jv, intImm(0), intImm(M), std::move(swap)),
                                       Stmt::store(det, intImm(0), neg(d))}),
      Stmt::store(det, intImm(0), mul(d, var(pvv, DType::F64))),
      Stmt::forLoop(iv, add(k, intImm(1)), intImm(M), std::move(eliminate))};
  Block column = {
      Stmt::store(piv, intImm(0), k),
      Stmt::forLoop(iv, add(k, intImm(1)), intImm(M),
                    {Stmt::ifThen(cmp(Op::Gt, call("abs", {A(i, k)}), call("abs", {A(p, k)})),
                                  {Stmt::store(piv, intImm(0), i)})}),
      Stmt::let(pvv, A(p, k)),
      Stmt::ifThen(cmp(Op::Eq, var(pvv, DType::F64), zero),
                   {Stmt::store(done, intImm(0), intImm(1))}, std::move(nonzero))};
  const ExprPtr live = cmp(Op::Eq, load(done, intImm(0), DType::I64), intImm(0));
  Block matrix = {
      Stmt::forLoop(
          ev, intImm(0), intImm(M * M),
          {Stmt::store(a, var(ev),
                       cast(DType::F64, load(x, add(mul(var(bv), intImm(M * M)), var(ev)), t)))}),
      Stmt::store(det, intImm(0), floatImm(1, DType::F64)), Stmt::store(done, intImm(0), intImm(0)),
      Stmt::forLoop(kv, intImm(0), intImm(M), {Stmt::ifThen(live, std::move(column))}),
      Stmt::store(y, var(bv), cast(t, select(live, d, zero)))};
  Block body = {Stmt::forLoop(bv, intImm(0), intImm(count), std::move(matrix))};
  Schedule sch;
  sch["method"] = std::string("partial pivoting, double");
  return b.finish(std::move(body), std::move(sch), o);
}

} // namespace aicc::loop::detail
