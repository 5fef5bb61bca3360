#include "passes/memory_schedule.h"

#include "ir/rewrite.h"
#include "ops/op_def.h"

#include <algorithm>
#include <limits>
#include <set>

namespace aicc {

namespace {

void collectSubgraphReads(const Graph& sg, const Graph& g, std::set<const Value*>& out) {
  for (const auto& n : sg.nodes) {
    for (const Value* v : n->inputs)
      if (v && v->owner == &g) out.insert(v);
    for (const auto& [_, a] : n->attrs) {
      if (auto* s = std::get_if<GraphPtr>(&a.v)) collectSubgraphReads(**s, g, out);
      if (auto* ss = std::get_if<std::vector<GraphPtr>>(&a.v))
        for (const auto& s : *ss) collectSubgraphReads(*s, g, out);
    }
  }
  for (const Value* v : sg.outputs)
    if (v && v->owner == &g) out.insert(v);
}

// Node results of g read by n (directly, or by its subgraphs), each once.
std::vector<const Value*> readsOf(const Graph& g, const Node& n) {
  std::set<const Value*> s;
  for (const Value* v : n.inputs)
    if (v && v->owner == &g && v->producer) s.insert(v);
  for (const auto& [_, a] : n.attrs) {
    if (auto* sg = std::get_if<GraphPtr>(&a.v)) collectSubgraphReads(**sg, g, s);
    if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
      for (const auto& sg : *sgs) collectSubgraphReads(*sg, g, s);
  }
  std::erase_if(s, [](const Value* v) { return !v->producer; });
  return {s.begin(), s.end()};
}

// The scheduling problem of one graph, on node indices (original order) and tensor indices.
struct Problem {
  size_t n = 0;
  std::vector<std::vector<size_t>> outs, reads, preds, succs;
  std::vector<int64_t> size;
  std::vector<bool> pinned; // graph outputs: live until the end
  std::vector<int> readers; // distinct reading nodes per tensor
};

Problem buildProblem(const Graph& g) {
  Problem p;
  p.n = g.nodes.size();
  p.outs.resize(p.n);
  p.reads.resize(p.n);
  p.preds.resize(p.n);
  p.succs.resize(p.n);
  std::map<const Value*, size_t> tid;
  std::vector<size_t> producerOf;
  for (size_t i = 0; i < p.n; ++i)
    for (const Value* o : g.nodes[i]->outputs) {
      if (!o) continue;
      tid[o] = p.size.size();
      p.outs[i].push_back(p.size.size());
      p.size.push_back(staticBytes(o->type).value_or(0));
      p.pinned.push_back(isGraphOutput(g, o));
      p.readers.push_back(0);
      producerOf.push_back(i);
    }
  std::optional<size_t> lastRandom;
  for (size_t i = 0; i < p.n; ++i) {
    std::set<size_t> preds;
    for (const Value* v : readsOf(g, *g.nodes[i])) {
      auto it = tid.find(v);
      if (it == tid.end()) continue;
      p.reads[i].push_back(it->second);
      ++p.readers[it->second];
      preds.insert(producerOf[it->second]);
    }
    const OpDef* d = g.nodes[i]->def;
    if (d && (d->props & kNondeterministic)) {
      if (lastRandom) preds.insert(*lastRandom);
      lastRandom = i;
    }
    preds.erase(i);
    p.preds[i].assign(preds.begin(), preds.end());
    for (size_t q : preds) p.succs[q].push_back(i);
  }
  return p;
}

// Peak of an order (same model as analyzeMemory).
int64_t peakOf(const Problem& p, const std::vector<size_t>& order) {
  std::vector<size_t> at(p.n);
  for (size_t k = 0; k < order.size(); ++k) at[order[k]] = k;
  std::vector<int64_t> diff(p.n + 1, 0);
  std::vector<size_t> last(p.size.size(), 0);
  for (size_t i = 0; i < p.n; ++i)
    for (size_t t : p.outs[i]) last[t] = at[i];
  for (size_t i = 0; i < p.n; ++i)
    for (size_t t : p.reads[i]) last[t] = std::max(last[t], at[i]);
  for (size_t i = 0; i < p.n; ++i)
    for (size_t t : p.outs[i]) {
      size_t end = p.pinned[t] ? p.n - 1 : last[t];
      diff[at[i]] += p.size[t];
      diff[end + 1] -= p.size[t];
    }
  int64_t cur = 0, peak = 0;
  for (size_t k = 0; k < p.n; ++k) peak = std::max(peak, cur += diff[k]);
  return peak;
}

// Greedy list scheduling: smallest net allocation first. Ties: original position (lifo=false)
// or the most recently enabled node (lifo=true, finishes one branch before starting another).
std::vector<size_t> greedyOrder(const Problem& p, bool lifo) {
  std::vector<size_t> indeg(p.n), readyAt(p.n, 0), order;
  std::vector<int> remaining = p.readers;
  std::vector<size_t> ready;
  for (size_t i = 0; i < p.n; ++i)
    if ((indeg[i] = p.preds[i].size()) == 0) ready.push_back(i);
  for (size_t step = 1; !ready.empty(); ++step) {
    size_t best = 0;
    int64_t bestDelta = 0;
    for (size_t k = 0; k < ready.size(); ++k) {
      size_t i = ready[k];
      int64_t delta = 0;
      for (size_t t : p.outs[i])
        if (p.readers[t] > 0 || p.pinned[t]) delta += p.size[t];
      for (size_t t : p.reads[i])
        if (remaining[t] == 1 && !p.pinned[t]) delta -= p.size[t];
      size_t b = ready[best];
      bool better =
          k == 0 || delta < bestDelta ||
          (delta == bestDelta &&
           (lifo ? (readyAt[i] > readyAt[b] || (readyAt[i] == readyAt[b] && i < b)) : i < b));
      if (better) {
        best = k;
        bestDelta = delta;
      }
    }
    size_t i = ready[best];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(best));
    order.push_back(i);
    for (size_t t : p.reads[i]) --remaining[t];
    for (size_t s : p.succs[i])
      if (--indeg[s] == 0) {
        ready.push_back(s);
        readyAt[s] = step;
      }
  }
  return order;
}

// Depth-first post-order from the end of the graph: each node's inputs are computed just before
// it, one input's whole subtree after the other (largest subtree first when `bigFirst`, else in
// input order), which keeps few branches alive at once. Nodes nobody reads are roots, in order.
std::vector<size_t> depthFirstOrder(const Problem& p, bool bigFirst) {
  // Bytes a node's output adds to the most demanding chain of producers above it (preds come
  // first in the original order).
  std::vector<int64_t> weight(p.n, 0);
  for (size_t i = 0; i < p.n; ++i) {
    int64_t above = 0;
    for (size_t q : p.preds[i]) above = std::max(above, weight[q]);
    for (size_t t : p.outs[i]) weight[i] += p.size[t];
    weight[i] += above;
  }
  std::vector<bool> hasSucc(p.n, false), done(p.n, false);
  for (size_t i = 0; i < p.n; ++i)
    for (size_t s : p.succs[i]) hasSucc[i] = hasSucc[i] || s != i;
  std::vector<size_t> order;
  std::vector<std::pair<size_t, size_t>> stack; // (node, next pred index)
  auto sortedPreds = [&](size_t i) {
    std::vector<size_t> ps = p.preds[i];
    if (bigFirst)
      std::stable_sort(ps.begin(), ps.end(),
                       [&](size_t a, size_t b) { return weight[a] > weight[b]; });
    return ps;
  };
  std::vector<std::vector<size_t>> predOrder(p.n);
  for (size_t i = 0; i < p.n; ++i) predOrder[i] = sortedPreds(i);
  for (size_t root = 0; root < p.n; ++root) {
    if (hasSucc[root] || done[root]) continue;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [i, k] = stack.back();
      if (done[i]) {
        stack.pop_back();
        continue;
      }
      if (k < predOrder[i].size()) {
        size_t q = predOrder[i][k++];
        if (!done[q]) stack.push_back({q, 0});
        continue;
      }
      done[i] = true;
      order.push_back(i);
      stack.pop_back();
    }
  }
  return order;
}

bool scheduleGraph(Graph& g) {
  if (g.nodes.size() < 3) return false;
  Problem p = buildProblem(g);
  std::vector<size_t> original(p.n);
  for (size_t i = 0; i < p.n; ++i) original[i] = i;
  int64_t bestPeak = peakOf(p, original);
  std::vector<size_t> best = original;
  for (int variant = 0; variant < 4; ++variant) {
    std::vector<size_t> o =
        variant < 2 ? greedyOrder(p, variant == 1) : depthFirstOrder(p, variant == 3);
    if (o.size() != p.n) continue; // cannot happen for a topologically ordered graph
    int64_t pk = peakOf(p, o);
    if (pk < bestPeak) {
      bestPeak = pk;
      best = o;
    }
  }
  if (best == original) return false;
  int64_t before = peakMemoryBytes(g);
  std::vector<std::unique_ptr<Node>> old = std::move(g.nodes);
  g.nodes.clear();
  for (size_t i : best) g.nodes.push_back(std::move(old[i]));
  if (peakMemoryBytes(g) < before) return true;
  // Not strictly better by the reported measure: restore the original order.
  std::vector<std::unique_ptr<Node>> now = std::move(g.nodes);
  g.nodes.clear();
  g.nodes.resize(p.n);
  for (size_t k = 0; k < p.n; ++k) g.nodes[best[k]] = std::move(now[k]);
  return false;
}

} // namespace

MemoryReport analyzeMemory(const Graph& g) {
  MemoryReport r;
  std::map<const Value*, size_t> tid;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const Value* o : g.nodes[i]->outputs) {
      if (!o) continue;
      std::optional<int64_t> b = staticBytes(o->type);
      tid[o] = r.tensors.size();
      r.tensors.push_back({o, b.value_or(0), b.has_value(), i, i});
      r.unknownSizes += !b.has_value();
    }
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const Value* v : readsOf(g, *g.nodes[i]))
      if (auto it = tid.find(v); it != tid.end())
        r.tensors[it->second].lastUse = std::max(r.tensors[it->second].lastUse, i);
  for (const Value* o : g.outputs)
    if (auto it = tid.find(o); it != tid.end()) r.tensors[it->second].lastUse = g.nodes.size() - 1;
  std::vector<int64_t> diff(g.nodes.size() + 1, 0);
  for (const auto& t : r.tensors) {
    diff[t.def] += t.bytes;
    diff[t.lastUse + 1] -= t.bytes;
  }
  int64_t cur = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if ((cur += diff[i]) > r.peakBytes) {
      r.peakBytes = cur;
      r.peakNode = i;
    }
  return r;
}

int64_t peakMemoryBytes(const Graph& g) { return analyzeMemory(g).peakBytes; }

bool scheduleForMemory(Model& m) {
  bool changed = false;
  forEachGraph(*m.graph, [&](Graph& g) { changed |= scheduleGraph(g); });
  return changed;
}

} // namespace aicc
