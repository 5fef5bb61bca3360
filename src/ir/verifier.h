// The IR verifier. Invariants of a well-formed graph (checked recursively into subgraphs):
//  1. Every value has a non-empty name, unique within its graph.
//  2. Every value is defined exactly once: as a graph input, a constant, or one node output;
//     Value::producer / Value::owner agree with where it is defined.
//  3. Nodes are in topological order: every node input is defined before the node (earlier
//     node, graph input, constant, or a value of an enclosing graph visible at that point).
//  4. Every node has a registered op definition (Node::def matches domain and op), an input
//     count and output count within the op's bounds, and attributes that the op declares,
//     with the declared kinds; required attributes are present.
//  5. Constants hold a tensor whose dtype and shape equal the value's type (or are elided:
//     dtype/shape only, when the IR was parsed from text with elided data).
//  6. Graph outputs are values visible in the graph.
//  7. Subgraphs (graph attributes) have `parent` set to the graph holding the node.
//  8. Types are consistent: a tensor type with a shape has non-negative static dims.
#pragma once

#include "ir/graph.h"

namespace aicc {

// Throws aicc::Error naming the first violated invariant (by number), the graph and the node.
void verifyGraph(const Graph& g);
void verifyModel(const Model& m);

} // namespace aicc
