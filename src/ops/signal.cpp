// Signal processing: DFT (opset 20 form: axis as an optional input; opset 17..19 had an `axis`
// attribute, default 1, moved into input 2 at import) and STFT. The window functions and
// MelWeightMatrix live in signal_window.cpp.
//
// Signals use a trailing component dim: [..., 1] is real, [..., 2] is (real, imaginary).
// DFT along `axis` with length L (dft_length, default the axis' size; the input is truncated or
// zero-padded to L):
//   forward:            X[k] = sum_j x[j] exp(-2 pi i j k / L), k < L (or L/2+1 when onesided)
//   inverse:            x[j] = 1/L sum_k X[k] exp(+2 pi i j k / L)
//   inverse + onesided: the inverse real FFT: the input holds X[0 .. L/2], the rest of the spectrum
//                       is its Hermitian mirror; the output is real ([..., 1]); default L = 2(n-1).
// The transforms are mixed-radix FFTs (direct sums for prime lengths) in double with a twiddle
// table exact to double rounding.
#include "ops/signal.h"

#include "ops/helpers.h"

#include <cmath>
#include <complex>
#include <numbers>

namespace aicc {

namespace {

using Cplx = std::complex<double>;

bool isSignalFloat(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
}

// exp(sign * 2 pi i t / len) for t in [0, len).
std::vector<Cplx> twiddles(int64_t len, int sign) {
  std::vector<Cplx> w(static_cast<size_t>(len));
  for (int64_t t = 0; t < len; ++t) {
    double a = 2.0 * std::numbers::pi * static_cast<double>(t) / static_cast<double>(len);
    w[static_cast<size_t>(t)] = Cplx(std::cos(a), sign * std::sin(a));
  }
  return w;
}

// A scalar (or 1-element) integer input.
int64_t scalarInput(const KernelCtx& c, size_t i, const char* what) {
  const Tensor& t = c.in(i);
  AICC_CHECK(t.dtype() == DType::I32 || t.dtype() == DType::I64,
             "{} (input {}) must be int32 or int64, got {}", what, i, dtypeName(t.dtype()));
  AICC_CHECK(t.numel() == 1 && t.rank() <= 1, "{} (input {}) must be a scalar, got shape {}", what,
             i, formatDims(t.shape()));
  return t.getI64(0);
}

// The known value of a scalar integer input at inference time.
std::optional<int64_t> scalarValue(InferCtx& c, size_t i) {
  const auto* v = c.shapeValue(i);
  if (v && v->size() == 1 && (*v)[0].isStatic()) return (*v)[0].value;
  return std::nullopt;
}

int64_t normDftAxis(int64_t axis, int64_t rank) {
  AICC_CHECK((axis >= -rank && axis <= -2) || (axis >= 0 && axis <= rank - 2),
             "axis {} is out of range [-{}, -2] U [0, {}] for an input of rank {}", axis, rank,
             rank - 2, rank);
  return axis < 0 ? axis + rank : axis;
}

struct DftParams {
  int64_t axis = 0, len = 0, outLen = 0, outComp = 2;
  bool inverse = false, onesided = false;
};

DftParams dftParams(const Dims& shape, int64_t axisArg, std::optional<int64_t> dftLength,
                    bool inverse, bool onesided) {
  DftParams p;
  p.inverse = inverse;
  p.onesided = onesided;
  p.axis = normDftAxis(axisArg, static_cast<int64_t>(shape.size()));
  int64_t n = shape[static_cast<size_t>(p.axis)];
  p.len = dftLength ? *dftLength : (inverse && onesided ? 2 * (n - 1) : n);
  AICC_CHECK(p.len > 0, "dft_length must be positive, got {}", p.len);
  p.outLen = !inverse && onesided ? p.len / 2 + 1 : p.len;
  p.outComp = inverse && onesided ? 1 : 2;
  return p;
}

// Mixed-radix Cooley-Tukey: out[k] = sum_j in[j * stride] w[(j k mod n) * (len / n)] for k < n,
// where `w` is the twiddle table of the full length `len` (a multiple of n). Splits on the smallest
// prime factor p of n; a prime n is summed directly. O(n * sum of n's prime factors), in double.
void fft(const Cplx* in, int64_t stride, int64_t n, const std::vector<Cplx>& w, Cplx* out) {
  const int64_t len = static_cast<int64_t>(w.size()), scale = len / n;
  int64_t p = 2;
  while (p * p <= n && n % p != 0) ++p;
  if (p * p > n) p = n; // n is prime (or 1)
  if (p == n) {
    for (int64_t k = 0; k < n; ++k) {
      Cplx acc = 0;
      for (int64_t j = 0; j < n; ++j)
        acc += in[j * stride] * w[static_cast<size_t>((j * k % n) * scale)];
      out[k] = acc;
    }
    return;
  }
  const int64_t m = n / p;
  // sub[r] = the length-m transform of in[r], in[r + p], ... (stride p).
  std::vector<Cplx> sub(static_cast<size_t>(n));
  for (int64_t r = 0; r < p; ++r) fft(in + r * stride, stride * p, m, w, sub.data() + r * m);
  for (int64_t k = 0; k < n; ++k) {
    Cplx acc = 0;
    for (int64_t r = 0; r < p; ++r)
      acc += sub[static_cast<size_t>(r * m + k % m)] * w[static_cast<size_t>((r * k % n) * scale)];
    out[k] = acc;
  }
}

// Transforms one lane `in` (n complex values along the axis) into `out` (p.outLen values); `w` is
// twiddles(p.len, inverse ? +1 : -1).
void dftLane(const DftParams& p, const std::vector<Cplx>& w, const std::vector<Cplx>& in,
             std::vector<Cplx>& out) {
  const int64_t len = p.len, n = static_cast<int64_t>(in.size());
  std::vector<Cplx> a(static_cast<size_t>(len)), b(static_cast<size_t>(len));
  if (p.inverse && p.onesided) {
    // Inverse real FFT: rebuild the Hermitian spectrum from X[0 .. len/2].
    const int64_t half = len / 2 + 1;
    for (int64_t k = 0; k < len; ++k) {
      int64_t src = k < half ? k : len - k;
      Cplx v = src < n ? in[static_cast<size_t>(src)] : Cplx(0);
      a[static_cast<size_t>(k)] = k < half ? v : std::conj(v);
    }
  } else {
    for (int64_t j = 0; j < std::min(n, len); ++j)
      a[static_cast<size_t>(j)] = in[static_cast<size_t>(j)];
  }
  fft(a.data(), 1, len, w, b.data());
  const double scale = p.inverse ? 1.0 / static_cast<double>(len) : 1.0;
  for (int64_t k = 0; k < p.outLen; ++k) {
    Cplx v = b[static_cast<size_t>(k)] * scale;
    // The inverse real FFT keeps the real part only (the imaginary parts of X[0] and X[len/2]
    // are ignored, as numpy's irfft does).
    out[static_cast<size_t>(k)] = p.inverse && p.onesided ? Cplx(v.real(), 0) : v;
  }
}

Tensor dftTensor(const Tensor& x, const DftParams& p) {
  const Dims& s = x.shape();
  const int64_t rank = x.rank();
  const int64_t comp = s.back();
  Dims os = s;
  os[static_cast<size_t>(p.axis)] = p.outLen;
  os.back() = p.outComp;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < p.axis; ++i) outer *= s[static_cast<size_t>(i)];
  for (int64_t i = p.axis + 1; i < rank - 1; ++i) inner *= s[static_cast<size_t>(i)];
  const int64_t n = s[static_cast<size_t>(p.axis)];
  Tensor y(DType::F64, os);
  if (y.numel() == 0) return y.castTo(x.dtype());
  std::vector<double> xv = x.toF64Vector();
  double* yv = y.data<double>();
  std::vector<Cplx> w = twiddles(p.len, p.inverse ? 1 : -1);
  std::vector<Cplx> lane(static_cast<size_t>(n)), res(static_cast<size_t>(p.outLen));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        size_t at = static_cast<size_t>(((o * n + j) * inner + i) * comp);
        lane[static_cast<size_t>(j)] = Cplx(xv[at], comp == 2 ? xv[at + 1] : 0.0);
      }
      dftLane(p, w, lane, res);
      for (int64_t k = 0; k < p.outLen; ++k) {
        double* dst = yv + ((o * p.outLen + k) * inner + i) * p.outComp;
        dst[0] = res[static_cast<size_t>(k)].real();
        if (p.outComp == 2) dst[1] = res[static_cast<size_t>(k)].imag();
      }
    }
  return y.castTo(x.dtype());
}

void checkSignalInput(const Dims& s, const char* what) {
  AICC_CHECK(s.size() >= 2, "{} must have rank >= 2 ([..., 1|2]), got {}", what, formatDims(s));
  AICC_CHECK(s.back() == 1 || s.back() == 2, "{}: last dim must be 1 (real) or 2 (complex), got {}",
             what, formatDims(s));
}

std::vector<RValue> runDft(KernelCtx& c) {
  const Tensor& x = c.in(0);
  requireDType(c, 0, {DType::F32, DType::F64, DType::F16, DType::BF16});
  checkSignalInput(x.shape(), "input 0");
  std::optional<int64_t> len;
  if (c.has(1)) len = scalarInput(c, 1, "dft_length");
  int64_t axis = c.has(2) ? scalarInput(c, 2, "axis") : -2;
  DftParams p = dftParams(x.shape(), axis, len, c.node.attrInt("inverse") != 0,
                          c.node.attrInt("onesided") != 0);
  return {RValue::of(dftTensor(x, p))};
}

void inferDft(InferCtx& c) {
  DType dt = c.inDType(0);
  if (dt != DType::Undefined)
    AICC_CHECK(isSignalFloat(dt), "input 0 has unsupported element type {}", dtypeName(dt));
  const auto& xs = c.inShape(0);
  if (!xs) return c.setTensor(0, dt, std::nullopt);
  const int64_t rank = static_cast<int64_t>(xs->size());
  AICC_CHECK(rank >= 2, "input 0 must have rank >= 2 ([..., 1|2]), got {}", formatShape(*xs));
  const Dim& last = xs->back();
  AICC_CHECK(!last.isStatic() || last.value == 1 || last.value == 2,
             "input 0: last dim must be 1 (real) or 2 (complex), got {}", formatShape(*xs));
  const bool inverse = c.node.attrInt("inverse") != 0, onesided = c.node.attrInt("onesided") != 0;
  Shape out = *xs;
  out.back() = Dim::known(inverse && onesided ? 1 : 2);
  std::optional<int64_t> axis = c.has(2) ? scalarValue(c, 2) : std::optional<int64_t>(-2);
  std::optional<int64_t> len;
  if (c.has(1)) len = scalarValue(c, 1);
  const bool sameLen = !c.has(1) && !onesided; // the axis keeps its size
  if (!axis) {
    if (!sameLen)
      for (int64_t i = 0; i < rank - 1; ++i) out[static_cast<size_t>(i)] = Dim{};
    return c.setTensor(0, dt, out);
  }
  int64_t a = normDftAxis(*axis, rank);
  Dim& d = out[static_cast<size_t>(a)];
  const Dim& n = (*xs)[static_cast<size_t>(a)];
  if (c.has(1) && !len)
    d = Dim{};
  else if (!sameLen) {
    if (!len && !n.isStatic())
      d = Dim{};
    else {
      int64_t l = len ? *len : (inverse ? 2 * (n.value - 1) : n.value);
      AICC_CHECK(l > 0, "dft_length must be positive, got {}", l);
      d = Dim::known(!inverse && onesided ? l / 2 + 1 : l);
    }
  }
  c.setTensor(0, dt, out);
}

// Opsets 17..19: `axis` was an attribute (default 1); it becomes input 2.
void upgradeDftAxisAttr(ImportCtx& c) {
  int64_t axis = 1;
  if (auto it = c.node.attrs.find("axis"); it != c.node.attrs.end()) {
    axis = c.node.attrInt("axis");
    c.node.attrs.erase(it);
  }
  if (c.node.inputs.size() < 3) c.node.inputs.resize(3, nullptr);
  c.node.inputs[2] = c.constant(Tensor::fromI64({axis}, Dims{}), "axis");
}

// STFT: frames of `frame_length` samples every `frame_step`, each multiplied by the window and
// transformed with a forward DFT of length frame_length.
std::vector<RValue> runStft(KernelCtx& c) {
  const Tensor& x = c.in(0);
  requireDType(c, 0, {DType::F32, DType::F64, DType::F16, DType::BF16});
  AICC_CHECK(x.rank() == 3 && (x.dim(2) == 1 || x.dim(2) == 2),
             "signal must have shape [batch, length, 1|2], got {}", formatDims(x.shape()));
  const int64_t step = scalarInput(c, 1, "frame_step");
  AICC_CHECK(step > 0, "frame_step must be positive, got {}", step);
  std::vector<double> window;
  if (c.has(2)) {
    const Tensor& wt = c.in(2);
    AICC_CHECK(wt.dtype() == x.dtype(), "window is {}, signal is {}", dtypeName(wt.dtype()),
               dtypeName(x.dtype()));
    AICC_CHECK(wt.rank() == 1, "window must be 1-D, got {}", formatDims(wt.shape()));
    window = wt.toF64Vector();
  }
  int64_t flen = c.has(3) ? scalarInput(c, 3, "frame_length")
                          : (c.has(2) ? static_cast<int64_t>(window.size()) : x.dim(1));
  AICC_CHECK(flen > 0, "frame_length must be positive, got {}", flen);
  if (c.has(2))
    AICC_CHECK(static_cast<int64_t>(window.size()) == flen,
               "window has {} entries, frame_length is {}", window.size(), flen);
  else
    window.assign(static_cast<size_t>(flen), 1.0);
  const int64_t batch = x.dim(0), sigLen = x.dim(1), comp = x.dim(2);
  AICC_CHECK(sigLen >= flen, "signal length {} is shorter than frame_length {}", sigLen, flen);
  const int64_t frames = 1 + (sigLen - flen) / step;
  DftParams p;
  p.len = flen;
  p.onesided = c.node.attrInt("onesided") != 0;
  p.outLen = p.onesided ? flen / 2 + 1 : flen;
  Tensor y(DType::F64, {batch, frames, p.outLen, 2});
  std::vector<double> xv = x.toF64Vector();
  double* yv = y.data<double>();
  std::vector<Cplx> w = twiddles(flen, -1);
  std::vector<Cplx> lane(static_cast<size_t>(flen)), res(static_cast<size_t>(p.outLen));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t j = 0; j < flen; ++j) {
        size_t at = static_cast<size_t>((b * sigLen + f * step + j) * comp);
        double wj = window[static_cast<size_t>(j)];
        lane[static_cast<size_t>(j)] = Cplx(xv[at] * wj, comp == 2 ? xv[at + 1] * wj : 0.0);
      }
      dftLane(p, w, lane, res);
      for (int64_t k = 0; k < p.outLen; ++k) {
        double* dst = yv + ((b * frames + f) * p.outLen + k) * 2;
        dst[0] = res[static_cast<size_t>(k)].real();
        dst[1] = res[static_cast<size_t>(k)].imag();
      }
    }
  return {RValue::of(y.castTo(x.dtype()))};
}

void inferStft(InferCtx& c) {
  DType dt = c.inDType(0);
  if (dt != DType::Undefined)
    AICC_CHECK(isSignalFloat(dt), "signal has unsupported element type {}", dtypeName(dt));
  const auto& xs = c.inShape(0);
  Shape out{Dim{}, Dim{}, Dim{}, Dim::known(2)};
  std::optional<int64_t> flen;
  if (c.has(3))
    flen = scalarValue(c, 3);
  else if (c.has(2) && c.inShape(2) && c.inShape(2)->size() == 1 && (*c.inShape(2))[0].isStatic())
    flen = (*c.inShape(2))[0].value;
  if (xs) {
    AICC_CHECK(xs->size() == 3, "signal must have shape [batch, length, 1|2], got {}",
               formatShape(*xs));
    out[0] = (*xs)[0];
    if (!c.has(2) && !c.has(3) && (*xs)[1].isStatic()) flen = (*xs)[1].value;
    std::optional<int64_t> step = scalarValue(c, 1);
    if (flen && step && *step > 0 && *flen > 0 && (*xs)[1].isStatic() && (*xs)[1].value >= *flen)
      out[1] = Dim::known(1 + ((*xs)[1].value - *flen) / *step);
  }
  if (flen && *flen > 0) out[2] = Dim::known(c.node.attrInt("onesided") ? *flen / 2 + 1 : *flen);
  c.setTensor(0, dt, out);
}

} // namespace

void registerSignalOps(OpRegistry& r) {
  r.op("DFT")
      .since(17)
      .inputs(1, 3)
      .attrInt("inverse", 0)
      .attrInt("onesided", 0)
      .infer(inferDft)
      .kernel(runDft)
      .upgrade(17, 19, upgradeDftAxisAttr,
               {AttrSpec{"axis", Attribute::Kind::Int, Attribute{int64_t{1}}}});

  r.op("STFT") // (each signal of the batch alone)
      .since(17)
      .perSample()
      .inputs(2, 4)
      .attrInt("onesided", 1)
      .infer(inferStft)
      .kernel(runStft);

  registerWindowOps(r);
}

} // namespace aicc
