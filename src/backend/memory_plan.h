// Static memory planning: every intermediate tensor of a graph gets an offset in ONE arena, and
// every weight an offset in a read-only blob. See docs/backend.md ("Memory plan").
//
// Model (main graph, in its current node order; node i = the i-th node):
//   - Graph inputs are external: the caller's buffers, never copied into the arena. Constants
//     (weights, also those of subgraphs) go to the read-only weight blob, each aligned.
//   - Every node result lives in the arena. Its lifetime is [producer, last reader], readers
//     being nodes that take it as an input or hold a subgraph (If/Loop/Scan body, aicc.Fused
//     body) that reads it from the outer scope. Results nobody reads die at their producer.
//   - Graph outputs are arena tensors that stay live until the end of the run: nothing else is
//     placed over them once they are produced, so after a run the runtime hands out pointers
//     into the arena (valid until the next run) or copies them out. A graph output that is a
//     graph input or a constant (or a view of one) is copied by the runtime.
//   - Views: Reshape/Squeeze/Unsqueeze/Flatten/Identity results alias their data input (same
//     bytes, no copy); the node becomes a no-op. A view of a graph input or weight points there.
//   - In place: an elementwise node (kElementwise op, or an aicc.Fused body made only of them)
//     with one output writes it over an input whose storage (all views of it included) dies at
//     that node, has the output's dtype and byte size, lives in the arena and holds no graph
//     output. The input and the output then share one buffer.
//   - Concat in place: a Concat along an axis whose outer dims are all 1 (its inputs are
//     contiguous byte ranges of its result) places its inputs inside its result (slices at their
//     aligned byte offsets), and a Concat whose inputs are a prefix of such a Concat's inputs
//     (DenseNet's growing concatenations) is a prefix of it; those Concat nodes then copy
//     nothing (`producesInPlace`). Only inputs that are arena node results (not views, not other
//     Concats' results, no graph outputs), each in one such Concat.
//   - A buffer (a root tensor with its views, in-place successors and slices) is live from its
//     first member's producer to the last reader of any member; two buffers live at the same
//     node never overlap. The lower bound is the largest sum of (aligned) buffer sizes live at
//     one node.
//   - Subgraph intermediates are not planned: nodes with bodies run them through the
//     interpreter until the backend lowers them (aicc.Fused groups become one loop nest).
// Every planned value needs a static size: planMemory fails naming the first value without one.
#pragma once

#include "ir/graph.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace aicc {

constexpr int64_t kArenaAlignment = 64;

// Dynamic: a node result without a static size (a data-dependent shape, a sequence, an optional,
// strings): not in the arena but in dynamic slot `offset` of the executor (rt/artifact.h), where
// the fallback task that computes it puts it. Heap: a tensor sized at run time
// (MemoryPlanOptions::runSized): growable buffer `offset` of the executor (rt::HeapBuffer).
enum class MemStorage { Arena, Input, Weight, Dynamic, Heap };
// How a value got its storage: its own buffer, a view of its data input, written in place over
// an input, or a slice of a Concat's result (`within` bytes into it).
enum class MemHow { Own, View, InPlace, Slice };

struct PlannedValue {
  const Value* value = nullptr;
  MemStorage storage = MemStorage::Arena;
  MemHow how = MemHow::Own;
  const Value* aliasOf = nullptr; // View / InPlace: the input whose storage it takes; Slice: the
                                  // Concat result it lies in
  int64_t within = 0;             // Slice: byte offset inside aliasOf
  int64_t bytes = 0;              // numel * element size (unaligned; bf16: 2)
  bool bf16 = false;              // an f32 value stored as bf16 (MemoryPlanOptions::bf16Values)
  int64_t offset = 0;             // in the arena or the weight blob, or the dynamic slot; 0 for
                                  // graph inputs
  int buffer = -1;                // index into MemoryPlan::buffers (arena values)
  size_t def = 0, lastUse = 0;    // node indices (inclusive); node results only
};

// One arena region: the root tensor plus its views and in-place successors.
struct PlannedBuffer {
  int64_t offset = 0;
  int64_t bytes = 0;         // the root's size (views and in-place members: the same)
  int64_t alignedBytes = 0;  // rounded up to the alignment
  size_t start = 0, end = 0; // live during nodes [start, end]
  bool holdsOutput = false;
  std::vector<const Value*> members; // definition order
};

struct WeightSlot {
  const Value* value = nullptr;
  int64_t offset = 0;
  int64_t bytes = 0;
};

struct MemoryPlanOptions {
  int64_t alignment = kArenaAlignment; // a power of two
  enum class Fit { Auto, BestFitBySize, FirstFitBySize, BestFitByBreadth, FirstFitByOrder };
  // Auto tries every placement and keeps the smallest arena.
  Fit fit = Fit::Auto;
  bool views = true;
  bool inPlace = true;
  bool concatInPlace = true;
  // Symbolic sizes (the graph's types at the plan's bounds): whether a value's size is the same
  // in every run. A Concat goes in place only when its inputs but the last are (their offsets in
  // the result are the run's then; at the bounds' offsets, a smaller run read the later inputs
  // where they were not: YOLOv8's anchor strides, zeros past the first level). Null: all are.
  std::function<bool(const Value*)> fixedSize;
  // Tensors whose size the run decides with no bound the plan knows (data symbols sized at run
  // time: a ConstantOfShape of a run-time shape): a growable buffer each (MemStorage::Heap), a
  // view of one (a Reshape) the same buffer. Null: none.
  std::function<bool(const Value*)> runSized;
  // f32 node results stored as bf16 (2 bytes an element; runtime/artifact_build.cpp decides).
  const std::set<const Value*>* bf16Values = nullptr;
};

struct MemoryPlan {
  size_t numNodes = 0;
  int64_t alignment = kArenaAlignment;
  std::vector<PlannedValue> values; // graph inputs, then node results in definition order
  std::map<const Value*, size_t> index;
  std::vector<PlannedBuffer> buffers;
  std::vector<WeightSlot> weights; // constants of the graph and its subgraphs
  int64_t weightBytes = 0;         // blob size
  int64_t arenaBytes = 0;
  int64_t lowerBoundBytes = 0; // max over nodes of the live buffers' aligned sizes
  size_t lowerBoundNode = 0;   // where it is reached
  int64_t unsharedBytes = 0;   // sum of all aligned buffers (an arena with no reuse)
  std::string fit;             // the placement that was kept
  int64_t views = 0, inPlace = 0, concatsInPlace = 0;
  int64_t dynamicValues = 0; // results in dynamic slots [0, dynamicValues)
  int64_t heapValues = 0;    // growable buffers [0, heapValues) (MemStorage::Heap)

  double ratio() const {
    return lowerBoundBytes > 0 ? double(arenaBytes) / double(lowerBoundBytes) : 1.0;
  }
  // nullptr when v is not planned (e.g. an omitted value or a subgraph intermediate).
  const PlannedValue* find(const Value* v) const;
};

// Whether node n's results already hold their values once its inputs are computed (a view, or a
// Concat whose inputs all lie at their places in its result): the node needs no code.
bool producesInPlace(const MemoryPlan& plan, const Node& n);

// Whether a value of type t has no static size (symbolic, unknown or data-dependent dims,
// sequences, optionals, strings): a node result of it gets a dynamic slot (MemStorage::Dynamic),
// which the artifact builder and the fallback tasks that read or write it agree on.
bool hasDynamicSize(const Type& t);

// Plans g (a main graph) in its current node order. A node result without a static size
// (symbolic or unknown dims, sequences, strings) gets a dynamic slot (MemStorage::Dynamic).
MemoryPlan planMemory(const Graph& g, const MemoryPlanOptions& opts = {});

// The first node result of g or of its nested graphs without a static tensor size, as a reason
// ("node 'x' (LSTM): result 'y' has type f32[?,1,?,128] for these input shapes"); nullopt when
// every result has one (the graph can be planned and compiled for static shapes). With
// `sequences`, results that are sequences or optionals of numeric tensors count as resolved (the
// runtime holds them: an If's branches, rt/sequence.h).
std::optional<std::string> unresolvedShape(const Graph& g, bool sequences = false);
// A sequence or an optional of numeric tensors (any dims), or an optional of such a sequence:
// what the runtime holds as an rt::Sequence (rt/sequence.h), which seq tasks build and read.
bool isNumericSequence(const Type& t);

// Where the bytes of a value of g live under `plan` (what codegen binds a buffer to): the arena
// (offset), the weight blob (offset; `root` is the constant whose bytes they are, v itself or the
// constant v views), graph input `input` (`root` is that input, v itself or what v views), or a
// dynamic slot (offset).
struct ValueHome {
  MemStorage storage = MemStorage::Arena;
  int64_t offset = 0;
  const Value* root = nullptr;
  size_t input = 0;
};
// Throws aicc::Error naming v when it has no place in the plan.
ValueHome homeOf(const Graph& g, const MemoryPlan& plan, const Value* v);

// x rounded up to a multiple of a (a > 0).
inline int64_t alignUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// Checks a plan against g with its own liveness analysis: every node result planned with its
// static size, aligned offsets inside the arena/blob, views and in-place writes legal (in place
// only over storage that nobody reads afterwards), and no two values live at the same node
// overlapping in memory unless they legally share storage. Returns the problems (empty = valid).
std::vector<std::string> checkMemoryPlan(const Graph& g, const MemoryPlan& plan);
// Throws aicc::Error listing the first problems.
void verifyMemoryPlan(const Graph& g, const MemoryPlan& plan);

// One line: "arena 1.2 MiB, lower bound 1.1 MiB (ratio 1.05), weights 4.0 MiB, ...".
std::string formatMemorySummary(const MemoryPlan& plan);
// The summary, then the weights and a table of values: name, bytes, offset, lifetime, how.
std::string formatMemoryPlan(const MemoryPlan& plan);

} // namespace aicc
