// The JIT graph executor: a graph compiled once into a fixed task sequence, in memory.
//
// Static graphs (every value's shape known, tensors only) take the artifact's path: buildArtifact
// (runtime/artifact.h) lowers and plans them into a task sequence over one arena, the LLVM JIT
// (codegen/llvm/jit.h) compiles its loop-IR module, and the runtime's executor (rt::Artifact, the
// one that runs compiled folders) runs it: the JIT is "codegen in memory + the same runtime".
// Nodes without a lowering are fallback tasks (the reference interpreter on the planned buffers).
//
// Other graphs (tensors whose shapes are known only at run time, an If whose branch does not
// resolve for these inputs) run node by node: lowerable nodes compiled with the JIT and
// called on their own buffers, every other node through the interpreter's reference kernel (an
// explicit fallback, counted and listed), an If with static results as a control-flow task with
// both branches compiled as nested executables (a branch whose shapes do not resolve is not
// compiled: taking it runs the If in the interpreter, listed in JitStats::interpretedBranches).
// Dynamic artifacts (issue #12) are to replace this path.
#pragma once

#include "backend/op_select.h"
#include "codegen/llvm/jit.h"
#include "interp/interpreter.h"
#include "loop/lower.h"
#include "ops/op_def.h"
#include "rt/artifact.h"
#include "support/memory.h"

#include <memory>

namespace aicc::runtime {

struct JitRunOptions {
  int optLevel = 2;      // LLVM pipeline level
  bool parallel = true;  // run `parallel` loops on the thread pool
  // Fault injection, for testing `aicc debug-numerics`: after the compiled task of the node of
  // this name runs, its first f32 output's first element is changed (a wrong kernel).
  std::string injectFaultAt;
  // A graph with a symbolic batch (loop/per_sample.h): the range each symbol is planned for
  // (others: 1..kDefaultSymbolBound).
  std::vector<rt::Symbol> symbols;
  // Runtime micro-kernels, with each node's candidate picked by the cost model for this CPU.
  loop::LowerOptions lower = [] {
    loop::LowerOptions o;
    o.runtimeKernels = true;
    o.chooseCandidate = backend::candidateChooser(nativeTarget(), {}, true);
    return o;
  }();
};

struct JitStats {
  int64_t lowered = 0, fallback = 0;
  std::vector<std::string> fallbackReasons; // "node: reason"
  // If branches not compiled because their shapes do not resolve for these inputs (the If runs
  // in the interpreter if it takes one): "node branch: reason".
  std::vector<std::string> interpretedBranches;
  double compileSeconds = 0;
  bool planned = false; // the artifact's path: one planned arena, the runtime's executor
  std::string planNote; // the plan summary / why the graph runs node by node
  int64_t arenaBytes = 0;
  int64_t packedBytes = 0; // weights re-laid out at compile time for the micro-kernels
};

// One task of the sequence, for reports and profiles.
struct TaskInfo {
  std::string node;     // Node::describe()
  std::string op;       // op type ("aicc.Fused" bodies: "Fused(Conv+Relu)")
  std::string engine;   // "jit" or "fallback"
  std::string schedule; // loop::printSchedule of the lowered Func ("" for fallbacks)
  std::string why;      // fallback reason
  double seconds = 0;   // accumulated run time while profiling
  int64_t calls = 0;
};

class JitExecutable {
public:
  // Lowers, plans and compiles g (kept by reference: it must outlive the executable).
  JitExecutable(const Graph& g, const JitRunOptions& opts = {});
  ~JitExecutable();

  // Runs with inputs bound by position to g.inputs (dtype and static dims are checked); returns
  // g.outputs in order (copies owned by the caller). `outer` provides the values of enclosing
  // graphs when g is a subgraph (a compiled If branch).
  std::vector<RValue> run(const std::vector<RValue>& inputs, const OuterLookup* outer = nullptr);

  const JitStats& stats() const { return stats_; }
  // Per-task timing of later runs (off by default: two clock reads per task).
  void setProfiling(bool on);
  const std::vector<TaskInfo>& tasks() const;

private:
  struct Task;
  // The artifact's path; false when g needs the node-by-node one (the reason in stats_.planNote).
  bool compilePlanned(const JitRunOptions& opts);
  // An If whose results have static shapes: both branches compiled as executables.
  bool compileIf(const Node& n, Task& t, const JitRunOptions& opts);
  const Graph& g_;
  JitStats stats_;
  std::unique_ptr<codegen::JitEngine> engine_;
  std::vector<Task> tasks_;
  mutable std::vector<TaskInfo> info_;    // parallel to the tasks (seconds refreshed from planned_)
  std::unique_ptr<rt::Artifact> planned_; // the artifact's path
  bool profiling_ = false;
  std::string injectFaultAt_;
  MemoryReservation arenaReserved_; // against the memory budget (support/memory.h)
  std::vector<std::byte> arenaStorage_;
  std::byte* arena_ = nullptr;
  std::map<const Value*, Tensor> slots_; // planned arena views of node results
};

// One-shot convenience: compile and run.
std::vector<RValue> runJit(const Graph& g, const std::vector<RValue>& inputs,
                           const JitRunOptions& opts = {}, JitStats* stats = nullptr);

} // namespace aicc::runtime
