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

namespace {

// Graph g printed and parsed as a main graph, the enclosing graph's values it reads (outer)
// appended to its inputs under their names.
Model asMainGraph(const Graph& g, const std::vector<const Value*>& outer) {
  PrintOptions po;
  po.printConstants = true;
  std::string text = printGraph(g, po);
  std::string more;
  for (const Value* v : outer)
    more += (g.inputs.empty() && more.empty() ? "" : ", ") + printValueName(v->name) + ": " +
            printType(v->type);
  const size_t at = text.find(") {");
  AICC_CHECK(at != std::string::npos, "internal: a graph printed without its header");
  text.insert(at, more);
  Model m = parseModel(text);
  // A body's carried sequences hold tensors of the sizes the run gives, whatever their element
  // type declares (exporters declare the first elements; the interpreter and ONNX Runtime do not
  // check them): its own sequence inputs' elements are of any dims.
  for (Value* v : std::vector<Value*>(m.graph->inputs.begin(),
                                      m.graph->inputs.begin() + int64_t(g.inputs.size()))) {
    Type* t = &v->type;
    while (t->kind == Type::Kind::Sequence || t->kind == Type::Kind::Optional) {
      auto e = std::make_shared<Type>(*t->elem);
      t->elem = e;
      t = e.get();
    }
    if (t != &v->type) t->shape.reset();
  }
  return m;
}

} // namespace

// A body (SequenceMap's, a Loop's) as an artifact of its own: printed and parsed as a main graph
// with what it reads of the enclosing graph as more inputs, its input dims symbols (an item's,
// an iteration's sizes: any, up to a length's default bound), compiled with the same options;
// its fallbacks are the node's. Returns its index in spec_.bodies, or -1 (why).
int64_t Builder::compileBody(const Node& n, const std::vector<const Value*>& outer,
                             std::string& why) {
  constexpr int64_t kMaxBodyArena = int64_t{256} << 20;
  const Attribute* a = n.attr("body");
  const GraphPtr* bp = a ? std::get_if<GraphPtr>(&a->v) : nullptr;
  if (!bp || !*bp) return why = "no body", -1;
  ArtifactBody body;
  body.folder = "body" + std::to_string(spec_.bodies.size());
  try {
    body.model = std::make_shared<Model>(asMainGraph(**bp, outer));
    nameDataDims(*body.model);
    mergeSymbolsMetInBroadcasts(*body.model);
    std::vector<rt::Symbol> ranges = inputSymbolRanges(*body.model->graph, {});
    for (rt::Symbol& x : ranges)
      if (x.step == 1) x.hi = std::max(x.hi, kDefaultSizeBound);
    body.spec = buildArtifact(*body.model->graph, lower_, ranges);
  } catch (const Error& e) {
    return why = std::string("its body: ") + e.what(), -1;
  }
  if (body.spec.arenaBytes > kMaxBodyArena) // (a fallback rather than an absurd arena)
    return why = fmt::format("its body's arena at the sizes' bounds would be {} bytes",
                             body.spec.arenaBytes),
           -1;
  for (const std::string& f : body.spec.fallbacks)
    spec_.fallbacks.push_back(n.describe() + " body: " + f);
  for (const std::string& f : body.spec.failBranches)
    failBranches.push_back(n.describe() + " body: " + f);
  spec_.bodies.push_back(std::move(body));
  return int64_t(spec_.bodies.size()) - 1;
}

// The seq task of op over values (results first), its attributes given; false (why) when a value
// is none the runtime's sequences or the planned tensors hold, or the task does not fit its op.
bool Builder::pushSeqTask(const Scope& s, const Node& n, rt::SeqOp op,
                          const std::vector<const Value*>& values, std::vector<int64_t> attrs,
                          std::string& why, bool dryRun) {
  ArtifactTask t;
  t.kind = ArtifactTask::Kind::Seq;
  t.node = n.describe();
  t.seq.op = op;
  t.seq.attrs = std::move(attrs);
  std::vector<bool> dynamic;
  try {
    for (const Value* v : values) {
      if (embedded(v) || (!v->type.isTensor() && !isDynamic(v)) ||
          (isDynamic(v) && !isNumericSequence(v->type)))
        return why = fmt::format("'{}' is {}", v->name, formatType(v->type)), false;
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
  if (dryRun) return true;
  std::string schedule = std::string("sequence task (runtime): ") + rt::seqOpName(op);
  if (op == rt::SeqOp::Map || op == rt::SeqOp::Loop) { // (its body: the last one compiled)
    const ArtifactBody& b = spec_.bodies.back();
    schedule += fmt::format(", its body in {}/ ({} tasks, {} fallbacks)", b.folder,
                            b.spec.tasks.size(), b.spec.fallbacks.size());
  }
  push(std::move(t), n.op, std::move(schedule));
  const std::set<std::string> sizes = toSize(n); // (an element's dims: this task writes them)
  sized_.insert(sizes.begin(), sizes.end());
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
  std::vector<int64_t> attrs;
  if (*op == rt::SeqOp::Split) attrs = {n.attrInt("axis", 0), n.attrInt("keepdims", 1)};
  if (*op != rt::SeqOp::Map) return pushSeqTask(s, n, *op, values, attrs, why);
  // SequenceMap: then what its body reads of the enclosing graph, passed whole.
  const std::vector<const Value*> outer = outerReads(n);
  values.insert(values.end(), outer.begin(), outer.end());
  attrs = {int64_t(spec_.bodies.size()), int64_t(n.outputs.size()), int64_t(n.inputs.size())};
  if (!pushSeqTask(s, n, *op, values, attrs, why, true)) return false;
  if (compileBody(n, outer, why) < 0) return false;
  return pushSeqTask(s, n, *op, values, attrs, why);
}

// A Loop that carries sequences, or whose body does not resolve at static sizes, without scan
// outputs: its body an artifact of its own, run per iteration by the runtime (rt::SeqOp::Loop).
bool Builder::emitLoopTask(const Scope& s, const Node& n, std::string& why) {
  const Attribute* a = n.attr("body");
  const GraphPtr* bp = a ? std::get_if<GraphPtr>(&a->v) : nullptr;
  if (!bp || !*bp || n.inputs.size() < 2 || (*bp)->outputs.size() != n.outputs.size() + 1 ||
      (*bp)->inputs.size() != n.inputs.size())
    return why = "a body that does not match its inputs and outputs", false;
  const size_t c = n.inputs.size() - 2; // carried values (no scan outputs: one result each)
  if (n.outputs.size() != c) return why = "scan outputs", false;
  std::vector<const Value*> values(n.outputs.begin(), n.outputs.end());
  if (std::count(values.begin(), values.end(), nullptr)) return why = "an absent result", false;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.hasInput(i))
      values.push_back(n.inputs[i]);
    else if (i >= 2)
      return why = "an absent initial value", false;
  const std::vector<const Value*> outer = outerReads(n);
  values.insert(values.end(), outer.begin(), outer.end());
  std::vector<int64_t> attrs = {int64_t(spec_.bodies.size()), int64_t(c), n.hasInput(0) ? 1 : 0,
                                n.hasInput(1) ? 1 : 0};
  if (!pushSeqTask(s, n, rt::SeqOp::Loop, values, attrs, why, true)) return false;
  if (compileBody(n, outer, why) < 0) return false;
  return pushSeqTask(s, n, rt::SeqOp::Loop, values, attrs, why);
}

} // namespace aicc::runtime
