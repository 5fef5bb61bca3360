#include "loop/simplify.h"

#include "loop/scalar.h"

#include <cmath>

namespace aicc::loop {

namespace {

// ---- Canonical linear form of i64 expressions: sum of coef * atom + constant ----
struct Linear {
  std::vector<std::pair<ExprPtr, int64_t>> terms; // in order of first appearance
  int64_t c = 0;
  bool ok = true; // false: a coefficient overflowed; leave the expression alone

  void addTerm(const ExprPtr& atom, int64_t coef) {
    for (auto& [a, k] : terms)
      if (equal(a, atom)) {
        if (__builtin_add_overflow(k, coef, &k)) ok = false;
        return;
      }
    terms.push_back({atom, coef});
  }
  void addConst(int64_t v) {
    if (__builtin_add_overflow(c, v, &c)) ok = false;
  }
  void add(const Linear& o, int64_t scale) {
    ok = ok && o.ok;
    for (const auto& [a, k] : o.terms) {
      int64_t s;
      if (__builtin_mul_overflow(k, scale, &s)) ok = false;
      addTerm(a, s);
    }
    int64_t s;
    if (__builtin_mul_overflow(o.c, scale, &s)) ok = false;
    addConst(s);
  }
  bool isConst() const {
    for (const auto& t : terms)
      if (t.second != 0) return false;
    return true;
  }
};

bool linearOp(const Expr& e) {
  return e.type == DType::I64 && (e.op == Op::Add || e.op == Op::Sub || e.op == Op::Mul ||
                                  e.op == Op::Neg || e.op == Op::IntImm);
}

Linear linearize(const ExprPtr& e) {
  Linear l;
  if (e->type != DType::I64) {
    l.addTerm(e, 1);
    return l;
  }
  switch (e->op) {
  case Op::IntImm:
    l.c = e->i;
    return l;
  case Op::Add:
    l = linearize(e->args[0]);
    l.add(linearize(e->args[1]), 1);
    return l;
  case Op::Sub:
    l = linearize(e->args[0]);
    l.add(linearize(e->args[1]), -1);
    return l;
  case Op::Neg:
    l.add(linearize(e->args[0]), -1);
    return l;
  case Op::Mul: {
    Linear a = linearize(e->args[0]), b = linearize(e->args[1]);
    if (b.isConst()) {
      l.add(a, b.c);
      return l;
    }
    if (a.isConst()) {
      l.add(b, a.c);
      return l;
    }
    l.addTerm(e, 1);
    return l;
  }
  default:
    l.addTerm(e, 1);
    return l;
  }
}

ExprPtr rebuild(const Linear& l) {
  ExprPtr acc;
  for (const auto& [atom, k] : l.terms) {
    if (k == 0) continue;
    if (!acc) {
      acc = k == 1 ? atom : mul(atom, intImm(k));
    } else if (k > 0) {
      acc = add(acc, k == 1 ? atom : mul(atom, intImm(k)));
    } else if (k == INT64_MIN) {
      acc = add(acc, mul(atom, intImm(k)));
    } else {
      acc = sub(acc, k == -1 ? atom : mul(atom, intImm(-k)));
    }
  }
  if (!acc) return intImm(l.c);
  if (l.c > 0) return add(acc, intImm(l.c));
  if (l.c < 0 && l.c != INT64_MIN) return sub(acc, intImm(-l.c));
  if (l.c == INT64_MIN) return add(acc, intImm(l.c));
  return acc;
}

// Range of a linear form from the ranges of its atoms.
Interval rangeOfLinear(const Linear& l, const RangeScope& s) {
  Interval r = Interval::exact(l.c);
  for (const auto& [atom, k] : l.terms) {
    if (k == 0) continue;
    Interval a = rangeOf(atom, s);
    int64_t x, y;
    auto scaled = [&, k = k](std::optional<int64_t> v) -> std::optional<int64_t> {
      if (!v || __builtin_mul_overflow(*v, k, &x)) return std::nullopt;
      return x;
    };
    std::optional<int64_t> lo = scaled(k > 0 ? a.lo : a.hi), hi = scaled(k > 0 ? a.hi : a.lo);
    r.lo = (r.lo && lo && !__builtin_add_overflow(*r.lo, *lo, &y)) ? std::optional<int64_t>(y)
                                                                   : std::nullopt;
    r.hi = (r.hi && hi && !__builtin_add_overflow(*r.hi, *hi, &y)) ? std::optional<int64_t>(y)
                                                                   : std::nullopt;
  }
  return r;
}

Interval rangeOfExpr(const ExprPtr& e, const RangeScope& s) {
  if (e->type != DType::I64) return rangeOf(e, s);
  Linear l = linearize(e);
  Interval a = l.ok ? rangeOfLinear(l, s) : Interval{};
  Interval b = rangeOf(e, s);
  // Both are sound; take the tighter bounds.
  if (b.lo && (!a.lo || *b.lo > *a.lo)) a.lo = b.lo;
  if (b.hi && (!a.hi || *b.hi < *a.hi)) a.hi = b.hi;
  return a;
}

int64_t floorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

class Simplifier {
public:
  Simplifier(const RangeScope& s, SimplifyStats* st) : s_(s), st_(st) {}

  ExprPtr run(const ExprPtr& e, int depth = 0) {
    // Children first.
    ExprPtr cur = e;
    if (!e->args.empty()) {
      std::vector<ExprPtr> args;
      bool changed = false;
      for (const auto& a : e->args) {
        args.push_back(run(a, depth));
        changed |= args.back() != a;
      }
      if (changed) {
        Expr copy = *e;
        copy.args = std::move(args);
        cur = std::make_shared<const Expr>(std::move(copy));
      }
    }
    if (depth > 64) return cur; // a safety net against rules that undo each other
    if (ExprPtr r = rewrite(cur)) return run(r, depth + 1);
    return cur;
  }

private:
  ExprPtr hit(const char* rule, ExprPtr r) {
    if (st_) ++st_->hits[rule];
    return r;
  }

  static Scalar scalarOf(const ExprPtr& e) {
    Scalar v;
    v.i = e->i;
    v.f = e->f;
    return v;
  }
  static ExprPtr immOf(DType t, Scalar v) { return isFloat(t) ? floatImm(v.f, t) : intImm(v.i, t); }
  static bool isIntConst(const ExprPtr& e, int64_t v) { return e->op == Op::IntImm && e->i == v; }
  static bool isFloatConst(const ExprPtr& e, double v) {
    return e->op == Op::FloatImm && e->f == v;
  }
  static bool isOne(const ExprPtr& e) { return isIntConst(e, 1) || isFloatConst(e, 1.0); }
  static bool isBool(const ExprPtr& e, bool v) {
    return e->op == Op::IntImm && e->type == DType::Bool && e->i == v;
  }

  // One rewrite at the root of e (children already simplified), or nullptr.
  ExprPtr rewrite(const ExprPtr& e) {
    if (ExprPtr r = fold(e)) return hit("fold", r);
    if (ExprPtr r = identity(e)) return hit("identity", r);
    if (e->op == Op::Select && e->args[0]->op == Op::IntImm)
      return hit("select", e->args[0]->i ? e->args[1] : e->args[2]);
    if (ExprPtr r = logic(e)) return hit("logic", r);
    if (linearOp(*e) && e->op != Op::IntImm) {
      Linear l = linearize(e);
      if (l.ok) {
        ExprPtr r = rebuild(l);
        if (!equal(r, e)) return hit("linear", r);
      }
    }
    if (ExprPtr r = divMod(e)) return hit("div-mod", r);
    if (ExprPtr r = minMax(e)) return hit("min-max", r);
    if (ExprPtr r = compare(e)) return hit("compare", r);
    return nullptr;
  }

  ExprPtr fold(const ExprPtr& e) {
    const auto& a = e->args;
    if (a.empty()) return nullptr;
    for (const auto& x : a)
      if (!isImm(x)) return nullptr;
    DType t = a[0]->type;
    if (t == DType::U64 && e->op != Op::Cast) return nullptr;
    if (isBinary(e->op)) {
      auto r = applyBinary(e->op, t, scalarOf(a[0]), scalarOf(a[1]));
      if (!r) return nullptr;
      return immOf(e->type, *r);
    }
    switch (e->op) {
    case Op::Neg:
    case Op::Not:
      return immOf(e->type, applyUnary(e->op, t, scalarOf(a[0])));
    case Op::Cast: {
      if (isFloat(t) && !isFloat(e->type) && e->type != DType::Bool) {
        // Only in-range conversions fold (out-of-range ones saturate; keep them visible).
        double v = std::trunc(a[0]->f);
        if (!(v >= -9.2e18 && v <= 9.2e18)) return nullptr;
        Scalar back = applyCast(e->type, t, scalarOf(a[0]));
        if (static_cast<double>(back.i) != v) return nullptr;
        return intImm(back.i, e->type);
      }
      return immOf(e->type, applyCast(e->type, t, scalarOf(a[0])));
    }
    case Op::Call: {
      if (!isFloat(e->type)) return nullptr;
      std::vector<Scalar> v;
      for (const auto& x : a) v.push_back(scalarOf(x));
      return immOf(e->type, applyCall(e->name, e->type, v));
    }
    default:
      return nullptr;
    }
  }

  ExprPtr identity(const ExprPtr& e) {
    const auto& a = e->args;
    bool isInt = isInteger(e->type);
    switch (e->op) {
    case Op::Add:
      if (isInt && isIntConst(a[1], 0)) return a[0];
      if (isInt && isIntConst(a[0], 0)) return a[1];
      return nullptr;
    case Op::Sub:
      if (isIntConst(a[1], 0) || (isFloatConst(a[1], 0.0) && !std::signbit(a[1]->f))) return a[0];
      if (isInt && equal(a[0], a[1])) return intImm(0, e->type);
      return nullptr;
    case Op::Mul:
      if (isOne(a[1])) return a[0];
      if (isOne(a[0])) return a[1];
      if (isInt && (isIntConst(a[1], 0) || isIntConst(a[0], 0))) return intImm(0, e->type);
      return nullptr;
    case Op::Div:
      if (isOne(a[1])) return a[0];
      return nullptr;
    case Op::Mod:
      if (isInt && isIntConst(a[1], 1)) return intImm(0, e->type);
      return nullptr;
    case Op::Min:
    case Op::Max:
      if (equal(a[0], a[1])) return a[0];
      return nullptr;
    case Op::Neg:
    case Op::Not:
      if (a[0]->op == e->op) return a[0]->args[0];
      return nullptr;
    case Op::Cast:
      if (a[0]->type == e->type) return a[0];
      return nullptr;
    case Op::Select:
      if (equal(a[1], a[2])) return a[1];
      return nullptr;
    default:
      return nullptr;
    }
  }

  ExprPtr logic(const ExprPtr& e) {
    if (e->op != Op::And && e->op != Op::Or) return nullptr;
    bool isAnd = e->op == Op::And;
    for (int k = 0; k < 2; ++k) {
      const ExprPtr& c = e->args[k];
      const ExprPtr& other = e->args[1 - k];
      if (isBool(c, isAnd)) return other; // true && x, false || x
      if (isBool(c, !isAnd)) return c;    // false && x, true || x
    }
    return nullptr;
  }

  ExprPtr divMod(const ExprPtr& e) {
    if ((e->op != Op::Div && e->op != Op::Mod) || e->type != DType::I64) return nullptr;
    auto cv = asInt(e->args[1]);
    if (!cv || *cv <= 0) return nullptr;
    int64_t c = *cv;
    const ExprPtr& x = e->args[0];
    if (!rangeOfExpr(x, s_).nonNegative()) return nullptr;
    // (y / a) / c -> y / (a*c)
    if (e->op == Op::Div && x->op == Op::Div) {
      auto a = asInt(x->args[1]);
      int64_t ac;
      if (a && *a > 0 && !__builtin_mul_overflow(*a, c, &ac) &&
          rangeOfExpr(x->args[0], s_).nonNegative())
        return div(x->args[0], intImm(ac));
    }
    Linear l = linearize(x);
    if (!l.ok) return nullptr;
    Linear q, r;
    for (const auto& [atom, k] : l.terms) {
      if (k == 0) continue;
      if (k % c == 0)
        q.addTerm(atom, k / c);
      else
        r.addTerm(atom, k);
    }
    q.addConst(floorDiv(l.c, c));
    r.addConst(l.c - floorDiv(l.c, c) * c);
    if (!q.ok || !r.ok) return nullptr;
    Interval rr = rangeOfLinear(r, s_);
    if (!rr.known() || floorDiv(*rr.lo, c) != floorDiv(*rr.hi, c)) {
      // x = c*q + r with r >= 0: x / c = q + r / c and x % c = r % c (when q is not constant).
      if (!rr.nonNegative() || q.isConst()) return nullptr;
      ExprPtr out = e->op == Op::Div ? add(rebuild(q), div(rebuild(r), intImm(c)))
                                     : mod(rebuild(r), intImm(c));
      return equal(out, e) ? nullptr : out;
    }
    int64_t k = floorDiv(*rr.lo, c);
    // x = c*(q + k) + (r - k*c) with 0 <= r - k*c < c.
    int64_t kc;
    if (__builtin_mul_overflow(k, c, &kc)) return nullptr;
    ExprPtr out;
    if (e->op == Op::Div) {
      q.addConst(k);
      out = rebuild(q);
    } else {
      r.addConst(-kc);
      out = rebuild(r);
    }
    if (!q.ok || !r.ok || equal(out, e)) return nullptr;
    return out;
  }

  ExprPtr minMax(const ExprPtr& e) {
    if ((e->op != Op::Min && e->op != Op::Max) || e->type != DType::I64) return nullptr;
    Linear d = linearize(e->args[0]);
    d.add(linearize(e->args[1]), -1);
    if (!d.ok) return nullptr;
    Interval r = rangeOfLinear(d, s_);
    bool aLe = r.hi && *r.hi <= 0, aGe = r.lo && *r.lo >= 0;
    if (e->op == Op::Min) {
      if (aLe) return e->args[0];
      if (aGe) return e->args[1];
    } else {
      if (aGe) return e->args[0];
      if (aLe) return e->args[1];
    }
    return nullptr;
  }

  ExprPtr compare(const ExprPtr& e) {
    if (!isCompare(e->op) || e->args[0]->type != DType::I64) return nullptr;
    Linear d = linearize(e->args[0]);
    d.add(linearize(e->args[1]), -1);
    if (!d.ok) return nullptr;
    Interval r = rangeOfLinear(d, s_);
    auto decide = [&](bool always, bool never) -> ExprPtr {
      if (always) return boolImm(true);
      if (never) return boolImm(false);
      return nullptr;
    };
    bool neg = r.hi && *r.hi < 0, nonpos = r.hi && *r.hi <= 0;
    bool pos = r.lo && *r.lo > 0, nonneg = r.lo && *r.lo >= 0;
    switch (e->op) {
    case Op::Lt:
      return decide(neg, nonneg);
    case Op::Le:
      return decide(nonpos, pos);
    case Op::Gt:
      return decide(pos, nonpos);
    case Op::Ge:
      return decide(nonneg, neg);
    case Op::Eq:
      return decide(r.known() && *r.lo == 0 && *r.hi == 0, neg || pos);
    case Op::Ne:
      return decide(neg || pos, r.known() && *r.lo == 0 && *r.hi == 0);
    default:
      return nullptr;
    }
  }

  const RangeScope& s_;
  SimplifyStats* st_;
};

// ---- Statements ----
// An i64 expression of only + - * neg, immediates and variables: an index computation that is
// cheap to recompute, so a `let` of it is substituted (exposing it to the div/mod patterns).
bool isLinearTree(const ExprPtr& e) {
  if (e->type != DType::I64) return false;
  if (e->op == Op::Var || e->op == Op::IntImm) return true;
  if (!linearOp(*e)) return false;
  for (const auto& a : e->args)
    if (!isLinearTree(a)) return false;
  return true;
}

class StmtSimplifier {
public:
  explicit StmtSimplifier(SimplifyStats* st) : st_(st) {}
  bool changed = false;

  void block(Block& b) {
    size_t mark = s_.size();
    Block out;
    for (size_t k = 0; k < b.size(); ++k) {
      Stmt& s = b[k];
      if (s.kind == StmtKind::Let) {
        s.value = expr(s.value);
        if (isImm(s.value) || s.value->op == Op::Var || isLinearTree(s.value)) {
          // Substitute into the rest of the block and drop the let.
          Block rest(std::make_move_iterator(b.begin() + static_cast<std::ptrdiff_t>(k) + 1),
                     std::make_move_iterator(b.end()));
          substitute(rest, s.name, s.value);
          b.resize(k + 1);
          for (auto& r : rest) b.push_back(std::move(r));
          count("let");
          continue;
        }
        s_.push(s.name, rangeOfExpr(s.value, s_));
        out.push_back(std::move(s));
        continue;
      }
      if (s.kind == StmtKind::If) {
        s.value = expr(s.value);
        if (s.value->op == Op::IntImm) {
          Block& keep = s.value->i ? s.body : s.orelse;
          if (!hasTopLevelLet(keep)) {
            count("if");
            block(keep);
            for (auto& x : keep) out.push_back(std::move(x));
            continue;
          }
        }
        size_t m = s_.size();
        assume(s.value, s_);
        block(s.body);
        s_.resize(m);
        block(s.orelse);
        out.push_back(std::move(s));
        continue;
      }
      if (s.kind == StmtKind::For) {
        s.lo = expr(s.lo);
        s.hi = expr(s.hi);
        auto lo = asInt(s.lo), hi = asInt(s.hi);
        if (lo && hi && *hi <= *lo) {
          count("loop");
          continue; // no iteration
        }
        if (lo && hi && *hi == *lo + 1 && !hasTopLevelLet(s.body)) {
          count("loop");
          substitute(s.body, s.name, s.lo);
          block(s.body);
          for (auto& x : s.body) out.push_back(std::move(x));
          continue;
        }
        Interval r = loopRange(s, s_);
        s_.push(s.name, r);
        block(s.body);
        s_.pop();
        out.push_back(std::move(s));
        continue;
      }
      if (s.index) s.index = expr(s.index);
      if (s.value) s.value = expr(s.value);
      for (auto& a : s.args) {
        if (a.offset) a.offset = expr(a.offset);
        if (a.value) a.value = expr(a.value);
      }
      out.push_back(std::move(s));
    }
    s_.resize(mark);
    b = std::move(out);
  }

private:
  static bool hasTopLevelLet(const Block& b) {
    for (const auto& s : b)
      if (s.kind == StmtKind::Let) return true;
    return false;
  }
  void count(const char* rule) {
    changed = true;
    if (st_) ++st_->hits[rule];
  }
  ExprPtr expr(const ExprPtr& e) {
    ExprPtr r = Simplifier(s_, st_).run(e);
    if (!equal(r, e)) changed = true;
    return r;
  }

  SimplifyStats* st_;
  RangeScope s_;
};

} // namespace

int64_t SimplifyStats::total() const {
  int64_t n = 0;
  for (const auto& [_, v] : hits) n += v;
  return n;
}

ExprPtr simplifyExpr(const ExprPtr& e, const RangeScope& s, SimplifyStats* stats) {
  return Simplifier(s, stats).run(e);
}

bool simplifyFunc(Func& f, SimplifyStats* stats) {
  bool any = false;
  for (int it = 0; it < 16; ++it) {
    StmtSimplifier ss(stats);
    ss.block(f.body);
    if (!ss.changed) break;
    any = true;
  }
  return any;
}

bool simplifyModule(Module& m, SimplifyStats* stats) {
  bool any = false;
  for (auto& f : m.funcs) any |= simplifyFunc(f, stats);
  return any;
}

} // namespace aicc::loop
