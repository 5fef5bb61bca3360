#include "backend/op_select.h"

#include "kernels/registry.h"
#include "ops/op_def.h"

#include <cmath>
#include <fmt/format.h>

namespace aicc::backend {

namespace {

constexpr double kHz = 3.0e9;           // nominal core clock
constexpr double kBytesPerSec = 20.0e9; // nominal per-core memory bandwidth

// The compute node the candidates are about: the node, or an epilogue's head.
const Node& headOf(const Node& n) {
  if (n.domain == kAiccDomain && n.op == "Fused" && n.attrString("kind") == "epilogue") {
    const Graph& g = *std::get<GraphPtr>(n.attr("body")->v);
    if (!g.nodes.empty()) return *g.nodes[0];
  }
  return n;
}

double elems(const Value* v) {
  if (!v || !v->type.isTensor() || !v->type.shape) return 0;
  auto d = toDims(*v->type.shape);
  if (!d) return 0;
  double x = 1;
  for (int64_t k : *d) x *= static_cast<double>(k);
  return x;
}

// Flops of the head op (2 per multiply-add); elementwise-like ops count one per output element.
double flopsOf(const Node& h) {
  double out = h.outputs.empty() ? 0 : elems(h.outputs[0]);
  if (h.op == "MatMul" || h.op == "Gemm") {
    const Value* a = h.inputs.at(0);
    if (!a->type.shape || a->type.shape->empty()) return out;
    auto d = toDims(*a->type.shape);
    if (!d) return out;
    int64_t k = h.op == "Gemm" && h.attrInt("transA") ? (*d)[0] : d->back();
    return 2.0 * out * static_cast<double>(k);
  }
  if (h.op == "Conv" && h.inputs.size() > 1) {
    // per output: Cin/group * prod(kernel) MACs = numel(W) / Cout
    const Value* w = h.inputs[1];
    auto d = w->type.shape ? toDims(*w->type.shape) : std::nullopt;
    if (!d || d->empty() || (*d)[0] == 0) return out;
    return 2.0 * out * elems(w) / static_cast<double>((*d)[0]);
  }
  return out;
}

double bytesOf(const Node& n) {
  double b = 0;
  for (const Value* v : n.inputs)
    if (v) b += elems(v) * 4;
  for (const Value* v : n.outputs)
    if (v) b += elems(v) * 4;
  return b;
}

// Peak f32 flops per cycle of an ISA (two FMA ports).
double peakPerCycle(kernels::Isa isa) {
  switch (isa) {
  case kernels::Isa::Avx512:
    return 64;
  case kernels::Isa::Avx2:
    return 32;
  default:
    return 4;
  }
}

bool targetRuns(const Target& t, kernels::Isa isa) {
  switch (isa) {
  case kernels::Isa::Avx512:
    return t.has(CpuFeature::AVX512F) && t.has(CpuFeature::AVX512VL);
  case kernels::Isa::Avx2:
    return t.has(CpuFeature::AVX2) && t.has(CpuFeature::FMA);
  default:
    return true;
  }
}

Cost estimate(double flops, double bytes, double flopsPerSec) {
  Cost c;
  c.flops = flops, c.bytes = bytes;
  c.seconds = std::max(flops / flopsPerSec, bytes / kBytesPerSec);
  return c;
}

// Whether the lowering accepts the candidate for this node (the authoritative predicate).
bool lowers(const Node& n, const std::string& cand, std::string* why) {
  loop::LowerOptions o;
  o.simplify = false;
  o.chooseCandidate = [cand](const Node&) { return cand; };
  std::optional<loop::LoweredNode> r;
  std::string w;
  if (!loop::lowerNonElementwise(n, "probe", o, r, &w)) {
    if (why) *why = "no lowering for " + n.op;
    return false;
  }
  if (!r && why) *why = w;
  return r.has_value();
}

Candidate loopCandidate(bool compute) {
  Candidate c;
  c.name = "loop";
  c.kind = CandidateKind::LoopNest;
  c.schedule["kind"] = std::string("loop-nest");
  c.applies = [](const Node& n, const Target&, std::string* why) { return lowers(n, "loop", why); };
  c.cost = [compute](const Node& n, const Target& t) {
    // Generated nests: vectorized inner loops, no register blocking: a fraction of the peak.
    double lanes = std::max(1, t.vectorLanes(4));
    double perCycle = compute ? 0.25 * lanes : lanes;
    return estimate(flopsOf(headOf(n)), bytesOf(n), perCycle * kHz);
  };
  return c;
}

} // namespace

std::string_view candidateKindName(CandidateKind k) {
  return k == CandidateKind::LoopNest ? "loop-nest" : "micro-kernel";
}

std::vector<Candidate> candidatesFor(const Node& n) {
  if (!loop::hasNonElementwiseLowering(n)) return {};
  const Node& h = headOf(n);
  bool gemmLike = h.domain.empty() && (h.op == "MatMul" || h.op == "Gemm" || h.op == "Conv");
  std::vector<Candidate> out = {loopCandidate(gemmLike)};
  if (!gemmLike) return out;
  for (const auto& d : kernels::allKernels()) {
    bool dw = d.op == kernels::KernelOp::DepthwiseConv3x3;
    if (dw && h.op != "Conv") continue;
    Candidate c;
    c.name = std::string("ukernel:") + d.name;
    c.kind = CandidateKind::MicroKernel;
    c.schedule["micro_kernel"] = std::string(d.name);
    c.schedule["isa"] = std::string(kernels::isaName(d.isa));
    c.schedule["vector_width"] = static_cast<int64_t>(d.vectorWidth);
    if (!dw) c.schedule["tile"] = std::vector<int64_t>{d.mr, d.nr, d.kc, d.mc, d.nc};
    const kernels::KernelDesc* desc = &d;
    std::string name = c.name;
    c.applies = [desc, name](const Node& node, const Target& t, std::string* why) {
      if (!targetRuns(t, desc->isa)) {
        if (why) *why = fmt::format("the target lacks {}", kernels::isaName(desc->isa));
        return false;
      }
      if (!kernels::cpuSupports(desc->isa)) {
        if (why) *why = "this CPU cannot run it (the executor calls it)";
        return false;
      }
      return lowers(node, name, why);
    };
    c.cost = [desc, dw, isConv = h.op == "Conv"](const Node& node, const Target&) {
      double eff = dw ? 0.3 : 0.8 * desc->mr * desc->nr / (14.0 * 32.0) + 0.1;
      double bytes = bytesOf(node);
      if (isConv) bytes *= dw ? 3 : 4; // layout copies (NCHW <-> NHWC) and im2col
      return estimate(flopsOf(headOf(node)), bytes, eff * peakPerCycle(desc->isa) * kHz);
    };
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<Selection> selectCandidate(const Node& n, const Target& t,
                                         const std::optional<std::string>& pinned) {
  auto cands = candidatesFor(n);
  if (cands.empty()) return std::nullopt;
  Selection best;
  const Candidate* chosen = nullptr;
  for (const auto& c : cands) {
    std::string why;
    if (!c.applies(n, t, &why)) {
      best.rejected.push_back(c.name + ": " + why);
      continue;
    }
    Cost cost = c.cost(n, t);
    best.considered.push_back({c.name, cost.seconds});
    bool isPin = pinned && c.name == *pinned;
    if (!chosen || (isPin && !best.pinned) || (!best.pinned && cost.seconds < best.cost.seconds)) {
      chosen = &c;
      best.candidate = c.name, best.kind = c.kind, best.schedule = c.schedule, best.cost = cost;
      best.pinned = isPin;
    }
  }
  if (pinned && !best.pinned) best.rejected.push_back(*pinned + ": pinned but not applicable");
  if (!chosen) return std::nullopt;
  return best;
}

std::string formatSelection(const Node& n, const Selection& s) {
  std::string r =
      fmt::format("{} {}: {} ({}{}, {:.3g} GFLOP, {:.3g} MB, est {:.3g} ms)", n.op, n.name,
                  s.candidate, candidateKindName(s.kind), s.pinned ? ", pinned" : "",
                  s.cost.flops * 1e-9, s.cost.bytes * 1e-6, s.cost.seconds * 1e3);
  for (const auto& [name, sec] : s.considered)
    if (name != s.candidate) r += fmt::format("; {} est {:.3g} ms", name, sec * 1e3);
  return r;
}

std::function<std::string(const Node&)> candidateChooser(const Target& t,
                                                         std::map<std::string, std::string> pins) {
  return [t, pins = std::move(pins)](const Node& n) -> std::string {
    std::optional<std::string> pin;
    if (auto it = pins.find(n.name); it != pins.end()) pin = it->second;
    auto s = selectCandidate(n, t, pin);
    return s ? s->candidate : std::string();
  };
}

} // namespace aicc::backend
