// Tensor: a dense, row-major array with an element type and a shape. Storage is shared and
// reference-counted, so copying a Tensor (e.g. a weight from the graph into the interpreter) never
// copies data. Weights may point into a memory-mapped external-data file.
#pragma once

#include "ir/dtype.h"

#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace aicc {

using Dims = std::vector<int64_t>;

// Largest tensor aicc allocates (bytes); bigger requests fail with a clear error, not bad_alloc.
constexpr int64_t kMaxTensorBytes = int64_t{16} << 30;

// Number of elements of `shape`; throws on negative dims or overflow past kMaxTensorBytes
// worth of elements. `what` names the tensor in the message.
int64_t checkedNumel(const Dims& shape, const std::string& what = "tensor");

std::string formatDims(const Dims& d); // "[1,3,224,224]"

class Tensor {
public:
  Tensor() = default; // undefined tensor
  // Zero-initialized tensor.
  Tensor(DType dtype, Dims shape);
  // A tensor viewing `data` (bytes in aicc's in-memory layout), kept alive by `owner`.
  static Tensor view(DType dtype, Dims shape, std::shared_ptr<const void> owner, const void* data);
  static Tensor scalar(DType dtype, double v); // rank-0 tensor holding v (cast to dtype)
  static Tensor fromI64(const std::vector<int64_t>& v, Dims shape = {});   // i64, 1-D by default
  static Tensor fromF32(const std::vector<float>& v, Dims shape = {});     // f32, 1-D by default

  bool defined() const { return dtype_ != DType::Undefined; }
  DType dtype() const { return dtype_; }
  const Dims& shape() const { return shape_; }
  int64_t dim(int64_t i) const { return shape_.at(static_cast<size_t>(i)); }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtypeSize(dtype_); }

  template <typename T> T* data() { return reinterpret_cast<T*>(data_); }
  template <typename T> const T* data() const { return reinterpret_cast<const T*>(data_); }
  void* raw() { return data_; }
  const void* raw() const { return data_; }
  std::string* strings() { return strings_->data(); }
  const std::string* strings() const { return strings_->data(); }

  // Generic element access for any numeric type (slow path, used where clarity matters more
  // than speed). Reduced floats go through float; bool reads as 0/1.
  double getF64(int64_t i) const;
  int64_t getI64(int64_t i) const;
  void setF64(int64_t i, double v);
  void setI64(int64_t i, int64_t v);
  std::complex<double> getC(int64_t i) const;
  void setC(int64_t i, std::complex<double> v);

  // All elements as int64 (for shape-like inputs: axes, pads, shapes, indices).
  std::vector<int64_t> toI64Vector() const;
  std::vector<double> toF64Vector() const;

  Tensor reshaped(Dims shape) const; // same storage, new shape (numel must match)
  Tensor clone() const;              // deep copy
  Tensor castTo(DType to, bool saturate = true) const;

  // Same dtype, shape and values (bitwise for floats except that NaN == NaN).
  bool sameAs(const Tensor& o) const;

private:
  DType dtype_ = DType::Undefined;
  Dims shape_;
  int64_t numel_ = 0;
  std::shared_ptr<const void> owner_;
  std::byte* data_ = nullptr;
  std::shared_ptr<std::vector<std::string>> strings_;
};

// Calls f(T{}) with the C++ storage type of a numeric dtype that has one
// (f32, f64, i8..i64, u8..u64, bool); returns false when dtype has no native type.
template <typename F> bool visitNative(DType t, F&& f) {
  switch (t) {
  case DType::F32: f(float{}); return true;
  case DType::F64: f(double{}); return true;
  case DType::I8: f(int8_t{}); return true;
  case DType::I16: f(int16_t{}); return true;
  case DType::I32: f(int32_t{}); return true;
  case DType::I64: f(int64_t{}); return true;
  case DType::U8: f(uint8_t{}); return true;
  case DType::U16: f(uint16_t{}); return true;
  case DType::U32: f(uint32_t{}); return true;
  case DType::U64: f(uint64_t{}); return true;
  case DType::Bool: f(bool{}); return true;
  default: return false;
  }
}

} // namespace aicc
