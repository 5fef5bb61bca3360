#include "passes/assign_layout.h"

#include "ir/rewrite.h"
#include "ops/layout.h"
#include "ops/op_def.h"
#include "passes/dim_steps.h"

#include <numeric>
#include <set>

namespace aicc {
namespace {

// The symbols' upper ends (the compile's ranges, GraphPassOptions::sizeRanges).
using Bounds = std::map<std::string, int64_t>;

// The dims every decision here reads: a symbolic batch (a leading symbol) counted as 1, every
// decision being per image, other symbols (an image's sides) at their upper ends, the sizes the
// plan holds (a smaller run takes the same kernels: kernels/conv_nchwc.h runs rows of any width).
// The blocked types keep the symbols (blockedType).
std::optional<Dims> planDims(const Bounds& sizes, const Value* v) {
  if (!v || !v->type.isTensor() || !v->type.shape) return std::nullopt;
  Shape s = *v->type.shape;
  if (!s.empty() && !s[0].isStatic() && !s[0].derived && !s[0].symbol.empty()) s[0] = Dim::known(1);
  return toDims(withSymbols(s, sizes));
}

bool isF32Rank4(const Bounds& sizes, const Value* v) {
  auto d = planDims(sizes, v);
  return d && d->size() == 4 && v->type.dtype == DType::F32;
}

// The blocked type of a [N, C, H, W] value: [N, ceil(C / 16), H, W, 16], its symbols kept.
Type blockedType(const Bounds& sizes, const Value* v) {
  const Dims d = *planDims(sizes, v);
  const Shape& s = *v->type.shape;
  return Type::tensor(v->type.dtype,
                      Shape{s[0], Dim::known((d[1] + kLayoutBlock - 1) / kLayoutBlock), s[2], s[3],
                            Dim::known(kLayoutBlock)});
}

// Whether a and b have one shape, dim by dim (known dims: static, or the same symbols).
bool sameShape(const Value* a, const Value* b) {
  if (!a->type.shape || !b->type.shape || *a->type.shape != *b->type.shape) return false;
  return std::all_of(a->type.shape->begin(), a->type.shape->end(),
                     [](const Dim& d) { return d.isStatic() || !d.symbol.empty(); });
}

// What kernels/conv_nchwc.h runs (nchwcConvApplies); under 16 input channels only group 1 (a
// stem, read as NCHW planes: isPlaneConv).
double blockedConvFlops(const Bounds& sizes, const Node& n) {
  if (n.op != "Conv" || !n.domain.empty() || n.inputs.size() < 2 || !n.inputs[0] || !n.inputs[1] ||
      !n.inputs[1]->isConstant() || n.outputs.size() != 1 || !isF32Rank4(sizes, n.inputs[0]) ||
      !isF32Rank4(sizes, n.outputs[0]) || !isF32Rank4(sizes, n.inputs[1]))
    return 0;
  if (n.hasInput(2) && !n.inputs[2]->isConstant()) return 0;
  const int64_t group = n.attrInt("group", 1);
  if (n.attrString("auto_pad") != "NOTSET") return 0;
  for (int64_t d : n.attrInts("dilations", {1, 1}))
    if (d != 1) return 0;
  const Dims s = n.attrInts("strides", {1, 1});
  if (s.size() != 2 || s[0] < 1 || (s[1] != 1 && s[1] != 2)) return 0;
  const Dims x = *planDims(sizes, n.inputs[0]), w = *planDims(sizes, n.inputs[1]),
             y = *planDims(sizes, n.outputs[0]);
  // Rows of 14+ pixels, or 7 (two rows to a tile) at stride 1 with at most kMax7x7K weights per
  // output channel (assign_layout.h); stems read rows of 14+.
  const bool plane = x[1] < kLayoutBlock;
  const bool rowsOk =
      y[3] >= kMinBlockedRow || (!plane && 2 * y[3] == kMinBlockedRow && y[2] >= 2 &&
                                 s == Dims{1, 1} && w[1] * w[2] * w[3] <= kMax7x7K);
  if (!rowsOk || (plane && group != 1)) return 0;
  if (group != 1 && (group != x[1] || w[0] != x[1] || w[1] != 1)) return 0; // depthwise only
  return 2.0 * double(y[0] * y[1] * y[2] * y[3]) * double(w[1] * w[2] * w[3]);
}

// A convolution whose few input channels stay NCHW (conv2dNchwToNchw16c): the image's stem.
bool isPlaneConv(const Bounds& sizes, const Node& n) {
  return n.op == "Conv" && (*planDims(sizes, n.inputs[0]))[1] < kLayoutBlock;
}

bool isLanewise(const Bounds& sizes, const Node& n) {
  static const std::set<std::string> kOps = {"Relu",        "Clip",    "LeakyRelu", "HardSwish",
                                             "HardSigmoid", "Sigmoid", "Tanh",      "Add",
                                             "Sub",         "Mul",     "Swish"};
  return n.domain.empty() && kOps.count(n.op) && n.outputs.size() == 1 &&
         isF32Rank4(sizes, n.outputs[0]);
}

bool isScalarConstant(const Value* v) { return v->isConstant() && v->constant->numel() == 1; }

// A constant that broadcasts along the channel dim of `out` ([N, C, H, W]) only: rank <= 4, its
// C values on that axis (right-aligned), ones elsewhere. It becomes a blocked [1, C/16, 1, 1, 16]
// constant (zeros past C).
bool isChannelConstant(const Value* v, const Dims& out) {
  if (!v->isConstant() || v->type.dtype != DType::F32 || !v->constant->defined()) return false;
  const Dims& d = v->constant->shape();
  if (d.size() > 4 || d.size() < 3 || v->constant->numel() != out[1]) return false;
  for (size_t j = 0; j < d.size(); ++j)
    if (d[j] != (j + 4 - d.size() == 1 ? out[1] : 1)) return false;
  return true;
}

bool isGlobalPool(const Bounds& sizes, const Node& n) {
  return n.op == "GlobalAveragePool" && n.domain.empty() && n.inputs.size() == 1 &&
         isF32Rank4(sizes, n.inputs[0]) && n.outputs.size() == 1 && isF32Rank4(sizes, n.outputs[0]);
}

// A 2-D MaxPool (no Indices) or AveragePool with explicit pads and dilation 1: on NCHW16c it is
// the 3-D pool over (H, W, lanes) with a window one lane wide (ONNX semantics unchanged, so the
// interpreter and every pass see an ordinary pool; the backend runs it blocked).
bool isWindowPool(const Bounds& sizes, const Node& n) {
  if ((n.op != "MaxPool" && n.op != "AveragePool") || !n.domain.empty() || n.inputs.size() != 1 ||
      !isF32Rank4(sizes, n.inputs[0]) || n.outputs.empty() || !isF32Rank4(sizes, n.outputs[0]) ||
      (n.outputs.size() > 1 && n.outputs[1]) || n.attrString("auto_pad") != "NOTSET" ||
      n.attrInts("kernel_shape").size() != 2)
    return false;
  for (int64_t d : n.attrInts("dilations", {1, 1}))
    if (d != 1) return false;
  return true;
}

// Concat along the channels where every input but the last fills whole blocks: the concatenation
// of the blocked inputs along their block dim is the blocked result.
bool isBlockConcat(const Bounds& sizes, const Node& n) {
  if (n.op != "Concat" || !n.domain.empty() || n.outputs.size() != 1 ||
      !isF32Rank4(sizes, n.outputs[0]))
    return false;
  const int64_t axis = n.attrInt("axis");
  if (axis != 1 && axis != -3) return false;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!n.inputs[i] || !isF32Rank4(sizes, n.inputs[i]) || n.inputs[i]->isConstant()) return false;
    if (i + 1 < n.inputs.size() && (*planDims(sizes, n.inputs[i]))[1] % kLayoutBlock) return false;
  }
  return true;
}

// The inputs of candidate n that are activations: a convolution's X (not a stem's), a lane-wise
// op's or a Concat's operands but scalar and channel constants.
std::vector<size_t> activationInputs(const Bounds& sizes, const Node& n) {
  if (n.op == "Conv") return isPlaneConv(sizes, n) ? std::vector<size_t>{} : std::vector<size_t>{0};
  std::vector<size_t> ins;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i] && !n.inputs[i]->isConstant()) ins.push_back(i);
  return ins;
}

Tensor blockedChannelConstant(const Tensor& t) {
  const int64_t C = t.numel(), blocks = (C + kLayoutBlock - 1) / kLayoutBlock;
  Tensor b(DType::F32, {1, blocks, 1, 1, kLayoutBlock});
  std::copy_n(t.data<float>(), C, b.data<float>());
  return b;
}

} // namespace

bool assignLayout(Model& m, int64_t block, const std::vector<SizeRange>& ranges) {
  if (block != kLayoutBlock) return false;
  Bounds sizes;
  for (const SizeRange& r : ranges) setSymbolValue(sizes, r.name, r.step, r.hi);
  Graph& g = *m.graph;
  // 1. Candidates, in topological order: convolutions, then lane-wise ops fed by candidates.
  std::map<const Node*, double> flops; // candidate -> its convolution FLOPs (0: lane-wise)
  std::set<const Value*> blocked;
  for (const auto& up : g.nodes) {
    const Node& n = *up;
    if (double f = blockedConvFlops(sizes, n)) {
      if (isPlaneConv(sizes, n) && blocked.count(n.inputs[0])) continue; // reads NCHW, not blocked
      flops[&n] = f;
      blocked.insert(n.outputs[0]);
      continue;
    }
    // Pools of a blocked value: GlobalAveragePool to a blocked [N, C/16, 1, 1, 16] mean
    // (squeeze-excite), MaxPool / AveragePool windows (a ResNet's stem, DenseNet's transitions).
    if (isGlobalPool(sizes, n) || isWindowPool(sizes, n)) {
      if (blocked.count(n.inputs[0])) {
        flops[&n] = 0;
        blocked.insert(n.outputs[0]);
      }
      continue;
    }
    const bool concat = isBlockConcat(sizes, n);
    if (!concat && !isLanewise(sizes, n)) continue;
    const Dims out = *planDims(sizes, n.outputs[0]);
    bool any = false, ok = true;
    for (const Value* v : n.inputs) {
      if (!v || isScalarConstant(v) || (!concat && isChannelConstant(v, out))) continue;
      const auto d = planDims(sizes, v);
      const bool same = sameShape(v, n.outputs[0]) && !v->isConstant();
      // A [N, C, 1, 1] activation (squeeze-excite's scale) broadcasts blocked as well.
      const bool perChannel = !concat && !v->isConstant() && isF32Rank4(sizes, v) &&
                              (*v->type.shape)[0] == (*n.outputs[0]->type.shape)[0] &&
                              *d == Dims{out[0], out[1], 1, 1};
      ok = ok && (same || perChannel || concat);
      any = any || blocked.count(v);
    }
    if (any && ok) {
      flops[&n] = 0;
      blocked.insert(n.outputs[0]);
    }
  }
  if (flops.empty()) return false;

  // 2. Regions: candidates connected through values; each keeps its nodes when its convolutions
  // outweigh the elements reordered at its boundary.
  std::map<const Node*, const Node*> parent;
  std::function<const Node*(const Node*)> root = [&](const Node* n) {
    return parent[n] == n ? n : parent[n] = root(parent[n]);
  };
  for (const auto& [n, f] : flops) parent[n] = n;
  for (const auto& [n, f] : flops)
    for (const Value* v : n->inputs)
      if (v && v->producer && flops.count(v->producer)) parent[root(n)] = root(v->producer);
  const auto counts = useCounts(g);
  std::map<const Node*, double> work, reordered;
  std::set<const Value*> entering;
  for (const auto& [n, f] : flops) {
    const Node* r = root(n);
    work[r] += f;
    for (size_t i : activationInputs(sizes, *n)) {
      const Value* v = n->inputs[i];
      if (!(v->producer && flops.count(v->producer)) && entering.insert(v).second)
        reordered[r] += double(checkedNumel(*planDims(sizes, v)));
    }
  }
  for (const auto& [n, f] : flops) {
    const Value* v = n->outputs[0];
    int64_t inside = 0;
    for (const Use& u : usesOf(g, v)) inside += flops.count(u.node) && u.node->owner == &g;
    if (inside < counts.at(v)) {
      reordered[root(n)] += double(checkedNumel(*planDims(sizes, v)));
    }
  }
  std::vector<Node*> chosen;
  for (const auto& up : g.nodes)
    if (flops.count(up.get())) {
      const Node* r = root(up.get());
      if (work[r] >= kFlopsPerReorderedElement * reordered[r]) chosen.push_back(up.get());
    }
  if (chosen.empty()) return false;
  const std::set<const Node*> inRegion(chosen.begin(), chosen.end());

  // 3. Rewrite: each chosen node reads and writes blocked values; reorders at the boundary.
  std::map<const Value*, Value*> blockedOf;
  for (Node* n : chosen) {
    for (Value*& v : n->inputs) // channel constants of lane-wise ops, blocked
      if (v && v->isConstant() && !isScalarConstant(v) && n->op != "Conv")
        v = g.addConstant(freshName(g, v->name + "_nchw16c"), blockedChannelConstant(*v->constant));
    for (size_t i : activationInputs(sizes, *n)) {
      Value*& v = n->inputs[i];
      auto it = blockedOf.find(v);
      if (it == blockedOf.end()) {
        Node* r = insertNode(g, n, "Reorder", {v}, 1, v->name + "_nchw16c", kAiccDomain);
        r->attrs["to"] = Attribute{std::string("nchw16c")};
        r->outputs[0]->type = blockedType(sizes, v);
        it = blockedOf.emplace(v, r->outputs[0]).first;
      }
      v = it->second;
    }
    if (n->op == "Conv") {
      n->op = "ConvNchwc";
      n->domain = kAiccDomain;
      n->def = OpRegistry::instance().find(kAiccDomain, "ConvNchwc");
    } else if (n->op == "GlobalAveragePool") { // the mean over H and W of each lane
      n->op = "ReduceMean";
      n->def = OpRegistry::instance().find("", "ReduceMean");
      n->inputs.push_back(
          g.addConstant(freshName(g, n->outputs[0]->name + "_axes"), Tensor::fromI64({2, 3})));
      n->attrs["keepdims"] = Attribute{int64_t(1)};
    } else if (n->op == "MaxPool" || n->op == "AveragePool") { // one lane wide along the block
      Dims k = n->attrInts("kernel_shape"), st = n->attrInts("strides", {1, 1});
      k.push_back(1), st.push_back(1);
      n->attrs["kernel_shape"] = Attribute{k};
      n->attrs["strides"] = Attribute{st};
      if (n->attrs.count("dilations")) n->attrs["dilations"] = Attribute{Dims{1, 1, 1}};
      if (n->attrs.count("pads")) {
        const Dims p = n->attrInts("pads");
        n->attrs["pads"] = Attribute{Dims{p.at(0), p.at(1), 0, p.at(2), p.at(3), 0}};
      }
    }
    Value* out = n->outputs[0];
    Value* b = g.addValue(freshName(g, out->name + "_nchw16c"), blockedType(sizes, out));
    b->producer = n;
    n->outputs[0] = b;
    blockedOf[out] = b;
    bool outside = isGraphOutput(g, out);
    for (const Use& u : usesOf(g, out)) outside = outside || !inRegion.count(u.node);
    if (!outside) continue;
    // The original value becomes the result of the reorder back, for the nodes outside.
    const size_t at = nodeIndex(g, n) + 1;
    Node* r = insertNode(g, at < g.nodes.size() ? g.nodes[at].get() : nullptr, "Reorder", {b}, 1,
                         out->name + "_nchw", kAiccDomain);
    r->attrs["to"] = Attribute{std::string("nchw")};
    r->attrs["channels"] = Attribute{(*planDims(sizes, out))[1]};
    r->outputs[0] = out;
    out->producer = r;
  }
  g.eraseUnusedValues();
  return true;
}

} // namespace aicc
