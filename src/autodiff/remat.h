// Rematerialization for training graphs: forward values that the backward part reads are normally
// kept alive from the forward pass until their last backward reader, which is what makes training
// memory-hungry. When such a value comes from a cheap op (elementwise or injective: Relu, Add,
// Reshape, Transpose, ...), rematerialize() recomputes it in the backward part, just before its
// first backward reader, and redirects the backward readers to the copy. The forward value is then
// freed after its last forward reader.
//
// A value is recomputed only from values the backward part keeps anyway (graph inputs, constants,
// graph outputs, other saved forward values) or from a chain of at most kMaxChain cheap ops leading
// to such values, so the set of forward values that stay alive across the forward/backward boundary
// only shrinks: remat never keeps a new forward value alive. Random ops (kNondeterministic) and
// ops with subgraphs are never recomputed.
#pragma once

#include "ir/graph.h"

#include <set>

namespace aicc {

struct RematStats {
  int64_t recomputedValues = 0; // forward values whose backward readers now read a recomputed copy
  int64_t addedNodes = 0;       // nodes added to the backward part
  int64_t savedValuesBefore = 0, savedValuesAfter = 0; // forward values read by the backward part
  int64_t savedBytesBefore = 0, savedBytesAfter = 0;   // their total size (static shapes only): the
                                                       // activation memory kept for the backward
  int64_t peakBytesBefore = 0, peakBytesAfter = 0;     // passes/memory_schedule.h peakMemoryBytes
};

// `forward` holds the nodes of m's main graph that belong to the forward part; every other node is
// backward. Runs shape inference and dead-code elimination afterwards.
RematStats rematerialize(Model& m, const std::set<const Node*>& forward);

} // namespace aicc
