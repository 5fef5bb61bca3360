// Symbolic dims that are multiples of a step (issue #12). Many image models only have consistent
// shapes for sizes that are multiples of their total stride: PaddleOCR's detector adds a map
// upsampled from 1/32 scale, 2*((H+31)/32), to one at 1/16 scale, (H+15)/16, which agree exactly
// when H is a multiple of 32 (ONNX Runtime fails at run time for other sizes). Shape inference
// cannot equate the two expressions, so those dims stay unknown ('?') and nothing past them
// compiles for symbolic sizes.
//
// Writing such a symbol as H = 32 * Q, with the symbol "H/32" standing for Q, makes the algebra
// exact: (32*Q+15)/16 = 2*Q = 2*((32*Q+31)/32) (ir/dim_expr.h's normal form). findDimSteps
// finds, for each symbol of the inputs, the smallest power-of-two step (2..128) that leaves fewer
// unknown dims than none, and applyDimSteps rewrites every value's dims with it; the compiled
// artifact then takes H in multiples of the step only and says so for any other size
// (runtime/artifact.h, rt::Symbol::step).
#pragma once

#include "ir/graph.h"

#include <cstdint>
#include <map>
#include <string>

namespace aicc {

// The symbol standing for `symbol` / step: "H/32", and the dim `symbol` becomes: 32*"H/32".
std::string stepSymbol(const std::string& symbol, int64_t step);
DimExpr steppedDim(const std::string& symbol, int64_t step);
// `symbol` at `value` as the dims read it: at[symbol], and with a step > 1 at[stepSymbol] =
// value / step (a stepped symbol's dims are written in the latter).
void setSymbolValue(std::map<std::string, int64_t>& at, const std::string& symbol, int64_t step,
                    int64_t value);

// Every dim of every value (subgraphs included) with each symbol s of `steps` replaced by
// step * stepSymbol(s, step), then shapes re-inferred.
void applyDimSteps(Graph& g, const std::map<std::string, int64_t>& steps);

// The steps that make unknown dims of g known (empty when none is unknown or no step helps).
// g is left with its shapes re-inferred, and no step applied.
std::map<std::string, int64_t> findDimSteps(Graph& g);

// The number of unknown dims (and tensors of unknown rank) over g's values, subgraphs included.
int64_t countUnknownDims(const Graph& g);

// Unnamed input dims ('?': exporters write them for a batch or a length they did not name) get a
// symbol each, "<input>.<k>" (silero-vad-v5's `input: f32[?,?]` becomes [input.0, input.1]); the
// names given, in order. Then, as ONNX Runtime does at run time, dims that meet in a broadcast
// must be equal: of those names, each pair whose merging leaves fewer unknown dims is merged
// (state.1 into input.0 where the LSTM state's batch meets the audio's). Shapes re-inferred;
// returns the merges (name -> the name kept).
std::vector<std::string> nameUnknownInputDims(Graph& g);
std::map<std::string, std::string> mergeNamedDims(Graph& g, const std::vector<std::string>& names);

// Symbols the graph holds at one value: a Reshape to a constant shape of a value whose element
// count is c * S (S one input symbol) runs only at S = its count / c. Exports that bake the batch
// into Reshape shapes (PyTorch's MultiheadAttention: [128, N, 768] to [128, 12, 64]) are such;
// ONNX Runtime fails at run time for any other S, and compiled for the range they would run every
// node past the Reshape on reference kernels. Top-level nodes only (they always run); a count that
// no S gives is an error naming the node.
struct PinnedDim {
  int64_t value = 0;
  std::string node;  // the Reshape (Node::describe)
  std::string shape; // its result's shape, printed
};
std::map<std::string, PinnedDim> findPinnedDims(const Graph& g);

} // namespace aicc
