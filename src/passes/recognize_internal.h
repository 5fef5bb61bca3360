// Internal to the "recognize" pass (src/passes/recognize_*.cpp): the matching context and the
// small helpers every recognizer uses (constants, single-use intermediates, rewriting).
#pragma once

#include "ir/graph.h"

#include <map>
#include <optional>
#include <vector>

namespace aicc::recognize {

// The graph being rewritten plus its use counts (graph outputs count as uses), refreshed after
// every rewrite so that "single use" stays exact.
struct Ctx {
  Graph& g;
  std::map<const Value*, int64_t> uses;
  int64_t rewrites = 0;

  explicit Ctx(Graph& graph);
  void refresh();

  // The node producing `v` in this graph when it is the ai.onnx op `op` (nullptr otherwise).
  Node* producer(const Value* v, const char* op) const;
  // `v` is used exactly once (so not a graph output) and is a node output of this graph.
  bool singleUse(const Value* v) const;
  // The only node using `v` when `v` has a single use in this graph (nullptr otherwise).
  Node* soleUser(const Value* v) const;
  // Every node of this graph using `v` (one entry per input slot).
  std::vector<Node*> users(const Value* v) const;

  // Replaces `root`'s first output by `repl` (taking its type), erases `dead` (which must include
  // root) and refreshes use counts.
  void replace(Node* root, Value* repl, const std::vector<Node*>& dead);
  // Inserts an ai.onnx node before `before`, its single output named after `base`.
  Node* add(Node* before, const std::string& op, std::vector<Value*> inputs,
            const std::string& base);
  Value* addConst(const std::string& base, Tensor t);
};

// The tensor of a constant value: an initializer or the output of a Constant node with `value`.
const Tensor* constTensor(const Value* v);
// A one-element floating constant's value.
std::optional<double> scalarConst(const Value* v);
// `c` is a one-element constant equal to `want` (relative tolerance rtol, exact when 0) whose rank
// does not exceed the rank of `other` (so broadcasting with it keeps `other`'s shape) and whose
// element type is `other`'s.
bool isScalar(const Value* c, const Value* other, double want, double rtol = 0);
// A one-element constant of any numeric type equal to `want` (a Pow exponent), rank <= other's.
bool isExponent(const Value* c, const Value* other, double want);
// Like isScalar, returning the value (any) when the same conditions hold.
std::optional<double> scalarOf(const Value* c, const Value* other);

// Add, or Sum of exactly two inputs (the same broadcasting sum).
bool isAdd(const Node* n);
// The other input of a binary node when one input is `v` (nullptr when neither is).
Value* otherInput(const Node* n, const Value* v);
// f32 / f64 tensor (the recognizers only fire on these: the fused ops compute in double, which is
// within float rounding of the spelled-out f32/f64 forms).
bool isF32orF64(const Value* v);
std::optional<int64_t> rankOf(const Value* v);
// Two dims provably equal: the same static size or the same named symbol.
bool sameDim(const Dim& a, const Dim& b);

// Entry points of the families, each one sweep over `g`; they return the number of rewrites.
// Applies `fn` at every node (fn returns the replacement node, or nullptr when the pattern does not
// match there), continuing after each replacement; returns the number of matches.
int64_t sweep(Ctx& c, Node* (*fn)(Ctx&, Node*));

int64_t recognizeSoftmaxLegacy(Ctx& c);
int64_t recognizeLayerNorm(Ctx& c);
int64_t recognizeGelu(Ctx& c);
int64_t recognizeHardSigmoid(Ctx& c);
int64_t recognizeHardSwish(Ctx& c);
int64_t recognizeSwish(Ctx& c);
int64_t recognizeAttention(Ctx& c);

} // namespace aicc::recognize
