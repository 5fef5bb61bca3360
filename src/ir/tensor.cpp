#include "ir/tensor.h"

#include "support/error.h"
#include "support/memory.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

namespace aicc {

int64_t checkedNumel(const Dims& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    AICC_CHECK(d >= 0, "{}: negative dimension in shape {}", what, formatDims(shape));
    if (d != 0 && n > kMaxTensorBytes / d)
      fail("{}: shape {} has too many elements (over {} bytes)", what, formatDims(shape),
           kMaxTensorBytes);
    n *= d;
  }
  return n;
}

std::string formatDims(const Dims& d) { return fmt::format("[{}]", fmt::join(d, ",")); }

Tensor::Tensor(DType dtype, Dims shape) : dtype_(dtype), shape_(std::move(shape)) {
  AICC_CHECK(dtype != DType::Undefined, "cannot create a tensor of undefined element type");
  numel_ = checkedNumel(shape_);
  if (dtype == DType::String) {
    strings_ = std::make_shared<std::vector<std::string>>(static_cast<size_t>(numel_));
    return;
  }
  size_t bytes = nbytes();
  AICC_CHECK(static_cast<int64_t>(bytes) <= kMaxTensorBytes,
             "tensor of shape {} ({}) needs {} bytes, over the {}-byte limit", formatDims(shape_),
             dtypeName(dtype), bytes, kMaxTensorBytes);
  const int64_t counted = int64_t(bytes);
  reserveMemory(counted,
                fmt::format("tensor of shape {} ({})", formatDims(shape_), dtypeName(dtype)));
  try {
    std::shared_ptr<std::byte[]> buf(new std::byte[bytes == 0 ? 1 : bytes](),
                                     [counted](std::byte* p) {
                                       delete[] p;
                                       releaseMemory(counted);
                                     });
    data_ = buf.get();
    owner_ = std::shared_ptr<const void>(buf, buf.get());
  } catch (const std::bad_alloc&) {
    releaseMemory(counted);
    fail("out of memory allocating {} bytes for a tensor of shape {}", bytes, formatDims(shape_));
  }
}

Tensor Tensor::view(DType dtype, Dims shape, std::shared_ptr<const void> owner, const void* data) {
  AICC_CHECK(dtype != DType::String, "string tensors cannot view raw memory");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = checkedNumel(t.shape_);
  t.owner_ = std::move(owner);
  // Views are read-only by convention: kernels always write fresh output tensors.
  t.data_ = const_cast<std::byte*>(static_cast<const std::byte*>(data));
  return t;
}

Tensor Tensor::scalar(DType dtype, double v) {
  Tensor t(dtype, {});
  t.setF64(0, v);
  return t;
}

Tensor Tensor::fromI64(const std::vector<int64_t>& v, Dims shape) {
  if (shape.empty() && v.size() != 1) shape = {static_cast<int64_t>(v.size())};
  if (shape.empty() && v.size() == 1) shape = {1};
  Tensor t(DType::I64, shape);
  AICC_CHECK(t.numel() == static_cast<int64_t>(v.size()), "fromI64: size mismatch");
  if (!v.empty()) std::memcpy(t.raw(), v.data(), v.size() * sizeof(int64_t));
  return t;
}

Tensor Tensor::fromF32(const std::vector<float>& v, Dims shape) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  Tensor t(DType::F32, shape);
  AICC_CHECK(t.numel() == static_cast<int64_t>(v.size()), "fromF32: size mismatch");
  if (!v.empty()) std::memcpy(t.raw(), v.data(), v.size() * sizeof(float));
  return t;
}

double Tensor::getF64(int64_t i) const {
  switch (dtype_) {
  case DType::F32: return data<float>()[i];
  case DType::F64: return data<double>()[i];
  case DType::I8: case DType::I4: case DType::I2: return data<int8_t>()[i];
  case DType::I16: return data<int16_t>()[i];
  case DType::I32: return data<int32_t>()[i];
  case DType::I64: return static_cast<double>(data<int64_t>()[i]);
  case DType::U8: case DType::U4: case DType::U2: return data<uint8_t>()[i];
  case DType::U16: return data<uint16_t>()[i];
  case DType::U32: return data<uint32_t>()[i];
  case DType::U64: return static_cast<double>(data<uint64_t>()[i]);
  case DType::Bool: return data<uint8_t>()[i] ? 1.0 : 0.0;
  case DType::F16: case DType::BF16: return reducedToFloat(dtype_, data<uint16_t>()[i]);
  case DType::F8E4M3FN: case DType::F8E4M3FNUZ: case DType::F8E5M2: case DType::F8E5M2FNUZ:
  case DType::F4E2M1: case DType::F8E8M0:
    return reducedToFloat(dtype_, data<uint8_t>()[i]);
  case DType::C64: return data<float>()[2 * i];
  case DType::C128: return data<double>()[2 * i];
  default: fail("element type {} has no numeric value", dtypeName(dtype_));
  }
}

int64_t Tensor::getI64(int64_t i) const {
  switch (dtype_) {
  case DType::I64: return data<int64_t>()[i];
  case DType::U64: return static_cast<int64_t>(data<uint64_t>()[i]);
  case DType::I32: return data<int32_t>()[i];
  case DType::U32: return data<uint32_t>()[i];
  default: {
    double v = getF64(i);
    AICC_CHECK(std::isfinite(v), "non-finite value {} where an integer was expected", v);
    return static_cast<int64_t>(v);
  }
  }
}

template <typename T> static T clampCast(double v) {
  // float -> integer conversion of out-of-range values is UB in C++; saturate instead.
  if (std::isnan(v)) return T{0};
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

void Tensor::setF64(int64_t i, double v) {
  switch (dtype_) {
  case DType::F32: data<float>()[i] = static_cast<float>(v); return;
  case DType::F64: data<double>()[i] = v; return;
  case DType::I8: data<int8_t>()[i] = clampCast<int8_t>(v); return;
  case DType::I16: data<int16_t>()[i] = clampCast<int16_t>(v); return;
  case DType::I32: data<int32_t>()[i] = clampCast<int32_t>(v); return;
  case DType::I64: data<int64_t>()[i] = clampCast<int64_t>(v); return;
  case DType::U8: data<uint8_t>()[i] = clampCast<uint8_t>(v); return;
  case DType::U16: data<uint16_t>()[i] = clampCast<uint16_t>(v); return;
  case DType::U32: data<uint32_t>()[i] = clampCast<uint32_t>(v); return;
  case DType::U64: data<uint64_t>()[i] = clampCast<uint64_t>(v); return;
  case DType::I4: data<int8_t>()[i] = static_cast<int8_t>(std::clamp(clampCast<int64_t>(v), int64_t{-8}, int64_t{7})); return;
  case DType::U4: data<uint8_t>()[i] = static_cast<uint8_t>(std::clamp(clampCast<int64_t>(v), int64_t{0}, int64_t{15})); return;
  case DType::I2: data<int8_t>()[i] = static_cast<int8_t>(std::clamp(clampCast<int64_t>(v), int64_t{-2}, int64_t{1})); return;
  case DType::U2: data<uint8_t>()[i] = static_cast<uint8_t>(std::clamp(clampCast<int64_t>(v), int64_t{0}, int64_t{3})); return;
  case DType::Bool: data<uint8_t>()[i] = v != 0 ? 1 : 0; return;
  case DType::F16: case DType::BF16:
    data<uint16_t>()[i] = static_cast<uint16_t>(floatToReduced(dtype_, static_cast<float>(v))); return;
  case DType::F8E4M3FN: case DType::F8E4M3FNUZ: case DType::F8E5M2: case DType::F8E5M2FNUZ:
  case DType::F4E2M1: case DType::F8E8M0:
    data<uint8_t>()[i] = static_cast<uint8_t>(floatToReduced(dtype_, static_cast<float>(v))); return;
  case DType::C64: data<float>()[2 * i] = static_cast<float>(v); data<float>()[2 * i + 1] = 0; return;
  case DType::C128: data<double>()[2 * i] = v; data<double>()[2 * i + 1] = 0; return;
  default: fail("element type {} has no numeric value", dtypeName(dtype_));
  }
}

void Tensor::setI64(int64_t i, int64_t v) {
  switch (dtype_) {
  case DType::I64: data<int64_t>()[i] = v; return;
  case DType::U64: data<uint64_t>()[i] = static_cast<uint64_t>(v); return;
  case DType::I32: data<int32_t>()[i] = static_cast<int32_t>(v); return;
  case DType::U32: data<uint32_t>()[i] = static_cast<uint32_t>(v); return;
  default: setF64(i, static_cast<double>(v)); return;
  }
}

std::complex<double> Tensor::getC(int64_t i) const {
  if (dtype_ == DType::C64) return {data<float>()[2 * i], data<float>()[2 * i + 1]};
  if (dtype_ == DType::C128) return {data<double>()[2 * i], data<double>()[2 * i + 1]};
  return {getF64(i), 0.0};
}

void Tensor::setC(int64_t i, std::complex<double> v) {
  if (dtype_ == DType::C64) {
    data<float>()[2 * i] = static_cast<float>(v.real());
    data<float>()[2 * i + 1] = static_cast<float>(v.imag());
  } else if (dtype_ == DType::C128) {
    data<double>()[2 * i] = v.real();
    data<double>()[2 * i + 1] = v.imag();
  } else {
    setF64(i, v.real());
  }
}

std::vector<int64_t> Tensor::toI64Vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[static_cast<size_t>(i)] = getI64(i);
  return v;
}

std::vector<double> Tensor::toF64Vector() const {
  std::vector<double> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[static_cast<size_t>(i)] = getF64(i);
  return v;
}

Tensor Tensor::reshaped(Dims shape) const {
  int64_t n = checkedNumel(shape);
  AICC_CHECK(n == numel_, "cannot reshape {} elements to {}", numel_, formatDims(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t(dtype_, shape_);
  if (dtype_ == DType::String) *t.strings_ = *strings_;
  else if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

Tensor Tensor::castTo(DType to, bool saturate) const {
  if (to == dtype_) return *this;
  Tensor t(to, shape_);
  AICC_CHECK(dtype_ != DType::String && to != DType::String,
             "cast between {} and {} is not a numeric cast", dtypeName(dtype_), dtypeName(to));
  bool intPath = isInteger(dtype_) && isInteger(to);
  for (int64_t i = 0; i < numel_; ++i) {
    if (isComplex(to)) t.setC(i, getC(i));
    else if (intPath) t.setI64(i, getI64(i));
    else if (isReducedFloat(to) && to != DType::F16 && to != DType::BF16)
      t.data<uint8_t>()[i] = static_cast<uint8_t>(floatToReduced(to, static_cast<float>(getF64(i)), saturate));
    else t.setF64(i, getF64(i));
  }
  return t;
}

bool Tensor::sameAs(const Tensor& o) const {
  if (dtype_ != o.dtype_ || shape_ != o.shape_) return false;
  if (dtype_ == DType::String) {
    for (int64_t i = 0; i < numel_; ++i)
      if (strings()[i] != o.strings()[i]) return false;
    return true;
  }
  return nbytes() == 0 || std::memcmp(data_, o.data_, nbytes()) == 0;
}

} // namespace aicc
