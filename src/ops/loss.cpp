// Loss functions: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 12/13 semantics;
// the two opsets differ only in type constraints).
//
// Both take scores x of shape [N, C, d1, ..., dk], integer targets of shape [N, d1, ..., dk] and an
// optional per-class weight [C]. With w = weight[target] (1 without weights, 0 where the target
// equals ignore_index), the per-element loss is -w * x[n, target, d...] (SoftmaxCrossEntropyLoss
// first replaces x by its log-softmax along axis 1, optionally returned as `log_prob`).
// reduction: "none" keeps the target's shape, "sum" adds everything, "mean" divides the sum by the
// sum of w. Everything is computed in double and stored in x's element type.
#include "ops/helpers.h"

#include <cmath>
#include <limits>

namespace aicc {

namespace {

enum class Reduction { None, Sum, Mean };

Reduction parseReduction(const Node& n) {
  std::string r = n.attrString("reduction");
  if (r == "none") return Reduction::None;
  if (r == "sum") return Reduction::Sum;
  if (r == "mean") return Reduction::Mean;
  fail("attribute 'reduction' must be 'none', 'sum' or 'mean', got '{}'", r);
}

bool isLossFloat(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
}

// Shared inference: checks x / target / weight agree, sets output 0 (and output 1 = x's type when
// `withLogProb`).
void inferLoss(InferCtx& c, bool withLogProb) {
  Reduction red = parseReduction(c.node);
  DType dt = c.inDType(0);
  if (dt != DType::Undefined)
    AICC_CHECK(isLossFloat(dt), "input 0 has unsupported element type {}", dtypeName(dt));
  DType tt = c.inDType(1);
  if (tt != DType::Undefined)
    AICC_CHECK(tt == DType::I32 || tt == DType::I64,
               "target (input 1) must be int32 or int64, got {}", dtypeName(tt));
  const auto& xs = c.inShape(0);
  const auto& ts = c.inShape(1);
  if (xs)
    AICC_CHECK(xs->size() >= 2, "input 0 must have rank >= 2 ([N, C, ...]), got {}",
               formatShape(*xs));
  std::optional<Shape> target = ts;
  if (xs && ts) {
    AICC_CHECK(ts->size() + 1 == xs->size(),
               "target shape {} must be input shape {} without axis 1", formatShape(*ts),
               formatShape(*xs));
    Shape merged = *ts;
    for (size_t i = 0; i < ts->size(); ++i) {
      const Dim& a = (*xs)[i == 0 ? 0 : i + 1];
      const Dim& b = (*ts)[i];
      AICC_CHECK(!(a.isStatic() && b.isStatic() && a.value != b.value),
                 "target shape {} does not match input shape {}", formatShape(*ts),
                 formatShape(*xs));
      if (!b.isStatic() && a.isStatic()) merged[i] = a;
    }
    target = merged;
  } else if (xs) {
    Shape s{(*xs)[0]};
    s.insert(s.end(), xs->begin() + 2, xs->end());
    target = s;
  }
  if (c.has(2)) {
    const auto& ws = c.inShape(2);
    if (ws) {
      AICC_CHECK(ws->size() == 1, "weight (input 2) must be 1-D, got {}", formatShape(*ws));
      if (xs && (*xs)[1].isStatic() && (*ws)[0].isStatic())
        AICC_CHECK((*xs)[1].value == (*ws)[0].value, "weight has {} entries, input has {} classes",
                   (*ws)[0].value, (*xs)[1].value);
    }
  }
  c.setTensor(0, dt, red == Reduction::None ? target : std::optional<Shape>(Shape{}));
  if (withLogProb) c.setTensor(1, dt, xs);
}

// In-place log-softmax along axis 1 of a [N, C, D] array.
void logSoftmaxAxis1(std::vector<double>& v, int64_t n, int64_t cls, int64_t d) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < d; ++k) {
      double* base = v.data() + i * cls * d + k;
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < cls; ++j) m = std::max(m, base[j * d]);
      double sum = 0;
      for (int64_t j = 0; j < cls; ++j) sum += std::exp(base[j * d] - m);
      double lse = m + std::log(sum);
      for (int64_t j = 0; j < cls; ++j) base[j * d] -= lse;
    }
}

std::vector<RValue> runLoss(KernelCtx& c, bool softmax) {
  const Tensor& x = c.in(0);
  const Tensor& target = c.in(1);
  requireDType(c, 0, {DType::F32, DType::F64, DType::F16, DType::BF16});
  requireDType(c, 1, {DType::I32, DType::I64});
  Reduction red = parseReduction(c.node);
  AICC_CHECK(x.rank() >= 2, "input 0 must have rank >= 2 ([N, C, ...]), got {}",
             formatDims(x.shape()));
  Dims tshape{x.dim(0)};
  tshape.insert(tshape.end(), x.shape().begin() + 2, x.shape().end());
  AICC_CHECK(target.shape() == tshape, "target shape {} must be {} (input shape {} without axis 1)",
             formatDims(target.shape()), formatDims(tshape), formatDims(x.shape()));
  const int64_t n = x.dim(0), cls = x.dim(1), d = n == 0 || cls == 0 ? 0 : x.numel() / (n * cls);
  const int64_t dInner = cls == 0 ? target.numel() / std::max<int64_t>(n, 1) : d;
  std::vector<double> weight;
  if (c.has(2)) {
    const Tensor& w = c.in(2);
    AICC_CHECK(w.dtype() == x.dtype(), "weight (input 2) is {}, input 0 is {}",
               dtypeName(w.dtype()), dtypeName(x.dtype()));
    AICC_CHECK(w.rank() == 1 && w.dim(0) == cls, "weight shape {} must be [{}]",
               formatDims(w.shape()), cls);
    weight = w.toF64Vector();
  }
  const Attribute* ia = c.node.attr("ignore_index");
  const bool hasIgnore = ia != nullptr;
  const int64_t ignore = hasIgnore ? c.node.attrInt("ignore_index") : 0;

  std::vector<double> xv = x.toF64Vector();
  if (softmax) logSoftmaxAxis1(xv, n, cls, d);
  std::vector<int64_t> tv = target.toI64Vector();

  Tensor perElem(x.dtype(), red == Reduction::None ? tshape : Dims{});
  double sum = 0, wsum = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < dInner; ++k) {
      int64_t ti = i * dInner + k;
      int64_t t = tv[static_cast<size_t>(ti)];
      double loss = 0, w = 0;
      if (!(hasIgnore && t == ignore)) {
        AICC_CHECK(t >= 0 && t < cls, "target value {} at index {} is out of range [0, {})", t, ti,
                   cls);
        w = weight.empty() ? 1.0 : weight[static_cast<size_t>(t)];
        loss = -w * xv[static_cast<size_t>((i * cls + t) * d + k)];
      }
      if (red == Reduction::None) perElem.setF64(ti, loss);
      sum += loss;
      wsum += w;
    }
  Tensor out = perElem;
  if (red == Reduction::Sum) out.setF64(0, sum);
  if (red == Reduction::Mean) out.setF64(0, sum / wsum); // 0/0 = NaN when every target is ignored

  std::vector<RValue> res{RValue::of(out)};
  if (softmax && c.wantOutput(1)) {
    Tensor lp(x.dtype(), x.shape());
    for (int64_t i = 0; i < lp.numel(); ++i) lp.setF64(i, xv[static_cast<size_t>(i)]);
    res.push_back(RValue::of(lp));
  }
  return res;
}

} // namespace

void registerLossOps(OpRegistry& r) {
  r.op("NegativeLogLikelihoodLoss")
      .since(12)
      .inputs(2, 3)
      .outputs(1, 1)
      .attr("ignore_index", Attribute::Kind::Int)
      .attrString("reduction", "mean")
      .infer([](InferCtx& c) { inferLoss(c, false); })
      .kernel([](KernelCtx& c) { return runLoss(c, false); });

  r.op("SoftmaxCrossEntropyLoss")
      .since(12)
      .inputs(2, 3)
      .outputs(1, 2)
      .attr("ignore_index", Attribute::Kind::Int)
      .attrString("reduction", "mean")
      .infer([](InferCtx& c) { inferLoss(c, true); })
      .kernel([](KernelCtx& c) { return runLoss(c, true); });
}

} // namespace aicc
