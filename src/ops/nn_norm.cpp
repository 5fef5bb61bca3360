// Normalization: BatchNormalization (inference and training), InstanceNormalization,
// LayerNormalization, GroupNormalization, RMSNormalization, MeanVarianceNormalization, LRN.
// Statistics accumulate in double; data computes in its compute type (ops/nn.h).
#include "ops/nn.h"

#include <cmath>

namespace aicc {
namespace {

// Mean and 1/sqrt(var + eps) of each row of x viewed as [outer, inner]. With `rms`, the mean is
// taken as 0 (root mean square normalization).
template <typename T>
void rowStats(const T* x, int64_t outer, int64_t inner, double eps, bool rms,
              std::vector<double>& mean, std::vector<double>& inv) {
  mean.assign(static_cast<size_t>(outer), 0.0);
  inv.assign(static_cast<size_t>(outer), 0.0);
  for (int64_t r = 0; r < outer; ++r) {
    const T* row = x + r * inner;
    double s = 0, m = 0;
    if (!rms) {
      for (int64_t j = 0; j < inner; ++j) s += static_cast<double>(row[j]);
      m = inner ? s / static_cast<double>(inner) : 0.0;
    }
    double v = 0;
    for (int64_t j = 0; j < inner; ++j) {
      double d = static_cast<double>(row[j]) - m;
      v += d * d;
    }
    v = inner ? v / static_cast<double>(inner) : 0.0;
    mean[static_cast<size_t>(r)] = m;
    inv[static_cast<size_t>(r)] = 1.0 / std::sqrt(v + eps);
  }
}

// `t` (scale or bias) broadcast to `shape` and flattened, as doubles. Throws unless `t` broadcasts
// unidirectionally to `shape`.
std::vector<double> expandTo(const Tensor& t, const Dims& shape, const char* what) {
  AICC_CHECK(t.rank() <= static_cast<int64_t>(shape.size()) &&
                 broadcastDims(t.shape(), shape) == shape,
             "{} has shape {}, which does not broadcast to {}", what, formatDims(t.shape()),
             formatDims(shape));
  std::vector<double> out(static_cast<size_t>(checkedNumel(shape)));
  BroadcastIndexer idx(t.shape(), shape);
  for (size_t i = 0; i < out.size(); ++i) out[i] = t.getF64(idx(static_cast<int64_t>(i)));
  return out;
}

// Per-channel vector of a [C] parameter.
std::vector<double> channelParam(const KernelCtx& c, size_t i, int64_t C, const char* what) {
  const Tensor& t = c.in(i);
  AICC_CHECK(t.numel() == C, "{} has shape {}, expected [{}]", what, formatDims(t.shape()), C);
  return t.toF64Vector();
}

// y[r, j] = (x[r, j] - mean[r]) * inv[r] * scale(r, j) + bias(r, j), computed in T.
template <typename T, typename S, typename B>
void applyNorm(const T* x, T* y, int64_t outer, int64_t inner, const std::vector<double>& mean,
               const std::vector<double>& inv, S scale, B bias) {
  for (int64_t r = 0; r < outer; ++r) {
    const T m = static_cast<T>(mean[static_cast<size_t>(r)]),
            iv = static_cast<T>(inv[static_cast<size_t>(r)]);
    for (int64_t j = 0; j < inner; ++j)
      y[r * inner + j] =
          (x[r * inner + j] - m) * iv * static_cast<T>(scale(r, j)) + static_cast<T>(bias(r, j));
  }
}

// Runs `f(x, y)` on the compute-type view of input 0 and returns y in input 0's type.
template <typename F> Tensor onCompute(const Tensor& X, F&& f) {
  Tensor x = toCompute(X);
  Tensor y(x.dtype(), x.shape());
  withComputeType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    f(x.data<T>(), y.data<T>());
  });
  return fromCompute(y, X.dtype());
}

// ---- BatchNormalization -------------------------------------------------------------------------

std::vector<RValue> batchNormKernel(KernelCtx& c) {
  requireFloatInput(c, 0);
  const Tensor& X = c.in(0);
  AICC_CHECK(X.rank() >= 2, "input X has shape {}, expected [N, C, ...]", formatDims(X.shape()));
  const int64_t N = X.dim(0), C = X.dim(1), S = N * C != 0 ? X.numel() / (N * C) : 0;
  const double eps = c.node.attrFloat("epsilon"), mom = c.node.attrFloat("momentum");
  const bool training = c.node.attrInt("training_mode") != 0;
  // Parameters are per channel ([C]), or per activation ([C, spatial...], legacy spatial=0).
  auto param = [&](size_t i, const char* what) {
    const Tensor& t = c.in(i);
    AICC_CHECK(t.numel() == C || (!training && t.numel() == C * S),
               "{} has shape {}, expected [{}]", what, formatDims(t.shape()), C);
    return t.toF64Vector();
  };
  std::vector<double> scale = param(1, "scale"), bias = param(2, "B"),
                      mean = param(3, "input_mean"), var = param(4, "input_var");
  const bool perActivation =
      scale.size() != static_cast<size_t>(C) || static_cast<int64_t>(bias.size()) != C ||
      static_cast<int64_t>(mean.size()) != C || static_cast<int64_t>(var.size()) != C;
  auto at = [&](const std::vector<double>& v, int64_t ch, int64_t s) {
    return v.size() == static_cast<size_t>(C) ? v[static_cast<size_t>(ch)]
                                              : v[static_cast<size_t>(ch * S + s)];
  };
  std::vector<double> bmean(static_cast<size_t>(C), 0.0), bvar(static_cast<size_t>(C), 0.0);
  std::vector<RValue> outs;
  Tensor y = onCompute(X, [&](auto* x, auto* yp) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(yp)>>;
    if (training) {
      const double cnt = static_cast<double>(N * S);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t ch = 0; ch < C; ++ch)
          for (int64_t s = 0; s < S; ++s)
            bmean[static_cast<size_t>(ch)] += static_cast<double>(x[(n * C + ch) * S + s]);
      for (auto& m : bmean) m = cnt > 0 ? m / cnt : 0.0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t ch = 0; ch < C; ++ch)
          for (int64_t s = 0; s < S; ++s) {
            double d =
                static_cast<double>(x[(n * C + ch) * S + s]) - bmean[static_cast<size_t>(ch)];
            bvar[static_cast<size_t>(ch)] += d * d;
          }
      for (auto& v : bvar) v = cnt > 0 ? v / cnt : 0.0;
    }
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ch = 0; ch < C; ++ch) {
        const T* xr = x + (n * C + ch) * S;
        T* yr = yp + (n * C + ch) * S;
        if (!perActivation) {
          double m = training ? bmean[static_cast<size_t>(ch)] : mean[static_cast<size_t>(ch)];
          double v = training ? bvar[static_cast<size_t>(ch)] : var[static_cast<size_t>(ch)];
          const double a = scale[static_cast<size_t>(ch)] / std::sqrt(v + eps);
          const double b = bias[static_cast<size_t>(ch)] - m * a;
          for (int64_t s = 0; s < S; ++s)
            yr[s] = static_cast<T>(static_cast<double>(xr[s]) * a + b);
        } else {
          for (int64_t s = 0; s < S; ++s)
            yr[s] = static_cast<T>((static_cast<double>(xr[s]) - at(mean, ch, s)) /
                                       std::sqrt(at(var, ch, s) + eps) * at(scale, ch, s) +
                                   at(bias, ch, s));
        }
      }
  });
  outs.push_back(RValue::of(y));
  if (training) {
    auto vec = [&](const std::vector<double>& v, DType dt) {
      Tensor t(dt, {C});
      for (int64_t i = 0; i < C; ++i) t.setF64(i, v[static_cast<size_t>(i)]);
      return RValue::of(t);
    };
    std::vector<double> rm(static_cast<size_t>(C)), rv(static_cast<size_t>(C));
    for (size_t i = 0; i < rm.size(); ++i) {
      rm[i] = mean[i] * mom + bmean[i] * (1 - mom);
      rv[i] = var[i] * mom + bvar[i] * (1 - mom);
    }
    outs.push_back(vec(rm, c.in(3).dtype()));
    outs.push_back(vec(rv, c.in(4).dtype()));
    outs.push_back(vec(bmean, c.in(3).dtype())); // legacy saved_mean (opsets < 14)
    outs.push_back(vec(bvar, c.in(4).dtype()));  // legacy saved_var
  }
  return outs;
}

void batchNormInfer(InferCtx& c) {
  inferSameAsInput0(c);
  const auto& xs = c.inShape(0);
  Dim C = xs && xs->size() >= 2 ? (*xs)[1] : Dim{};
  for (size_t i = 1; i < c.node.outputs.size(); ++i)
    c.setTensor(i, c.inDType(i % 2 == 1 ? 3 : 4), Shape{C});
}

// BatchNormalization before opset 14: training mode is implied by is_test=0 (opsets < 7) or by
// asking for the running statistics (opsets 7-13). consumed_inputs and spatial are dropped (a
// per-activation scale is recognized by its size).
void upgradeBatchNorm(ImportCtx& c) {
  bool training;
  if (c.opset < 7)
    training = c.node.attrInt("is_test", 0) == 0;
  else {
    size_t n = 0;
    for (const Value* o : c.node.outputs) n += o != nullptr;
    training = n > 1;
  }
  c.node.attrs.erase("is_test");
  c.node.attrs.erase("consumed_inputs");
  c.node.attrs.erase("spatial");
  if (training) c.node.attrs["training_mode"] = Attribute{int64_t{1}};
}

// ---- Layer / RMS / Instance / Group normalization -----------------------------------------------

std::vector<RValue> layerNormKernel(KernelCtx& c, bool rms) {
  requireFloatInput(c, 0);
  const Tensor& X = c.in(0);
  const int64_t axis = normAxis(c.node.attrInt("axis"), X.rank());
  const double eps = c.node.attrFloat("epsilon");
  Dims normShape(X.shape().begin() + axis, X.shape().end()),
      statShape(X.shape().begin(), X.shape().begin() + axis);
  const int64_t inner = checkedNumel(normShape),
                outer = inner ? X.numel() / inner : checkedNumel(statShape);
  std::vector<double> scale = expandTo(c.in(1), normShape, "scale");
  std::vector<double> bias =
      !rms && c.has(2) ? expandTo(c.in(2), normShape, "bias") : std::vector<double>();
  std::vector<double> mean, inv;
  Tensor y = onCompute(X, [&](auto* x, auto* yp) {
    rowStats(x, outer, inner, eps, rms, mean, inv);
    applyNorm(
        x, yp, outer, inner, mean, inv,
        [&](int64_t, int64_t j) { return scale[static_cast<size_t>(j)]; },
        [&](int64_t, int64_t j) { return bias.empty() ? 0.0 : bias[static_cast<size_t>(j)]; });
  });
  std::vector<RValue> outs{RValue::of(y)};
  if (!rms) {
    statShape.resize(static_cast<size_t>(X.rank()), 1);
    auto dt = dtypeFromOnnx(static_cast<int32_t>(c.node.attrInt("stash_type")));
    Tensor m(dt.value_or(DType::F32), statShape), s(dt.value_or(DType::F32), statShape);
    for (int64_t i = 0; i < outer; ++i)
      m.setF64(i, mean[static_cast<size_t>(i)]), s.setF64(i, inv[static_cast<size_t>(i)]);
    outs.push_back(RValue::of(m));
    outs.push_back(RValue::of(s));
  }
  return outs;
}

void layerNormInfer(InferCtx& c) {
  inferSameAsInput0(c);
  auto dt = dtypeFromOnnx(static_cast<int32_t>(c.node.attrInt("stash_type")));
  AICC_CHECK(dt && isFloat(*dt), "attribute 'stash_type' is {}, expected a float type code",
             c.node.attrInt("stash_type"));
  const auto& xs = c.inShape(0);
  std::optional<Shape> st;
  if (xs) {
    int64_t axis = normAxis(c.node.attrInt("axis"), static_cast<int64_t>(xs->size()));
    st = Shape(xs->begin(), xs->begin() + axis);
    st->resize(xs->size(), Dim::known(1));
  }
  c.setTensor(1, *dt, st);
  c.setTensor(2, *dt, st);
}

std::vector<RValue> instanceNormKernel(KernelCtx& c) {
  requireFloatInput(c, 0);
  const Tensor& X = c.in(0);
  AICC_CHECK(X.rank() >= 2, "input X has shape {}, expected [N, C, ...]", formatDims(X.shape()));
  const int64_t N = X.dim(0), C = X.dim(1), S = N * C != 0 ? X.numel() / (N * C) : 0;
  std::vector<double> scale = channelParam(c, 1, C, "scale"), bias = channelParam(c, 2, C, "B");
  const double eps = c.node.attrFloat("epsilon");
  std::vector<double> mean, inv;
  return {RValue::of(onCompute(X, [&](auto* x, auto* y) {
    rowStats(x, N * C, S, eps, false, mean, inv);
    applyNorm(
        x, y, N * C, S, mean, inv,
        [&](int64_t r, int64_t) { return scale[static_cast<size_t>(r % C)]; },
        [&](int64_t r, int64_t) { return bias[static_cast<size_t>(r % C)]; });
  }))};
}

std::vector<RValue> groupNormKernel(KernelCtx& c) {
  requireFloatInput(c, 0);
  const Tensor& X = c.in(0);
  AICC_CHECK(X.rank() >= 2, "input X has shape {}, expected [N, C, ...]", formatDims(X.shape()));
  const int64_t N = X.dim(0), C = X.dim(1), S = N * C != 0 ? X.numel() / (N * C) : 0;
  const int64_t G = c.node.attrInt("num_groups");
  AICC_CHECK(G >= 1 && C % G == 0, "num_groups {} must divide the {} channels", G, C);
  std::vector<double> scale = channelParam(c, 1, C, "scale"), bias = channelParam(c, 2, C, "bias");
  const double eps = c.node.attrFloat("epsilon");
  const int64_t inner = C / G * S;
  std::vector<double> mean, inv;
  return {RValue::of(onCompute(X, [&](auto* x, auto* y) {
    rowStats(x, N * G, inner, eps, false, mean, inv);
    auto ch = [&](int64_t r, int64_t j) {
      return static_cast<size_t>((r % G) * (C / G) + (S ? j / S : 0));
    };
    applyNorm(
        x, y, N * G, inner, mean, inv, [&](int64_t r, int64_t j) { return scale[ch(r, j)]; },
        [&](int64_t r, int64_t j) { return bias[ch(r, j)]; });
  }))};
}

// GroupNormalization-18 had per-group scale and bias; 21 has per-channel ones. Constant
// parameters are expanded at import (each group's value repeated for its channels).
void upgradeGroupNorm(ImportCtx& c) {
  const int64_t G = c.node.attrInt("num_groups");
  for (size_t i = 1; i <= 2; ++i) {
    Value* v = c.node.hasInput(i) ? c.node.inputs[i] : nullptr;
    AICC_CHECK(v, "GroupNormalization input {} is missing", i);
    const Type& xt = c.node.inputs[0] ? c.node.inputs[0]->type : Type{};
    std::optional<int64_t> C;
    if (xt.shape && xt.shape->size() >= 2 && (*xt.shape)[1].isStatic()) C = (*xt.shape)[1].value;
    if (C && *C == G) continue; // per-group == per-channel
    AICC_CHECK(v->constant && C,
               "unsupported: GroupNormalization-18 with a non-constant per-group {} or an "
               "unknown channel count",
               i == 1 ? "scale" : "bias");
    const Tensor& t = *v->constant;
    AICC_CHECK(t.numel() == G && *C % G == 0, "{} has {} values, expected num_groups = {}",
               i == 1 ? "scale" : "bias", t.numel(), G);
    Tensor e(t.dtype(), {*C});
    for (int64_t ch = 0; ch < *C; ++ch) e.setF64(ch, t.getF64(ch / (*C / G)));
    c.node.inputs[i] = c.constant(std::move(e), i == 1 ? "scale" : "bias");
  }
}

// ---- MeanVarianceNormalization, LRN
// ---------------------------------------------------------------

std::vector<RValue> mvnKernel(KernelCtx& c) {
  requireFloatInput(c, 0);
  const Tensor& X = c.in(0);
  Dims axes = normAxes(c.node.attrInts("axes"), X.rank());
  Dims red = X.shape();
  for (int64_t a : axes) red[static_cast<size_t>(a)] = 1;
  const int64_t R = checkedNumel(red);
  BroadcastIndexer idx(red, X.shape());
  std::vector<double> s(static_cast<size_t>(R)), s2(static_cast<size_t>(R)),
      cnt(static_cast<size_t>(R));
  return {RValue::of(onCompute(X, [&](auto* x, auto* y) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(y)>>;
    for (int64_t i = 0; i < X.numel(); ++i) {
      auto r = static_cast<size_t>(idx(i));
      double v = static_cast<double>(x[i]);
      s[r] += v, s2[r] += v * v, cnt[r] += 1;
    }
    for (int64_t i = 0; i < X.numel(); ++i) {
      auto r = static_cast<size_t>(idx(i));
      double m = s[r] / cnt[r], var = std::max(0.0, s2[r] / cnt[r] - m * m);
      y[i] = static_cast<T>((static_cast<double>(x[i]) - m) / (std::sqrt(var) + 1e-9));
    }
  }))};
}

std::vector<RValue> lrnKernel(KernelCtx& c) {
  requireFloatInput(c, 0);
  const Tensor& X = c.in(0);
  AICC_CHECK(X.rank() >= 2, "input X has shape {}, expected [N, C, ...]", formatDims(X.shape()));
  const int64_t size = c.node.attrInt("size");
  AICC_CHECK(size >= 1, "attribute 'size' is {}, expected a positive integer", size);
  const double alpha = c.node.attrFloat("alpha"), beta = c.node.attrFloat("beta"),
               bias = c.node.attrFloat("bias");
  const int64_t N = X.dim(0), C = X.dim(1), S = N * C != 0 ? X.numel() / (N * C) : 0;
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  return {RValue::of(onCompute(X, [&](auto* x, auto* y) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(y)>>;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t s = 0; s < S; ++s) {
          double sq = 0;
          for (int64_t k = std::max<int64_t>(0, ch - lo); k <= std::min(C - 1, ch + hi); ++k) {
            double v = static_cast<double>(x[(n * C + k) * S + s]);
            sq += v * v;
          }
          int64_t i = (n * C + ch) * S + s;
          y[i] = static_cast<T>(static_cast<double>(x[i]) /
                                std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
        }
  }))};
}

} // namespace

void registerNnNormOps(OpRegistry& r) {
  r.op("BatchNormalization")
      .perSample([](const Node& n) { return n.attrInt("training_mode") == 0; })
      .perSample([](const Node& n) { return n.attrInt("training_mode") == 0; })
      .attrFloat("epsilon", 1e-5f)
      .attrFloat("momentum", 0.9f)
      .attrInt("training_mode", 0)
      .inputs(5, 5)
      .outputs(1, 5) // outputs 3-4 (saved mean/var) exist only before opset 14
      .infer(batchNormInfer)
      .kernel(batchNormKernel)
      .upgrade(1, 13, upgradeBatchNorm,
               {{"is_test", Attribute::Kind::Int, std::nullopt, false},
                {"spatial", Attribute::Kind::Int, std::nullopt, false},
                {"consumed_inputs", Attribute::Kind::Ints, std::nullopt, false}});
  r.op("InstanceNormalization")
      .perSample()
      .attrFloat("epsilon", 1e-5f)
      .inputs(3, 3)
      .infer(inferSameAsInput0)
      .kernel(instanceNormKernel)
      .upgrade(1, 5, [](ImportCtx& c) { c.node.attrs.erase("consumed_inputs"); },
               {{"consumed_inputs", Attribute::Kind::Ints, std::nullopt, false}});
  r.op("LayerNormalization")
      .perSampleDims(perSampleOutsideAxis(-1))
      .perSampleDims(perSampleOutsideAxis(-1))
      .since(17)
      .attrInt("axis", -1)
      .attrFloat("epsilon", 1e-5f)
      .attrInt("stash_type", 1)
      .inputs(2, 3)
      .outputs(1, 3)
      .infer(layerNormInfer)
      .kernel([](KernelCtx& c) { return layerNormKernel(c, false); });
  r.op("RMSNormalization")
      .perSampleDims(perSampleOutsideAxis(-1))
      .perSampleDims(perSampleOutsideAxis(-1))
      .since(23)
      .attrInt("axis", -1)
      .attrFloat("epsilon", 1e-5f)
      .attrInt("stash_type", 1)
      .inputs(2, 2)
      .infer(inferSameAsInput0)
      .kernel([](KernelCtx& c) { return layerNormKernel(c, true); });
  r.op("GroupNormalization")
      .perSample()
      .since(18)
      .attrFloat("epsilon", 1e-5f)
      .attr("num_groups", Attribute::Kind::Int, true)
      .attrInt("stash_type", 1)
      .inputs(3, 3)
      .infer(inferSameAsInput0)
      .kernel(groupNormKernel)
      .upgrade(18, 20, upgradeGroupNorm);
  r.op("MeanVarianceNormalization")
      .attrInts("axes", {0, 2, 3})
      .inputs(1, 1)
      .infer(inferSameAsInput0)
      .kernel(mvnKernel);
  r.op("LRN")
      .perSample()
      .attrFloat("alpha", 1e-4f)
      .attrFloat("beta", 0.75f)
      .attrFloat("bias", 1.0f)
      .attr("size", Attribute::Kind::Int, true)
      .inputs(1, 1)
      .infer(inferSameAsInput0)
      .kernel(lrnKernel);
}

} // namespace aicc
