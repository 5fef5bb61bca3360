// What a gradient rule sees (OpDef::grad): the forward node, the gradients flowing into its
// outputs, and builders that append backward nodes to the graph. Rules are written with standard
// ONNX ops only, so a differentiated model exports as standard ONNX (`aicc autodiff -o X.onnx`).
//
// A rule sets the gradient of every input i with needs(i) via setGrad(i, g), where g has input
// i's shape and element type (use sumToShape to undo broadcasting). An output whose gradient does
// not flow has dout(i) == nullptr (zero).
#pragma once

#include "ops/op_def.h"

namespace aicc {

using AttrMap = std::map<std::string, Attribute>;

class GradCtx {
public:
  GradCtx(Graph& g, Node& fwd, std::vector<Value*> gradOutputs, std::vector<bool> needInput);

  Graph& graph;
  Node& node; // the forward node

  Value* in(size_t i) const { return i < node.inputs.size() ? node.inputs[i] : nullptr; }
  Value* out(size_t i) const { return i < node.outputs.size() ? node.outputs[i] : nullptr; }
  Value* dout(size_t i) const { return i < douts_.size() ? douts_[i] : nullptr; }
  bool needs(size_t i) const { return i < needs_.size() && needs_[i]; }
  void setGrad(size_t i, Value* g);
  // setGrad(i, g) when input i needs a gradient (else nothing). g must have input i's shape (rules
  // guarantee it); when inference on the emitted nodes could not tell (runtime shapes), g takes
  // input i's shape so later rules see the rank.
  void give(size_t i, Value* g);
  // Rank of v's type; throws naming the node when unknown.
  int64_t rankOf(const Value* v) const;
  const std::vector<Value*>& grads() const { return grads_; }

  // Appends a backward node computing `op(inputs)`; returns its outputs.
  std::vector<Value*> emitN(const std::string& op, std::vector<Value*> inputs, int numOutputs,
                            AttrMap attrs = {}, const std::string& domain = "");
  Value* emit(const std::string& op, std::vector<Value*> inputs, AttrMap attrs = {}) {
    return emitN(op, std::move(inputs), 1, std::move(attrs))[0];
  }
  Value* constant(Tensor t);
  Value* scalar(double v, DType dt); // rank-0 constant
  Value* ints(const std::vector<int64_t>& v); // 1-D i64 constant

  // Sums `g` (shaped like the broadcast result) down to the shape of `like` (an operand that was
  // broadcast): ReduceSum over the extra leading axes and the axes where `like` has size 1.
  Value* sumToShape(Value* g, Value* like);
  Value* zerosLike(Value* v);
  // dout(i), or zeros shaped like output i when no gradient flows into it.
  Value* doutOrZeros(size_t i);

private:
  std::vector<Value*> douts_;
  std::vector<bool> needs_;
  std::vector<Value*> grads_;
};

} // namespace aicc
