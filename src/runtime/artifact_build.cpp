// buildArtifact: the optimized graph as a task sequence over one static arena (artifact.h).
//
// Nodes lower one by one into loop-IR functions (Call tasks). An If with static results becomes
// control flow in the sequence:
//
//   jumpz  cond -> ELSE
//   <then branch's tasks>, copy each then-result into the If's result
//   jump   -> END
//   ELSE: <else branch's tasks>, copy each else-result into the If's result
//   END:
//
// Each branch is planned on its own (planMemory of the branch graph; the enclosing graph's values
// it reads are external to it) and placed after the enclosing graph's arena part: only one branch
// runs and its values die with the If, so both branches, and the branches of every If of the same
// graph, share that region. Jumps only go forward, so every run ends.
//
// A branch whose shapes do not resolve statically for the compiled input shapes (silero-vad's
// 8 kHz branch fed 512 samples: its LSTM would get a rank-5 input, which ONNX Runtime rejects at
// run time as well) becomes one Fail task: taking it is a run-time error naming the node and the
// reason; the compile report lists it. A node without a lowering, or one that reads or writes a
// value of run-time size (a dynamic slot, rt/artifact.h), becomes a Fallback task (its reference
// kernel, run by the loader on its bindings); one whose kernel the interpreter lacks makes the
// build fail, listing every such node. With symbolic dims, a node no lowering takes at the run's
// sizes (and an If whose branch resolves only at a run's sizes) is a fallback task that runs at
// the run's sizes: it binds the shape block, and writes the data symbols (passes/data_dims.h) of
// its results.
#include "runtime/artifact.h"

#include "backend/memory_plan.h"
#include "ir/printer.h"
#include "kernels/gemm.h"
#include "loop/per_sample.h"
#include "loop/printer.h"
#include "loop/scan_slices.h"
#include "loop/verifier.h"
#include "passes/data_dims.h"
#include "passes/dim_steps.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <set>

namespace aicc::runtime {

namespace {

int64_t aligned(int64_t x) { return alignUp(x, kArenaAlignment); }

// A value that lives in a dynamic slot (rt/artifact.h, hasDynamicSize). (Constants have static
// sizes; string constants are printed into the fallback tasks that read them.)
bool isDynamic(const Value* v) { return v && !v->constant && hasDynamicSize(v->type); }
bool embedded(const Value* v) { return v && v->constant && v->type.dtype == DType::String; }

// How describe() takes a value of run-time size: not at all (a value the plan sizes), as a graph
// input (sequences, optionals and strings only: tensor inputs need static shapes), or as a graph
// output (any).
enum class Io { None, Input, Output };

// A value of static size, or (a graph input or output) a dynamic one described by its IR type.
TensorDesc describe(const Value* v, const char* what, Io io = Io::None) {
  if (io != Io::None && isDynamic(v) &&
      (!v->type.isTensor() || v->type.dtype == DType::String || io == Io::Output))
    return {v->name, DType::Undefined, {}, formatType(v->type), {}, {}};
  AICC_CHECK(v->type.isTensor() && v->type.shape, "{} '{}' is not a tensor of known shape", what,
             v->name);
  auto d = toDims(*v->type.shape);
  AICC_CHECK(d, "{} '{}' has the dynamic shape {}; fix it with --dim NAME=VALUE (symbolic dims) "
             "or --shape NAME=D0,D1,... (unnamed ones)", what, v->name, formatShape(*v->type.shape));
  return {v->name, v->type.dtype, *d, "", {}, {}};
}

// The bodies (graph attributes) of a node.
std::vector<const Graph*> bodiesOf(const Node& n) {
  std::vector<const Graph*> bodies;
  for (const auto& [_, a] : n.attrs) {
    if (auto* sg = std::get_if<GraphPtr>(&a.v); sg && *sg) bodies.push_back(sg->get());
    if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
      for (const auto& x : *sgs)
        if (x) bodies.push_back(x.get());
  }
  return bodies;
}

// The values g and the graphs nested in it define (inputs, constants, results), in graph order.
void definedValues(const Graph& g, std::vector<Value*>& out) {
  out.insert(out.end(), g.inputs.begin(), g.inputs.end());
  out.insert(out.end(), g.constants.begin(), g.constants.end());
  for (const auto& n : g.nodes) {
    for (Value* v : n->outputs)
      if (v) out.push_back(v);
    for (const Graph* b : bodiesOf(*n)) definedValues(*b, out);
  }
}

const Graph* branchOf(const Node& n, const char* which) {
  const Attribute* a = n.attr(which);
  const GraphPtr* g = a ? std::get_if<GraphPtr>(&a->v) : nullptr;
  return g && *g && (*g)->inputs.empty() && (*g)->outputs.size() == n.outputs.size() ? g->get()
                                                                                      : nullptr;
}

// One graph being emitted: its memory plan and where its part of the arena starts.
struct Scope {
  const Graph* g;
  MemoryPlan plan;
  int64_t base;
  const Scope* parent;
  int64_t slotBase = 0; // its dynamic slots start here
  // A loop body's graph inputs: the arena slots the loop keeps them in (emitLoop).
  std::vector<Binding> inputs;
};

// --precision bf16: the f32 values stored as bf16 between bf16 convolutions. A value qualifies
// when its producer and every consumer lower to a bf16 convolution that reads and writes its
// buffers itself (loop::bf16ConvIo, asked of probes), and no output or subgraph reads it. The
// consumers round their input to bf16 anyway (when they pack it), so an input stored as bf16 is
// the same numbers; a residual stored as bf16 is rounded once more (docs/bf16.md).
std::set<const Value*> bf16Activations(const Graph& g, const loop::LowerOptions& lower) {
  std::set<const Value*> out;
  if (!lower.bf16) return out;
  loop::LowerOptions probe = lower;
  probe.probe = true;
  std::map<const Node*, loop::Bf16ConvIo> convs;
  for (const auto& np : g.nodes) {
    std::string why;
    try {
      if (auto ln = loop::lowerNode(*np, "probe", &why, probe))
        if (auto io = loop::bf16ConvIo(*ln)) convs[np.get()] = *io;
    } catch (const Error&) {
    }
  }
  std::map<const Value*, std::vector<const Node*>> readers;
  std::set<const Value*> excluded(g.outputs.begin(), g.outputs.end());
  // What bodies (If branches, Loop/Scan) read of the enclosing graph stays f32.
  std::function<void(const Node&)> bodyReads = [&](const Node& n) {
    for (const Graph* b : bodiesOf(n)) {
      excluded.insert(b->outputs.begin(), b->outputs.end());
      for (const auto& inner : b->nodes) {
        excluded.insert(inner->inputs.begin(), inner->inputs.end());
        bodyReads(*inner);
      }
    }
  };
  for (const auto& np : g.nodes) {
    for (const Value* v : np->inputs)
      if (v) readers[v].push_back(np.get());
    bodyReads(*np);
  }
  for (const auto& [c, io] : convs) {
    const Value* v = io.y;
    if (!(io.caps & kernels::kBf16Output) || excluded.count(v) || v->type.dtype != DType::F32 ||
        !readers.count(v))
      continue;
    bool ok = true;
    for (const Node* r : readers[v]) {
      auto it = convs.find(r);
      ok = ok && it != convs.end() && (it->second.x == v || it->second.residual == v) &&
           (it->second.x != v || (it->second.caps & kernels::kBf16Input)) &&
           (it->second.residual != v || (it->second.caps & kernels::kBf16Residual));
    }
    if (ok) out.insert(v);
  }
  return out;
}

class Builder {
public:
  Builder(ArtifactSpec& spec, const loop::LowerOptions& lower, const loop::PerSampleContext& ctx,
          const std::map<const Node*, std::set<std::string>>& dataProducers)
      : spec_(spec), lower_(lower), ctx_(ctx), dataProducers_(dataProducers) {}

  // Emits the tasks of s.g; returns the end of the arena part s and its branches use.
  int64_t emit(const Scope& s) {
    int64_t end = s.base + s.plan.arenaBytes, branchesEnd = end;
    for (const auto& np : s.g->nodes) {
      if (np->op == "If" && np->domain.empty())
        branchesEnd = std::max(branchesEnd, emitIf(s, *np, end));
      else if ((np->op == "Loop" || np->op == "Scan") && np->domain.empty())
        branchesEnd = std::max(branchesEnd, emitLoop(s, *np, end));
      else if (producesInPlace(s.plan, *np)) // views and Concats in place need no code
        ++spec_.nodesInPlace;
      else
        emitCall(s, *np);
    }
    return branchesEnd;
  }

  Binding bind(const Scope& s, const Value* v) {
    if (v->constant) // also those of fused bodies, whose graphs are no scope here
      return {Region::Weights, constantAt(v), describe(v, "constant").bytes()};
    const Scope* sc = &s;
    while (sc && sc->g != v->owner) sc = sc->parent;
    AICC_CHECK(sc, "'{}': internal: value outside every enclosing graph", v->name);
    int64_t bytes = isDynamic(v) ? 0 : describe(v, "value").bytes();
    if (lower_.bf16Activations && lower_.bf16Activations->count(v)) bytes /= 2;
    ValueHome h = homeOf(*sc->g, sc->plan, v);
    switch (h.storage) {
    case MemStorage::Arena: return {Region::Arena, sc->base + h.offset, bytes};
    case MemStorage::Weight: return {Region::Weights, constantAt(h.root), bytes};
    case MemStorage::Input: // (a loop body's input: its slot)
      if (sc->parent) return {sc->inputs.at(h.input).region, sc->inputs.at(h.input).offset, bytes};
      return {Region::Input, int64_t(h.input), bytes};
    case MemStorage::Dynamic:
      if (v->type.isTensor() && v->type.dtype != DType::String) runtimeShapes.insert(v);
      return {Region::Dynamic, sc->slotBase + h.offset, 0};
    }
    fail("'{}': internal: bad storage", v->name);
  }

  std::vector<std::string> missing, failBranches;
  int64_t slots = 0; // dynamic slots handed out so far (every scope's)
  std::set<const Value*> runtimeShapes; // bound dynamic tensors of numbers

private:
  int64_t place(const Tensor& t) {
    int64_t at = aligned(int64_t(spec_.weights.size()));
    spec_.weights.resize(size_t(at + int64_t(t.nbytes())));
    std::memcpy(spec_.weights.data() + at, t.raw(), t.nbytes());
    return at;
  }
  // The blob holds only what some task or output reads: constants are placed on first use (a
  // weight read only through its packed form is not stored twice).
  int64_t constantAt(const Value* c) {
    auto [it, fresh] = weightAt_.emplace(c, 0);
    if (fresh) it->second = place(*c->constant);
    return it->second;
  }

  void push(ArtifactTask t, std::string op, std::string schedule) {
    spec_.tasks.push_back(std::move(t));
    spec_.schedules.push_back({std::move(op), std::move(schedule)});
  }

  // Why node n reads or writes a dynamic value, or "".
  static std::string dynamicIo(const Node& n) {
    for (const auto* vs : {&n.inputs, &n.outputs})
      for (const Value* v : *vs)
        if (isDynamic(v) || embedded(v))
          return fmt::format("'{}' is {}: {}", v->name, formatType(v->type),
                             v->type.dtype == DType::String ? "strings are not compiled"
                                                            : "no static size");
    return "";
  }

  void emitCall(const Scope& s, const Node& n) {
    std::string why = dynamicIo(n), name = "task" + std::to_string(spec_.code.funcs.size());
    std::optional<loop::LoweredNode> ln;
    const bool symbolic = !ctx_.symbols.empty() && loop::hasSymbolicValues(n, ctx_);
    try {
      if (why.empty())
        ln = symbolic ? loop::lowerPerSample(n, name, lower_, ctx_, &why)
                      : loop::lowerNode(n, name, &why, lower_);
    } catch (const Error& e) {
      why = e.what();
    }
    // A data symbol's producer: compiled only when its task writes the symbol (lowerSymbolic
    // checks that too), else its reference kernel does.
    if (auto it = dataProducers_.find(&n); ln && it != dataProducers_.end())
      for (const std::string& x : it->second)
        if (std::find(ln->dataSymbols.begin(), ln->dataSymbols.end(), x) == ln->dataSymbols.end()) {
          why = fmt::format("its lowering does not compute the data-dependent dim {}", x);
          ln.reset();
        }
    if (!ln) {
      if (const std::vector<const Value*> outer = outerReads(n); canFallBack(n, outer))
        emitFallback(s, n, outer, why);
      else
        missing.push_back(n.describe() + ": " + why);
      return;
    }
    auto msgs = loop::verifyMessages(ln->func);
    AICC_CHECK(msgs.empty(), "{}: lowering produced invalid loop IR: {}", n.describe(), msgs[0]);
    ArtifactTask t;
    t.fn = name;
    t.node = n.describe();
    t.source = &n;
    for (const Value* v : n.outputs)
      if (v) t.results.push_back({v, bind(s, v)});
    int64_t scratch = 0;
    for (const loop::Buffer& b : ln->func.params) {
      const Value* v = ln->valueOf(b.name);
      const Tensor* c = ln->constantOf(b.name);
      int64_t bytes = b.numel() * int64_t(dtypeSize(b.dtype));
      if (b.name == ln->symbolsParam) {
        t.params.push_back({Region::Symbols, 0, bytes});
      } else if (v) {
        AICC_CHECK(!lower_.bf16Activations || !lower_.bf16Activations->count(v) ||
                       b.dtype == DType::BF16,
                   "{}: internal: '{}' is stored as bf16 but lowered as {}", n.describe(), v->name,
                   dtypeName(b.dtype));
        t.params.push_back(bind(s, v));
      } else if (c) { // packed at compile time
        spec_.packedBytes += c->nbytes();
        t.params.push_back({Region::Weights, place(*c), int64_t(c->nbytes())});
      } else { // a temp: this task's scratch
        t.params.push_back({Region::Scratch, scratch, bytes});
        scratch = aligned(scratch + bytes);
      }
    }
    spec_.scratchBytes = std::max(spec_.scratchBytes, scratch);
    // Every task says its precision (the report's view): the bf16 and int8 lowerings say so
    // themselves; the rest compute in their result's type.
    auto& sch = ln->func.schedule;
    if (!sch.count("precision"))
      sch["precision"] = n.outputs.empty() || !n.outputs[0]
                             ? std::string("none")
                             : std::string(dtypeName(n.outputs[0]->type.dtype));
    push(std::move(t), loop::opLabel(n), loop::printSchedule(sch));
    spec_.code.funcs.push_back(std::move(ln->func));
  }

  // What graph g (with those nested in it) reads that `own` does not hold, in first-read order.
  static void readsOutside(const Graph& g, const std::set<const Value*>& own,
                           std::vector<const Value*>& out) {
    auto note = [&](const Value* v) {
      if (v && !own.count(v) && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    };
    for (const auto& n : g.nodes) {
      for (const Value* v : n->inputs) note(v);
      for (const Graph* b : bodiesOf(*n)) readsOutside(*b, own, out);
    }
    for (const Value* v : g.outputs) note(v);
  }
  // The enclosing graph's values a node's bodies read: the node printed alone declares them (as
  // inputs after its own, or as constants) under their names, so the bodies' references resolve.
  static std::vector<const Value*> outerReads(const Node& n) {
    std::set<const Value*> own;
    std::vector<const Value*> out;
    for (const Graph* b : bodiesOf(n)) {
      std::vector<Value*> vs;
      definedValues(*b, vs);
      own.insert(vs.begin(), vs.end());
    }
    for (const Graph* b : bodiesOf(n)) readsOutside(*b, own, out);
    return out;
  }
  static std::string inputName(size_t i) { return "in" + std::to_string(i); }
  static std::string outputName(size_t k) { return "out" + std::to_string(k); }

  // A node the reference kernel can run on its bindings (planned buffers and dynamic slots), what
  // its bodies (Scan, Loop, If) read of the enclosing graph under names that do not clash with
  // the printed node's own.
  static bool canFallBack(const Node& n, const std::vector<const Value*>& outer) {
    if (!n.def || !n.def->kernel) return false;
    for (const Value* v : outer)
      for (size_t i = 0; i < std::max(n.inputs.size(), n.outputs.size()); ++i)
        if (v->name == inputName(i) || v->name == outputName(i)) return false;
    return true;
  }

  // The node alone as a model in the IR text form: inputs in0.., then the enclosing values its
  // bodies read (constants stay constants), results out0.. (omitted ones stay omitted), with its
  // attributes.
  static std::string nodeAsModel(const Node& n, const std::vector<const Value*>& outer) {
    Model m;
    m.graph = std::make_shared<Graph>();
    Graph& g = *m.graph;
    g.name = "fallback";
    std::vector<Value*> ins;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Value* x = n.inputs[i];
      ins.push_back(!x            ? nullptr
                    : embedded(x) ? g.addConstant(inputName(i), *x->constant)
                                  : g.addInput(inputName(i), x->type));
    }
    for (const Value* v : outer) {
      if (v->constant)
        g.addConstant(v->name, *v->constant);
      else
        g.addInput(v->name, v->type);
    }
    std::vector<std::string> outs;
    for (size_t k = 0; k < n.outputs.size(); ++k) outs.push_back(n.outputs[k] ? outputName(k) : "");
    Node* c = g.addNode(n.op, ins, outs, n.domain);
    c->name = n.name;
    c->attrs = n.attrs;
    c->def = n.def;
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (c->outputs[k]) {
        c->outputs[k]->type = n.outputs[k]->type;
        g.outputs.push_back(c->outputs[k]);
      }
    PrintOptions po;
    po.printConstants = true;
    return printModel(m, po);
  }

  // `outer`: outerReads(n). A node with symbolic values is printed with its symbolic types and
  // binds the shape block last: the reference kernel runs at the run's sizes (rt/artifact.h
  // FallbackProvider), and writes the data symbols its results have.
  void emitFallback(const Scope& s, const Node& n, const std::vector<const Value*>& outer,
                    const std::string& why) {
    const bool symbolic = !ctx_.symbols.empty() && loop::hasSymbolicValues(n, ctx_);
    std::string text;
    {
      loop::TypeSwap symbolicTypes; // (the graph's types are the bound's while building)
      auto restore = [&](Value* v) {
        if (v && ctx_.types)
          if (auto it = ctx_.types->find(v); it != ctx_.types->end())
            symbolicTypes.set(v, it->second);
      };
      for (const auto* vs : {&n.inputs, &n.outputs})
        for (Value* v : *vs) restore(v);
      for (const Value* v : outer) restore(const_cast<Value*>(v));
      for (const Graph* b : bodiesOf(n)) {
        std::vector<Value*> vs;
        definedValues(*b, vs);
        for (Value* v : vs) restore(v);
      }
      text = nodeAsModel(n, outer);
    }
    ArtifactTask t{ArtifactTask::Kind::Fallback, text, n.describe(), {}, 0, 0, &n, {}};
    for (const Value* v : n.inputs)
      if (v && !embedded(v)) t.params.push_back(bind(s, v));
    for (const Value* v : outer) // (in nodeAsModel's order; constants are printed)
      if (!v->constant) t.params.push_back(bind(s, v));
    for (const Value* v : n.outputs)
      if (v) t.params.push_back(bind(s, v));
    if (symbolic) t.params.push_back({Region::Symbols, 0, int64_t(8 * spec_.symbols.size())});
    for (const Value* v : n.outputs)
      if (v) t.results.push_back({v, bind(s, v)});
    spec_.fallbacks.push_back(n.describe() + ": " + why);
    push(std::move(t), loop::opLabel(n), "fallback (reference kernel): " + why);
  }

  // Returns the end of the arena region the branches use (from base).
  int64_t emitIf(const Scope& s, const Node& n, int64_t base) {
    const Graph* br[2] = {branchOf(n, "then_branch"), branchOf(n, "else_branch")};
    bool ok = br[0] && br[1] && n.hasInput(0);
    for (const Value* o : n.outputs)
      ok = ok && o && o->type.isTensor() && o->type.shape && toDims(*o->type.shape);
    // A branch that does not resolve at the symbols' bounds may at a run's sizes: the whole If
    // runs at the run's sizes then.
    const bool symbolic = !ctx_.symbols.empty() && loop::hasSymbolicValues(n, ctx_);
    for (const Graph* b : br) ok = ok && !(symbolic && b && unresolvedShape(*b));
    if (!ok) { // the whole If through the interpreter
      const std::string why = "only an If with two input-less branches and results of static "
                              "size is compiled";
      if (const std::vector<const Value*> outer = outerReads(n); canFallBack(n, outer))
        emitFallback(s, n, outer, why);
      else
        missing.push_back(n.describe() + ": " + why);
      return base;
    }
    const size_t jz = spec_.tasks.size();
    push({ArtifactTask::Kind::JumpIfZero,
          "",
          n.describe(),
          {bind(s, n.inputs[0])},
          0,
          0,
          nullptr,
          {}},
         "If", "jumpz to else_branch");
    int64_t end = emitBranch(s, n, *br[0], "then_branch", base);
    const size_t j = spec_.tasks.size();
    push({ArtifactTask::Kind::Jump, "", n.describe(), {}, 0, 0, nullptr, {}}, "If",
         "jump past else_branch");
    spec_.tasks[jz].target = int64_t(spec_.tasks.size());
    end = std::max(end, emitBranch(s, n, *br[1], "else_branch", base));
    spec_.tasks[j].target = int64_t(spec_.tasks.size());
    return end;
  }

  int64_t emitBranch(const Scope& s, const Node& n, const Graph& b, const char* which,
                     int64_t base) {
    const std::string where = n.describe() + " " + which;
    if (auto why = unresolvedShape(b)) { // (with symbols, emitIf made the If a fallback)
      failBranches.push_back(where + ": " + *why);
      push({ArtifactTask::Kind::Fail, "", where + " cannot run: " + *why, {}, 0, 0, nullptr, {}},
           "If", "fail (branch not compiled)");
      return base;
    }
    Scope bs{&b, planMemory(b), base, &s, slots, {}};
    slots += bs.plan.dynamicValues;
    int64_t end = emit(bs);
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      Binding from = bind(bs, b.outputs[k]), to = bind(s, n.outputs[k]);
      AICC_CHECK(from.region != Region::Dynamic, "{}: result {} has no static size ({})", where, k,
                 formatType(b.outputs[k]->type));
      AICC_CHECK(from.bytes == to.bytes, "{}: result {} has {} bytes, the If's {}", where, k,
                 from.bytes, to.bytes);
      push({ArtifactTask::Kind::Copy, "", where, {from, to}, 0, 0, nullptr, {}}, "If",
           "copy branch result");
    }
    return end;
  }

  // A Loop or Scan whose values all have static sizes (a Loop's scan outputs may have its
  // iteration count as a data symbol) as a `repeat` region: the body planned like an If branch
  // from `base`, its graph inputs in arena slots after it. Returns the end of what it uses (any
  // other Loop or Scan runs on its reference kernel, the reason in the report).
  //   copy initial states (and a Loop's condition) into the body's input slots
  //   repeat count, index[, condition][, iterations] @END
  //     Scan: each scan input's slice i into its slot     (sliceCopyFunc)
  //     <the body's tasks>
  //     the new states (and condition) into the slots    (through staging where a result is
  //                                                        another input's slot)
  //     each scan result into row i of its output          (sliceCopyFunc)
  //   END: copy the final states out
  int64_t emitLoop(const Scope& s, const Node& n, int64_t base) {
    const bool scan = n.op == "Scan";
    auto refuse = [&](const std::string& why) {
      if (const std::vector<const Value*> outer = outerReads(n); canFallBack(n, outer))
        emitFallback(s, n, outer, why);
      else
        missing.push_back(n.describe() + ": " + why);
      return base;
    };
    const Attribute* a = n.attr("body");
    const GraphPtr* bp = a ? std::get_if<GraphPtr>(&a->v) : nullptr;
    const Graph* body = bp ? bp->get() : nullptr;
    const size_t N0 =
        scan ? n.inputs.size() - size_t(n.attrInt("num_scan_inputs")) : n.inputs.size() - 2;
    if (!body || body->inputs.size() != (scan ? n.inputs.size() : N0 + 2) ||
        body->outputs.size() != (scan ? n.outputs.size() : n.outputs.size() + 1))
      return refuse("a body that does not match its inputs and outputs");
    if (auto why = unresolvedShape(*body)) return refuse("its body: " + *why);
    // Static sizes only, but for a Loop's iteration count (its data symbol, written by the
    // repeat task).
    std::string iterations; // the data symbol
    const size_t N = N0;    // states
    for (size_t k = N; !scan && k < n.outputs.size(); ++k)
      if (const Value* o = n.outputs[k];
          o && ctx_.typeOf(o).shape && !ctx_.typeOf(o).shape->empty())
        if (const Dim& d = ctx_.typeOf(o).shape->front(); !d.isStatic()) iterations = d.symbol;
    std::vector<Value*> vals;
    definedValues(*body, vals);
    for (const auto* vs : {&n.inputs, &n.outputs})
      for (Value* v : *vs)
        if (v) vals.push_back(v);
    for (const Value* v : vals) {
      if (v->constant) continue;
      if (!v->type.isTensor() || !v->type.shape || !toDims(*v->type.shape) || isDynamic(v) ||
          v->type.dtype == DType::String)
        return refuse(fmt::format("'{}' is {}: a loop is compiled with values of static size",
                                  v->name, formatType(v->type)));
      const Type& t = ctx_.typeOf(v);
      for (size_t k = 0; k < t.shape->size(); ++k)
        if (!(*t.shape)[k].isStatic() &&
            !(k == 0 && !iterations.empty() && (*t.shape)[k].symbol == iterations))
          return refuse(fmt::format("'{}' is {}: a loop is compiled with static sizes", v->name,
                                    formatType(t)));
    }
    auto bytesOf = [](const Value* v) { return describe(v, "value").bytes(); };
    int64_t count = 0, limit = 0; // a Scan's trip count; the most iterations planned
    std::vector<int64_t> axes, dirs, outAxes, outDirs;
    if (scan) {
      const size_t M = n.inputs.size() - N;
      axes = n.attrInts("scan_input_axes", std::vector<int64_t>(M, 0));
      dirs = n.attrInts("scan_input_directions", std::vector<int64_t>(M, 0));
      const size_t K = n.outputs.size() - N;
      outAxes = n.attrInts("scan_output_axes", std::vector<int64_t>(K, 0));
      outDirs = n.attrInts("scan_output_directions", std::vector<int64_t>(K, 0));
      if (M == 0 || axes.size() != M || dirs.size() != M || outAxes.size() != K ||
          outDirs.size() != K)
        return refuse("scan axes or directions that do not match its inputs and outputs");
      for (size_t m = 0; m < M; ++m) {
        const Dims d = *toDims(*n.inputs[N + m]->type.shape);
        const int64_t a = axes[m] < 0 ? axes[m] + int64_t(d.size()) : axes[m];
        if (a < 0 || a >= int64_t(d.size()) || (m && d[size_t(a)] != count))
          return refuse("scan inputs of different lengths");
        axes[m] = a, count = d[size_t(a)];
      }
      for (size_t k = 0; k < K; ++k) {
        const int64_t r = int64_t(n.outputs[N + k]->type.shape->size());
        outAxes[k] = outAxes[k] < 0 ? outAxes[k] + r : outAxes[k];
        if (outAxes[k] < 0 || outAxes[k] >= r) return refuse("a scan output axis out of range");
      }
      if (count < 1) return refuse("no iteration");
      limit = count;
    } else {
      // (scan outputs: rows for the iterations planned, the output's dim 0 at its bound; the
      // rows a run writes must be its dim: a data symbol, or a fixed count run to the end)
      const Value* m = n.hasInput(0) ? n.inputs[0] : nullptr;
      const bool alwaysOn =
          !n.hasInput(1) || (n.inputs[1]->constant && n.inputs[1]->constant->getI64(0) != 0);
      limit = std::numeric_limits<int64_t>::max();
      for (size_t k = N; k < n.outputs.size(); ++k) {
        if (!n.outputs[k]) continue;
        const int64_t rows = toDims(*n.outputs[k]->type.shape)->front();
        if (iterations.empty() &&
            !(m && m->constant && m->constant->getI64(0) == rows && alwaysOn &&
              body->outputs[0]->constant && body->outputs[0]->constant->getI64(0) != 0))
          return refuse("scan outputs whose row count is neither a data-dependent dim nor the "
                        "fixed trip count");
        limit = std::min(limit, rows);
      }
    }
    // The body's input slots from `base`, then its plan (and what it nests after that, then the
    // staging of results that are inputs).
    int64_t end = aligned(base);
    auto slot = [&](int64_t bytes) {
      const Binding b{Region::Arena, end, bytes};
      end = aligned(end + std::max<int64_t>(bytes, 1));
      return b;
    };
    std::vector<Binding> inputSlots;
    for (const Value* in : body->inputs) inputSlots.push_back(slot(bytesOf(in)));
    const Binding index = scan ? slot(8) : inputSlots[0];
    Scope bs{body, planMemory(*body), end, &s, slots, std::move(inputSlots)};
    slots += bs.plan.dynamicValues;
    end = aligned(bs.base + bs.plan.arenaBytes);
    std::vector<ArtifactTask> pre; // before the repeat
    auto copy = [&](std::vector<ArtifactTask>& to, Binding from, Binding into) {
      if (from.region != into.region || from.offset != into.offset)
        to.push_back({ArtifactTask::Kind::Copy, "", n.describe(), {from, into}, 0, 0, nullptr, {}});
    };
    const size_t first = scan ? 0 : 2; // the body's first state input
    for (size_t k = 0; k < N; ++k)
      copy(pre, bind(s, n.inputs[scan ? k : k + 2]), bs.inputs[first + k]);
    Binding countAt;
    std::vector<Binding> repeatParams;
    auto constantI64 = [&](int64_t v) {
      return Binding{Region::Weights, place(Tensor::fromI64({v})), 8};
    };
    if (scan) {
      countAt = constantI64(count);
      repeatParams = {countAt, index};
    } else {
      countAt = n.hasInput(0) ? bind(s, n.inputs[0]) : constantI64(limit);
      Tensor on(DType::Bool, {});
      on.setI64(0, 1);
      copy(pre, n.hasInput(1) ? bind(s, n.inputs[1]) : Binding{Region::Weights, place(on), 1},
           bs.inputs[1]);
      repeatParams = {countAt, index, bs.inputs[1]};
      if (!iterations.empty())
        repeatParams.push_back({Region::Symbols, 8 * ctx_.symbols.at(iterations).slot, 8});
    }
    if (countAt.bytes != 8) return refuse("a trip count that is not one int64");
    for (ArtifactTask& t : pre) push(std::move(t), n.op, "copy initial state");
    const size_t repeatAt = spec_.tasks.size();
    push({ArtifactTask::Kind::Repeat, "", n.describe(), repeatParams, 0, limit, nullptr, {}}, n.op,
         scan ? fmt::format("repeat {} times", count) : "repeat while the condition holds");
    auto call = [&](loop::Func f, std::vector<Binding> params, const char* what) {
      const std::string fn = "task" + std::to_string(spec_.code.funcs.size());
      f.name = fn;
      auto msgs = loop::verifyMessages(f);
      AICC_CHECK(msgs.empty(), "{}: {} produced invalid loop IR: {}", n.describe(), what, msgs[0]);
      ArtifactTask t{ArtifactTask::Kind::Call, fn, n.describe(), std::move(params), 0, 0, &n, {}};
      push(std::move(t), n.op, what);
      spec_.code.funcs.push_back(std::move(f));
    };
    if (scan)
      for (size_t m = 0; N + m < n.inputs.size(); ++m) {
        const Value* x = n.inputs[N + m];
        call(loop::sliceCopyFunc("", x->type.dtype, *toDims(*x->type.shape), size_t(axes[m]),
                                 dirs[m] != 0, true),
             {bind(s, x), bs.inputs[N + m], index}, "scan slice in");
      }
    end = std::max(end, emit(bs));
    // The new states (a Loop's condition first): staged where a result is an input's slot.
    std::vector<std::pair<Binding, Binding>> updates; // from, into
    if (!scan) updates.push_back({bind(bs, body->outputs[0]), bs.inputs[1]});
    for (size_t k = 0; k < N; ++k)
      updates.push_back({bind(bs, body->outputs[scan ? k : k + 1]), bs.inputs[first + k]});
    std::vector<ArtifactTask> staged, direct, unstage;
    for (auto& [from, into] : updates) {
      const bool isInput = std::any_of(bs.inputs.begin(), bs.inputs.end(), [&](const Binding& b) {
        return b.region == from.region && b.offset == from.offset;
      });
      if (!isInput) {
        copy(direct, from, into);
      } else if (from.offset != into.offset || from.region != into.region) {
        const Binding tmp = slot(from.bytes);
        copy(staged, from, tmp);
        copy(unstage, tmp, into);
      }
    }
    for (auto* list : {&staged, &direct, &unstage})
      for (ArtifactTask& t : *list) push(std::move(t), n.op, "copy state");
    const size_t K = n.outputs.size() - N;
    for (size_t k = 0; k < K; ++k) {
      const Value* y = n.outputs[N + k];
      if (!y) continue;
      const Value* part = body->outputs[(scan ? N : N + 1) + k];
      call(loop::sliceCopyFunc("", y->type.dtype, *toDims(*y->type.shape),
                               scan ? size_t(outAxes[k]) : 0, scan && outDirs[k] != 0, false),
           {bind(s, y), bind(bs, part), index}, "scan slice out");
    }
    spec_.tasks[repeatAt].target = int64_t(spec_.tasks.size());
    for (size_t k = 0; k < N; ++k)
      if (n.outputs[k]) {
        std::vector<ArtifactTask> out;
        copy(out, bs.inputs[first + k], bind(s, n.outputs[k]));
        for (ArtifactTask& t : out) push(std::move(t), n.op, "copy final state");
      }
    return end;
  }

  ArtifactSpec& spec_;
  const loop::LowerOptions& lower_;
  const loop::PerSampleContext& ctx_;
  const std::map<const Node*, std::set<std::string>>& dataProducers_; // (addDataSymbols)
  std::map<const Value*, int64_t> weightAt_;
};

} // namespace

namespace {

// The input symbol an input's dim is: a plain symbol, or step * stepSymbol(S, step) for a
// symbol S of `ranges` with that step (passes/dim_steps.h); nullopt otherwise.
std::optional<std::string> inputSymbolOf(const Dim& d, const std::vector<rt::Symbol>& ranges) {
  if (d.isStatic() || d.symbol.empty()) return std::nullopt;
  if (!d.derived) return d.symbol;
  for (const rt::Symbol& r : ranges)
    if (r.step > 1 && dimExpr(d) == steppedDim(r.name, r.step)) return r.name;
  return std::nullopt;
}

// A derived dim as a program over the symbols' values (rt::TensorDesc::exprs), the stepped
// symbols' "S/step" read as S / step; nullopt when it reads anything else.
std::optional<std::vector<int64_t>> dimProgram(const Dim& d,
                                               const std::vector<rt::Symbol>& symbols) {
  const auto e = dimExpr(d);
  if (!e) return std::nullopt;
  bool ok = true;
  DimAlgebra<std::vector<int64_t>> f;
  f.constant = [](int64_t c) { return std::vector<int64_t>{rt::kDimConst, c}; };
  f.symbol = [&](const std::string& x) {
    for (size_t k = 0; k < symbols.size(); ++k) {
      if (symbols[k].name == x) return std::vector<int64_t>{rt::kDimSymbol, int64_t(k)};
      if (symbols[k].step > 1 && stepSymbol(symbols[k].name, symbols[k].step) == x)
        return std::vector<int64_t>{rt::kDimSymbol, int64_t(k), rt::kDimDiv, symbols[k].step};
    }
    ok = false;
    return std::vector<int64_t>{rt::kDimConst, 0};
  };
  auto both = [](int64_t op) {
    return [op](const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
      std::vector<int64_t> r = a;
      r.insert(r.end(), b.begin(), b.end());
      r.insert(r.end(), {op, 0});
      return r;
    };
  };
  f.add = both(rt::kDimAdd);
  f.mul = both(rt::kDimMul);
  f.floorDiv = [](const std::vector<int64_t>& a, int64_t k) {
    std::vector<int64_t> r = a;
    r.insert(r.end(), {rt::kDimDiv, k});
    return r;
  };
  std::vector<int64_t> prog = e->fold(f);
  if (!ok || prog.size() / 2 > rt::kMaxDimProgram) return std::nullopt;
  return prog;
}

// The symbols of g's tensor inputs (in order of appearance) with their ranges: those given, else
// 1..kDefaultSymbolBound for a batch (a symbol only ever dim 0 of the inputs) and
// 1..kDefaultSizeBound for a length or an image side.
std::vector<rt::Symbol> inputSymbols(const Graph& g, const std::vector<rt::Symbol>& ranges) {
  std::vector<rt::Symbol> out;
  std::set<std::string> sizes; // the symbols that are some input's dim > 0
  for (const Value* v : g.inputs) {
    // (Strings are opaque to the runtime, so they give no symbol its value: what has their
    // symbols is of run-time size.)
    if (!v->type.isTensor() || !v->type.shape || v->type.dtype == DType::String) continue;
    for (size_t k = 0; k < v->type.shape->size(); ++k) {
      const auto name = inputSymbolOf((*v->type.shape)[k], ranges);
      if (!name) continue;
      if (k > 0) sizes.insert(*name);
      auto has = [&](const rt::Symbol& s) { return s.name == *name; };
      if (std::any_of(out.begin(), out.end(), has)) continue;
      auto r = std::find_if(ranges.begin(), ranges.end(), has);
      out.push_back(r != ranges.end() ? *r : rt::Symbol{*name, 1, 0});
    }
  }
  for (rt::Symbol& s : out)
    if (s.hi == 0) s.hi = sizes.count(s.name) ? kDefaultSizeBound : kDefaultSymbolBound;
  return out;
}

// The symbols' values as the graph's dims read them (symbolMap) at their upper or lower ends.
// (Data symbols are at their hi at both ends: the run decides them, the dims the model takes
// are not theirs to check.)
std::map<std::string, int64_t> symbolValues(const std::vector<rt::Symbol>& symbols, bool atHi) {
  return symbolMap(symbols, [&](size_t k) {
    const rt::Symbol& s = symbols[k];
    return atHi || s.data ? s.hi : (s.lo + s.step - 1) / s.step * s.step;
  });
}

// The first dim of `values` below `least` with the symbols at `at`: its value, dim and size.
std::optional<std::tuple<const Value*, std::string, int64_t>>
dimBelow(const std::vector<Value*>& values, const std::map<std::string, int64_t>& at,
         int64_t least) {
  for (const Value* v : values)
    if (v->type.isTensor() && v->type.shape)
      for (const Dim& d : *v->type.shape)
        if (auto e = dimExpr(d); e && !d.isStatic())
          if (auto x = e->evaluate(at); x && *x < least) return std::tuple{v, d.symbol, *x};
  return std::nullopt;
}

// A default range starts at the smallest size the model takes (an audio model's input of 16
// samples has a negative number of frames, or none): each defaulted symbol's lo is raised until
// no dim is below 1 with every symbol at its lo (dims never shrink as a symbol grows: checked
// below).
void raiseDefaultLowerEnds(std::vector<rt::Symbol>& symbols, const std::vector<rt::Symbol>& given,
                           const std::vector<Value*>& values) {
  for (rt::Symbol& s : symbols) {
    if (std::any_of(given.begin(), given.end(),
                    [&](const rt::Symbol& r) { return r.name == s.name; }))
      continue;
    int64_t lo = s.lo, hi = s.hi;
    auto fits = [&](int64_t v) {
      const int64_t keep = s.lo;
      s.lo = v;
      const bool ok = !dimBelow(values, symbolValues(symbols, false), 1);
      s.lo = keep;
      return ok;
    };
    if (fits(lo) || !fits(hi)) continue;
    while (lo + 1 < hi) { // fits(hi), not fits(lo)
      const int64_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? hi : lo) = mid;
    }
    s.lo = hi;
  }
}

// The data symbols of g (passes/data_dims.h), after `symbols` (the inputs'), in the order their
// producers run: each 0..its bound at the symbols' upper ends; and the nodes producing them.
std::map<const Node*, std::set<std::string>> addDataSymbols(const Graph& g,
                                                            std::vector<rt::Symbol>& symbols) {
  std::map<const Node*, std::set<std::string>> producers;
  for (const auto& np : g.nodes)
    for (const Value* v : np->outputs) {
      if (!v || !v->type.isTensor() || !v->type.shape) continue;
      for (const Dim& d : *v->type.shape) {
        if (d.isStatic() || d.derived || d.symbol.empty() ||
            std::any_of(symbols.begin(), symbols.end(),
                        [&](const rt::Symbol& s) { return s.name == d.symbol; }))
          continue;
        const auto ds = dataSymbolOf(g, d.symbol);
        if (!ds || ds->producer != np.get()) continue;
        const auto e = dimExpr(ds->bound);
        const auto hi = e ? e->evaluate(symbolValues(symbols, true)) : std::nullopt;
        if (!hi) continue; // (stays a value of run-time size)
        symbols.push_back({d.symbol, 0, std::max<int64_t>(*hi, 1), 1, true});
        producers[np.get()].insert(d.symbol);
      }
    }
  return producers;
}

// An input or output with its symbolic dims (by `symbolic`, its type with symbols) named.
TensorDesc describeSymbolic(const Value* v, const Type& symbolic, const char* what, Io io,
                            const std::vector<rt::Symbol>& symbols) {
  TensorDesc t = describe(v, what, io);
  if (!t.dynamic.empty()) t.dynamic = formatType(symbolic); // (strings: any size of the symbols)
  if (!t.dynamic.empty() || !symbolic.shape) return t;
  for (size_t k = 0; k < symbolic.shape->size(); ++k) {
    const Dim& d = (*symbolic.shape)[k];
    if (d.isStatic()) continue;
    const auto name = inputSymbolOf(d, symbols);
    auto it = std::find_if(symbols.begin(), symbols.end(),
                           [&](const rt::Symbol& s) { return name && s.name == *name; });
    if (it == symbols.end() && io == Io::Output)
      if (auto prog = dimProgram(d, symbols)) { // a derived dim: its program over the symbols
        t.exprs.resize(t.dims.size());
        t.exprs[k] = std::move(*prog);
        continue;
      }
    AICC_CHECK(it != symbols.end(),
               "{} '{}' is {}: its dim {} is not a symbol of the inputs; fix the symbols with "
               "--dim NAME=VALUE",
               what, v->name, formatType(symbolic), k);
    t.syms.resize(t.dims.size(), -1);
    t.syms[k] = int32_t(it - symbols.begin());
  }
  return t;
}

} // namespace

ArtifactSpec buildArtifact(const Graph& g, const loop::LowerOptions& lower,
                           const std::vector<rt::Symbol>& ranges) {
  ArtifactSpec spec;
  // Symbolic dims: every value at the symbols' upper bounds while planning (the graph's types
  // are restored on return); the nodes that have them lower per sample.
  spec.symbols = inputSymbols(g, ranges);
  for (rt::Symbol& s : spec.symbols) // a stepped range from its first multiple to its last
    if (const int64_t lo = (s.lo + s.step - 1) / s.step * s.step, hi = s.hi / s.step * s.step;
        s.step > 1 && lo <= hi)
      s.lo = lo, s.hi = hi;
  std::vector<Value*> all;
  definedValues(g, all);
  raiseDefaultLowerEnds(spec.symbols, ranges, all);
  const std::map<const Node*, std::set<std::string>> dataProducers =
      addDataSymbols(g, spec.symbols);
  loop::PerSampleContext ctx;
  std::map<const Value*, Type> symbolicTypes;
  loop::TypeSwap atBound;
  if (!spec.symbols.empty()) {
    const std::map<std::string, int64_t> lo = symbolValues(spec.symbols, false),
                                         hi = symbolValues(spec.symbols, true);
    for (size_t k = 0; k < spec.symbols.size(); ++k) {
      const rt::Symbol& s = spec.symbols[k];
      AICC_CHECK(s.lo >= 0 && s.lo <= s.hi, "--dim {}={}..{}: an empty range", s.name, s.lo, s.hi);
      ctx.symbols[s.name] = {int64_t(k), s.hi, s.lo, 1, s.data};
      if (s.step > 1) { // the graph's dims read S / step (passes/dim_steps.h)
        const std::string q = stepSymbol(s.name, s.step);
        AICC_CHECK(lo.at(q) <= hi.at(q), "--dim {}={}..{}: no multiple of {} in the range", s.name,
                   s.lo, s.hi, s.step);
        ctx.symbols[q] = {int64_t(k), hi.at(q), lo.at(q), s.step};
      }
    }
    // A dim negative at the bounds or the lower ends: sizes in the range the model cannot take
    // (an audio length of 16 samples); say so rather than "no static size" at some node.
    for (bool atHi : {true, false})
      if (auto neg = dimBelow(all, atHi ? hi : lo, 0)) {
        const auto& [v, d, x] = *neg;
        fail("'{}' is {}: its dim {} is {} at the symbols' {}; give each symbol the range the "
             "model takes with --dim NAME=LO..HI",
             v->name, formatType(v->type), d, x, atHi ? "upper bounds" : "lower ends");
      }
    for (Value* v : all)
      if (v->type.isTensor() && v->type.shape && !toDims(*v->type.shape)) {
        for (const Dim& d : *v->type.shape) {
          auto e = dimExpr(d);
          if (!e || d.isStatic()) continue;
          // The plan at the bounds holds a smaller run only if no dim grows as a symbol shrinks.
          AICC_CHECK(e->nondecreasing(),
                     "'{}' is {}: its dim {} can grow as a symbol shrinks, so memory planned at "
                     "the symbols' upper bounds would not hold every run; fix the symbols with "
                     "--dim NAME=VALUE",
                     v->name, formatType(v->type), d.symbol);
        }
        symbolicTypes.emplace(v, v->type);
        atBound.set(v, Type::tensor(v->type.dtype, withSymbols(*v->type.shape, hi)));
      }
    ctx.types = &symbolicTypes;
  }
  auto symbolicType = [&](const Value* v) { return ctx.typeOf(v); };
  for (const Value* v : g.inputs)
    spec.inputs.push_back(describeSymbolic(v, symbolicType(v), "input", Io::Input, spec.symbols));
  const std::set<const Value*> bf16 = bf16Activations(g, lower);
  loop::LowerOptions lo = lower;
  lo.bf16Activations = bf16.empty() ? nullptr : &bf16;
  MemoryPlanOptions po;
  po.bf16Values = lo.bf16Activations;
  spec.bf16Activations = int64_t(bf16.size());
  Builder b(spec, lo, ctx, dataProducers);
  Scope top{&g, planMemory(g, po), 0, nullptr, 0, {}};
  b.slots = top.plan.dynamicValues;
  spec.lowerBoundBytes = top.plan.lowerBoundBytes;
  spec.arenaBytes = b.emit(top);
  if (!b.missing.empty()) {
    std::string list;
    for (const auto& m : b.missing) list += "\n  " + m;
    fail("{} node(s) have no compiled lowering, so the model cannot be compiled ahead of time "
         "(`aicc run --engine jit` runs them through the reference kernels):{}",
         b.missing.size(), list);
  }
  spec.failBranches = std::move(b.failBranches);
  for (const Value* o : g.outputs)
    spec.outputs.push_back(
        {describeSymbolic(o, symbolicType(o), "output", Io::Output, spec.symbols), b.bind(top, o)});
  spec.dynamicValues = b.slots;
  spec.runtimeShapes = int64_t(b.runtimeShapes.size());
  return spec;
}

} // namespace aicc::runtime
