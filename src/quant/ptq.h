// Post-training quantization (`aicc quantize`): calibrates a float model on sample inputs and
// rewrites it in the standard QDQ form (QuantizeLinear -> DequantizeLinear pairs around the
// quantized ops), which ONNX Runtime runs and aicc compiles to int8 kernels (passes/fold_qdq.h).
//   - Ops quantized: Conv with constant weights, MatMul with constant 2-D weights, Add of two
//     activations. A Relu/Clip that is the only consumer of a Conv/MatMul output is quantized
//     after (the Q absorbs it).
//   - Weights: int8, symmetric ([-127, 127], zero point 0), per output channel (Conv, axis 0) or
//     per column (MatMul, axis 1); per tensor with perChannel = false. Conv biases: int32 with
//     scale x_scale * w_scale.
//   - Activations: uint8, asymmetric, per tensor, the range always containing 0: min-max over the
//     calibration runs, a percentile of |x| per side ("percentile", default 99.999), or the
//     clipping threshold of least KL divergence per side ("entropy", TensorRT's method).
// Mixed precision (minSqnrDb): the most sensitive ops stay float until the SQNR target is met.
// The float graph is first cleaned with the standard-ONNX passes (constant folding, dead code,
// BatchNormalization folded into Conv), so the output stays standard ONNX (opset >= 13).
#pragma once

#include "ir/graph.h"
#include "ops/op_def.h"

#include <string>
#include <vector>

namespace aicc {

struct PtqOptions {
  std::string method = "minmax"; // "minmax", "percentile" or "entropy"
  double percentile = 99.999;    // with "percentile": the kept fraction of each side, in %
  bool perChannel = true;
  // Mixed precision: when the all-int8 model's worst output SQNR over the calibration sets is
  // below this (dB; 0 = off), the ops whose quantization alone hurts most stay float, one at a
  // time, until it is reached.
  double minSqnrDb = 0;
};

struct PtqTensor {
  std::string name;
  double lo = 0, hi = 0; // the calibrated range (contains 0)
  float scale = 1;
  int64_t zeroPoint = 0;
};

struct PtqReport {
  std::vector<PtqTensor> activations;
  int64_t convs = 0, matmuls = 0, adds = 0;
  double sqnrAllInt8 = 0; // with minSqnrDb: the worst SQNR with every op quantized
  // With minSqnrDb: the ops kept float (by output value), with the SQNR of quantizing it alone.
  std::vector<std::pair<std::string, double>> keptFloat;
  // The float model's outputs on each calibration set (from the calibration runs), the
  // reference of accuracy reports.
  std::vector<std::vector<RValue>> floatOutputs;
};

// Agreement of one output with its float reference over every input set.
struct OutputAccuracy {
  double sqnrDb = 0;      // the worst set's SQNR (+inf when equal everywhere)
  double maxRelError = 0; // max |error| / max |float| (the worst set)
  int64_t rows = 0;       // classifier-shaped outputs ([N, classes], classes > 1): rows compared
  int64_t top1Same = 0;   // rows whose top-1 class agrees (rows 0 for other outputs)
};
// Per output k (float tensor outputs; others keep the defaults): got[i][k] against ref[i][k].
std::vector<OutputAccuracy> compareOutputs(const std::vector<std::vector<RValue>>& ref,
                                           const std::vector<std::vector<RValue>>& got);

// Rewrites `m` in place. `calibration`: input sets bound to m's graph inputs by position.
PtqReport quantizeModel(Model& m, const std::vector<std::vector<RValue>>& calibration,
                        const PtqOptions& opts = {});

// Signal-to-quantization-noise ratio in dB of `got` against `ref` (10 log10(sum ref^2 /
// sum (ref - got)^2); +inf when equal).
double sqnrDb(const Tensor& ref, const Tensor& got);

} // namespace aicc
