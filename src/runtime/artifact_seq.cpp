// Sequence and optional nodes as seq tasks (rt/sequence.h): the runtime builds and reads the
// sequences a graph takes, returns, or keeps in dynamic slots (what unroll-sequences cannot turn
// into tensors at compile time: a sequence input or output, a position the run decides, an If's
// sequence results). A node whose values the runtime's sequences cannot hold (strings, maps, a
// tensor of run-time size) stays a fallback task.
#include "runtime/artifact_builder.h"

#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/data_dims.h"
#include "rt/sequence.h"

#include <algorithm>

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
  if (n.domain.empty() && n.op == "SequenceMap") return Op::Map;
  if (!n.domain.empty() || n.outputs.size() != 1) return std::nullopt;
  auto it = ops.find(n.op);
  return it == ops.end() ? std::nullopt : std::optional<Op>(it->second);
}

} // namespace

bool isRuntimeSequence(const Type& t) { return isNumericSequence(t); }

// A SequenceMap's body as an artifact of its own: the body printed and parsed as a main graph
// (its input dims symbols, an item's sizes), compiled with the same options; its fallbacks are
// the node's.
bool Builder::compileBody(const Node& n, std::string& why) {
  constexpr int64_t kMaxBodyArena = int64_t{256} << 20;
  const Attribute* a = n.attr("body");
  const GraphPtr* bp = a ? std::get_if<GraphPtr>(&a->v) : nullptr;
  if (!bp || !*bp) return why = "no body", false;
  if (!outerReads(n).empty()) return why = "its body reads values of the enclosing graph", false;
  for (const Value* v : (*bp)->inputs)
    if (!v->type.isTensor() || !v->type.shape)
      return why = fmt::format("its body's input '{}' is {}", v->name, formatType(v->type)), false;
  ArtifactBody body;
  body.folder = "body" + std::to_string(spec_.bodies.size());
  try {
    PrintOptions po;
    po.printConstants = true;
    body.model = std::make_shared<Model>(parseModel(printGraph(**bp, po)));
    nameDataDims(*body.model);
    // An item's dims are any sizes, not a batch's: every symbol of the inputs up to a length's
    // default bound; a body whose arena at those bounds would be absurd stays a fallback.
    std::vector<rt::Symbol> ranges = inputSymbolRanges(*body.model->graph, {});
    for (rt::Symbol& x : ranges)
      if (x.step == 1) x.hi = std::max(x.hi, kDefaultSizeBound);
    body.spec = buildArtifact(*body.model->graph, lower_, ranges);
  } catch (const Error& e) {
    return why = std::string("its body: ") + e.what(), false;
  }
  if (body.spec.arenaBytes > kMaxBodyArena)
    return why = fmt::format("its body's arena at the item sizes' bounds would be {} bytes",
                             body.spec.arenaBytes),
           false;
  for (const std::string& f : body.spec.fallbacks)
    spec_.fallbacks.push_back(n.describe() + " body: " + f);
  for (const std::string& f : body.spec.failBranches)
    failBranches.push_back(n.describe() + " body: " + f);
  spec_.bodies.push_back(std::move(body));
  return true;
}

bool Builder::emitSeq(const Scope& s, const Node& n, std::string& why) {
  const auto op = seqOpOf(n);
  if (!op) return false;
  // The results, then the present inputs (only trailing ones may be absent).
  std::vector<const Value*> values(n.outputs.begin(), n.outputs.end());
  if (std::count(values.begin(), values.end(), nullptr)) return why = "an absent result", false;
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
  if (*op == rt::SeqOp::Map)
    t.seq.attrs = {int64_t(spec_.bodies.size()), int64_t(n.outputs.size())};
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
  if (*op == rt::SeqOp::Map && !compileBody(n, why)) return false;
  push(std::move(t), n.op, std::string("sequence task (runtime): ") + rt::seqOpName(*op));
  return true;
}

} // namespace aicc::runtime
