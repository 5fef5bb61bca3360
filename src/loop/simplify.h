// The index-arithmetic simplifier: a set of named rewrite patterns applied bottom-up to a fixed
// point. It reports truthfully whether it changed anything and counts pattern hits.
//
// Expression patterns (rule names as counted in SimplifyStats):
//   fold          constant folding of every operator on immediates (ints wrap; f32 rounds to
//                 float; division by 0 and out-of-range float->int casts are left alone)
//   identity      x+0, x-0, x*1, x/1, x%1 -> 0, x*0 -> 0 (ints), x-x -> 0 (ints), min(x,x),
//                 max(x,x), --x, !!x, cast to the same type, select(c, a, a)
//   select        select(true, a, b) -> a, select(false, a, b) -> b
//   logic         true && x -> x, false && x -> false, and the || duals
//   linear        i64 + - * and negation are put in canonical linear form: terms ordered by
//                 first appearance, like terms merged, constants reassociated into one trailing
//                 constant, (a+b)*c distributed: ((i*4 + j)*8 + k) + 1 -> i*32 + j*8 + k + 1
//   div-mod       x / c and x % c (c > 0, x >= 0): with x = c*q + r where r provably lies in
//                 [k*c, (k+1)*c), x / c -> q + k and x % c -> r - k*c (this recovers i and j
//                 from i*N + j over nested loops); (x / a) / b -> x / (a*b)
//   min-max       min/max decided by ranges: min(a, b) -> a when a <= b always
//   compare       integer comparisons decided by the range of a - b
// Statement patterns: `if` on a constant condition keeps one branch; loops with no iteration
// are removed and loops with one iteration are replaced by their body; `let` of an immediate, a
// variable or an i64 index expression (only + - * of variables and immediates) is substituted.
#pragma once

#include "loop/analysis.h"
#include "loop/ir.h"

#include <map>
#include <string>

namespace aicc::loop {

struct SimplifyStats {
  std::map<std::string, int64_t> hits; // rule name -> applications
  int64_t total() const;
};

// Simplifies one expression to a fixed point, using the variable ranges in `s`.
ExprPtr simplifyExpr(const ExprPtr& e, const RangeScope& s = {}, SimplifyStats* stats = nullptr);
// Simplifies every expression and statement of f; returns whether anything changed.
bool simplifyFunc(Func& f, SimplifyStats* stats = nullptr);
bool simplifyModule(Module& m, SimplifyStats* stats = nullptr);

// Evaluates a math function (mathFunctions()) on doubles; f32 callers round the result.
double applyMath(const std::string& fn, double a, double b = 0);

} // namespace aicc::loop
