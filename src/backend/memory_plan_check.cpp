// The memory plan's checker (with its own liveness analysis, independent of the planner's) and
// its text form.
#include "backend/memory_plan.h"
#include "backend/memory_plan_internal.h"
#include "ir/rewrite.h"
#include "support/error.h"

#include <algorithm>
#include <set>

namespace aicc {

using namespace memplan;

namespace {

// Values of `g` read by subgraph `sg` (at any depth), as node inputs or subgraph outputs.
void subgraphReads(const Graph& sg, const Graph& g, std::set<const Value*>& out) {
  for (const auto& n : sg.nodes) {
    for (const Value* v : n->inputs)
      if (v && v->owner == &g) out.insert(v);
    for (const auto& [_, a] : n->attrs) {
      if (auto* s = std::get_if<GraphPtr>(&a.v)) subgraphReads(**s, g, out);
      if (auto* ss = std::get_if<std::vector<GraphPtr>>(&a.v))
        for (const auto& s : *ss) subgraphReads(*s, g, out);
    }
  }
  for (const Value* v : sg.outputs)
    if (v && v->owner == &g) out.insert(v);
}

struct Life {
  size_t def = 0, last = 0;
};

} // namespace

std::vector<std::string> checkMemoryPlan(const Graph& g, const MemoryPlan& plan) {
  std::vector<std::string> errs;
  const size_t n = g.nodes.size();
  if (plan.numNodes != n)
    errs.push_back(fmt::format("the plan is for {} nodes, the graph has {}", plan.numNodes, n));

  // Own liveness of the node results.
  std::map<const Value*, Life> life;
  for (size_t i = 0; i < n; ++i)
    for (const Value* o : g.nodes[i]->outputs)
      if (o) life[o] = {i, i};
  for (size_t i = 0; i < n; ++i) {
    std::set<const Value*> reads(g.nodes[i]->inputs.begin(), g.nodes[i]->inputs.end());
    for (const auto& [_, a] : g.nodes[i]->attrs) {
      if (auto* s = std::get_if<GraphPtr>(&a.v)) subgraphReads(**s, g, reads);
      if (auto* ss = std::get_if<std::vector<GraphPtr>>(&a.v))
        for (const auto& s : *ss) subgraphReads(*s, g, reads);
    }
    for (const Value* v : reads)
      if (auto it = life.find(v); it != life.end()) it->second.last = std::max(it->second.last, i);
  }
  std::set<const Value*> outputs(g.outputs.begin(), g.outputs.end());
  for (const Value* o : g.outputs)
    if (auto it = life.find(o); it != life.end()) it->second.last = n - 1;

  // Weights: every constant has a slot, aligned, inside the blob, disjoint.
  std::vector<const Value*> consts;
  collectConstants(g, consts);
  std::map<const Value*, const WeightSlot*> slots;
  for (const WeightSlot& w : plan.weights) slots[w.value] = &w;
  std::vector<const WeightSlot*> inBlob;
  for (const Value* c : consts) {
    auto it = slots.find(c);
    if (it == slots.end()) {
      errs.push_back(fmt::format("constant '{}' has no weight slot", c->name));
      continue;
    }
    const WeightSlot& w = *it->second;
    if (w.offset < 0) continue;
    if (c->constant && w.bytes != static_cast<int64_t>(c->constant->nbytes()))
      errs.push_back(fmt::format("weight '{}': {} bytes planned, {} needed", c->name, w.bytes,
                                 c->constant->nbytes()));
    if (w.offset % plan.alignment || w.offset + w.bytes > plan.weightBytes)
      errs.push_back(
          fmt::format("weight '{}': offset {} misaligned or past the blob", c->name, w.offset));
    inBlob.push_back(&w);
  }
  std::sort(inBlob.begin(), inBlob.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < inBlob.size(); ++i)
    if (inBlob[i - 1]->offset + inBlob[i - 1]->bytes > inBlob[i]->offset)
      errs.push_back(fmt::format("weights '{}' and '{}' overlap", inBlob[i - 1]->value->name,
                                 inBlob[i]->value->name));

  // Where a value's storage comes from: (storage, offset) of an input, weight or planned value.
  auto storageOf = [&](const Value* v, MemStorage& s, int64_t& off) {
    if (auto it = slots.find(v); it != slots.end() && it->second->offset >= 0) {
      s = MemStorage::Weight;
      off = it->second->offset;
      return true;
    }
    const PlannedValue* pv = plan.find(v);
    if (!pv) return false;
    s = pv->storage;
    off = pv->offset;
    return true;
  };

  // Every node result: planned with its size; views and in-place writes legal.
  std::vector<const PlannedValue*> arena;
  for (const auto& nd : g.nodes)
    for (const Value* o : nd->outputs) {
      if (!o) continue;
      const PlannedValue* pv = plan.find(o);
      if (!pv) {
        errs.push_back(fmt::format("value '{}' is not planned", o->name));
        continue;
      }
      auto need = staticBytes(o->type);
      if (pv->storage == MemStorage::Heap) { // sized at run time: a buffer of its own, or a view
        if (pv->offset < 0 || pv->offset >= plan.heapValues ||
            (pv->how != MemHow::Own && pv->how != MemHow::View))
          errs.push_back(fmt::format("value '{}': bad growable buffer {}", o->name, pv->offset));
        continue;
      }
      if (pv->storage == MemStorage::Dynamic) { // no static size, no alias, a slot of its own
        if (!hasDynamicSize(o->type) || pv->how != MemHow::Own || pv->offset < 0 ||
            pv->offset >= plan.dynamicValues)
          errs.push_back(fmt::format("value '{}' of type {}: bad dynamic slot {}", o->name,
                                     formatType(o->type), pv->offset));
        continue;
      }
      if (need && pv->bf16) *need = o->type.dtype == DType::F32 ? *need / 2 : -1;
      if (!need || *need != pv->bytes)
        errs.push_back(fmt::format("value '{}': {} bytes planned for type {}", o->name, pv->bytes,
                                   formatType(o->type)));
      if (pv->how == MemHow::Own && pv->storage != MemStorage::Arena)
        errs.push_back(fmt::format("value '{}' owns storage outside the arena", o->name));
      if (pv->how == MemHow::Slice) {
        // Inside a Concat's result: as its input at that input's offset, or as the result of a
        // Concat whose inputs are a prefix of its inputs.
        const Value* a = pv->aliasOf;
        const PlannedValue* r = a ? plan.find(a) : nullptr;
        const Node* cat = a ? a->producer : nullptr;
        const std::vector<int64_t> offsets = cat ? concatOffsets(*cat) : std::vector<int64_t>{};
        bool ok = r && r->storage == MemStorage::Arena && pv->storage == MemStorage::Arena &&
                  r->how == MemHow::Own && !offsets.empty() && pv->within >= 0 &&
                  pv->within + pv->bytes <= r->bytes && pv->offset == r->offset + pv->within;
        bool placed = false;
        for (size_t i = 0; ok && i < cat->inputs.size(); ++i)
          placed |= cat->inputs[i] == o && offsets[i] == pv->within;
        const Node* own = o->producer;
        placed |= ok && pv->within == 0 && own && !concatOffsets(*own).empty() &&
                  own->inputs.size() < cat->inputs.size() &&
                  std::equal(own->inputs.begin(), own->inputs.end(), cat->inputs.begin());
        if (!ok || !placed)
          errs.push_back(fmt::format("value '{}': illegal slice of '{}' at {}", o->name,
                                     a ? a->name : "?", pv->within));
      } else if (pv->how != MemHow::Own) {
        MemStorage s{};
        int64_t off = 0;
        const Value* a = pv->aliasOf;
        bool ok = a && storageOf(a, s, off) && s == pv->storage && off == pv->offset;
        if (pv->how == MemHow::View)
          ok = ok && isViewNode(*nd) && nd->inputs[0] == a;
        else
          ok = ok && isElementwiseNode(*nd) && s == MemStorage::Arena &&
               std::find(nd->inputs.begin(), nd->inputs.end(), a) != nd->inputs.end() &&
               a->type.dtype == o->type.dtype && plan.find(a)->bytes == pv->bytes;
        if (!ok)
          errs.push_back(fmt::format("value '{}': illegal {} of '{}'", o->name,
                                     pv->how == MemHow::View ? "view" : "in-place write",
                                     a ? a->name : "?"));
      }
      if (pv->storage == MemStorage::Arena) {
        if (pv->offset % plan.alignment || pv->offset < 0 ||
            pv->offset + pv->bytes > plan.arenaBytes)
          errs.push_back(
              fmt::format("value '{}': offset {} misaligned or past the arena ({} bytes)", o->name,
                          pv->offset, plan.arenaBytes));
        arena.push_back(pv);
      }
    }
  if (!errs.empty()) return errs;

  // Storage groups: follow view/in-place links to the root tensor.
  auto rootOf = [&](const PlannedValue* v) {
    while (v->how != MemHow::Own) v = plan.find(v->aliasOf);
    return v->value;
  };
  std::map<const Value*, std::vector<const PlannedValue*>> groups;
  for (const PlannedValue* v : arena) groups[rootOf(v)].push_back(v);

  // In place over x at node i: nothing of x's group defined before i is read after i or is a
  // graph output.
  for (const auto& [root, members] : groups)
    for (const PlannedValue* o : members) {
      if (o->how != MemHow::InPlace) continue;
      size_t i = life[o->value].def;
      for (const PlannedValue* w : members)
        if (w != o && life[w->value].def < i &&
            (life[w->value].last > i || outputs.count(w->value)))
          errs.push_back(fmt::format("in-place write of '{}' over '{}' clobbers '{}', read later",
                                     o->value->name, o->aliasOf->name, w->value->name));
    }

  // No two values live at the same node overlap in memory, unless they share a root.
  std::sort(arena.begin(), arena.end(),
            [&](auto* a, auto* b) { return life[a->value].def < life[b->value].def; });
  for (size_t x = 0; x < arena.size(); ++x) {
    const PlannedValue* a = arena[x];
    const Life la = life[a->value];
    for (size_t y = x + 1; y < arena.size() && life[arena[y]->value].def <= la.last; ++y) {
      const PlannedValue* b = arena[y];
      if (a->bytes == 0 || b->bytes == 0) continue;
      if (a->offset + a->bytes <= b->offset || b->offset + b->bytes <= a->offset) continue;
      if (rootOf(a) == rootOf(b)) continue;
      errs.push_back(fmt::format("'{}' [{}, {}) live in nodes [{}, {}] overlaps '{}' [{}, {}) live "
                                 "in nodes [{}, {}]",
                                 a->value->name, a->offset, a->offset + a->bytes, la.def, la.last,
                                 b->value->name, b->offset, b->offset + b->bytes,
                                 life[b->value].def, life[b->value].last));
      if (errs.size() > 20) return errs;
    }
  }
  if (plan.lowerBoundBytes > plan.arenaBytes)
    errs.push_back(
        fmt::format("lower bound {} exceeds the arena {}", plan.lowerBoundBytes, plan.arenaBytes));
  return errs;
}

void verifyMemoryPlan(const Graph& g, const MemoryPlan& plan) {
  std::vector<std::string> errs = checkMemoryPlan(g, plan);
  if (errs.empty()) return;
  std::string msg = "invalid memory plan:";
  for (size_t i = 0; i < errs.size() && i < 5; ++i) msg += "\n  " + errs[i];
  if (errs.size() > 5) msg += fmt::format("\n  ... and {} more", errs.size() - 5);
  throw Error(msg);
}

std::string formatMemorySummary(const MemoryPlan& p) {
  return fmt::format("arena {} ({} B), lower bound {} ({} B) at node {}, ratio {:.3f}; no reuse "
                     "would need {}; weights {} in {} slots; {} views, {} in place, {} concats "
                     "in place; placement: {}",
                     human(p.arenaBytes), p.arenaBytes, human(p.lowerBoundBytes), p.lowerBoundBytes,
                     p.lowerBoundNode, p.ratio(), human(p.unsharedBytes), human(p.weightBytes),
                     p.weights.size(), p.views, p.inPlace, p.concatsInPlace, p.fit);
}

std::string formatMemoryPlan(const MemoryPlan& p) {
  std::string s = "memory plan: " + formatMemorySummary(p) + "\n";
  s += fmt::format("weights ({} B, alignment {}):\n", p.weightBytes, p.alignment);
  for (const WeightSlot& w : p.weights) {
    if (w.offset < 0)
      s += fmt::format("  %{}  host object (not in the blob)\n", w.value->name);
    else
      s += fmt::format("  %{}  {} B  @{}\n", w.value->name, w.bytes, w.offset);
  }
  s += "values (name, type, bytes, storage@offset, live nodes, buffer, how):\n";
  for (const PlannedValue& v : p.values) {
    std::string where = v.storage == MemStorage::Arena     ? fmt::format("arena@{}", v.offset)
                        : v.storage == MemStorage::Weight  ? fmt::format("weights@{}", v.offset)
                        : v.storage == MemStorage::Dynamic ? fmt::format("dynamic#{}", v.offset)
                        : v.storage == MemStorage::Heap    ? fmt::format("heap#{}", v.offset)
                                                           : std::string("input");
    std::string how = v.how == MemHow::Own    ? std::string("own")
                      : v.how == MemHow::View ? "view of %" + v.aliasOf->name
                      : v.how == MemHow::Slice
                          ? fmt::format("slice +{} of %{}", v.within, v.aliasOf->name)
                          : "in place over %" + v.aliasOf->name;
    std::string lifeStr = v.value->producer ? fmt::format("[{}, {}]", v.def, v.lastUse) : "all";
    std::string buf = v.buffer >= 0 ? fmt::format("b{}", v.buffer) : "-";
    s += fmt::format("  %{}  {}  {} B  {}  {}  {}  {}\n", v.value->name, formatType(v.value->type),
                     v.bytes, where, lifeStr, buf, how);
  }
  return s;
}

} // namespace aicc
