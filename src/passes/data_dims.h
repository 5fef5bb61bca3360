// Data-dependent dims (issue #12). A result dim that shape inference leaves unknown because the
// run's values decide it (NonZero's count, TopK's k read at run time, Compress, Unique, a Slice
// of run-time starts) gets a symbol of its own, "nonzero.0", when its op knows an upper bound
// for it (OpDef::dataDim: NonZero's count is at most its input's elements). Shapes are then
// re-inferred, so the nodes after it carry the symbol ([nonzero.0, 2] after a Transpose) instead
// of '?': the backend plans them at the bound and lowers them with the run's value, which the
// task producing it writes into the shape block (rt::Symbol::data) — where before every node
// after a data-dependent size ran on the reference kernels with values of run-time size.
// A dim that a chain of elementwise consumers ends in a declared static size is fixed at that
// size instead (the producer's lowering checks it at run time), in the main graph and in Loop /
// Scan / If bodies (where no symbol is named: the shape block is the main graph's). A data symbol
// that meets one other dim in a broadcast wherever it meets one is that dim (ONNX Runtime runs
// the broadcast only where they are equal): GPT-2's causal-mask buffer sliced by the length S
// meets the scores' S; the producer then checks its count against it at run time.
#pragma once

#include "ir/graph.h"

#include <optional>

namespace aicc {

// The "name-data-dims" pass: returns whether some dim got a symbol or was fixed.
bool nameDataDims(Model& m);

// For a graph compiled apart (a SequenceMap or Loop body: its input symbols are no user's
// declaration, an element's or an iteration's sizes): every symbol of m's values that meets one
// other dim in broadcasts becomes that dim, as nameDataDims does for the data symbols it names
// (an item of length N added to a tensor of 10: N is 10, checked when the body runs). Returns
// whether some changed.
bool mergeSymbolsMetInBroadcasts(Model& m);

// When dim `dim` of result `out` of n is a data symbol n produces (a plain symbol none of its
// inputs has, of an op with OpDef::dataDim), its bound; else nullopt.
std::optional<Dim> producedDataDim(const Node& n, size_t out, size_t dim);

} // namespace aicc
