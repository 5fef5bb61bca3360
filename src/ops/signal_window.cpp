// Window functions (HannWindow, HammingWindow, BlackmanWindow) and MelWeightMatrix (opset 17).
//
// A window of `size` samples: with N = size when periodic (the default) and N = size - 1 when
// symmetric,
//   Hann:     w[n] = sin^2(pi n / N)
//   Hamming:  w[n] = 25/46 - 21/46 cos(2 pi n / N)
//   Blackman: w[n] = 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
// computed in double and stored as `output_datatype` (default float).
//
// MelWeightMatrix builds [dft_length/2 + 1, num_mel_bins] triangular filters: num_mel_bins + 2
// points evenly spaced on the mel scale (mel = 2595 log10(1 + hz/700)) between the edge
// frequencies, mapped to spectrogram bins floor((dft_length + 1) hz / sample_rate); filter i rises
// linearly from point i to point i+1 and falls to point i+2 (the ONNX reference's formulation).
#include "ops/signal.h"

#include "ops/helpers.h"

#include <cmath>
#include <numbers>

namespace aicc {

namespace {

bool isNumericOutput(DType t) {
  switch (t) {
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::F16:
  case DType::F32:
  case DType::F64:
  case DType::BF16:
    return true;
  default:
    return false;
  }
}

DType outputDType(const Node& n) {
  int64_t code = n.attrInt("output_datatype");
  auto dt = dtypeFromOnnx(static_cast<int32_t>(code));
  AICC_CHECK(dt && isNumericOutput(*dt),
             "attribute 'output_datatype' ({}) must be a numeric element type", code);
  return *dt;
}

int64_t scalarIntInput(const KernelCtx& c, size_t i, const char* what) {
  const Tensor& t = c.in(i);
  AICC_CHECK(t.dtype() == DType::I32 || t.dtype() == DType::I64,
             "{} (input {}) must be int32 or int64, got {}", what, i, dtypeName(t.dtype()));
  AICC_CHECK(t.numel() == 1 && t.rank() <= 1, "{} (input {}) must be a scalar, got shape {}", what,
             i, formatDims(t.shape()));
  return t.getI64(0);
}

double scalarFloatInput(const KernelCtx& c, size_t i, const char* what) {
  const Tensor& t = c.in(i);
  AICC_CHECK(t.dtype() == DType::F32 || t.dtype() == DType::F64 || t.dtype() == DType::F16 ||
                 t.dtype() == DType::BF16,
             "{} (input {}) must be a float type, got {}", what, i, dtypeName(t.dtype()));
  AICC_CHECK(t.numel() == 1 && t.rank() <= 1, "{} (input {}) must be a scalar, got shape {}", what,
             i, formatDims(t.shape()));
  return t.getF64(0);
}

Dim scalarDim(InferCtx& c, size_t i) {
  const auto* v = c.shapeValue(i);
  if (v && v->size() == 1 && (*v)[0].isStatic()) return (*v)[0];
  return Dim{};
}

enum class Win { Hann, Hamming, Blackman };

double windowValue(Win k, int64_t n, int64_t bigN) {
  const double x =
      static_cast<double>(n) / static_cast<double>(bigN); // NaN for 0/0 (size 1, symmetric)
  const double pi = std::numbers::pi;
  switch (k) {
  case Win::Hann: {
    double s = std::sin(pi * x);
    return s * s;
  }
  case Win::Hamming:
    return 25.0 / 46.0 - 21.0 / 46.0 * std::cos(2 * pi * x);
  case Win::Blackman:
    return 0.42 - 0.5 * std::cos(2 * pi * x) + 0.08 * std::cos(4 * pi * x);
  }
  return 0;
}

void registerWindow(OpRegistry& r, const char* name, Win k) {
  r.op(name)
      .since(17)
      .inputs(1, 1)
      .attrInt("output_datatype", 1)
      .attrInt("periodic", 1)
      .infer([](InferCtx& c) {
        DType dt = outputDType(c.node);
        DType st = c.inDType(0);
        if (st != DType::Undefined)
          AICC_CHECK(st == DType::I32 || st == DType::I64,
                     "size (input 0) must be int32 or int64, got {}", dtypeName(st));
        Dim d = scalarDim(c, 0);
        AICC_CHECK(!d.isStatic() || d.value >= 0, "size must be >= 0, got {}", d.value);
        c.setTensor(0, dt, Shape{d});
      })
      .kernel([k](KernelCtx& c) {
        DType dt = outputDType(c.node);
        int64_t size = scalarIntInput(c, 0, "size");
        AICC_CHECK(size >= 0, "size must be >= 0, got {}", size);
        const int64_t bigN = c.node.attrInt("periodic") != 0 ? size : size - 1;
        Tensor y(DType::F64, {size});
        for (int64_t n = 0; n < size; ++n) y.data<double>()[n] = windowValue(k, n, bigN);
        return std::vector<RValue>{RValue::of(y.castTo(dt))};
      });
}

double hzToMel(double hz) { return 2595.0 * std::log1p(hz / 700.0) / std::log(10.0); }
double melToHz(double mel) { return 700.0 * std::expm1(mel / 2595.0 * std::log(10.0)); }

std::vector<RValue> runMelWeightMatrix(KernelCtx& c) {
  DType dt = outputDType(c.node);
  const int64_t mels = scalarIntInput(c, 0, "num_mel_bins");
  const int64_t dftLen = scalarIntInput(c, 1, "dft_length");
  const int64_t rate = scalarIntInput(c, 2, "sample_rate");
  const double lowHz = scalarFloatInput(c, 3, "lower_edge_hertz");
  const double highHz = scalarFloatInput(c, 4, "upper_edge_hertz");
  AICC_CHECK(mels > 0, "num_mel_bins must be positive, got {}", mels);
  AICC_CHECK(dftLen > 0, "dft_length must be positive, got {}", dftLen);
  AICC_CHECK(rate > 0, "sample_rate must be positive, got {}", rate);
  AICC_CHECK(lowHz >= 0 && lowHz <= highHz,
             "edge frequencies must satisfy 0 <= lower ({}) <= upper ({})", lowHz, highHz);
  const int64_t specBins = dftLen / 2 + 1;
  const double lowMel = hzToMel(lowHz), highMel = hzToMel(highHz);
  const double step = (highMel - lowMel) / static_cast<double>(mels + 2);
  std::vector<int64_t> bins(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    double hz = melToHz(static_cast<double>(i) * step + lowMel);
    double b = std::floor(static_cast<double>(dftLen + 1) * hz / static_cast<double>(rate));
    AICC_CHECK(b >= 0 && b < static_cast<double>(specBins),
               "mel point {} ({} Hz) falls outside the {} spectrogram bins (upper_edge_hertz {} vs "
               "sample_rate {})",
               i, hz, specBins, highHz, rate);
    bins[static_cast<size_t>(i)] = static_cast<int64_t>(b);
  }
  Tensor y(DType::F64, {specBins, mels});
  double* yv = y.data<double>();
  auto at = [&](int64_t j, int64_t i) -> double& { return yv[j * mels + i]; };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t lo = bins[static_cast<size_t>(i)], mid = bins[static_cast<size_t>(i + 1)],
                  hi = bins[static_cast<size_t>(i + 2)];
    if (mid == lo)
      at(mid, i) = 1;
    else
      for (int64_t j = lo; j <= mid; ++j)
        at(j, i) = static_cast<double>(j - lo) / static_cast<double>(mid - lo);
    if (hi > mid)
      for (int64_t j = mid; j < hi; ++j)
        at(j, i) = static_cast<double>(hi - j) / static_cast<double>(hi - mid);
  }
  return {RValue::of(y.castTo(dt))};
}

void inferMelWeightMatrix(InferCtx& c) {
  DType dt = outputDType(c.node);
  for (size_t i = 0; i < 3; ++i) {
    DType t = c.inDType(i);
    AICC_CHECK(t == DType::Undefined || t == DType::I32 || t == DType::I64,
               "input {} must be int32 or int64, got {}", i, dtypeName(t));
  }
  Dim mels = scalarDim(c, 0), len = scalarDim(c, 1);
  Dim bins = len.isStatic() ? Dim::known(len.value / 2 + 1) : Dim{};
  c.setTensor(0, dt, Shape{bins, mels});
}

} // namespace

void registerWindowOps(OpRegistry& r) {
  registerWindow(r, "HannWindow", Win::Hann);
  registerWindow(r, "HammingWindow", Win::Hamming);
  registerWindow(r, "BlackmanWindow", Win::Blackman);

  r.op("MelWeightMatrix")
      .since(17)
      .inputs(5, 5)
      .attrInt("output_datatype", 1)
      .infer(inferMelWeightMatrix)
      .kernel(runMelWeightMatrix);
}

} // namespace aicc
