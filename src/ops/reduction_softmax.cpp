// Softmax, LogSoftmax, Hardmax (opset-13 semantics: normalize along one `axis`, default -1) and
// LpNormalization.
//
// Upgrade of opsets 1..12, where these ops flattened the input to 2-D at `axis` (default 1) and
// normalized each row: the importer rewrites
//     y = Softmax[axis=a](x)
// into
//     f = Flatten[axis=a](x); t = Softmax[axis=-1](f); y = Reshape[allowzero=1](t, Shape(x))
// unless the input's rank is known at import and `a` is its last axis (then both forms agree and
// only the attribute is rewritten).
#include "ops/reduction.h"

#include "ops/helpers.h"

#include <cmath>
#include <limits>

namespace aicc {

namespace {

enum class SK { Softmax, LogSoftmax, Hardmax };

// Works on `inner` lanes at once so that memory is read contiguously for any axis.
template <typename T> void softmaxTyped(SK k, const T* x, T* y, const AxisSplit& s) {
  const int64_t n = s.n, inner = s.inner;
  std::vector<double> m(static_cast<size_t>(inner)), sum(static_cast<size_t>(inner));
  std::vector<int64_t> arg(static_cast<size_t>(inner));
  for (int64_t o = 0; o < s.outer; ++o) {
    const T* xo = x + o * n * inner;
    T* yo = y + o * n * inner;
    std::fill(m.begin(), m.end(), -std::numeric_limits<double>::infinity());
    std::fill(arg.begin(), arg.end(), -1);
    for (int64_t j = 0; j < n; ++j) {
      const T* xr = xo + j * inner;
      for (int64_t i = 0; i < inner; ++i) {
        double v = xr[i];
        if (v > m[i] || (arg[i] < 0 && !(v < m[i]))) {
          m[i] = v;
          arg[i] = j;
        }
      }
    }
    if (k == SK::Hardmax) {
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) yo[j * inner + i] = static_cast<T>(arg[i] == j ? 1 : 0);
      continue;
    }
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t j = 0; j < n; ++j) {
      const T* xr = xo + j * inner;
      T* yr = yo + j * inner;
      for (int64_t i = 0; i < inner; ++i) {
        double e = std::exp(static_cast<double>(xr[i]) - m[i]);
        sum[i] += e;
        if (k == SK::Softmax) yr[i] = static_cast<T>(e);
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      const T* xr = xo + j * inner;
      T* yr = yo + j * inner;
      if (k == SK::Softmax) {
        for (int64_t i = 0; i < inner; ++i)
          yr[i] = static_cast<T>(static_cast<double>(yr[i]) / sum[i]);
      } else {
        for (int64_t i = 0; i < inner; ++i)
          yr[i] = static_cast<T>(static_cast<double>(xr[i]) - m[i] - std::log(sum[i]));
      }
    }
  }
}

Tensor softmaxTensor(SK k, const Tensor& x, int64_t axis) {
  if (isReducedFloat(x.dtype()))
    return softmaxTensor(k, x.castTo(DType::F32), axis).castTo(x.dtype());
  Tensor y(x.dtype(), x.shape());
  AxisSplit s = splitAt(x.shape(), normAxis(axis, x.rank()));
  if (x.dtype() == DType::F32)
    softmaxTyped<float>(k, x.data<float>(), y.data<float>(), s);
  else if (x.dtype() == DType::F64)
    softmaxTyped<double>(k, x.data<double>(), y.data<double>(), s);
  else
    fail("input 0 has unsupported element type {}", dtypeName(x.dtype()));
  return y;
}

void inferAxisOp(InferCtx& c) {
  const auto& s = c.inShape(0);
  if (s) normAxis(c.node.attrInt("axis"), static_cast<int64_t>(s->size()));
  inferSameAsInput0(c);
}

// Opsets 1..12: flatten to 2-D at `axis` (default 1), normalize rows (see the header comment).
void upgradeFlattening(ImportCtx& c) {
  // The legacy default (1) differs from the canonical one, so look at the node's own attribute.
  int64_t axis = c.node.attrs.count("axis") ? c.node.attrInt("axis") : 1;
  Value* x = c.node.inputs.at(0);
  if (x->type.isTensor() && x->type.shape) {
    auto r = static_cast<int64_t>(x->type.shape->size());
    AICC_CHECK(axis >= -r && axis <= r, "axis {} is out of range for rank {}", axis, r);
    if (r > 0 && (axis < 0 ? axis + r : axis) == r - 1) {
      c.node.attrs["axis"] = Attribute{int64_t{-1}};
      return;
    }
  }
  Node* flat = c.emitBefore("Flatten", {x}, 1);
  flat->attrs["axis"] = Attribute{axis};
  Node* shape = c.emitBefore("Shape", {x}, 1);
  c.node.inputs[0] = flat->outputs[0];
  c.node.attrs["axis"] = Attribute{int64_t{-1}};
  Node* reshape = c.emitAfter("Reshape", {nullptr, shape->outputs[0]}, 1);
  reshape->attrs["allowzero"] = Attribute{int64_t{1}};
  // The Reshape takes over the node's output value; the node now feeds the Reshape.
  Value* y = c.node.outputs.at(0);
  Value* t = reshape->outputs[0];
  c.node.outputs[0] = t;
  t->producer = &c.node;
  reshape->outputs[0] = y;
  y->producer = reshape;
  reshape->inputs[0] = t;
}

void registerSoftmaxLike(OpRegistry& r, const char* name, SK k) {
  r.op(name)
      .perSampleDims(perSampleOutsideAxis(-1))
      .inputs(1, 1)
      .attrInt("axis", -1)
      .infer(inferAxisOp)
      .kernel([k](KernelCtx& c) {
        return std::vector<RValue>{RValue::of(softmaxTensor(k, c.in(0), c.node.attrInt("axis")))};
      })
      .upgrade(1, 12, upgradeFlattening);
}

template <typename T> void lpNormTyped(const T* x, T* y, const AxisSplit& s, int64_t p) {
  const int64_t n = s.n, inner = s.inner;
  std::vector<double> norm(static_cast<size_t>(inner));
  for (int64_t o = 0; o < s.outer; ++o) {
    const T* xo = x + o * n * inner;
    T* yo = y + o * n * inner;
    std::fill(norm.begin(), norm.end(), 0.0);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < inner; ++i) {
        double v = xo[j * inner + i];
        norm[static_cast<size_t>(i)] += p == 1 ? std::fabs(v) : v * v;
      }
    if (p == 2)
      for (double& v : norm) v = std::sqrt(v);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < inner; ++i) {
        double nv = norm[static_cast<size_t>(i)];
        yo[j * inner + i] = static_cast<T>(nv == 0 ? 0.0 : xo[j * inner + i] / nv);
      }
  }
}

Tensor lpNormTensor(const Tensor& x, int64_t axis, int64_t p) {
  AICC_CHECK(p == 1 || p == 2, "attribute 'p' must be 1 or 2, got {}", p);
  if (isReducedFloat(x.dtype()))
    return lpNormTensor(x.castTo(DType::F32), axis, p).castTo(x.dtype());
  Tensor y(x.dtype(), x.shape());
  AxisSplit s = splitAt(x.shape(), normAxis(axis, x.rank()));
  if (x.dtype() == DType::F32)
    lpNormTyped<float>(x.data<float>(), y.data<float>(), s, p);
  else if (x.dtype() == DType::F64)
    lpNormTyped<double>(x.data<double>(), y.data<double>(), s, p);
  else
    fail("input 0 has unsupported element type {}", dtypeName(x.dtype()));
  return y;
}

} // namespace

void registerSoftmaxOps(OpRegistry& r) {
  registerSoftmaxLike(r, "Softmax", SK::Softmax);
  registerSoftmaxLike(r, "LogSoftmax", SK::LogSoftmax);
  registerSoftmaxLike(r, "Hardmax", SK::Hardmax);
  if (!r.find("", "LpNormalization")) { // may be provided by the nn family instead
    r.op("LpNormalization")
        .inputs(1, 1)
        .attrInt("axis", -1)
        .attrInt("p", 2)
        .infer(inferAxisOp)
        .kernel([](KernelCtx& c) {
          return std::vector<RValue>{
              RValue::of(lpNormTensor(c.in(0), c.node.attrInt("axis"), c.node.attrInt("p")))};
        });
  }
}

} // namespace aicc
