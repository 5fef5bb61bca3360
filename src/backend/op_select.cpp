#include "backend/op_select.h"

#include "kernels/conv_nchwc.h"

#include "kernels/registry.h"
#include "ops/op_def.h"

#include <cmath>
#include <fmt/format.h>
#include <functional>

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
  if (h.op == "ConvTranspose" && h.inputs.size() > 1) {
    // per input element: Cout/group * prod(kernel) MACs = numel(W) / Cin
    const Value* w = h.inputs[1];
    auto d = w->type.shape ? toDims(*w->type.shape) : std::nullopt;
    if (!d || d->empty() || (*d)[0] == 0) return out;
    return 2.0 * elems(h.inputs[0]) * elems(w) / static_cast<double>((*d)[0]);
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

// The GEMM a micro-kernel computes for the head op, per group / batch matrix: rows M (output
// channels of a group, or A's rows) and columns N (output pixels, or B's columns). {0, 0} when
// the shapes are not static.
std::pair<double, double> gemmDims(const Node& h) {
  auto dims = [](const Value* v) {
    return v && v->type.shape ? toDims(*v->type.shape) : std::nullopt;
  };
  auto y = h.outputs.empty() ? std::nullopt : dims(h.outputs[0]);
  if (!y || y->empty()) return {0, 0};
  if (h.op == "Conv") {
    auto w = h.inputs.size() > 1 ? dims(h.inputs[1]) : std::nullopt;
    if (!w || y->size() < 2) return {0, 0};
    double groups = static_cast<double>(std::max<int64_t>(1, h.attrInt("group", 1)));
    double pixels = elems(h.outputs[0]) / static_cast<double>((*y)[0] * (*y)[1]);
    return {static_cast<double>((*w)[0]) / groups, pixels};
  }
  if (h.op == "ConvTranspose") { // its GEMM: rows Cout/group * taps, columns the input's pixels
    auto x = dims(h.inputs[0]), w = h.inputs.size() > 1 ? dims(h.inputs[1]) : std::nullopt;
    if (!x || !w || x->size() < 2 || (*w)[0] == 0) return {0, 0};
    return {elems(h.inputs[1]) / static_cast<double>((*w)[0]),
            elems(h.inputs[0]) / static_cast<double>((*x)[0] * (*x)[1])};
  }
  // A weight B of rank <= 2 is shared by every batch matrix: the batch folds into the rows.
  auto b = h.inputs.size() > 1 ? dims(h.inputs[1]) : std::nullopt;
  double cols = static_cast<double>(y->back());
  if (b && b->size() <= 2 && cols > 0) return {elems(h.outputs[0]) / cols, cols};
  double rows = y->size() >= 2 ? static_cast<double>((*y)[y->size() - 2]) : 1;
  return {rows, cols};
}

// The fraction of a kernel's mr x nr register tile that holds real outputs (edge tiles are
// partly empty: a batch-1 classifier uses one row of six, a depthwise conv one of each).
// Fewer rows than the tile's run a tile of just those rows at the FMA rate (simd_impl.h gemmTile);
// columns are vector lanes, computed whether used or not. An ungrouped convolution runs whichever
// of its two GEMM forms uses more of the tile (kernels::convRowsFor: output channels or pixels as
// the rows); a grouped one runs a GEMM per group, each paying a whole tile's overheads. The bf16
// kernels run channel rows only. A kernel whose K steps are whole tiles (kuAlign: AMX's 16 units,
// 32 bf16 values) also computes the padding of a short K (a depthwise 3x3: 9 of 32).
double tileUse(const Node& h, const kernels::KernelDesc& d) {
  auto [m, n] = gemmDims(h);
  if (m <= 0 || n <= 0) return 1;
  auto use = [](double x, double t) { return x / (std::ceil(x / t) * t); };
  const bool conv = h.op == "Conv", grouped = conv && h.attrInt("group", 1) > 1;
  const double mr = d.mr, nr = d.nr;
  auto rows = [&](double x) { return x < mr && !grouped ? 1.0 : use(x, mr); };
  const double out = h.outputs.empty() ? 0 : elems(h.outputs[0]);
  const double k = out > 0 ? flopsOf(h) / (2 * out) : 0;
  const double kUse = d.kuAlign > 1 && k >= 1 ? use(k, 2.0 * d.kuAlign) : 1.0;
  const double channelRows = rows(m) * use(n, nr) * kUse;
  if (!conv || grouped || d.op != kernels::KernelOp::Gemm) return channelRows;
  return std::max(channelRows, rows(n) * use(m, nr));
}

double bytesOf(const Node& n) {
  double b = 0;
  for (const Value* v : n.inputs)
    if (v) b += elems(v) * 4;
  for (const Value* v : n.outputs)
    if (v) b += elems(v) * 4;
  return b;
}

// The bytes of n's constant inputs (weights) at f32.
double constBytes(const Node& n) {
  double b = 0;
  for (const Value* v : n.inputs)
    if (v && v->constant) b += elems(v) * 4;
  return b;
}

// Peak f32 flops per cycle of an ISA (two FMA ports).
double peakPerCycle(kernels::Isa isa) {
  switch (isa) {
  case kernels::Isa::Amx: // tdpbf16ps peaks at 1024 (16 x 16 x 32 products in 16 cycles); the
    return 256;           // tile reaches ~210 per cycle on large GEMMs (tile loads, epilogue)
  case kernels::Isa::Avx512Bf16: // the bf16 GEMM: two products per f32 lane per instruction
    return 128;
  case kernels::Isa::Avx512Vnni:
  case kernels::Isa::Avx512:
    return 64;
  case kernels::Isa::Avx2:
  case kernels::Isa::AvxVnni:
    return 32;
  case kernels::Isa::Neon:
    return 16; // two 4-lane FMA pipes
  default:
    return 4;
  }
}

bool targetRuns(const Target& t, kernels::Isa isa) {
  switch (isa) {
  case kernels::Isa::Amx:
    return targetRuns(t, kernels::Isa::Avx512Bf16) && t.has(CpuFeature::AMXBF16) &&
           t.has(CpuFeature::AMXINT8);
  case kernels::Isa::Avx512Bf16:
    return targetRuns(t, kernels::Isa::Avx512Vnni) && t.has(CpuFeature::AVX512BF16);
  case kernels::Isa::Avx512Vnni:
    return targetRuns(t, kernels::Isa::Avx512) && t.has(CpuFeature::AVX512BW) &&
           t.has(CpuFeature::AVX512VNNI);
  case kernels::Isa::Avx512:
    return t.has(CpuFeature::AVX512F) && t.has(CpuFeature::AVX512VL);
  case kernels::Isa::AvxVnni:
    return targetRuns(t, kernels::Isa::Avx2) && t.has(CpuFeature::AVXVNNI);
  case kernels::Isa::Avx2:
    return t.has(CpuFeature::AVX2) && t.has(CpuFeature::FMA);
  case kernels::Isa::Neon:
    return t.arch == "aarch64";
  default:
    return true;
  }
}

// memEff: the fraction of the bandwidth reached (packed, blocked kernels stream better than
// generated nests; this also breaks the tie on memory-bound nodes such as batch-1 classifiers).
Cost estimate(double flops, double bytes, double flopsPerSec, double memEff) {
  Cost c;
  c.flops = flops, c.bytes = bytes;
  c.seconds = std::max(flops / flopsPerSec, bytes / (memEff * kBytesPerSec));
  return c;
}

// Whether the lowering accepts the candidate for this node (the authoritative predicate).
bool lowers(const Node& n, const std::string& cand, const loop::LowerOptions& engine,
            std::string* why) {
  loop::LowerOptions o = engine; // the target's vectors and kernel ISA, the engine's kernels
  o.probe = true;
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

Candidate loopCandidate(bool compute, const loop::LowerOptions& engine) {
  Candidate c;
  c.name = "loop";
  c.kind = CandidateKind::LoopNest;
  c.schedule["kind"] = std::string("loop-nest");
  c.applies = [engine](const Node& n, const Target&, std::string* why) {
    return lowers(n, "loop", engine, why);
  };
  c.cost = [compute](const Node& n, const Target& t) {
    // Generated nests: vectorized inner loops, no register blocking: a fraction of the peak.
    double lanes = std::max(1, t.vectorLanes(4));
    double perCycle = compute ? 0.25 * lanes : lanes;
    double bytes = bytesOf(n);
    // A Gemm with transB (every exported Linear layer) walks B across its rows in the inner
    // loop: no vectors, and one cache line per element (measured: resnet50's classifier as a
    // nest runs at 0.3 GFLOP/s, 15x slower than the packed kernel).
    const Node& h = headOf(n);
    if (h.op == "Gemm" && h.attrInt("transB", 0) && h.inputs.size() > 1) {
      perCycle = 0.25;
      bytes += elems(h.inputs[1]) * 4 * 15;
    }
    // ConvTranspose's gather nest tests every tap of every input channel at each output pixel:
    // scalar, and stride^2 times the work (ppocrv4-det's 2x2 stride 2: 0.17 GFLOP/s).
    if (h.op == "ConvTranspose") perCycle = 0.05;
    return estimate(flopsOf(h), bytes, perCycle * kHz, 0.5);
  };
  return c;
}

} // namespace

std::string_view candidateKindName(CandidateKind k) {
  return k == CandidateKind::LoopNest ? "loop-nest" : "micro-kernel";
}

std::vector<Candidate> candidatesFor(const Node& n, const loop::LowerOptions& engine) {
  if (!loop::hasNonElementwiseLowering(n) || headOf(n).domain == kAiccDomain) return {};
  const Node& h = headOf(n);
  bool gemmLike = h.domain.empty() && (h.op == "MatMul" || h.op == "Gemm" || h.op == "Conv");
  std::vector<Candidate> out = {loopCandidate(gemmLike, engine)};
  // ConvTranspose: a GEMM and a col2im (lower_conv.cpp convTransposeGemm).
  if (!gemmLike && !(h.domain.empty() && h.op == "ConvTranspose")) return out;
  // A depthwise convolution (one input channel per group) runs on the depthwise kernels, which
  // take every geometry: as a GEMM per channel it fills one row of a tile over a K of its taps,
  // and the estimates missed the per-group cost (mobilenet_v2 --precision bf16, Intel Xeon: a
  // 3x3 depthwise layer took 0.94 ms on bf16_gemm_avx512bf16_14x32, estimated 0.38; 0.38 on
  // f32_dwconv_nchw_avx512).
  const bool depthwise = h.op == "Conv" && h.attrInt("group", 1) > 1 && h.inputs.size() > 1 &&
                         h.inputs[1] && h.inputs[1]->type.shape &&
                         h.inputs[1]->type.shape->size() > 1 &&
                         (*h.inputs[1]->type.shape)[1] == Dim::known(1);
  for (const auto& d : kernels::allKernels()) {
    if (depthwise && kernels::isGemmOp(d.op)) continue;
    // QLinearConv's own (lower_qconv.cpp), and the blocked convolution's (aicc.ConvNchwc, the
    // layout pass's choice: one kernel, no alternative to pick)
    if (kernels::isQuantOp(d.op) || d.op == kernels::KernelOp::ConvNchw16c) continue;
    bool dw = !kernels::isGemmOp(d.op);
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
    c.applies = [desc, name, engine](const Node& node, const Target& t, std::string* why) {
      if (!targetRuns(t, desc->isa)) {
        if (why) *why = fmt::format("the target lacks {}", kernels::isaName(desc->isa));
        return false;
      }
      if (t.triple.empty() && !kernels::cpuSupports(desc->isa)) {
        if (why) *why = "this CPU cannot run it (the executor calls it)";
        return false;
      }
      return lowers(node, name, engine, why);
    };
    // Runtime kernels work on NCHW with weights packed at compile time; the plain calls copy
    // NCHW <-> NHWC around the kernel and build im2col.
    // The NHWC depthwise 3x3 kernel always converts layouts around its call.
    bool copies = h.op == "Conv" &&
                  (!engine.runtimeKernels || d.op == kernels::KernelOp::DepthwiseConv3x3);
    c.cost = [desc, dw, copies](const Node& node, const Target&) {
      // A tile's share of the peak grows with its size, up to 0.9 (the AMX tiles).
      double eff = dw ? 0.3
                      : std::min(0.9, 0.8 * desc->mr * desc->nr / (14.0 * 32.0) + 0.1) *
                            tileUse(headOf(node), *desc);
      double bytes = bytesOf(node) * (copies ? (dw ? 3 : 4) : 1);
      if (desc->op == kernels::KernelOp::GemmBf16) bytes -= constBytes(node) / 2;
      return estimate(flopsOf(headOf(node)), bytes, eff * peakPerCycle(desc->isa) * kHz, 0.8);
    };
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<Selection> selectCandidate(const Node& n, const Target& t,
                                         const std::optional<std::string>& pinned,
                                         const loop::LowerOptions& engine) {
  auto cands = candidatesFor(n, engine);
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

std::string selectionReason(const Selection& s) {
  std::string r = fmt::format("{}: est {:.3g} ms", s.pinned ? "pinned" : "cost model",
                              s.cost.seconds * 1e3);
  std::string others;
  for (const auto& [name, sec] : s.considered)
    if (name != s.candidate) others += fmt::format("{}{} {:.3g} ms", others.empty() ? "" : ", ", name, sec * 1e3);
  return others.empty() ? r : r + "; " + others;
}

void checkPins(const Graph& g, const Target& t, const std::map<std::string, std::string>& pins,
               const loop::LowerOptions& engine) {
  std::map<std::string, const Node*> nodes;
  std::function<void(const Graph&)> collect = [&](const Graph& sub) {
    for (const auto& n : sub.nodes) {
      nodes.emplace(n->name, n.get());
      for (const auto& [_, a] : n->attrs) {
        if (auto* sg = std::get_if<GraphPtr>(&a.v)) collect(**sg);
        if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
          for (const auto& sg : *sgs) collect(*sg);
      }
    }
  };
  collect(g);
  for (const auto& [name, cand] : pins) {
    auto it = nodes.find(name);
    AICC_CHECK(it != nodes.end(),
               "--select {}={}: the optimized graph has no node '{}' (the "
               "compile report lists the node names)",
               name, cand, name);
    auto s = selectCandidate(*it->second, t, cand, engine);
    AICC_CHECK(s, "--select {}={}: {} has no kernel candidates", name, cand,
               it->second->describe());
    if (s->pinned) continue;
    std::vector<std::string> names;
    for (const auto& [c, _] : s->considered) names.push_back(c);
    fail("--select {}={}: not an applicable candidate for {}; applicable: {}{}", name, cand,
         it->second->describe(), fmt::join(names, ", "),
         s->rejected.size() > 1 ? fmt::format("; rejected: {}", fmt::join(s->rejected, "; ")) : "");
  }
}

std::function<loop::CandidateChoice(const Node&)>
candidateChooser(const Target& t, std::map<std::string, std::string> pins, bool runtimeKernels,
                 std::shared_ptr<const TuningCache> cache, bool bf16) {
  loop::LowerOptions engine = lowerOptionsFor(t, bf16);
  engine.runtimeKernels = runtimeKernels;
  std::map<std::string, double> calib;
  if (cache) calib = cache->calibration();
  return [t, pins = std::move(pins), engine, cache, calib](const Node& n) -> loop::CandidateChoice {
    std::optional<std::string> pin;
    const TuningRecord* rec = nullptr;
    if (auto it = pins.find(n.name); it != pins.end())
      pin = it->second;
    else if (cache && (rec = cache->find(n)))
      pin = rec->chosen;
    auto s = selectCandidate(n, t, pin, engine);
    if (!s) return {};
    if (rec && s->pinned) { // the measured choice applies
      std::string why = "measured (tuning cache):";
      for (const auto& tt : rec->timings)
        why += fmt::format(" {} {:.3g} ms{}", tt.candidate, tt.measuredMs,
                           tt.estimatedMs > 0 ? fmt::format(" (est {:.3g})", tt.estimatedMs) : "");
      return {s->candidate, why};
    }
    if (!pin && !calib.empty()) { // calibrated estimates: re-pick among the applicable ones
      double best = 0;
      std::string name;
      for (const auto& [c, sec] : s->considered) {
        auto it = calib.find(c);
        double v = sec * (it == calib.end() ? 1.0 : it->second);
        if (name.empty() || v < best) best = v, name = c;
      }
      if (name != s->candidate) {
        auto again = selectCandidate(n, t, name, engine);
        if (again && again->pinned)
          return {again->candidate,
                  fmt::format("calibrated cost model: est {:.3g} ms; {}", best * 1e3,
                              selectionReason(*s))};
      }
      return {s->candidate, "calibrated " + selectionReason(*s)};
    }
    return {s->candidate, selectionReason(*s)};
  };
}

loop::LowerOptions lowerOptionsFor(const Target& t, bool bf16) {
  loop::LowerOptions o;
  o.runtimeKernels = true;
  o.bf16 = bf16;
  if (!t.triple.empty()) o.vectorBytes = t.vectorBytes;
  o.kernelIsa = kernels::Isa::Generic;
  if (t.arch == "aarch64") {
    o.kernelIsa = kernels::Isa::Neon; // compiled for it (the descriptors exist on every host)
    return o;
  }
  for (kernels::Isa isa : {kernels::Isa::Amx, kernels::Isa::Avx512Bf16, kernels::Isa::Avx512Vnni,
                           kernels::Isa::Avx512, kernels::Isa::AvxVnni, kernels::Isa::Avx2})
    if (t.triple.empty() && targetRuns(t, isa) && kernels::cpuSupports(isa) &&
        kernels::isaWithin(isa, kernels::bestIsa())) {
      o.kernelIsa = isa;
      break;
    }
  return o;
}

int64_t layoutBlockFor(const loop::LowerOptions& o) {
  return o.runtimeKernels && !o.bf16 &&
                 kernels::bestKernel(kernels::KernelOp::ConvNchw16c, o.kernelIsa)
             ? kernels::kNchwcBlock
             : 0;
}

loop::LowerOptions engineLowerOptions(const Target& t, bool bf16) {
  loop::LowerOptions o = lowerOptionsFor(t, bf16);
  o.chooseCandidate = candidateChooser(t, {}, true, nullptr, bf16);
  return o;
}

} // namespace aicc::backend
