// Sequences and optionals owned by the runtime (issue #12): the value of a model's sequence or
// optional input or output, and of every slot between the seq tasks that build and read them
// (SequenceConstruct / Insert / Erase / At / Length, SplitToSequence, Optional, OptionalHasElement
// / GetElement: rt/artifact.h SeqTask). Their tensors' sizes are the run's, so they are owned
// bytes, counted against the memory budget, and shared: an insert copies the list, not the
// tensors, and an Identity or an If's result shares the whole value. The fallback provider
// converts to and from the interpreter's values at its boundary, so every task sees this one form.
// SequenceMap and Loop tasks run a body of their own: rt/sequence_bodies.h.
#pragma once

#include "rt/artifact.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace aicc::rt {

enum class SeqKind : uint8_t { Sequence, OptionalTensor, OptionalSequence };

// One tensor of a sequence: its dims and bytes (null when it has none).
struct SeqItem {
  std::vector<int64_t> dims;
  std::shared_ptr<const std::byte> data;
  int64_t bytes = 0;
};

// A sequence of tensors of one element type, an optional tensor (its one item) or an optional
// sequence; `none`: an optional without its element.
struct Sequence {
  SeqKind kind = SeqKind::Sequence;
  DType dtype = DType::Undefined;
  bool none = false;
  std::vector<SeqItem> items;
};

// What an IR type's text says of a runtime sequence ("seq<f32[N]>", "opt<f32[4]>",
// "opt<seq<i32[]>>"): the kind, the element type, and the tensors' dims when the rank is known
// (-1 for a symbolic or unknown dim). nullopt for the other dynamic values (strings, maps,
// tensors of run-time size, sequences of those), which stay the fallback provider's.
struct SeqType {
  SeqKind kind = SeqKind::Sequence;
  DType dtype = DType::Undefined;
  std::optional<std::vector<int64_t>> dims;
};
std::optional<SeqType> seqTypeOf(const std::string& irType);

// Throws aicc::Error naming `what` when s does not have type t (kind, element type, each tensor's
// rank and static dims).
void checkSequence(const Sequence& s, const SeqType& t, const std::string& what);
// The same for the dims of tensor k alone.
void checkItemDims(const std::vector<int64_t>& dims, const SeqType& t, const std::string& what,
                   size_t k);

// A tensor of the given dims: a copy of the bytes at data, counted against the memory budget
// while any sequence holds it (`what` names it in the error when it does not fit).
SeqItem makeItem(DType dtype, std::vector<int64_t> dims, const void* data, const std::string& what);

// The plan's name of an op ("construct", "insert", ...), and back (nullopt: unknown).
const char* seqOpName(SeqOp op);
std::optional<SeqOp> seqOpFromName(const std::string& name);

// Why seq task t does not fit its op (the count, kinds and types of its params, dynamic[i]: param
// i binds a dynamic value), or "" when it does. The loader refuses the plan then.
std::string seqTaskProblem(const SeqTask& t, const std::vector<bool>& dynamic);

// Runs seq task t (its node's description: `node`) on its bound addresses (a dynamic value's: its
// std::shared_ptr<void>; a result in a growable buffer: its HeapBuffer), the symbols at their
// values in the shape block `block` (a result's data symbols written there when unset, else
// checked); throws aicc::Error naming the node on a position out of range, a tensor of other
// dims than its result's, ...
void runSeqTask(const SeqTask& t, const std::string& node, const std::vector<std::byte*>& bound,
                int64_t* block, const Plan& plan, bool heapResult);
// Why a Map or Loop task's body does not take its params (the count and types of its inputs
// and results), or "" when it does; checked when the bodies are loaded.
std::string bodyProblem(const SeqTask& t, const Artifact& body);

} // namespace aicc::rt
