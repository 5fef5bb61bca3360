// Gradient rules of Conv and ConvTranspose against float64 central finite differences: 1-D to
// 3-D, strides, pads, dilations, groups, auto_pad, output_padding / output_shape.
#include "nn_grad_test_util.h"

namespace aicc::test {
namespace {

struct ConvCase {
  const char* name;
  Dims x, w;
  std::map<std::string, Attribute> attrs;
  bool bias = true;
};

void runCases(const char* op, const std::vector<ConvCase>& cases, int biasDim) {
  uint32_t seed = 10;
  for (const auto& k : cases) {
    std::vector<GradCheckInput> in{{rnd(k.x, seed++)}, {rnd(k.w, seed++)}};
    if (k.bias) {
      int64_t g = k.attrs.count("group") ? std::get<int64_t>(k.attrs.at("group").v) : 1;
      int64_t m = biasDim == 0 ? k.w[0] : k.w[1] * g;
      in.push_back({rnd({m}, seed++)});
    }
    auto r = checkOpGradient(op, in, k.attrs);
    EXPECT_LT(r.maxRelError, kTol) << op << " " << k.name << ": " << r.worst;
  }
}

TEST(NnConvGrad, Conv) {
  runCases(
      "Conv",
      {
          {"2d basic", {2, 3, 5, 5}, {4, 3, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}},
          {"2d no bias", {1, 2, 4, 5}, {3, 2, 2, 2}, {}, false},
          {"2d strides pads dilations",
           {1, 2, 7, 8},
           {3, 2, 3, 2},
           {{"strides", ints({2, 2})}, {"pads", ints({1, 0, 2, 1})}, {"dilations", ints({1, 2})}}},
          {"2d groups",
           {2, 4, 5, 6},
           {6, 2, 3, 3},
           {{"group", i(2)}, {"strides", ints({2, 1})}, {"pads", ints({1, 1, 1, 1})}}},
          {"depthwise stride 2 (trailing rows unused)",
           {1, 3, 6, 6},
           {3, 1, 3, 3},
           {{"group", i(3)}, {"strides", ints({2, 2})}}},
          {"groups strides dilations",
           {2, 4, 8, 7},
           {4, 2, 2, 3},
           {{"group", i(2)}, {"strides", ints({3, 2})}, {"dilations", ints({2, 1})}}},
          {"1d",
           {2, 2, 9},
           {3, 2, 3},
           {{"strides", ints({3})}, {"dilations", ints({2})}, {"pads", ints({2, 0})}}},
          {"3d",
           {1, 2, 4, 5, 4},
           {2, 2, 2, 3, 2},
           {{"strides", ints({1, 2, 1})}, {"pads", ints({0, 1, 1, 1, 0, 0})}}},
          {"SAME_UPPER",
           {1, 2, 7, 6},
           {2, 2, 3, 3},
           {{"auto_pad", s("SAME_UPPER")}, {"strides", ints({2, 2})}}},
          {"SAME_LOWER",
           {1, 2, 7, 6},
           {2, 2, 2, 3},
           {{"auto_pad", s("SAME_LOWER")}, {"strides", ints({2, 1})}}},
          {"VALID",
           {1, 2, 7, 6},
           {2, 2, 3, 2},
           {{"auto_pad", s("VALID")}, {"strides", ints({2, 3})}}},
      },
      0);
}

TEST(NnConvGrad, ConvTranspose) {
  runCases("ConvTranspose",
           {
               {"2d basic", {2, 3, 3, 3}, {3, 2, 3, 3}, {}},
               {"2d strides pads output_padding",
                {1, 2, 3, 4},
                {2, 3, 3, 3},
                {{"strides", ints({2, 2})},
                 {"pads", ints({1, 1, 1, 1})},
                 {"output_padding", ints({1, 0})}}},
               {"groups dilations",
                {1, 4, 3, 3},
                {4, 2, 2, 2},
                {{"group", i(2)}, {"strides", ints({2, 1})}, {"dilations", ints({1, 2})}}},
               {"output_shape larger than the full output",
                {1, 2, 3, 3},
                {2, 2, 3, 3},
                {{"strides", ints({2, 2})}, {"output_shape", ints({8, 6})}}},
               {"SAME_UPPER",
                {1, 2, 3, 4},
                {2, 1, 3, 3},
                {{"auto_pad", s("SAME_UPPER")}, {"strides", ints({2, 2})}}},
               {"SAME_LOWER",
                {1, 2, 3, 4},
                {2, 1, 2, 3},
                {{"auto_pad", s("SAME_LOWER")}, {"strides", ints({2, 1})}}},
               {"1d",
                {2, 2, 4},
                {2, 3, 3},
                {{"strides", ints({3})}, {"pads", ints({1, 2})}, {"dilations", ints({2})}}},
               {"3d",
                {1, 2, 2, 3, 2},
                {2, 2, 2, 2, 3},
                {{"strides", ints({2, 1, 2})}, {"pads", ints({0, 1, 1, 1, 0, 0})}}},
               {"no bias", {1, 2, 3, 3}, {2, 2, 2, 2}, {}, false},
           },
           1);
}

} // namespace
} // namespace aicc::test
