#include "runtime/tune.h"

#include "backend/op_select.h"
#include "loop/lower.h"
#include "runtime/jit_executor.h"
#include "support/error.h"

#include <algorithm>
#include <chrono>
#include <set>

namespace aicc::runtime {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A graph holding a copy of n alone: constant inputs stay constants (the micro-kernels pack
// them at compile time), the others become graph inputs.
struct OneNode {
  Graph g;
  std::vector<RValue> inputs;
  explicit OneNode(const Node& n) {
    std::vector<Value*> ins;
    for (const Value* v : n.inputs) {
      if (!v) {
        ins.push_back(nullptr);
      } else if (v->constant) {
        ins.push_back(g.addConstant(v->name, *v->constant));
      } else {
        AICC_CHECK(v->type.isTensor() && v->type.shape, "tune: {} input '{}' has no static shape",
                   n.describe(), v->name);
        auto dims = toDims(*v->type.shape);
        AICC_CHECK(dims, "tune: {} input '{}' has a dynamic shape", n.describe(), v->name);
        Value* in = g.addInput(v->name, v->type);
        ins.push_back(in);
        Tensor t(v->type.dtype, *dims);
        for (int64_t i = 0; i < t.numel() && v->type.dtype == DType::F32; ++i)
          t.data<float>()[i] = float((i * 7919) % 17) * 0.0625f - 0.5f;
        inputs.push_back(RValue::of(std::move(t)));
      }
    }
    std::vector<std::string> outs;
    for (const Value* o : n.outputs) outs.push_back(o ? o->name : "");
    Node* c = g.addNode(n.op, ins, outs, n.domain);
    c->name = n.name;
    c->attrs = n.attrs;
    c->def = n.def;
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i]) {
        c->outputs[i]->type = n.outputs[i]->type;
        g.outputs.push_back(c->outputs[i]);
      }
  }
};

} // namespace

namespace {
// Median seconds of one run of `one`'s node lowered with `candidate`.
double timeOn(OneNode& one, const Node& n, const std::string& candidate, int reps) {
  JitRunOptions opts;
  opts.lower.chooseCandidate = [candidate](const Node&) -> loop::CandidateChoice {
    return {candidate, "tune: timing " + candidate};
  };
  JitExecutable exe(one.g, opts);
  AICC_CHECK(exe.stats().fallback == 0, "tune: {} does not lower with {}", n.describe(), candidate);
  exe.run(one.inputs); // warm-up (first touch of the arena, caches)
  std::vector<double> t;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    auto t0 = Clock::now();
    exe.run(one.inputs);
    t.push_back(since(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
} // namespace

double timeCandidate(const Node& n, const std::string& candidate, int reps) {
  OneNode one(n);
  return timeOn(one, n, candidate, reps);
}

TuneSummary tuneGraph(const Graph& g, const Target& t, backend::TuningCache& cache,
                      const TuneOptions& o) {
  const auto start = Clock::now();
  TuneSummary sum;
  cache.target = formatTarget(t);
  loop::LowerOptions engine;
  engine.runtimeKernels = true;
  // The nodes with a choice, most expensive first by the cost model.
  struct Item {
    const Node* n;
    backend::Selection sel;
  };
  std::vector<Item> items;
  for (const auto& n : g.nodes)
    if (auto s = backend::selectCandidate(*n, t, std::nullopt, engine);
        s && s->considered.size() > 1)
      items.push_back({n.get(), *s});
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.sel.cost.seconds > b.sel.cost.seconds; });
  sum.nodes = int(items.size());
  std::set<std::string> done;
  for (const Item& it : items) {
    const std::string sig = backend::nodeSignature(*it.n);
    if (!done.insert(sig).second) continue;
    if (since(start) > o.budgetSeconds) {
      ++sum.skippedForBudget;
      continue;
    }
    double bestEst = it.sel.cost.seconds;
    OneNode one(*it.n); // the node's graph and inputs, shared by its candidates
    backend::TuningRecord rec;
    double best = 0;
    std::string line = it.n->describe() + ":";
    for (const auto& [cand, est] : it.sel.considered) {
      if (est > o.skipFactor * bestEst) {
        line +=
            " " + cand + " skipped (est " + fmt::format("{:.3g}", est / bestEst) + "x the best);";
        continue;
      }
      double sec = timeOn(one, *it.n, cand, o.reps);
      ++sum.candidatesTimed;
      rec.timings.push_back({cand, sec * 1e3, est * 1e3});
      line += fmt::format(" {} {:.3g} ms (est {:.3g});", cand, sec * 1e3, est * 1e3);
      if (rec.chosen.empty() || sec < best) rec.chosen = cand, best = sec;
    }
    if (rec.chosen.empty()) continue;
    if (rec.chosen != it.sel.candidate) ++sum.changed;
    if (o.log) o.log(line + " -> " + rec.chosen);
    cache.records[sig] = std::move(rec);
    ++sum.measured;
  }
  sum.seconds = since(start);
  return sum;
}

} // namespace aicc::runtime
