// Gradient rules of RNN, GRU and LSTM (unrolled backpropagation through time) against float64
// central finite differences: directions, layouts, biases, initial states, peepholes, clip,
// linear_before_reset, input_forget, custom activations, every output feeding the loss.
#include "nn_grad_test_util.h"

namespace aicc::test {
namespace {

struct RnnCase {
  const char* name;
  std::map<std::string, Attribute> attrs;
  bool bias = true, h0 = true, c0 = true, peep = true, seqLens = false;
  int64_t T = 3, B = 2, I = 3, H = 2;
};

void runRnn(const char* op, int gates, const std::vector<RnnCase>& cases) {
  const bool lstm = std::string(op) == "LSTM";
  uint32_t seed = 300;
  for (const auto& k : cases) {
    auto dirAttr = k.attrs.find("direction");
    const int64_t dirs =
        dirAttr != k.attrs.end() && std::get<std::string>(dirAttr->second.v) == "bidirectional" ? 2
                                                                                                : 1;
    auto lay = k.attrs.find("layout");
    const bool layout1 = lay != k.attrs.end() && std::get<int64_t>(lay->second.v) != 0;
    Dims x = layout1 ? Dims{k.B, k.T, k.I} : Dims{k.T, k.B, k.I};
    Dims st = layout1 ? Dims{k.B, dirs, k.H} : Dims{dirs, k.B, k.H};
    const double a = 0.8;
    std::vector<GradCheckInput> in{{rnd(x, seed++)},
                                   {rnd({dirs, gates * k.H, k.I}, seed++, -a, a)},
                                   {rnd({dirs, gates * k.H, k.H}, seed++, -a, a)}};
    in.push_back(k.bias ? GradCheckInput{rnd({dirs, 2 * gates * k.H}, seed++, -a, a)}
                        : GradCheckInput{Tensor(), false, true});
    in.push_back(
        k.seqLens ? GradCheckInput{i64T(std::vector<int64_t>(static_cast<size_t>(k.B), k.T), {k.B}),
                                   false}
                  : GradCheckInput{Tensor(), false, true});
    in.push_back(k.h0 ? GradCheckInput{rnd(st, seed++)} : GradCheckInput{Tensor(), false, true});
    if (lstm) {
      in.push_back(k.c0 ? GradCheckInput{rnd(st, seed++)} : GradCheckInput{Tensor(), false, true});
      if (k.peep) in.push_back({rnd({dirs, 3 * k.H}, seed++, -a, a)});
    }
    auto attrs = k.attrs;
    attrs["hidden_size"] = i(k.H);
    const int outs = lstm ? 3 : 2;
    auto r = checkOpGradient(op, in, attrs, outs);
    EXPECT_LT(r.maxRelError, kTol) << op << " " << k.name << ": " << r.worst;
    // Only Y feeding the loss.
    r = checkOpGradient(op, in, attrs, outs, {0});
    EXPECT_LT(r.maxRelError, kTol) << op << " " << k.name << " (Y only): " << r.worst;
  }
}

Attribute strs(std::vector<std::string> v) { return Attribute{std::move(v)}; }
Attribute floats(std::vector<float> v) { return Attribute{std::move(v)}; }

TEST(NnRnnGrad, RNN) {
  runRnn("RNN", 1,
         {
             {"forward", {}},
             {"reverse no bias", {{"direction", s("reverse")}}, false},
             {"bidirectional layout 1", {{"direction", s("bidirectional")}, {"layout", i(1)}}},
             {"no initial state, clip", {{"clip", f(0.6f)}}, true, false},
             {"relu / affine activations",
              {{"direction", s("bidirectional")},
               {"activations", strs({"Relu", "Affine"})},
               {"activation_alpha", floats({0.7f})},
               {"activation_beta", floats({0.2f})}}},
             {"sequence_lens all full", {}, true, true, true, true, true},
         });
}

TEST(NnRnnGrad, GRU) {
  runRnn("GRU", 3,
         {
             {"forward", {}},
             {"linear_before_reset", {{"linear_before_reset", i(1)}}},
             {"reverse no bias", {{"direction", s("reverse")}}, false},
             {"bidirectional layout 1 lbr",
              {{"direction", s("bidirectional")}, {"layout", i(1)}, {"linear_before_reset", i(1)}}},
             {"bidirectional", {{"direction", s("bidirectional")}}, true, false},
             {"clip", {{"clip", f(0.5f)}}},
             {"hardsigmoid / softsign",
              {{"activations", strs({"HardSigmoid", "Softsign"})},
               {"activation_alpha", floats({0.3f})},
               {"activation_beta", floats({0.4f})}}},
         });
}

TEST(NnRnnGrad, LSTM) {
  runRnn("LSTM", 4,
         {
             {"forward", {}},
             {"no peepholes no bias", {}, false, true, true, false},
             {"reverse", {{"direction", s("reverse")}}},
             {"bidirectional layout 1", {{"direction", s("bidirectional")}, {"layout", i(1)}}},
             {"no initial states", {{"direction", s("bidirectional")}}, true, false, false},
             {"input_forget", {{"input_forget", i(1)}}},
             {"clip", {{"clip", f(0.7f)}}},
             {"custom activations",
              {{"activations", strs({"ScaledTanh", "Softplus", "Elu"})},
               {"activation_alpha", floats({0.9f, 0.8f})},
               {"activation_beta", floats({1.3f})}}},
             {"leakyrelu / thresholdedrelu",
              {{"activations", strs({"Sigmoid", "LeakyRelu", "ThresholdedRelu"})},
               {"activation_alpha", floats({0.2f, 0.1f})}}},
             {"sequence_lens all full", {}, true, true, true, true, true},
         });
}

// Variable sequence lengths are not unrolled: a clear error, never a wrong gradient.
TEST(NnRnnGrad, VariableSequenceLengthsAreAnError) {
  std::vector<GradCheckInput> in{{rnd({3, 2, 3}, 1)},
                                 {rnd({1, 8, 3}, 2)},
                                 {rnd({1, 8, 2}, 3)},
                                 {Tensor(), false, true},
                                 {i64T({3, 2}, {2}), false}};
  try {
    checkOpGradient("LSTM", in, {{"hidden_size", i(2)}}, 3);
    FAIL() << "expected an error";
  } catch (const aicc::Error& e) {
    EXPECT_NE(std::string(e.what()).find("sequence_lens"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace aicc::test
