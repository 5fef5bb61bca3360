// Element types and tensors: names, reduced-float conversions against known bit patterns, size
// checks, TensorProto round trips (typed fields, raw data, packed sub-byte types).
#include "frontend/onnx/tensor_proto.h"
#include "ir/tensor.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cmath>

using namespace aicc;

TEST(DType, NamesRoundTrip) {
  for (int c = 1; c <= kMaxDTypeCode; ++c) {
    DType t = *dtypeFromOnnx(c);
    EXPECT_EQ(dtypeFromName(dtypeName(t)), t) << c;
  }
  EXPECT_FALSE(dtypeFromOnnx(0));
  EXPECT_FALSE(dtypeFromOnnx(99));
  EXPECT_FALSE(dtypeFromName("f31"));
}

TEST(DType, HalfAndBfloat16KnownBits) {
  EXPECT_EQ(floatToReduced(DType::F16, 1.0f), 0x3c00u);
  EXPECT_EQ(floatToReduced(DType::F16, -2.0f), 0xc000u);
  EXPECT_EQ(floatToReduced(DType::F16, 65504.0f), 0x7bffu);
  EXPECT_EQ(floatToReduced(DType::F16, 1e6f), 0x7c00u);               // overflow -> inf
  EXPECT_EQ(floatToReduced(DType::F16, 5.960464477539063e-08f), 1u); // smallest subnormal
  EXPECT_FLOAT_EQ(reducedToFloat(DType::F16, 0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isnan(reducedToFloat(DType::F16, 0x7e00)));
  EXPECT_EQ(floatToReduced(DType::BF16, 1.0f), 0x3f80u);
  EXPECT_EQ(floatToReduced(DType::BF16, 1.00390625f), 0x3f80u); // tie -> even
  EXPECT_EQ(floatToReduced(DType::BF16, 1.01171875f), 0x3f82u); // tie -> even (up)
  // Every f16 value survives f16 -> f32 -> f16.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = reducedToFloat(DType::F16, b);
    if (!std::isnan(f)) {
      ASSERT_EQ(floatToReduced(DType::F16, f), b) << b;
    }
  }
}

TEST(DType, Float8KnownValues) {
  EXPECT_EQ(reducedToFloat(DType::F8E4M3FN, 0x7e), 448.0f);
  EXPECT_TRUE(std::isnan(reducedToFloat(DType::F8E4M3FN, 0x7f)));
  EXPECT_EQ(floatToReduced(DType::F8E4M3FN, 1000.0f, true), 0x7eu);  // saturates
  EXPECT_EQ(floatToReduced(DType::F8E4M3FN, 1000.0f, false), 0x7fu); // NaN
  EXPECT_EQ(reducedToFloat(DType::F8E5M2, 0x7b), 57344.0f);
  EXPECT_TRUE(std::isinf(reducedToFloat(DType::F8E5M2, 0x7c)));
  EXPECT_EQ(reducedToFloat(DType::F8E4M3FNUZ, 0x7f), 240.0f);
  EXPECT_TRUE(std::isnan(reducedToFloat(DType::F8E4M3FNUZ, 0x80)));
  EXPECT_EQ(reducedToFloat(DType::F4E2M1, 0x7), 6.0f);
  EXPECT_EQ(reducedToFloat(DType::F4E2M1, 0xf), -6.0f);
  EXPECT_EQ(floatToReduced(DType::F4E2M1, 2.5f), 0x4u); // tie between 2 (0x4) and 3 (0x5) -> even
  for (DType t : {DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2, DType::F8E5M2FNUZ})
    for (uint32_t b = 0; b < 256; ++b) {
      float f = reducedToFloat(t, b);
      if (!std::isnan(f)) {
        ASSERT_EQ(floatToReduced(t, f, false), b) << dtypeName(t) << " " << b;
      }
    }
}

TEST(Tensor, SizeLimits) {
  EXPECT_THROW(Tensor(DType::F32, {int64_t{1} << 40}), Error);
  EXPECT_THROW(Tensor(DType::F32, {-1}), Error);
  EXPECT_THROW(checkedNumel({int64_t{1} << 32, int64_t{1} << 32}), Error); // overflow
  EXPECT_EQ(Tensor(DType::F32, {0, 5}).numel(), 0);
}

TEST(Tensor, GenericAccessAndCast) {
  Tensor t(DType::I64, {3});
  t.setI64(0, (int64_t{1} << 60) + 1);
  EXPECT_EQ(t.getI64(0), (int64_t{1} << 60) + 1);
  Tensor f = Tensor::fromF32({1.5f, -2.5f, 300.0f});
  Tensor u8 = f.castTo(DType::U8);
  EXPECT_EQ(u8.getI64(2), 255); // saturating
  EXPECT_EQ(f.castTo(DType::F16).getF64(1), -2.5);
}

static Tensor roundTrip(const Tensor& t) {
  onnx::TensorProto p;
  tensorToProto(t, "t", p);
  return tensorFromProto(p, nullptr, nullptr);
}

TEST(TensorProto, RoundTripAllTypes) {
  for (int c = 1; c <= kMaxDTypeCode; ++c) {
    DType dt = *dtypeFromOnnx(c);
    Tensor t(dt, {2, 3});
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (dt == DType::String) t.strings()[i] = "s" + std::to_string(i);
      else if (dt == DType::Bool) t.setI64(i, i % 2);
      else if (dt == DType::U2 || dt == DType::I2) t.setI64(i, i % 2);
      else t.setF64(i, static_cast<double>(i % 4));
    }
    EXPECT_TRUE(roundTrip(t).sameAs(t)) << dtypeName(dt);
  }
}

TEST(TensorProto, TypedFieldsAndPacking) {
  onnx::TensorProto p;
  p.set_data_type(static_cast<int>(DType::I4)); // newer than Debian's onnx.proto
  p.add_dims(3);
  p.set_raw_data(std::string("\xf7\x08", 2)); // low nibble first: 7, -1, -8
  Tensor t = tensorFromProto(p, nullptr, nullptr);
  EXPECT_EQ(t.toI64Vector(), (std::vector<int64_t>{7, -1, -8}));

  onnx::TensorProto q;
  q.set_name("q");
  q.set_data_type(onnx::TensorProto::FLOAT);
  q.add_dims(2);
  q.add_float_data(1.0f);
  EXPECT_THROW(tensorFromProto(q, nullptr, nullptr), Error); // 1 value for 2 elements
  q.add_float_data(2.0f);
  EXPECT_EQ(tensorFromProto(q, nullptr, nullptr).toF64Vector(), (std::vector<double>{1, 2}));
  q.set_raw_data("abc"); // raw data wins; 3 bytes is wrong for 2 floats
  EXPECT_THROW(tensorFromProto(q, nullptr, nullptr), Error);
}
