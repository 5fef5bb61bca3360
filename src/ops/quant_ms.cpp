// com.microsoft quantized ops that real int8 models (ONNX Runtime's quantizer output) use:
// QLinearAdd, QLinearMul, QLinearGlobalAveragePool, QLinearSigmoid, QLinearLeakyRelu,
// QLinearConcat. Arithmetic follows ONNX Runtime's reference paths (float32 scale ratios,
// round half to even, saturation).
#include "ops/control_flow_seq.h"
#include "ops/helpers.h"
#include "ops/quant_util.h"

#include <algorithm>

namespace aicc {
namespace {

float scalarF(const KernelCtx& c, size_t i, const char* what) {
  AICC_CHECK(c.in(i).numel() == 1, "{} must be a scalar, got shape {}", what,
             formatDims(c.in(i).shape()));
  return static_cast<float>(c.in(i).getF64(0));
}

int32_t zeroPoint(const KernelCtx& c, size_t i, const char* what) {
  if (!c.has(i)) return 0;
  AICC_CHECK(c.in(i).numel() == 1, "{} must be a scalar, got shape {}", what,
             formatDims(c.in(i).shape()));
  return static_cast<int32_t>(c.in(i).getI64(0));
}

void requireQ8(const KernelCtx& c, size_t i) { requireDType(c, i, {DType::U8, DType::I8}); }

// Elementwise binary op on quantized a, b -> quantized c (dtype of a), with broadcasting.
// `f(a, b, za, zb, zc)` gets the raw integer values and the zero points and returns c's value
// before rounding (c's zero point included).
template <typename F> Tensor qBinary(const KernelCtx& c, F f) {
  requireQ8(c, 0);
  requireQ8(c, 3);
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(3);
  AICC_CHECK(a.dtype() == b.dtype(), "A is {}, B is {}", dtypeName(a.dtype()),
             dtypeName(b.dtype()));
  int32_t za = zeroPoint(c, 2, "A_zero_point"), zb = zeroPoint(c, 5, "B_zero_point");
  int32_t zc = zeroPoint(c, 7, "C_zero_point");
  auto [lo, hi] = quantRange(a.dtype());
  Dims shape = broadcastDims(a.shape(), b.shape());
  Tensor y(a.dtype(), shape);
  BroadcastIndexer ia(a.shape(), shape), ib(b.shape(), shape);
  for (int64_t i = 0; i < y.numel(); ++i) {
    double v =
        f(static_cast<int32_t>(a.getI64(ia(i))), static_cast<int32_t>(b.getI64(ib(i))), za, zb, zc);
    y.setI64(i, roundSat(std::nearbyint(v), lo, hi));
  }
  return y;
}

void inferQBinary(InferCtx& c) {
  const auto& a = c.inShape(0);
  const auto& b = c.inShape(3);
  c.setTensor(0, c.inDType(0),
              a && b ? std::optional<Shape>(broadcastShape(*a, *b)) : std::nullopt);
}

// Quantized unary op through the real-valued function `f`: y = q(f(dq(x))).
template <typename F> Tensor qUnary(const KernelCtx& c, F f) {
  requireQ8(c, 0);
  const Tensor& x = c.in(0);
  float xs = scalarF(c, 1, "X_scale"), ys = scalarF(c, 3, "Y_scale");
  int32_t xz = zeroPoint(c, 2, "X_zero_point"), yz = zeroPoint(c, 4, "Y_zero_point");
  auto [lo, hi] = quantRange(x.dtype());
  Tensor y(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    float v = static_cast<float>(static_cast<int32_t>(x.getI64(i)) - xz) * xs;
    y.setI64(i, roundSat(std::nearbyint(f(v) / ys) + yz, lo, hi));
  }
  return y;
}

} // namespace

void registerQuantMsOps(OpRegistry& r) {
  r.op("QLinearAdd", kMsDomain)
      .perSampleDims(perSampleAnyDims)
      .since(1)
      .inputs(7, 8)
      .infer(inferQBinary)
      .kernel([](KernelCtx& c) {
        float ac = scalarF(c, 1, "A_scale") / scalarF(c, 6, "C_scale");
        float bc = scalarF(c, 4, "B_scale") / scalarF(c, 6, "C_scale");
        // float32 with the zero points folded into one constant, as ONNX Runtime computes it.
        return std::vector<RValue>{RValue::of(qBinary(c, [&](int32_t a, int32_t b, int32_t za,
                                                             int32_t zb, int32_t zc) {
          float k =
              static_cast<float>(zc) - ac * static_cast<float>(za) - bc * static_cast<float>(zb);
          return static_cast<double>(static_cast<float>(a) * ac + static_cast<float>(b) * bc + k);
        }))};
      });

  r.op("QLinearMul", kMsDomain)
      .perSampleDims(perSampleAnyDims)
      .since(1)
      .inputs(7, 8)
      .infer(inferQBinary)
      .kernel([](KernelCtx& c) {
        float ratio =
            scalarF(c, 1, "A_scale") * scalarF(c, 4, "B_scale") / scalarF(c, 6, "C_scale");
        return std::vector<RValue>{
            RValue::of(qBinary(c, [&](int32_t a, int32_t b, int32_t za, int32_t zb, int32_t zc) {
              return std::nearbyint(static_cast<float>((a - za) * (b - zb)) * ratio) + zc;
            }))};
      });

  r.op("QLinearGlobalAveragePool", kMsDomain)
      .perSample()
      .since(1)
      .inputs(5, 5)
      .attrInt("channels_last", 0)
      .infer([](InferCtx& c) {
        const auto& x = c.inShape(0);
        if (!x) {
          c.setTensor(0, c.inDType(0), std::nullopt);
          return;
        }
        AICC_CHECK(x->size() >= 3, "X must have rank >= 3, got {}", formatShape(*x));
        bool last = c.node.attrInt("channels_last") != 0;
        Shape s(x->size(), Dim::known(1));
        s[0] = (*x)[0];
        if (last)
          s.back() = x->back();
        else
          s[1] = (*x)[1];
        c.setTensor(0, c.inDType(0), s);
      })
      .kernel([](KernelCtx& c) {
        requireQ8(c, 0);
        const Tensor& x = c.in(0);
        AICC_CHECK(x.rank() >= 3, "X must have rank >= 3, got {}", formatDims(x.shape()));
        bool last = c.node.attrInt("channels_last") != 0;
        int64_t N = x.dim(0), C = last ? x.dim(x.rank() - 1) : x.dim(1);
        int64_t img = x.numel() / std::max<int64_t>(1, N * C);
        float xs = scalarF(c, 1, "x_scale"), ys = scalarF(c, 3, "y_scale");
        int32_t xz = zeroPoint(c, 2, "x_zero_point"), yz = zeroPoint(c, 4, "y_zero_point");
        float scale = xs / (ys * static_cast<float>(img));
        auto [lo, hi] = quantRange(x.dtype());
        Dims out(x.shape().size(), 1);
        out[0] = N;
        (last ? out.back() : out[1]) = C;
        Tensor y(x.dtype(), out);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t ch = 0; ch < C; ++ch) {
            int64_t sum = -static_cast<int64_t>(xz) * img;
            for (int64_t p = 0; p < img; ++p)
              sum += x.getI64(last ? (n * img + p) * C + ch : (n * C + ch) * img + p);
            y.setI64(n * C + ch,
                     roundSat(std::nearbyint(static_cast<float>(sum) * scale) + yz, lo, hi));
          }
        return std::vector<RValue>{RValue::of(y)};
      });

  r.op("QLinearSigmoid", kMsDomain)
      .perSampleDims(perSampleAnyDims)
      .since(1)
      .inputs(4, 5)
      .infer(inferSameAsInput0)
      .kernel([](KernelCtx& c) {
        return std::vector<RValue>{
            RValue::of(qUnary(c, [](float v) { return 1.0f / (1.0f + std::exp(-v)); }))};
      });

  r.op("QLinearLeakyRelu", kMsDomain)
      .perSampleDims(perSampleAnyDims)
      .since(1)
      .inputs(4, 5)
      .attrFloat("alpha", 0.01f)
      .infer(inferSameAsInput0)
      .kernel([](KernelCtx& c) {
        float alpha = c.node.attrFloat("alpha");
        return std::vector<RValue>{
            RValue::of(qUnary(c, [alpha](float v) { return v >= 0 ? v : v * alpha; }))};
      });

  r.op("QLinearConcat", kMsDomain)
      .perSampleDims(perSampleOutsideAxis(0))
      .since(1)
      .inputs(5, 1 << 30)
      .attr("axis", Attribute::Kind::Int, true)
      .infer([](InferCtx& c) {
        std::optional<Shape> s = c.inShape(2);
        for (size_t i = 5; s && i < c.numInputs(); i += 3) {
          const auto& t = c.inShape(i);
          if (!t || t->size() != s->size()) return c.setTensor(0, c.inDType(1), std::nullopt);
          int64_t ax = normAxis(c.node.attrInt("axis"), static_cast<int64_t>(s->size()));
          for (size_t d = 0; d < s->size(); ++d) {
            Dim& a = (*s)[d];
            const Dim& b = (*t)[d];
            if (static_cast<int64_t>(d) == ax)
              a = a.isStatic() && b.isStatic() ? Dim::known(a.value + b.value) : Dim{};
            else if (!a.isStatic())
              a = b;
          }
        }
        c.setTensor(0, c.inDType(1), s);
      })
      .kernel([](KernelCtx& c) {
        AICC_CHECK((c.numInputs() - 2) % 3 == 0,
                   "inputs must be Y_scale, Y_zero_point, then (X, scale, zero point) triples");
        float ys = scalarF(c, 0, "Y_scale");
        int32_t yz = zeroPoint(c, 1, "Y_zero_point");
        DType dt = c.in(1).dtype();
        auto [lo, hi] = quantRange(dt);
        std::vector<Tensor> parts;
        for (size_t i = 2; i < c.numInputs(); i += 3) {
          const Tensor& x = c.in(i);
          AICC_CHECK(x.dtype() == dt, "input {} is {}, Y_zero_point is {}", i, dtypeName(x.dtype()),
                     dtypeName(dt));
          float xs = scalarF(c, i + 1, "X_scale");
          int32_t xz = zeroPoint(c, i + 2, "X_zero_point");
          Tensor q(dt, x.shape());
          for (int64_t k = 0; k < x.numel(); ++k) {
            float v = static_cast<float>(static_cast<int32_t>(x.getI64(k)) - xz) * xs;
            q.setI64(k, roundSat(std::nearbyint(v / ys) + yz, lo, hi));
          }
          parts.push_back(std::move(q));
        }
        int64_t ax = normAxis(c.node.attrInt("axis"), parts.at(0).rank());
        return std::vector<RValue>{RValue::of(concatTensors(parts, ax))};
      });
}

} // namespace aicc
