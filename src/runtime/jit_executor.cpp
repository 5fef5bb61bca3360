#include "runtime/jit_executor.h"

#include "backend/memory_plan.h"
#include "interp/interpreter.h"
#include "loop/printer.h"
#include "loop/verifier.h"
#include "rt/parallel.h"
#include "rt/trace.h"
#include "runtime/artifact.h"

#include <chrono>
#include <cstring>

namespace aicc::runtime {

struct JitExecutable::Task {
  const Node* node = nullptr;
  codegen::LoopFnPtr fn = nullptr; // null: fallback through the reference kernel
  // Lowered: one entry per Func parameter, in order: the graph value it binds (null: temp).
  std::vector<const Value*> params;
  std::vector<std::vector<std::byte>> temps; // scratch for temp params (same order, empty if not)
  std::vector<Tensor> consts; // compile-time data (packed weights) for such params, else empty
  // If with static branch results: each branch compiled as its own executable (then, else);
  // null for a branch whose shapes do not resolve (the If then runs in the interpreter when
  // the condition takes it).
  std::unique_ptr<JitExecutable> branches[2];
  bool isIf = false;
};

namespace {

Tensor ownedCopy(const Tensor& t) { return t.clone(); }

void checkInput(const Value* v, const RValue& r) {
  if (v->type.kind != Type::Kind::Tensor) return;
  AICC_CHECK(r.kind == RValue::Kind::Tensor, "input '{}': expected a tensor", v->name);
  const Tensor& t = r.tensor;
  AICC_CHECK(v->type.dtype == DType::Undefined || t.dtype() == v->type.dtype,
             "input '{}': expected element type {}, got {}", v->name, dtypeName(v->type.dtype),
             dtypeName(t.dtype()));
  if (!v->type.shape) return;
  const Shape& s = *v->type.shape;
  bool ok = s.size() == t.shape().size();
  for (size_t i = 0; ok && i < s.size(); ++i)
    ok = !s[i].isStatic() || s[i].value == t.shape()[i];
  AICC_CHECK(ok, "input '{}': expected shape {}, got {} elements of shape rank {}", v->name,
             formatShape(s), t.numel(), t.shape().size());
}

} // namespace

JitExecutable::JitExecutable(const Graph& g, const JitRunOptions& opts)
    : g_(g), injectFaultAt_(opts.injectFaultAt) {
  checkThreadsEnv();
  if (compilePlanned(opts)) return;
  // Memory plan (static shapes only).
  std::optional<MemoryPlan> plan;
  try {
    plan = planMemory(g);
    if (plan->dynamicValues) // node by node: every value of run-time size in its own tensor
      fail("{} values have no static size", plan->dynamicValues);
    stats_.planned = true;
    stats_.arenaBytes = plan->arenaBytes;
    stats_.planNote = formatMemorySummary(*plan);
  } catch (const Error& e) {
    stats_.planNote = std::string("no static memory plan: ") + e.what();
  }
  if (plan) {
    arenaReserved_ = MemoryReservation(plan->arenaBytes, "the JIT's arena");
    arenaStorage_.resize(static_cast<size_t>(plan->arenaBytes + plan->alignment));
    auto addr = reinterpret_cast<uintptr_t>(arenaStorage_.data());
    arena_ = arenaStorage_.data() + ((plan->alignment - addr % plan->alignment) % plan->alignment);
    for (const PlannedValue& pv : plan->values) {
      if (pv.storage != MemStorage::Arena || pv.value->type.kind != Type::Kind::Tensor) continue;
      Dims dims;
      for (const Dim& d : *pv.value->type.shape) dims.push_back(d.value);
      slots_[pv.value] =
          Tensor::view(pv.value->type.dtype, dims, nullptr, arena_ + pv.offset);
    }
  }
  // Lower what can be lowered into one module.
  loop::Module mod;
  std::vector<std::string> names;
  int64_t index = 0;
  for (const auto& np : g.nodes) {
    Task t;
    t.node = np.get();
    TaskInfo info;
    info.node = np->describe();
    info.op = loop::opLabel(*np);
    std::string why, name = "node" + std::to_string(index++);
    std::optional<loop::LoweredNode> ln;
    try {
      ln = loop::lowerNode(*np, name, &why, opts.lower);
    } catch (const Error& e) {
      why = e.what();
    }
    if (ln) {
      for (const loop::Buffer& b : ln->func.params)
        if (!codegen::supportedDType(b.dtype)) {
          why = fmt::format("element type {} not supported by the LLVM emitter",
                            dtypeName(b.dtype));
          ln.reset();
          break;
        }
    }
    if (ln) {
      auto msgs = loop::verifyMessages(ln->func);
      AICC_CHECK(msgs.empty(), "{}: lowering produced invalid loop IR: {}", np->describe(),
                 msgs[0]);
      for (const loop::Buffer& b : ln->func.params) {
        const Value* v = ln->valueOf(b.name);
        const Tensor* cp = ln->constantOf(b.name);
        Tensor c = cp ? *cp : Tensor();
        bool isConst = c.defined();
        t.params.push_back(v);
        t.temps.emplace_back(v || isConst ? 0
                                          : static_cast<size_t>(b.numel()) * dtypeSize(b.dtype));
        if (isConst) stats_.packedBytes += int64_t(c.nbytes());
        t.consts.push_back(std::move(c));
      }
      names.push_back(name);
      info.engine = "jit";
      info.schedule = loop::printSchedule(ln->func.schedule);
      mod.funcs.push_back(std::move(ln->func));
      ++stats_.lowered;
    } else if (compileIf(*np, t, opts)) {
      names.push_back("");
      info.engine = "control-flow";
      info.schedule = "{branches compiled}";
      ++stats_.lowered;
    } else {
      ++stats_.fallback;
      stats_.fallbackReasons.push_back(np->describe() + ": " + why);
      names.push_back("");
      info.engine = "fallback";
      info.why = why;
    }
    tasks_.push_back(std::move(t));
    info_.push_back(std::move(info));
  }
  codegen::JitOptions jo;
  jo.optLevel = opts.optLevel;
  jo.emit.parallel = opts.parallel;
  engine_ = std::make_unique<codegen::JitEngine>(jo);
  if (!mod.funcs.empty()) engine_->addModule(mod);
  for (size_t i = 0; i < tasks_.size(); ++i)
    if (!names[i].empty()) tasks_[i].fn = engine_->lookup(names[i]);
  stats_.compileSeconds += engine_->compileSeconds(); // + compiled If branches
}

JitExecutable::~JitExecutable() = default;

bool JitExecutable::compilePlanned(const JitRunOptions& opts) {
  std::optional<ArtifactSpec> spec;
  try {
    spec = buildArtifact(g_, opts.lower, opts.symbols);
  } catch (const Error& e) {
    stats_.planNote = std::string("node by node: ") + e.what();
    return false;
  }
  // Tensors whose shapes are known only at run time: node by node lowers their nodes for the
  // sizes each run has (the artifact runs them as fallback tasks). Sequences, optionals and
  // strings stay in dynamic slots (their nodes run on the reference kernels either way).
  if (spec->runtimeShapes) {
    stats_.planNote =
        fmt::format("node by node: {} tensors of run-time shape", spec->runtimeShapes);
    return false;
  }
  if (!spec->failBranches.empty()) {
    stats_.planNote = "node by node: an If branch does not resolve: " + spec->failBranches[0];
    return false;
  }
  for (const loop::Func& f : spec->code.funcs)
    for (const loop::Buffer& b : f.params)
      if (!codegen::supportedDType(b.dtype)) {
        stats_.planNote = fmt::format("node by node: element type {} is not supported by the "
                                      "LLVM emitter",
                                      dtypeName(b.dtype));
        return false;
      }
  codegen::JitOptions jo;
  jo.optLevel = opts.optLevel;
  jo.emit.parallel = opts.parallel;
  engine_ = std::make_unique<codegen::JitEngine>(jo);
  if (!spec->code.funcs.empty()) engine_->addModule(spec->code);
  stats_.compileSeconds = engine_->compileSeconds();

  rt::Plan plan;
  plan.symbols = spec->symbols;
  plan.inputs = spec->inputs;
  plan.heaps = spec->heaps;
  for (const ArtifactBody& b : spec->bodies) { // a SequenceMap's or Loop's body: its own executable
    struct Body {
      std::shared_ptr<Model> model; // (outlives exe, which refers to its graph)
      std::unique_ptr<JitExecutable> exe;
    };
    auto body = std::make_shared<Body>();
    body->model = b.model;
    JitRunOptions bo = opts;
    bo.symbols.clear(); // (the ranges the builder gave its inputs)
    for (const rt::Symbol& x : b.spec.symbols)
      if (!x.data) bo.symbols.push_back(x);
    bo.injectFaultAt.clear();
    body->exe = std::make_unique<JitExecutable>(*b.model->graph, bo);
    if (!body->exe->planned_) {
      stats_.planNote = "node by node: a SequenceMap or Loop body: " + body->exe->stats_.planNote;
      return false;
    }
    stats_.fallback += body->exe->stats_.fallback;
    stats_.compileSeconds += body->exe->stats_.compileSeconds;
    plan.bodies.push_back(std::shared_ptr<rt::Artifact>(body, body->exe->planned_.get()));
  }
  for (const auto& [desc, where] : spec->outputs) {
    plan.outputs.push_back(desc);
    plan.outputBindings.push_back(where);
  }
  plan.arenaBytes = spec->arenaBytes;
  plan.scratchBytes = spec->scratchBytes;
  plan.weightBytes = int64_t(spec->weights.size());
  plan.reserved = MemoryReservation(plan.arenaBytes + plan.scratchBytes + plan.weightBytes,
                                    "the JIT's arena, scratch and weights");
  plan.weights = rt::Plan::allocate(plan.weightBytes);
  if (!spec->weights.empty())
    std::memcpy(plan.weights.get(), spec->weights.data(), spec->weights.size());
  using K = ArtifactTask::Kind;
  std::optional<std::pair<size_t, Binding>> fault; // the task and result --inject-fault changes
  for (size_t i = 0; i < spec->tasks.size(); ++i) {
    ArtifactTask& t = spec->tasks[i];
    rt::Plan::Task task{t.kind, nullptr, t.node, t.params, size_t(t.target), t.limit, {}, t.seq};
    TaskInfo info;
    info.node = t.node;
    info.op = spec->schedules[i].first;
    info.schedule = spec->schedules[i].second;
    info.engine = "control-flow";
    if (t.kind == K::Call) {
      task.fn = engine_->lookup(t.fn);
      info.engine = "jit";
      ++stats_.lowered;
    } else if (t.kind == K::Fallback) {
      task.fallback = interpreterFallback(t.fn, t.node, t.params, spec->symbols, "jit");
      info.engine = "fallback";
      info.why = info.schedule.substr(info.schedule.find(": ") + 2);
      info.schedule.clear();
      ++stats_.fallback;
    }
    if (!injectFaultAt_.empty() && t.source && t.source->name == injectFaultAt_ && !fault)
      for (const auto& [v, b] : t.results)
        if (v->type.dtype == DType::F32 && b.bytes >= 4) {
          fault = {i, b};
          break;
        }
    plan.tasks.push_back(std::move(task));
    info_.push_back(std::move(info));
  }
  stats_.fallbackReasons = spec->fallbacks;
  stats_.planned = true;
  stats_.arenaBytes = spec->arenaBytes;
  stats_.packedBytes = spec->packedBytes;
  stats_.planNote = fmt::format("planned: arena {} bytes (lower bound {}), scratch {}, weights {} "
                                "({} packed for the kernels); the runtime's executor",
                                spec->arenaBytes, spec->lowerBoundBytes, spec->scratchBytes,
                                spec->weights.size(), spec->packedBytes);
  planned_ = std::make_unique<rt::Artifact>(std::move(plan));
  if (fault) { // a wrong kernel, for testing `aicc debug-numerics`
    rt::Artifact* exe = planned_.get();
    planned_->setAfterTask([exe, f = *fault](size_t task) {
      if (task != f.first) return;
      float* x = static_cast<float*>(exe->address(f.second));
      x[0] = x[0] * 1.5f + 1.0f;
    });
  }
  return true;
}

void JitExecutable::setProfiling(bool on) {
  profiling_ = on;
  if (planned_) planned_->setProfiling(on);
}

const std::vector<TaskInfo>& JitExecutable::tasks() const {
  if (planned_) {
    const auto& times = planned_->taskTimes();
    for (size_t i = 0; i < info_.size() && i < times.size(); ++i) {
      info_[i].seconds = times[i].seconds;
      info_[i].calls = times[i].calls;
    }
  }
  return info_;
}

bool JitExecutable::compileIf(const Node& n, Task& t, const JitRunOptions& opts) {
  if (n.op != "If" || !n.domain.empty()) return false;
  const char* names[2] = {"then_branch", "else_branch"};
  for (const Value* o : n.outputs) // branch results land in this graph's buffers: static only
    if (o && (!o->type.isTensor() || !o->type.shape || !toDims(*o->type.shape))) return false;
  for (int b = 0; b < 2; ++b) {
    const Attribute* a = n.attr(names[b]);
    auto* sg = a ? std::get_if<GraphPtr>(&a->v) : nullptr;
    if (!sg || !*sg || !(*sg)->inputs.empty()) return false;
    if (auto why = unresolvedShape(**sg)) {
      stats_.interpretedBranches.push_back(n.describe() + " " + names[b] + ": " + *why);
      continue;
    }
    t.branches[b] = std::make_unique<JitExecutable>(**sg, opts);
    const JitStats& bs = t.branches[b]->stats();
    stats_.lowered += bs.lowered, stats_.fallback += bs.fallback;
    for (const auto& r : bs.fallbackReasons)
      stats_.fallbackReasons.push_back(n.describe() + " " + names[b] + ": " + r);
    stats_.compileSeconds += bs.compileSeconds;
  }
  t.isIf = true;
  return true;
}

std::vector<RValue> JitExecutable::run(const std::vector<RValue>& inputs,
                                       const OuterLookup* outer) {
  if (planned_) return runChecked(*planned_, inputs);
  AICC_CHECK(inputs.size() == g_.inputs.size(), "graph '{}' takes {} inputs, got {}", g_.name,
             g_.inputs.size(), inputs.size());
  std::map<const Value*, RValue> env;
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkInput(g_.inputs[i], inputs[i]);
    env[g_.inputs[i]] = inputs[i];
  }
  auto fetch = [&](const Value* v) -> const RValue* {
    if (auto it = env.find(v); it != env.end()) return &it->second;
    if (v->constant) return &env.emplace(v, RValue::of(*v->constant)).first->second;
    if (outer && *outer) return (*outer)(v); // an If branch reads the enclosing graph's values
    return nullptr;
  };
  // The storage a node result is written to: its arena slot, or a fresh tensor.
  auto outputTensor = [&](const Value* v) -> Tensor {
    if (auto it = slots_.find(v); it != slots_.end()) return it->second;
    AICC_CHECK(v->type.shape, "'{}': no static shape", v->name);
    Dims dims;
    for (const Dim& d : *v->type.shape) {
      AICC_CHECK(d.isStatic(), "'{}': shape {} is not static", v->name, formatShape(*v->type.shape));
      dims.push_back(d.value);
    }
    return Tensor(v->type.dtype, dims);
  };
  std::vector<void*> ptrs;
  using Clock = std::chrono::steady_clock;
  for (size_t ti = 0; ti < tasks_.size(); ++ti) {
    Task& t = tasks_[ti];
    const Node& n = *t.node;
    std::optional<Clock::time_point> start;
    if (profiling_) start = Clock::now();
    trace::TaskScope traced(info_[ti].node, "task");
    struct Stop { // accumulates the task's time on every exit path
      JitExecutable* self;
      size_t i;
      std::optional<Clock::time_point>& s;
      ~Stop() {
        if (!s) return;
        self->info_[i].seconds += std::chrono::duration<double>(Clock::now() - *s).count();
        ++self->info_[i].calls;
      }
    } stop{this, ti, start};
    if (t.fn) {
      ptrs.assign(t.params.size(), nullptr);
      for (size_t i = 0; i < t.params.size(); ++i) {
        const Value* v = t.params[i];
        if (!v) {
          ptrs[i] = t.consts[i].defined() ? const_cast<void*>(t.consts[i].raw())
                                          : t.temps[i].data();
          continue;
        }
        bool isOutput = std::find(n.outputs.begin(), n.outputs.end(), v) != n.outputs.end();
        if (isOutput) {
          Tensor out = outputTensor(v);
          ptrs[i] = out.raw();
          env[v] = RValue::of(std::move(out));
        } else {
          const RValue* r = fetch(v);
          AICC_CHECK(r && r->kind == RValue::Kind::Tensor, "{}: input '{}' has no tensor value",
                     n.describe(), v->name);
          ptrs[i] = const_cast<void*>(r->tensor.raw());
        }
      }
      aicc_rt_clear_last_error();
      int32_t rc = t.fn(ptrs.data());
      AICC_CHECK(rc == 0, "{} (JIT): {}", n.describe(),
                 rc == 1 ? std::string("integer division by zero")
                         : std::string(aicc_rt_last_error()));
      if (!injectFaultAt_.empty() && n.name == injectFaultAt_)
        for (const Value* v : n.outputs)
          if (auto it = env.find(v); it != env.end() && it->second.tensor.dtype() == DType::F32 &&
                                     it->second.tensor.numel() > 0) {
            float* x = it->second.tensor.data<float>();
            x[0] = x[0] * 1.5f + 1.0f;
            break;
          }
      continue;
    }
    // Fallbacks and compiled If branches read this run's values (their outer scope).
    OuterLookup outerHere = [&](const Value* v) { return fetch(v); };
    auto compiledIf = [&] { // pick the branch by the condition, run it
      const RValue* c = fetch(n.inputs.at(0));
      AICC_CHECK(c && c->kind == RValue::Kind::Tensor && c->tensor.numel() == 1,
                 "{}: the condition must be a one-element tensor", n.describe());
      auto& branch = t.branches[c->tensor.getF64(0) != 0 ? 0 : 1];
      return branch ? branch->run({}, &outerHere) : runReferenceKernel(n, outerHere);
    };
    std::vector<RValue> outs = t.isIf ? compiledIf() : runReferenceKernel(n, outerHere);
    for (size_t i = 0; i < n.outputs.size() && i < outs.size(); ++i) {
      const Value* v = n.outputs[i];
      if (!v) continue;
      auto it = slots_.find(v);
      if (it != slots_.end() && outs[i].kind == RValue::Kind::Tensor &&
          outs[i].tensor.nbytes() == it->second.nbytes() &&
          outs[i].tensor.dtype() == it->second.dtype()) {
        std::memmove(it->second.raw(), outs[i].tensor.raw(), it->second.nbytes());
        env[v] = RValue::of(it->second);
      } else {
        env[v] = std::move(outs[i]);
      }
    }
  }
  std::vector<RValue> results;
  for (const Value* o : g_.outputs) {
    const RValue* r = fetch(o);
    AICC_CHECK(r, "graph '{}': output '{}' was never computed", g_.name, o->name);
    RValue c = *r;
    if (c.kind == RValue::Kind::Tensor) c.tensor = ownedCopy(c.tensor);
    results.push_back(std::move(c));
  }
  return results;
}

std::vector<RValue> runJit(const Graph& g, const std::vector<RValue>& inputs,
                           const JitRunOptions& opts, JitStats* stats) {
  JitExecutable exe(g, opts);
  auto out = exe.run(inputs);
  if (stats) *stats = exe.stats();
  return out;
}

} // namespace aicc::runtime
