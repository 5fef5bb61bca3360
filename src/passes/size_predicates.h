// Size predicates (issue #12). Exporters guard shape-dependent code with Ifs on the input sizes:
// silero-vad-v5 squeezes its frames axis "if it is 1", its LSTM state "if the batch is 1", and
// starts a fresh state "if the state is empty" — conditions computed by Shape, Gather, Equal, Not
// and Cast from the sizes alone. With those sizes symbolic the If stays, its branches' results
// differ in rank, and nothing after it has a shape the backend can plan.
//
// Over the symbols' ranges such a condition either has one value (the batch is never 0 in 1..16)
// or changes at a few sizes (the frames axis is 1 for 192..351 samples). Each is evaluated at
// every size of its symbol's range (the sizes the model cannot take, where the computation
// fails, left out):
//   - fold-size-predicates: a condition with one value over the ranges becomes that constant,
//     so inline-if takes its branch and shape inference goes on past it;
//   - the first condition that changes gives the sizes where it does (its split): the
//     compiler compiles each piece of the range on its own (a size class: `aicc compile` writes
//     them as variants the runtime picks by the inputs' sizes, docs/runtime.md "Variants"),
//     where the condition is a constant again.
#pragma once

#include "ir/graph.h"

#include <optional>

namespace aicc {

// A symbol's range as the compile takes it: lo..hi, multiples of step (the graph's dims may
// read name/step, passes/dim_steps.h).
struct SizeRange {
  std::string name;
  int64_t lo = 1, hi = 1, step = 1;
};

// A condition that changes over its symbol's range: the If's name, the symbol and the pieces
// [lo, hi] of its range over which the condition is one constant (in order, covering it).
struct SizeSplit {
  std::string node, symbol;
  std::vector<std::pair<int64_t, int64_t>> pieces;
};

// The "fold-size-predicates" pass (every graph, subgraphs included): returns whether some If's
// condition became a constant. `split`, when given, gets the first condition that changes over
// the ranges (from the same evaluation), or nothing.
bool foldSizePredicates(Model& m, const std::vector<SizeRange>& ranges,
                        std::optional<SizeSplit>* split = nullptr);

} // namespace aicc
