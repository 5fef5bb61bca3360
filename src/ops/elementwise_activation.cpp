// Activation functions: Relu LeakyRelu PRelu Elu Selu Celu Sigmoid HardSigmoid HardSwish Softplus
// Softsign ThresholdedRelu Gelu Mish Swish.
#include "ops/elementwise.h"

#include <cmath>

namespace aicc {

namespace {

void dropConsumedInputs(ImportCtx& c) { c.node.attrs.erase("consumed_inputs"); }

double sigmoid(double v) {
  if (v >= 0) return 1.0 / (1.0 + std::exp(-v));
  double e = std::exp(v);
  return e / (1.0 + e);
}

double softplus(double v) { return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); }

// Registers a float activation whose function is built from the node's attributes at run time:
// make(node) returns a callable double -> double.
template <typename Make>
OpBuilder activation(OpRegistry& r, const char* name, int since, Make make, bool legacy) {
  OpBuilder b = r.op(name);
  b.since(since).inputs(1, 1).props(kElementwise).infer(inferSameAsInput0);
  b.kernel([make](KernelCtx& c) -> std::vector<RValue> {
    requireFloat(c, 0);
    return {RValue::of(mapFloat(c.in(0), make(c.node)))};
  });
  if (legacy) b.upgrade(1, 5, dropConsumedInputs, legacyConsumedInputs());
  return b;
}

std::vector<RValue> preluKernel(KernelCtx& c) {
  const Tensor& x = c.in(0);
  const Tensor& s = c.in(1);
  AICC_CHECK(x.dtype() == s.dtype(), "X is {} but slope is {}", dtypeName(x.dtype()),
             dtypeName(s.dtype()));
  Dims shape = broadcastDims(x.shape(), s.shape());
  AICC_CHECK(shape == x.shape(), "slope of shape {} does not broadcast to X of shape {}",
             formatDims(s.shape()), formatDims(x.shape()));
  if (x.dtype() == DType::F32) {
    Tensor out(DType::F32, shape);
    broadcastLoop<float, float, float>(x, s, out,
                                       [](float v, float a) { return v < 0 ? a * v : v; });
    return {RValue::of(out)};
  }
  if (isFloat(x.dtype()))
    return {RValue::of(mapBinary(x, s, [](double v, double a) { return v < 0 ? a * v : v; }))};
  AICC_CHECK(isInteger(x.dtype()), "X has unsupported element type {}", dtypeName(x.dtype()));
  return {RValue::of(
      mapBinaryI64(x, s, [](int64_t v, int64_t a) { return v < 0 ? wrapMul(a, v) : v; }))};
}

// PRelu before opset 7: a 1-D slope of size C applies along the channel axis 1 of X.
void upgradePRelu(ImportCtx& c) {
  dropConsumedInputs(c);
  if (!c.node.hasInput(0) || !c.node.hasInput(1)) return;
  const auto& xs = c.node.inputs[0]->type.shape;
  const auto& ss = c.node.inputs[1]->type.shape;
  if (!xs || !ss || ss->size() != 1 || xs->size() < 3) return;
  if ((*ss)[0].isStatic() && (*ss)[0].value == 1) return;
  appendUnitDims(c, 1, static_cast<int64_t>(xs->size()) - 2);
}

} // namespace

void registerElementwiseActivationOps(OpRegistry& r) {
  r.op("Relu")
      .since(1)
      .inputs(1, 1)
      .props(kElementwise)
      .infer(inferSameAsInput0)
      .kernel([](KernelCtx& c) -> std::vector<RValue> {
        const Tensor& x = c.in(0);
        if (x.dtype() == DType::F32) { // the hot path of most CNNs
          Tensor out(DType::F32, x.shape());
          const float* a = x.data<float>();
          float* o = out.data<float>();
          for (int64_t i = 0; i < x.numel(); ++i) o[i] = a[i] > 0.0f ? a[i] : 0.0f;
          return {RValue::of(out)};
        }
        if (isFloat(x.dtype()))
          return {RValue::of(mapFloat(x, [](double v) { return v > 0 ? v : 0.0; }))};
        return {RValue::of(mapInteger(x, [](auto v) { return v > 0 ? v : decltype(v){0}; }))};
      })
      .upgrade(1, 5, dropConsumedInputs, legacyConsumedInputs());

  activation(
      r, "LeakyRelu", 1,
      [](const Node& n) {
        double alpha = n.attrFloat("alpha");
        return [alpha](double v) { return v < 0 ? alpha * v : v; };
      },
      true)
      .attrFloat("alpha", 0.01f);
  activation(
      r, "Elu", 1,
      [](const Node& n) {
        double alpha = n.attrFloat("alpha");
        return [alpha](double v) { return v < 0 ? alpha * std::expm1(v) : v; };
      },
      true)
      .attrFloat("alpha", 1.0f);
  activation(
      r, "Selu", 1,
      [](const Node& n) {
        double alpha = n.attrFloat("alpha"), gamma = n.attrFloat("gamma");
        return
            [alpha, gamma](double v) { return v <= 0 ? gamma * alpha * std::expm1(v) : gamma * v; };
      },
      true)
      .attrFloat("alpha", 1.67326319217681884765625f)
      .attrFloat("gamma", 1.05070102214813232421875f);
  activation(
      r, "Celu", 12,
      [](const Node& n) {
        double alpha = n.attrFloat("alpha");
        return [alpha](double v) {
          return std::max(0.0, v) + std::min(0.0, alpha * std::expm1(v / alpha));
        };
      },
      false)
      .attrFloat("alpha", 1.0f);
  activation(
      r, "Sigmoid", 1, [](const Node&) { return sigmoid; }, true);
  activation(
      r, "HardSigmoid", 1,
      [](const Node& n) {
        double alpha = n.attrFloat("alpha"), beta = n.attrFloat("beta");
        return [alpha, beta](double v) { return std::clamp(alpha * v + beta, 0.0, 1.0); };
      },
      true)
      .attrFloat("alpha", 0.2f)
      .attrFloat("beta", 0.5f);
  activation(
      r, "HardSwish", 14,
      [](const Node&) { return [](double v) { return v * std::clamp(v / 6.0 + 0.5, 0.0, 1.0); }; },
      false);
  activation(
      r, "Softplus", 1, [](const Node&) { return softplus; }, false);
  activation(
      r, "Softsign", 1,
      [](const Node&) { return [](double v) { return v / (1.0 + std::fabs(v)); }; }, false);
  activation(
      r, "ThresholdedRelu", 10,
      [](const Node& n) {
        double alpha = n.attrFloat("alpha");
        return [alpha](double v) { return v > alpha ? v : 0.0; };
      },
      false)
      .attrFloat("alpha", 1.0f);
  activation(
      r, "Gelu", 20,
      [](const Node& n) -> std::function<double(double)> {
        std::string approx = n.attrString("approximate");
        if (approx == "tanh")
          return [](double v) {
            const double k = std::sqrt(2.0 / M_PI);
            return 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
          };
        AICC_CHECK(approx == "none",
                   "attribute 'approximate' must be \"none\" or \"tanh\", got \"{}\"", approx);
        return [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); };
      },
      false)
      .attrString("approximate", "none");
  activation(
      r, "Mish", 18,
      [](const Node&) { return [](double v) { return v * std::tanh(softplus(v)); }; }, false);
  activation(
      r, "Swish", 24,
      [](const Node& n) {
        double alpha = n.attrFloat("alpha");
        return [alpha](double v) { return v * sigmoid(alpha * v); };
      },
      false)
      .attrFloat("alpha", 1.0f);

  r.op("PRelu")
      .since(1)
      .inputs(2, 2)
      .props(kElementwise)
      .infer([](InferCtx& c) {
        requireSameInDTypes(c);
        c.setOutput(0, c.inType(0));
      })
      .kernel(preluKernel)
      .upgrade(1, 6, upgradePRelu, legacyConsumedInputs());
}

} // namespace aicc
