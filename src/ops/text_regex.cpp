// RegexFullMatch. The spec's patterns use RE2 syntax, and RE2 matches in linear time without
// backtracking, so a pattern can never blow up on a long string. std::regex backtracks
// recursively (it overflows the stack on strings of some ten thousand characters), hence this
// small matcher: RE2 syntax is parsed into a tree, compiled into a Thompson NFA and simulated over
// the string's code points, one set of states per position.
//
// Supported: literals and escapes (\n \t \r \f \v \a \0 \xHH \x{H..}, escaped punctuation),
// '.', classes [...] (ranges, negation, \d \w \s and their negations, [:alpha:]-style POSIX
// classes), \d \D \w \W \s \S (ASCII, as in RE2), anchors ^ $ \A \z \b \B, groups ( ), (?: ),
// named groups, flags i, s, m, U as (?i) or (?i:...), alternation, * + ? {n} {n,} {n,m} and
// their lazy forms (the same for a full match). Unicode classes (\pL) and \Q..\E are rejected with
// an error, as are lookaround and backreferences (which RE2 rejects too).
#include "ops/text.h"

#include <algorithm>

namespace aicc {
namespace {

constexpr char32_t kMaxCp = 0x10FFFF;

struct CharSet {
  std::vector<std::pair<char32_t, char32_t>> ranges;
  bool negate = false, icase = false;

  void add(char32_t lo, char32_t hi) { ranges.emplace_back(lo, hi); }
  bool contains(char32_t c) const {
    for (auto [lo, hi] : ranges)
      if (c >= lo && c <= hi) return true;
    return false;
  }
  bool matches(char32_t c) const {
    bool in = contains(c) || (icase && (contains(toLowerCp(c)) || contains(toUpperCp(c))));
    return in != negate;
  }
};

// The ranges of `s` complemented over all code points (for \D, \W, \S, [:^alpha:] in a class).
std::vector<std::pair<char32_t, char32_t>>
complement(std::vector<std::pair<char32_t, char32_t>> r) {
  std::sort(r.begin(), r.end());
  std::vector<std::pair<char32_t, char32_t>> out;
  char32_t next = 0;
  for (auto [lo, hi] : r) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = std::max<char32_t>(next, hi + 1);
  }
  if (next <= kMaxCp) out.emplace_back(next, kMaxCp);
  return out;
}

enum class Assert { Begin, End, BeginLine, EndLine, WordBoundary, NotWordBoundary };

struct ReNode {
  enum class Kind { Empty, Set, Concat, Alt, Repeat, Assert } kind = Kind::Empty;
  CharSet set;
  std::vector<ReNode> kids;
  int min = 0, max = -1; // Repeat; max -1 = unbounded
  Assert assertion = Assert::Begin;
};

class Parser {
public:
  Parser(std::u32string p, std::string text) : p_(std::move(p)), text_(std::move(text)) {}

  ReNode parse() {
    ReNode n = parseAlt();
    if (pos_ < p_.size()) error("unmatched ')'");
    return n;
  }

private:
  struct Flags {
    bool icase = false, dotNl = false, multiLine = false;
  };

  [[noreturn]] void error(const std::string& why) const {
    fail("pattern '{}': {} (at offset {})", text_, why, pos_);
  }
  bool more() const { return pos_ < p_.size(); }
  char32_t peek() const { return more() ? p_[pos_] : 0; }
  bool eat(char32_t c) {
    if (peek() != c || !more()) return false;
    ++pos_;
    return true;
  }

  ReNode parseAlt() {
    ReNode alt;
    alt.kind = ReNode::Kind::Alt;
    alt.kids.push_back(parseConcat());
    while (eat('|')) alt.kids.push_back(parseConcat());
    return alt.kids.size() == 1 ? std::move(alt.kids[0]) : alt;
  }

  ReNode parseConcat() {
    ReNode cat;
    cat.kind = ReNode::Kind::Concat;
    while (more() && peek() != '|' && peek() != ')') cat.kids.push_back(parseRepeat());
    return cat;
  }

  // {n}, {n,}, {n,m} at pos_; false (pos_ unchanged) when it is not one (then '{' is literal).
  bool parseBraces(int& lo, int& hi) {
    size_t save = pos_;
    auto number = [&](int& v) {
      size_t start = pos_;
      v = 0;
      while (more() && peek() >= '0' && peek() <= '9') {
        v = std::min(v * 10 + static_cast<int>(p_[pos_] - '0'), 100000);
        ++pos_;
      }
      return pos_ > start;
    };
    ++pos_; // '{'
    bool ok = number(lo);
    hi = lo;
    if (ok && eat(',')) {
      hi = -1;
      if (peek() != '}') ok = number(hi);
    }
    ok = ok && eat('}');
    if (!ok) pos_ = save;
    return ok;
  }

  ReNode parseRepeat() {
    ReNode atom = parseAtom();
    bool repeated = false;
    while (more()) {
      int lo, hi;
      char32_t c = peek();
      if (c == '*')
        lo = 0, hi = -1, ++pos_;
      else if (c == '+')
        lo = 1, hi = -1, ++pos_;
      else if (c == '?')
        lo = 0, hi = 1, ++pos_;
      else if (c == '{' && parseBraces(lo, hi)) {
        if (lo > 1000 || hi > 1000) error("repetition count above 1000");
        if (hi >= 0 && hi < lo) error("bad repetition range");
      } else
        break;
      if (repeated) error("bad repetition operator");
      repeated = true;
      eat('?'); // lazy: the same set of full matches
      ReNode r;
      r.kind = ReNode::Kind::Repeat;
      r.min = lo;
      r.max = hi;
      r.kids.push_back(std::move(atom));
      atom = std::move(r);
    }
    return atom;
  }

  ReNode setNode(CharSet s) {
    ReNode n;
    n.kind = ReNode::Kind::Set;
    s.icase = s.icase || flags_.icase;
    n.set = std::move(s);
    return n;
  }
  ReNode literal(char32_t c) {
    CharSet s;
    s.add(c, c);
    return setNode(s);
  }
  ReNode assertNode(Assert a) {
    ReNode n;
    n.kind = ReNode::Kind::Assert;
    n.assertion = a;
    return n;
  }

  // Reads flags like "i", "is", "-s" up to ':' or ')'.
  void parseFlags(Flags& f) {
    bool on = true;
    while (more() && peek() != ':' && peek() != ')') {
      char32_t c = p_[pos_++];
      if (c == '-')
        on = false;
      else if (c == 'i')
        f.icase = on;
      else if (c == 's')
        f.dotNl = on;
      else if (c == 'm')
        f.multiLine = on;
      else if (c == 'U')
        continue; // ungreedy: the same set of full matches
      else
        error("bad group");
    }
    if (!more()) error("missing ')'");
  }

  ReNode parseGroup() { // after '('
    if (++depth_ > 1000) error("groups nested more than 1000 deep");
    Flags saved = flags_;
    if (eat('?')) {
      if (eat(':')) {
      } else if (peek() == 'P' || peek() == '<') {
        if (peek() == 'P') ++pos_;
        if (!eat('<')) error("bad named group");
        while (more() && peek() != '>') ++pos_;
        if (!eat('>')) error("bad named group");
      } else if (peek() == '=' || peek() == '!') {
        error("lookahead is not RE2 syntax");
      } else {
        Flags f = flags_;
        parseFlags(f);
        if (eat(')')) { // (?i): applies to the rest of the enclosing group
          flags_ = f;
          --depth_;
          return ReNode{};
        }
        eat(':');
        flags_ = f;
      }
    }
    ReNode inner = parseAlt();
    if (!eat(')')) error("missing ')'");
    flags_ = saved;
    --depth_;
    return inner;
  }

  static void addPerlClass(CharSet& s, char32_t k) {
    switch (k) {
    case 'd':
      s.add('0', '9');
      break;
    case 's':
      s.add('\t', '\n');
      s.add('\f', '\r');
      s.add(' ', ' ');
      break;
    case 'w':
      s.add('0', '9');
      s.add('A', 'Z');
      s.add('a', 'z');
      s.add('_', '_');
      break;
    }
  }

  enum class Esc { Char, Class, Assert };

  // An escape after '\': a character (ch), a class (set) or, outside classes, an assertion (a).
  Esc parseEscape(CharSet& set, char32_t& ch, Assert& a, bool inClass) {
    if (!more()) error("trailing '\\'");
    char32_t c = p_[pos_++];
    switch (c) {
    case 'd':
    case 's':
    case 'w':
      addPerlClass(set, c);
      return Esc::Class;
    case 'D':
    case 'S':
    case 'W': {
      CharSet pos;
      addPerlClass(pos, c - 'A' + 'a');
      set.ranges = complement(pos.ranges);
      return Esc::Class;
    }
    case 'n':
      ch = '\n';
      return Esc::Char;
    case 't':
      ch = '\t';
      return Esc::Char;
    case 'r':
      ch = '\r';
      return Esc::Char;
    case 'f':
      ch = '\f';
      return Esc::Char;
    case 'v':
      ch = '\v';
      return Esc::Char;
    case 'a':
      ch = '\a';
      return Esc::Char;
    case '0':
      ch = 0;
      return Esc::Char;
    case 'x': {
      auto hex = [&](char32_t h) -> int {
        if (h >= '0' && h <= '9') return static_cast<int>(h - '0');
        if (h >= 'a' && h <= 'f') return static_cast<int>(h - 'a' + 10);
        if (h >= 'A' && h <= 'F') return static_cast<int>(h - 'A' + 10);
        return -1;
      };
      ch = 0;
      if (eat('{')) {
        int digits = 0;
        while (more() && hex(peek()) >= 0) {
          ch = ch * 16 + static_cast<char32_t>(hex(p_[pos_++]));
          if (++digits > 6 || ch > kMaxCp) error("bad \\x{...} escape");
        }
        if (!digits || !eat('}')) error("bad \\x{...} escape");
        return Esc::Char;
      }
      for (int k = 0; k < 2; ++k) {
        if (!more() || hex(peek()) < 0) error("bad \\x escape");
        ch = ch * 16 + static_cast<char32_t>(hex(p_[pos_++]));
      }
      return Esc::Char;
    }
    case 'p':
    case 'P':
      error("Unicode classes (\\p, \\P) are not supported");
    case 'Q':
      error("\\Q...\\E is not supported");
    default:
      break;
    }
    if (c >= '1' && c <= '9') error("backreferences are not RE2 syntax");
    if (!inClass && (c == 'b' || c == 'B' || c == 'A' || c == 'z')) {
      a = c == 'b'   ? Assert::WordBoundary
          : c == 'B' ? Assert::NotWordBoundary
          : c == 'A' ? Assert::Begin
                     : Assert::End;
      return Esc::Assert;
    }
    if (c < 0x80 && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) error("invalid escape");
    ch = c; // escaped punctuation (or any non-ASCII character) stands for itself
    return Esc::Char;
  }

  bool posixClass(CharSet& s) { // at "[:"
    static const std::pair<const char*, std::vector<std::pair<char32_t, char32_t>>> kClasses[] = {
        {"alnum", {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}}},
        {"alpha", {{'A', 'Z'}, {'a', 'z'}}},
        {"ascii", {{0, 0x7F}}},
        {"blank", {{'\t', '\t'}, {' ', ' '}}},
        {"cntrl", {{0, 0x1F}, {0x7F, 0x7F}}},
        {"digit", {{'0', '9'}}},
        {"graph", {{'!', '~'}}},
        {"lower", {{'a', 'z'}}},
        {"print", {{' ', '~'}}},
        {"punct", {{'!', '/'}, {':', '@'}, {'[', '`'}, {'{', '~'}}},
        {"space", {{'\t', '\r'}, {' ', ' '}}},
        {"upper", {{'A', 'Z'}}},
        {"word", {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}, {'_', '_'}}},
        {"xdigit", {{'0', '9'}, {'A', 'F'}, {'a', 'f'}}},
    };
    size_t end = p_.find(U":]", pos_ + 2);
    if (end == std::u32string::npos) return false;
    std::u32string name = p_.substr(pos_ + 2, end - pos_ - 2);
    bool neg = !name.empty() && name[0] == '^';
    if (neg) name = name.substr(1);
    for (const auto& [n, r] : kClasses) {
      if (std::u32string(n, n + std::char_traits<char>::length(n)) != name) continue;
      for (auto x : neg ? complement(r) : r) s.ranges.push_back(x);
      pos_ = end + 2;
      return true;
    }
    error("unknown POSIX class");
  }

  ReNode parseClass() { // after '['
    CharSet s;
    s.negate = eat('^');
    bool first = true;
    while (true) {
      if (!more()) error("missing ']'");
      char32_t c = peek();
      if (c == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      if (c == '[' && pos_ + 1 < p_.size() && p_[pos_ + 1] == ':' && posixClass(s)) continue;
      char32_t lo;
      ++pos_;
      if (c == '\\') {
        CharSet cls;
        Assert unused;
        if (parseEscape(cls, lo, unused, true) == Esc::Class) {
          s.ranges.insert(s.ranges.end(), cls.ranges.begin(), cls.ranges.end());
          continue;
        }
      } else {
        lo = c;
      }
      char32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        char32_t h = p_[pos_++];
        if (h == '\\') {
          CharSet cls;
          Assert unused;
          if (parseEscape(cls, h, unused, true) == Esc::Class) error("bad character class range");
        }
        hi = h;
        if (hi < lo) error("bad character class range");
      }
      s.add(lo, hi);
    }
    return setNode(s);
  }

  ReNode parseAtom() {
    char32_t c = p_[pos_++];
    switch (c) {
    case '(':
      return parseGroup();
    case '[':
      return parseClass();
    case '^':
      return assertNode(flags_.multiLine ? Assert::BeginLine : Assert::Begin);
    case '$':
      return assertNode(flags_.multiLine ? Assert::EndLine : Assert::End);
    case '*':
    case '+':
    case '?':
      error("missing argument to repetition operator");
    case '.': {
      CharSet s; // everything, or everything but '\n'
      s.add('\n', '\n');
      s.negate = true;
      if (flags_.dotNl) s.ranges.clear();
      return setNode(s);
    }
    case '\\': {
      CharSet s;
      char32_t ch = 0;
      Assert a = Assert::Begin;
      switch (parseEscape(s, ch, a, false)) {
      case Esc::Class:
        return setNode(s);
      case Esc::Assert:
        return assertNode(a);
      case Esc::Char:
        break;
      }
      return literal(ch);
    }
    default:
      return literal(c);
    }
  }

  std::u32string p_;
  std::string text_;
  size_t pos_ = 0;
  int depth_ = 0;
  Flags flags_;
};

// ---- Compilation to a Thompson NFA and simulation ----------------------------------------------

struct Inst {
  enum class Op { Set, Split, Jmp, Assert, Match } op;
  int x = 0, y = 0; // Set: index into sets; Split: both targets; Jmp: x
  Assert a = Assert::Begin;
};

class Program {
public:
  Program(const ReNode& root, const std::string& text) : text_(text) {
    emit(root);
    prog_.push_back({Inst::Op::Match});
  }

  bool fullMatch(const std::u32string& t) const {
    return longestMatchAt(t, 0) == static_cast<int64_t>(t.size());
  }

  // The end of the longest match of t starting at `start`, or -1.
  int64_t longestMatchAt(const std::u32string& t, size_t start) const {
    std::vector<int> cur, next, stack;
    std::vector<size_t> mark(prog_.size(), SIZE_MAX);
    auto add = [&](std::vector<int>& list, int pc0, size_t pos) {
      stack.assign(1, pc0);
      while (!stack.empty()) {
        int pc = stack.back();
        stack.pop_back();
        if (mark[static_cast<size_t>(pc)] == pos) continue;
        mark[static_cast<size_t>(pc)] = pos;
        const Inst& in = prog_[static_cast<size_t>(pc)];
        if (in.op == Inst::Op::Jmp) {
          stack.push_back(in.x);
        } else if (in.op == Inst::Op::Split) {
          stack.push_back(in.y);
          stack.push_back(in.x);
        } else if (in.op == Inst::Op::Assert) {
          if (holds(in.a, t, pos)) stack.push_back(pc + 1);
        } else {
          list.push_back(pc);
        }
      }
    };
    auto matched = [&](const std::vector<int>& list) {
      for (int pc : list)
        if (prog_[static_cast<size_t>(pc)].op == Inst::Op::Match) return true;
      return false;
    };
    add(cur, 0, start);
    int64_t last = matched(cur) ? static_cast<int64_t>(start) : -1;
    for (size_t i = start; i < t.size() && !cur.empty(); ++i) {
      next.clear();
      for (int pc : cur) {
        const Inst& in = prog_[static_cast<size_t>(pc)];
        if (in.op == Inst::Op::Set && sets_[static_cast<size_t>(in.x)].matches(t[i]))
          add(next, pc + 1, i + 1);
      }
      std::swap(cur, next);
      if (matched(cur)) last = static_cast<int64_t>(i + 1);
    }
    return last;
  }

private:
  static bool isWord(char32_t c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  static bool holds(Assert a, const std::u32string& t, size_t pos) {
    switch (a) {
    case Assert::Begin:
      return pos == 0;
    case Assert::End:
      return pos == t.size();
    case Assert::BeginLine:
      return pos == 0 || t[pos - 1] == '\n';
    case Assert::EndLine:
      return pos == t.size() || t[pos] == '\n';
    default: {
      bool before = pos > 0 && isWord(t[pos - 1]), after = pos < t.size() && isWord(t[pos]);
      return (before != after) == (a == Assert::WordBoundary);
    }
    }
  }

  int here() const { return static_cast<int>(prog_.size()); }
  int push(Inst in) {
    if (prog_.size() > 100000)
      fail("pattern '{}' is too large once repetitions are expanded", text_);
    prog_.push_back(in);
    return here() - 1;
  }

  void emit(const ReNode& n) {
    switch (n.kind) {
    case ReNode::Kind::Empty:
      break;
    case ReNode::Kind::Set:
      sets_.push_back(n.set);
      push({Inst::Op::Set, static_cast<int>(sets_.size()) - 1});
      break;
    case ReNode::Kind::Assert:
      push({Inst::Op::Assert, 0, 0, n.assertion});
      break;
    case ReNode::Kind::Concat:
      for (const auto& k : n.kids) emit(k);
      break;
    case ReNode::Kind::Alt: {
      std::vector<int> jumps;
      for (size_t i = 0; i < n.kids.size(); ++i) {
        int split = i + 1 < n.kids.size() ? push({Inst::Op::Split}) : -1;
        if (split >= 0) prog_[static_cast<size_t>(split)].x = here();
        emit(n.kids[i]);
        if (split >= 0) {
          jumps.push_back(push({Inst::Op::Jmp}));
          prog_[static_cast<size_t>(split)].y = here();
        }
      }
      for (int j : jumps) prog_[static_cast<size_t>(j)].x = here();
      break;
    }
    case ReNode::Kind::Repeat: {
      for (int i = 0; i < n.min; ++i) emit(n.kids[0]);
      if (n.max < 0) { // L: split(body, end); body; jmp L
        int split = push({Inst::Op::Split});
        prog_[static_cast<size_t>(split)].x = here();
        emit(n.kids[0]);
        push({Inst::Op::Jmp, split});
        prog_[static_cast<size_t>(split)].y = here();
      } else {
        std::vector<int> splits;
        for (int i = n.min; i < n.max; ++i) {
          splits.push_back(push({Inst::Op::Split}));
          prog_[static_cast<size_t>(splits.back())].x = here();
          emit(n.kids[0]);
        }
        for (int s : splits) prog_[static_cast<size_t>(s)].y = here();
      }
      break;
    }
    }
  }

  std::string text_;
  std::vector<Inst> prog_;
  std::vector<CharSet> sets_;
};

Program compilePattern(const std::string& pattern) {
  return Program(Parser(toCodePoints(pattern), pattern).parse(), pattern);
}

} // namespace

std::u32string toCodePoints(const std::string& s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) out += decodeUtf8(s, i);
  return out;
}

struct CompiledRegex::Impl {
  Program program;
};

CompiledRegex::CompiledRegex(const std::string& pattern)
    : impl_(std::make_shared<const Impl>(Impl{compilePattern(pattern)})) {}

bool CompiledRegex::fullMatch(const std::u32string& s) const { return impl_->program.fullMatch(s); }

std::optional<std::pair<size_t, size_t>> CompiledRegex::find(const std::u32string& s,
                                                             size_t from) const {
  for (size_t at = from; at <= s.size(); ++at) {
    const int64_t end = impl_->program.longestMatchAt(s, at);
    if (end >= 0) return std::pair{at, static_cast<size_t>(end) - at};
  }
  return std::nullopt;
}

namespace {

std::vector<RValue> regexFullMatchKernel(KernelCtx& c) {
  requireDType(c, 0, {DType::String});
  const Tensor& x = c.in(0);
  const Attribute* p = c.node.attr("pattern");
  AICC_CHECK(p, "attribute 'pattern' is required");
  const Program re = compilePattern(std::get<std::string>(p->v));
  Tensor y(DType::Bool, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i)
    y.data<bool>()[i] = re.fullMatch(toCodePoints(x.strings()[i]));
  return {RValue::of(y)};
}

void inferRegexFullMatch(InferCtx& c) {
  DType t = c.inDType(0);
  AICC_CHECK(t == DType::Undefined || t == DType::String, "input must be a string tensor, got {}",
             dtypeName(t));
  const Attribute* p = c.node.attr("pattern");
  AICC_CHECK(p, "attribute 'pattern' is required");
  compilePattern(std::get<std::string>(p->v)); // reports a bad pattern early
  c.setTensor(0, DType::Bool, c.inShape(0));
}

} // namespace

void registerTextRegexOps(OpRegistry& r) {
  r.op("RegexFullMatch")
      .since(20)
      .inputs(1, 1)
      .props(kElementwise)
      .attr("pattern", Attribute::Kind::String)
      .infer(inferRegexFullMatch)
      .kernel(regexFullMatchKernel);
}

} // namespace aicc
