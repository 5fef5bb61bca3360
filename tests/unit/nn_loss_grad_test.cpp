// Gradient rules of SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss against float64
// central finite differences: reductions none / sum / mean, class weights, ignore_index,
// extra dims, the log_prob output.
#include "nn_grad_test_util.h"

namespace aicc::test {
namespace {

struct LossCase {
  const char* name;
  Dims x;
  std::vector<int64_t> target;
  bool weights;
  std::optional<int64_t> ignore;
};

std::vector<LossCase> lossCases() {
  return {
      {"[N, C]", {4, 3}, {0, 2, 1, 2}, false, {}},
      {"[N, C] weights", {4, 3}, {0, 2, 1, 2}, true, {}},
      {"[N, C] ignore", {4, 3}, {0, 2, 1, 2}, false, 2},
      {"[N, C, D] weights ignore -1", {2, 3, 3}, {0, -1, 2, 1, 1, -1}, true, -1},
      {"[N, C, D1, D2] ignore", {2, 4, 2, 2}, {3, 0, 1, 1, 2, 3, 0, 0}, true, 0},
  };
}

void runLoss(const char* op, bool logProb) {
  uint32_t seed = 200;
  for (const auto& k : lossCases())
    for (const char* red : {"none", "sum", "mean"}) {
      Dims tshape{k.x[0]};
      tshape.insert(tshape.end(), k.x.begin() + 2, k.x.end());
      std::vector<GradCheckInput> in{{rnd(k.x, seed++, -2, 2)}, {i64T(k.target, tshape), false}};
      if (k.weights) in.push_back({rnd({k.x[1]}, seed++, 0.2, 2.0)});
      std::map<std::string, Attribute> attrs{{"reduction", s(red)}};
      if (k.ignore) attrs["ignore_index"] = i(*k.ignore);
      auto r = checkOpGradient(op, in, attrs, logProb ? 2 : 1);
      EXPECT_LT(r.maxRelError, kTol)
          << op << " " << k.name << " reduction " << red << ": " << r.worst;
    }
}

TEST(NnLossGrad, SoftmaxCrossEntropyLoss) {
  runLoss("SoftmaxCrossEntropyLoss", false);
  runLoss("SoftmaxCrossEntropyLoss", true);
}

TEST(NnLossGrad, NegativeLogLikelihoodLoss) { runLoss("NegativeLogLikelihoodLoss", false); }

TEST(NnLossGrad, Int32Targets) {
  Tensor t(DType::I32, {3});
  for (int64_t k = 0; k < 3; ++k) t.setF64(k, static_cast<double>(k));
  auto r = checkOpGradient("SoftmaxCrossEntropyLoss", {{rnd({3, 4}, 7)}, {t, false}});
  EXPECT_LT(r.maxRelError, kTol) << r.worst;
}

} // namespace
} // namespace aicc::test
