#include "autodiff/training.h"

#include "autodiff/autodiff.h"
#include "interp/interpreter.h"
#include "ir/rewrite.h"
#include "passes/memory_schedule.h"
#include "passes/shape_inference.h"

#include <algorithm>
#include <set>

namespace aicc {

// ---- cloneModel -------------------------------------------------------------------------------

namespace {

void cloneGraphInto(const Graph& s, Graph& d, std::map<const Value*, Value*>& vm);

Attribute cloneAttr(const Attribute& a, Graph& d, std::map<const Value*, Value*>& vm) {
  auto cloneSub = [&](const GraphPtr& sg) {
    auto ng = std::make_shared<Graph>();
    ng->parent = &d;
    cloneGraphInto(*sg, *ng, vm);
    return ng;
  };
  if (a.kind() == Attribute::Kind::Graph) return Attribute{cloneSub(std::get<GraphPtr>(a.v))};
  if (a.kind() == Attribute::Kind::Graphs) {
    std::vector<GraphPtr> gs;
    for (const auto& sg : std::get<std::vector<GraphPtr>>(a.v)) gs.push_back(cloneSub(sg));
    return Attribute{gs};
  }
  return a;
}

// Values of s map to new values of d through vm (which also holds the enclosing graphs' values, for
// outer-scope references from subgraphs). Constant tensors share storage (tensors are immutable).
void cloneGraphInto(const Graph& s, Graph& d, std::map<const Value*, Value*>& vm) {
  d.name = s.name;
  for (const Value* v : s.inputs) vm[v] = d.addInput(v->name, v->type);
  for (const Value* v : s.constants) vm[v] = d.addConstant(v->name, *v->constant);
  for (const auto& n : s.nodes) {
    std::vector<Value*> ins;
    for (const Value* v : n->inputs) {
      if (!v) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = vm.find(v);
      AICC_CHECK(it != vm.end(), "clone: {} reads '{}' before it is defined", n->describe(),
                 v->name);
      ins.push_back(it->second);
    }
    std::vector<std::string> outs;
    for (const Value* o : n->outputs) outs.push_back(o ? o->name : "");
    Node* c = d.addNode(n->op, std::move(ins), outs, n->domain);
    c->name = n->name;
    c->def = n->def;
    for (const auto& [k, a] : n->attrs) c->attrs[k] = cloneAttr(a, d, vm);
    for (size_t i = 0; i < n->outputs.size(); ++i)
      if (n->outputs[i]) {
        c->outputs[i]->type = n->outputs[i]->type;
        vm[n->outputs[i]] = c->outputs[i];
      }
  }
  for (const Value* o : s.outputs) d.outputs.push_back(vm.at(o));
}

// Turns constant `v` of g into a graph input (appended).
void constantToInput(Graph& g, Value* v) {
  v->constant.reset();
  std::erase(g.constants, v);
  g.inputs.push_back(v);
}

std::vector<Value*> resolveParams(Graph& g, const std::vector<std::string>& names) {
  std::vector<Value*> ps;
  if (names.empty()) {
    // Default: float constants with at least 2 elements (scalars such as Gelu's 0.5 or a
    // LayerNorm epsilon are part of the model's arithmetic, not weights).
    for (Value* c : g.constants)
      if (isFloat(c->type.dtype) && c->constant->numel() >= 2) ps.push_back(c);
    AICC_CHECK(!ps.empty(), "train: the model has no float constants to train");
    return ps;
  }
  for (const auto& n : names) {
    Value* v = g.lookupLocal(n);
    AICC_CHECK(v && v->isConstant(), "train: '{}' is not a constant (initializer) of the model", n);
    AICC_CHECK(isFloat(v->type.dtype),
               "train: parameter '{}' is {}, only float tensors are trained", n,
               formatType(v->type));
    ps.push_back(v);
  }
  return ps;
}

// Emits a node at the end of g and infers its outputs' types.
Node* emit(Graph& g, const std::string& op, std::vector<Value*> ins, int numOutputs,
           const std::string& base, const std::string& domain = "") {
  Node* n = insertNode(g, nullptr, op, std::move(ins), numOutputs, base, domain);
  n->name = base;
  return n;
}

} // namespace

Model cloneModel(const Model& m) {
  Model c;
  c.opsets = m.opsets;
  c.irVersion = m.irVersion;
  c.producerName = m.producerName;
  c.producerVersion = m.producerVersion;
  c.graph = std::make_shared<Graph>();
  std::map<const Value*, Value*> vm;
  cloneGraphInto(*m.graph, *c.graph, vm);
  return c;
}

// ---- buildTrainingStep ------------------------------------------------------------------------

Model buildTrainingStep(const Model& forward, const TrainingOptions& opts, StepGraphInfo* infoOut) {
  StepGraphInfo info;
  const OptimizerConfig& oc = opts.optimizer;
  const std::string kind = oc.kind;
  AICC_CHECK(kind == "sgd" || kind == "momentum" || kind == "adam" || kind == "adamw",
             "train: unknown optimizer '{}' (sgd, momentum, adam, adamw)", kind);
  Model m = cloneModel(forward);
  Graph& g = *m.graph;
  for (const Value* in : g.inputs) info.dataInputs.push_back(in->name);
  std::vector<Value*> params = resolveParams(g, opts.params);
  for (Value* p : params) {
    info.params.push_back(p->name);
    constantToInput(g, p);
  }
  info.forwardNodes = static_cast<int64_t>(g.nodes.size());
  std::set<const Node*> forwardNodes;
  for (const auto& n : g.nodes) forwardNodes.insert(n.get());

  AutodiffOptions ao;
  ao.loss = opts.loss;
  ao.wrt = info.params;
  AutodiffResult ar = differentiate(m, ao);
  Value* loss = g.outputs.at(0);
  std::vector<Value*> grads(g.outputs.begin() + 1, g.outputs.end());

  // The optimizer update.
  if (m.opsets.count(kTrainingDomain) == 0) m.opsets[kTrainingDomain] = 1;
  const DType pdt = params[0]->type.dtype;
  auto scalarConst = [&](const std::string& name, double v, DType dt) {
    return g.addConstant(g.uniqueName(name), Tensor::scalar(dt, v));
  };
  // State inputs first, then the step count: inputs are [data, params, state..., step].
  const bool useOp = kind != "sgd";
  const bool adam = kind == "adam" || kind == "adamw";
  info.stateTensorsPerParam = adam ? 2 : (kind == "momentum" || oc.momentum > 0) ? 1 : 0;
  std::vector<std::vector<Value*>> state(static_cast<size_t>(info.stateTensorsPerParam));
  const char* stateNames[2] = {adam ? "adam_m" : "velocity", "adam_v"};
  for (size_t j = 0; j < state.size(); ++j)
    for (Value* p : params)
      state[j].push_back(
          g.addInput(g.uniqueName(std::string("train/") + stateNames[j] + "/" + p->name), p->type));
  Value* stepCount = g.addInput(g.uniqueName("train/step"), Type::tensor(DType::I64, Shape{}));
  std::vector<Value*> newParams, newState;
  if (!useOp) {
    for (size_t i = 0; i < params.size(); ++i) {
      Value *x = params[i], *gr = grads[i];
      const DType dt = x->type.dtype;
      const std::string base = "train/sgd/" + x->name;
      if (oc.weightDecay > 0) {
        Value* wx =
            emit(g, "Mul", {x, scalarConst("train/wd", oc.weightDecay, dt)}, 1, base)->outputs[0];
        gr = emit(g, "Add", {gr, wx}, 1, base)->outputs[0];
      }
      Value* upd = gr;
      if (oc.momentum > 0) {
        Value* mv = emit(g, "Mul", {state[0][i], scalarConst("train/mu", oc.momentum, dt)}, 1, base)
                        ->outputs[0];
        upd = emit(g, "Add", {mv, gr}, 1, base)->outputs[0];
        newState.push_back(upd);
      }
      Value* step = emit(g, "Mul", {upd, scalarConst("train/lr", oc.lr, dt)}, 1, base)->outputs[0];
      newParams.push_back(emit(g, "Sub", {x, step}, 1, base)->outputs[0]);
    }
  } else {
    // One optimizer node per parameter (the spec allows several tensors per node, but separate
    // nodes let the scheduler run each update as soon as its gradient exists, freeing it early).
    Value* lr = scalarConst("train/lr", oc.lr, pdt);
    std::vector<Node*> updates(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      std::vector<Value*> ins{lr, stepCount, params[i], grads[i]};
      for (const auto& s : state) ins.push_back(s[i]);
      Node* opt =
          emit(g, adam ? "Adam" : "Momentum", ins, static_cast<int>(1 + state.size()),
               (adam ? "train/adam/" : "train/momentum/") + params[i]->name, kTrainingDomain);
      if (adam) {
        opt->attrs["alpha"] = Attribute{static_cast<float>(oc.beta1)};
        opt->attrs["beta"] = Attribute{static_cast<float>(oc.beta2)};
        opt->attrs["epsilon"] = Attribute{static_cast<float>(oc.epsilon)};
        if (kind == "adamw")
          opt->attrs["norm_coefficient_post"] =
              Attribute{static_cast<float>(oc.lr * oc.weightDecay)};
        else
          opt->attrs["norm_coefficient"] = Attribute{static_cast<float>(oc.weightDecay)};
      } else {
        opt->attrs["alpha"] = Attribute{static_cast<float>(oc.momentum)};
        opt->attrs["beta"] = Attribute{1.0f};
        opt->attrs["mode"] = Attribute{std::string("standard")};
        opt->attrs["norm_coefficient"] = Attribute{static_cast<float>(oc.weightDecay)};
      }
      updates[i] = opt;
    }
    for (Node* opt : updates) newParams.push_back(opt->outputs[0]);
    for (size_t j = 0; j < state.size(); ++j)
      for (Node* opt : updates) newState.push_back(opt->outputs[1 + j]);
  }
  // The step count is an input of every step graph (also for SGD, where nothing reads it), so the
  // calling convention does not depend on the optimizer.
  g.outputs = {loss};
  g.outputs.insert(g.outputs.end(), newParams.begin(), newParams.end());
  g.outputs.insert(g.outputs.end(), newState.begin(), newState.end());
  inferShapes(g);

  if (opts.rematerialize) info.remat = rematerialize(m, forwardNodes);
  // A node order with a lower peak (passes/memory_schedule.h): e.g. each optimizer update right
  // after its gradient.
  scheduleForMemory(m);
  info.peakBytes = peakMemoryBytes(g);
  info.peakBytesNoRemat = info.peakBytes;
  if (opts.rematerialize) {
    TrainingOptions plain = opts;
    plain.rematerialize = false;
    StepGraphInfo p;
    buildTrainingStep(forward, plain, &p);
    info.peakBytesNoRemat = p.peakBytes;
  }
  info.stepNodes = static_cast<int64_t>(g.nodes.size());
  (void)ar;
  if (infoOut) *infoOut = info;
  return m;
}

// ---- TrainingSession --------------------------------------------------------------------------

TrainingSession::TrainingSession(const Model& forward, TrainingOptions opts)
    : forward_(cloneModel(forward)), opts_(std::move(opts)) {
  step_ = buildTrainingStep(forward, opts_, &info_);
  Graph& fg = *forward_.graph;
  for (const auto& name : info_.params) {
    Value* p = fg.lookupLocal(name);
    params_.push_back(*p->constant);
    constantToInput(fg, p);
  }
  // Zero-initialized optimizer state, in the step graph's input order.
  const Graph& sg = *step_.graph;
  const size_t first = info_.dataInputs.size() + info_.params.size();
  for (size_t i = first; i + 1 < sg.inputs.size(); ++i) {
    const Value* v = sg.inputs[i];
    auto dims = v->type.shape ? toDims(*v->type.shape) : std::nullopt;
    AICC_CHECK(dims, "train: optimizer state '{}' has no static shape", v->name);
    state_.emplace_back(v->type.dtype, *dims);
  }
}

double TrainingSession::step(const std::vector<Tensor>& batch) {
  AICC_CHECK(batch.size() == info_.dataInputs.size(),
             "train: the model takes {} data inputs, got {}", info_.dataInputs.size(),
             batch.size());
  std::vector<RValue> feed;
  feed.reserve(batch.size() + params_.size() + state_.size() + 1);
  for (const Tensor& t : batch) feed.push_back(RValue::of(t));
  for (const Tensor& t : params_) feed.push_back(RValue::of(t)); // shares the storage
  for (const Tensor& t : state_) feed.push_back(RValue::of(t));
  feed.push_back(RValue::of(Tensor::scalar(DType::I64, static_cast<double>(++t_))));
  std::vector<RValue> out = interpret(*step_.graph, feed);
  // The new parameters and state become the next step's inputs (tensor handles move, no copy).
  for (size_t i = 0; i < params_.size(); ++i) params_[i] = std::move(out[1 + i].tensor);
  for (size_t i = 0; i < state_.size(); ++i)
    state_[i] = std::move(out[1 + params_.size() + i].tensor);
  return out[0].tensor.getF64(0);
}

std::vector<RValue> TrainingSession::evaluate(const std::vector<Tensor>& inputs) const {
  std::vector<RValue> feed;
  for (const Tensor& t : inputs) feed.push_back(RValue::of(t));
  for (const Tensor& t : params_) feed.push_back(RValue::of(t));
  return interpret(*forward_.graph, feed);
}

Model TrainingSession::trainedModel() const {
  Model m = cloneModel(forward_);
  Graph& g = *m.graph;
  for (size_t i = 0; i < info_.params.size(); ++i) {
    Value* p = g.lookupLocal(info_.params[i]);
    std::erase(g.inputs, p);
    p->constant = params_[i];
    g.constants.push_back(p);
  }
  return m;
}

} // namespace aicc
