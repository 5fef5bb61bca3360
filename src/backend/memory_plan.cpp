// The memory planner: liveness (from passes/memory_schedule.h), views and in-place decisions in
// node order, then placement of the buffers in the arena (greedy by size with best or first fit,
// greedy by breadth (the buffers of the most crowded nodes first) with best fit, or first fit in
// execution order; the smallest arena wins). The checker and the printer are in
// memory_plan_check.cpp.
#include "backend/memory_plan.h"

#include "backend/memory_plan_internal.h"
#include "ir/rewrite.h"
#include "ops/op_def.h"
#include "passes/memory_schedule.h"
#include "support/error.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

namespace aicc {

namespace memplan {

bool isViewNode(const Node& n) {
  static const char* kViews[] = {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity"};
  if (!n.domain.empty() || n.outputs.size() != 1 || !n.outputs[0] || !n.hasInput(0)) return false;
  return std::any_of(std::begin(kViews), std::end(kViews),
                     [&](const char* v) { return n.op == v; });
}

bool isElementwiseNode(const Node& n) {
  if (n.outputs.size() != 1 || !n.outputs[0]) return false;
  if (n.def && (n.def->props & kElementwise)) return true;
  if (n.domain != kAiccDomain || n.op != "Fused") return false;
  const Attribute* body = n.attr("body");
  const GraphPtr* g = body ? std::get_if<GraphPtr>(&body->v) : nullptr;
  if (!g || !*g || (*g)->nodes.empty()) return false;
  for (const auto& bn : (*g)->nodes)
    if (!bn->def || !(bn->def->props & kElementwise)) return false;
  return true;
}

std::vector<int64_t> concatOffsets(const Node& n) {
  if (n.op != "Concat" || !n.domain.empty() || n.outputs.size() != 1 || !n.outputs[0] ||
      n.inputs.empty())
    return {};
  const Value* o = n.outputs[0];
  const std::optional<Dims> od =
      o->type.isTensor() && o->type.shape ? toDims(*o->type.shape) : std::nullopt;
  const std::optional<int64_t> total = staticBytes(o->type);
  if (!od || !total) return {};
  const int64_t rank = int64_t(od->size());
  int64_t axis = n.attrInt("axis", 0);
  axis += axis < 0 ? rank : 0;
  if (axis < 0 || axis >= rank) return {};
  for (int64_t d = 0; d < axis; ++d)
    if ((*od)[size_t(d)] != 1) return {};
  std::vector<int64_t> offsets;
  int64_t at = 0;
  for (const Value* x : n.inputs) {
    const std::optional<int64_t> b = x ? staticBytes(x->type) : std::nullopt;
    if (!b || x->type.dtype != o->type.dtype) return {};
    offsets.push_back(at);
    at += *b;
  }
  if (at != *total) return {};
  return offsets;
}

void collectConstants(const Graph& g, std::vector<const Value*>& out) {
  for (const Value* c : g.constants) out.push_back(c);
  for (const auto& n : g.nodes)
    for (const auto& [_, a] : n->attrs) {
      if (auto* sg = std::get_if<GraphPtr>(&a.v)) collectConstants(**sg, out);
      if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
        for (const auto& s : *sgs) collectConstants(*s, out);
    }
}

std::string human(int64_t bytes) {
  double b = static_cast<double>(bytes);
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (b < 1024.0 * 1024) return fmt::format("{:.1f} KiB", b / 1024);
  if (b < 1024.0 * 1024 * 1024) return fmt::format("{:.2f} MiB", b / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
}

} // namespace memplan

bool hasDynamicSize(const Type& t) { return !memplan::staticBytes(t); }

using namespace memplan;

const PlannedValue* MemoryPlan::find(const Value* v) const {
  auto it = index.find(v);
  return it == index.end() ? nullptr : &values[it->second];
}

ValueHome homeOf(const Graph& g, const MemoryPlan& plan, const Value* v) {
  if (v->constant) {
    for (const WeightSlot& w : plan.weights)
      if (w.value == v) {
        AICC_CHECK(w.offset >= 0, "constant '{}' has no place in the weight blob", v->name);
        return {MemStorage::Weight, w.offset, v, 0};
      }
    fail("constant '{}' is not in the memory plan's weights", v->name);
  }
  const PlannedValue* pv = plan.find(v);
  AICC_CHECK(pv, "value '{}' has no place in the memory plan", v->name);
  if (pv->storage == MemStorage::Arena || pv->storage == MemStorage::Dynamic ||
      pv->storage == MemStorage::Heap)
    return {pv->storage, pv->offset, v, 0};
  // A view of a constant or of a graph input: follow the views to it.
  const Value* root = v;
  auto isInput = [&](const Value* x) {
    return std::find(g.inputs.begin(), g.inputs.end(), x) != g.inputs.end();
  };
  while (!root->constant && !isInput(root)) {
    const PlannedValue* p = plan.find(root);
    AICC_CHECK(p && p->aliasOf, "value '{}' is planned as a view of nothing", v->name);
    root = p->aliasOf;
  }
  if (pv->storage == MemStorage::Weight) {
    AICC_CHECK(root->constant, "value '{}' is planned in the weights but views no constant",
               v->name);
    return {MemStorage::Weight, pv->offset, root, 0};
  }
  AICC_CHECK(isInput(root), "value '{}' is planned as an input view but views no input", v->name);
  size_t k = size_t(std::find(g.inputs.begin(), g.inputs.end(), root) - g.inputs.begin());
  return {MemStorage::Input, 0, root, k};
}

bool isNumericSequence(const Type& t) {
  if (t.kind != Type::Kind::Sequence && t.kind != Type::Kind::Optional) return false;
  const Type& e = *t.elem;
  if (t.kind == Type::Kind::Optional && e.kind == Type::Kind::Sequence) return isNumericSequence(e);
  return e.isTensor() && dtypeSize(e.dtype) > 0;
}

std::optional<std::string> unresolvedShape(const Graph& g, bool sequences) {
  for (const auto& n : g.nodes) {
    for (const Value* o : n->outputs)
      if (o && (!o->type.isTensor() || !o->type.shape || !toDims(*o->type.shape)) &&
          !(sequences && isNumericSequence(o->type)))
        return fmt::format("{}: result '{}' has type {} for these input shapes", n->describe(),
                           o->name, formatType(o->type));
    for (const auto& [_, a] : n->attrs) {
      if (auto* sg = std::get_if<GraphPtr>(&a.v))
        if (auto why = unresolvedShape(**sg, sequences)) return why;
      if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
        for (const auto& x : *sgs)
          if (auto why = unresolvedShape(*x, sequences)) return why;
    }
  }
  return std::nullopt;
}

bool producesInPlace(const MemoryPlan& plan, const Node& n) {
  if (isViewNode(n)) {
    const PlannedValue* pv = plan.find(n.outputs[0]);
    return pv && pv->how == MemHow::View;
  }
  const std::vector<int64_t> offsets = concatOffsets(n);
  const PlannedValue* out = offsets.empty() ? nullptr : plan.find(n.outputs[0]);
  if (!out || out->storage != MemStorage::Arena) return false;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const PlannedValue* x = plan.find(n.inputs[i]);
    if (!x || x->how != MemHow::Slice || x->buffer != out->buffer ||
        x->offset != out->offset + offsets[i])
      return false;
  }
  return true;
}

namespace {

using Fit = MemoryPlanOptions::Fit;

// Concat in place (memory_plan.h): the values that lie inside a Concat's result, with that result
// and their byte offset in it.
struct SliceOf {
  const Value* in;
  int64_t within;
};
std::map<const Value*, SliceOf> concatSlices(const Graph& g, const MemoryPlanOptions& opts) {
  const int64_t alignment = opts.alignment;
  struct Candidate {
    const Node* n;
    std::vector<int64_t> offsets;
  };
  std::vector<Candidate> candidates;
  for (const auto& np : g.nodes) {
    std::vector<int64_t> offsets = concatOffsets(*np);
    bool ok = !offsets.empty() && !isGraphOutput(g, np->outputs[0]) &&
              !(opts.runSized && opts.runSized(np->outputs[0]));
    std::set<const Value*> seen;
    for (size_t i = 0; ok && i < np->inputs.size(); ++i) {
      const Value* x = np->inputs[i];
      const Node* producer = x->producer;
      ok = offsets[i] % alignment == 0 && producer && x->owner == &g && !x->constant &&
           !isGraphOutput(g, x) && seen.insert(x).second && !isViewNode(*producer) &&
           !(producer->op == "Concat" && producer->domain.empty()) &&
           (i + 1 == np->inputs.size() || !opts.fixedSize || opts.fixedSize(x)) &&
           !(opts.runSized && opts.runSized(x));
    }
    if (ok) candidates.push_back({np.get(), std::move(offsets)});
  }
  auto prefixOf = [](const Node& a, const Node& b) {
    return a.inputs.size() < b.inputs.size() &&
           std::equal(a.inputs.begin(), a.inputs.end(), b.inputs.begin());
  };
  // Roots: candidates that are no other's prefix, in node order; each takes its inputs unless an
  // earlier root took one, and its prefixes become slices at 0.
  std::map<const Value*, SliceOf> slices;
  for (const Candidate& r : candidates) {
    auto longer = [&](const Candidate& c) { return prefixOf(*r.n, *c.n); };
    auto taken = [&](const Value* x) { return slices.count(x) > 0; };
    if (std::any_of(candidates.begin(), candidates.end(), longer) ||
        std::any_of(r.n->inputs.begin(), r.n->inputs.end(), taken))
      continue;
    const Value* result = r.n->outputs[0];
    for (size_t i = 0; i < r.n->inputs.size(); ++i) slices[r.n->inputs[i]] = {result, r.offsets[i]};
    for (const Candidate& c : candidates)
      if (prefixOf(*c.n, *r.n) && !taken(c.n->outputs[0])) slices[c.n->outputs[0]] = {result, 0};
  }
  return slices;
}

// The order in which a placement considers the buffers (those with a size).
std::vector<size_t> placementOrder(const std::vector<PlannedBuffer>& bufs, size_t numNodes,
                                   Fit fit) {
  std::vector<size_t> order;
  for (size_t i = 0; i < bufs.size(); ++i)
    if (bufs[i].alignedBytes > 0) order.push_back(i);
  auto bySize = [&](size_t a, size_t b) {
    const PlannedBuffer &x = bufs[a], &y = bufs[b];
    if (x.alignedBytes != y.alignedBytes) return x.alignedBytes > y.alignedBytes;
    return x.start < y.start || (x.start == y.start && a < b);
  };
  if (fit == Fit::FirstFitByOrder) {
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return bufs[a].start != bufs[b].start ? bufs[a].start < bufs[b].start : bySize(a, b);
    });
  } else if (fit == Fit::BestFitByBreadth) {
    // Nodes with the most live bytes first; at each, its live buffers not yet ordered, largest
    // first.
    std::vector<std::vector<size_t>> liveAt(numNodes);
    std::vector<int64_t> breadth(numNodes, 0);
    for (size_t b : order)
      for (size_t i = bufs[b].start; i <= bufs[b].end && i < numNodes; ++i) {
        liveAt[i].push_back(b);
        breadth[i] += bufs[b].alignedBytes;
      }
    std::vector<size_t> nodes(numNodes);
    std::iota(nodes.begin(), nodes.end(), size_t{0});
    std::stable_sort(nodes.begin(), nodes.end(),
                     [&](size_t a, size_t b) { return breadth[a] > breadth[b]; });
    std::vector<bool> taken(bufs.size(), false);
    order.clear();
    for (size_t i : nodes) {
      std::sort(liveAt[i].begin(), liveAt[i].end(), bySize);
      for (size_t b : liveAt[i])
        if (!taken[b]) {
          taken[b] = true;
          order.push_back(b);
        }
    }
  } else {
    std::sort(order.begin(), order.end(), bySize);
  }
  return order;
}

// Offsets for the buffers (aligned sizes, lifetimes) under one placement; returns the arena size.
int64_t place(const std::vector<PlannedBuffer>& bufs, size_t numNodes, Fit fit,
              std::vector<int64_t>& offsets) {
  offsets.assign(bufs.size(), 0);
  std::vector<size_t> placed; // sorted by offset
  int64_t arena = 0;
  for (size_t b : placementOrder(bufs, numNodes, fit)) {
    const PlannedBuffer& x = bufs[b];
    int64_t prev = 0, best = -1, bestGap = std::numeric_limits<int64_t>::max();
    for (size_t p : placed) {
      const PlannedBuffer& y = bufs[p];
      if (y.end < x.start || x.end < y.start) continue; // not live together
      int64_t gap = offsets[p] - prev;
      if (gap >= x.alignedBytes && gap < bestGap) {
        best = prev;
        bestGap = gap;
        if (fit == Fit::FirstFitBySize || fit == Fit::FirstFitByOrder) break;
      }
      prev = std::max(prev, offsets[p] + y.alignedBytes);
    }
    offsets[b] = best >= 0 ? best : prev;
    arena = std::max(arena, offsets[b] + x.alignedBytes);
    auto at = std::upper_bound(placed.begin(), placed.end(), offsets[b],
                               [&](int64_t off, size_t q) { return off < offsets[q]; });
    placed.insert(at, b);
  }
  return arena;
}

const char* fitName(Fit f) {
  switch (f) {
  case Fit::BestFitBySize:
    return "best-fit by size";
  case Fit::FirstFitBySize:
    return "first-fit by size";
  case Fit::FirstFitByOrder:
    return "first-fit in execution order";
  case Fit::BestFitByBreadth:
    return "best-fit by breadth";
  case Fit::Auto:
    break;
  }
  return "auto";
}

} // namespace

MemoryPlan planMemory(const Graph& g, const MemoryPlanOptions& opts) {
  AICC_CHECK(opts.alignment > 0 && (opts.alignment & (opts.alignment - 1)) == 0,
             "memory plan: alignment {} is not a power of two", opts.alignment);
  MemoryPlan p;
  p.numNodes = g.nodes.size();
  p.alignment = opts.alignment;

  // Weights: one aligned slot each in the read-only blob (string tensors are host objects: -1).
  std::vector<const Value*> consts;
  collectConstants(g, consts);
  std::map<const Value*, int64_t> weightOffset;
  for (const Value* c : consts) {
    WeightSlot w{c, -1, 0};
    if (c->constant && c->constant->dtype() != DType::String) {
      w.bytes = static_cast<int64_t>(c->constant->nbytes());
      w.offset = p.weightBytes;
      p.weightBytes = alignUp(p.weightBytes + w.bytes, opts.alignment);
    }
    weightOffset[c] = w.offset;
    p.weights.push_back(w);
  }

  for (const Value* in : g.inputs) {
    PlannedValue v;
    v.value = in;
    v.storage = MemStorage::Input;
    v.bytes = staticBytes(in->type).value_or(-1);
    v.lastUse = p.numNodes ? p.numNodes - 1 : 0;
    p.index[in] = p.values.size();
    p.values.push_back(v);
  }

  MemoryReport rep = analyzeMemory(g);
  std::map<const Value*, const TensorLiveness*> live;
  for (const TensorLiveness& t : rep.tensors) live[t.value] = &t;

  auto newBuffer = [&](PlannedValue& v, bool isOut) {
    PlannedBuffer b;
    b.bytes = v.bytes;
    b.alignedBytes = alignUp(v.bytes, opts.alignment);
    b.start = v.def;
    b.end = v.lastUse;
    b.holdsOutput = isOut;
    b.members.push_back(v.value);
    v.buffer = static_cast<int>(p.buffers.size());
    p.buffers.push_back(std::move(b));
  };
  // Concat in place: the buffer of each root Concat's result, made when its first member is.
  std::map<const Value*, SliceOf> slices;
  if (opts.concatInPlace) slices = concatSlices(g, opts);
  std::map<const Value*, int> sliceBuffer;
  std::set<int> sliced;
  auto join = [&](PlannedValue& v, int buf, bool isOut) {
    PlannedBuffer& b = p.buffers[buf];
    v.buffer = buf;
    b.end = std::max(b.end, v.lastUse);
    b.holdsOutput |= isOut;
    b.members.push_back(v.value);
  };

  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = *g.nodes[i];
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const Value* o = n.outputs[k];
      if (!o) continue;
      const TensorLiveness* t = live.at(o);
      PlannedValue v;
      v.value = o;
      v.def = t->def;
      v.lastUse = t->lastUse;
      const bool bf16 = opts.bf16Values && opts.bf16Values->count(o);
      // Outside the arena: a dynamic slot, a growable buffer or a view of one.
      const bool dynamic = hasDynamicSize(o->type), heap = opts.runSized && opts.runSized(o);
      if (dynamic || heap) {
        const PlannedValue* s = isViewNode(n) && opts.views ? p.find(n.inputs[0]) : nullptr;
        v.storage = dynamic ? MemStorage::Dynamic : MemStorage::Heap;
        if (heap && s && s->storage == MemStorage::Heap) {
          v.how = MemHow::View;
          v.aliasOf = n.inputs[0];
          v.offset = s->offset;
          ++p.views;
        } else {
          v.offset = dynamic ? p.dynamicValues++ : p.heapValues++;
        }
        p.index[o] = p.values.size();
        p.values.push_back(v);
        continue;
      }
      v.bf16 = bf16;
      v.bytes = bf16 ? t->bytes / 2 : t->bytes; // (f32 values only)
      bool isOut = isGraphOutput(g, o);
      bool done = false;

      if (auto sl = slices.find(o); sl != slices.end()) {
        v.how = MemHow::Slice;
        v.aliasOf = sl->second.in;
        v.within = sl->second.within;
        auto [b, fresh] = sliceBuffer.emplace(sl->second.in, -1);
        if (fresh) { // the whole result's buffer, from this first member on
          PlannedBuffer whole;
          whole.bytes = *staticBytes(sl->second.in->type);
          whole.alignedBytes = alignUp(whole.bytes, opts.alignment);
          whole.start = whole.end = v.def;
          b->second = int(p.buffers.size());
          p.buffers.push_back(std::move(whole));
          sliced.insert(b->second);
        }
        join(v, b->second, isOut);
        done = true;
      } else if (auto root = sliceBuffer.find(o); root != sliceBuffer.end()) {
        join(v, root->second, isOut); // the result whose inputs already lie in it
        done = true;
      }

      if (!done && opts.views && isViewNode(n)) {
        const Value* src = n.inputs[0];
        if (auto w = weightOffset.find(src); w != weightOffset.end() && w->second >= 0) {
          v.storage = MemStorage::Weight;
          v.offset = w->second;
          done = true;
        } else if (const PlannedValue* s = p.find(src);
                   s && s->storage != MemStorage::Dynamic && s->storage != MemStorage::Heap &&
                   (s->bytes == v.bytes || s->storage == MemStorage::Input)) {
          v.storage = s->storage;
          v.offset = s->offset;
          v.within = s->within;
          if (s->storage == MemStorage::Arena) join(v, s->buffer, isOut);
          done = true;
        }
        if (done) {
          v.how = MemHow::View;
          v.aliasOf = src;
          ++p.views;
        }
      }

      if (!done && opts.inPlace && v.bytes > 0 && isElementwiseNode(n)) {
        for (const Value* x : n.inputs) {
          const PlannedValue* s = x ? p.find(x) : nullptr;
          if (!s || s->storage != MemStorage::Arena || s->bytes != v.bytes ||
              x->type.dtype != o->type.dtype)
            continue;
          const PlannedBuffer& b = p.buffers[s->buffer];
          // (read later, handed out, or holding a Concat's slices)
          if (b.holdsOutput || b.end != i || sliced.count(s->buffer)) continue;
          v.how = MemHow::InPlace;
          v.aliasOf = x;
          join(v, s->buffer, isOut);
          ++p.inPlace;
          done = true;
          break;
        }
      }

      if (!done) newBuffer(v, isOut);
      p.index[o] = p.values.size();
      p.values.push_back(v);
    }
  }

  // Placement.
  std::vector<Fit> fits = {opts.fit};
  if (opts.fit == Fit::Auto)
    fits = {Fit::BestFitBySize, Fit::FirstFitBySize, Fit::BestFitByBreadth, Fit::FirstFitByOrder};
  std::vector<int64_t> best;
  for (Fit f : fits) {
    std::vector<int64_t> offs;
    int64_t arena = place(p.buffers, p.numNodes, f, offs);
    if (best.empty() || arena < p.arenaBytes) {
      best = std::move(offs);
      p.arenaBytes = arena;
      p.fit = fitName(f);
    }
  }
  for (size_t b = 0; b < p.buffers.size(); ++b) p.buffers[b].offset = best[b];
  for (PlannedValue& v : p.values)
    if (v.storage == MemStorage::Arena) v.offset = p.buffers[v.buffer].offset + v.within;
  for (const auto& n : g.nodes) p.concatsInPlace += n->op == "Concat" && producesInPlace(p, *n);

  // Lower bound: the largest sum of aligned buffer sizes live at one node.
  std::vector<int64_t> diff(p.numNodes + 1, 0);
  for (const PlannedBuffer& b : p.buffers) {
    diff[b.start] += b.alignedBytes;
    diff[b.end + 1] -= b.alignedBytes;
    p.unsharedBytes += b.alignedBytes;
  }
  int64_t cur = 0;
  for (size_t i = 0; i < p.numNodes; ++i) {
    cur += diff[i];
    if (cur > p.lowerBoundBytes) {
      p.lowerBoundBytes = cur;
      p.lowerBoundNode = i;
    }
  }
  return p;
}

} // namespace aicc
