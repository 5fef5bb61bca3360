// Training-step assembly: ONE graph computes a whole training step (forward, loss, backward and
// the optimizer update), built once, then run over batches with the reference interpreter. The
// step graph's inputs are the data inputs of the forward model, then the parameters, then the
// optimizer state (and the step count / learning rate); its outputs are the loss, the updated
// parameters and the updated state. TrainingSession keeps parameters and state as tensors and binds
// each step's outputs as the next step's inputs (a move of the tensor handle: no copy, no files).
//
// Optimizers (all written with standard ONNX or ai.onnx.preview.training ops, so the step graph
// exports as ONNX):
//   sgd       x -= lr * (g + wd * x); with momentum mu > 0: v = mu * v + g + wd * x; x -= lr * v
//             (standard ops: Mul/Add/Sub)
//   momentum  ai.onnx.preview.training.Momentum (mode "standard", alpha = mu, beta = 1,
//             norm_coefficient = wd)
//   adam      ai.onnx.preview.training.Adam (alpha = beta1, beta = beta2, epsilon,
//             norm_coefficient = wd: L2 regularization added to the gradient)
//   adamw     Adam with decoupled weight decay through norm_coefficient_post = lr * wd: the spec
//             scales the updated tensor by (1 - norm_coefficient_post), i.e. x <- (1 - lr*wd) * x'
#pragma once

#include "autodiff/remat.h"
#include "ir/graph.h"
#include "ops/op_def.h"

#include <string>
#include <vector>

namespace aicc {

struct OptimizerConfig {
  std::string kind = "adam"; // sgd | momentum | adam | adamw
  double lr = 1e-3;
  double momentum = 0.9; // sgd (0 = plain SGD) and momentum
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  double weightDecay = 0;
};

struct TrainingOptions {
  std::string loss;                // scalar loss value of the forward model
  std::vector<std::string> params; // constants to train; empty = every float constant
  OptimizerConfig optimizer;
  bool rematerialize = false; // autodiff/remat.h on the step graph
};

struct StepGraphInfo {
  std::vector<std::string> dataInputs; // the forward model's graph inputs, in order
  std::vector<std::string> params;     // trained constants, in order
  int64_t stateTensorsPerParam = 0;    // optimizer state tensors per parameter
  int64_t forwardNodes = 0, stepNodes = 0;
  int64_t peakBytesNoRemat = 0; // peak live bytes of the step graph without remat
  int64_t peakBytes = 0;        // ... as built (with remat when asked)
  RematStats remat;
};

// Builds the step graph from a forward model (not modified). The step graph's inputs are
// [data inputs..., params..., state..., T (i64 scalar: the 1-based step number)], its outputs
// [loss, new params..., new state...]. State tensors are zero-initialized by TrainingSession.
Model buildTrainingStep(const Model& forward, const TrainingOptions& opts,
                        StepGraphInfo* info = nullptr);

// A deep copy of a model (subgraph attributes are shared, they are never modified here).
Model cloneModel(const Model& m);

class TrainingSession {
public:
  TrainingSession(const Model& forward, TrainingOptions opts);

  // Runs one step on a batch (tensors for the data inputs, in order); returns the loss.
  double step(const std::vector<Tensor>& batch);
  // Runs the forward model with the current parameters; returns its outputs.
  std::vector<RValue> evaluate(const std::vector<Tensor>& inputs) const;
  // The forward model with the current parameters as its constants.
  Model trainedModel() const;

  const StepGraphInfo& info() const { return info_; }
  const Model& stepModel() const { return step_; }
  int64_t steps() const { return t_; }

private:
  Model forward_; // parameters promoted to graph inputs (after the data inputs)
  Model step_;
  TrainingOptions opts_;
  StepGraphInfo info_;
  std::vector<Tensor> params_, state_;
  int64_t t_ = 0;
};

} // namespace aicc
