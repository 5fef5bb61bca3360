// Operator selection: the candidate implementations of each graph node (generated loop nests,
// micro-kernel calls), which of them apply on a target, a cost model that picks one, and the
// choice as data (printable for the compile report, pinnable by a tuning cache: a measured choice
// overrides the cost model through `pinned`).
//
// Candidate names: "loop" (the generated loop nest of loop/lower_*.cpp) and
// "ukernel:<descriptor>" (a call of a src/kernels micro-kernel, e.g.
// "ukernel:f32_gemm_avx512_14x32", "ukernel:f32_dwconv3x3_avx2"). The same names drive the
// lowering (LowerOptions::chooseCandidate), so a Selection is directly executable.
#pragma once

#include "backend/target.h"
#include "backend/tuning.h"
#include "ir/graph.h"
#include "loop/ir.h"
#include "loop/lower.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace aicc::backend {

enum class CandidateKind { LoopNest, MicroKernel };
std::string_view candidateKindName(CandidateKind k); // "loop-nest", "micro-kernel"

struct Cost {
  double flops = 0;   // arithmetic of the node
  double bytes = 0;   // compulsory memory traffic (plus packing / layout copies)
  double seconds = 0; // estimate on the target: max(compute time, memory time)
};

struct Candidate {
  std::string name;
  CandidateKind kind = CandidateKind::LoopNest;
  loop::Schedule schedule; // what the candidate decides (kernel, tile, vector width, ...)
  // Whether it applies to the node on the target; *why says why not.
  std::function<bool(const Node&, const Target&, std::string* why)> applies;
  std::function<Cost(const Node&, const Target&)> cost;
};

// The candidates registered for n's op (for aicc.Fused epilogues: its head's), applicable or
// not. Empty for nodes without a non-elementwise lowering (elementwise nodes have one
// implementation: the "loop" nest of loop/lower.h).
// `engine` are the options the node will be lowered with (its runtimeKernels decides which
// kernel calls exist, and so what applies and what a candidate costs).
std::vector<Candidate> candidatesFor(const Node& n, const loop::LowerOptions& engine = {});

struct Selection {
  std::string candidate; // the chosen name
  CandidateKind kind = CandidateKind::LoopNest;
  loop::Schedule schedule;
  Cost cost;
  bool pinned = false;                                    // chosen by `pinned`, not the model
  bool measured = false;                                  // pinned by a tuning-cache record
  std::vector<std::pair<std::string, double>> considered; // applicable: name -> est. seconds
  std::vector<std::string> rejected;                      // "name: why"
};

// Picks the cheapest applicable candidate, or `pinned` when given and applicable (a pinned
// name that does not apply is ignored and listed in `rejected`). Nullopt when no candidate is
// registered for the node.
std::optional<Selection> selectCandidate(const Node& n, const Target& t,
                                         const std::optional<std::string>& pinned = std::nullopt,
                                         const loop::LowerOptions& engine = {});

// "Conv conv1: ukernel:f32_gemm_avx512_14x32 (micro-kernel, 0.12 GFLOP, est 0.05 ms) over loop
// (est 2.1 ms)"
std::string formatSelection(const Node& n, const Selection& s);

// "cost model: est 0.05 ms; loop 2.1 ms, ukernel:f32_gemm_generic_4x8 0.9 ms" (or "pinned: ..."),
// the reason a lowering records in its schedule.
std::string selectionReason(const Selection& s);

// Checks `pins` (node name -> candidate, as `--select` gives them) against g's nodes: each
// names a node of g (or of a subgraph) and one of its candidates that applies to it on t.
// Throws aicc::Error naming the pin and, for a bad candidate, the node's candidates.
void checkPins(const Graph& g, const Target& t, const std::map<std::string, std::string>& pins,
               const loop::LowerOptions& engine);

// A LowerOptions::chooseCandidate for the target: selectCandidate per node, with `pins` (node
// name -> candidate) overriding the cost model; `runtimeKernels` as in the engine's
// LowerOptions. Nodes without candidates get "" (the lowering's own preference).
// With a tuning cache, a node whose signature has a record takes its measured choice when that
// candidate applies ("measured: ..." in the reason), and the estimates of other nodes are
// scaled by the cache's calibration (the cost model learning from the measurements).
// The lowering options of code for `t`: its vector width, and the widest micro-kernel ISA that
// both t and this machine run (the compile packs weights for it here; a cross target gets the
// portable kernels). `bf16`: --precision bf16 (LowerOptions::bf16).
loop::LowerOptions lowerOptionsFor(const Target& t, bool bf16 = false);

// The blocked activation layout the lowering `o` takes (GraphPassOptions::layoutBlock): 16 where
// its kernels include the NCHW16c convolution (AVX-512), else 0. Not under --precision bf16,
// whose convolutions run on the bf16 GEMM kernels in NCHW.
int64_t layoutBlockFor(const loop::LowerOptions& o);

// lowerOptionsFor(t, bf16) with candidateChooser(t, {}, true, nullptr, bf16): how the JIT lowers
// for t (used for --precision bf16; the JIT's default options are the f32 ones).
loop::LowerOptions engineLowerOptions(const Target& t, bool bf16);

// `bf16` as for lowerOptionsFor: the bf16 GEMM candidates apply (and, at half the f32 kernels'
// estimated time, win wherever their lowering accepts the node).
std::function<loop::CandidateChoice(const Node&)>
candidateChooser(const Target& t, std::map<std::string, std::string> pins = {},
                 bool runtimeKernels = false, std::shared_ptr<const TuningCache> cache = nullptr,
                 bool bf16 = false);

} // namespace aicc::backend
