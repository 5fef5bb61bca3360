// Pow of integers, as the reference (ops/elementwise_binary.cpp ipow): in 64-bit wrapping
// arithmetic by binary exponentiation (the exponent's bits, lowest first: the result times the
// running square where a bit is set), cast to the base's type (32/64-bit: wrapping; 8/16-bit:
// saturated, as the reference stores them); a negative exponent gives the
// integer part of 1 / base^-e (1 for a base of 1, +-1 for -1, 0 otherwise; the reference refuses a
// base of 0 there, which gives 0 here). Broadcasting as numpy, one loop over the output's elements.
// (The elementwise code generator has no loops inside an element: fuse-elementwise leaves such a
// Pow alone.)
#include "loop/lower_ops.h"

namespace aicc::loop::detail {

std::optional<LoweredNode> lowerIntPow(const Node& n, const std::string& name,
                                       const LowerOptions& o) {
  const Value *xv = n.inputs.at(0), *ev = n.inputs.at(1);
  const DType t = n.outputs.at(0)->type.dtype;
  if (!isInteger(t) || !isInteger(ev->type.dtype) || isSubByteInt(t) ||
      isSubByteInt(ev->type.dtype))
    no("integer Pow of 8- to 64-bit integers only");
  const Dims od = staticDims(n.outputs[0], "output"), xd = staticDims(xv, "base"),
             ed = staticDims(ev, "exponent");
  if (xd.size() > od.size() || ed.size() > od.size()) no("operands of a higher rank than Pow's");
  FuncBuilder b(n, name, "elementwise");
  const std::string x = b.input(xv), e = b.input(ev), y = b.output(0);
  const std::string acc = b.temp("power", DType::I64, {2}); // [result, running square]
  std::vector<std::string> v;
  for (size_t d = 0; d < od.size(); ++d) v.push_back(b.loopVar("i"));
  // Operand index under numpy broadcasting (right-aligned; a 1 reads index 0).
  auto at = [&](const Dims& d) {
    ExprPtr i = intImm(0);
    const size_t off = od.size() - d.size();
    for (size_t k = 0; k < d.size(); ++k)
      i = add(mul(i, intImm(d[k])), d[k] == 1 ? intImm(0) : var(v[off + k]));
    return i;
  };
  ExprPtr oi = intImm(0);
  for (size_t k = 0; k < od.size(); ++k) oi = add(mul(oi, intImm(od[k])), var(v[k]));
  const std::string bv = b.fresh("base"), xv2 = b.fresh("exp"), kv = b.fresh("bit");
  const ExprPtr base = var(bv), ex = var(xv2), r = load(acc, intImm(0), DType::I64),
                sq = load(acc, intImm(1), DType::I64);
  const ExprPtr set =
      cmp(Op::Ne, binary(Op::BitAnd, binary(Op::Shr, ex, var(kv)), intImm(1)), intImm(0));
  Block elem = {
      Stmt::let(bv, cast(DType::I64, load(x, at(xd), xv->type.dtype))),
      Stmt::let(xv2, cast(DType::I64, load(e, at(ed), ev->type.dtype))),
      Stmt::store(acc, intImm(0), intImm(1)),
      Stmt::store(acc, intImm(1), base),
      Stmt::forLoop(kv, intImm(0), intImm(63),
                    {Stmt::ifThen(set, {Stmt::store(acc, intImm(0), mul(r, sq))}),
                     Stmt::store(acc, intImm(1), mul(sq, sq))}),
  };
  const ExprPtr negative =
      select(cmp(Op::Eq, base, intImm(1)), intImm(1),
             select(cmp(Op::Eq, base, intImm(-1)),
                    select(cmp(Op::Ne, binary(Op::BitAnd, ex, intImm(1)), intImm(0)), intImm(-1),
                           intImm(1)),
                    intImm(0)));
  ExprPtr value = select(cmp(Op::Lt, ex, intImm(0)), negative, r);
  if (dtypeSize(t) <= 2) { // (the reference stores 8- and 16-bit results saturated)
    const int bits = 8 * int(dtypeSize(t));
    const int64_t lo = isSigned(t) ? -(int64_t(1) << (bits - 1)) : 0,
                  hi = isSigned(t) ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
    value = max(min(value, intImm(hi)), intImm(lo));
  }
  elem.push_back(Stmt::store(y, oi, cast(t, value)));
  return b.finish(nest(v, od, std::move(elem), false), {}, o);
}

} // namespace aicc::loop::detail
