#include "loop/verifier.h"

#include "loop/analysis.h"
#include "loop/printer.h"
#include "support/error.h"

#include <set>

namespace aicc::loop {

namespace {

bool numericOrBool(DType t) { return t == DType::Bool || isFloat(t) || isInteger(t); }

class FuncVerifier {
public:
  FuncVerifier(const Func& f, std::vector<std::string>& out) : f_(f), out_(out) {}

  void run() {
    std::set<std::string> names;
    for (const auto& b : f_.params) {
      if (b.name.empty())
        report(1, "a buffer parameter has an empty name");
      else if (!names.insert(b.name).second)
        report(1, fmt::format("buffer {} is declared twice", varName(b.name)));
      if (!numericOrBool(b.dtype) || isComplex(b.dtype))
        report(2, fmt::format("buffer {} has unsupported element type {}", varName(b.name),
                              dtypeName(b.dtype)));
      for (int64_t d : b.shape)
        if (d < 0)
          report(2, fmt::format("buffer {} has a negative dimension in {}", varName(b.name),
                                formatDims(b.shape)));
      if (b.layout == "in" || b.layout == "out" || b.layout == "temp")
        report(2, fmt::format("buffer {} has the role word '{}' as its layout", varName(b.name),
                              b.layout));
    }
    block(f_.body);
  }

private:
  void report(int n, const std::string& msg) {
    out_.push_back(fmt::format("[L{}] @{}: {}", n, f_.name, msg));
  }

  std::optional<DType> lookup(const std::string& v) const {
    for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
      if (it->first == v) return it->second;
    return std::nullopt;
  }

  void bind(const std::string& v, DType t, const std::string& where) {
    if (lookup(v))
      report(3, fmt::format("{} rebinds {}, which is already in scope", where, varName(v)));
    if (f_.findBuffer(v))
      report(3, fmt::format("{} binds {}, the name of a buffer", where, varName(v)));
    scope_.push_back({v, t});
  }

  const Buffer* buffer(const std::string& n, const std::string& where) {
    const Buffer* b = f_.findBuffer(n);
    if (!b) report(5, fmt::format("{} uses undeclared buffer {}", where, varName(n)));
    return b;
  }

  void index(const ExprPtr& idx, const Buffer* b, const std::string& where) {
    expr(idx, where);
    if (idx->type != DType::I64)
      report(6, fmt::format("{}: index {} has type {}, not i64", where, printExpr(idx),
                            dtypeName(idx->type)));
    if (!b || unsure_ > 0) return; // under a guard the range analysis cannot use
    if (b->layout == kRunSizedLayout) return; // (no size before the run)
    Interval r = rangeOf(idx, ranges_);
    int64_t n = 1;
    for (int64_t d : b->shape)
      if (d < 0 || __builtin_mul_overflow(n, d, &n)) return; // reported under L2

    if ((r.lo && *r.lo < 0) || (r.hi && *r.hi >= n))
      report(9, fmt::format("{}: index {} ranges over [{}, {}], outside {} of {} elements", where,
                            printExpr(idx), r.lo ? std::to_string(*r.lo) : "?",
                            r.hi ? std::to_string(*r.hi) : "?", varName(b->name), n));
  }

  void expr(const ExprPtr& e, const std::string& where) {
    if (!e) {
      report(8, fmt::format("{}: missing expression", where));
      return;
    }
    for (const auto& a : e->args) expr(a, where);
    auto bad = [&](const std::string& why) {
      report(8, fmt::format("{}: {} {}", where, printExpr(e), why));
    };
    const auto& a = e->args;
    switch (e->op) {
    case Op::IntImm:
      if (!(isInteger(e->type) || e->type == DType::Bool))
        bad("is an integer immediate of a non-integer type");
      if (e->type == DType::Bool && e->i != 0 && e->i != 1)
        bad("is a bool immediate other than 0/1");
      return;
    case Op::FloatImm:
      if (!isFloat(e->type)) bad("is a float immediate of a non-float type");
      return;
    case Op::Var: {
      auto t = lookup(e->name);
      if (!t)
        report(3, fmt::format("{}: variable {} is not bound by an enclosing loop or let", where,
                              varName(e->name)));
      else if (*t != e->type)
        report(3, fmt::format("{}: variable {} is used as {} but bound as {}", where,
                              varName(e->name), dtypeName(e->type), dtypeName(*t)));
      return;
    }
    case Op::Load: {
      const Buffer* b = buffer(e->name, where);
      if (b && b->dtype != e->type)
        bad(fmt::format("loads as {} from a {} buffer", dtypeName(e->type), dtypeName(b->dtype)));
      if (a.size() != 1)
        bad("has no index");
      else
        index(a[0], b, where);
      return;
    }
    case Op::And:
    case Op::Or:
      if (a[0]->type != DType::Bool || a[1]->type != DType::Bool) bad("needs bool operands");
      return;
    case Op::BitAnd:
    case Op::BitOr:
    case Op::BitXor:
    case Op::Shl:
    case Op::Shr:
      if (!isInteger(e->type) || a[0]->type != e->type || a[1]->type != e->type)
        bad("needs integer operands of its type");
      return;
    case Op::Not:
      if (a[0]->type != DType::Bool) bad("needs a bool operand");
      return;
    case Op::Select:
      if (a[0]->type != DType::Bool) bad("needs a bool condition");
      if (a[1]->type != a[2]->type || e->type != a[1]->type) bad("has arms of different types");
      return;
    case Op::Cast:
      if (!numericOrBool(e->type) || !numericOrBool(a[0]->type))
        bad("casts between unsupported types");
      if (e->i != 0 && !isByteFloat(e->type))
        bad("is a non-saturating cast into a non-float8 type");
      return;
    case Op::Bitcast:
      if (!bitcastable(e->type) || !bitcastable(a[0]->type))
        bad("bitcasts between unsupported types");
      else if (dtypeBits(e->type) != dtypeBits(a[0]->type))
        bad("bitcasts between types of different widths");
      return;
    case Op::Call: {
      auto it = mathFunctions().find(e->name);
      if (it == mathFunctions().end()) {
        bad("calls an unknown math function");
        return;
      }
      if (static_cast<int>(a.size()) != it->second.arity)
        bad(fmt::format("needs {} arguments", it->second.arity));
      for (const auto& x : a)
        if (!isFloat(x->type) || x->type != e->type) bad("needs float arguments of its type");
      return;
    }
    case Op::Neg:
      if (!(isFloat(a[0]->type) || isInteger(a[0]->type)) || e->type != a[0]->type)
        bad("needs a numeric operand");
      return;
    default:
      break;
    }
    // Binary arithmetic and comparisons.
    if (a[0]->type != a[1]->type) {
      bad(fmt::format("mixes operand types {} and {}", dtypeName(a[0]->type),
                      dtypeName(a[1]->type)));
      return;
    }
    if (isCompare(e->op)) {
      if (e->type != DType::Bool) bad("is a comparison not typed bool");
      return;
    }
    if (!(isFloat(a[0]->type) || isInteger(a[0]->type)) || e->type != a[0]->type)
      bad("needs numeric operands");
    if (e->op == Op::Mod && !isInteger(e->type)) bad("needs integer operands");
    if ((e->op == Op::Div || e->op == Op::Mod) && a[1]->op == Op::IntImm && a[1]->i == 0)
      report(10, fmt::format("{}: {} divides by zero", where, printExpr(e)));
  }

  void block(const Block& b) {
    size_t mark = scope_.size(), rmark = ranges_.size();
    for (const auto& s : b) stmt(s);
    scope_.resize(mark);
    ranges_.resize(rmark);
  }

  void stmt(const Stmt& s) {
    switch (s.kind) {
    case StmtKind::For: {
      std::string where = "for " + varName(s.name);
      expr(s.lo, where);
      expr(s.hi, where);
      if (s.lo && s.hi && (s.lo->type != DType::I64 || s.hi->type != DType::I64))
        report(4, fmt::format("{}: bounds must be i64", where));
      bool factorOk = s.loop == LoopKind::Vectorize ? s.factor >= 1 && s.factor <= 64
                      : s.loop == LoopKind::Unroll  ? s.factor >= 1 && s.factor <= 1024
                                                    : s.factor == 1;
      if (!factorOk) report(4, fmt::format("{}: invalid factor {}", where, s.factor));
      Interval r = s.lo && s.hi ? loopRange(s, ranges_) : Interval{};
      bind(s.name, DType::I64, where);
      size_t rmark = ranges_.size();
      ranges_.push(s.name, r);
      block(s.body);
      ranges_.resize(rmark);
      scope_.pop_back();
      return;
    }
    case StmtKind::Store: {
      std::string where = "store " + varName(s.name);
      const Buffer* b = buffer(s.name, where);
      if (b && b->role == Role::In)
        report(7, fmt::format("{}: buffer {} is an input (read-only)", where, varName(s.name)));
      index(s.index, b, where);
      expr(s.value, where);
      if (b && s.value && s.value->type != b->dtype)
        report(7, fmt::format("{}: stores a {} value into a {} buffer", where,
                              dtypeName(s.value->type), dtypeName(b->dtype)));
      return;
    }
    case StmtKind::Let: {
      std::string where = "let " + varName(s.name);
      expr(s.value, where);
      bind(s.name, s.value ? s.value->type : DType::I64, where);
      if (s.value) ranges_.push(s.name, rangeOf(s.value, ranges_));
      return;
    }
    case StmtKind::If: {
      expr(s.value, "if");
      if (s.value && s.value->type != DType::Bool) report(8, "if: the condition is not bool");
      size_t rmark = ranges_.size();
      bool exact = s.value && assume(s.value, ranges_);
      unsure_ += !exact;
      block(s.body);
      unsure_ -= !exact;
      ranges_.resize(rmark);
      bool constant = s.value && s.value->op == Op::IntImm;
      unsure_ += !constant; // the else branch holds under the negated condition (not used)
      block(s.orelse);
      unsure_ -= !constant;
      return;
    }
    case StmtKind::Call: {
      std::string where = "call @" + s.name;
      if (s.name.empty()) report(11, "a call has an empty callee name");
      for (const auto& a : s.args) {
        if (!a.buffer.empty()) {
          const Buffer* b = buffer(a.buffer, where);
          if (a.offset) index(a.offset, b, where);
        } else {
          expr(a.value, where);
          if (a.value && !(isInteger(a.value->type) || isFloat(a.value->type)))
            report(11, fmt::format("{}: argument {} is neither an integer nor a float", where,
                                   printExpr(a.value)));
        }
      }
      return;
    }
    }
  }

  const Func& f_;
  std::vector<std::string>& out_;
  std::vector<std::pair<std::string, DType>> scope_;
  RangeScope ranges_;
  int unsure_ = 0;
};

} // namespace

std::vector<std::string> verifyMessages(const Func& f) {
  std::vector<std::string> out;
  FuncVerifier(f, out).run();
  return out;
}

std::vector<std::string> verifyMessages(const Module& m) {
  std::vector<std::string> out;
  std::set<std::string> names;
  for (const auto& f : m.funcs) {
    if (f.name.empty())
      out.push_back("[L1] a function has an empty name");
    else if (!names.insert(f.name).second)
      out.push_back(fmt::format("[L1] function @{} is defined twice", f.name));
    auto fm = verifyMessages(f);
    out.insert(out.end(), fm.begin(), fm.end());
  }
  return out;
}

void verify(const Module& m) {
  auto msgs = verifyMessages(m);
  if (msgs.empty()) return;
  std::string text = msgs[0];
  for (size_t k = 1; k < msgs.size() && k < 10; ++k) text += "; " + msgs[k];
  if (msgs.size() > 10) text += fmt::format("; ... ({} more)", msgs.size() - 10);
  fail("invalid loop IR: {}", text);
}

} // namespace aicc::loop
