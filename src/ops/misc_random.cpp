// Random generators: RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike, Bernoulli,
// Multinomial. All are kNondeterministic (never constant-folded or CSE'd). With a `seed`
// attribute a node draws the same values on every run (a 64-bit Mersenne Twister seeded with it);
// without one it is seeded from std::random_device. The draws are not numpy's: the ONNX spec
// leaves the generator to the implementation.
#include "ops/misc.h"

#include <bit>
#include <cmath>
#include <numbers>
#include <random>

namespace aicc {
namespace {

class Rng {
public:
  explicit Rng(const Node& n) {
    if (const Attribute* a = n.attr("seed"); a && a->kind() == Attribute::Kind::Float) {
      float s = std::get<float>(a->v);
      // Integral seeds seed with their value; others (fractions, inf, NaN) with their bits.
      if (std::fabs(s) < 0x1.0p62f && s == std::trunc(s))
        gen_.seed(static_cast<uint64_t>(static_cast<int64_t>(s)));
      else
        gen_.seed(std::bit_cast<uint32_t>(s));
    } else
      gen_.seed((uint64_t{std::random_device{}()} << 32) ^ std::random_device{}());
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  // Standard normal (Box-Muller).
  double normal() {
    double u1 = 1.0 - uniform(), u2 = uniform(); // u1 in (0, 1]
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

private:
  std::mt19937_64 gen_;
};

bool isRandomFloat(DType t) {
  return t == DType::F16 || t == DType::F32 || t == DType::F64 || t == DType::BF16;
}

// The output type: the `dtype` attribute, else `fallback`.
DType dtypeAttr(const Node& n, DType fallback) {
  const Attribute* a = n.attr("dtype");
  int64_t code = a ? n.attrInt("dtype") : static_cast<int64_t>(fallback);
  auto dt = dtypeFromOnnx(static_cast<int32_t>(code));
  AICC_CHECK(dt && *dt != DType::Undefined, "attribute 'dtype' = {} is not a valid type", code);
  return *dt;
}

DType floatOut(const Node& n, DType fallback) {
  DType dt = dtypeAttr(n, fallback);
  AICC_CHECK(isRandomFloat(dt), "output type {} must be float16, bfloat16, float or double",
             dtypeName(dt));
  return dt;
}

Dims shapeAttr(const Node& n) {
  Dims s = n.attrInts("shape");
  for (int64_t d : s) AICC_CHECK(d >= 0, "attribute 'shape' {} has a negative dim", formatDims(s));
  return s;
}

// Fills a tensor of `dt` / `shape` with draw() * scale + shift.
Tensor fill(DType dt, const Dims& shape, const std::function<double()>& draw) {
  Tensor y(dt, shape);
  for (int64_t i = 0; i < y.numel(); ++i) y.setF64(i, draw());
  return y;
}

std::function<double()> drawer(const Node& n, bool normal) {
  auto rng = std::make_shared<Rng>(n);
  if (normal) {
    double mean = n.attrFloat("mean"), scale = n.attrFloat("scale");
    return [=] { return mean + scale * rng->normal(); };
  }
  double low = n.attrFloat("low"), high = n.attrFloat("high");
  return [=] { return low + (high - low) * rng->uniform(); };
}

void registerGenerator(OpRegistry& r, const std::string& name, bool normal, bool like) {
  auto b = r.op(name).since(1).inputs(like ? 1 : 0, like ? 1 : 0);
  if (like)
    b.attr("dtype", Attribute::Kind::Int);
  else
    b.attrInt("dtype", 1).attr("shape", Attribute::Kind::Ints, true);
  if (normal)
    b.attrFloat("mean", 0).attrFloat("scale", 1);
  else
    b.attrFloat("high", 1).attrFloat("low", 0);
  b.attr("seed", Attribute::Kind::Float).props(kNondeterministic);
  if (like) {
    b.infer([](InferCtx& c) {
      DType in = c.inDType(0);
      if (in == DType::Undefined && !c.node.attr("dtype"))
        return c.setTensor(0, DType::Undefined, c.inShape(0));
      c.setTensor(0, floatOut(c.node, in), c.inShape(0));
    });
    b.kernel([normal](KernelCtx& c) {
      const Tensor& x = c.in(0);
      return std::vector<RValue>{
          RValue::of(fill(floatOut(c.node, x.dtype()), x.shape(), drawer(c.node, normal)))};
    });
  } else {
    b.infer([](InferCtx& c) {
      c.setTensor(0, floatOut(c.node, DType::F32), staticShape(shapeAttr(c.node)));
    });
    b.kernel([normal](KernelCtx& c) {
      return std::vector<RValue>{RValue::of(
          fill(floatOut(c.node, DType::F32), shapeAttr(c.node), drawer(c.node, normal)))};
    });
  }
}

// ---- Bernoulli ---------------------------------------------------------------------------------

DType bernoulliOut(const Node& n, DType in) {
  DType dt = dtypeAttr(n, in);
  AICC_CHECK(isRandomFloat(dt) || isInteger(dt) || dt == DType::Bool,
             "output type {} is not allowed for Bernoulli", dtypeName(dt));
  return dt;
}

std::vector<RValue> bernoulliKernel(KernelCtx& c) {
  const Tensor& x = c.in(0);
  requireDType(c, 0, {DType::F16, DType::F32, DType::F64, DType::BF16});
  Rng rng(c.node);
  Tensor y(bernoulliOut(c.node, x.dtype()), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    double p = x.getF64(i);
    AICC_CHECK(p >= 0 && p <= 1, "probability {} at index {} is outside [0, 1]", p, i);
    y.setF64(i, rng.uniform() < p ? 1.0 : 0.0);
  }
  return {RValue::of(y)};
}

// ---- Multinomial -------------------------------------------------------------------------------

std::vector<RValue> multinomialKernel(KernelCtx& c) {
  const Tensor& x = c.in(0);
  requireDType(c, 0, {DType::F16, DType::F32, DType::F64, DType::BF16});
  AICC_CHECK(x.rank() == 2, "input must have shape [batch_size, class_size], got {}",
             formatDims(x.shape()));
  const int64_t B = x.dim(0), K = x.dim(1), S = c.node.attrInt("sample_size");
  AICC_CHECK(S >= 0, "sample_size must be >= 0, is {}", S);
  AICC_CHECK(K > 0 || S == 0 || B == 0, "cannot sample from 0 classes");
  DType dt = dtypeAttr(c.node, DType::I32);
  AICC_CHECK(dt == DType::I32 || dt == DType::I64, "dtype must be int32 or int64, is {}",
             dtypeName(dt));
  Rng rng(c.node);
  Tensor y(dt, {B, S});
  std::vector<double> cdf(static_cast<size_t>(K));
  for (int64_t b = 0; b < B; ++b) {
    // The input holds unnormalized log-probabilities: cdf of softmax(x[b]).
    double mx = -INFINITY;
    for (int64_t k = 0; k < K; ++k) mx = std::max(mx, x.getF64(b * K + k));
    double total = 0;
    for (int64_t k = 0; k < K; ++k) {
      double v = x.getF64(b * K + k);
      total += std::isinf(mx) && v == mx ? 1.0 : std::exp(v - mx);
      cdf[static_cast<size_t>(k)] = total;
    }
    for (int64_t s = 0; s < S; ++s) {
      double u = rng.uniform() * total;
      int64_t k = 0;
      while (k < K - 1 && !(u < cdf[static_cast<size_t>(k)])) ++k;
      y.setI64(b * S + s, k);
    }
  }
  return {RValue::of(y)};
}

} // namespace

void registerMiscRandomOps(OpRegistry& r) {
  registerGenerator(r, "RandomUniform", false, false);
  registerGenerator(r, "RandomNormal", true, false);
  registerGenerator(r, "RandomUniformLike", false, true);
  registerGenerator(r, "RandomNormalLike", true, true);

  r.op("Bernoulli")
      .since(15)
      .inputs(1, 1)
      .attr("dtype", Attribute::Kind::Int)
      .attr("seed", Attribute::Kind::Float)
      .props(kNondeterministic)
      .infer([](InferCtx& c) {
        DType in = c.inDType(0);
        c.setTensor(0,
                    in == DType::Undefined && !c.node.attr("dtype") ? DType::Undefined
                                                                    : bernoulliOut(c.node, in),
                    c.inShape(0));
      })
      .kernel(bernoulliKernel);

  r.op("Multinomial")
      .since(7)
      .inputs(1, 1)
      .attrInt("dtype", 6)
      .attrInt("sample_size", 1)
      .attr("seed", Attribute::Kind::Float)
      .props(kNondeterministic)
      .infer([](InferCtx& c) {
        DType dt = dtypeAttr(c.node, DType::I32);
        AICC_CHECK(dt == DType::I32 || dt == DType::I64, "dtype must be int32 or int64, is {}",
                   dtypeName(dt));
        const int64_t n = c.node.attrInt("sample_size");
        AICC_CHECK(n >= 0, "sample_size must be >= 0, is {}", n);
        const auto& s = c.inShape(0);
        AICC_CHECK(!s || s->size() == 2, "input must have rank 2, got {}", formatShape(*s));
        c.setTensor(0, dt, Shape{s ? (*s)[0] : Dim{}, Dim::known(n)});
      })
      .kernel(multinomialKernel);
}

} // namespace aicc
