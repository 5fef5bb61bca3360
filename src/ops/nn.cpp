// The neural-network op family. Convolutions, pooling and normalizations live in ops/nn_*.cpp;
// this file registers them and defines Dropout.
#include "ops/nn.h"

#include <random>

namespace aicc {
namespace {

// Dropout: identity (mask all true) unless training_mode is true and ratio > 0; then each element
// is kept with probability 1 - ratio and scaled by 1 / (1 - ratio). Not marked kNondeterministic:
// in inference (the common case) it is the identity; training mode draws from `seed` when given.
std::vector<RValue> dropoutKernel(KernelCtx& c) {
  requireFloatInput(c, 0);
  const Tensor& X = c.in(0);
  double ratio = 0.5;
  if (c.has(1)) {
    AICC_CHECK(c.in(1).numel() == 1, "ratio has shape {}, expected a scalar",
               formatDims(c.in(1).shape()));
    ratio = c.in(1).getF64(0);
  }
  bool training = c.has(2) && c.in(2).numel() == 1 && c.in(2).getI64(0) != 0;
  if (training) AICC_CHECK(ratio >= 0 && ratio <= 1, "ratio {} is outside [0, 1]", ratio);
  Tensor mask(DType::Bool, X.shape());
  auto* m = mask.data<bool>();
  if (!training || ratio == 0) {
    std::fill(m, m + mask.numel(), true);
    return {RValue::of(X), RValue::of(mask)};
  }
  // MT19937 draws doubles the way numpy's RandomState(seed).uniform does, so a given seed
  // reproduces the masks of ONNX's reference implementation.
  std::mt19937 rng(c.node.attr("seed") ? static_cast<uint32_t>(c.node.attrInt("seed"))
                                       : std::random_device{}());
  auto uniform = [&] {
    double a = static_cast<double>(rng() >> 5), b = static_cast<double>(rng() >> 6);
    return (a * 67108864.0 + b) / 9007199254740992.0;
  };
  const double scale = ratio < 1 ? 1.0 / (1.0 - ratio) : 0.0;
  Tensor y(X.dtype(), X.shape());
  for (int64_t i = 0; i < X.numel(); ++i) {
    m[i] = uniform() >= ratio;
    y.setF64(i, m[i] ? X.getF64(i) * scale : 0.0);
  }
  return {RValue::of(y), RValue::of(mask)};
}

void dropoutInfer(InferCtx& c) {
  inferSameAsInput0(c);
  c.setTensor(1, DType::Bool, c.inShape(0));
}

// Dropout before opset 12: `ratio` was an attribute (default 0.5); before opset 7, is_test=0
// (the default) meant training.
void upgradeDropout(ImportCtx& c) {
  bool training = c.opset < 7 && c.node.attrInt("is_test", 0) == 0;
  c.node.attrs.erase("is_test");
  c.node.attrs.erase("consumed_inputs");
  if (!c.node.attrs.count("ratio")) c.node.attrs["ratio"] = Attribute{0.5f};
  c.attrToInput("ratio", 1, DType::F32);
  if (training) {
    Tensor t(DType::Bool, {});
    t.data<bool>()[0] = true;
    if (c.node.inputs.size() < 3) c.node.inputs.resize(3, nullptr);
    c.node.inputs[2] = c.constant(t, "training_mode");
  }
}

} // namespace

void registerNnOps(OpRegistry& r) {
  registerNnConvOps(r);
  registerNnPoolOps(r);
  registerNnNormOps(r);
  r.op("Dropout")
      .attr("seed", Attribute::Kind::Int)
      .inputs(1, 3)
      .outputs(1, 2)
      .infer(dropoutInfer)
      .kernel(dropoutKernel)
      .upgrade(1, 11, upgradeDropout,
               {{"ratio", Attribute::Kind::Float, std::nullopt, false},
                {"is_test", Attribute::Kind::Int, std::nullopt, false},
                {"consumed_inputs", Attribute::Kind::Ints, std::nullopt, false}});
}

} // namespace aicc
