// The reference interpreter: runs a graph node by node with each op's reference kernel. It defines
// the meaning of every op; constant folding and every backend are checked against it.
#pragma once

#include "ops/op_def.h"

#include <functional>

namespace aicc {

struct RunOptions {
  // After each node, check that every output agrees with its inferred static type (element type
  // and static dims). Catches shape-inference bugs; on in tests and `aicc test-onnx`.
  bool checkTypes = false;
};

// Checks `inputs` against the graph's declared input types (element type, rank, static dims),
// naming the input on mismatch. A dim name repeated across inputs is a hint, not a constraint:
// exporters write the same name ("?", "unk__0") for unrelated dims, and ONNX Runtime runs such
// inputs; a real mismatch fails in the node that needs the sizes equal.
void checkGraphInputs(const Graph& g, const std::vector<RValue>& inputs);

// Runs `g` with inputs bound by position to g.inputs; returns values in g.outputs order.
std::vector<RValue> interpret(const Graph& g, const std::vector<RValue>& inputs, const RunOptions& opts = {});

// Runs a subgraph (an If/Loop/Scan body) whose nodes may read values of the enclosing graphs
// when those are held by another engine (the JIT's fallback): `outer` returns them, or null.
using OuterLookup = std::function<const RValue*(const Value*)>;
std::vector<RValue> interpretSubgraph(const Graph& g, const std::vector<RValue>& inputs,
                                      const OuterLookup& outer, const RunOptions& opts = {});

// Runs one node's reference kernel outside the interpreter (the engines' fallback): inputs come
// from `fetch` (null for an omitted input), subgraphs run in the interpreter with `fetch` as
// their enclosing scope. Errors name the node.
std::vector<RValue> runReferenceKernel(const Node& n, const OuterLookup& fetch);

} // namespace aicc
