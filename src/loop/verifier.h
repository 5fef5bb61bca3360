// The loop IR verifier. Every pass must leave IR that satisfies these invariants; the pass
// manager checks them after each pass (verify-each). Messages start with "[Ln]" naming the
// invariant, then the function and the statement or expression at fault.
//
//  L1  Names: function names are unique and non-empty; buffer parameters of a function have
//      unique, non-empty names.
//  L2  Buffers: element type is a numeric type or bool (not string/complex/undefined); the shape
//      is static (every dim >= 0); the layout is not one of the role words.
//  L3  Scoping: every variable is bound by an enclosing `for` or an earlier `let` of an enclosing
//      block, and its use has the type of its binding; names are not rebound while in scope
//      (no shadowing) and never equal a buffer name.
//  L4  Loops: the variable is i64; the bounds are i64 expressions over enclosing variables;
//      vectorize(W) has 1 <= W <= 64 and unroll(U) has 1 <= U <= 1024; serial/parallel loops
//      have factor 1.
//  L5  Buffers used: loads, stores and buffer call arguments name a parameter of the function.
//  L6  Indices (loads, stores, call offsets) are i64 expressions.
//  L7  Stores write only `out` and `temp` buffers; the stored value has the buffer's element
//      type.
//  L8  Expression typing: arithmetic (+ - * / % min max neg) on numeric operands of one type;
//      `%` on integers; comparisons on one type, giving bool; && || ! on bool; select has a
//      bool condition and arms of one type; math calls name a known function with its arity,
//      float arguments of one type; loads have their buffer's element type; `if` conditions
//      are bool; immediates have a type their value fits (bool 0/1; float types for floats).
//  L9  Static bounds: where range analysis bounds an index (loop ranges, narrowed by `if`
//      conditions of the form %v < e), it lies within [0, numel) of the buffer.
//  L10 Division and remainder by the constant 0 are invalid.
//  L11 Calls: the callee name is non-empty; value arguments are integers or floats.
#pragma once

#include "loop/ir.h"

#include <string>
#include <vector>

namespace aicc::loop {

// Every violation, one message each ("[L3] @f: ..."); empty when the module is valid.
std::vector<std::string> verifyMessages(const Module& m);
std::vector<std::string> verifyMessages(const Func& f);
// Throws aicc::Error listing the violations (at most 10) when there are any.
void verify(const Module& m);

} // namespace aicc::loop
