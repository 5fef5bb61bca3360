// f32 GRU and LSTM (ONNX GRU / LSTM, layout 0) on the GEMM micro-kernels: per direction, one GEMM
// projects every time step's input (X W^T + Wb), then each step runs the recurrent GEMM(s) over
// the whole batch (h R^T + Rb) and the gate math row by row. Semantics follow the reference kernel
// (src/ops/rnn.cpp): GRU gates z, r, h and LSTM gates i, o, f, c in that order in W, R and B;
// rows past their sequence length keep their state and leave zeros in Y.
#pragma once

#include <cstdint>

#include "kernels/registry.h"

namespace aicc::kernels {

class ThreadPool;

enum class RnnActivation { Sigmoid, Tanh, Relu };

// What both cells share.
struct RnnShape {
  int64_t T = 0, batch = 0, I = 0, H = 0; // time steps, batch, input size, hidden size
  int64_t dirs = 1;                       // 1 (forward or reverse) or 2 (bidirectional)
  bool reverse = false;                   // dirs == 1: run backwards in time
  bool hasClip = false;                   // clamp gate pre-activations to [-clip, clip]
  float clip = 0;
};

struct GruShape : RnnShape {
  bool linearBeforeReset = false; // h gate: r * (h R_h^T + Rb_h), else (r * h) R_h^T + Rb_h
  // Per direction: f for the z and r gates, g for the candidate (ONNX defaults Sigmoid, Tanh).
  RnnActivation f[2] = {RnnActivation::Sigmoid, RnnActivation::Sigmoid};
  RnnActivation g[2] = {RnnActivation::Tanh, RnnActivation::Tanh};
};

struct LstmShape : RnnShape {
  bool inputForget = false; // couple the gates: f = 1 - i
  // Per direction: f for the i, o and f gates, g for the cell candidate, h for the output (ONNX
  // defaults Sigmoid, Tanh, Tanh).
  RnnActivation f[2] = {RnnActivation::Sigmoid, RnnActivation::Sigmoid};
  RnnActivation g[2] = {RnnActivation::Tanh, RnnActivation::Tanh};
  RnnActivation h[2] = {RnnActivation::Tanh, RnnActivation::Tanh};
};

// Row-major buffers of one call; G = 3 gates (GRU) or 4 (LSTM). Optional ones may be null.
struct RnnBuffers {
  const float* X = nullptr;      // [T, batch, I]
  const float* W = nullptr;      // [dirs, G*H, I]
  const float* R = nullptr;      // [dirs, G*H, H]
  const float* B = nullptr;      // [dirs, 2*G*H]: Wb (G*H) then Rb (G*H); null = zeros
  const int64_t* lens = nullptr; // [batch], each in [0, T]; null = all T
  const float* h0 = nullptr;     // [dirs, batch, H]; null = zeros
  float* Y = nullptr;            // [T, dirs, batch, H] or null
  float* Yh = nullptr;           // [dirs, batch, H] or null
  // W and R packed ahead for the GEMM kernel (packRnnWeights: constant weights, at compile
  // time), or null: packed per call.
  const float* packed = nullptr;
};
using GruBuffers = RnnBuffers;

struct LstmBuffers : RnnBuffers {
  const float* c0 = nullptr; // [dirs, batch, H]; null = zeros
  const float* P = nullptr;  // [dirs, 3H]: peepholes of i, o, f; null = zeros
  float* Yc = nullptr;       // [dirs, batch, H] or null
};

// W and R of a GRU (gates 3; lbr: linear_before_reset) or LSTM (gates 4) packed for
// `gemmKernel` as RnnBuffers::packed takes them: per direction W, R (a GRU without
// linear_before_reset: its z and r rows, then its candidate's), each padded to 64 bytes.
int64_t rnnPackedFloats(const KernelDesc& gemmKernel, const RnnShape& s, int64_t gates, bool lbr);
void packRnnWeights(const KernelDesc& gemmKernel, const RnnShape& s, int64_t gates, bool lbr,
                    const float* W, const float* R, float* dst);

// Run the cell with `gemmKernel` (a KernelOp::Gemm descriptor); W and R are packed per call
// unless RnnBuffers::packed holds them. The
// input projection runs on `pool`; the per-step GEMMs only when they are large enough to pay for
// the fork. Throw aicc::Error on bad shapes or lengths.
void gru(const KernelDesc& gemmKernel, const GruShape& s, const GruBuffers& b,
         ThreadPool* pool = nullptr);
void lstm(const KernelDesc& gemmKernel, const LstmShape& s, const LstmBuffers& b,
          ThreadPool* pool = nullptr);

} // namespace aicc::kernels
