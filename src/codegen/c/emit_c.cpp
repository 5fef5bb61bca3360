#include "codegen/c/emit_c.h"

#include "codegen/c/micro_kernels_c.h"
#include "support/error.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

namespace aicc::codegen {

using loop::Expr;
using loop::ExprPtr;
using loop::Op;
using loop::Stmt;
using loop::StmtKind;

std::string cTypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "float";
  case DType::F64:
    return "double";
  case DType::I8:
    return "int8_t";
  case DType::I16:
    return "int16_t";
  case DType::I32:
    return "int32_t";
  case DType::I64:
    return "int64_t";
  case DType::U8:
  case DType::Bool:
    return "uint8_t";
  case DType::U16:
    return "uint16_t";
  case DType::U32:
    return "uint32_t";
  case DType::U64:
    return "uint64_t";
  default:
    fail("C codegen: element type {} has no C type here (reduced floats and 4/2-bit types are not "
         "supported yet)",
         dtypeName(t));
  }
}

std::string cIdentifier(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

namespace {

// Short dtype tag for helper names: "i32", "u8", "bool", ...
std::string tag(DType t) { return std::string(dtypeName(t)); }

// The unsigned type used to compute wrapping arithmetic of integer type t.
const char* wideUnsigned(DType t) { return dtypeSize(t) == 8 ? "uint64_t" : "uint32_t"; }

bool isSignedInt(DType t) { return isInteger(t) && isSigned(t); }

// The shortest decimal form of a float/double that reads back to the same value.
std::string floatLiteral(double v, DType t) {
  bool f32 = t == DType::F32;
  if (std::isnan(v)) return f32 ? "NAN" : "((double)NAN)";
  if (std::isinf(v)) {
    std::string s = f32 ? "INFINITY" : "((double)INFINITY)";
    return v < 0 ? "(-" + s + ")" : s;
  }
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    double back = std::strtod(buf, nullptr);
    if (f32 ? static_cast<float>(back) == static_cast<float>(v) : back == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  if (f32) s += "f";
  if (s[0] == '-') s = "(" + s + ")";
  return s;
}

std::string intLiteral(int64_t v, DType t) {
  if (t == DType::Bool) return v ? "1" : "0";
  if (t == DType::U64) return fmt::format("UINT64_C({})", static_cast<uint64_t>(v));
  if (t == DType::I64) {
    if (v == std::numeric_limits<int64_t>::min()) return "INT64_MIN";
    if (v >= -2147483647 && v <= 2147483647)
      return v < 0 ? fmt::format("({})", v) : std::to_string(v);
    return fmt::format("INT64_C({})", v);
  }
  if (t == DType::I32 && v == std::numeric_limits<int32_t>::min()) return "INT32_MIN";
  if (t == DType::U32) return fmt::format("((uint32_t){}u)", static_cast<uint32_t>(v));
  return fmt::format("(({}){})", cTypeName(t), v);
}

} // namespace

void CEmitter::need(const std::string& key) {
  if (helperKeys_.insert(key).second) helperOrder_.push_back(key);
}

// Emits one Func.
class FuncEmitter {
public:
  FuncEmitter(CEmitter& em, const loop::Func& f) : em_(em), f_(f) {}

  std::string run(const std::string& cName) {
    std::string params;
    for (const auto& b : f_.params) {
      std::string n = bufName(b.name);
      params += fmt::format("{}{}{}* {}", params.empty() ? "" : ", ",
                            b.role == loop::Role::In ? "const " : "", cTypeName(b.dtype), n);
      bufTypes_[b.name] = b.dtype;
    }
    if (params.empty()) params = "void";
    std::string body;
    block(f_.body, 1, body);
    std::string out = fmt::format("/* @{} */\nstatic void {}({}) {{\n", f_.name, cName, params);
    for (const auto& b : f_.params)
      if (!usedBufs_.count(b.name)) out += fmt::format("  (void){};\n", bufName(b.name));
    return out + body + "}\n";
  }

private:
  CEmitter& em_;
  const loop::Func& f_;
  std::map<std::string, std::string> names_; // IR name -> C name (vars and buffers)
  std::set<std::string> used_;
  std::map<std::string, DType> bufTypes_;
  std::set<std::string> usedBufs_;
  std::map<std::string, bool> indexVar_; // variable -> holds pure i64 index arithmetic

  std::string uniqueName(const std::string& key, const std::string& prefix, const std::string& n) {
    auto it = names_.find(key);
    if (it != names_.end()) return it->second;
    std::string c = prefix + cIdentifier(n);
    std::string base = c;
    for (int k = 0; used_.count(c); ++k) c = base + "_" + std::to_string(k);
    used_.insert(c);
    names_[key] = c;
    return c;
  }
  std::string bufName(const std::string& n) { return uniqueName("b:" + n, "b_", n); }
  std::string useBuf(const std::string& n) {
    usedBufs_.insert(n);
    return bufName(n);
  }
  std::string varName(const std::string& n) { return uniqueName("v:" + n, "v_", n); }

  static std::string indent(int d) { return std::string(static_cast<size_t>(2 * d), ' '); }

  // Pure i64 index arithmetic (immediates, loop variables, lets of such, + - * min max): it
  // never overflows in verified IR (L9 bounds), so it is emitted with C's native operators.
  bool indexPure(const ExprPtr& e) const {
    switch (e->op) {
    case Op::IntImm:
      return e->type == DType::I64;
    case Op::Var: {
      auto it = indexVar_.find(e->name);
      return e->type == DType::I64 && it != indexVar_.end() && it->second;
    }
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Neg:
    case Op::Div:
    case Op::Mod:
      if (e->type != DType::I64) return false;
      for (const auto& a : e->args)
        if (!indexPure(a)) return false;
      return true;
    default:
      return false;
    }
  }

  std::string wrapBinary(const char* op, DType t, const std::string& a, const std::string& b) {
    if (t == DType::Bool) return fmt::format("((uint8_t)(((int){} {} (int){}) != 0))", a, op, b);
    const char* u = wideUnsigned(t);
    return fmt::format("(({})(({}){} {} ({}){}))", cTypeName(t), u, a, op, u, b);
  }

  std::string helper(const std::string& key, const std::vector<std::string>& args) {
    em_.need(key);
    std::string s = "aicc_" + key + "(";
    for (size_t k = 0; k < args.size(); ++k) s += (k ? ", " : "") + args[k];
    return s + ")";
  }

  // C precedence levels of the forms expr() emits without parentheses.
  static constexpr int kOr = 1, kAnd = 2, kEquality = 3, kRelational = 4, kAdditive = 5,
                       kMultiplicative = 6, kUnary = 7, kPrimary = 10;

  // The precedence of expr(e)'s text: native infix forms (float arithmetic, i64 index
  // arithmetic, comparisons, logic) print bare; everything else is a call or parenthesized.
  int prec(const ExprPtr& e) const {
    bool flt = isFloat(e->type);
    bool native = flt || (indexPure(e) && !(e->args.size() == 2 && loop::isImm(e->args[0]) &&
                                            loop::isImm(e->args[1])));
    switch (e->op) {
    case Op::Add:
    case Op::Sub:
      return native ? kAdditive : kPrimary;
    case Op::Mul:
      return native ? kMultiplicative : kPrimary;
    case Op::Div:
    case Op::Mod: {
      if (flt) return e->op == Op::Div ? kMultiplicative : kPrimary;
      auto c = loop::asInt(e->args[1]);
      return e->type == DType::I64 && c && *c > 0 && native ? kMultiplicative : kPrimary;
    }
    case Op::Neg:
      return native && !loop::isImm(e->args[0]) ? kUnary : kPrimary;
    case Op::Not:
      return kUnary;
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
      return kRelational;
    case Op::Eq:
    case Op::Ne:
      return kEquality;
    case Op::And:
      return kAnd;
    case Op::Or:
      return kOr;
    default:
      return kPrimary;
    }
  }
  std::string operand(const ExprPtr& c, int minPrec) {
    std::string s = expr(c);
    return prec(c) < minPrec ? "(" + s + ")" : s;
  }
  // Left-associative binary operators; comparisons are not chained.
  std::string infix(const ExprPtr& e, const char* op) {
    int p = prec(e);
    bool cmp = loop::isCompare(e->op);
    return operand(e->args[0], cmp ? p + 1 : p) + " " + op + " " + operand(e->args[1], p + 1);
  }

  std::string expr(const ExprPtr& e) {
    DType t = e->type;
    switch (e->op) {
    case Op::IntImm:
      return intLiteral(e->i, t);
    case Op::FloatImm:
      return floatLiteral(e->f, t);
    case Op::Var:
      return varName(e->name);
    case Op::Load:
      return fmt::format("{}[{}]", useBuf(e->name), expr(e->args[0]));
    case Op::Add:
    case Op::Sub:
    case Op::Mul: {
      const char* op = e->op == Op::Add ? "+" : e->op == Op::Sub ? "-" : "*";
      if (prec(e) != kPrimary) return infix(e, op);
      return wrapBinary(op, t, operand(e->args[0], kPrimary), operand(e->args[1], kPrimary));
    }
    case Op::Div:
    case Op::Mod: {
      if (prec(e) != kPrimary) return infix(e, e->op == Op::Div ? "/" : "%");
      std::string a = operand(e->args[0], kPrimary), b = operand(e->args[1], kPrimary);
      if (isFloat(t)) {
        return t == DType::F32 ? fmt::format("((float)fmod({}, {}))", a, b)
                               : fmt::format("fmod({}, {})", a, b);
      }
      const char* op = e->op == Op::Div ? "/" : "%";
      auto c = loop::asInt(e->args[1]);
      if (c && *c > 0 && t != DType::Bool)
        return fmt::format("(({})({} {} {}))", cTypeName(t), a, op, b);
      return helper(std::string(e->op == Op::Div ? "div_" : "mod_") + tag(t), {a, b});
    }
    case Op::Min:
    case Op::Max: {
      std::string a = expr(e->args[0]), b = expr(e->args[1]);
      const char* mm = e->op == Op::Min ? "min" : "max";
      if (t == DType::F32) return fmt::format("f{}f({}, {})", mm, a, b);
      if (t == DType::F64) return fmt::format("f{}({}, {})", mm, a, b);
      return helper(std::string(mm) + "_" + tag(t), {a, b});
    }
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
    case Op::Eq:
    case Op::Ne: {
      static const std::map<Op, const char*> ops = {{Op::Lt, "<"},  {Op::Le, "<="}, {Op::Gt, ">"},
                                                    {Op::Ge, ">="}, {Op::Eq, "=="}, {Op::Ne, "!="}};
      return infix(e, ops.at(e->op));
    }
    case Op::And:
      return infix(e, "&&");
    case Op::Or:
      return infix(e, "||");
    case Op::BitAnd:
    case Op::BitOr:
    case Op::BitXor: {
      const char* op = e->op == Op::BitAnd ? "&" : e->op == Op::BitOr ? "|" : "^";
      return wrapBinary(op, t, expr(e->args[0]), expr(e->args[1]));
    }
    case Op::Shl:
    case Op::Shr: { // C leaves shifts by the operand's width or more undefined: guarded
      std::string a = expr(e->args[0]), b = expr(e->args[1]);
      const char* u = wideUnsigned(t);
      if (e->op == Op::Shr && isSigned(t))
        return fmt::format("(({})((int64_t)({}) >> (({}){} >= 63 ? 63 : ({}){})))", cTypeName(t), a,
                           u, b, u, b);
      return fmt::format("((({}){} >= {}) ? ({})0 : {})", u, b, dtypeSize(t) == 8 ? 64 : 32,
                         cTypeName(t), wrapBinary(e->op == Op::Shl ? "<<" : ">>", t, a, b));
    }
    case Op::Not:
      return "!" + operand(e->args[0], kUnary + 1);
    case Op::Neg: {
      if (prec(e) != kPrimary) return "-" + operand(e->args[0], kUnary + 1);
      std::string a = operand(e->args[0], kPrimary);
      if (t == DType::Bool) return fmt::format("((uint8_t)({} != 0))", a);
      return fmt::format("(({})(({})0 - ({}){}))", cTypeName(t), wideUnsigned(t), wideUnsigned(t),
                         a);
    }
    case Op::Select:
      return fmt::format("({} ? {} : {})", expr(e->args[0]), expr(e->args[1]), expr(e->args[2]));
    case Op::Cast:
      return castExpr(t, e->args[0]->type, operand(e->args[0], kPrimary));
    case Op::Bitcast: // a union's other member (C99 TC3); a bool is its byte, 0 or 1
      if (t == DType::Bool || e->args[0]->type == DType::Bool)
        return castExpr(t, e->args[0]->type, operand(e->args[0], kPrimary));
      return fmt::format("((union {{ {} a; {} b; }}){{.a = {}}}).b", cTypeName(e->args[0]->type),
                         cTypeName(t), expr(e->args[0]));
    case Op::Call:
      return mathCall(*e);
    }
    fail("C codegen: unknown expression operator");
  }

  std::string castExpr(DType to, DType from, const std::string& a) {
    if (to == from) return a;
    if (to == DType::Bool) return fmt::format("((uint8_t)({} != 0))", a);
    std::string ct = cTypeName(to);
    if (isFloat(to)) {
      // The reference converts through double; i64/u64 -> f32 must round once via double too.
      if (to == DType::F32 && (from == DType::I64 || from == DType::U64))
        return fmt::format("((float)(double){})", a);
      return fmt::format("(({}){})", ct, a);
    }
    cTypeName(from); // checks the source type
    if (isFloat(from)) return helper("f2i_" + tag(to), {fmt::format("(double){}", a)});
    return fmt::format("(({}){})", ct, a); // integer wrap (two's complement on C99 targets)
  }

  std::string mathCall(const Expr& e) {
    DType t = e.type;
    AICC_CHECK(t == DType::F32 || t == DType::F64, "C codegen: math function {} on {}", e.name,
               dtypeName(t));
    std::vector<std::string> args;
    for (const auto& a : e.args)
      args.push_back(t == DType::F32 ? "(double)" + operand(a, kPrimary) : expr(a));
    std::string call;
    if (e.name == "sigmoid") {
      call = helper("sigmoid", args);
    } else {
      auto it = loop::mathFunctions().find(e.name);
      AICC_CHECK(it != loop::mathFunctions().end() && it->second.libm,
                 "C codegen: unknown math function '{}'", e.name);
      call = std::string(it->second.libm) + "(";
      for (size_t k = 0; k < args.size(); ++k) call += (k ? ", " : "") + args[k];
      call += ")";
    }
    return t == DType::F32 ? "((float)" + call + ")" : call;
  }

  void block(const loop::Block& b, int d, std::string& out) {
    for (const auto& s : b) stmt(s, d, out);
  }

  void stmt(const Stmt& s, int d, std::string& out) {
    std::string in = indent(d);
    switch (s.kind) {
    case StmtKind::For: {
      std::string v = varName(s.name);
      indexVar_[s.name] = true;
      std::string note;
      if (s.loop == loop::LoopKind::Parallel) note = " /* parallel */";
      if (s.loop == loop::LoopKind::Vectorize) note = fmt::format(" /* vectorize({}) */", s.factor);
      if (s.loop == loop::LoopKind::Unroll) note = fmt::format(" /* unroll({}) */", s.factor);
      out += fmt::format("{}for (int64_t {} = {}; {} < {}; ++{}) {{{}\n", in, v, expr(s.lo), v,
                         expr(s.hi), v, note);
      block(s.body, d + 1, out);
      out += in + "}\n";
      return;
    }
    case StmtKind::Store:
      out += fmt::format("{}{}[{}] = {};\n", in, useBuf(s.name), expr(s.index), expr(s.value));
      return;
    case StmtKind::Let: {
      std::string value = expr(s.value);
      indexVar_[s.name] = indexPure(s.value);
      out += fmt::format("{}const {} {} = {};\n", in, cTypeName(s.value->type), varName(s.name),
                         value);
      return;
    }
    case StmtKind::If:
      out += fmt::format("{}if ({}) {{\n", in, expr(s.value));
      block(s.body, d + 1, out);
      if (!s.orelse.empty()) {
        out += in + "} else {\n";
        block(s.orelse, d + 1, out);
      }
      out += in + "}\n";
      return;
    case StmtKind::Call: {
      std::string why;
      auto mk = findMicroKernelC(s.name, &why);
      AICC_CHECK(mk, "C codegen: @{}: micro-kernel @{} has no portable C implementation: {}",
                 f_.name, s.name, why);
      AICC_CHECK(mk->params.size() == s.args.size(),
                 "C codegen: @{}: call @{} passes {} arguments, the kernel takes {}", f_.name,
                 s.name, s.args.size(), mk->params.size());
      std::vector<std::string> args;
      for (size_t k = 0; k < s.args.size(); ++k) {
        const auto& a = s.args[k];
        char kind = mk->params[k];
        if (!a.buffer.empty()) {
          auto it = bufTypes_.find(a.buffer);
          AICC_CHECK(it != bufTypes_.end() && it->second == DType::F32 && kind != 'i',
                     "C codegen: @{}: call @{}: argument {} must be {}", f_.name, s.name, k,
                     kind == 'i' ? "an integer value" : "an f32 buffer");
          std::string p = useBuf(a.buffer);
          auto off = a.offset ? loop::asInt(a.offset) : std::optional<int64_t>(0);
          if (!off || *off != 0) p = fmt::format("({} + {})", p, expr(a.offset));
          args.push_back(p);
        } else if (kind == 'n') {
          args.push_back("(const float*)0");
        } else {
          AICC_CHECK(kind == 'i' && !isFloat(a.value->type),
                     "C codegen: @{}: call @{}: argument {} must be a buffer", f_.name, s.name, k);
          args.push_back(castExpr(DType::I64, a.value->type, operand(a.value, kPrimary)));
        }
      }
      em_.microKernels_.insert(s.name);
      em_.need("uk:" + mk->key);
      out += fmt::format("{}{}(", in, mk->cName);
      for (size_t k = 0; k < args.size(); ++k) out += (k ? ", " : "") + args[k];
      out += fmt::format("); /* @{} */\n", s.name);
      return;
    }
    }
  }
};

void CEmitter::addFunction(const loop::Func& f, const std::string& cName) {
  FuncEmitter fe(*this, f);
  functions_ += fe.run(cName);
  functions_ += "\n";
}

std::string CEmitter::helpers() const {
  // The micro-kernels first, as one group between "simd" (vector types, macros, contraction on)
  // and "end" (contraction back to the command line's).
  std::string out;
  for (const std::string& key : helperOrder_)
    if (key.rfind("uk:", 0) == 0) out += microKernelCSource(key.substr(3)) + "\n";
  if (!out.empty()) out = microKernelCSource("simd") + "\n" + out + microKernelCSource("end");
  for (const std::string& key : helperOrder_) {
    if (key.rfind("uk:", 0) == 0) continue;
    auto us = key.find('_');
    std::string kind = key.substr(0, us);
    if (kind == "sigmoid") {
      out += "static double aicc_sigmoid(double a) {\n"
             "  return a >= 0 ? 1 / (1 + exp(-a)) : exp(a) / (1 + exp(a));\n}\n";
      continue;
    }
    DType t = *dtypeFromName(key.substr(us + 1));
    std::string ct = cTypeName(t);
    if (kind == "min" || kind == "max") {
      out += fmt::format("static {0} aicc_{1}({0} a, {0} b) {{ return a {2} b ? a : b; }}\n", ct,
                         key, kind == "min" ? "<=" : ">=");
    } else if (kind == "div" || kind == "mod") {
      // Division by zero is an error in the IR; C has no error path here, so it yields 0.
      // INT_MIN / -1 wraps (the reference's semantics) instead of trapping.
      const char* op = kind == "div" ? "/" : "%";
      std::string minusOne =
          isSignedInt(t)
              ? (kind == "div" ? fmt::format("  if (b == -1) return ({})(({})0 - ({})a);\n", ct,
                                             wideUnsigned(t), wideUnsigned(t))
                               : "  if (b == -1) return 0;\n")
              : "";
      out += fmt::format("static {0} aicc_{1}({0} a, {0} b) {{\n  if (b == 0) return 0;\n{2}"
                         "  return ({0})(a {3} b);\n}}\n",
                         ct, key, minusOne, op);
    } else if (kind == "f2i") {
      // Truncate, saturate to the type's range, NaN -> 0 (llvm.fptosi.sat).
      std::string lo, hi, maxv;
      int bits = static_cast<int>(dtypeSize(t) * 8);
      if (isSignedInt(t)) {
        lo = fmt::format("-{}.0", bits == 64 ? "9223372036854775808"
                                             : std::to_string(int64_t{1} << (bits - 1)));
        hi = bits == 64 ? "9223372036854775808.0" : std::to_string(int64_t{1} << (bits - 1)) + ".0";
        maxv = bits == 64 ? "INT64_MAX" : fmt::format("({})", (int64_t{1} << (bits - 1)) - 1);
        out += fmt::format("static {0} aicc_{1}(double v) {{\n  if (v != v) return 0;\n"
                           "  if (v <= {2}) return ({0}){2};\n  if (v >= {3}) return {4};\n"
                           "  return ({0})v;\n}}\n",
                           ct, key, lo, hi, maxv);
      } else {
        hi = bits == 64 ? "18446744073709551616.0" : std::to_string(uint64_t{1} << bits) + ".0";
        maxv = bits == 64 ? "UINT64_MAX" : fmt::format("({}u)", (uint64_t{1} << bits) - 1);
        out += fmt::format("static {0} aicc_{1}(double v) {{\n  if (v != v || v <= 0) return 0;\n"
                           "  if (v >= {2}) return {3};\n  return ({0})v;\n}}\n",
                           ct, key, hi, maxv);
      }
    } else {
      fail("C codegen: internal: unknown helper {}", key);
    }
  }
  return out;
}

std::string emitCModule(const loop::Module& m, const std::string& prefix) {
  CEmitter em;
  for (const auto& f : m.funcs) em.addFunction(f, prefix + cIdentifier(f.name));
  return "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n\n" + em.helpers() + "\n" +
         em.functions();
}

} // namespace aicc::codegen
