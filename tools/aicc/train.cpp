// aicc train: trains a model's weights with ONE training-step graph (forward, loss, backward,
// optimizer update; autodiff/training.h) run by the reference interpreter over mini-batches of
// .npy data. Reports the loss per epoch, the time per step and, with --accuracy, the test accuracy.
#include "commands.h"

#include "autodiff/training.h"
#include "frontend/onnx/onnx_exporter.h"
#include "frontend/onnx/tensor_proto.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <numeric>
#include <random>

namespace aicc::cli {
namespace {

using Clock = std::chrono::steady_clock;

// NAME=FILE.npy specs, bound to the model's data inputs in graph-input order.
std::vector<Tensor> readData(const Graph& g, const std::vector<std::string>& specs,
                             const char* flag) {
  std::map<std::string, std::string> files;
  for (const auto& s : specs) {
    auto eq = s.find('=');
    AICC_CHECK(eq != std::string::npos && eq > 0, "{} expects NAME=FILE, got '{}'", flag, s);
    files[s.substr(0, eq)] = s.substr(eq + 1);
  }
  std::vector<Tensor> out;
  int64_t rows = -1;
  for (const Value* in : g.inputs) {
    auto it = files.find(in->name);
    AICC_CHECK(it != files.end(), "{}: no data for the model input '{}'", flag, in->name);
    RValue v = readValueFile(it->second, in->type);
    AICC_CHECK(v.kind == RValue::Kind::Tensor && v.tensor.rank() >= 1,
               "{}: '{}' must hold an array of samples", flag, it->second);
    AICC_CHECK(v.tensor.dtype() == in->type.dtype, "{}: '{}' is {}, the model input '{}' is {}",
               flag, it->second, dtypeName(v.tensor.dtype()), in->name, formatType(in->type));
    AICC_CHECK(rows < 0 || v.tensor.dim(0) == rows, "{}: '{}' has {} samples, the other files {}",
               flag, it->second, v.tensor.dim(0), rows);
    rows = v.tensor.dim(0);
    out.push_back(v.tensor);
    files.erase(it);
  }
  AICC_CHECK(files.empty(), "{}: the model has no input named '{}'", flag,
             files.empty() ? "" : files.begin()->first);
  return out;
}

// Rows `idx` of t (axis 0).
Tensor gatherRows(const Tensor& t, const std::vector<int64_t>& idx) {
  Dims shape = t.shape();
  shape[0] = static_cast<int64_t>(idx.size());
  Tensor r(t.dtype(), shape);
  const size_t rowBytes = t.dim(0) ? t.nbytes() / static_cast<size_t>(t.dim(0)) : 0;
  auto* dst = static_cast<std::byte*>(r.raw());
  const auto* src = static_cast<const std::byte*>(t.raw());
  for (size_t k = 0; k < idx.size(); ++k)
    std::memcpy(dst + k * rowBytes, src + static_cast<size_t>(idx[k]) * rowBytes, rowBytes);
  return r;
}

// The static batch size the model's inputs demand, or -1 when the batch dim is symbolic.
int64_t staticBatch(const Graph& g) {
  for (const Value* in : g.inputs)
    if (in->type.shape && !in->type.shape->empty() && (*in->type.shape)[0].isStatic())
      return (*in->type.shape)[0].value;
  return -1;
}

struct EvalResult {
  double loss = 0, accuracy = -1;
};

EvalResult evaluate(const TrainingSession& s, const Graph& fwd, const std::vector<Tensor>& data,
                    int64_t batch, const std::string& lossName, const std::string& logitsName,
                    const std::string& labelsName) {
  const int64_t n = data[0].dim(0), fixed = staticBatch(fwd);
  auto outIndex = [&](const std::string& name) -> int64_t {
    for (size_t i = 0; i < fwd.outputs.size(); ++i)
      if (fwd.outputs[i]->name == name) return static_cast<int64_t>(i);
    return -1;
  };
  int64_t li = outIndex(lossName), yi = logitsName.empty() ? -1 : outIndex(logitsName),
          labelIn = -1;
  AICC_CHECK(logitsName.empty() || yi >= 0, "--accuracy: '{}' is not an output of the model",
             logitsName);
  for (size_t i = 0; i < fwd.inputs.size(); ++i)
    if (fwd.inputs[i]->name == labelsName) labelIn = static_cast<int64_t>(i);
  AICC_CHECK(logitsName.empty() || labelIn >= 0, "--accuracy: '{}' is not an input of the model",
             labelsName);
  const int64_t chunk = fixed > 0 ? fixed : batch;
  EvalResult r;
  int64_t correct = 0;
  for (int64_t b = 0; b < n; b += chunk) {
    const int64_t real = std::min(chunk, n - b);
    std::vector<int64_t> idx;
    for (int64_t k = 0; k < (fixed > 0 ? chunk : real); ++k)
      idx.push_back(b + std::min(k, real - 1)); // pad
    std::vector<Tensor> in;
    for (const Tensor& t : data) in.push_back(gatherRows(t, idx));
    auto out = s.evaluate(in);
    if (li >= 0)
      r.loss += out[static_cast<size_t>(li)].tensor.getF64(0) * static_cast<double>(real);
    if (yi < 0) continue;
    const Tensor& y = out[static_cast<size_t>(yi)].tensor;
    const Tensor& lab = in[static_cast<size_t>(labelIn)];
    const int64_t classes = y.dim(y.rank() - 1);
    for (int64_t k = 0; k < real; ++k) {
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c)
        if (y.getF64(k * classes + c) > y.getF64(k * classes + best)) best = c;
      correct += best == lab.getI64(k);
    }
  }
  r.loss /= static_cast<double>(n);
  if (yi >= 0) r.accuracy = static_cast<double>(correct) / static_cast<double>(n);
  return r;
}

} // namespace

int trainCommand(const TrainArgs& a) {
  ImportedModel im = loadModel(a.model, parseDims(a.dims));
  // A symbolic batch dim (the first dim of the data inputs) becomes --batch: every step sees a full
  // batch, and static shapes let the memory report count every tensor.
  std::map<std::string, int64_t> batchDims;
  for (const Value* in : im.model.graph->inputs)
    if (in->type.shape && !in->type.shape->empty() && !(*in->type.shape)[0].symbol.empty())
      batchDims[(*in->type.shape)[0].symbol] = a.batch;
  if (!batchDims.empty()) specializeDims(im.model, batchDims);
  const Graph& fwd = *im.model.graph;
  TrainingOptions opts;
  opts.loss = a.loss;
  opts.params = a.params;
  opts.optimizer.kind = a.optimizer;
  opts.optimizer.lr = a.lr;
  opts.optimizer.momentum = a.momentum;
  opts.optimizer.weightDecay = a.weightDecay;
  opts.rematerialize = a.remat;
  std::string logits, labels;
  if (!a.accuracy.empty()) {
    auto colon = a.accuracy.find(':');
    AICC_CHECK(colon != std::string::npos, "--accuracy expects LOGITS:LABELS, got '{}'",
               a.accuracy);
    logits = a.accuracy.substr(0, colon);
    labels = a.accuracy.substr(colon + 1);
  }

  auto t0 = Clock::now();
  TrainingSession session(im.model, opts);
  const double buildMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const StepGraphInfo& info = session.info();
  std::cout << fmt::format(
      "step graph: {} nodes ({} forward), {} parameters, optimizer {}, built in {:.1f} ms\n",
      info.stepNodes, info.forwardNodes, info.params.size(), a.optimizer, buildMs);
  std::cout << fmt::format("peak live bytes of the step graph: {} without remat",
                           info.peakBytesNoRemat);
  if (a.remat)
    std::cout << fmt::format(
        ", {} with remat\nremat: {} values recomputed ({} nodes added); forward values kept for "
        "the backward: {} -> {}, {} -> {} bytes",
        info.peakBytes, info.remat.recomputedValues, info.remat.addedNodes,
        info.remat.savedValuesBefore, info.remat.savedValuesAfter, info.remat.savedBytesBefore,
        info.remat.savedBytesAfter);
  std::cout << "\n";
  if (!a.exportStep.empty()) exportOnnxFile(session.stepModel(), a.exportStep);
  if (a.data.empty()) return 0;

  std::vector<Tensor> train = readData(fwd, a.data, "--data");
  std::vector<Tensor> test =
      a.testData.empty() ? std::vector<Tensor>{} : readData(fwd, a.testData, "--test-data");
  const int64_t n = train[0].dim(0), fixed = staticBatch(fwd);
  const int64_t batch = fixed > 0 ? fixed : a.batch;
  AICC_CHECK(batch > 0 && batch <= n, "batch size {} must be in [1, {}] (the number of samples)",
             batch, n);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(a.seed);
  double stepSeconds = 0;
  int64_t steps = 0;
  for (int epoch = 1; epoch <= a.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    double lossSum = 0;
    int64_t epochSteps = 0;
    // The last partial batch is dropped (every step sees `batch` samples).
    for (int64_t b = 0; b + batch <= n; b += batch) {
      std::vector<int64_t> idx(order.begin() + b, order.begin() + b + batch);
      std::vector<Tensor> in;
      for (const Tensor& t : train) in.push_back(gatherRows(t, idx));
      auto s0 = Clock::now();
      lossSum += session.step(in);
      stepSeconds += std::chrono::duration<double>(Clock::now() - s0).count();
      ++steps;
      ++epochSteps;
    }
    std::string line = fmt::format("epoch {:>3}: train loss {:.4f}", epoch,
                                   lossSum / static_cast<double>(epochSteps));
    if (!test.empty() && (epoch == a.epochs || epoch % a.evalEvery == 0)) {
      EvalResult r = evaluate(session, fwd, test, batch, a.loss, logits, labels);
      line += fmt::format(", test loss {:.4f}", r.loss);
      if (r.accuracy >= 0) line += fmt::format(", test accuracy {:.2f}%", 100 * r.accuracy);
    }
    std::cout << line << "\n";
  }
  std::cout << fmt::format("{} steps of batch {}: {:.3f} ms per training step (mean)\n", steps,
                           batch,
                           1e3 * stepSeconds / static_cast<double>(std::max<int64_t>(steps, 1)));
  if (!a.output.empty()) {
    exportOnnxFile(session.trainedModel(), a.output);
    std::cout << "wrote " << a.output << "\n";
  }
  return 0;
}

} // namespace aicc::cli
