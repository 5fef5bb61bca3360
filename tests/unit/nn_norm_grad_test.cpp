// Gradient rules of BatchNormalization (inference and training), LayerNormalization and
// InstanceNormalization against float64 central finite differences.
#include "nn_grad_test_util.h"

namespace aicc::test {
namespace {

TEST(NnNormGrad, BatchNormalizationInference) {
  uint32_t seed = 100;
  for (const Dims& x : {Dims{2, 3, 4, 5}, Dims{4, 3}, Dims{2, 3, 5}}) {
    const int64_t C = x[1];
    std::vector<GradCheckInput> in{{rnd(x, seed++)},
                                   {rnd({C}, seed++)},
                                   {rnd({C}, seed++)},
                                   {rnd({C}, seed++)},
                                   {rnd({C}, seed++, 0.5, 1.5)}};
    auto r = checkOpGradient("BatchNormalization", in, {{"epsilon", f(0.01f)}});
    EXPECT_LT(r.maxRelError, kTol) << formatDims(x) << ": " << r.worst;
  }
}

TEST(NnNormGrad, BatchNormalizationTraining) {
  uint32_t seed = 120;
  for (const Dims& x : {Dims{3, 2, 3, 4}, Dims{5, 3}, Dims{2, 3, 4}})
    for (int outs : {1, 3, 5}) { // Y; + running mean / var; + saved mean / var (legacy)
      const int64_t C = x[1];
      std::vector<GradCheckInput> in{{rnd(x, seed++)},
                                     {rnd({C}, seed++)},
                                     {rnd({C}, seed++)},
                                     {rnd({C}, seed++)},
                                     {rnd({C}, seed++, 0.5, 1.5)}};
      std::map<std::string, Attribute> attrs{{"training_mode", i(1)}, {"momentum", f(0.75f)}};
      auto r = checkOpGradient("BatchNormalization", in, attrs, outs);
      EXPECT_LT(r.maxRelError, kTol) << formatDims(x) << " outputs " << outs << ": " << r.worst;
    }
}

TEST(NnNormGrad, LayerNormalization) {
  struct Case {
    Dims x;
    int64_t axis;
    Dims scale;
    bool bias;
  };
  uint32_t seed = 140;
  for (const Case& k : std::vector<Case>{{{2, 3, 4}, -1, {4}, true},
                                         {{2, 3, 4}, 1, {3, 4}, true},
                                         {{2, 3, 4}, 1, {4}, false}, // scale broadcast
                                         {{2, 3, 4}, 0, {2, 3, 4}, true},
                                         {{3, 5}, -1, {5}, true}})
    for (int outs : {1, 3}) {
      std::vector<GradCheckInput> in{{rnd(k.x, seed++)}, {rnd(k.scale, seed++)}};
      if (k.bias) in.push_back({rnd(k.scale, seed++)});
      // stash_type f64 so the Mean / InvStdDev outputs are exact enough for differences.
      std::map<std::string, Attribute> attrs{{"axis", i(k.axis)}, {"stash_type", i(11)}};
      auto r = checkOpGradient("LayerNormalization", in, attrs, outs);
      EXPECT_LT(r.maxRelError, kTol)
          << formatDims(k.x) << " axis " << k.axis << " outputs " << outs << ": " << r.worst;
    }
}

TEST(NnNormGrad, InstanceNormalization) {
  uint32_t seed = 160;
  for (const Dims& x : {Dims{2, 3, 4, 5}, Dims{2, 3, 5}, Dims{1, 2, 2, 3, 2}}) {
    const int64_t C = x[1];
    auto r = checkOpGradient("InstanceNormalization",
                             {{rnd(x, seed++)}, {rnd({C}, seed++)}, {rnd({C}, seed++)}},
                             {{"epsilon", f(0.01f)}});
    EXPECT_LT(r.maxRelError, kTol) << formatDims(x) << ": " << r.worst;
  }
}

} // namespace
} // namespace aicc::test
