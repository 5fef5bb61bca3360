// Gradient rules of MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool against float64
// central finite differences (random inputs: no ties between window elements).
#include "nn_grad_test_util.h"

namespace aicc::test {
namespace {

struct PoolCase {
  const char* name;
  Dims x;
  std::map<std::string, Attribute> attrs;
};

TEST(NnPoolGrad, MaxPool) {
  std::vector<PoolCase> cases{
      {"2x2 stride 2", {2, 3, 4, 6}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}}},
      {"3x3 overlapping pads",
       {1, 2, 5, 5},
       {{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}}},
      {"dilations strides",
       {1, 2, 7, 8},
       {{"kernel_shape", ints({2, 3})}, {"dilations", ints({2, 1})}, {"strides", ints({1, 2})}}},
      {"ceil_mode",
       {1, 2, 5, 6},
       {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}, {"ceil_mode", i(1)}}},
      {"SAME_UPPER",
       {1, 1, 5, 7},
       {{"kernel_shape", ints({3, 2})}, {"strides", ints({2, 2})}, {"auto_pad", s("SAME_UPPER")}}},
      {"1d",
       {2, 2, 9},
       {{"kernel_shape", ints({3})}, {"strides", ints({2})}, {"pads", ints({1, 0})}}},
      {"3d", {1, 2, 4, 4, 3}, {{"kernel_shape", ints({2, 2, 2})}, {"strides", ints({2, 1, 1})}}},
  };
  uint32_t seed = 30;
  for (const auto& k : cases)
    for (int64_t storage : {0, 1})
      for (int outs : {1, 2}) { // with and without the Indices output in the forward model
        auto attrs = k.attrs;
        if (storage) attrs["storage_order"] = i(1);
        auto r = checkOpGradient("MaxPool", {{rnd(k.x, seed++)}}, attrs, outs, {0});
        EXPECT_LT(r.maxRelError, kTol)
            << k.name << " storage_order " << storage << " outputs " << outs << ": " << r.worst;
      }
}

TEST(NnPoolGrad, AveragePool) {
  std::vector<PoolCase> cases{
      {"2x2 stride 2", {2, 3, 4, 6}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}}},
      {"3x3 pads", {1, 2, 5, 5}, {{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 2, 1, 0})}}},
      {"strides dilations pads",
       {1, 2, 7, 8},
       {{"kernel_shape", ints({2, 3})},
        {"dilations", ints({2, 1})},
        {"strides", ints({1, 2})},
        {"pads", ints({1, 1, 0, 1})}}},
      {"ceil_mode",
       {1, 2, 5, 6},
       {{"kernel_shape", ints({3, 2})},
        {"strides", ints({2, 2})},
        {"ceil_mode", i(1)},
        {"pads", ints({1, 0, 0, 1})}}},
      {"stride 2 unused trailing row",
       {1, 1, 6, 6},
       {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}}},
      {"SAME_LOWER",
       {1, 1, 5, 7},
       {{"kernel_shape", ints({3, 2})}, {"strides", ints({2, 2})}, {"auto_pad", s("SAME_LOWER")}}},
      {"1d",
       {2, 2, 9},
       {{"kernel_shape", ints({3})}, {"strides", ints({2})}, {"pads", ints({1, 1})}}},
      {"3d",
       {1, 2, 4, 4, 3},
       {{"kernel_shape", ints({2, 2, 2})},
        {"strides", ints({2, 1, 1})},
        {"pads", ints({0, 1, 0, 1, 0, 1})}}},
  };
  uint32_t seed = 60;
  for (const auto& k : cases)
    for (int64_t includePad : {0, 1}) {
      auto attrs = k.attrs;
      attrs["count_include_pad"] = i(includePad);
      auto r = checkOpGradient("AveragePool", {{rnd(k.x, seed++)}}, attrs);
      EXPECT_LT(r.maxRelError, kTol)
          << k.name << " count_include_pad " << includePad << ": " << r.worst;
    }
}

TEST(NnPoolGrad, GlobalPools) {
  uint32_t seed = 90;
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"})
    for (const Dims& x : {Dims{2, 3, 4, 5}, Dims{2, 3, 7}, Dims{1, 2, 3, 2, 2}, Dims{2, 3}}) {
      auto r = checkOpGradient(op, {{rnd(x, seed++)}});
      EXPECT_LT(r.maxRelError, kTol) << op << " " << formatDims(x) << ": " << r.worst;
    }
}

} // namespace
} // namespace aicc::test
