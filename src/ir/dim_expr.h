// Dimension expressions: the dims shape inference derives from symbolic ones (a stride-2
// convolution's `(H+1)/2`, a Concat's `S+T`, a Flatten's `C*H*W`), in one normal form so that
// equal expressions print, compare and hash alike (a Dim holds the printed form; issue #12).
//
// Normal form: a constant plus a sum of coefficient * term; a term is a product of atoms (sorted
// by their text); an atom is an input symbol or floor(e / d) for a constant d >= 2 and a normal
// form e whose coefficients and constant are all in [0, d): floor((q d + r) / d) = q + floor(r / d)
// is taken out first (`(2*H+3)/2` is `H+1`), and floor((floor(x / a) + c) / d) is floor((x + a c) /
// (a d)) (two stride-2 layers: `(H+3)/4`). Division rounds down (dims are never negative);
// ceil(e / d) is floor((e + d - 1) / d).
//
// Text (also the IR's, docs/ir.md): `+ - *`, `/` by an integer constant, parentheses, symbols bare
// or quoted as in shapes: `N*H+2*W-1`, `(H+1)/2`, `3*(W/2)`.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace aicc {

// The constructors of another algebra a dim expression can be rebuilt in (DimExpr::fold): the loop
// IR's integer expressions, for instance. floorDiv's value is never negative.
template <typename T> struct DimAlgebra {
  std::function<T(int64_t)> constant;
  std::function<T(const std::string&)> symbol;
  std::function<T(const T&, const T&)> add, mul;
  std::function<T(const T&, int64_t)> floorDiv;
};

class DimExpr {
public:
  static DimExpr constant(int64_t c);
  static DimExpr symbol(const std::string& name);
  // Parses the text form; nullopt (and *error set) when it is not one.
  static std::optional<DimExpr> parse(const std::string& text, std::string* error = nullptr);

  DimExpr operator+(const DimExpr& o) const;
  DimExpr operator-(const DimExpr& o) const;
  DimExpr operator*(const DimExpr& o) const;
  DimExpr floorDiv(int64_t d) const; // d >= 1
  DimExpr ceilDiv(int64_t d) const;  // d >= 1
  // e / o when o divides every term of e exactly (a constant, or one term: `N*128*768 / (128*12)`).
  std::optional<DimExpr> exactDiv(const DimExpr& o) const;

  std::optional<int64_t> constantValue() const;    // when it has no symbols
  // Whether it never decreases when a symbol grows: every term but the constant has a positive
  // coefficient (division numerators are so by the normal form). Memory planned at the symbols'
  // upper bounds holds every smaller run only for such dims.
  bool nondecreasing() const;
  std::optional<std::string> singleSymbol() const; // when it is one symbol, coefficient 1
  // The value with the symbols given (nullopt when one is missing or a division overflows).
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t>& symbols) const;
  // The input symbols it reads.
  void symbols(std::vector<std::string>& out) const;
  std::string str() const;
  bool operator==(const DimExpr& o) const { return str() == o.str(); }
  // The expression rebuilt bottom-up through f (sums of coefficient * product of atoms).
  template <typename T> T fold(const DimAlgebra<T>& f) const {
    std::optional<T> sum;
    for (const auto& [t, c] : terms_) {
      T v = f.constant(c);
      for (const std::string& k : t) {
        const Atom& a = atoms_.at(k);
        const T x = a.num ? f.floorDiv(a.num->fold(f), a.den) : f.symbol(a.sym);
        v = c == 1 && &k == &t.front() ? x : f.mul(v, x);
      }
      sum = sum ? f.add(*sum, v) : v;
    }
    return sum ? *sum : f.constant(0);
  }

private:
  struct Atom {
    std::string sym;                    // an input symbol, or
    std::shared_ptr<const DimExpr> num; // floor(*num / den)
    int64_t den = 0;
  };
  // term (sorted atom keys) -> coefficient (never 0); the empty term is the constant.
  std::map<std::vector<std::string>, int64_t> terms_;
  std::map<std::string, Atom> atoms_; // key -> atom, for every key a term uses
  void addTerm(const std::vector<std::string>& t, int64_t coef);
  void mergeAtoms(const DimExpr& o);
  static std::string atomKey(const Atom& a);
};

} // namespace aicc
