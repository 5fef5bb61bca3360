// Sequence and optional nodes as seq tasks (rt/sequence.h): the runtime builds and reads the
// sequences a graph takes, returns, or keeps in dynamic slots (what unroll-sequences cannot turn
// into tensors at compile time: a sequence input or output, a position the run decides, an If's
// sequence results). A node whose values the runtime's sequences cannot hold (strings, maps, a
// tensor of run-time size) stays a fallback task.
#include "runtime/artifact_builder.h"

#include "rt/sequence.h"

namespace aicc::runtime {

using namespace detail;

namespace {

std::optional<rt::SeqOp> seqOpOf(const Node& n) {
  using Op = rt::SeqOp;
  static const std::map<std::string, Op> ops = {{"SequenceConstruct", Op::Construct},
                                                {"SequenceEmpty", Op::Empty},
                                                {"SequenceInsert", Op::Insert},
                                                {"SequenceErase", Op::Erase},
                                                {"SequenceAt", Op::At},
                                                {"SequenceLength", Op::Length},
                                                {"SplitToSequence", Op::Split},
                                                {"Optional", Op::Optional},
                                                {"OptionalHasElement", Op::Has},
                                                {"OptionalGetElement", Op::Get}};
  if (!n.domain.empty() || n.outputs.size() != 1) return std::nullopt;
  auto it = ops.find(n.op);
  return it == ops.end() ? std::nullopt : std::optional<Op>(it->second);
}

} // namespace

bool isRuntimeSequence(const Type& t) { return isNumericSequence(t); }

bool Builder::emitSeq(const Scope& s, const Node& n, std::string& why) {
  const auto op = seqOpOf(n);
  if (!op) return false;
  // The result, then the present inputs (only trailing ones may be absent).
  std::vector<const Value*> values = {n.outputs[0]};
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!n.hasInput(i)) {
      for (size_t j = i; j < n.inputs.size(); ++j)
        if (n.hasInput(j)) return why = "an absent input before a present one", false;
      break;
    }
    values.push_back(n.inputs[i]);
  }
  ArtifactTask t;
  t.kind = ArtifactTask::Kind::Seq;
  t.node = n.describe();
  t.seq.op = *op;
  if (*op == rt::SeqOp::Split) t.seq.attrs = {n.attrInt("axis", 0), n.attrInt("keepdims", 1)};
  std::vector<bool> dynamic;
  try {
    for (const Value* v : values) {
      if (embedded(v) || (!v->type.isTensor() && !isDynamic(v)))
        return why = fmt::format("'{}' is {}", v->name, formatType(v->type)), false;
      if (v->type.isTensor() && isDynamic(v))
        return why = fmt::format("'{}' is {}: a tensor of run-time size", v->name,
                                 formatType(v->type)),
               false;
      if (lower_.bf16Activations && lower_.bf16Activations->count(v))
        return why = fmt::format("'{}' is stored as bf16", v->name), false;
      t.seq.descs.push_back(
          describeSymbolic(v, ctx_.typeOf(v), "value", Io::Output, spec_.symbols));
      dynamic.push_back(isDynamic(v));
      t.params.push_back(bind(s, v));
    }
  } catch (const Error& e) {
    return why = e.what(), false;
  }
  if (std::string problem = rt::seqTaskProblem(t.seq, dynamic); !problem.empty())
    return why = "the runtime's sequences: " + problem, false;
  push(std::move(t), n.op, std::string("sequence task (runtime): ") + rt::seqOpName(*op));
  return true;
}

} // namespace aicc::runtime
