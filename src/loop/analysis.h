// Integer range analysis over the loop IR: the interval an i64 expression can take, given the
// ranges of the variables in scope (loop variables get [lo, hi-1] from their bounds). Used by
// the verifier (static bounds checks) and the simplifier (provably in-range div/mod/min/max,
// comparisons decided by ranges).
#pragma once

#include "loop/ir.h"

#include <optional>

namespace aicc::loop {

struct Interval {
  std::optional<int64_t> lo, hi; // inclusive; nullopt = unbounded

  static Interval exact(int64_t v) { return {v, v}; }
  static Interval unknown() { return {}; }
  bool known() const { return lo && hi; }
  bool nonNegative() const { return lo && *lo >= 0; }
  bool operator==(const Interval&) const = default;
};

// Variable ranges in scope. A scope is pushed per loop and popped when leaving it.
class RangeScope {
public:
  void push(const std::string& v, Interval r) { vars_.push_back({v, r}); }
  void pop() { vars_.pop_back(); }
  size_t size() const { return vars_.size(); }
  void resize(size_t n) { vars_.resize(n); }
  Interval lookup(const std::string& v) const;
  // Narrows an existing variable's range (e.g. inside `if %i < 10`); pushes a shadow entry.
  void narrow(const std::string& v, Interval r);

private:
  std::vector<std::pair<std::string, Interval>> vars_;
};

// The interval of an integer expression (unknown for non-integer types).
Interval rangeOf(const ExprPtr& e, const RangeScope& s);
// The interval of loop variable values for `for v in lo..hi` (hi exclusive).
Interval loopRange(const Stmt& forLoop, const RangeScope& s);
// Pushes the ranges implied by `cond` being true (simple forms: %v < e, %v <= e, %v >= e,
// %v > e, e > %v, ..., and conjunctions) onto s. Returns whether every part of the condition
// was used (false: the condition constrains more than the ranges now say).
bool assume(const ExprPtr& cond, RangeScope& s);

} // namespace aicc::loop
