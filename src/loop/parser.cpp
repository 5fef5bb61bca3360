#include "loop/parser.h"

#include "support/error.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace aicc::loop {

namespace {

enum class Tok { End, Word, Number, String, Punct };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  int line = 1, col = 1;
};

class Lexer {
public:
  explicit Lexer(std::string_view s) : s_(s) {}

  Token next() {
    skipSpace();
    Token t;
    t.line = line_;
    t.col = col_;
    if (pos_ >= s_.size()) return t;
    char c = s_[pos_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      t.kind = Tok::Word;
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
        t.text += get();
      return t;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      t.kind = Tok::Number;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])))
        t.text += get();
      if (peekc(0) == '.' && std::isdigit(static_cast<unsigned char>(peekc(1)))) {
        t.text += get();
        while (std::isdigit(static_cast<unsigned char>(peekc(0)))) t.text += get();
      }
      if (peekc(0) == 'e' || peekc(0) == 'E') {
        size_t k = 1;
        if (peekc(1) == '+' || peekc(1) == '-') k = 2;
        if (std::isdigit(static_cast<unsigned char>(peekc(k)))) {
          for (size_t j = 0; j < k; ++j) t.text += get();
          while (std::isdigit(static_cast<unsigned char>(peekc(0)))) t.text += get();
        }
      }
      return t;
    }
    if (c == '"') {
      t.kind = Tok::String;
      get();
      while (true) {
        if (pos_ >= s_.size() || s_[pos_] == '\n')
          fail("{}:{}: unterminated string", t.line, t.col);
        char ch = get();
        if (ch == '"') break;
        if (ch == '\\') {
          char e = get();
          switch (e) {
          case 'n':
            t.text += '\n';
            break;
          case 't':
            t.text += '\t';
            break;
          case 'r':
            t.text += '\r';
            break;
          case 'x': {
            std::string hex{get(), get()};
            t.text += static_cast<char>(std::strtol(hex.c_str(), nullptr, 16));
            break;
          }
          default:
            t.text += e;
          }
        } else {
          t.text += ch;
        }
      }
      return t;
    }
    t.kind = Tok::Punct;
    static const char* kTwo[] = {"..", "<=", ">=", "==", "!=", "&&", "||"};
    for (const char* two : kTwo)
      if (c == two[0] && peekc(1) == two[1]) {
        t.text = {get(), get()};
        return t;
      }
    t.text = std::string(1, get());
    return t;
  }

private:
  char peekc(size_t k) const { return pos_ + k < s_.size() ? s_[pos_ + k] : '\0'; }
  char get() {
    char c = pos_ < s_.size() ? s_[pos_++] : '\0';
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    return c;
  }
  void skipSpace() {
    while (pos_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[pos_])))
        get();
      else if (s_[pos_] == '/' && peekc(1) == '/')
        while (pos_ < s_.size() && s_[pos_] != '\n') get();
      else
        break;
    }
  }
  std::string_view s_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

class Parser {
public:
  explicit Parser(std::string_view text) : lex_(text) { tok_ = lex_.next(); }

  Module module() {
    Module m;
    while (tok_.kind != Tok::End) m.funcs.push_back(func());
    return m;
  }

  ExprPtr exprOnly(const std::map<std::string, DType>& vars, const std::vector<Buffer>& bufs) {
    for (const auto& [n, t] : vars) scope_.push_back({n, t});
    buffers_ = bufs;
    ExprPtr e = expr();
    if (tok_.kind != Tok::End) error("expected the end of the expression");
    return e;
  }

private:
  [[noreturn]] void error(const std::string& msg) {
    std::string got = tok_.kind == Tok::End ? "end of input" : "'" + tok_.text + "'";
    fail("{}:{}: {} (got {})", tok_.line, tok_.col, msg, got);
  }
  bool is(const char* p) const {
    return (tok_.kind == Tok::Punct || tok_.kind == Tok::Word) && tok_.text == p;
  }
  bool accept(const char* p) {
    if (!is(p)) return false;
    advance();
    return true;
  }
  void expect(const char* p) {
    if (!accept(p)) error(fmt::format("expected '{}'", p));
  }
  void advance() { tok_ = lex_.next(); }

  std::string word(const char* what) {
    if (tok_.kind != Tok::Word) error(fmt::format("expected {}", what));
    std::string s = tok_.text;
    advance();
    return s;
  }
  // A name: a word, a number-like run, or a quoted string.
  std::string name(const char* what) {
    if (tok_.kind == Tok::Word || tok_.kind == Tok::String || tok_.kind == Tok::Number) {
      std::string s = tok_.text;
      advance();
      return s;
    }
    error(fmt::format("expected {}", what));
  }
  std::string percentName(const char* what) {
    expect("%");
    return name(what);
  }
  int64_t integer(const char* what) {
    bool negative = accept("-");
    if (tok_.kind != Tok::Number || tok_.text.find_first_of(".eE") != std::string::npos)
      error(fmt::format("expected {} (an integer)", what));
    errno = 0;
    int64_t v = std::strtoll(tok_.text.c_str(), nullptr, 10);
    if (errno == ERANGE) error("integer out of range");
    advance();
    return negative ? -v : v;
  }
  DType dtype() {
    std::string n = word("an element type");
    auto t = dtypeFromName(n);
    if (!t) fail("unknown element type '{}'", n);
    return *t;
  }

  Func func() {
    Func f;
    expect("func");
    expect("@");
    f.name = name("a function name");
    expect("(");
    if (!is(")")) {
      do f.params.push_back(param());
      while (accept(","));
    }
    expect(")");
    if (accept("schedule")) f.schedule = schedule();
    scope_.clear();
    buffers_ = f.params;
    f.body = block();
    return f;
  }

  Buffer param() {
    Buffer b;
    b.name = percentName("a buffer name");
    expect(":");
    b.dtype = dtype();
    expect("[");
    if (!is("]")) {
      do b.shape.push_back(integer("a dimension"));
      while (accept(","));
    }
    expect("]");
    std::string w = name("a layout or role (in, out, temp)");
    if (!is(",") && !is(")")) {
      b.layout = w;
      w = word("a role (in, out, temp)");
    }
    if (w == "in")
      b.role = Role::In;
    else if (w == "out")
      b.role = Role::Out;
    else if (w == "temp")
      b.role = Role::Temp;
    else
      fail("buffer %{}: unknown role '{}' (in, out, temp)", b.name, w);
    return b;
  }

  Schedule schedule() {
    Schedule s;
    expect("{");
    if (!is("}")) {
      do {
        std::string key = name("a schedule key");
        expect("=");
        s[key] = attrValue();
      } while (accept(","));
    }
    expect("}");
    return s;
  }

  AttrValue attrValue() {
    if (tok_.kind == Tok::String) return name("a string");
    if (accept("ints")) {
      expect("[");
      expect("]");
      return std::vector<int64_t>{};
    }
    if (accept("strings")) {
      expect("[");
      expect("]");
      return std::vector<std::string>{};
    }
    if (accept("[")) {
      if (tok_.kind == Tok::String) {
        std::vector<std::string> v;
        do v.push_back(name("a string"));
        while (accept(","));
        expect("]");
        return v;
      }
      std::vector<int64_t> v;
      do v.push_back(integer("a list element"));
      while (accept(","));
      expect("]");
      return v;
    }
    return integer("a schedule value");
  }

  Block block() {
    expect("{");
    size_t mark = scope_.size();
    Block b;
    while (!accept("}")) {
      if (tok_.kind == Tok::End) error("expected '}'");
      b.push_back(stmt());
    }
    scope_.resize(mark);
    return b;
  }

  Stmt stmt() {
    if (accept("for")) {
      std::string v = percentName("a loop variable");
      expect("in");
      ExprPtr lo = expr();
      expect("..");
      ExprPtr hi = expr();
      LoopKind k = LoopKind::Serial;
      int64_t factor = 1;
      if (accept("serial")) {
      } else if (accept("parallel")) {
        k = LoopKind::Parallel;
      } else if (is("vectorize") || is("unroll")) {
        k = is("vectorize") ? LoopKind::Vectorize : LoopKind::Unroll;
        advance();
        expect("(");
        factor = integer("a factor");
        expect(")");
      }
      scope_.push_back({v, DType::I64});
      Block body = block();
      scope_.pop_back();
      return Stmt::forLoop(v, lo, hi, std::move(body), k, factor);
    }
    if (accept("store")) {
      std::string b = percentName("a buffer");
      expect("[");
      ExprPtr idx = expr();
      expect("]");
      expect(",");
      return Stmt::store(b, idx, expr());
    }
    if (accept("let")) {
      std::string v = percentName("a variable");
      expect("=");
      ExprPtr e = expr();
      scope_.push_back({v, e->type});
      return Stmt::let(v, e);
    }
    if (accept("if")) {
      ExprPtr c = expr();
      Block then = block();
      Block orelse;
      if (accept("else")) orelse = block();
      return Stmt::ifThen(c, std::move(then), std::move(orelse));
    }
    if (accept("call")) {
      expect("@");
      std::string callee = name("a kernel name");
      expect("(");
      std::vector<CallArg> args;
      if (!is(")")) {
        do args.push_back(callArg());
        while (accept(","));
      }
      expect(")");
      return Stmt::callKernel(callee, std::move(args));
    }
    error("expected a statement (for, store, let, if, call)");
  }

  CallArg callArg() {
    CallArg a;
    if (accept("&")) {
      a.buffer = percentName("a buffer");
      expect("[");
      a.offset = expr();
      expect("]");
      return a;
    }
    // `%name` alone naming a buffer (not a variable in scope) is a buffer argument.
    if (is("%")) {
      Lexer save = lex_;
      Token saveTok = tok_;
      advance();
      std::string n = name("a name");
      if (!is("[") && !varType(n) && findBuffer(n)) {
        a.buffer = n;
        return a;
      }
      lex_ = save;
      tok_ = saveTok;
    }
    a.value = expr();
    return a;
  }

  std::optional<DType> varType(const std::string& n) const {
    for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
      if (it->first == n) return it->second;
    return std::nullopt;
  }
  const Buffer* findBuffer(const std::string& n) const {
    for (const auto& b : buffers_)
      if (b.name == n) return &b;
    return nullptr;
  }

  // ---- Expressions (precedence climbing; see printer.cpp) ----
  ExprPtr expr() { return orExpr(); }
  ExprPtr orExpr() {
    ExprPtr e = andExpr();
    while (accept("||")) e = binary(Op::Or, e, andExpr());
    return e;
  }
  ExprPtr andExpr() {
    ExprPtr e = cmpExpr();
    while (accept("&&")) e = binary(Op::And, e, cmpExpr());
    return e;
  }
  ExprPtr cmpExpr() {
    ExprPtr e = addExpr();
    static const std::pair<const char*, Op> kOps[] = {{"<=", Op::Le}, {">=", Op::Ge},
                                                      {"==", Op::Eq}, {"!=", Op::Ne},
                                                      {"<", Op::Lt},  {">", Op::Gt}};
    for (auto [p, op] : kOps)
      if (accept(p)) return binary(op, e, addExpr());
    return e;
  }
  ExprPtr addExpr() {
    ExprPtr e = mulExpr();
    while (true) {
      if (accept("+"))
        e = binary(Op::Add, e, mulExpr());
      else if (accept("-"))
        e = binary(Op::Sub, e, mulExpr());
      else
        return e;
    }
  }
  ExprPtr mulExpr() {
    ExprPtr e = unary();
    while (true) {
      if (accept("*"))
        e = binary(Op::Mul, e, unary());
      else if (accept("/"))
        e = binary(Op::Div, e, unary());
      else if (accept("%"))
        e = binary(Op::Mod, e, unary());
      else
        return e;
    }
  }
  ExprPtr unary() {
    if (accept("!")) return logicalNot(unary());
    if (accept("-")) {
      if (tok_.kind == Tok::Number || is("inf")) return literal(true);
      return neg(unary());
    }
    return primary();
  }
  ExprPtr literal(bool negative) {
    std::string text = tok_.text;
    advance();
    bool isF = text == "inf" || text == "nan" || text.find_first_of(".eE") != std::string::npos;
    std::optional<DType> t;
    if (accept(":")) t = dtype();
    if (isF) {
      double v = text == "inf"   ? std::numeric_limits<double>::infinity()
                 : text == "nan" ? std::numeric_limits<double>::quiet_NaN()
                                 : std::strtod(text.c_str(), nullptr);
      if (t && !isFloat(*t)) fail("float literal {} with non-float type {}", text, dtypeName(*t));
      DType ft = t.value_or(DType::F32);
      // Parse f32 literals as float so that rounding matches the printer's shortest form.
      if (ft == DType::F32 && text != "inf" && text != "nan")
        v = std::strtof(text.c_str(), nullptr);
      return floatImm(negative ? -v : v, ft);
    }
    errno = 0;
    int64_t v;
    if (negative) {
      v = std::strtoll(("-" + text).c_str(), nullptr, 10);
    } else {
      v = std::strtoll(text.c_str(), nullptr, 10);
    }
    if (errno == ERANGE) fail("integer literal {} out of range", text);
    if (t && isFloat(*t)) return floatImm(static_cast<double>(v), *t);
    return intImm(v, t.value_or(DType::I64));
  }
  ExprPtr primary() {
    if (tok_.kind == Tok::Number || is("inf") || is("nan")) return literal(false);
    if (accept("true")) return boolImm(true);
    if (accept("false")) return boolImm(false);
    if (accept("(")) {
      ExprPtr e = expr();
      expect(")");
      return e;
    }
    if (accept("%")) {
      std::string n = name("a variable or buffer name");
      if (accept("[")) {
        ExprPtr idx = expr();
        expect("]");
        const Buffer* b = findBuffer(n);
        return load(n, idx, b ? b->dtype : DType::F32);
      }
      return var(n, varType(n).value_or(DType::I64));
    }
    if (tok_.kind != Tok::Word) error("expected an expression");
    std::string fn = tok_.text;
    advance();
    if (fn == "cast") {
      expect("<");
      DType t = dtype();
      bool saturate = true;
      if (accept(",")) {
        if (tok_.kind != Tok::Word || tok_.text != "nosat") error("expected nosat");
        advance();
        saturate = false;
      }
      expect(">");
      expect("(");
      ExprPtr a = expr();
      expect(")");
      return cast(t, a, saturate);
    }
    if (fn == "bitcast") {
      expect("<");
      DType t = dtype();
      expect(">");
      expect("(");
      ExprPtr a = expr();
      expect(")");
      return bitcast(t, a);
    }
    std::vector<ExprPtr> args;
    expect("(");
    if (!is(")")) {
      do args.push_back(expr());
      while (accept(","));
    }
    expect(")");
    auto want = [&](size_t n) {
      if (args.size() != n) fail("{} takes {} arguments, got {}", fn, n, args.size());
    };
    if (fn == "min" || fn == "max") {
      want(2);
      return binary(fn == "min" ? Op::Min : Op::Max, args[0], args[1]);
    }
    static const std::pair<const char*, Op> kBitOps[] = {{"bitand", Op::BitAnd},
                                                         {"bitor", Op::BitOr},
                                                         {"bitxor", Op::BitXor},
                                                         {"shl", Op::Shl},
                                                         {"shr", Op::Shr}};
    for (const auto& [name, op] : kBitOps)
      if (fn == name) {
        want(2);
        return binary(op, args[0], args[1]);
      }
    if (fn == "select") {
      want(3);
      return select(args[0], args[1], args[2]);
    }
    auto it = mathFunctions().find(fn);
    if (it == mathFunctions().end()) fail("unknown function '{}'", fn);
    want(static_cast<size_t>(it->second.arity));
    return call(fn, args);
  }

  Lexer lex_;
  Token tok_;
  std::vector<std::pair<std::string, DType>> scope_;
  std::vector<Buffer> buffers_;
};

} // namespace

Module parseModule(std::string_view text) { return Parser(text).module(); }

ExprPtr parseExpr(std::string_view text, const std::map<std::string, DType>& vars,
                  const std::vector<Buffer>& buffers) {
  return Parser(text).exprOnly(vars, buffers);
}

} // namespace aicc::loop
