// unroll-sequences: a sequence whose elements are known at compile time is a list of tensor
// values: built by SequenceEmpty, SequenceConstruct, SequenceInsert / SequenceErase at constant
// positions (or none: the end), SplitToSequence with a 1-D split (sizes given at run time too)
// or of a static size along its axis (one Split, made when a reader needs it; a Squeeze per
// chunk without keepdims), Identity. Its readers at constant positions become tensor
// ops on the list: SequenceAt the element itself, SequenceLength a constant, ConcatFromSequence a
// Concat (of Unsqueezes with new_axis). The sequence nodes then die (DCE) and what remains
// compiles (the backend addresses tensors, not sequences). A sequence a graph output, a subgraph,
// SequenceMap, a Loop or a run-time position reads stays as it is. Runs in every graph scope,
// each on its own sequences.
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether some reader was replaced.
bool unrollSequences(Model& m);

} // namespace aicc
