// Fuses chains of elementwise/injective ops into single aicc.Fused nodes that carry the chain
// as a subgraph (reduction-aware: a chain may end in one reduction such as Softmax).
//
// A group is a maximal tree/DAG of fusible nodes whose results all have the same provable shape
// (every dim static or symbolic; inputs read from outside may broadcast) and whose intermediates
// are used only inside the group: never a graph output, never read by a subgraph or a node outside
// the group. Only the group's last node (its root) has results used outside.
// Fusible: ops with OpDef::props & kElementwise, plus Identity (the only injective op that keeps
// every element in place; reshapes and transposes end a group), with one output, no subgraph
// attribute and not kNondeterministic; never an aicc.Fused node.
// Groups grow from the root upwards (nodes are visited last to first), so every group is convex
// (no path leaves it and comes back). A group needs at least two nodes (kind = "elementwise").
// Reduction-aware: a Softmax, LogSoftmax, LayerNormalization, RMSNormalization or Reduce* node
// whose data input (input 0) is produced by a fusible node and used by nothing else takes that
// producer's group as its prologue: kind = "reduction", body = the chain + the reduction.
// Small constants are copied into bodies, larger ones passed as inputs (see passes/fuse_group.h).
// Runs in the main graph and in control-flow subgraphs.
#pragma once

#include "ir/graph.h"

namespace aicc {

// Returns whether the model changed.
bool fuseElementwise(Model& m);

} // namespace aicc
