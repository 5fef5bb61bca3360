// A compiled artifact at run time: the folder `aicc compile` writes (runtime/artifact.h describes
// its files), loaded and run with no compiler in the process. This is the one executor of
// compiled task sequences: the C API (include/aicc/runtime.h), `aicc run DIR`, aicc-run, the
// Python package and the compiler's LoadedArtifact all run artifacts through it.
//
// Loading checks everything before any code runs: the plan's syntax and version, the sizes and
// content hashes of model.weights and model.so, the CPU features the code needs, that every
// binding lies inside its region and is aligned for its elements, that each task's bindings match
// its function's signature in model.so (aicc_artifact_signature), and that jumps only go forward
// (every run ends). Errors throw aicc::Error naming the file, task or input and the reason.
//
// Threads: instances are independent (any number, from any threads; they share the process's
// worker pool). One instance has one arena, so its runs are serialized: run() and setInput() on an
// instance that another thread is running fail with "in use by another thread" (never a data
// race); runWaiting() waits instead. output() is valid until the next run.
#pragma once

#include "ir/dtype.h"
#include "rt/memory.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace aicc::rt {

// The first line of model.plan: the format, the meaning of its packed weights and the runtime
// call contracts model.so relies on. 4: a convolution's packed weights follow
// kernels::convRowsFor (B panels for pixel rows). 5: @attention_ takes softcap, the causal
// offset, the operand layouts and the scores output (rt/callees.cpp).
// 6: `symbol` lines (NAME LO HI [STEP]), symbolic input/output dims and the shape block region
// (Z). 7: `repeat` tasks (loop bodies), data symbols (`symbol NAME 0 HI data`, set by the tasks),
// fallback tasks of symbolic nodes binding the shape block last and running at the run's sizes.
// 8: values sized at run time (`heap K DTYPE DIMS` lines, bindings H:K:0). 9: `seq` tasks
// (sequences and optionals the runtime owns: rt/sequence.h).
inline constexpr const char* kPlanHeader = "aicc-artifact 9";

enum class Region { Arena, Weights, Input, Scratch, Dynamic, Symbols, Heap };

// A region and an offset: the arena, the weights blob, input k (offset = k), the per-task
// scratch area, dynamic slot k (offset = k, bytes = 0), the shape block (the run's value of
// every symbol, i64 each, in the plan's order: loop/per_sample.h), or growable buffer k (offset =
// k, bytes = 0: a tensor whose dims are data symbols with no bound, Plan::heaps).
//
// Dynamic values: what no static plan can place (a data-dependent shape, a sequence, an optional,
// strings) lives in a slot of the instance, a value behind a std::shared_ptr<void>: the bound
// address of a slot, or of a dynamic input, is that std::shared_ptr<void>. A sequence or optional
// of numeric tensors is an rt::Sequence (rt/sequence.h: seqTypeOf tells by the IR type), which
// seq tasks create and read; anything else (strings, maps, tensors of run-time size) is opaque,
// the fallback provider's. Only seq and fallback tasks bind them, and copies from one to a slot
// (an Identity of a sequence, an If's result: the value shared).
struct Sequence; // rt/sequence.h
class Artifact;

struct Binding {
  Region region = Region::Arena;
  int64_t offset = 0; // bytes (Input: the input's index; Dynamic: the slot)
  int64_t bytes = 0;
};

// A symbolic dim of the inputs (issue #12): its name and the values a run may give it; the plan
// is made for `hi` (the memory of every value at its largest). A step > 1: the values are
// multiples of it (a model whose shapes agree only there: passes/dim_steps.h). A data symbol is
// a data-dependent size instead (NonZero's count, TopK's run-time k: passes/data_dims.h): no
// input gives it; the task producing it writes its value into the shape block during the run
// (0..hi), and the tasks after it read it there.
struct Symbol {
  std::string name;
  int64_t lo = 1, hi = 1;
  int64_t step = 1;
  bool data = false;
  // (The compiler's, not in the plan:) a data symbol with no bound (a ConstantOfShape of a
  // run-time shape): hi is kRunSizeLimit, and the values that have it live in growable buffers.
  bool runSized = false;
};

// The largest value a data symbol with no bound may take in a run (a dim of 2^31 elements): the
// task that sizes it fails beyond (an absurd size, not an allocation attempt).
inline constexpr int64_t kRunSizeLimit = int64_t{1} << 31;

// A derived dim's program (TensorDesc::exprs): push a constant, push symbol `arg`'s value, add or
// multiply the top two, divide the top by `arg` (rounding down; dims are never negative).
enum : int64_t { kDimConst, kDimSymbol, kDimAdd, kDimMul, kDimDiv };
inline constexpr size_t kMaxDimProgram = 64; // ops, as a depth bound for the evaluation stack

struct TensorDesc {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> dims; // a symbolic dim: its symbol's hi
  std::string dynamic;   // a dynamic value: its IR type ("seq<f32[2,3]>", "f32[?]"); dims unused
  std::vector<int32_t> syms; // per dim: its symbol's index, -1 when static (empty: all static)
  // Per dim: a derived dim's program (an output's (W+3)/8; empty when none, and empty for all
  // when no dim is derived), in postfix: pairs (op, arg) of kDim* ops over the symbols' values.
  std::vector<std::vector<int64_t>> exprs;
  // 0 for a dynamic value; with the symbols' values (unset ones, and by default all: their hi).
  int64_t bytes(const std::vector<int64_t>& values = {}) const;
  int32_t symbolAt(size_t k) const { return k < syms.size() ? syms[k] : -1; }
  // Dim k, and all dims, with the symbols' values (unset ones: their hi).
  int64_t dimFor(size_t k, const std::vector<int64_t>& values) const;
  std::vector<int64_t> dimsFor(const std::vector<int64_t>& values) const;
};

// A task on sequences and optionals (Kind::Seq), run by the runtime itself (rt/sequence.h), one
// per ONNX op. Its params, the result first: Construct {seq, tensors...}; Empty {seq}; Insert
// {seq, seq, tensor[, position]}; Erase {seq, seq[, position]}; At {tensor, seq, position};
// Length {i64 scalar, seq}; Split {seq, tensor[, split]} (attrs: axis, keepdims); Optional {opt[,
// element]}; Has {bool scalar[, opt]}; Get {tensor or seq, opt}; Map {seqs..., inputs...,
// outer...} (SequenceMap; attrs: the body, Plan::bodies, the count of result sequences and of
// the node's inputs; a tensor input is every item's, the values of the enclosing graph the body
// reads are passed whole); Loop {finals..., [trip count], [condition], initials..., outer...}
// (a Loop whose body is an artifact of its own, run per iteration; attrs: the body, the count
// of carried values, whether the trip count and the condition are bound). descs: per param, a
// tensor's type over the symbols, or a dynamic value's IR type (TensorDesc::dynamic).
enum class SeqOp : uint8_t {
  Construct,
  Empty,
  Insert,
  Erase,
  At,
  Length,
  Split,
  Optional,
  Has,
  Get,
  Map,
  Loop
};
struct SeqTask {
  SeqOp op = SeqOp::Construct;
  std::vector<int64_t> attrs;
  std::vector<TensorDesc> descs;
};

// A fallback task runs a node that has no lowering through the compiler's reference interpreter
// (the plan holds the node as a one-node graph in the IR text form). The runtime has no
// interpreter: a process that has one (the compiler library) provides it here. Given the node's
// text, its description, its bindings (present inputs, then present results, then the shape block
// when the node's values have symbolic dims: it runs at the run's sizes and writes the data
// symbols its results have), the plan's symbols and the plan file (for errors), it checks them
// and returns the function that runs the node on the bound addresses; it throws aicc::Error when
// they do not match.
using FallbackRun = std::function<void(const std::vector<std::byte*>& bound)>;
using FallbackProvider = FallbackRun (*)(const std::string& nodeText, const std::string& node,
                                         const std::vector<Binding>& params,
                                         const std::vector<Symbol>& symbols,
                                         const std::string& planFile);
// The provider artifacts loaded from now on use (null: none, the default of libaicc_rt; loading
// an artifact with fallback tasks then fails, naming the node).
void setFallbackProvider(FallbackProvider p);

// A dynamic value that is a tensor, as the C API hands it out: its data (valid while the value
// is), element type and dims. The provider that creates dynamic values says which are tensors.
struct DynamicTensor {
  const void* data = nullptr;
  int64_t bytes = 0;
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
};
using DynamicTensorView = bool (*)(const std::shared_ptr<void>& value, DynamicTensor& out);
void setDynamicTensorView(DynamicTensorView v);

// Frees a plan's block (Plan::allocate), unless the plan only points at it (a linked model's
// weights).
struct PlanBytesFree {
  bool owned = true;
  void operator()(std::byte* p) const;
};

// A task sequence with its code resolved, ready to run: what a folder's model.plan describes
// (Artifact(dir) reads and checks one), or what the JIT builds in memory (runtime/jit_executor.h).
struct Plan {
  // Repeat: runs the tasks after it up to `target` (exclusive) as a loop body (a compiled Loop
  // or Scan): at most params[0] (an i64) times and never more than `limit`, the iteration number
  // written to params[1] (an i64) before each one; while params[2] (a bool, when bound: a
  // Loop's condition, which the body updates) is nonzero; the iterations run written to the
  // Symbols binding last (when bound: the data symbol of a Loop's scan outputs). Bodies nest;
  // no task inside jumps out of one.
  enum class Kind { Call, Copy, JumpIfZero, Jump, Fail, Fallback, Repeat, Seq };
  struct Task {
    Kind kind = Kind::Call;
    int32_t (*fn)(void**) = nullptr; // Call: the task function (0 = success)
    std::string node;                // Node::describe(), for errors and profiles (Fail: message)
    std::vector<Binding> params;     // Call: the function's; Copy: {from, to}; JumpIfZero: {cond}
    size_t target = 0;               // jumps: the task to continue at (forward only); Repeat:
                                     // the end of its body
    int64_t limit = 0;               // Repeat: the most iterations the plan holds
    FallbackRun fallback;            // Fallback
    SeqTask seq;                     // Seq
  };
  using Free = PlanBytesFree;
  using Bytes = std::unique_ptr<std::byte[], Free>;
  static Bytes allocate(int64_t bytes); // 64-byte aligned; throws when out of memory

  std::vector<Symbol> symbols;
  std::vector<TensorDesc> inputs, outputs;
  std::vector<Binding> outputBindings; // where each output lives
  // Fixed-size variants (`aicc compile --specialize`): folders relative to the plan's, each a
  // whole artifact of static sizes, run instead when a run's inputs have exactly their dims.
  std::vector<std::string> variants;
  // The bodies SequenceMap and Loop tasks run per item or iteration: whole artifacts of symbolic
  // input sizes, in folders relative to the plan's (`body FOLDER`), loaded with it; or (the
  // JIT's) given.
  std::vector<std::string> bodyFolders;
  std::vector<std::shared_ptr<Artifact>> bodies;
  // The tensors sized at run time (Region::Heap k): their dims over the symbols, read when a task
  // binds one.
  std::vector<TensorDesc> heaps;
  std::vector<Task> tasks;
  int64_t arenaBytes = 0, scratchBytes = 0, weightBytes = 0;
  Bytes weights;
  std::shared_ptr<void> code; // keeps the task functions loaded (a dlopen handle, a JIT)
  MemoryReservation reserved; // the plan's bytes against the memory budget
};

// A value sized only when the run gets to it (its dims are data symbols with no bound: a Pad of
// run-time pads, a ConstantOfShape of a run-time shape): an instance's buffer that grows to the
// largest size a run has needed, so steady runs allocate nothing, counted against the memory
// budget and keeping its contents when it grows. A Call task gets its data, grown to the size the
// symbols give at that point of the run; a fallback task gets the HeapBuffer itself (it writes the
// symbols and then the data: reserve).
struct HeapBuffer {
  Plan::Bytes bytes;
  int64_t capacity = 0;
  MemoryReservation reserved;
  // The data, at least n bytes long (a copy of the old contents when it grows); throws
  // aicc::Error naming `what` when the budget or the allocator refuses.
  std::byte* reserve(int64_t n, const std::string& what);
  std::byte* data() const { return bytes.get(); }
};

// The model linked into this binary by `aicc compile --static-runtime` (rt/linked_model.h), read
// and checked as a folder's plan is; its weights are linked in or read from weightsFile (then
// required). Throws aicc::Error when no model is linked in.
Plan readLinkedModel(const char* weightsFile);

// Per-task run time, while profiling.
struct TaskTime {
  double seconds = 0;
  int64_t calls = 0;
};

class Artifact {
public:
  explicit Artifact(const std::string& dir); // throws aicc::Error naming the file and why
  explicit Artifact(Plan plan);
  ~Artifact();
  Artifact(const Artifact&) = delete;
  Artifact& operator=(const Artifact&) = delete;

  const std::vector<TensorDesc>& inputs() const { return inputs_; }
  // The outputs' declarations: the last run's (a variant's, when one ran), else the plan's.
  const std::vector<TensorDesc>& outputs() const;
  // The symbols the inputs' declarations name (the plan's), and those the outputs' do (the last
  // run's plan's: a variant names its own, data symbols its Ifs folded away included).
  const std::vector<Symbol>& symbols() const;
  const std::vector<Symbol>& outputSymbols() const;
  // Input data by position (read during run, not copied), bytes checked against the declaration.
  // A dynamic input is refused: only runWaiting's `dynamic` values set those. An input with
  // symbolic dims takes its dims (checked: rank, static dims; the symbols' ranges and that every
  // input gives a symbol one value are checked by run); without them, the one symbolic dim of
  // an input that has one follows from `bytes`.
  void setInput(size_t i, const void* data, int64_t bytes,
                const std::vector<int64_t>* dims = nullptr);
  void run(); // throws if an input is missing or a task fails
  // Valid until the next run. A dynamic output's address is its std::shared_ptr<void>.
  const void* output(size_t i) const;
  // Output i's dims and bytes in the last run (before one: at the symbols' largest values). A run
  // whose inputs match a variant's sizes (Plan::variants) runs it; its outputs are these then.
  std::vector<int64_t> outputDims(size_t i) const;
  int64_t outputBytes(size_t i) const;
  // Output i of the last run when it is dynamic and a tensor (setDynamicTensorView), else false.
  bool dynamicOutput(size_t i, DynamicTensor& out) const;
  // A sequence or optional input (rt/sequence.h), checked against its declaration (kind,
  // element type, each tensor's rank and static dims); kept, not copied.
  void setSequenceInput(size_t i, std::shared_ptr<const Sequence> value);
  // Output i of the last run when it is a sequence or optional, else null.
  std::shared_ptr<const Sequence> sequenceOutput(size_t i) const;
  // setInput for every input (dynamic[i] for a dynamic input: the fallback provider's value,
  // data[i] ignored), then run, then whileHeld (to read the outputs), holding the instance
  // throughout (waiting for another thread's run of it).
  void runWaiting(const std::vector<const void*>& data, const std::vector<int64_t>& bytes,
                  const std::function<void()>& whileHeld = {},
                  const std::vector<std::shared_ptr<void>>& dynamic = {},
                  const std::vector<std::vector<int64_t>>* dims = nullptr);

  // Tools: per-task timing of later runs (two clock reads per task), and a function called after
  // each task with its index (fault injection for `aicc debug-numerics`).
  void setProfiling(bool on);
  const std::vector<TaskTime>& taskTimes() const;
  void setAfterTask(std::function<void(size_t task)> f);
  // The address a binding refers to in this instance (inputs: as last set).
  void* address(const Binding& b) const;

  // That every SequenceMap task's body (Plan::bodies) takes its params; throws naming planFile.
  void checkBodies(const std::string& planFile) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<TensorDesc> inputs_, outputs_;
};

} // namespace aicc::rt
