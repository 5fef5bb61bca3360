// Assorted ops: Shrink, Det, CumProd, BitCast. registerMiscOps also registers the other misc
// files (see ops/misc.h).
#include "ops/misc.h"

#include <cmath>
#include <cstring>

namespace aicc {
namespace {

// ---- Shrink ------------------------------------------------------------------------------------

std::vector<RValue> shrinkKernel(KernelCtx& c) {
  const Tensor& x = c.in(0);
  requireDType(c, 0,
               {DType::U8, DType::U16, DType::U32, DType::U64, DType::I8, DType::I16, DType::I32,
                DType::I64, DType::F16, DType::F32, DType::F64, DType::BF16});
  const double lambd = c.node.attrFloat("lambd"), bias = c.node.attrFloat("bias");
  return {RValue::of(mapUnary(x, [=](double v) {
    if (v < -lambd) return v + bias;
    if (v > lambd) return v - bias;
    return 0.0;
  }))};
}

// ---- Det ---------------------------------------------------------------------------------------

// Determinant by Gaussian elimination with partial pivoting (a is row-major m x m, destroyed).
double determinant(std::vector<double>& a, int64_t m) {
  double det = 1;
  for (int64_t k = 0; k < m; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < m; ++i)
      if (std::fabs(a[static_cast<size_t>(i * m + k)]) >
          std::fabs(a[static_cast<size_t>(p * m + k)]))
        p = i;
    double piv = a[static_cast<size_t>(p * m + k)];
    if (piv == 0) return 0;
    if (p != k) {
      for (int64_t j = 0; j < m; ++j)
        std::swap(a[static_cast<size_t>(k * m + j)], a[static_cast<size_t>(p * m + j)]);
      det = -det;
    }
    det *= piv;
    for (int64_t i = k + 1; i < m; ++i) {
      double f = a[static_cast<size_t>(i * m + k)] / piv;
      if (f == 0) continue;
      for (int64_t j = k + 1; j < m; ++j)
        a[static_cast<size_t>(i * m + j)] -= f * a[static_cast<size_t>(k * m + j)];
    }
  }
  return det;
}

std::vector<RValue> detKernel(KernelCtx& c) {
  const Tensor& x = c.in(0);
  requireDType(c, 0, {DType::F16, DType::F32, DType::F64, DType::BF16});
  AICC_CHECK(x.rank() >= 2 && x.dim(x.rank() - 1) == x.dim(x.rank() - 2),
             "input must have shape [*, M, M], got {}", formatDims(x.shape()));
  const int64_t m = x.dim(x.rank() - 1);
  Dims outShape(x.shape().begin(), x.shape().end() - 2);
  Tensor y(x.dtype(), outShape);
  std::vector<double> a(static_cast<size_t>(m * m));
  for (int64_t b = 0; b < y.numel(); ++b) {
    for (int64_t i = 0; i < m * m; ++i) a[static_cast<size_t>(i)] = x.getF64(b * m * m + i);
    y.setF64(b, determinant(a, m));
  }
  return {RValue::of(y)};
}

void inferDet(InferCtx& c) {
  const auto& s = c.inShape(0);
  if (!s) return c.setTensor(0, c.inDType(0), std::nullopt);
  AICC_CHECK(s->size() >= 2, "input must have rank >= 2, got {}", formatShape(*s));
  const Dim &r = (*s)[s->size() - 2], &k = s->back();
  AICC_CHECK(!(r.isStatic() && k.isStatic() && r.value != k.value),
             "input must hold square matrices, got {}", formatShape(*s));
  c.setTensor(0, c.inDType(0), Shape(s->begin(), s->end() - 2));
}

// ---- CumProd -----------------------------------------------------------------------------------

template <typename T>
void cumprodLoop(const Tensor& x, Tensor& y, int64_t axis, bool exclusive, bool reverse) {
  // Floats multiply in double; integers exactly modulo 2^64 (wrapping like the storage type).
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
  Dims sh = x.shape();
  int64_t outer = 1, inner = 1, n = sh[static_cast<size_t>(axis)];
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d < axis) outer *= sh[static_cast<size_t>(d)];
    if (d > axis) inner *= sh[static_cast<size_t>(d)];
  }
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      Acc prod = 1;
      for (int64_t t = 0; t < n; ++t) {
        int64_t j = reverse ? n - 1 - t : t;
        int64_t at = (o * n + j) * inner + i;
        Acc v;
        if constexpr (std::is_floating_point_v<T>)
          v = static_cast<double>(xp[at]);
        else if constexpr (std::is_signed_v<T>)
          v = static_cast<uint64_t>(static_cast<int64_t>(xp[at]));
        else
          v = static_cast<uint64_t>(xp[at]);
        if (!exclusive) prod *= v;
        yp[at] = static_cast<T>(prod);
        if (exclusive) prod *= v;
      }
    }
}

std::vector<RValue> cumprodKernel(KernelCtx& c) {
  const Tensor& x0 = c.in(0);
  requireDType(c, 0,
               {DType::U32, DType::U64, DType::I32, DType::I64, DType::F16, DType::F32, DType::F64,
                DType::BF16});
  const Tensor& a = c.in(1);
  AICC_CHECK(a.numel() == 1 && a.rank() <= 1 &&
                 (a.dtype() == DType::I32 || a.dtype() == DType::I64),
             "axis must be a 0-D int32/int64 tensor, got {} {}", dtypeName(a.dtype()),
             formatDims(a.shape()));
  AICC_CHECK(x0.rank() > 0, "input must have rank >= 1");
  const int64_t axis = normAxis(a.getI64(0), x0.rank());
  const bool exclusive = c.node.attrInt("exclusive") != 0;
  const bool reverse = c.node.attrInt("reverse") != 0;
  Tensor x = isReducedFloat(x0.dtype()) ? x0.castTo(DType::F32) : x0;
  Tensor y(x.dtype(), x.shape());
  visitNative(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) cumprodLoop<T>(x, y, axis, exclusive, reverse);
  });
  return {RValue::of(y.dtype() == x0.dtype() ? y : y.castTo(x0.dtype()))};
}

// ---- BitCast -----------------------------------------------------------------------------------

DType bitcastTarget(const Node& n) {
  int64_t to = n.attrInt("to");
  auto dt = dtypeFromOnnx(static_cast<int32_t>(to));
  AICC_CHECK(dt && *dt != DType::Undefined && *dt != DType::String,
             "attribute 'to' = {} is not a valid BitCast target type", to);
  return *dt;
}

void checkBitcastWidths(DType from, DType to) {
  AICC_CHECK(from != DType::String, "BitCast from string is not supported");
  AICC_CHECK(dtypeBits(from) == dtypeBits(to),
             "BitCast needs types of equal bit width, got {} ({} bits) and {} ({} bits)",
             dtypeName(from), dtypeBits(from), dtypeName(to), dtypeBits(to));
}

std::vector<RValue> bitcastKernel(KernelCtx& c) {
  const Tensor& x = c.in(0);
  const DType to = bitcastTarget(c.node);
  checkBitcastWidths(x.dtype(), to);
  Tensor y(to, x.shape());
  const int bits = dtypeBits(to);
  if (bits >= 8 && x.dtype() != DType::Bool && to != DType::Bool) {
    // Whole-byte types are stored as their exact little-endian bit patterns.
    if (x.nbytes() > 0) std::memcpy(y.raw(), x.raw(), x.nbytes());
    return {RValue::of(y)};
  }
  // Bytes (bool: normalized to 0/1) and sub-byte types, stored one element per byte.
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(y.raw());
  const auto mask = static_cast<uint8_t>(bits >= 8 ? 0xff : (1u << bits) - 1);
  const bool signExtend = to == DType::I4 || to == DType::I2;
  for (int64_t i = 0; i < x.numel(); ++i) {
    uint8_t v = src[i] & mask;
    if (to == DType::Bool)
      v = v != 0;
    else if (signExtend && (v >> (bits - 1)) != 0)
      v = static_cast<uint8_t>(v | ~mask);
    dst[i] = v;
  }
  return {RValue::of(y)};
}

void inferBitcast(InferCtx& c) {
  const DType to = bitcastTarget(c.node);
  if (DType from = c.inDType(0); from != DType::Undefined) checkBitcastWidths(from, to);
  c.setTensor(0, to, c.inShape(0));
}

} // namespace

void registerMiscOps(OpRegistry& r) {
  r.op("Shrink")
      .since(9)
      .inputs(1, 1)
      .attrFloat("bias", 0)
      .attrFloat("lambd", 0.5f)
      .props(kElementwise)
      .infer(inferSameAsInput0)
      .kernel(shrinkKernel);
  r.op("Det").since(11).inputs(1, 1).infer(inferDet).kernel(detKernel);
  r.op("CumProd")
      .since(26)
      .inputs(2, 2)
      .attrInt("exclusive", 0)
      .attrInt("reverse", 0)
      .infer(inferSameAsInput0)
      .kernel(cumprodKernel);
  r.op("BitCast")
      .since(26)
      .inputs(1, 1)
      .attr("to", Attribute::Kind::Int, true)
      .props(kElementwise)
      .infer(inferBitcast)
      .kernel(bitcastKernel);

  registerMiscVisionOps(r);
  registerMiscRandomOps(r);
  registerMiscImageOps(r);
}

} // namespace aicc
