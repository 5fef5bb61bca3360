#include "loop/printer.h"

#include "ir/printer.h"
#include "support/error.h"

#include <charconv>
#include <cmath>

namespace aicc::loop {

namespace {

bool bare(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string floatText(double v, DType t) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = t == DType::F32 ? std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v))
                           : std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// Precedence levels: higher binds tighter.
int prec(const Expr& e) {
  switch (e.op) {
  case Op::Or:
    return 1;
  case Op::And:
    return 2;
  case Op::Lt:
  case Op::Le:
  case Op::Gt:
  case Op::Ge:
  case Op::Eq:
  case Op::Ne:
    return 3;
  case Op::Add:
  case Op::Sub:
    return 4;
  case Op::Mul:
  case Op::Div:
  case Op::Mod:
    return 5;
  case Op::Neg:
  case Op::Not:
    return 6;
  case Op::IntImm:
    return e.i < 0 ? 6 : 7; // "-3" reads like a unary minus
  case Op::FloatImm:
    return (e.f < 0 || std::signbit(e.f)) ? 6 : 7;
  default:
    return 7;
  }
}

void print(const ExprPtr& e, std::string& out);

void printChild(const ExprPtr& e, int minPrec, std::string& out) {
  if (prec(*e) < minPrec) {
    out += '(';
    print(e, out);
    out += ')';
  } else {
    print(e, out);
  }
}

void printCallLike(std::string_view name, const std::vector<ExprPtr>& args, std::string& out) {
  out += name;
  out += '(';
  for (size_t k = 0; k < args.size(); ++k) {
    if (k) out += ", ";
    print(args[k], out);
  }
  out += ')';
}

void print(const ExprPtr& e, std::string& out) {
  switch (e->op) {
  case Op::IntImm:
    if (e->type == DType::Bool) {
      out += e->i ? "true" : "false";
    } else {
      out += std::to_string(e->i);
      if (e->type != DType::I64) (out += ':') += dtypeName(e->type);
    }
    return;
  case Op::FloatImm:
    out += floatText(e->f, e->type);
    if (e->type != DType::F32) (out += ':') += dtypeName(e->type);
    return;
  case Op::Var:
    out += varName(e->name);
    return;
  case Op::Load:
    out += varName(e->name);
    out += '[';
    print(e->args[0], out);
    out += ']';
    return;
  case Op::Min:
    printCallLike("min", e->args, out);
    return;
  case Op::Max:
    printCallLike("max", e->args, out);
    return;
  case Op::Select:
    printCallLike("select", e->args, out);
    return;
  case Op::BitAnd:
  case Op::BitOr:
  case Op::BitXor:
  case Op::Shl:
  case Op::Shr:
    printCallLike(std::string(opName(e->op)), e->args, out);
    return;
  case Op::Call:
    printCallLike(e->name, e->args, out);
    return;
  case Op::Cast:
    printCallLike(fmt::format("cast<{}{}>", dtypeName(e->type), e->i ? ", nosat" : ""), e->args,
                  out);
    return;
  case Op::Bitcast:
    printCallLike(fmt::format("bitcast<{}>", dtypeName(e->type)), e->args, out);
    return;
  case Op::Neg:
  case Op::Not:
    out += e->op == Op::Neg ? '-' : '!';
    // An immediate operand gets parentheses: "-3" would read back as the immediate -3.
    if (isImm(e->args[0])) {
      out += '(';
      print(e->args[0], out);
      out += ')';
    } else {
      printChild(e->args[0], 6, out);
    }
    return;
  default:
    break;
  }
  // Binary infix operators, left-associative; comparisons do not chain.
  int p = prec(*e);
  printChild(e->args[0], isCompare(e->op) ? p + 1 : p, out);
  out += ' ';
  out += opName(e->op);
  out += ' ';
  printChild(e->args[1], p + 1, out);
}

void indentTo(std::string& out, int n) { out.append(static_cast<size_t>(n) * 2, ' '); }

void printStmt(const Stmt& s, int ind, std::string& out) {
  indentTo(out, ind);
  switch (s.kind) {
  case StmtKind::For:
    out += "for " + varName(s.name) + " in " + printExpr(s.lo) + ".." + printExpr(s.hi);
    switch (s.loop) {
    case LoopKind::Serial:
      break;
    case LoopKind::Parallel:
      out += " parallel";
      break;
    case LoopKind::Vectorize:
      out += fmt::format(" vectorize({})", s.factor);
      break;
    case LoopKind::Unroll:
      out += fmt::format(" unroll({})", s.factor);
      break;
    }
    out += " {\n" + printBlock(s.body, ind + 1);
    indentTo(out, ind);
    out += "}\n";
    return;
  case StmtKind::Store:
    out +=
        "store " + varName(s.name) + "[" + printExpr(s.index) + "], " + printExpr(s.value) + "\n";
    return;
  case StmtKind::Let:
    out += "let " + varName(s.name) + " = " + printExpr(s.value) + "\n";
    return;
  case StmtKind::If:
    out += "if " + printExpr(s.value) + " {\n" + printBlock(s.body, ind + 1);
    indentTo(out, ind);
    out += "}";
    if (!s.orelse.empty()) {
      out += " else {\n" + printBlock(s.orelse, ind + 1);
      indentTo(out, ind);
      out += "}";
    }
    out += "\n";
    return;
  case StmtKind::Call: {
    out += "call @" + (bare(s.name) ? s.name : quoteString(s.name)) + "(";
    for (size_t k = 0; k < s.args.size(); ++k) {
      const CallArg& a = s.args[k];
      if (k) out += ", ";
      if (a.buffer.empty())
        out += printExpr(a.value);
      else if (a.offset)
        out += "&" + varName(a.buffer) + "[" + printExpr(a.offset) + "]";
      else
        out += varName(a.buffer);
    }
    out += ")\n";
    return;
  }
  }
}

std::string attrKey(const std::string& k) { return bare(k) ? k : quoteString(k); }

} // namespace

std::string varName(const std::string& n) { return "%" + (bare(n) ? n : quoteString(n)); }

std::string printExpr(const ExprPtr& e) {
  std::string out;
  print(e, out);
  return out;
}

std::string printBlock(const Block& b, int indent) {
  std::string out;
  for (const auto& s : b) printStmt(s, indent, out);
  return out;
}

std::string printAttrValue(const AttrValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* s = std::get_if<std::string>(&v)) return quoteString(*s);
  if (auto* is = std::get_if<std::vector<int64_t>>(&v))
    return is->empty() ? "ints[]" : fmt::format("[{}]", fmt::join(*is, ", "));
  const auto& ss = std::get<std::vector<std::string>>(v);
  if (ss.empty()) return "strings[]";
  std::vector<std::string> q;
  for (const auto& s : ss) q.push_back(quoteString(s));
  return fmt::format("[{}]", fmt::join(q, ", "));
}

std::string printSchedule(const Schedule& s) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : s) parts.push_back(attrKey(k) + " = " + printAttrValue(v));
  return fmt::format("{{{}}}", fmt::join(parts, ", "));
}

std::string printFunc(const Func& f) {
  std::string out = "func @" + (bare(f.name) ? f.name : quoteString(f.name)) + "(";
  for (size_t k = 0; k < f.params.size(); ++k) {
    const Buffer& b = f.params[k];
    if (k) out += ", ";
    out += fmt::format("{}: {}{}", varName(b.name), dtypeName(b.dtype), formatDims(b.shape));
    if (!b.layout.empty()) out += " " + (bare(b.layout) ? b.layout : quoteString(b.layout));
    out += " ";
    out += roleName(b.role);
  }
  out += ")";
  if (!f.schedule.empty()) out += " schedule " + printSchedule(f.schedule);
  out += " {\n" + printBlock(f.body, 1) + "}\n";
  return out;
}

std::string printModule(const Module& m) {
  std::string out;
  for (size_t k = 0; k < m.funcs.size(); ++k) {
    if (k) out += "\n";
    out += printFunc(m.funcs[k]);
  }
  return out;
}

} // namespace aicc::loop
