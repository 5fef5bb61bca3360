#include "kernels/rnn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/gemm.h"
#include "support/error.h"

namespace aicc::kernels {

namespace {

// Per-step GEMMs (batch x 3H x H multiply-adds) below this size run on the calling thread: the
// fork/join of the pool would cost more than the product.
constexpr int64_t kParallelStepMacs = int64_t(1) << 15;

float activate(RnnActivation a, float x) {
  switch (a) {
  case RnnActivation::Sigmoid:
    return 1.0f / (1.0f + std::exp(-x));
  case RnnActivation::Tanh:
    return std::tanh(x);
  case RnnActivation::Relu:
    return std::max(x, 0.0f);
  }
  return x;
}

void checkShape(const GruShape& s, const GruBuffers& b) {
  AICC_CHECK(s.T >= 0 && s.batch >= 0 && s.I >= 1 && s.H >= 1 && (s.dirs == 1 || s.dirs == 2),
             "gru: bad shape T={} batch={} I={} H={} dirs={}", s.T, s.batch, s.I, s.H, s.dirs);
  AICC_CHECK(b.X && b.W && b.R, "gru: X, W and R are required");
  for (int64_t i = 0; b.lens && i < s.batch; ++i)
    AICC_CHECK(b.lens[i] >= 0 && b.lens[i] <= s.T,
               "gru: sequence_lens entry {} is out of range [0, {}]", b.lens[i], s.T);
}

// One direction: W and R packed for the GEMM kernel, the hidden state and the per-step scratch.
class Direction {
public:
  Direction(const KernelDesc& k, const GruShape& s, const GruBuffers& b, int64_t d,
            ThreadPool* pool)
      : s_(s), b_(b), d_(d), H_(s.H), pool_(pool) {
    const int64_t H = H_, G = 3 * H;
    const float* Wd = b.W + d * G * s.I;
    const float* Rd = b.R + d * G * H;
    wb_ = b.B ? b.B + d * 2 * G : nullptr;
    rb_ = b.B ? wb_ + G : nullptr;
    rev_ = s.reverse || d == 1;
    f_ = s.f[d], g_ = s.g[d];
    nr_ = s.linearBeforeReset ? G : 2 * H; // R rows in the first recurrent GEMM
    w_ = packB(k, Wd, s.I, G, s.I, true);
    r_ = packB(k, Rd, H, nr_, H, true);
    if (!s.linearBeforeReset) rh_ = packB(k, Rd + 2 * H * H, H, H, H, true);
    xw_.resize(size_t(s.T * s.batch * G));
    h_.assign(size_t(s.batch * H), 0.0f);
    if (b.h0) std::copy_n(b.h0 + d * s.batch * H, s.batch * H, h_.begin());
    hr_.resize(size_t(s.batch * nr_));
    z_.assign(size_t(s.batch * H), 0.0f);
    rhIn_.assign(size_t(s.batch * H), 0.0f);
    q_.resize(size_t(s.batch * H));
    hh_.resize(size_t(H));
    stepPool_ = s.batch * G * H >= kParallelStepMacs ? pool : nullptr;
  }

  void run() {
    if (s_.T > 0 && s_.batch > 0)
      gemm(w_, s_.T * s_.batch, b_.X, s_.I, xw_.data(), 3 * H_, Epilogue::none(wb_), pool_);
    int64_t steps = 0;
    for (int64_t i = 0; i < s_.batch; ++i) steps = std::max(steps, len(i));
    for (int64_t st = 0; st < steps; ++st) step(st);
    if (b_.Yh) std::copy(h_.begin(), h_.end(), b_.Yh + d_ * s_.batch * H_);
  }

private:
  int64_t len(int64_t row) const { return b_.lens ? b_.lens[row] : s_.T; }
  float clip(float x) const { return s_.hasClip ? std::clamp(x, -s_.clip, s_.clip) : x; }
  const float* xw(int64_t t, int64_t row) const {
    return xw_.data() + (t * s_.batch + row) * 3 * H_;
  }

  // Step st of every row still running: the recurrent GEMM over the whole batch (finished rows
  // are computed and ignored), then the gates.
  void step(int64_t st) {
    gemm(r_, s_.batch, h_.data(), H_, hr_.data(), nr_, Epilogue::none(rb_), stepPool_);
    for (int64_t row = 0; row < s_.batch; ++row)
      if (st < len(row)) gates(row, timeOf(st, row));
    if (s_.linearBeforeReset) return;
    // h gate: (r * h) R_h^T + Rb_h.
    gemm(rh_, s_.batch, rhIn_.data(), H_, q_.data(), H_,
         Epilogue::none(rb_ ? rb_ + 2 * H_ : nullptr), stepPool_);
    for (int64_t row = 0; row < s_.batch; ++row) {
      if (st >= len(row)) continue;
      const int64_t t = timeOf(st, row);
      const float* x = xw(t, row);
      const float* q = q_.data() + row * H_;
      for (int64_t j = 0; j < H_; ++j) hh_[size_t(j)] = activate(g_, clip(x[2 * H_ + j] + q[j]));
      update(row, t);
    }
  }

  int64_t timeOf(int64_t st, int64_t row) const { return rev_ ? len(row) - 1 - st : st; }

  // z and r of one row; with linear_before_reset also the candidate and the new state, else the
  // reset hidden state r * h for the second GEMM.
  void gates(int64_t row, int64_t t) {
    const float* x = xw(t, row);
    const float* hr = hr_.data() + row * nr_;
    const float* h = h_.data() + row * H_;
    float* z = z_.data() + row * H_;
    float* rh = rhIn_.data() + row * H_;
    for (int64_t j = 0; j < H_; ++j) {
      z[j] = activate(f_, clip(x[j] + hr[j]));
      const float r = activate(f_, clip(x[H_ + j] + hr[H_ + j]));
      if (s_.linearBeforeReset)
        hh_[size_t(j)] = activate(g_, clip(x[2 * H_ + j] + r * hr[2 * H_ + j]));
      else
        rh[j] = r * h[j];
    }
    if (s_.linearBeforeReset) update(row, t);
  }

  // h = (1 - z) * hh + z * h for one row, written to Y at time t.
  void update(int64_t row, int64_t t) {
    float* h = h_.data() + row * H_;
    const float* z = z_.data() + row * H_;
    for (int64_t j = 0; j < H_; ++j) h[j] = (1.0f - z[j]) * hh_[size_t(j)] + z[j] * h[j];
    if (b_.Y) std::copy_n(h, H_, b_.Y + ((t * s_.dirs + d_) * s_.batch + row) * H_);
  }

  const GruShape& s_;
  const GruBuffers& b_;
  int64_t d_, H_, nr_ = 0;
  ThreadPool *pool_, *stepPool_ = nullptr;
  const float *wb_ = nullptr, *rb_ = nullptr;
  bool rev_ = false;
  RnnActivation f_, g_;
  PackedB w_, r_, rh_;
  std::vector<float> xw_, h_, hr_, z_, rhIn_, q_, hh_;
};

} // namespace

void gru(const KernelDesc& gemmKernel, const GruShape& s, const GruBuffers& b, ThreadPool* pool) {
  checkShape(s, b);
  if (b.Y) std::memset(b.Y, 0, sizeof(float) * size_t(s.T * s.dirs * s.batch * s.H));
  for (int64_t d = 0; d < s.dirs; ++d) Direction(gemmKernel, s, b, d, pool).run();
}

} // namespace aicc::kernels
