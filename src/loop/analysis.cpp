#include "loop/analysis.h"

#include <algorithm>

namespace aicc::loop {

namespace {

using Opt = std::optional<int64_t>;

Opt addO(Opt a, Opt b) {
  int64_t r;
  if (!a || !b || __builtin_add_overflow(*a, *b, &r)) return std::nullopt;
  return r;
}

Opt mulO(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

Opt negO(Opt a) {
  if (!a || *a == INT64_MIN) return std::nullopt;
  return -*a;
}

Interval mulI(const Interval& a, const Interval& b) {
  if (!a.known() || !b.known()) {
    // Non-negative times a non-negative constant keeps a lower bound of 0.
    if (a.nonNegative() && b.nonNegative()) return {0, std::nullopt};
    return {};
  }
  Opt c[4] = {mulO(*a.lo, *b.lo), mulO(*a.lo, *b.hi), mulO(*a.hi, *b.lo), mulO(*a.hi, *b.hi)};
  for (auto& x : c)
    if (!x) return {};
  return {std::min({*c[0], *c[1], *c[2], *c[3]}), std::max({*c[0], *c[1], *c[2], *c[3]})};
}

} // namespace

Interval RangeScope::lookup(const std::string& v) const {
  for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
    if (it->first == v) return it->second;
  return {};
}

void RangeScope::narrow(const std::string& v, Interval r) {
  Interval cur = lookup(v);
  if (cur.lo && (!r.lo || *cur.lo > *r.lo)) r.lo = cur.lo;
  if (cur.hi && (!r.hi || *cur.hi < *r.hi)) r.hi = cur.hi;
  push(v, r);
}

Interval rangeOf(const ExprPtr& e, const RangeScope& s) {
  if (!isInteger(e->type)) return {};
  switch (e->op) {
  case Op::IntImm:
    return Interval::exact(e->i);
  case Op::Var:
    return s.lookup(e->name);
  case Op::Add: {
    Interval a = rangeOf(e->args[0], s), b = rangeOf(e->args[1], s);
    return {addO(a.lo, b.lo), addO(a.hi, b.hi)};
  }
  case Op::Sub: {
    Interval a = rangeOf(e->args[0], s), b = rangeOf(e->args[1], s);
    return {addO(a.lo, negO(b.hi)), addO(a.hi, negO(b.lo))};
  }
  case Op::Neg: {
    Interval a = rangeOf(e->args[0], s);
    return {negO(a.hi), negO(a.lo)};
  }
  case Op::Mul:
    return mulI(rangeOf(e->args[0], s), rangeOf(e->args[1], s));
  case Op::Div: {
    Interval a = rangeOf(e->args[0], s);
    auto c = asInt(e->args[1]);
    if (!c || *c <= 0 || !a.nonNegative()) return {};
    return {*a.lo / *c, a.hi ? Opt(*a.hi / *c) : std::nullopt};
  }
  case Op::Mod: {
    Interval a = rangeOf(e->args[0], s);
    auto c = asInt(e->args[1]);
    if (!c || *c <= 0 || !a.nonNegative()) return {};
    if (a.hi && *a.hi < *c) return a;
    return {0, *c - 1};
  }
  case Op::Min: {
    Interval a = rangeOf(e->args[0], s), b = rangeOf(e->args[1], s);
    Interval r;
    if (a.lo && b.lo) r.lo = std::min(*a.lo, *b.lo);
    if (a.hi || b.hi) r.hi = (a.hi && b.hi) ? std::min(*a.hi, *b.hi) : (a.hi ? a.hi : b.hi);
    return r;
  }
  case Op::Max: {
    Interval a = rangeOf(e->args[0], s), b = rangeOf(e->args[1], s);
    Interval r;
    if (a.hi && b.hi) r.hi = std::max(*a.hi, *b.hi);
    if (a.lo || b.lo) r.lo = (a.lo && b.lo) ? std::max(*a.lo, *b.lo) : (a.lo ? a.lo : b.lo);
    return r;
  }
  case Op::Select: {
    Interval a = rangeOf(e->args[1], s), b = rangeOf(e->args[2], s);
    Interval r;
    if (a.lo && b.lo) r.lo = std::min(*a.lo, *b.lo);
    if (a.hi && b.hi) r.hi = std::max(*a.hi, *b.hi);
    return r;
  }
  default:
    return {};
  }
}

Interval loopRange(const Stmt& f, const RangeScope& s) {
  Interval lo = rangeOf(f.lo, s), hi = rangeOf(f.hi, s);
  return {lo.lo, addO(hi.hi, -1)};
}

bool assume(const ExprPtr& c, RangeScope& s) {
  if (c->op == Op::And) {
    bool a = assume(c->args[0], s);
    return assume(c->args[1], s) && a;
  }
  if (c->op == Op::IntImm) return true;
  if (!isCompare(c->op) || c->op == Op::Ne) return false;
  Op op = c->op;
  ExprPtr v = c->args[0], other = c->args[1];
  if (v->op != Op::Var) {
    std::swap(v, other);
    // Mirror the comparison: e < %v  <=>  %v > e.
    op = op == Op::Lt   ? Op::Gt
         : op == Op::Gt ? Op::Lt
         : op == Op::Le ? Op::Ge
         : op == Op::Ge ? Op::Le
                        : op;
  }
  if (v->op != Op::Var || !isInteger(v->type)) return false;
  Interval o = rangeOf(other, s);
  Interval r;
  switch (op) {
  case Op::Lt:
    r.hi = addO(o.hi, -1);
    break;
  case Op::Le:
    r.hi = o.hi;
    break;
  case Op::Gt:
    r.lo = addO(o.lo, 1);
    break;
  case Op::Ge:
    r.lo = o.lo;
    break;
  case Op::Eq:
    r = o;
    break;
  default:
    return false;
  }
  s.narrow(v->name, r);
  // Exact only when the other side is a single known value.
  return o.known() && *o.lo == *o.hi;
}

} // namespace aicc::loop
