// Gradient rules of MatMul, Gemm and Dropout against float64 central finite differences.
#include "nn_grad_test_util.h"

namespace aicc::test {
namespace {

TEST(NnGrad, MatMul) {
  struct Case {
    Dims a, b;
  };
  for (const Case& k : std::vector<Case>{{{3, 4}, {4, 5}},
                                         {{2, 3, 4}, {4, 2}},
                                         {{3, 4}, {2, 4, 5}},
                                         {{2, 1, 3, 4}, {3, 4, 2}}, // batch broadcasting
                                         {{4}, {4, 3}},
                                         {{2, 3, 4}, {4}},
                                         {{4}, {4}},
                                         {{4}, {2, 4, 3}}}) {
    auto r = checkOpGradient("MatMul", {{rnd(k.a, 1)}, {rnd(k.b, 2)}});
    EXPECT_LT(r.maxRelError, kTol)
        << formatDims(k.a) << " x " << formatDims(k.b) << ": " << r.worst;
  }
}

TEST(NnGrad, Gemm) {
  for (int64_t ta : {0, 1})
    for (int64_t tb : {0, 1})
      for (int cshape = 0; cshape < 4; ++cshape) {
        const int64_t M = 3, K = 4, N = 5;
        Dims a = ta ? Dims{K, M} : Dims{M, K}, b = tb ? Dims{N, K} : Dims{K, N};
        std::vector<GradCheckInput> in{{rnd(a, 3)}, {rnd(b, 4)}};
        if (cshape == 1) in.push_back({rnd({M, N}, 5)});
        if (cshape == 2) in.push_back({rnd({N}, 5)});
        if (cshape == 3) in.push_back({rnd({M, 1}, 5)});
        std::map<std::string, Attribute> attrs{{"transA", Attribute{ta}},
                                               {"transB", Attribute{tb}},
                                               {"alpha", Attribute{0.75f}},
                                               {"beta", Attribute{cshape == 1 ? 1.0f : -1.5f}}};
        auto r = checkOpGradient("Gemm", in, attrs);
        EXPECT_LT(r.maxRelError, kTol)
            << "transA " << ta << " transB " << tb << " C " << cshape << ": " << r.worst;
      }
  // Scalar C, default alpha / beta.
  auto r = checkOpGradient("Gemm", {{rnd({2, 3}, 6)}, {rnd({3, 2}, 7)}, {rnd({}, 8)}});
  EXPECT_LT(r.maxRelError, kTol) << r.worst;
}

TEST(NnGrad, Dropout) {
  // Inference (no training_mode, or false): the identity.
  auto r = checkOpGradient("Dropout", {{rnd({3, 4}, 1)}});
  EXPECT_LT(r.maxRelError, kTol) << r.worst;
  r = checkOpGradient("Dropout", {{rnd({3, 4}, 1)}, {scalarT(0.3), false}, {boolT(false), false}});
  EXPECT_LT(r.maxRelError, kTol) << r.worst;
  // Training with a fixed seed: the mask is reproducible, so finite differences apply. The mask
  // output both requested and not.
  for (int outs : {1, 2}) {
    std::map<std::string, Attribute> attrs{{"seed", Attribute{int64_t{7}}}};
    r = checkOpGradient("Dropout", {{rnd({4, 5}, 2)}, {scalarT(0.4), false}, {boolT(true), false}},
                        attrs, outs, {0});
    EXPECT_LT(r.maxRelError, kTol) << outs << ": " << r.worst;
    // ratio differentiated too (a float input: the mask is held fixed).
    r = checkOpGradient("Dropout", {{rnd({4, 5}, 2)}, {scalarT(0.4)}, {boolT(true), false}}, attrs,
                        outs, {0});
    EXPECT_LT(r.maxRelError, kTol) << outs << ": " << r.worst;
  }
}

} // namespace
} // namespace aicc::test
