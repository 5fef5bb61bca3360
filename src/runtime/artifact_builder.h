// The builder behind buildArtifact (runtime/artifact.h), shared by the files that make it up:
// artifact_build.cpp (the nodes as Call and Fallback tasks, and buildArtifact itself),
// artifact_control.cpp (an If as jumps, a Loop or Scan as a repeat region) and
// artifact_symbols.cpp (the symbols: input ranges, data symbols, derived dims). Internal to them.
#pragma once

#include "backend/memory_plan.h"
#include "loop/per_sample.h"
#include "runtime/artifact.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace aicc::runtime::detail {

int64_t aligned(int64_t x); // to kArenaAlignment
// A value that lives in a dynamic slot (rt/artifact.h, hasDynamicSize). (Constants have static
// sizes; string constants are printed into the fallback tasks that read them.)
bool isDynamic(const Value* v);
bool embedded(const Value* v); // a string constant
// How describe() takes a value of run-time size: not at all (a value the plan sizes), as a graph
// input (sequences, optionals and strings only: tensor inputs need static shapes), or as a graph
// output (any).
enum class Io { None, Input, Output };
// A value of static size, or (a graph input or output) a dynamic one described by its IR type.
TensorDesc describe(const Value* v, const char* what, Io io = Io::None);
std::vector<const Graph*> bodiesOf(const Node& n); // its graph attributes
// The values g and the graphs nested in it define (inputs, constants, results), in graph order.
void definedValues(const Graph& g, std::vector<Value*>& out);
// An If's branch: input-less, as many results as the If.
const Graph* branchOf(const Node& n, const char* which);
// The enclosing graph's values a node's bodies read (what its fallback task declares), and
// whether the reference kernel can run it on its bindings under names that do not clash.
std::vector<const Value*> outerReads(const Node& n);
bool canFallBack(const Node& n, const std::vector<const Value*>& outer);

// One graph being emitted: its memory plan and where its part of the arena starts.
struct Scope {
  const Graph* g;
  MemoryPlan plan;
  int64_t base;
  const Scope* parent;
  int64_t slotBase = 0; // its dynamic slots start here
  // A loop body's graph inputs: the arena slots the loop keeps them in (emitLoop).
  std::vector<Binding> inputs;
  int64_t heapBase = 0; // its growable buffers start here (Builder::addHeaps)
};

class Builder {
public:
  Builder(ArtifactSpec& spec, const loop::LowerOptions& lower, const loop::PerSampleContext& ctx,
          const std::map<const Node*, std::set<std::string>>& dataProducers,
          std::set<std::string>& sized)
      : spec_(spec), lower_(lower), ctx_(ctx), dataProducers_(dataProducers), sized_(sized) {}

  // Emits the tasks of s.g; returns the end of the arena part s and its branches use.
  int64_t emit(const Scope& s);
  Binding bind(const Scope& s, const Value* v);
  // The growable buffers of a scope's plan (MemStorage::Heap) added to the spec, each described
  // by its value's symbolic dims; returns where they start (Scope::heapBase).
  int64_t addHeaps(const MemoryPlan& plan);

  std::vector<std::string> missing, failBranches;
  int64_t slots = 0;                    // dynamic slots handed out so far (every scope's)
  std::set<const Value*> runtimeShapes; // bound dynamic tensors of numbers

private:
  int64_t place(const Tensor& t); // into the weights blob
  int64_t constantAt(const Value* c);
  void push(ArtifactTask t, std::string op, std::string schedule);
  void emitCall(const Scope& s, const Node& n);
  void emitFallback(const Scope& s, const Node& n, const std::vector<const Value*>& outer,
                    const std::string& why);
  // artifact_seq.cpp: a sequence or optional node as a seq task; false (with why, unless n is
  // no such node) when the runtime's sequences cannot hold its values.
  bool emitSeq(const Scope& s, const Node& n, std::string& why);
  bool emitLoopTask(const Scope& s, const Node& n, std::string& why);
  bool pushSeqTask(const Scope& s, const Node& n, rt::SeqOp op,
                   const std::vector<const Value*>& values, std::vector<int64_t> attrs,
                   std::string& why, bool dryRun = false);
  int64_t compileBody(const Node& n, const std::vector<const Value*>& outer, std::string& why);
  // artifact_control.cpp
  int64_t emitIf(const Scope& s, const Node& n, int64_t base);
  void emitSetSymbols(const std::string& where,
                      const std::vector<std::pair<std::string, Dim>>& sets);
  int64_t emitBranch(const Scope& s, const Node& n, const Graph& b, const char* which,
                     int64_t base);
  int64_t emitLoop(const Scope& s, const Node& n, int64_t base);

  ArtifactSpec& spec_;
  const loop::LowerOptions& lower_;
  const loop::PerSampleContext& ctx_;
  const std::map<const Node*, std::set<std::string>>& dataProducers_; // (addDataSymbols)
  // The symbols sized at run time that a task before the current one writes (ctx_.sized).
  std::set<std::string>& sized_;
  // A task of the sizes n sets at run time before its own (LowerOptions::sizesOnly), or false
  // when n's lowering does not compute them apart (n is then a fallback task, which sets them).
  bool emitSizes(const Scope& s, const Node& n, std::string& why);
  std::set<std::string> toSize(const Node& n) const; // n's sizes no task sets yet
  // The Call task of a lowered node (its bindings, scratch and schedule), and its function.
  void pushCall(const Scope& s, const Node& n, loop::LoweredNode& ln, const std::string& name);
  std::map<const Value*, int64_t> weightAt_;
};

// The memory plan's options for g's graphs: a value's size is fixed when its symbolic type
// (ctx) is static (MemoryPlanOptions::fixedSize; ctx outlives the plan).
MemoryPlanOptions planOptions(const loop::PerSampleContext& ctx);

// ---- artifact_symbols.cpp ----

// The symbols of g's tensor inputs (in order of appearance) with their ranges: those given, else
// 1..kDefaultSymbolBound for a batch (a symbol only ever dim 0 of the inputs) and
// 1..kDefaultSizeBound for a length or an image side.
std::vector<rt::Symbol> inputSymbols(const Graph& g, const std::vector<rt::Symbol>& ranges);
// The symbols' values as the graph's dims read them (symbolMap) at their upper or lower ends.
// (Data symbols are at their hi at both ends: the run decides them, the dims the model takes
// are not theirs to check; those sized at run time at kRunSizeNominal, the size the lowerings
// see for them.)
inline constexpr int64_t kRunSizeNominal = 64;
std::map<std::string, int64_t> symbolValues(const std::vector<rt::Symbol>& symbols, bool atHi);
// The first dim of `values` below `least` with the symbols at `at`: its value, dim and size.
std::optional<std::tuple<const Value*, std::string, int64_t>>
dimBelow(const std::vector<Value*>& values, const std::map<std::string, int64_t>& at,
         int64_t least);
// A default range's lower end raised to the smallest size the model takes.
void raiseDefaultLowerEnds(std::vector<rt::Symbol>& symbols, const std::vector<rt::Symbol>& given,
                           const std::vector<Value*>& values);
// The data symbols of g (passes/data_dims.h) added after the inputs', with the nodes producing
// them.
std::map<const Node*, std::set<std::string>> addDataSymbols(const Graph& g,
                                                            std::vector<rt::Symbol>& symbols);
// An input or output with its symbolic dims (by `symbolic`, its type with symbols) named.
TensorDesc describeSymbolic(const Value* v, const Type& symbolic, const char* what, Io io,
                            const std::vector<rt::Symbol>& symbols);

} // namespace aicc::runtime::detail
