// Internal to the "simplify" pass (algebraic_simplify.cpp): the pattern type, the pattern
// families (simplify_patterns_*.cpp) and the small matching/rewriting helpers they share.
//
// A pattern is a plain function `bool(Graph&, Node&)`: it looks at one node (the root) and, when
// it proves the rewrite harmless, rewires the graph and returns true. Patterns never erase nodes:
// they leave the replaced nodes dead, and the driver erases the nodes its rewrites made dead.
// A pattern must not fire on a node whose results are unused (it would report a change that
// changes nothing): helpers such as replaceValue refuse such rewrites.
#pragma once

#include "ir/graph.h"
#include "ir/rewrite.h" // numUses, usesOf

#include <optional>
#include <vector>

namespace aicc::simplify {

using PatternFn = bool (*)(Graph&, Node&);

struct Pattern {
  const char* name;
  PatternFn fn;
};

struct PatternFamily {
  const char* name;
  std::vector<Pattern> patterns;
};

// Families, in the order the driver applies them.
PatternFamily identityOpPatterns(); // Identity, Dropout, Cast, Reshape, Transpose, ... no-ops
PatternFamily arithmeticPatterns(); // x*1, 1*x, x+0, 0+x, x-0, x/1
PatternFamily shapeChainPatterns(); // transpose pairs, reshape chains, squeeze/unsqueeze pairs
PatternFamily castChainPatterns();  // exact cast chains
PatternFamily sinkingPatterns();    // transposes/reshapes sunk through elementwise ops

// ---- Matching helpers -------------------------------------------------------------------------

// The data of a constant (not elided) or of a Constant node's `value`, else nullptr.
const Tensor* constData(const Value* v);
// All elements of a numeric constant equal `x` (and there is at least one element).
bool allEqual(const Tensor& t, double x);
// Integer contents of a small constant (rank <= 1), else nullopt.
std::optional<std::vector<int64_t>> constInts(const Value* v);
// The node producing `v` when it is a node of `g` with op `op` (domain ""), else nullptr.
Node* producerOf(const Graph& g, const Value* v, const char* op);

// Tensor type helpers. A shape is "known" when its rank is known and every dim is static or
// symbolic (two equal known shapes describe equal sizes).
DType dtypeOf(const Value* v);
std::optional<Shape> knownShape(const Value* v);
std::optional<Dims> staticDims(const Value* v);
std::optional<int64_t> rankOf(const Value* v);
bool sameKnownShape(const Value* a, const Value* b);

// Perm of a Transpose (its attribute, or reversed dims when the rank is known).
std::optional<std::vector<int64_t>> transposePerm(const Node& n);
bool isIdentityPerm(const std::vector<int64_t>& p);

// ---- Rewriting helpers ------------------------------------------------------------------------

// Replaces the uses of `from` by `to` (ir/rewrite.h replaceAllUses). Refuses (returns false) when
// `from` is unused, or when `from` is a graph output of g and `to` cannot take its name (it is
// not a plain node output of g), which would need a new Identity node. A graph output keeps its
// type.
bool replaceValue(Graph& g, Value* from, Value* to);
// A new constant of g named after `base`.
Value* addConstant(Graph& g, Tensor t, const std::string& base);
// Runs the op's inference rule on one node (sets its outputs' types).
void inferNodeTypes(Node& n);
// A name hint for new nodes/values derived from `n`.
std::string hintFor(const Node& n);

} // namespace aicc::simplify
