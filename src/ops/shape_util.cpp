#include "ops/shape_ops.h"

#include <cstring>

namespace aicc {

void copyElems(const Tensor& src, int64_t srcOff, Tensor& dst, int64_t dstOff, int64_t n) {
  if (n <= 0) return;
  if (src.dtype() == DType::String) {
    for (int64_t i = 0; i < n; ++i) dst.strings()[dstOff + i] = src.strings()[srcOff + i];
    return;
  }
  size_t es = dtypeSize(src.dtype());
  std::memcpy(static_cast<std::byte*>(dst.raw()) + static_cast<size_t>(dstOff) * es,
              static_cast<const std::byte*>(src.raw()) + static_cast<size_t>(srcOff) * es,
              static_cast<size_t>(n) * es);
}

namespace {

// Copies one row of `n` elements with input stride `st` (elements) for fixed-size element types.
template <typename T> void copyRow(const std::byte* in, int64_t st, std::byte* out, int64_t n) {
  const T* s = reinterpret_cast<const T*>(in);
  T* d = reinterpret_cast<T*>(out);
  for (int64_t i = 0; i < n; ++i) d[i] = s[i * st];
}

} // namespace

Tensor stridedCopy(const Tensor& in, int64_t base, const Dims& outShape, const Dims& strides) {
  AICC_CHECK(outShape.size() == strides.size(), "internal: stridedCopy rank mismatch");
  Tensor out(in.dtype(), outShape);
  if (out.numel() == 0) return out;
  // Bounds of the accessed range.
  int64_t lo = base, hi = base;
  for (size_t d = 0; d < outShape.size(); ++d) {
    int64_t ext = (outShape[d] - 1) * strides[d];
    (ext > 0 ? hi : lo) += ext;
  }
  AICC_CHECK(lo >= 0 && hi < in.numel(),
             "internal: strided access [{}, {}] outside a tensor of {} elements", lo, hi,
             in.numel());
  // Coalesce: drop size-1 dims, merge dims that are contiguous with respect to each other.
  Dims shp, st;
  for (size_t d = 0; d < outShape.size(); ++d) {
    if (outShape[d] == 1) continue;
    if (!shp.empty() && st.back() == strides[d] * outShape[d]) {
      shp.back() *= outShape[d];
      st.back() = strides[d];
      continue;
    }
    shp.push_back(outShape[d]);
    st.push_back(strides[d]);
  }
  if (shp.empty()) {
    shp.push_back(1);
    st.push_back(1);
  }
  size_t r = shp.size();
  int64_t inner = shp[r - 1], ist = st[r - 1];
  size_t es = dtypeSize(in.dtype());
  bool isStr = in.dtype() == DType::String;
  const auto* src = static_cast<const std::byte*>(in.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  Dims idx(r, 0);
  int64_t off = base;
  for (int64_t o = 0; o < out.numel(); o += inner) {
    if (isStr) {
      for (int64_t i = 0; i < inner; ++i) out.strings()[o + i] = in.strings()[off + i * ist];
    } else if (ist == 1) {
      std::memcpy(dst + static_cast<size_t>(o) * es, src + static_cast<size_t>(off) * es,
                  static_cast<size_t>(inner) * es);
    } else {
      const std::byte* s = src + static_cast<size_t>(off) * es;
      std::byte* d = dst + static_cast<size_t>(o) * es;
      switch (es) {
      case 1:
        copyRow<uint8_t>(s, ist, d, inner);
        break;
      case 2:
        copyRow<uint16_t>(s, ist, d, inner);
        break;
      case 4:
        copyRow<uint32_t>(s, ist, d, inner);
        break;
      case 8:
        copyRow<uint64_t>(s, ist, d, inner);
        break;
      default:
        for (int64_t i = 0; i < inner; ++i)
          std::memcpy(d + static_cast<size_t>(i) * es, s + static_cast<size_t>(i * ist) * es, es);
      }
    }
    for (int64_t d = static_cast<int64_t>(r) - 2; d >= 0; --d) {
      auto du = static_cast<size_t>(d);
      if (++idx[du] < shp[du]) {
        off += st[du];
        break;
      }
      off -= st[du] * (shp[du] - 1);
      idx[du] = 0;
    }
  }
  return out;
}

int64_t wrapIndex(int64_t idx, int64_t dim, const char* what) {
  int64_t i = idx < 0 ? idx + dim : idx;
  AICC_CHECK(i >= 0 && i < dim, "{} {} is out of range for a dimension of size {}", what, idx, dim);
  return i;
}

size_t axisAttr(const Node& n, int64_t rank) {
  AICC_CHECK(rank >= 1, "the input must have rank >= 1 for an axis, is a scalar");
  return static_cast<size_t>(normAxis(n.attrInt("axis"), rank));
}

int64_t prodDims(const Dims& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < d.size(); ++i)
    AICC_CHECK(!__builtin_mul_overflow(p, d[i], &p), "the element count of shape {} overflows",
               formatDims(d));
  return p;
}

Tensor constantValue(const Node& n) {
  std::vector<std::pair<std::string, Tensor>> found;
  for (const auto& [name, a] : n.attrs) {
    Tensor t;
    if (name == "value")
      t = std::get<Tensor>(a.v);
    else if (name == "value_float")
      t = Tensor::fromF32({std::get<float>(a.v)}).reshaped({});
    else if (name == "value_floats")
      t = Tensor::fromF32(std::get<std::vector<float>>(a.v));
    else if (name == "value_int")
      t = Tensor::fromI64({std::get<int64_t>(a.v)}).reshaped({});
    else if (name == "value_ints")
      t = Tensor::fromI64(std::get<std::vector<int64_t>>(a.v));
    else if (name == "value_string") {
      t = Tensor(DType::String, {});
      t.strings()[0] = std::get<std::string>(a.v);
    } else if (name == "value_strings") {
      const auto& s = std::get<std::vector<std::string>>(a.v);
      t = Tensor(DType::String, {static_cast<int64_t>(s.size())});
      for (size_t i = 0; i < s.size(); ++i) t.strings()[i] = s[i];
    } else
      continue;
    found.emplace_back(name, t);
  }
  AICC_CHECK(found.size() == 1, "Constant needs exactly one value attribute, has {}", found.size());
  return found[0].second;
}

std::optional<std::vector<int64_t>> knownInts(InferCtx& c, size_t i) {
  if (!c.has(i)) return std::nullopt;
  if (const Node* p = c.node.inputs[i]->producer; p && p->op == "Constant" && p->domain.empty()) {
    Tensor t = constantValue(*p);
    if (!isInteger(t.dtype()) || t.numel() > 4096) return std::nullopt;
    return t.toI64Vector();
  }
  if (const Tensor* t = c.constInput(i)) {
    if (!isInteger(t->dtype()) || t->numel() > 4096) return std::nullopt;
    return t->toI64Vector();
  }
  const std::vector<Dim>* sv = c.shapeValue(i);
  if (!sv) return std::nullopt;
  std::vector<int64_t> v;
  for (const Dim& d : *sv) {
    if (!d.symbol.empty() || d.value == -1) return std::nullopt;
    v.push_back(d.value);
  }
  return v;
}

Dim mulDim(const Dim& a, const Dim& b) {
  if ((a.isStatic() && a.value == 0) || (b.isStatic() && b.value == 0)) return Dim::known(0);
  return dimMul(a, b); // (static, or a symbolic product: ir/dim_expr.h)
}

std::optional<int64_t> inRank(InferCtx& c, size_t i) {
  const auto& s = c.inShape(i);
  if (!s) return std::nullopt;
  return static_cast<int64_t>(s->size());
}

std::optional<int64_t> inLength1D(InferCtx& c, size_t i) {
  const auto& s = c.inShape(i);
  if (!s || s->size() != 1 || !(*s)[0].isStatic()) return std::nullopt;
  return (*s)[0].value;
}

std::pair<int64_t, int64_t> shapeRange(const Node& n, int64_t rank) {
  int64_t s = n.attrInt("start"), e = n.attrInt("end", rank);
  if (s < 0) s += rank;
  if (e < 0) e += rank;
  s = std::clamp<int64_t>(s, 0, rank);
  e = std::clamp<int64_t>(e, 0, rank);
  return {s, std::max(s, e)};
}

} // namespace aicc
