// buildArtifact: the optimized graph as a task sequence over one static arena (artifact.h); the
// builder's other parts: artifact_control.cpp (If, Loop, Scan), artifact_symbols.cpp (symbols).
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
#include "runtime/artifact_builder.h"

#include "ir/printer.h"
#include "kernels/gemm.h"
#include "loop/printer.h"
#include "loop/verifier.h"
#include "passes/dim_steps.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace aicc::runtime {

using namespace detail;

namespace {

// What graph g (with those nested in it) reads that `own` does not hold, in first-read order.
void readsOutside(const Graph& g, const std::set<const Value*>& own,
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
std::string inputName(size_t i) { return "in" + std::to_string(i); }
std::string outputName(size_t k) { return "out" + std::to_string(k); }

} // namespace

namespace detail {

MemoryPlanOptions planOptions(const loop::PerSampleContext& ctx) {
  MemoryPlanOptions po;
  po.fixedSize = [&ctx](const Value* v) {
    const Type& t = ctx.typeOf(v);
    return t.isTensor() && t.shape && toDims(*t.shape).has_value();
  };
  po.runSized = [&ctx](const Value* v) { return loop::sizedAtRunTime(ctx.typeOf(v), ctx); };
  return po;
}

int64_t aligned(int64_t x) { return alignUp(x, kArenaAlignment); }

// A value that lives in a dynamic slot (rt/artifact.h, hasDynamicSize). (Constants have static
// sizes; string constants are printed into the fallback tasks that read them.)
bool isDynamic(const Value* v) { return v && !v->constant && hasDynamicSize(v->type); }
bool embedded(const Value* v) { return v && v->constant && v->type.dtype == DType::String; }

// A value of static size, or (a graph input or output) a dynamic one described by its IR type.
TensorDesc describe(const Value* v, const char* what, Io io) {
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

// The enclosing graph's values a node's bodies read: the node printed alone declares them (as
// inputs after its own, or as constants) under their names, so the bodies' references resolve.
std::vector<const Value*> outerReads(const Node& n) {
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

// A node the reference kernel can run on its bindings (planned buffers and dynamic slots), what
// its bodies (Scan, Loop, If) read of the enclosing graph under names that do not clash with
// the printed node's own.
bool canFallBack(const Node& n, const std::vector<const Value*>& outer) {
  if (!n.def || !n.def->kernel) return false;
  for (const Value* v : outer)
    for (size_t i = 0; i < std::max(n.inputs.size(), n.outputs.size()); ++i)
      if (v->name == inputName(i) || v->name == outputName(i)) return false;
  return true;
}

} // namespace detail

namespace {

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

// Why node n reads or writes a dynamic value, or "".
std::string dynamicIo(const Node& n) {
  for (const auto* vs : {&n.inputs, &n.outputs})
    for (const Value* v : *vs)
      if (isDynamic(v) || embedded(v))
        return fmt::format("'{}' is {}: {}", v->name, formatType(v->type),
                           v->type.dtype == DType::String ? "strings are not compiled"
                                                          : "no static size");
  return "";
}

// The node alone as a model in the IR text form: inputs in0.., then the enclosing values its
// bodies read (constants stay constants), results out0.. (omitted ones stay omitted), with its
// attributes.
std::string nodeAsModel(const Node& n, const std::vector<const Value*>& outer) {
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

} // namespace

// Emits the tasks of s.g; returns the end of the arena part s and its branches use.
int64_t Builder::emit(const Scope& s) {
  int64_t end = s.base + s.plan.arenaBytes, branchesEnd = end;
  for (const auto& np : s.g->nodes) {
    if (np->op == "If" && np->domain.empty())
      branchesEnd = std::max(branchesEnd, emitIf(s, *np, end));
    else if ((np->op == "Loop" || np->op == "Scan") && np->domain.empty())
      branchesEnd = std::max(branchesEnd, emitLoop(s, *np, end));
    else if (producesInPlace(s.plan, *np) && toSize(*np).empty()) // (views, Concats in place)
      ++spec_.nodesInPlace;
    else
      emitCall(s, *np);
  }
  return branchesEnd;
}

Binding Builder::bind(const Scope& s, const Value* v) {
  if (v->constant) // also those of fused bodies, whose graphs are no scope here
    return {Region::Weights, constantAt(v), describe(v, "constant").bytes()};
  const Scope* sc = &s;
  while (sc && sc->g != v->owner) sc = sc->parent;
  AICC_CHECK(sc, "'{}': internal: value outside every enclosing graph", v->name);
  int64_t bytes = isDynamic(v) ? 0 : describe(v, "value").bytes();
  if (lower_.bf16Activations && lower_.bf16Activations->count(v)) bytes /= 2;
  ValueHome h = homeOf(*sc->g, sc->plan, v);
  switch (h.storage) {
  case MemStorage::Arena:
    return {Region::Arena, sc->base + h.offset, bytes};
  case MemStorage::Weight:
    return {Region::Weights, constantAt(h.root), bytes};
  case MemStorage::Input: // (a loop body's input: its slot)
    if (sc->parent) return {sc->inputs.at(h.input).region, sc->inputs.at(h.input).offset, bytes};
    return {Region::Input, int64_t(h.input), bytes};
  case MemStorage::Dynamic:
    if (v->type.isTensor() && v->type.dtype != DType::String) runtimeShapes.insert(v);
    return {Region::Dynamic, sc->slotBase + h.offset, 0};
  case MemStorage::Heap:
    return {Region::Heap, sc->heapBase + h.offset, 0};
  }
  fail("'{}': internal: bad storage", v->name);
}

int64_t Builder::addHeaps(const MemoryPlan& plan) {
  const int64_t base = int64_t(spec_.heaps.size());
  spec_.heaps.resize(size_t(base + plan.heapValues));
  for (const PlannedValue& pv : plan.values)
    if (pv.storage == MemStorage::Heap && pv.how == MemHow::Own)
      spec_.heaps[size_t(base + pv.offset)] =
          describeSymbolic(pv.value, ctx_.typeOf(pv.value), "value", Io::Output, spec_.symbols);
  return base;
}

int64_t Builder::place(const Tensor& t) {
  int64_t at = aligned(int64_t(spec_.weights.size()));
  spec_.weights.resize(size_t(at + int64_t(t.nbytes())));
  std::memcpy(spec_.weights.data() + at, t.raw(), t.nbytes());
  return at;
}

// The blob holds only what some task or output reads: constants are placed on first use (a
// weight read only through its packed form is not stored twice).
int64_t Builder::constantAt(const Value* c) {
  auto [it, fresh] = weightAt_.emplace(c, 0);
  if (fresh) it->second = place(*c->constant);
  return it->second;
}

void Builder::push(ArtifactTask t, std::string op, std::string schedule) {
  spec_.tasks.push_back(std::move(t));
  spec_.schedules.push_back({std::move(op), std::move(schedule)});
}

void Builder::emitCall(const Scope& s, const Node& n) {
  // An Identity of a sequence or an optional: the value shared (a copy task, no fallback).
  if (n.op == "Identity" && n.domain.empty() && n.hasInput(0) && n.outputs.size() == 1 &&
      isDynamic(n.inputs[0]) && isDynamic(n.outputs[0]) && !n.inputs[0]->type.isTensor() &&
      !n.outputs[0]->type.isTensor()) {
    push({ArtifactTask::Kind::Copy,
          "",
          n.describe(),
          {bind(s, n.inputs[0]), bind(s, n.outputs[0])},
          0,
          0,
          nullptr,
          {},
          {}},
         n.op, "share the value");
    return;
  }
  std::string why;
  if (emitSeq(s, n, why)) return;
  if (why.empty()) why = dynamicIo(n);
  // Sizes the run sets (data symbols with no bound): a task of their own first, so that the
  // buffers they size have grown when this node's task runs; or this node's fallback sets them.
  const std::set<std::string> sizes = toSize(n);
  if (!sizes.empty() && why.empty() && !emitSizes(s, n, why)) why = "its sizes: " + why;
  std::optional<loop::LoweredNode> ln;
  const bool symbolic = !ctx_.symbols.empty() && loop::hasSymbolicValues(n, ctx_);
  const std::string name = "task" + std::to_string(spec_.code.funcs.size());
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
      if (!ctx_.symbols.at(x).runSized &&
          std::find(ln->dataSymbols.begin(), ln->dataSymbols.end(), x) == ln->dataSymbols.end()) {
        why = fmt::format("its lowering does not compute the data-dependent dim {}", x);
        ln.reset();
      }
  if (!ln) {
    if (const std::vector<const Value*> outer = outerReads(n); canFallBack(n, outer))
      emitFallback(s, n, outer, why);
    else
      missing.push_back(n.describe() + ": " + why);
    sized_.insert(sizes.begin(), sizes.end()); // (the fallback sets them)
    return;
  }
  pushCall(s, n, *ln, name);
}

std::set<std::string> Builder::toSize(const Node& n) const {
  std::set<std::string> out;
  if (auto it = dataProducers_.find(&n); it != dataProducers_.end())
    for (const std::string& x : it->second)
      if (ctx_.symbols.at(x).runSized && !sized_.count(x)) out.insert(x);
  return out;
}

bool Builder::emitSizes(const Scope& s, const Node& n, std::string& why) {
  loop::LowerOptions so = lower_;
  so.sizesOnly = true;
  const std::string name = "task" + std::to_string(spec_.code.funcs.size());
  std::optional<loop::LoweredNode> ln;
  try {
    ln = loop::lowerPerSample(n, name, so, ctx_, &why);
  } catch (const Error& e) {
    why = e.what();
  }
  if (!ln) return false;
  ln->func.schedule["sizes"] = ln->dataSymbols; // (the report's view: what it sets)
  sized_.insert(ln->dataSymbols.begin(), ln->dataSymbols.end());
  pushCall(s, n, *ln, name);
  return true;
}

void Builder::pushCall(const Scope& s, const Node& n, loop::LoweredNode& ln,
                       const std::string& name) {
  auto msgs = loop::verifyMessages(ln.func);
  AICC_CHECK(msgs.empty(), "{}: lowering produced invalid loop IR: {}", n.describe(), msgs[0]);
  ArtifactTask t;
  t.fn = name;
  t.node = n.describe();
  t.source = &n;
  for (const Value* v : n.outputs) // (a task of sizes alone computes none)
    if (v && !ln.func.schedule.count("sizes")) t.results.push_back({v, bind(s, v)});
  int64_t scratch = 0;
  for (const loop::Buffer& b : ln.func.params) {
    const Value* v = ln.valueOf(b.name);
    const Tensor* c = ln.constantOf(b.name);
    int64_t bytes = b.numel() * int64_t(dtypeSize(b.dtype));
    if (b.name == ln.symbolsParam) {
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
  auto& sch = ln.func.schedule;
  if (!sch.count("precision"))
    sch["precision"] = n.outputs.empty() || !n.outputs[0]
                           ? std::string("none")
                           : std::string(dtypeName(n.outputs[0]->type.dtype));
  push(std::move(t), loop::opLabel(n), loop::printSchedule(sch));
  spec_.code.funcs.push_back(std::move(ln.func));
}

// `outer`: outerReads(n). A node with symbolic values is printed with its symbolic types and
// binds the shape block last: the reference kernel runs at the run's sizes (rt/artifact.h
// FallbackProvider), and writes the data symbols its results have.
void Builder::emitFallback(const Scope& s, const Node& n, const std::vector<const Value*>& outer,
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
  ArtifactTask t{ArtifactTask::Kind::Fallback, text, n.describe(), {}, 0, 0, &n, {}, {}};
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

std::vector<rt::Symbol> inputSymbolRanges(const Graph& g, const std::vector<rt::Symbol>& given) {
  std::vector<rt::Symbol> symbols = inputSymbols(g, given);
  for (rt::Symbol& s : symbols) // a stepped range from its first multiple to its last
    if (const int64_t lo = (s.lo + s.step - 1) / s.step * s.step, hi = s.hi / s.step * s.step;
        s.step > 1 && lo <= hi)
      s.lo = lo, s.hi = hi;
  std::vector<Value*> all;
  definedValues(g, all);
  raiseDefaultLowerEnds(symbols, given, all);
  return symbols;
}

std::vector<rt::Symbol> widenDefaultLength(const Graph& g, const std::vector<rt::Symbol>& given) {
  std::vector<rt::Symbol> symbols = inputSymbolRanges(g, given);
  const rt::Symbol* length = nullptr;
  for (const rt::Symbol& s : symbols) {
    const bool defaulted = std::none_of(given.begin(), given.end(),
                                        [&](const rt::Symbol& r) { return r.name == s.name; });
    if (!defaulted || s.hi != kDefaultSizeBound || s.step > 1) continue;
    if (length) return given; // two (an image's sides): their product grows as a square
    length = &s;
  }
  if (!length) return given;
  std::vector<Value*> all;
  definedValues(g, all);
  // The bytes of every value with the length at `hi` (those of unknown size left out).
  auto bytesAt = [&](int64_t hi) {
    std::map<std::string, int64_t> at = symbolValues(symbols, true);
    at[length->name] = hi;
    double bytes = 0;
    for (const Value* v : all)
      if (v->type.isTensor() && v->type.shape && !v->constant)
        if (const auto d = toDims(withSymbols(*v->type.shape, at)))
          bytes += double(dtypeSize(v->type.dtype)) *
                   std::accumulate(d->begin(), d->end(), 1.0,
                                   [](double x, int64_t y) { return x * double(y); });
    return bytes;
  };
  int64_t hi = length->hi;
  while (hi < kMaxDefaultLength && bytesAt(2 * hi) <= double(kDefaultLengthBytes)) hi *= 2;
  std::vector<rt::Symbol> out = given;
  if (hi > length->hi) out.push_back({length->name, length->lo, hi, 1});
  return out;
}

ArtifactSpec buildArtifact(const Graph& g, const loop::LowerOptions& lower,
                           const std::vector<rt::Symbol>& ranges) {
  ArtifactSpec spec;
  // Symbolic dims: every value at the symbols' upper bounds while planning (the graph's types
  // are restored on return); the nodes that have them lower per sample.
  spec.symbols = inputSymbolRanges(g, ranges);
  std::vector<Value*> all;
  definedValues(g, all);
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
      ctx.symbols[s.name] = {int64_t(k), s.hi, s.lo, 1, s.data, s.runSized};
      if (s.step > 1) { // the graph's dims read S / step (passes/dim_steps.h)
        const std::string q = stepSymbol(s.name, s.step);
        AICC_CHECK(lo.at(q) <= hi.at(q), "--dim {}={}..{}: no multiple of {} in the range", s.name,
                   s.lo, s.hi, s.step);
        ctx.symbols[q] = {int64_t(k), hi.at(q), lo.at(q), s.step};
      }
    }
    // (Values sized at run time are planned at no bound: the checks below are not theirs.)
    std::vector<Value*> planned;
    for (Value* v : all)
      if (!loop::sizedAtRunTime(v->type, ctx)) planned.push_back(v);
    // A dim negative at the bounds or the lower ends: sizes in the range the model cannot take
    // (an audio length of 16 samples); say so rather than "no static size" at some node.
    for (bool atHi : {true, false})
      if (auto neg = dimBelow(planned, atHi ? hi : lo, 0)) {
        const auto& [v, d, x] = *neg;
        fail("'{}' is {}: its dim {} is {} at the symbols' {}; give each symbol the range the "
             "model takes with --dim NAME=LO..HI",
             v->name, formatType(v->type), d, x, atHi ? "upper bounds" : "lower ends");
      }
    for (Value* v : all)
      if (v->type.isTensor() && v->type.shape && !toDims(*v->type.shape)) {
        for (const Dim& d : *v->type.shape) {
          auto e = dimExpr(d);
          if (!e || d.isStatic() || loop::sizedAtRunTime(v->type, ctx)) continue;
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
  MemoryPlanOptions po = planOptions(ctx);
  po.bf16Values = lo.bf16Activations;
  spec.bf16Activations = int64_t(bf16.size());
  std::set<std::string> sized; // (the builder's record, LowerOptions::sizesOnly)
  ctx.sized = &sized;
  Builder b(spec, lo, ctx, dataProducers, sized);
  Scope top{&g, planMemory(g, po), 0, nullptr, 0, {}};
  b.slots = top.plan.dynamicValues;
  top.heapBase = b.addHeaps(top.plan);
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
