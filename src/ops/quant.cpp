// Quantization: QuantizeLinear, DequantizeLinear (per-tensor, per-axis, blocked),
// DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, com.microsoft.MatMulIntegerToFloat. The
// conv-like ops live in quant_conv.cpp, the other com.microsoft ops in quant_ms.cpp. Rounding is
// half to even, results saturate to the target range.
#include "ops/helpers.h"
#include "ops/quant_util.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace aicc {

std::pair<int64_t, int64_t> quantRange(DType t) {
  switch (t) {
  case DType::U8:
    return {0, 255};
  case DType::I8:
    return {-128, 127};
  case DType::U16:
    return {0, 65535};
  case DType::I16:
    return {-32768, 32767};
  case DType::U4:
    return {0, 15};
  case DType::I4:
    return {-8, 7};
  case DType::U2:
    return {0, 3};
  case DType::I2:
    return {-2, 1};
  case DType::I32:
    return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  default:
    fail("{} is not an integer quantized type", dtypeName(t));
  }
}

double roundToType(DType t, double v) {
  if (t == DType::F64) return v;
  if (t == DType::F32) return static_cast<float>(v);
  if (isReducedFloat(t)) return reducedToFloat(t, floatToReduced(t, static_cast<float>(v)));
  return v;
}

QuantParam::QuantParam(const Tensor* t, int64_t n, const char* what) {
  if (!t) {
    v_ = {0.0};
    return;
  }
  AICC_CHECK(t->numel() == 1 || (t->rank() == 1 && t->numel() == n),
             "{} must be a scalar or have {} elements, got shape {}", what, n,
             formatDims(t->shape()));
  v_ = t->toF64Vector();
}

namespace {

// Flat index of x's element -> flat index into its scale / zero point (per-tensor, per-axis along
// `axis`, or blocked along `axis` with `block` elements per scale).
class ScaleIndexer {
public:
  ScaleIndexer(const Dims& x, const Dims& s, int64_t axis, int64_t block) : x_(x), block_(block) {
    int64_t n = checkedNumel(s);
    int64_t rank = static_cast<int64_t>(x.size());
    if (n == 1 && s.size() <= 1) return; // per-tensor
    axis_ = normAxis(axis, rank);
    auto ax = static_cast<size_t>(axis_);
    if (block <= 0) {
      AICC_CHECK(s.size() == 1 && s[0] == x[ax],
                 "the scale has shape {}, expected [{}] (per-axis along axis {})", formatDims(s),
                 x[ax], axis_);
      mode_ = 1;
      inner_ = 1;
      for (size_t i = ax + 1; i < x.size(); ++i) inner_ *= x[i];
      return;
    }
    AICC_CHECK(s.size() == x.size(), "the scale has shape {}, expected rank {} (blocked)",
               formatDims(s), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      int64_t want = i == ax ? (x[i] + block - 1) / block : x[i];
      AICC_CHECK(s[i] == want, "the scale has shape {}, incompatible with {} and block_size {}",
                 formatDims(s), formatDims(x), block);
    }
    mode_ = 2;
    sStrides_ = stridesOf(s);
  }
  int64_t operator()(int64_t i) const {
    if (mode_ == 0) return 0;
    if (mode_ == 1) return (i / inner_) % x_[static_cast<size_t>(axis_)];
    int64_t idx = 0;
    for (int64_t d = static_cast<int64_t>(x_.size()) - 1; d >= 0; --d) {
      auto du = static_cast<size_t>(d);
      int64_t coord = i % x_[du];
      i /= x_[du];
      idx += (d == axis_ ? coord / block_ : coord) * sStrides_[du];
    }
    return idx;
  }

private:
  Dims x_, sStrides_;
  int64_t block_, axis_ = 0, inner_ = 1;
  int mode_ = 0;
};

DType promoteFloat(DType a, DType b) {
  if (!isFloat(a) || !isFloat(b) || a == DType::F64 || b == DType::F64) return DType::F64;
  if (a == DType::F32 || b == DType::F32 || a != b) return DType::F32;
  return a;
}

bool isF8(DType t) {
  return t == DType::F8E4M3FN || t == DType::F8E4M3FNUZ || t == DType::F8E5M2 ||
         t == DType::F8E5M2FNUZ;
}

void checkZeroPointShape(const Tensor& zp, const Tensor& scale) {
  AICC_CHECK(zp.shape() == scale.shape() || (zp.numel() == 1 && scale.numel() == 1),
             "the zero point has shape {}, the scale {}", formatDims(zp.shape()),
             formatDims(scale.shape()));
}

DType quantizeOutType(const Node& n, DType zpType) {
  int64_t od = n.attrInt("output_dtype");
  std::optional<DType> attr = od ? dtypeFromOnnx(static_cast<int32_t>(od)) : std::nullopt;
  AICC_CHECK(!od || attr, "attribute 'output_dtype' has unknown type code {}", od);
  if (zpType != DType::Undefined) {
    AICC_CHECK(!attr || *attr == zpType, "output_dtype {} differs from the zero point's type {}",
               dtypeName(*attr), dtypeName(zpType));
    return zpType;
  }
  return attr ? *attr : DType::U8;
}

Tensor quantize(const Node& n, const Tensor& x, const Tensor& scale, const Tensor* zp) {
  DType out = quantizeOutType(n, zp ? zp->dtype() : DType::Undefined);
  bool f8 = isF8(out), f4 = out == DType::F4E2M1;
  std::pair<int64_t, int64_t> range{0, 0};
  if (!f8 && !f4) range = quantRange(out);
  AICC_CHECK(out != DType::I32, "QuantizeLinear cannot produce i32");
  int64_t prec = n.attrInt("precision");
  DType comp = promoteFloat(x.dtype(), scale.dtype());
  if (prec) {
    auto p = dtypeFromOnnx(static_cast<int32_t>(prec));
    AICC_CHECK(p && isFloat(*p), "attribute 'precision' must name a float type, got {}", prec);
    comp = *p;
  }
  if (zp) checkZeroPointShape(*zp, scale);
  ScaleIndexer si(x.shape(), scale.shape(), n.attrInt("axis"), n.attrInt("block_size"));
  bool saturate = n.attrInt("saturate") != 0;
  Tensor y(out, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t s = si(i);
    double q =
        roundToType(comp, roundToType(comp, x.getF64(i)) / roundToType(comp, scale.getF64(s)));
    double z = zp ? zp->getF64(s) : 0.0;
    if (f8)
      y.data<uint8_t>()[i] =
          static_cast<uint8_t>(floatToReduced(out, static_cast<float>(q), saturate));
    else if (f4)
      y.data<uint8_t>()[i] =
          static_cast<uint8_t>(floatToReduced(out, static_cast<float>(q + z), true));
    else
      y.setI64(i, roundSat(std::nearbyint(q) + z, range.first, range.second)); // round, then shift
  }
  return y;
}

Tensor dequantize(const Node& n, const Tensor& x, const Tensor& scale, const Tensor* zp) {
  int64_t od = n.attrInt("output_dtype");
  DType out = scale.dtype();
  if (od) {
    auto t = dtypeFromOnnx(static_cast<int32_t>(od));
    AICC_CHECK(t && isFloat(*t), "attribute 'output_dtype' must name a float type, got {}", od);
    out = *t;
  }
  bool floatIn = isFloat(x.dtype());
  if (floatIn) zp = nullptr; // float8 / float4 zero points must be 0
  if (zp) {
    AICC_CHECK(zp->dtype() == x.dtype(), "the zero point is {}, x is {}", dtypeName(zp->dtype()),
               dtypeName(x.dtype()));
    checkZeroPointShape(*zp, scale);
  }
  // x - zp is computed in f32 (f64 for 32-bit integers), then multiplied in the promoted type.
  bool wide = x.dtype() == DType::I32 || scale.dtype() == DType::F64;
  DType comp = wide ? DType::F64 : DType::F32;
  ScaleIndexer si(x.shape(), scale.shape(), n.attrInt("axis"), n.attrInt("block_size"));
  Tensor y(out, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t s = si(i);
    double dx =
        roundToType(comp, roundToType(DType::F32, x.getF64(i)) - (zp ? zp->getF64(s) : 0.0));
    y.setF64(i, roundToType(comp, dx * scale.getF64(s)));
  }
  return y;
}

void registerQuantizeOps(OpRegistry& r) {
  r.op("QuantizeLinear")
      .perSampleDims([](const Node& n, size_t dims) { // per tensor, or per channel of another axis
        const Value* s = n.inputs[1];
        return (s->type.shape && s->type.shape->size() == 0) || perSampleOutsideAxis(1)(n, dims);
      })
      .since(10)
      .inputs(2, 3)
      .attrInt("axis", 1)
      .attrInt("block_size", 0)
      .attrInt("output_dtype", 0)
      .attrInt("precision", 0)
      .attrInt("saturate", 1)
      .infer([](InferCtx& c) {
        c.setTensor(0, quantizeOutType(c.node, c.has(2) ? c.inDType(2) : DType::Undefined),
                    c.inShape(0));
      })
      .kernel([](KernelCtx& c) {
        return std::vector<RValue>{
            RValue::of(quantize(c.node, c.in(0), c.in(1), c.has(2) ? &c.in(2) : nullptr))};
      });

  r.op("DequantizeLinear")
      .perSampleDims([](const Node& n, size_t dims) { // per tensor, or per channel of another axis
        const Value* s = n.inputs[1];
        return (s->type.shape && s->type.shape->size() == 0) || perSampleOutsideAxis(1)(n, dims);
      })
      .since(10)
      .inputs(2, 3)
      .attrInt("axis", 1)
      .attrInt("block_size", 0)
      .attrInt("output_dtype", 0)
      .infer([](InferCtx& c) {
        int64_t od = c.node.attrInt("output_dtype");
        auto t = od ? dtypeFromOnnx(static_cast<int32_t>(od)) : std::optional<DType>(c.inDType(1));
        c.setTensor(0, t ? *t : DType::Undefined, c.inShape(0));
      })
      .kernel([](KernelCtx& c) {
        return std::vector<RValue>{
            RValue::of(dequantize(c.node, c.in(0), c.in(1), c.has(2) ? &c.in(2) : nullptr))};
      });

  r.op("DynamicQuantizeLinear")
      .since(11)
      .inputs(1, 1)
      .outputs(3, 3)
      .infer([](InferCtx& c) {
        c.setTensor(0, DType::U8, c.inShape(0));
        c.setTensor(1, DType::F32, Shape{});
        c.setTensor(2, DType::U8, Shape{});
      })
      .kernel([](KernelCtx& c) {
        requireDType(c, 0, {DType::F32});
        const Tensor& x = c.in(0);
        const float* xp = x.data<float>();
        float mx = 0, mn = 0;
        for (int64_t i = 0; i < x.numel(); ++i) {
          mx = std::max(mx, xp[i]);
          mn = std::min(mn, xp[i]);
        }
        float scale = (mx == mn ? 1.0f : mx - mn) / 255.0f;
        float zpf = std::clamp(0.0f - mn / scale, 0.0f, 255.0f);
        float zp = std::nearbyint(zpf);
        Tensor y(DType::U8, x.shape());
        for (int64_t i = 0; i < x.numel(); ++i)
          y.data<uint8_t>()[i] =
              static_cast<uint8_t>(roundSat(std::nearbyint(xp[i] / scale) + zp, 0, 255));
        return std::vector<RValue>{RValue::of(y), RValue::of(Tensor::scalar(DType::F32, scale)),
                                   RValue::of(Tensor::scalar(DType::U8, zp))};
      });
}

// ---- Integer matrix products ------------------------------------------------------------------

// numpy.matmul geometry: 1-D operands are promoted (and the added dim dropped), batch dims
// broadcast.
struct MatMulPlan {
  int64_t M = 1, K = 1, N = 1;
  Dims out;
  std::vector<int64_t> aOff, bOff; // element offset of each batch's matrix
};

MatMulPlan planMatMul(const Dims& a, const Dims& b) {
  AICC_CHECK(!a.empty() && !b.empty(), "matmul operands must have rank >= 1");
  MatMulPlan p;
  Dims a2 = a.size() == 1 ? Dims{1, a[0]} : a, b2 = b.size() == 1 ? Dims{b[0], 1} : b;
  p.M = a2[a2.size() - 2];
  p.K = a2.back();
  p.N = b2.back();
  AICC_CHECK(b2[b2.size() - 2] == p.K, "matmul shapes {} and {} do not agree on K", formatDims(a),
             formatDims(b));
  Dims ab(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
  Dims batch = broadcastDims(ab, bb);
  int64_t nb = checkedNumel(batch);
  BroadcastIndexer ia(ab, batch), ib(bb, batch);
  for (int64_t i = 0; i < nb; ++i) {
    p.aOff.push_back(ia(i) * p.M * p.K);
    p.bOff.push_back(ib(i) * p.K * p.N);
  }
  p.out = batch;
  if (a.size() > 1) p.out.push_back(p.M);
  if (b.size() > 1) p.out.push_back(p.N);
  return p;
}

std::optional<Shape> matmulShape(const std::optional<Shape>& a, const std::optional<Shape>& b) {
  if (!a || !b || a->empty() || b->empty()) return std::nullopt;
  Shape a2 = a->size() == 1 ? Shape{Dim::known(1), (*a)[0]} : *a;
  Shape b2 = b->size() == 1 ? Shape{(*b)[0], Dim::known(1)} : *b;
  const Dim& ka = a2.back();
  const Dim& kb = b2[b2.size() - 2];
  AICC_CHECK(!ka.isStatic() || !kb.isStatic() || ka.value == kb.value,
             "matmul shapes {} and {} do not agree on K", formatShape(*a), formatShape(*b));
  Shape out = broadcastShape(Shape(a2.begin(), a2.end() - 2), Shape(b2.begin(), b2.end() - 2));
  if (a->size() > 1) out.push_back(a2[a2.size() - 2]);
  if (b->size() > 1) out.push_back(b2.back());
  return out;
}

// (a - azp[row]) @ (b - bzp[col]) with int32 accumulation; zero points per tensor, per row of a,
// per column of b.
std::vector<int32_t> intMatMul(const MatMulPlan& p, const Tensor& a, const QuantParam& azp,
                               const Tensor& b, const QuantParam& bzp) {
  std::vector<int32_t> A(static_cast<size_t>(a.numel())), B(static_cast<size_t>(b.numel()));
  for (int64_t i = 0; i < a.numel(); ++i)
    A[static_cast<size_t>(i)] =
        static_cast<int32_t>(a.getI64(i) - static_cast<int64_t>(azp((i / p.K) % p.M)));
  for (int64_t i = 0; i < b.numel(); ++i)
    B[static_cast<size_t>(i)] =
        static_cast<int32_t>(b.getI64(i) - static_cast<int64_t>(bzp(i % p.N)));
  std::vector<int32_t> out(p.aOff.size() * static_cast<size_t>(p.M * p.N), 0);
  for (size_t bi = 0; bi < p.aOff.size(); ++bi) {
    const int32_t* ap = A.data() + p.aOff[bi];
    const int32_t* bp = B.data() + p.bOff[bi];
    int32_t* op = out.data() + bi * static_cast<size_t>(p.M * p.N);
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t k = 0; k < p.K; ++k) {
        int32_t av = ap[m * p.K + k];
        if (av == 0) continue;
        const int32_t* brow = bp + k * p.N;
        int32_t* orow = op + m * p.N;
        for (int64_t n = 0; n < p.N; ++n) orow[n] += av * brow[n];
      }
  }
  return out;
}

void registerMatMulOps(OpRegistry& r) {
  r.op("MatMulInteger")
      .perSample()
      .since(10)
      .inputs(2, 4)
      .infer(
          [](InferCtx& c) { c.setTensor(0, DType::I32, matmulShape(c.inShape(0), c.inShape(1))); })
      .kernel([](KernelCtx& c) {
        requireDType(c, 0, {DType::U8, DType::I8});
        requireDType(c, 1, {DType::U8, DType::I8});
        MatMulPlan p = planMatMul(c.in(0).shape(), c.in(1).shape());
        QuantParam azp(c.has(2) ? &c.in(2) : nullptr, p.M, "a_zero_point");
        QuantParam bzp(c.has(3) ? &c.in(3) : nullptr, p.N, "b_zero_point");
        std::vector<int32_t> acc = intMatMul(p, c.in(0), azp, c.in(1), bzp);
        Tensor y(DType::I32, p.out);
        std::copy(acc.begin(), acc.end(), y.data<int32_t>());
        return std::vector<RValue>{RValue::of(y)};
      });

  // com.microsoft.MatMulIntegerToFloat (what ONNX Runtime fuses quantize_dynamic's MatMulInteger
  // -> Cast -> Mul(a_scale * b_scale) [-> Add(bias)] into, and fold-qdq does too):
  //   Y = float(acc) * f32(a_scale * b_scale[n]) [+ bias[n]],  acc = MatMulInteger(A, B, azp, bzp)
  // in f32, in that order. a_scale and a_zero_point per tensor, b_scale / b_zero_point / bias per
  // tensor or per column of B.
  r.op("MatMulIntegerToFloat", kMsDomain)
      .since(1)
      .inputs(4, 7)
      .infer([](InferCtx& c) {
        c.setTensor(0, c.inDType(2), matmulShape(c.inShape(0), c.inShape(1)));
      })
      .kernel([](KernelCtx& c) {
        requireDType(c, 0, {DType::U8, DType::I8});
        requireDType(c, 1, {DType::U8, DType::I8});
        for (size_t i : {2, 3, 6})
          if (c.has(i)) requireDType(c, i, {DType::F32});
        MatMulPlan p = planMatMul(c.in(0).shape(), c.in(1).shape());
        AICC_CHECK(c.in(2).numel() == 1, "a_scale must be a scalar, got shape {}",
                   formatDims(c.in(2).shape()));
        AICC_CHECK(!c.has(4) || c.in(4).numel() == 1, "a_zero_point must be a scalar, got {}",
                   formatDims(c.in(4).shape()));
        QuantParam azp(c.has(4) ? &c.in(4) : nullptr, 1, "a_zero_point");
        QuantParam bzp(c.has(5) ? &c.in(5) : nullptr, p.N, "b_zero_point");
        QuantParam bs(&c.in(3), p.N, "b_scale");
        std::optional<QuantParam> bias;
        if (c.has(6)) bias.emplace(&c.in(6), p.N, "bias");
        std::vector<int32_t> acc = intMatMul(p, c.in(0), azp, c.in(1), bzp);
        const float as = c.in(2).data<float>()[0];
        Tensor y(DType::F32, p.out);
        float* out = y.data<float>();
        for (size_t i = 0; i < acc.size(); ++i) {
          const int64_t n = static_cast<int64_t>(i) % p.N;
          const float mult = as * static_cast<float>(bs(n));
          out[i] = static_cast<float>(acc[i]) * mult;
          if (bias) out[i] = out[i] + static_cast<float>((*bias)(n));
        }
        return std::vector<RValue>{RValue::of(y)};
      });

  r.op("QLinearMatMul")
      .perSample()
      .since(10)
      .inputs(8, 8)
      .infer([](InferCtx& c) {
        c.setTensor(0, c.inDType(7), matmulShape(c.inShape(0), c.inShape(3)));
      })
      .kernel([](KernelCtx& c) {
        requireDType(c, 0, {DType::U8, DType::I8});
        requireDType(c, 3, {DType::U8, DType::I8});
        const Tensor& a = c.in(0);
        const Tensor& b = c.in(3);
        MatMulPlan p = planMatMul(a.shape(), b.shape());
        QuantParam as(&c.in(1), p.M, "a_scale"),
            azp(c.has(2) ? &c.in(2) : nullptr, p.M, "a_zero_point");
        QuantParam bs(&c.in(4), p.N, "b_scale"),
            bzp(c.has(5) ? &c.in(5) : nullptr, p.N, "b_zero_point");
        QuantParam ys(&c.in(6), 1, "y_scale"),
            yzp(c.has(7) ? &c.in(7) : nullptr, 1, "y_zero_point");
        DType st = c.in(1).dtype();
        DType out = c.has(7) ? c.in(7).dtype() : a.dtype();
        auto [lo, hi] = quantRange(out);
        std::vector<int32_t> acc = intMatMul(p, a, azp, b, bzp);
        Tensor y(out, p.out);
        for (size_t i = 0; i < acc.size(); ++i) {
          int64_t n = static_cast<int64_t>(i) % p.N, m = (static_cast<int64_t>(i) / p.N) % p.M;
          double f = roundToType(st, roundToType(st, as(m) * bs(n)) / ys(0));
          y.setI64(static_cast<int64_t>(i), roundSat(acc[i] * f + yzp(0), lo, hi));
        }
        return std::vector<RValue>{RValue::of(y)};
      });
}

} // namespace

void registerQuantOps(OpRegistry& r) {
  registerQuantizeOps(r);
  registerMatMulOps(r);
  registerQuantConvOps(r);
  registerQuantMsOps(r);
}

} // namespace aicc
