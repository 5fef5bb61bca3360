// TfIdfVectorizer on integer input (loop/lower_tfidf.cpp) and DeformConv
// (loop/lower_deform_conv.cpp) through the JIT against the interpreter: the three modes, n-grams of
// several lengths with skips, a repeated n-gram (its last column), weights, 1-D and 2-D inputs;
// DeformConv with offsets far outside the image and exactly on pixel borders, a mask, a bias,
// groups and offset groups.
#include "jit_check.h"
#include "shared_models.h"

#include <gtest/gtest.h>

#include <random>

namespace aicc {
namespace {

TEST(JitTfIdf, ModesSkipsAndWeightsMatchTheInterpreter) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> item(1, 6);
  Tensor x2(DType::I32, {3, 9}), x1(DType::I64, {11});
  for (int64_t i = 0; i < x2.numel(); ++i) x2.setI64(i, item(rng));
  for (int64_t i = 0; i < x1.numel(); ++i) x1.setI64(i, item(rng));
  // Pool: unigrams 2, 3, 5; bigrams (2,3), (3,2), (5,6), (2,3) again; a trigram (1,2,3).
  const std::string pool = "pool_int64s = [2, 3, 5, 2, 3, 3, 2, 5, 6, 2, 3, 1, 2, 3], "
                           "ngram_counts = [0, 3, 11], ngram_indexes = [0, 1, 2, 3, 4, 5, 6, 7]";
  for (const char* mode : {"TF", "IDF", "TFIDF"})
    for (const auto& [lo, hi, skip] :
         {std::array<int, 3>{1, 2, 0}, {2, 2, 3}, {1, 3, 5}, {3, 3, 1}})
      for (const bool batched : {true, false}) {
        SCOPED_TRACE(testing::Message() << mode << " " << lo << ".." << hi << " skip " << skip);
        const std::string attrs =
            "{" + pool + ", mode = \"" + mode + "\", min_gram_length = " + std::to_string(lo) +
            ", max_gram_length = " + std::to_string(hi) +
            ", max_skip_count = " + std::to_string(skip) +
            (std::string(mode) == "TF" ? "" : ", weights = [0.5, 1, 2, 4, 0.25, 3, 1.5, 0.75]") +
            "}";
        Model m =
            parseWithShapes(batched ? "graph @g(%x: i32[3,9]) {\n  %y = TfIdfVectorizer(%x) " +
                                          attrs + "\n  return %y\n}\n"
                                    : "graph @g(%x: i64[11]) {\n  %y = TfIdfVectorizer(%x) " +
                                          attrs + "\n  return %y\n}\n");
        expectJitMatches(m, {RValue::of(batched ? x2 : x1)}, {0, 0}, "data");
      }
}

TEST(JitDeformConv, OffsetsMasksAndGroupsMatchTheInterpreter) {
  // X [2, 4, 5, 6], W [6, 2, 3, 3] (2 groups), offsets for 2 offset groups, pads of 1 on W: the
  // output is 3x6.
  const Dims x = {2, 4, 5, 6}, w = {6, 2, 3, 3}, off = {2, 2 * 9 * 2, 3, 6},
             mask = {2, 2 * 9, 3, 6};
  Tensor offsets = test::uniformTensor(off, 3, -2.5f, 2.5f);
  offsets.data<float>()[0] = 1e10f; // far outside: every neighbour is padding
  offsets.data<float>()[1] = 1.0f;  // exactly on a pixel
  offsets.data<float>()[2] = -7.0f; // off the image
  Tensor m = test::uniformTensor(mask, 4, 0, 1);
  m.data<float>()[5] = 0;
  for (const bool masked : {false, true}) {
    SCOPED_TRACE(masked ? "with mask and bias" : "plain");
    Model model = parseWithShapes(
        std::string("graph @g(%x: f32[2,4,5,6], %w: f32[6,2,3,3], %o: f32[2,36,3,6]") +
        (masked ? ", %b: f32[6], %m: f32[2,18,3,6]) {\n  %y = DeformConv(%x, %w, %o, %b, %m)"
                : ") {\n  %y = DeformConv(%x, %w, %o)") +
        " {group = 2, offset_group = 2, pads = [0, 1, 0, 1]}\n  return %y\n}\n");
    std::vector<RValue> in = {RValue::of(test::uniformTensor(x, 1)),
                              RValue::of(test::uniformTensor(w, 2)), RValue::of(offsets)};
    if (masked) {
      in.push_back(RValue::of(test::uniformTensor({6}, 5)));
      in.push_back(RValue::of(m));
    }
    expectJitMatches(model, in, {1e-5, 1e-6}, "conv");
  }
}

TEST(JitMl, BinarizerAndArrayFeatureExtractorMatchTheInterpreter) {
  for (const char* t : {"f32", "f64", "i64", "i32"}) {
    SCOPED_TRACE(t);
    Model m = parseWithShapes(std::string("graph @g(%x: ") + t +
                              "[3,5]) {\n  %y = ai.onnx.ml.Binarizer(%x) {threshold = 2.0}\n"
                              "  return %y\n}\n");
    Tensor x(*dtypeFromName(t), {3, 5});
    for (int64_t i = 0; i < 15; ++i) x.setF64(i, double(i % 5) - 0.5 * (i / 5)); // 2 included
    expectJitMatches(m, {RValue::of(x)}, {0, 0}, "elementwise");
  }
  for (const Dims& xd : {Dims{7}, Dims{2, 3, 7}}) {
    SCOPED_TRACE(dimsText(xd));
    Model m = parseWithShapes("graph @g(%x: f32" + dimsText(xd) +
                              ", %i: i64[4]) {\n  %y = ai.onnx.ml.ArrayFeatureExtractor(%x, %i)\n"
                              "  return %y\n}\n");
    const Tensor x = test::uniformTensor(xd, 4);
    expectJitMatches(m, {RValue::of(x), RValue::of(tensorOfInts(DType::I64, {6, 0, 3, 3}))}, {0, 0},
                     "data");
    runtime::JitExecutable exe(*m.graph);
    try {
      exe.run({RValue::of(x), RValue::of(tensorOfInts(DType::I64, {1, 7, 0, 2}))});
      ADD_FAILURE() << "index 7 of 7 ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("out of range [0, 7)"), std::string::npos) << e.what();
    }
  }
}

TEST(JitMl, TreeEnsembleMatchesTheInterpreter) {
  // Tree 0 (root 0): 0 LEQ f0 <= 0.5 ? 1 : 2; 1 MEMBER f1 in {1, 3} ? leaf 0 : leaf 1;
  // 2 GT f2 > -0.25 (NaN: true) ? 3 : leaf 2; 3 NEQ f0 != 1 ? leaf 3 : 4; 4 LT f1 < 2 ? leaf 4 : 5;
  // 5 GTE f2 >= 0 ? leaf 5 : 6; 6 EQ f0 == 2 ? leaf 6 : leaf 7. Tree 1 (root 7): one leaf (8).
  const std::string forest =
      "leaf_targetids = [0, 1, 2, 0, 1, 2, 0, 1, 2], leaf_weights = tensor f64[9] [1.5, -2, 0.25, "
      "3, 0.5, -1, 2, 4, 0.75], membership_values = tensor f64[3] [1, 3, nan], n_targets = 3, "
      "nodes_modes = tensor u8[8] [0, 6, 3, 5, 1, 2, 4, 0], nodes_splits = tensor f64[8] [0.5, 0, "
      "-0.25, 1, 2, 0, 2, 0], nodes_featureids = [0, 1, 2, 0, 1, 2, 0, 0], nodes_truenodeids = [1, "
      "0, "
      "3, 3, 4, 5, 6, 8], nodes_trueleafs = [0, 1, 0, 1, 1, 1, 1, 1], nodes_falsenodeids = [2, 1, "
      "2, 4, "
      "5, 6, 7, 8], nodes_falseleafs = [0, 1, 1, 0, 0, 0, 1, 1], nodes_missing_value_tracks_true = "
      "[0, "
      "0, 1, 0, 0, 0, 0, 0], tree_roots = [0, 7]";
  Tensor x(DType::F64, {8, 3});
  const double v[] = {0.25, 1, 0,  0.25, 2, 9,   1,    0,   0,  1, 5, -1,
                      2,    7, -3, 3,    3, NAN, 0.75, NAN, -1, 1, 1, 0.5};
  for (int64_t i = 0; i < 24; ++i) x.setF64(i, v[i]);
  for (int agg : {0, 1, 2, 3})
    for (int pt : {0, 1, 2, 3}) {
      SCOPED_TRACE(testing::Message() << "aggregate " << agg << " post_transform " << pt);
      Model m = parseWithShapes("graph @g(%x: f64[8,3]) {\n  %y = ai.onnx.ml.TreeEnsemble(%x) {" +
                                forest + ", aggregate_function = " + std::to_string(agg) +
                                ", post_transform = " + std::to_string(pt) +
                                "} : f64[8,3]\n  return %y\n}\n");
      expectJitMatches(m, {RValue::of(x)}, {1e-12, 1e-12}, "data");
    }
}

} // namespace
} // namespace aicc
