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
// scratch area (temps). Every buffer is fixed at compile time, so a run allocates nothing. Nodes
// without a lowering become fallback tasks when their inputs and results have static sizes and
// they hold no subgraph; any other such node makes compiling an error that lists them. Static
// shapes only: symbolic dims are fixed with --dim, unnamed ones with --shape (the error names the
// missing ones).
#pragma once

#include "codegen/llvm/aot.h"
#include "loop/lower.h"
#include "ops/op_def.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace aicc::runtime {

enum class Region { Arena, Weights, Input, Scratch };

struct Binding {
  Region region = Region::Arena;
  int64_t offset = 0; // bytes (Input: the input's index)
  int64_t bytes = 0;
};

struct TensorDesc {
  std::string name;
  DType dtype = DType::F32;
  Dims dims;
  int64_t bytes() const;
};

struct ArtifactTask {
  enum class Kind { Call, Copy, JumpIfZero, Jump, Fail, Fallback };
  Kind kind = Kind::Call;
  std::string fn;   // Call: symbol in model.so; Fallback: the node as a one-node graph (IR text)
  std::string node; // Node::describe(), for errors and reports (Fail: the message)
  // Call: the function's; Copy: {from, to}; JumpIfZero: {cond}; Fallback: present inputs, then
  // present results.
  std::vector<Binding> params;
  int64_t target = 0; // jumps: index of the task to continue at
};

struct ArtifactSpec {
  std::vector<TensorDesc> inputs;
  std::vector<std::pair<TensorDesc, Binding>> outputs;
  std::vector<ArtifactTask> tasks;
  int64_t arenaBytes = 0, scratchBytes = 0, packedBytes = 0, lowerBoundBytes = 0;
  std::vector<std::byte> weights;
  loop::Module code;
  // Per task, for the compile report: op label and schedule.
  std::vector<std::pair<std::string, std::string>> schedules;
  // If branches compiled as Fail tasks: "node branch: reason".
  std::vector<std::string> failBranches;
  // Nodes run as Fallback tasks: "node: why it has no lowering".
  std::vector<std::string> fallbacks;
};

// Lowers and plans g (optimized, static shapes) into a spec (artifact_build.cpp). Throws
// aicc::Error listing every node that has no lowering.
ArtifactSpec buildArtifact(const Graph& g, const loop::LowerOptions& lower);

struct WrittenArtifact {
  int64_t objectBytes = 0, sharedBytes = 0, weightBytes = 0;
  double codegenSeconds = 0, linkSeconds = 0;
};
// Writes model.o, model.so, model.weights and model.plan into dir (created if missing).
WrittenArtifact writeArtifact(const ArtifactSpec& spec, const std::string& dir,
                              const Target& target, const codegen::AotOptions& o = {});

// A loaded artifact: owns the arena, the weights and the library handle.
//
// Threads: instances are independent (any number, used from any threads; they share the process's
// worker pool, which takes concurrent jobs). One instance has one arena, so its runs are
// serialized: the checked run(inputs) waits for a run of another thread on the same instance to
// end (safe to call concurrently, like ONNX Runtime's Session::Run). The raw interface
// (setInput, run(), output) is one thread's at a time: setInput or run() while another thread
// runs this instance is an error ("in use by another thread"), never a data race; output() is
// valid until the next run.
class LoadedArtifact {
public:
  explicit LoadedArtifact(const std::string& dir); // throws aicc::Error naming the file and why
  ~LoadedArtifact();
  LoadedArtifact(const LoadedArtifact&) = delete;
  LoadedArtifact& operator=(const LoadedArtifact&) = delete;

  const std::vector<TensorDesc>& inputs() const { return inputs_; }
  const std::vector<TensorDesc>& outputs() const { return outputDescs_; }
  // Raw interface (the C API): input data by position, bytes checked against the declared size.
  void setInput(size_t i, const void* data, int64_t bytes);
  void run(); // throws if an input is missing or a task fails
  // Valid until the next run.
  const void* output(size_t i) const;
  // Checked tensors: dtype and shape of each input against the declaration, by position.
  std::vector<RValue> run(const std::vector<RValue>& inputs);

private:
  void setInputLocked(size_t i, const void* data, int64_t bytes);
  void runLocked();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<TensorDesc> inputs_, outputDescs_;
};

} // namespace aicc::runtime
