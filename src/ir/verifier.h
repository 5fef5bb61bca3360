// The IR verifier. Invariants of a well-formed graph (checked recursively into subgraphs):
//  1. Every value has a non-empty name, unique within its graph.
//  2. Every value is defined exactly once: as a graph input, a constant, or one node output;
//     Value::producer / Value::owner agree with where it is defined, the graph owns it
//     (Graph::values()), and only constants carry a tensor.
//  3. Nodes are in topological order: every node input is defined before the node (earlier
//     node, graph input, constant, or a value of an enclosing graph visible at that point).
//  4. Every node has a registered op definition (Node::def matches domain and op), an input
//     count and output count within the op's bounds, and attributes that the op declares,
//     with the declared kinds; required attributes are present.
//  5. Constants hold a tensor whose dtype and shape equal the value's type (or are elided:
//     dtype/shape only, when the IR was parsed from text with elided data).
//  6. Graph outputs are values visible in the graph.
//  7. Subgraphs (graph attributes) are non-null and have `parent` set to the graph holding the
//     node; Node::owner is the graph holding the node.
//  8. Types are consistent: a tensor type with a shape has static dims >= 0 without a symbol and
//     unknown dims of value -1; sequence/optional types have an element type; only tensor
//     types carry a dtype or shape. (Checked for values and type attributes.)
//  9. Names resolve: every reference to a value (node input, graph output), looked up by name
//     from the innermost scope outwards, finds that value (no shadowing by an inner value of
//     the same name), so the text form (ir/printer.h) is faithful.
#pragma once

#include "ir/graph.h"

namespace aicc {

class OpRegistry;

struct VerifyOptions {
  const OpRegistry* registry = nullptr; // nullptr: OpRegistry::instance()
  bool allowUnregistered = false;       // nodes with def == nullptr skip invariant 4
};

// Throws aicc::Error naming the first violated invariant (by number), the graph and the node.
void verifyGraph(const Graph& g, const VerifyOptions& opts = {});
void verifyModel(const Model& m, const VerifyOptions& opts = {});

} // namespace aicc
