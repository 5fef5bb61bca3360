// Shared machinery of the fusion passes (fuse-epilogue, fuse-elementwise): turning a group of nodes
// of one graph into a single aicc.Fused node whose `body` subgraph holds copies of them.
//
// Body layout (see ops/fused.cpp for the op):
//   - body inputs are the distinct values the group reads from outside (graph inputs, other nodes'
//     results, outer-scope values and large constants such as weights), in first-use order; the
//     Fused node takes the same values as its inputs, in the same order;
//   - small constants (at most kMaxBodyConstantElems elements: scalars, Clip bounds, short
//     per-channel vectors) are copied into the body as body constants, so the body is
//     self-contained and prints in full; larger constants stay outside and are passed as inputs;
//   - body values keep the names of the values they copy (unique within the body);
//   - the Fused node's outputs are the very values the group produced for outside users, so names,
//     types and uses outside the group are unchanged.
#pragma once

#include "ir/graph.h"

#include <map>
#include <string>
#include <vector>

namespace aicc {

inline constexpr int64_t kMaxBodyConstantElems = 16;

// Graphs where fusion applies: g and, recursively, the subgraphs of its nodes, except the bodies of
// aicc.Fused nodes (already fused). Parents come before their subgraphs.
std::vector<Graph*> fusionScopes(Graph& g);

bool hasSubgraphs(const Node& n);
bool isFusedNode(const Node& n);

// A tensor shape that is fully known (every dim static or symbolic), so that equality of two shapes
// proves that the tensors have the same shape at run time.
bool isProvableShape(const Type& t);
bool sameProvableShape(const Type& a, const Type& b);

// Proves that values have the same shape, also when dims are unknown ('?'): Relu(x) has x's shape
// whatever x is. Results are cached: call clear() after the graph changed.
class ShapeOracle {
public:
  // For an elementwise node (OpDef::props & kElementwise, or Identity) with one output: an input
  // whose shape the output provably has (every other input is no larger: rank <= and each dim 1 or
  // provably equal, or the whole input provably has the same shape), else nullptr.
  const Value* source(const Node& n);
  // The value at the top of the chain of sources above v (v itself if it has none).
  const Value* canon(const Value* v);
  // Do a and b provably have the same shape? Both shapes are fully known and equal, or both
  // follow from the same value (or from values whose shapes are fully known and equal).
  bool same(const Value* a, const Value* b);
  void clear() { canon_.clear(); }

private:
  std::map<const Value*, const Value*> canon_;
};

// Replaces `group` (nodes of g, in any order; at least one) by one aicc.Fused node of kind `kind`,
// placed where the group's last node was. Only outputs of that last node may be used outside the
// group (else nothing changes and nullptr is returned). `counts` (from useCounts(g)) is updated
// for the values the group read.
Node* fuseGroup(Graph& g, std::vector<Node*> group, const std::string& kind,
                std::map<const Value*, int64_t>& counts);

} // namespace aicc
