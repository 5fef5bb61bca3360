#include "loop/ir.h"

#include "support/error.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace aicc::loop {

namespace {

ExprPtr make(Expr e) { return std::make_shared<const Expr>(std::move(e)); }

} // namespace

ExprPtr intImm(int64_t v, DType t) {
  Expr e;
  e.op = Op::IntImm;
  e.type = t;
  e.i = t == DType::Bool ? (v != 0) : v;
  return make(std::move(e));
}

ExprPtr boolImm(bool v) { return intImm(v ? 1 : 0, DType::Bool); }

ExprPtr floatImm(double v, DType t) {
  Expr e;
  e.op = Op::FloatImm;
  e.type = t;
  if (std::isnan(v))
    v = std::numeric_limits<double>::quiet_NaN();
  else if (t == DType::F32)
    v = static_cast<double>(static_cast<float>(v));
  e.f = v;
  return make(std::move(e));
}

ExprPtr var(std::string name, DType t) {
  Expr e;
  e.op = Op::Var;
  e.type = t;
  e.name = std::move(name);
  return make(std::move(e));
}

ExprPtr load(std::string buffer, ExprPtr index, DType t) {
  Expr e;
  e.op = Op::Load;
  e.type = t;
  e.name = std::move(buffer);
  e.args = {std::move(index)};
  return make(std::move(e));
}

bool isBinary(Op op) { return op >= Op::Add && op <= Op::Shr; }
bool isCompare(Op op) { return op >= Op::Lt && op <= Op::Ne; }

ExprPtr binary(Op op, ExprPtr a, ExprPtr b) {
  Expr e;
  e.op = op;
  e.type = (isCompare(op) || op == Op::And || op == Op::Or) ? DType::Bool : a->type;
  e.args = {std::move(a), std::move(b)};
  return make(std::move(e));
}

ExprPtr add(ExprPtr a, ExprPtr b) { return binary(Op::Add, std::move(a), std::move(b)); }
ExprPtr sub(ExprPtr a, ExprPtr b) { return binary(Op::Sub, std::move(a), std::move(b)); }
ExprPtr mul(ExprPtr a, ExprPtr b) { return binary(Op::Mul, std::move(a), std::move(b)); }
ExprPtr div(ExprPtr a, ExprPtr b) { return binary(Op::Div, std::move(a), std::move(b)); }
ExprPtr mod(ExprPtr a, ExprPtr b) { return binary(Op::Mod, std::move(a), std::move(b)); }
ExprPtr min(ExprPtr a, ExprPtr b) { return binary(Op::Min, std::move(a), std::move(b)); }
ExprPtr max(ExprPtr a, ExprPtr b) { return binary(Op::Max, std::move(a), std::move(b)); }
ExprPtr cmp(Op op, ExprPtr a, ExprPtr b) { return binary(op, std::move(a), std::move(b)); }

ExprPtr logicalNot(ExprPtr a) {
  Expr e;
  e.op = Op::Not;
  e.type = DType::Bool;
  e.args = {std::move(a)};
  return make(std::move(e));
}

ExprPtr neg(ExprPtr a) {
  Expr e;
  e.op = Op::Neg;
  e.type = a->type;
  e.args = {std::move(a)};
  return make(std::move(e));
}

ExprPtr select(ExprPtr c, ExprPtr a, ExprPtr b) {
  Expr e;
  e.op = Op::Select;
  e.type = a->type;
  e.args = {std::move(c), std::move(a), std::move(b)};
  return make(std::move(e));
}

ExprPtr cast(DType t, ExprPtr a, bool saturate) {
  Expr e;
  e.op = Op::Cast;
  e.type = t;
  e.i = saturate ? 0 : 1;
  e.args = {std::move(a)};
  return make(std::move(e));
}

ExprPtr bitcast(DType t, ExprPtr a) {
  Expr e;
  e.op = Op::Bitcast;
  e.type = t;
  e.args = {std::move(a)};
  return make(std::move(e));
}

bool bitcastable(DType t) {
  return t == DType::Bool || t == DType::F32 || t == DType::F64 ||
         (isInteger(t) && dtypeBits(t) >= 8);
}

ExprPtr call(std::string fn, std::vector<ExprPtr> args) {
  Expr e;
  e.op = Op::Call;
  e.type = args.empty() ? DType::F32 : args[0]->type;
  e.name = std::move(fn);
  e.args = std::move(args);
  return make(std::move(e));
}

ExprPtr constant(DType t, double v) {
  if (isFloat(t)) return floatImm(v, t);
  return intImm(static_cast<int64_t>(v), t);
}

bool isImm(const ExprPtr& e) { return e->op == Op::IntImm || e->op == Op::FloatImm; }

std::optional<int64_t> asInt(const ExprPtr& e) {
  if (e->op == Op::IntImm) return e->i;
  return std::nullopt;
}

std::string_view opName(Op op) {
  switch (op) {
  case Op::IntImm:
    return "int";
  case Op::FloatImm:
    return "float";
  case Op::Var:
    return "var";
  case Op::Load:
    return "load";
  case Op::Add:
    return "+";
  case Op::Sub:
    return "-";
  case Op::Mul:
    return "*";
  case Op::Div:
    return "/";
  case Op::Mod:
    return "%";
  case Op::Min:
    return "min";
  case Op::Max:
    return "max";
  case Op::Lt:
    return "<";
  case Op::Le:
    return "<=";
  case Op::Gt:
    return ">";
  case Op::Ge:
    return ">=";
  case Op::Eq:
    return "==";
  case Op::Ne:
    return "!=";
  case Op::And:
    return "&&";
  case Op::Or:
    return "||";
  case Op::BitAnd:
    return "bitand";
  case Op::BitOr:
    return "bitor";
  case Op::BitXor:
    return "bitxor";
  case Op::Shl:
    return "shl";
  case Op::Shr:
    return "shr";
  case Op::Not:
    return "!";
  case Op::Neg:
    return "neg";
  case Op::Select:
    return "select";
  case Op::Cast:
    return "cast";
  case Op::Bitcast:
    return "bitcast";
  case Op::Call:
    return "call";
  }
  return "?";
}

namespace {
double sigmoidHost(double a) {
  return a >= 0 ? 1 / (1 + std::exp(-a)) : std::exp(a) / (1 + std::exp(a));
}
} // namespace

const std::map<std::string, MathFunction>& mathFunctions() {
  static const std::map<std::string, MathFunction> kFns = {
      {"exp", {1, "exp", ::exp, nullptr}},
      {"log", {1, "log", ::log, nullptr}},
      {"sqrt", {1, "sqrt", ::sqrt, nullptr}},
      {"tanh", {1, "tanh", ::tanh, nullptr}},
      {"erf", {1, "erf", ::erf, nullptr}},
      {"abs", {1, "fabs", ::fabs, nullptr}},
      {"floor", {1, "floor", ::floor, nullptr}},
      {"ceil", {1, "ceil", ::ceil, nullptr}},
      {"round", {1, "nearbyint", ::nearbyint, nullptr}}, // half to even (default rounding)
      {"sin", {1, "sin", ::sin, nullptr}},
      {"cos", {1, "cos", ::cos, nullptr}},
      {"log1p", {1, "log1p", ::log1p, nullptr}},
      {"expm1", {1, "expm1", ::expm1, nullptr}},
      {"atan", {1, "atan", ::atan, nullptr}},
      {"acos", {1, "acos", ::acos, nullptr}},
      {"asin", {1, "asin", ::asin, nullptr}},
      {"acosh", {1, "acosh", ::acosh, nullptr}},
      {"asinh", {1, "asinh", ::asinh, nullptr}},
      {"atanh", {1, "atanh", ::atanh, nullptr}},
      {"cosh", {1, "cosh", ::cosh, nullptr}},
      {"sinh", {1, "sinh", ::sinh, nullptr}},
      {"tan", {1, "tan", ::tan, nullptr}},
      {"pow", {2, "pow", nullptr, ::pow}},
      {"fmod", {2, "fmod", nullptr, ::fmod}},
      {"sigmoid", {1, nullptr, sigmoidHost, nullptr}},
  };
  return kFns;
}

bool equal(const ExprPtr& a, const ExprPtr& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  if (a->op != b->op || a->type != b->type || a->i != b->i || a->name != b->name ||
      a->args.size() != b->args.size())
    return false;
  if (a->op == Op::FloatImm && std::memcmp(&a->f, &b->f, sizeof(double)) != 0) return false;
  for (size_t k = 0; k < a->args.size(); ++k)
    if (!equal(a->args[k], b->args[k])) return false;
  return true;
}

ExprPtr substitute(const ExprPtr& e, const std::map<std::string, ExprPtr>& m) {
  if (e->op == Op::Var) {
    auto it = m.find(e->name);
    return it == m.end() ? e : it->second;
  }
  if (e->args.empty()) return e;
  bool changed = false;
  std::vector<ExprPtr> args;
  args.reserve(e->args.size());
  for (const auto& a : e->args) {
    args.push_back(substitute(a, m));
    changed |= args.back() != a;
  }
  if (!changed) return e;
  Expr copy = *e;
  copy.args = std::move(args);
  return make(std::move(copy));
}

void walk(const ExprPtr& e, const std::function<void(const Expr&)>& f) {
  f(*e);
  for (const auto& a : e->args) walk(a, f);
}

Stmt Stmt::forLoop(std::string v, ExprPtr lo, ExprPtr hi, Block body, LoopKind k, int64_t factor) {
  Stmt s;
  s.kind = StmtKind::For;
  s.name = std::move(v);
  s.lo = std::move(lo);
  s.hi = std::move(hi);
  s.body = std::move(body);
  s.loop = k;
  s.factor = factor;
  return s;
}

Stmt Stmt::store(std::string buffer, ExprPtr index, ExprPtr value) {
  Stmt s;
  s.kind = StmtKind::Store;
  s.name = std::move(buffer);
  s.index = std::move(index);
  s.value = std::move(value);
  return s;
}

Stmt Stmt::ifThen(ExprPtr cond, Block then, Block orelse) {
  Stmt s;
  s.kind = StmtKind::If;
  s.value = std::move(cond);
  s.body = std::move(then);
  s.orelse = std::move(orelse);
  return s;
}

Stmt Stmt::let(std::string v, ExprPtr value) {
  Stmt s;
  s.kind = StmtKind::Let;
  s.name = std::move(v);
  s.value = std::move(value);
  return s;
}

Stmt Stmt::callKernel(std::string callee, std::vector<CallArg> args) {
  Stmt s;
  s.kind = StmtKind::Call;
  s.name = std::move(callee);
  s.args = std::move(args);
  return s;
}

std::string_view roleName(Role r) {
  switch (r) {
  case Role::In:
    return "in";
  case Role::Out:
    return "out";
  case Role::Temp:
    return "temp";
  }
  return "?";
}

int64_t Buffer::numel() const { return checkedNumel(shape, "buffer %" + name); }

const Buffer* Func::findBuffer(const std::string& n) const {
  for (const auto& b : params)
    if (b.name == n) return &b;
  return nullptr;
}

Func* Module::find(const std::string& n) {
  for (auto& f : funcs)
    if (f.name == n) return &f;
  return nullptr;
}

const Func* Module::find(const std::string& n) const {
  for (const auto& f : funcs)
    if (f.name == n) return &f;
  return nullptr;
}

void mapExprs(Block& b, const std::function<ExprPtr(const ExprPtr&)>& f) {
  for (auto& s : b) {
    if (s.lo) s.lo = f(s.lo);
    if (s.hi) s.hi = f(s.hi);
    if (s.index) s.index = f(s.index);
    if (s.value) s.value = f(s.value);
    for (auto& a : s.args) {
      if (a.offset) a.offset = f(a.offset);
      if (a.value) a.value = f(a.value);
    }
    mapExprs(s.body, f);
    mapExprs(s.orelse, f);
  }
}

namespace {
void collectNames(const Block& b, std::set<std::string>& out) {
  for (const auto& s : b) {
    if (s.kind == StmtKind::For || s.kind == StmtKind::Let) out.insert(s.name);
    collectNames(s.body, out);
    collectNames(s.orelse, out);
  }
}
} // namespace

NameGen::NameGen(const Func& f) {
  for (const auto& b : f.params) used_.insert(b.name);
  collectNames(f.body, used_);
}

std::string NameGen::fresh(const std::string& base) {
  std::string n = base;
  for (int k = 0; used_.count(n); ++k) n = base + "_" + std::to_string(k);
  used_.insert(n);
  return n;
}

void substitute(Block& b, const std::string& v, const ExprPtr& e) {
  std::map<std::string, ExprPtr> m{{v, e}};
  mapExprs(b, [&](const ExprPtr& x) { return substitute(x, m); });
}

} // namespace aicc::loop
