#include "ops/helpers.h"

#include <algorithm>

namespace aicc {

int64_t normAxis(int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  AICC_CHECK(a >= 0 && a < std::max<int64_t>(rank, 1), "axis {} is out of range for rank {}", axis, rank);
  return a;
}

std::vector<int64_t> normAxes(std::vector<int64_t> axes, int64_t rank) {
  for (auto& a : axes) a = normAxis(a, rank);
  return axes;
}

Dims stridesOf(const Dims& shape) {
  Dims s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[static_cast<size_t>(i)] = s[static_cast<size_t>(i) + 1] * shape[static_cast<size_t>(i) + 1];
  return s;
}

Dims broadcastDims(const Dims& a, const Dims& b) {
  size_t r = std::max(a.size(), b.size());
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    AICC_CHECK(da == db || da == 1 || db == 1, "shapes {} and {} cannot be broadcast", formatDims(a),
               formatDims(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcastShape(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    Dim da = i < r - a.size() ? Dim::known(1) : a[i - (r - a.size())];
    Dim db = i < r - b.size() ? Dim::known(1) : b[i - (r - b.size())];
    if (da.isStatic() && db.isStatic()) {
      AICC_CHECK(da.value == db.value || da.value == 1 || db.value == 1,
                 "shapes {} and {} cannot be broadcast", formatShape(a), formatShape(b));
      out[i] = Dim::known(da.value == 1 ? db.value : da.value);
    } else if (da.isStatic() && da.value == 1) out[i] = db;
    else if (db.isStatic() && db.value == 1) out[i] = da;
    else if (da.isStatic()) out[i] = da; // symbol vs d > 1: must be d
    else if (db.isStatic()) out[i] = db;
    else if (da == db) out[i] = da;
    else out[i] = Dim{};
  }
  return out;
}

BroadcastIndexer::BroadcastIndexer(const Dims& in, const Dims& out) : outShape_(out) {
  Dims st = stridesOf(in);
  inStrides_.assign(out.size(), 0);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) inStrides_[off + i] = in[i] == 1 ? 0 : st[i];
}

int64_t BroadcastIndexer::operator()(int64_t outIndex) const {
  int64_t idx = 0;
  for (int64_t d = static_cast<int64_t>(outShape_.size()) - 1; d >= 0; --d) {
    auto du = static_cast<size_t>(d);
    int64_t c = outIndex % outShape_[du];
    outIndex /= outShape_[du];
    idx += c * inStrides_[du];
  }
  return idx;
}

Tensor mapUnary(const Tensor& x, const std::function<double(double)>& f, DType outType) {
  Tensor out(outType == DType::Undefined ? x.dtype() : outType, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) out.setF64(i, f(x.getF64(i)));
  return out;
}

Tensor mapBinary(const Tensor& a, const Tensor& b, const std::function<double(double, double)>& f,
                 DType outType) {
  Dims shape = broadcastDims(a.shape(), b.shape());
  Tensor out(outType == DType::Undefined ? a.dtype() : outType, shape);
  BroadcastIndexer ia(a.shape(), shape), ib(b.shape(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) out.setF64(i, f(a.getF64(ia(i)), b.getF64(ib(i))));
  return out;
}

Tensor mapBinaryI64(const Tensor& a, const Tensor& b, const std::function<int64_t(int64_t, int64_t)>& f,
                    DType outType) {
  Dims shape = broadcastDims(a.shape(), b.shape());
  Tensor out(outType == DType::Undefined ? a.dtype() : outType, shape);
  BroadcastIndexer ia(a.shape(), shape), ib(b.shape(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) out.setI64(i, f(a.getI64(ia(i)), b.getI64(ib(i))));
  return out;
}

void inferSameAsInput0(InferCtx& c) { c.setOutput(0, c.inType(0)); }

void inferBroadcast(InferCtx& c, DType dt) {
  std::optional<Shape> s = Shape{};
  for (size_t i = 0; i < c.numInputs(); ++i) {
    if (!c.has(i)) continue;
    const auto& si = c.inShape(i);
    if (!si || !s) s = std::nullopt;
    else s = broadcastShape(*s, *si);
  }
  c.setTensor(0, dt == DType::Undefined ? c.inDType(0) : dt, s);
}

void requireDType(const KernelCtx& c, size_t i, std::initializer_list<DType> allowed) {
  DType t = c.in(i).dtype();
  for (DType a : allowed)
    if (a == t) return;
  fail("input {} has unsupported element type {}", i, dtypeName(t));
}

} // namespace aicc
