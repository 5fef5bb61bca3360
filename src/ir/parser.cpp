// The IR text parser: a scannerless recursive-descent parser over the grammar in docs/ir.md.
// Every error is an aicc::Error "LINE:COL: reason"; malformed input never crashes (nesting depth
// is bounded, sizes are checked before allocating).
#include "ir/parser.h"

#include "ir/printer.h"
#include "ops/op_def.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <set>

namespace aicc {
namespace {

constexpr int kMaxDepth = 200;

bool isWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '+' || c == '-';
}

class Parser {
public:
  Parser(std::string_view text, const ParseOptions& o)
      : p_(text.data()), end_(text.data() + text.size()), opts_(o),
        reg_(o.registry ? *o.registry : OpRegistry::instance()) {}

  Model model() {
    Model m;
    skipWs();
    if (peekWord("model")) {
      word();
      while (!peek('{')) {
        Pos at = pos();
        std::string key = word("a model field");
        expect('=');
        if (key == "ir_version")
          m.irVersion = integer<int64_t>("ir_version");
        else if (key == "producer")
          m.producerName = str();
        else if (key == "producer_version")
          m.producerVersion = str();
        else if (key == "opsets") {
          expect('{');
          while (!accept('}')) {
            if (!m.opsets.empty()) expect(',');
            Pos dp = pos();
            std::string d = str();
            if (m.opsets.count(d))
              errorAt(dp, fmt::format("opset for domain {} given twice", quoteString(d)));
            expect(':');
            m.opsets[d] = integer<int64_t>("opset version");
          }
        } else
          errorAt(at, fmt::format("unknown model field '{}'", key));
      }
      expect('{');
      m.graph = graph(nullptr);
      expect('}');
    } else {
      m.graph = graph(nullptr);
    }
    skipWs();
    if (p_ != end_) error("expected end of input");
    return m;
  }

  Type wholeType() {
    Type t = type();
    skipWs();
    if (p_ != end_) error("expected end of input");
    return t;
  }

private:
  struct Pos {
    int line, col;
  };

  // ---- Lexing -----------------------------------------------------------------------------
  Pos pos() {
    skipWs();
    return {line_, col_};
  }
  void advance() {
    if (*p_ == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++p_;
  }
  void skipWs() {
    while (p_ != end_) {
      if (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')
        advance();
      else if (*p_ == '/' && p_ + 1 != end_ && p_[1] == '/')
        while (p_ != end_ && *p_ != '\n') advance();
      else
        break;
    }
  }
  std::string found() {
    skipWs();
    if (p_ == end_) return "end of input";
    if (isWordChar(*p_)) {
      const char* q = p_;
      while (q != end_ && isWordChar(*q) && q - p_ < 40) ++q;
      return fmt::format("'{}'", std::string_view(p_, static_cast<size_t>(q - p_)));
    }
    if (static_cast<unsigned char>(*p_) < 0x20 || static_cast<unsigned char>(*p_) >= 0x7f)
      return fmt::format("byte 0x{:02x}", static_cast<unsigned char>(*p_));
    return fmt::format("'{}'", *p_);
  }
  [[noreturn]] void errorAt(Pos at, const std::string& msg) {
    fail("{}:{}: {}", at.line, at.col, msg);
  }
  [[noreturn]] void error(const std::string& msg) {
    std::string got = found();
    errorAt({line_, col_}, fmt::format("{}, got {}", msg, got));
  }
  bool peek(char c) {
    skipWs();
    return p_ != end_ && *p_ == c;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    advance();
    return true;
  }
  void expect(char c) {
    if (!accept(c)) error(fmt::format("expected '{}'", c));
  }
  bool peekWordChar() {
    skipWs();
    return p_ != end_ && isWordChar(*p_);
  }
  std::string word(const char* what = "a word") {
    if (!peekWordChar()) error(fmt::format("expected {}", what));
    const char* s = p_;
    while (p_ != end_ && isWordChar(*p_)) advance();
    return std::string(s, static_cast<size_t>(p_ - s));
  }
  bool peekWord(std::string_view w) {
    if (!peekWordChar()) return false;
    size_t n = 0;
    while (p_ + n != end_ && isWordChar(p_[n])) ++n;
    return std::string_view(p_, n) == w;
  }
  bool acceptWord(std::string_view w) {
    if (!peekWord(w)) return false;
    word();
    return true;
  }
  void expectWord(std::string_view w) {
    if (!acceptWord(w)) error(fmt::format("expected '{}'", w));
  }
  int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  std::string str() {
    if (!peek('"')) error("expected a string");
    Pos at = pos();
    advance();
    std::string s;
    for (;;) {
      if (p_ == end_) errorAt(at, "unterminated string");
      char c = *p_;
      if (c == '"') break;
      if (c == '\n') errorAt(at, "unterminated string (newline inside)");
      if (c != '\\') {
        s += c;
        advance();
        continue;
      }
      advance();
      if (p_ == end_) errorAt(at, "unterminated string");
      char e = *p_;
      advance();
      switch (e) {
      case '"':
        s += '"';
        break;
      case '\\':
        s += '\\';
        break;
      case 'n':
        s += '\n';
        break;
      case 't':
        s += '\t';
        break;
      case 'r':
        s += '\r';
        break;
      case 'x': {
        int hi = p_ != end_ ? hexDigit(*p_) : -1;
        int lo = p_ != end_ && p_ + 1 != end_ ? hexDigit(p_[1]) : -1;
        if (hi < 0 || lo < 0) errorAt({line_, col_}, "expected two hex digits after \\x");
        advance();
        advance();
        s += static_cast<char>(hi * 16 + lo);
        break;
      }
      default:
        errorAt({line_, col_ - 1}, fmt::format("unknown escape '\\{}'", e));
      }
    }
    advance();
    return s;
  }
  // A name: a bare word or a quoted string.
  std::string name(const char* what) {
    if (peek('"')) return str();
    return word(what);
  }
  std::string valueName() {
    expect('%');
    Pos at = pos();
    std::string n = name("a value name");
    if (n.empty()) errorAt(at, "empty value name");
    return n;
  }

  template <typename T> T integer(const char* what) {
    Pos at = pos();
    std::string w = word(what);
    return toInt<T>(w, at, what);
  }
  template <typename T> T toInt(const std::string& w, Pos at, const char* what) {
    T v{};
    const char* b = w.data();
    if (!w.empty() && w[0] == '+') ++b;
    auto r = std::from_chars(b, w.data() + w.size(), v);
    if (r.ec == std::errc::result_out_of_range)
      errorAt(at, fmt::format("{} '{}' is out of range", what, w));
    if (r.ec != std::errc() || r.ptr != w.data() + w.size())
      errorAt(at, fmt::format("expected {} (an integer), got '{}'", what, w));
    return v;
  }
  // A float word: decimal, inf/-inf, nan/-nan (canonical quiet NaN), or 0x bits (when hexOk).
  template <typename F> F toFloat(const std::string& w, Pos at) {
    using Bits = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;
    std::string_view s = w;
    bool neg = !s.empty() && s[0] == '-';
    std::string_view mag = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? s.substr(1) : s;
    if (mag == "inf")
      return neg ? -std::numeric_limits<F>::infinity() : std::numeric_limits<F>::infinity();
    if (mag == "nan") {
      Bits b = std::bit_cast<Bits>(std::numeric_limits<F>::quiet_NaN());
      if (neg) b |= Bits{1} << (sizeof(F) * 8 - 1);
      return std::bit_cast<F>(b);
    }
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
      return std::bit_cast<F>(hexBits<Bits>(w, at));
    F v{};
    const char* b = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
    auto r = std::from_chars(b, s.data() + s.size(), v);
    if (r.ec == std::errc::result_out_of_range)
      errorAt(at, fmt::format("float '{}' is out of range", w));
    if (r.ec != std::errc() || r.ptr != s.data() + s.size())
      errorAt(at, fmt::format("expected a floating-point number, got '{}'", w));
    return v;
  }
  template <typename Bits> Bits hexBits(const std::string& w, Pos at) {
    Bits v{};
    auto r = std::from_chars(w.data() + 2, w.data() + w.size(), v, 16);
    if (r.ec != std::errc() || r.ptr != w.data() + w.size())
      errorAt(at, fmt::format("bad hex bits '{}'", w));
    return v;
  }

  struct Depth {
    Parser& p;
    Depth(Parser& pp, Pos at) : p(pp) {
      if (++p.depth_ > kMaxDepth) p.errorAt(at, "nesting too deep");
    }
    ~Depth() { --p.depth_; }
  };

  // ---- Types ------------------------------------------------------------------------------
  Type type() {
    Pos at = pos();
    Depth d(*this, at);
    if (accept('?')) {
      if (!peek('[')) return Type{};
      return Type::tensor(DType::Undefined, shape());
    }
    std::string w = word("a type");
    if (w == "seq" || w == "opt") {
      expect('<');
      Type e = type();
      expect('>');
      return w == "seq" ? Type::sequence(std::move(e)) : Type::optional(std::move(e));
    }
    if (w == "map") { // map<KEY,VALUE>
      expect('<');
      Pos kat = pos();
      std::string k = word("a key type");
      auto kt = dtypeFromName(k);
      if (!kt || *kt == DType::Undefined) errorAt(kat, fmt::format("unknown key type '{}'", k));
      expect(',');
      Type v = type();
      expect('>');
      return Type::map(*kt, std::move(v));
    }
    auto dt = dtypeFromName(w);
    if (!dt || *dt == DType::Undefined) errorAt(at, fmt::format("unknown element type '{}'", w));
    return Type::tensor(*dt, shape());
  }
  std::optional<Shape> shape() {
    expect('[');
    if (accept('*')) {
      expect(']');
      return std::nullopt;
    }
    Shape s;
    while (!accept(']')) {
      if (!s.empty()) expect(',');
      Pos at = pos();
      if (accept('?')) {
        s.push_back(Dim{});
        continue;
      }
      if (peek('"')) { // a quoted symbol, unless an expression starts with one
        const char* b = p_;
        const int line = line_, col = col_;
        std::string name = str();
        if (peek(',') || peek(']')) {
          s.push_back(Dim::sym(name));
          continue;
        }
        p_ = b, line_ = line, col_ = col;
      }
      std::string text = dimText();
      if (text.empty()) error("expected a dimension");
      if (std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        s.push_back(Dim::known(toInt<int64_t>(text, at, "dimension")));
        continue;
      }
      // A symbol, or an expression of symbols (ir/dim_expr.h: a derived dim).
      std::string why;
      auto e = DimExpr::parse(text, &why);
      std::string shown = text; // (at most 60 characters of it in the message)
      if (shown.size() > 60) shown.resize(57), shown.append("...");
      if (!e) errorAt(at, fmt::format("bad dimension '{}': {}", shown, why));
      Dim d = dimOf(*e);
      if (!d.isStatic() && d.symbol.empty()) errorAt(at, fmt::format("bad dimension '{}'", shown));
      s.push_back(d);
    }
    return s;
  }
  // The text of one dimension: up to the next ',' or ']' outside parentheses and quotes.
  std::string dimText() {
    skipWs();
    const char* b = p_;
    int depth = 0;
    bool quoted = false;
    while (p_ != end_) {
      const char c = *p_;
      if (quoted) {
        if (c == '\\' && p_ + 1 != end_)
          advance();
        else if (c == '"')
          quoted = false;
        else if (c == '\n')
          break;
      } else if (c == '"') {
        quoted = true;
      } else if (c == '(') {
        ++depth;
      } else if (c == ')') {
        if (depth == 0) break;
        --depth;
      } else if ((c == ',' || c == ']') && depth == 0) {
        break;
      } else if (c == '\n') {
        break;
      }
      advance();
    }
    std::string t(b, static_cast<size_t>(p_ - b));
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.pop_back();
    return t;
  }

  // ---- Tensors ----------------------------------------------------------------------------
  // The data list `[e, e, ...]` of a tensor of type `ty` (static shape, known dtype).
  Tensor tensorData(const Type& ty, Pos at) {
    if (!ty.isTensor() || ty.dtype == DType::Undefined || !ty.shape || !toDims(*ty.shape))
      errorAt(at, "tensor data needs a known element type and a static shape");
    Dims dims = *toDims(*ty.shape);
    int64_t numel = 0;
    try {
      numel = checkedNumel(dims);
    } catch (const Error& e) {
      errorAt(at, e.what());
    }
    DType dt = ty.dtype;
    std::vector<std::byte> bytes;
    std::vector<std::string> strings;
    int64_t count = 0;
    expect('[');
    while (!accept(']')) {
      if (count) expect(',');
      if (count >= numel)
        error(fmt::format("more than the {} elements of {}", numel, printType(ty)));
      element(dt, bytes, strings);
      ++count;
    }
    if (count != numel)
      errorAt(at,
              fmt::format("{} has {} elements, the data lists {}", printType(ty), numel, count));
    Tensor t(dt, dims);
    if (dt == DType::String) {
      for (int64_t i = 0; i < numel; ++i)
        t.strings()[i] = std::move(strings[static_cast<size_t>(i)]);
    } else if (!bytes.empty()) {
      std::memcpy(t.raw(), bytes.data(), bytes.size());
    }
    return t;
  }
  template <typename T> static void put(std::vector<std::byte>& out, T v) {
    size_t n = out.size();
    out.resize(n + sizeof(T));
    std::memcpy(out.data() + n, &v, sizeof(T));
  }
  template <typename T> void intElem(std::vector<std::byte>& out, int64_t lo, int64_t hi) {
    Pos at = pos();
    std::string w = word("an integer");
    if constexpr (std::is_same_v<T, uint64_t>) {
      put<T>(out, toInt<uint64_t>(w, at, "element"));
    } else {
      int64_t v = toInt<int64_t>(w, at, "element");
      if (v < lo || v > hi)
        errorAt(at, fmt::format("element {} is out of range [{}, {}]", v, lo, hi));
      put<T>(out, static_cast<T>(v));
    }
  }
  void element(DType dt, std::vector<std::byte>& out, std::vector<std::string>& strings) {
    Pos at = pos();
    switch (dt) {
    case DType::String:
      strings.push_back(str());
      return;
    case DType::Bool: {
      std::string w = word("true or false");
      if (w == "true" || w == "1")
        put<uint8_t>(out, 1);
      else if (w == "false" || w == "0")
        put<uint8_t>(out, 0);
      else
        errorAt(at, fmt::format("expected true or false, got '{}'", w));
      return;
    }
    case DType::I8:
      intElem<int8_t>(out, INT8_MIN, INT8_MAX);
      return;
    case DType::I16:
      intElem<int16_t>(out, INT16_MIN, INT16_MAX);
      return;
    case DType::I32:
      intElem<int32_t>(out, INT32_MIN, INT32_MAX);
      return;
    case DType::I64:
      intElem<int64_t>(out, INT64_MIN, INT64_MAX);
      return;
    case DType::I4:
      intElem<int8_t>(out, -8, 7);
      return;
    case DType::I2:
      intElem<int8_t>(out, -2, 1);
      return;
    case DType::U8:
      intElem<uint8_t>(out, 0, UINT8_MAX);
      return;
    case DType::U16:
      intElem<uint16_t>(out, 0, UINT16_MAX);
      return;
    case DType::U32:
      intElem<uint32_t>(out, 0, UINT32_MAX);
      return;
    case DType::U64:
      intElem<uint64_t>(out, 0, 0);
      return;
    case DType::U4:
      intElem<uint8_t>(out, 0, 15);
      return;
    case DType::U2:
      intElem<uint8_t>(out, 0, 3);
      return;
    case DType::F32:
      put<float>(out, toFloat<float>(word("a number"), at));
      return;
    case DType::F64:
      put<double>(out, toFloat<double>(word("a number"), at));
      return;
    case DType::C64:
    case DType::C128: {
      expect('(');
      Pos a1 = pos();
      std::string re = word("a number");
      expect(',');
      Pos a2 = pos();
      std::string im = word("a number");
      expect(')');
      if (dt == DType::C64) {
        put<float>(out, toFloat<float>(re, a1));
        put<float>(out, toFloat<float>(im, a2));
      } else {
        put<double>(out, toFloat<double>(re, a1));
        put<double>(out, toFloat<double>(im, a2));
      }
      return;
    }
    case DType::Undefined:
      break;
    default: { // reduced floats: a float value, or 0x bits
      std::string w = word("a number");
      uint32_t bits;
      uint32_t maxBits = dtypeSize(dt) == 2 ? 0xffffu : (dtypeBits(dt) == 4 ? 0xfu : 0xffu);
      if (w.size() > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X')) {
        bits = hexBits<uint32_t>(w, at);
        if (bits > maxBits) errorAt(at, fmt::format("bits '{}' do not fit {}", w, dtypeName(dt)));
      } else {
        bits = floatToReduced(dt, toFloat<float>(w, at), false);
      }
      if (dtypeSize(dt) == 2)
        put<uint16_t>(out, static_cast<uint16_t>(bits));
      else
        put<uint8_t>(out, static_cast<uint8_t>(bits));
      return;
    }
    }
    errorAt(at, "tensor of undefined element type");
  }
  // `undefined` or TYPE DATA.
  Tensor tensorLiteral() {
    if (acceptWord("undefined")) return Tensor();
    Pos at = pos();
    Type ty = type();
    return tensorData(ty, at);
  }

  // ---- Attributes -------------------------------------------------------------------------
  static bool isFloatWord(const std::string& w) {
    if (w.size() > 1 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X')) return false;
    return w.find_first_of(".eEn") != std::string::npos; // decimals, exponents, inf, nan
  }
  float floatAttr(Graph&) {
    Pos at = pos();
    std::string w = word("a number");
    if ((w == "nan" || w == "-nan") && accept('(')) {
      Pos bp = pos();
      std::string b = word("hex bits");
      expect(')');
      if (b.size() < 3 || b[0] != '0' || b[1] != 'x') errorAt(bp, "expected 0x bits");
      return std::bit_cast<float>(hexBits<uint32_t>(b, bp));
    }
    return toFloat<float>(w, at);
  }
  Attribute attrValue(Graph& g) {
    Pos at = pos();
    Depth d(*this, at);
    if (peek('"')) return {str()};
    if (peek('[')) return attrList(g);
    if (!peekWordChar()) error("expected an attribute value");
    if (peekWord("graph")) return {graph(&g)};
    if (acceptWord("tensor")) return {tensorLiteral()};
    if (acceptWord("type")) return {type()};
    for (const char* k : {"floats", "ints", "strings", "tensors", "graphs"}) {
      if (!acceptWord(k)) continue;
      expect('[');
      expect(']');
      std::string_view kind = k;
      if (kind == "floats") return {std::vector<float>{}};
      if (kind == "ints") return {std::vector<int64_t>{}};
      if (kind == "strings") return {std::vector<std::string>{}};
      if (kind == "tensors") return {std::vector<Tensor>{}};
      return {std::vector<GraphPtr>{}};
    }
    const char* save = p_;
    Pos sp{line_, col_};
    std::string w = word();
    if (isFloatWord(w)) {
      p_ = save;
      line_ = sp.line;
      col_ = sp.col;
      return {floatAttr(g)};
    }
    return {toInt<int64_t>(w, at, "attribute value")};
  }
  Attribute attrList(Graph& g) {
    expect('[');
    if (accept(']')) return {std::vector<int64_t>{}};
    if (peek('"')) {
      std::vector<std::string> v{str()};
      while (accept(',')) v.push_back(str());
      expect(']');
      return {std::move(v)};
    }
    if (peekWord("tensor")) {
      std::vector<Tensor> v;
      do {
        expectWord("tensor");
        v.push_back(tensorLiteral());
      } while (accept(','));
      expect(']');
      return {std::move(v)};
    }
    if (peekWord("graph")) {
      std::vector<GraphPtr> v;
      do v.push_back(graph(&g));
      while (accept(','));
      expect(']');
      return {std::move(v)};
    }
    // Numbers: floats when the first element is written as a float.
    const char* save = p_;
    Pos sp{line_, col_};
    std::string first = word("a list element");
    p_ = save;
    line_ = sp.line;
    col_ = sp.col;
    if (isFloatWord(first)) {
      std::vector<float> v{floatAttr(g)};
      while (accept(',')) v.push_back(floatAttr(g));
      expect(']');
      return {std::move(v)};
    }
    std::vector<int64_t> v{integer<int64_t>("an integer")};
    while (accept(',')) v.push_back(integer<int64_t>("an integer"));
    expect(']');
    return {std::move(v)};
  }

  // ---- Graphs -----------------------------------------------------------------------------
  Value* resolve(Graph& g) {
    Pos at = pos();
    std::string n = valueName();
    Value* v = g.lookup(n);
    if (!v) errorAt(at, fmt::format("undefined value {}", printValueName(n)));
    return v;
  }
  void checkNew(Graph& g, const std::string& n, Pos at) {
    if (g.lookupLocal(n)) errorAt(at, fmt::format("value {} is defined twice", printValueName(n)));
  }

  GraphPtr graph(Graph* parent) {
    Pos at = pos();
    Depth d(*this, at);
    expectWord("graph");
    auto g = std::make_shared<Graph>();
    g->parent = parent;
    expect('@');
    g->name = name("a graph name");
    expect('(');
    while (!accept(')')) {
      if (!g->inputs.empty()) expect(',');
      Pos vp = pos();
      std::string n = valueName();
      checkNew(*g, n, vp);
      expect(':');
      g->addInput(n, type());
    }
    expect('{');
    while (!acceptWord("return")) statement(*g);
    if (peek('%')) {
      g->outputs.push_back(resolve(*g));
      while (accept(',')) g->outputs.push_back(resolve(*g));
    }
    expect('}');
    return g;
  }

  void statement(Graph& g) {
    struct Out {
      std::string name; // empty: omitted
      Pos at;
    };
    std::vector<Out> outs;
    if (peek('%') || peekWord("_")) {
      do {
        Pos at = pos();
        if (acceptWord("_"))
          outs.push_back({"", at});
        else
          outs.push_back({valueName(), at});
      } while (accept(','));
      expect('=');
    }
    Pos opAt = pos();
    if (acceptWord("const")) {
      if (outs.size() != 1 || outs[0].name.empty())
        errorAt(opAt, "a constant defines exactly one named value");
      constant(g, outs[0].name, outs[0].at);
      return;
    }
    if (!peekWordChar()) error("expected a statement (a node, a constant or 'return')");
    std::string qual = word("an op name");
    std::string op = qual, domain;
    if (auto dot = qual.rfind('.'); dot != std::string::npos) {
      domain = qual.substr(0, dot);
      op = qual.substr(dot + 1);
    }
    if (op.empty() || !text::isBareSymbol(op)) errorAt(opAt, fmt::format("bad op name '{}'", qual));
    const OpDef* def = reg_.find(domain, op);
    if (!def && !opts_.allowUnregistered)
      errorAt(opAt, fmt::format("unknown op '{}' in domain '{}'", op, domainDisplay(domain)));
    std::vector<Value*> inputs;
    expect('(');
    while (!accept(')')) {
      if (!inputs.empty()) expect(',');
      if (acceptWord("_"))
        inputs.push_back(nullptr);
      else
        inputs.push_back(resolve(g));
    }
    std::map<std::string, Attribute> attrs;
    if (accept('{')) {
      while (!accept('}')) {
        if (!attrs.empty()) expect(',');
        Pos ap = pos();
        std::string an = name("an attribute name");
        if (attrs.count(an)) errorAt(ap, fmt::format("attribute '{}' given twice", an));
        expect('=');
        attrs[an] = attrValue(g);
      }
    }
    std::vector<Type> types;
    Pos typesAt = pos();
    if (accept(':')) {
      types.push_back(type());
      while (accept(',')) types.push_back(type());
    }
    std::string nodeName;
    if (acceptWord("loc")) {
      expect('(');
      nodeName = str();
      expect(')');
    }
    std::vector<std::string> names;
    std::set<std::string> seen;
    size_t present = 0;
    for (const Out& o : outs) {
      if (!o.name.empty()) {
        checkNew(g, o.name, o.at);
        if (!seen.insert(o.name).second)
          errorAt(o.at, fmt::format("value {} is defined twice", printValueName(o.name)));
        ++present;
      }
      names.push_back(o.name);
    }
    if (!types.empty() && types.size() != present)
      errorAt(typesAt, fmt::format("{} types for {} outputs", types.size(), present));
    Node* n = g.addNode(op, std::move(inputs), names, domain);
    n->def = def;
    n->name = std::move(nodeName);
    n->attrs = std::move(attrs);
    size_t k = 0;
    for (Value* o : n->outputs)
      if (o && k < types.size()) o->type = types[k++];
  }

  void constant(Graph& g, const std::string& n, Pos nameAt) {
    checkNew(g, n, nameAt);
    Pos at = pos();
    Type ty = type();
    Value* v;
    if (accept('<')) {
      expectWord("elided");
      expect('>');
      v = g.addValue(n, ty);
      v->constant = Tensor();
    } else {
      Tensor t = tensorData(ty, at);
      v = g.addValue(n, Type::tensor(t.dtype(), staticShape(t.shape())));
      v->constant = std::move(t);
    }
    g.constants.push_back(v);
  }

  const char* p_;
  const char* end_;
  int line_ = 1, col_ = 1;
  int depth_ = 0;
  const ParseOptions& opts_;
  const OpRegistry& reg_;
};

} // namespace

Model parseModel(std::string_view text, const ParseOptions& opts) {
  Parser p(text, opts);
  return p.model();
}

Type parseType(std::string_view text) {
  Parser p(text, {});
  return p.wholeType();
}

} // namespace aicc
