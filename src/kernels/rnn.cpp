#include "kernels/rnn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/gemm.h"
#include "rt/error.h"

namespace aicc::kernels {

namespace {

// Per-step GEMMs (batch x G*H x H multiply-adds) below this size run on the calling thread: the
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

// Checks the shape and lengths of a `what` ("gru", "lstm") call and zeroes Y (rows past their
// length leave zeros).
void begin(const char* what, const RnnShape& s, const RnnBuffers& b) {
  AICC_RT_CHECK(s.T >= 0 && s.batch >= 0 && s.I >= 1 && s.H >= 1 && (s.dirs == 1 || s.dirs == 2),
                "{}: bad shape T={} batch={} I={} H={} dirs={}", what, s.T, s.batch, s.I, s.H,
                s.dirs);
  AICC_RT_CHECK(b.X && b.W && b.R, "{}: X, W and R are required", what);
  for (int64_t i = 0; b.lens && i < s.batch; ++i)
    AICC_RT_CHECK(b.lens[i] >= 0 && b.lens[i] <= s.T,
                  "{}: sequence_lens entry {} is out of range [0, {}]", what, b.lens[i], s.T);
  if (b.Y) std::memset(b.Y, 0, sizeof(float) * size_t(s.T * s.dirs * s.batch * s.H));
}

// A GEMM's B operand: K x N of a [N, K] weight, packed ahead (a view into RnnBuffers::packed,
// advancing `ahead`) or here.
struct Operand {
  const KernelDesc* k = nullptr;
  const float* p = nullptr;
  int64_t K = 0, N = 0;
  AlignedFloats own;

  void gemm(int64_t M, const float* A, int64_t lda, float* C, int64_t ldc, const Epilogue& ep,
            ThreadPool* pool) const {
    gemmPackedB(*k, p, K, N, M, A, lda, C, ldc, ep, pool);
  }
};

// Floats of one packed operand in the blob (a multiple of 16: each starts 64-byte aligned).
int64_t blobFloats(const KernelDesc& k, int64_t K, int64_t N) {
  return (packedBFloats(k, K, N) + 15) / 16 * 16;
}

Operand operand(const KernelDesc& k, const float*& ahead, const float* src, int64_t K, int64_t N) {
  Operand o{&k, ahead, K, N, {}};
  if (ahead) {
    ahead += blobFloats(k, K, N);
  } else {
    o.own = AlignedFloats::make(packedBFloats(k, K, N));
    packBInto(k, src, K, N, K, true, o.own.data());
    o.p = o.own.data();
  }
  return o;
}

// The operands of one direction in packing order: W [G, I], R's rows (all, or a GRU's z and r),
// then a GRU's candidate rows of R. (sizes: K, N each)
std::vector<std::pair<int64_t, int64_t>> operandsOf(const RnnShape& s, int64_t gates, bool lbr) {
  const int64_t G = gates * s.H;
  if (gates == 3 && !lbr) return {{s.I, G}, {s.H, 2 * s.H}, {s.H, s.H}};
  return {{s.I, G}, {s.H, G}};
}

// One direction of either cell: W packed for the GEMM kernel, the input projection of every step
// (X W^T + Wb), the hidden state, the step order under sequence_lens and the Y / Y_h writes. The
// cell supplies step(st): the recurrent GEMM(s) and the gates of step st of every running row.
class Recurrence {
public:
  virtual ~Recurrence() = default;

  void run() {
    if (s_.T > 0 && s_.batch > 0)
      w_.gemm(s_.T * s_.batch, b_.X, s_.I, xw_.data(), G_, Epilogue::none(wb_), pool_);
    int64_t steps = 0;
    for (int64_t i = 0; i < s_.batch; ++i) steps = std::max(steps, len(i));
    for (int64_t st = 0; st < steps; ++st) step(st);
    if (b_.Yh) std::copy(h_.begin(), h_.end(), b_.Yh + d_ * s_.batch * H_);
  }

protected:
  // `ahead`: this direction's operands in RnnBuffers::packed, or null.
  Recurrence(const KernelDesc& k, const RnnShape& s, const RnnBuffers& b, int64_t d, int64_t gates,
             ThreadPool* pool, const float* ahead)
      : s_(s), b_(b), d_(d), H_(s.H), G_(gates * s.H), pool_(pool), ahead_(ahead) {
    wb_ = b.B ? b.B + d * 2 * G_ : nullptr;
    rb_ = b.B ? wb_ + G_ : nullptr;
    rev_ = s.reverse || d == 1;
    w_ = operand(k, ahead_, b.W + d * G_ * s.I, s.I, G_);
    xw_.resize(size_t(s.T * s.batch * G_));
    h_ = state(b.h0);
    stepPool_ = s.batch * G_ * H_ >= kParallelStepMacs ? pool : nullptr;
  }

  virtual void step(int64_t st) = 0;

  // This direction's rows of a [dirs, batch, H] initial state, or zeros.
  std::vector<float> state(const float* init) const {
    std::vector<float> v(size_t(s_.batch * H_), 0.0f);
    if (init) std::copy_n(init + d_ * s_.batch * H_, s_.batch * H_, v.begin());
    return v;
  }
  const float* rd() const { return b_.R + d_ * G_ * H_; } // this direction's R
  int64_t len(int64_t row) const { return b_.lens ? b_.lens[row] : s_.T; }
  int64_t timeOf(int64_t st, int64_t row) const { return rev_ ? len(row) - 1 - st : st; }
  float clip(float x) const { return s_.hasClip ? std::clamp(x, -s_.clip, s_.clip) : x; }
  const float* xw(int64_t t, int64_t row) const { return xw_.data() + (t * s_.batch + row) * G_; }
  // The new hidden state of `row` written to Y at time t.
  void emit(int64_t row, int64_t t) const {
    if (b_.Y)
      std::copy_n(h_.data() + row * H_, H_, b_.Y + ((t * s_.dirs + d_) * s_.batch + row) * H_);
  }

  const RnnShape& s_;
  const RnnBuffers& b_;
  int64_t d_, H_, G_;
  ThreadPool *pool_, *stepPool_ = nullptr;
  const float *wb_ = nullptr, *rb_ = nullptr;
  bool rev_ = false;
  const float* ahead_; // the next packed operand ahead, or null
  Operand w_;
  std::vector<float> xw_, h_;
};

class GruDirection final : public Recurrence {
public:
  GruDirection(const KernelDesc& k, const GruShape& s, const GruBuffers& b, int64_t d,
               ThreadPool* pool, const float* ahead)
      : Recurrence(k, s, b, d, 3, pool, ahead), lbr_(s.linearBeforeReset), f_(s.f[d]), g_(s.g[d]) {
    nr_ = lbr_ ? G_ : 2 * H_; // R rows in the first recurrent GEMM
    r_ = operand(k, ahead_, rd(), H_, nr_);
    if (!lbr_) rh_ = operand(k, ahead_, rd() + 2 * H_ * H_, H_, H_);
    hr_.resize(size_t(s.batch * nr_));
    z_.assign(size_t(s.batch * H_), 0.0f);
    rhIn_.assign(size_t(s.batch * H_), 0.0f);
    q_.resize(size_t(s.batch * H_));
    hh_.resize(size_t(H_));
  }

private:
  // Step st of every row still running: the recurrent GEMM over the whole batch (finished rows
  // are computed and ignored), then the gates.
  void step(int64_t st) override {
    r_.gemm(s_.batch, h_.data(), H_, hr_.data(), nr_, Epilogue::none(rb_), stepPool_);
    for (int64_t row = 0; row < s_.batch; ++row)
      if (st < len(row)) gates(row, timeOf(st, row));
    if (lbr_) return;
    // h gate: (r * h) R_h^T + Rb_h.
    rh_.gemm(s_.batch, rhIn_.data(), H_, q_.data(), H_,
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
      if (lbr_)
        hh_[size_t(j)] = activate(g_, clip(x[2 * H_ + j] + r * hr[2 * H_ + j]));
      else
        rh[j] = r * h[j];
    }
    if (lbr_) update(row, t);
  }

  // h = (1 - z) * hh + z * h for one row, written to Y at time t.
  void update(int64_t row, int64_t t) {
    float* h = h_.data() + row * H_;
    const float* z = z_.data() + row * H_;
    for (int64_t j = 0; j < H_; ++j) h[j] = (1.0f - z[j]) * hh_[size_t(j)] + z[j] * h[j];
    emit(row, t);
  }

  bool lbr_;
  RnnActivation f_, g_;
  int64_t nr_ = 0;
  Operand r_, rh_;
  std::vector<float> hr_, z_, rhIn_, q_, hh_;
};

class LstmDirection final : public Recurrence {
public:
  LstmDirection(const KernelDesc& k, const LstmShape& s, const LstmBuffers& b, int64_t d,
                ThreadPool* pool, const float* ahead)
      : Recurrence(k, s, b, d, 4, pool, ahead), lb_(b), inputForget_(s.inputForget), f_(s.f[d]),
        g_(s.g[d]), out_(s.h[d]) {
    r_ = operand(k, ahead_, rd(), H_, G_);
    c_ = state(b.c0);
    p_.assign(size_t(3 * H_), 0.0f);
    if (b.P) std::copy_n(b.P + d * 3 * H_, 3 * H_, p_.begin());
    hr_.resize(size_t(s.batch * G_));
  }

  void run() {
    Recurrence::run();
    if (lb_.Yc) std::copy(c_.begin(), c_.end(), lb_.Yc + d_ * s_.batch * H_);
  }

private:
  // Step st of every row still running: the recurrent GEMM over the whole batch (finished rows
  // are computed and ignored), then the gates and the new cell and hidden states.
  void step(int64_t st) override {
    r_.gemm(s_.batch, h_.data(), H_, hr_.data(), G_, Epilogue::none(rb_), stepPool_);
    for (int64_t row = 0; row < s_.batch; ++row)
      if (st < len(row)) cell(row, timeOf(st, row));
  }

  // Gates i, o, f, c (peepholes i, o, f) of one row: c = f * c + i * g(.), h = o * h(c).
  void cell(int64_t row, int64_t t) {
    const float* x = xw(t, row);
    const float* hr = hr_.data() + row * G_;
    const float* p = p_.data();
    float* h = h_.data() + row * H_;
    float* c = c_.data() + row * H_;
    auto pre = [&](int64_t gate, int64_t j) { return x[gate * H_ + j] + hr[gate * H_ + j]; };
    for (int64_t j = 0; j < H_; ++j) {
      const float cPrev = c[j];
      const float i = activate(f_, clip(pre(0, j) + p[j] * cPrev));
      const float f =
          inputForget_ ? 1.0f - i : activate(f_, clip(pre(2, j) + p[2 * H_ + j] * cPrev));
      c[j] = f * cPrev + i * activate(g_, clip(pre(3, j)));
      const float o = activate(f_, clip(pre(1, j) + p[H_ + j] * c[j]));
      h[j] = o * activate(out_, c[j]);
    }
    emit(row, t);
  }

  const LstmBuffers& lb_;
  bool inputForget_;
  RnnActivation f_, g_, out_;
  Operand r_;
  std::vector<float> c_, p_, hr_;
};

} // namespace

int64_t rnnPackedFloats(const KernelDesc& k, const RnnShape& s, int64_t gates, bool lbr) {
  int64_t n = 0;
  for (const auto& [K, N] : operandsOf(s, gates, lbr)) n += blobFloats(k, K, N);
  return n * s.dirs;
}

void packRnnWeights(const KernelDesc& k, const RnnShape& s, int64_t gates, bool lbr, const float* W,
                    const float* R, float* dst) {
  const int64_t G = gates * s.H;
  for (int64_t d = 0; d < s.dirs; ++d) {
    const float* r = R + d * G * s.H;
    const float* src[3] = {W + d * G * s.I, r, r + 2 * s.H * s.H}; // (the last: a GRU's h rows)
    int i = 0;
    for (const auto& [K, N] : operandsOf(s, gates, lbr)) {
      packBInto(k, src[i++], K, N, K, true, dst);
      dst += blobFloats(k, K, N);
    }
  }
}

void gru(const KernelDesc& gemmKernel, const GruShape& s, const GruBuffers& b, ThreadPool* pool) {
  begin("gru", s, b);
  const int64_t per =
      b.packed ? rnnPackedFloats(gemmKernel, s, 3, s.linearBeforeReset) / s.dirs : 0;
  for (int64_t d = 0; d < s.dirs; ++d)
    GruDirection(gemmKernel, s, b, d, pool, b.packed ? b.packed + d * per : nullptr).run();
}

void lstm(const KernelDesc& gemmKernel, const LstmShape& s, const LstmBuffers& b,
          ThreadPool* pool) {
  begin("lstm", s, b);
  const int64_t per = b.packed ? rnnPackedFloats(gemmKernel, s, 4, false) / s.dirs : 0;
  for (int64_t d = 0; d < s.dirs; ++d)
    LstmDirection(gemmKernel, s, b, d, pool, b.packed ? b.packed + d * per : nullptr).run();
}

} // namespace aicc::kernels
