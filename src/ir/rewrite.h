// Graph IR rewriting utilities shared by the passes: uses of a value, replacing uses (keeping
// graph output names stable), inserting and erasing nodes.
#pragma once

#include "ir/graph.h"

#include <functional>
#include <map>
#include <vector>

namespace aicc {

struct Use {
  Node* node;   // a node of the graph or of one of its subgraphs (outer-scope use)
  size_t index; // input index
};

// Every use of `v` as a node input in `g` and, recursively, in g's subgraphs.
std::vector<Use> usesOf(const Graph& g, const Value* v);
// Use counts for all values at once (same scope rule), plus graph outputs counted as uses.
std::map<const Value*, int64_t> useCounts(const Graph& g);
bool isGraphOutput(const Graph& g, const Value* v);
// Uses of `v` in g (and its subgraphs) plus its occurrences among g's outputs.
int64_t numUses(const Graph& g, const Value* v);

// Replaces every use of `from` by `to` in g (and its subgraphs). When `from` is an output of g,
// the output keeps its name: `to` takes over the name if it is a plain node output of g, else an
// Identity node named like the output is inserted. `from` is left unused (DCE removes it).
void replaceAllUses(Graph& g, Value* from, Value* to);

// Creates a node of the registered op (domain, op) with fresh outputs named after `baseName`,
// inserted just before `before` (at the end when nullptr). Node::def is set from the registry.
Node* insertNode(Graph& g, Node* before, const std::string& op, std::vector<Value*> inputs, int numOutputs,
                 const std::string& baseName, const std::string& domain = "");

// Erases nodes (their outputs must be unused by then) and drops values nothing refers to.
void eraseNodes(Graph& g, const std::vector<Node*>& nodes);

// Index of `n` in g.nodes; throws if absent.
size_t nodeIndex(const Graph& g, const Node* n);

// Calls f on g and every nested subgraph (depth first).
void forEachGraph(Graph& g, const std::function<void(Graph&)>& f);

// A value name free in g's scope chain and not defined in any of g's nested subgraphs (so a
// reference to it from inside a subgraph is never shadowed).
std::string freshName(Graph& g, const std::string& base);

// Whether every use of `from` in g's subgraphs would still resolve to `to` by name (no value of
// a subgraph between the use and to->owner has to's name). replaceAllUses is only faithful then.
bool canRedirectUses(const Graph& g, const Value* from, const Value* to);

// Replaces node output `v` of g by a new constant holding `t` (its uses redirected; `v`'s
// producer is left for DCE). The constant takes v's name unless v is a graph output of g.
Value* replaceByConstant(Graph& g, Value* v, Tensor t);

} // namespace aicc
