#include "ir/dim_expr.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace aicc {

namespace {

[[noreturn]] void overflow() { throw std::overflow_error("dimension expression overflows int64"); }
int64_t add64(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}
int64_t mul64(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}
int64_t floorDiv64(int64_t a, int64_t d) { return a / d - ((a % d != 0) && ((a < 0) != (d < 0))); }

// Symbol characters, as the IR's bare symbols (ir/printer.h isBareSymbol): letters, digits, '_'
// and '.', not starting with a digit or '.'.
bool symbolChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}
bool bareSymbol(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.') return false;
  return std::all_of(s.begin(), s.end(), symbolChar);
}
std::string quoted(const std::string& s) {
  if (bareSymbol(s)) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

} // namespace

void DimExpr::addTerm(const std::vector<std::string>& t, int64_t coef) {
  if (coef == 0) return;
  auto [it, fresh] = terms_.emplace(t, coef);
  if (!fresh && (it->second = add64(it->second, coef)) == 0) terms_.erase(it);
}

void DimExpr::mergeAtoms(const DimExpr& o) { atoms_.insert(o.atoms_.begin(), o.atoms_.end()); }

std::string DimExpr::atomKey(const Atom& a) {
  if (!a.num) return quoted(a.sym);
  const std::string n = a.num->str();
  const bool plain = a.num->singleSymbol().has_value();
  return (plain ? n : "(" + n + ")") + "/" + std::to_string(a.den);
}

DimExpr DimExpr::constant(int64_t c) {
  DimExpr e;
  e.addTerm({}, c);
  return e;
}

DimExpr DimExpr::symbol(const std::string& name) {
  DimExpr e;
  Atom a{name, nullptr, 0};
  const std::string k = atomKey(a);
  e.atoms_[k] = a;
  e.addTerm({k}, 1);
  return e;
}

DimExpr DimExpr::operator+(const DimExpr& o) const {
  DimExpr r = *this;
  for (const auto& [t, c] : o.terms_) r.addTerm(t, c);
  r.mergeAtoms(o);
  return r;
}

DimExpr DimExpr::operator-(const DimExpr& o) const { return *this + o * constant(-1); }

DimExpr DimExpr::operator*(const DimExpr& o) const {
  DimExpr r;
  for (const auto& [t1, c1] : terms_)
    for (const auto& [t2, c2] : o.terms_) {
      std::vector<std::string> t = t1;
      t.insert(t.end(), t2.begin(), t2.end());
      std::sort(t.begin(), t.end());
      r.addTerm(t, mul64(c1, c2));
    }
  r.mergeAtoms(*this);
  r.mergeAtoms(o);
  return r;
}

DimExpr DimExpr::floorDiv(int64_t d) const {
  if (d <= 0) throw std::invalid_argument("dimension division by a non-positive constant");
  if (d == 1) return *this;
  DimExpr q, rem; // *this = d * q + rem, rem's coefficients in [0, d)
  for (const auto& [t, c] : terms_) {
    const int64_t qc = floorDiv64(c, d);
    q.addTerm(t, qc);
    rem.addTerm(t, c - qc * d);
  }
  q.mergeAtoms(*this);
  rem.mergeAtoms(*this);
  if (rem.constantValue()) return q; // floor(r / d) = 0 for a constant r in [0, d)
  // floor((floor(x / a) + c) / d) = floor((x + a c) / (a d)) for integers: stride chains stay one
  // division ((H+3)/4, not ((H+1)/2+1)/2).
  if (rem.terms_.size() <= 2) {
    const std::vector<std::string>* atomTerm = nullptr;
    int64_t c = 0;
    for (const auto& [t, coef] : rem.terms_)
      if (t.empty())
        c = coef;
      else if (t.size() == 1 && coef == 1 && rem.atoms_.at(t[0]).num)
        atomTerm = &t;
    if (atomTerm && int64_t(rem.terms_.size()) == 1 + (c != 0)) {
      const Atom& in = rem.atoms_.at((*atomTerm)[0]);
      return q + (*in.num + constant(mul64(c, in.den))).floorDiv(mul64(in.den, d));
    }
  }
  Atom a{"", std::make_shared<const DimExpr>(rem), d};
  const std::string k = atomKey(a);
  q.atoms_[k] = a;
  q.addTerm({k}, 1);
  return q;
}

DimExpr DimExpr::ceilDiv(int64_t d) const { return (*this + constant(d - 1)).floorDiv(d); }

std::optional<DimExpr> DimExpr::exactDiv(const DimExpr& o) const {
  if (o.terms_.size() != 1) return std::nullopt;
  const auto& [ot, oc] = *o.terms_.begin();
  DimExpr r;
  for (const auto& [t, c] : terms_) {
    if (c % oc != 0) return std::nullopt;
    std::vector<std::string> rest = t; // t without o's atoms (a multiset difference)
    for (const std::string& a : ot) {
      auto it = std::find(rest.begin(), rest.end(), a);
      if (it == rest.end()) return std::nullopt;
      rest.erase(it);
    }
    r.addTerm(rest, c / oc);
  }
  r.mergeAtoms(*this);
  return r;
}

std::optional<int64_t> DimExpr::constantValue() const {
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_.begin()->first.empty()) return terms_.begin()->second;
  return std::nullopt;
}

std::optional<std::string> DimExpr::singleSymbol() const {
  if (terms_.size() != 1 || terms_.begin()->second != 1 || terms_.begin()->first.size() != 1)
    return std::nullopt;
  const Atom& a = atoms_.at(terms_.begin()->first[0]);
  return a.num ? std::nullopt : std::optional<std::string>(a.sym);
}

bool DimExpr::nondecreasing() const {
  for (const auto& [t, c] : terms_) {
    if (!t.empty() && c < 0) return false;
    for (const std::string& k : t)
      if (const Atom& a = atoms_.at(k); a.num && !a.num->nondecreasing()) return false;
  }
  return true;
}

std::optional<int64_t> DimExpr::evaluate(const std::map<std::string, int64_t>& symbols) const {
  try {
    int64_t sum = 0;
    for (const auto& [t, c] : terms_) {
      int64_t v = c;
      for (const std::string& k : t) {
        const Atom& a = atoms_.at(k);
        int64_t x;
        if (!a.num) {
          auto it = symbols.find(a.sym);
          if (it == symbols.end()) return std::nullopt;
          x = it->second;
        } else {
          auto n = a.num->evaluate(symbols);
          if (!n) return std::nullopt;
          x = floorDiv64(*n, a.den);
        }
        v = mul64(v, x);
      }
      sum = add64(sum, v);
    }
    return sum;
  } catch (const std::overflow_error&) {
    return std::nullopt;
  }
}

void DimExpr::symbols(std::vector<std::string>& out) const {
  for (const auto& [_, a] : atoms_) {
    if (a.num)
      a.num->symbols(out);
    else if (std::find(out.begin(), out.end(), a.sym) == out.end())
      out.push_back(a.sym);
  }
}

std::string DimExpr::str() const {
  std::string s;
  int64_t constant = 0;
  for (const auto& [t, c] : terms_) {
    if (t.empty()) {
      constant = c;
      continue;
    }
    // A division atom inside a product is parenthesized: 3*(W/2), (H/2)*W.
    const bool product = t.size() > 1 || (c != 1 && c != -1);
    std::string term;
    for (const std::string& k : t) {
      if (!term.empty()) term += "*";
      term += product && atoms_.at(k).num ? "(" + k + ")" : k;
    }
    if (c < 0)
      s += "-";
    else if (!s.empty())
      s += "+";
    if (c != 1 && c != -1) s += std::to_string(c < 0 ? -c : c) + "*";
    s += term;
  }
  if (constant != 0 || s.empty())
    s += (constant < 0 ? "-"
          : s.empty()  ? ""
                       : "+") +
         std::to_string(constant < 0 ? -constant : constant);
  return s;
}

// ---- Parsing: expr := ['-'] term (('+' | '-') term)*; term := factor (('*' | '/' INT) factor)*;
// factor := INT | symbol | '"' quoted '"' | '(' expr ')'.
namespace {

struct ExprParser {
  const std::string& s;
  size_t i = 0;
  std::string error;
  int depth = 0; // parentheses open (bounded: no stack exhaustion on hostile text)

  void skip() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool accept(char c) {
    skip();
    if (i < s.size() && s[i] == c) return ++i, true;
    return false;
  }
  std::optional<int64_t> integer() {
    skip();
    size_t j = i;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j == i || j - i > 18) return std::nullopt;
    int64_t v = std::stoll(s.substr(i, j - i));
    i = j;
    return v;
  }
  std::optional<DimExpr> factor() {
    skip();
    if (i >= s.size()) return error = "unexpected end", std::nullopt;
    if (accept('(')) {
      if (++depth > 64) return error = "parentheses nested deeper than 64", std::nullopt;
      auto e = expr();
      --depth;
      if (!e || !accept(')')) return error = error.empty() ? "expected ')'" : error, std::nullopt;
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      auto v = integer();
      if (!v) return error = "bad integer", std::nullopt;
      return DimExpr::constant(*v);
    }
    if (s[i] == '"') {
      std::string name;
      for (++i; i < s.size() && s[i] != '"'; ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        name += s[i];
      }
      if (i >= s.size()) return error = "unterminated quoted symbol", std::nullopt;
      ++i;
      return DimExpr::symbol(name);
    }
    size_t j = i;
    while (j < s.size() && symbolChar(s[j])) ++j;
    if (j == i || std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')
      return error = std::string("unexpected '") + s[i] + "'", std::nullopt;
    std::string name = s.substr(i, j - i);
    i = j;
    return DimExpr::symbol(name);
  }
  std::optional<DimExpr> term() {
    auto e = factor();
    while (e) {
      if (accept('*')) {
        auto f = factor();
        if (!f) return std::nullopt;
        e = *e * *f;
      } else if (accept('/')) {
        auto d = integer();
        if (!d || *d <= 0) return error = "'/' takes a positive integer", std::nullopt;
        e = e->floorDiv(*d);
      } else {
        break;
      }
    }
    return e;
  }
  std::optional<DimExpr> expr() {
    const bool neg = accept('-');
    auto e = term();
    if (!e) return std::nullopt;
    if (neg) e = DimExpr::constant(0) - *e;
    while (true) {
      if (accept('+')) {
        auto t = term();
        if (!t) return std::nullopt;
        e = *e + *t;
      } else if (accept('-')) {
        auto t = term();
        if (!t) return std::nullopt;
        e = *e - *t;
      } else {
        return e;
      }
    }
  }
};

} // namespace

std::optional<DimExpr> DimExpr::parse(const std::string& text, std::string* error) {
  ExprParser p{text, 0, {}, 0};
  std::optional<DimExpr> e;
  try {
    e = p.expr();
  } catch (const std::exception& x) {
    p.error = x.what();
    e.reset();
  }
  p.skip();
  if (e && p.i != text.size()) p.error = "unexpected '" + text.substr(p.i, 1) + "'", e.reset();
  if (!e && error) *error = p.error;
  return e;
}

} // namespace aicc
