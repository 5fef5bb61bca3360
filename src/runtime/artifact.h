// Compiled-model artifacts (`aicc compile --emit so`): the model as a fixed task sequence over one
// static arena, written to a folder and loaded back without the compiler:
//
//   model.so       the kernels (loop IR -> LLVM, AOT, codegen/llvm/aot.h), linked with `cc -shared`
//   model.o        the same code as a relocatable object (for static linking)
//   model.weights  the read-only blob: graph constants at their planned offsets, then the weights
//                  packed at compile time for the micro-kernels
//   model.plan     text: arena/scratch sizes, the size and content hash of model.weights and
//                  model.so, the ISA features the code needs, the inputs
//                  and outputs (name, type, where an output lives), one line per task
//
// Tasks run in order: `task` calls a function with its parameters' bindings, `copy` copies one
// binding's bytes to another, `jumpz` continues at a later task when a bool binding is false,
// `jump` continues at a later task, `fail` stops the run with its message, `fallback` runs a node
// that has no lowering through its reference kernel (the node is stored as a one-node graph in
// the IR text form; the loader, which links the interpreter, parses it; the compile report lists
// each fallback and why). An If with static
// results compiles to jumpz/jump around its two branches (artifact_build.cpp); jumps only go
// forward, which the loader checks, so every run ends.
//
// A binding is a region and an offset: the arena, the weights blob, input k, or the per-task
// scratch area (temps), or a dynamic slot. Every static-size buffer is fixed at compile time, so
// a run of a static graph allocates nothing. Nodes without a lowering become fallback tasks.
// Symbolic input dims (a batch N): the plan is made at each symbol's upper bound (`symbol` lines
// give the ranges), every buffer of a smaller run is a prefix of its region, and the runtime
// writes the run's values into the shape block the per-sample tasks read (loop/per_sample.h).
// Dynamic regions: values without a static size (data-dependent shapes, sequences, optionals,
// strings) live in dynamic slots, and every node that reads or writes one is a fallback task
// (the reference kernel, on the values of this run); graph inputs and outputs may be such values
// (`aicc run` and the Python package pass them; the C API takes static tensors only). The compile
// report lists every fallback and why. Unnamed input dims ("?") need --shape (the error names
// them); a symbol that some node cannot take per sample needs --dim (the error names the node).
#pragma once

#include "codegen/llvm/aot.h"
#include "loop/lower.h"
#include "ops/op_def.h"
#include "rt/artifact.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace aicc::runtime {

// The plan's vocabulary is the runtime's (rt/artifact.h).
using rt::Binding;
using rt::Region;
using rt::TensorDesc;

struct ArtifactTask {
  using Kind = rt::Plan::Kind; // the runtime's task kinds
  Kind kind = Kind::Call;
  std::string fn;   // Call: symbol in model.so; Fallback: the node as a one-node graph (IR text)
  std::string node; // Node::describe(), for errors and reports (Fail: the message)
  // Call: the function's; Copy: {from, to}; JumpIfZero: {cond}; Fallback: present inputs, then
  // present results.
  std::vector<Binding> params;
  int64_t target = 0; // jumps: index of the task to continue at; Repeat: the end of its body
  int64_t limit = 0;  // Repeat: the most iterations the plan holds
  // In memory only (not in the plan file), for tools: the node a Call or Fallback task computes
  // and where each of its present results lives.
  const Node* source = nullptr;
  std::vector<std::pair<const Value*, Binding>> results;
  rt::SeqTask seq; // Seq: the op, its attributes and its params' types (in the plan file)
};

struct ArtifactBody;

struct ArtifactSpec {
  std::vector<rt::Symbol> symbols; // the inputs' symbolic dims, with the ranges planned for
  std::vector<std::string> variants; // fixed-size variants' folders (rt::Plan::variants)
  std::vector<TensorDesc> inputs;
  std::vector<TensorDesc> heaps; // values sized at run time (rt::Plan::heaps)
  std::vector<std::pair<TensorDesc, Binding>> outputs;
  std::vector<ArtifactTask> tasks;
  int64_t arenaBytes = 0, scratchBytes = 0, packedBytes = 0, lowerBoundBytes = 0;
  int64_t nodesInPlace = 0; // views and Concats of slices: no task (memory_plan.h)
  int64_t dynamicValues = 0; // dynamic slots (rt/artifact.h): values of run-time size
  int64_t runtimeShapes = 0; // of those, tensors of numbers whose shape is known only at run time
  int64_t bf16Activations = 0; // --precision bf16: values stored as bf16 between convolutions
  std::vector<std::byte> weights;
  loop::Module code;
  // Per task, for the compile report: op label and schedule.
  std::vector<std::pair<std::string, std::string>> schedules;
  // If branches compiled as Fail tasks: "node branch: reason".
  std::vector<std::string> failBranches;
  // Nodes run as Fallback tasks: "node: why it has no lowering" (those of the bodies too).
  std::vector<std::string> fallbacks;
  // The bodies its SequenceMap and Loop tasks run per item or iteration (rt::Plan::bodies),
  // written into folders of their own.
  std::vector<ArtifactBody> bodies;
};

// A SequenceMap or Loop body compiled as an artifact of its own (symbolic input sizes: an item's
// or an iteration's), and the model it was compiled from (the body as a main graph; its tasks
// point into it).
struct ArtifactBody {
  std::string folder;
  ArtifactSpec spec;
  std::shared_ptr<Model> model;
};

// The bound a symbolic input dim is planned for when no range is given (--dim N=1..64): a batch
// (a symbol only ever dim 0 of the inputs) 16, a length or an image side 1024.
inline constexpr int64_t kDefaultSymbolBound = 16;
inline constexpr int64_t kDefaultSizeBound = 1024;
// A stepped symbol's default range (passes/dim_steps.h): step..kDefaultSteps * step (an image
// side in multiples of 32: 32..1024).
inline constexpr int64_t kDefaultSteps = 32;

// The symbols of g's inputs with the ranges a compile takes them in: those given, else the
// defaults above (from the smallest size the model's shapes take), stepped ones at multiples.
std::vector<rt::Symbol> inputSymbolRanges(const Graph& g, const std::vector<rt::Symbol>& given);

// A length's default range reaches further when memory allows: when the inputs have one
// defaulted size symbol (an audio or token length; an image's two sides stay at
// kDefaultSizeBound), its upper end doubles up to kMaxDefaultLength while the bytes of every
// value at it stay within kDefaultLengthBytes. Returns `given` plus that range (its lower end
// as inputSymbolRanges raises it), or `given`. oww-melspectrogram's 1760-sample reference input
// was past 1024; a 1-second chunk at 16 kHz is 16,000 samples.
inline constexpr int64_t kMaxDefaultLength = int64_t{1} << 19;     // 32 s at 16 kHz
inline constexpr int64_t kDefaultLengthBytes = int64_t{256} << 20; // 256 MiB
std::vector<rt::Symbol> widenDefaultLength(const Graph& g, const std::vector<rt::Symbol>& given);

// Lowers and plans g (optimized) into a spec (artifact_build.cpp). Symbolic input dims take the
// ranges given (others 1..kDefaultSymbolBound): memory is planned at their upper bounds and each
// node that has them runs per sample (loop/per_sample.h). Throws aicc::Error listing every node
// that has no lowering.
ArtifactSpec buildArtifact(const Graph& g, const loop::LowerOptions& lower,
                           const std::vector<rt::Symbol>& ranges = {});

struct WrittenArtifact {
  int64_t objectBytes = 0, sharedBytes = 0, weightBytes = 0;
  int64_t archiveBytes = 0; // self-contained: model.a
  double codegenSeconds = 0, linkSeconds = 0;
};
struct WriteOptions {
  codegen::AotOptions aot;
  // Self-contained (`--static-runtime`, runtime/static_link.h): model.so and model.a carry the
  // runtime and the plan, optionally the weights; no model.plan, model.o is not kept.
  bool staticRuntime = false;
  bool embedWeights = false; // with staticRuntime: no model.weights either
};
// Writes model.o, model.so, model.weights and model.plan into dir (created if missing), or the
// self-contained form (WriteOptions::staticRuntime).
WrittenArtifact writeArtifact(const ArtifactSpec& spec, const std::string& dir,
                              const Target& target, const WriteOptions& o = {});

// A loaded artifact: the runtime's executor (rt::Artifact: checks, threads and errors as
// described there) with the reference interpreter for fallback tasks, and a checked run on
// tensors.
class LoadedArtifact : public rt::Artifact {
public:
  explicit LoadedArtifact(const std::string& dir); // throws aicc::Error naming the file and why
  using rt::Artifact::run;
  // Checked tensors: dtype and shape of each input against the declaration, by position; waits for
  // another thread's run of this instance.
  std::vector<RValue> run(const std::vector<RValue>& inputs);
};

// The symbols' values as dims read them: each symbol, and a stepped one's "S/step"
// (passes/dim_steps.h), from `value(k)` (symbol k's).
std::map<std::string, int64_t> symbolMap(const std::vector<rt::Symbol>& symbols,
                                         const std::function<int64_t(size_t)>& value);

// The runtime's fallback provider of the compiler library: runs a fallback task's node (IR text)
// through the reference interpreter on its bindings (rt::FallbackProvider).
rt::FallbackRun interpreterFallback(const std::string& nodeText, const std::string& node,
                                    const std::vector<Binding>& params,
                                    const std::vector<rt::Symbol>& symbols,
                                    const std::string& file);

// Checked tensors in, owned copies of the outputs out: dtype and shape of each input against the
// declaration, by position (the engines' common run on tensors).
std::vector<RValue> runChecked(rt::Artifact& a, const std::vector<RValue>& inputs);

// Installs the reference interpreter as the runtime's fallback provider (rt::setFallbackProvider);
// LoadedArtifact and writeArtifact do it, so a process that compiles or loads through the compiler
// library runs fallback tasks from the C API too.
void installInterpreterFallback();

} // namespace aicc::runtime
