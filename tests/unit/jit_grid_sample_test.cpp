// GridSample through the JIT (loop/lower_grid.cpp) against the interpreter: every mode (nearest,
// linear, cubic), padding mode (zeros, border, reflection) and align_corners, on 2-D and 3-D
// inputs, with grid points far outside [-1, 1] (reflections bouncing several times), exactly on
// borders and NaN. CenterCropPad (crop and pad mixed, named axes) with the target shape given at
// run time, and a target other than the declared one as an error. Resize linear and cubic
// (cubic_coeff_a, exclude_outside, antialias, three coordinate transformations in turn, up and
// down), scales given at run time for named axes (with antialias too, and a scale giving another
// output as an error), tf_crop_and_resize with a run-time roi and sizes given at run time under
// each keep_aspect_ratio_policy. RoiAlign (avg and max, both coordinate
// transformations, a fixed and an adaptive sampling grid) over boxes inside, across and outside
// the image, and a batch index out of range as an error. MaxUnpool with and without an output
// shape, an index out of range as an error. MaxPool with its Indices output.
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "jit_check.h"
#include "passes/shape_inference.h"
#include "runtime/jit_executor.h"
#include "shared_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace aicc {
namespace {

TEST(JitRoiAlign, ModesAndGridsMatchTheInterpreter) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3, 12), v(-1, 1);
  Tensor x(DType::F32, {2, 3, 8, 9}), rois(DType::F32, {5, 4}), bidx(DType::I64, {5});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = v(rng);
  for (int64_t r = 0; r < 5; ++r) {
    float a = u(rng), b = u(rng), c = u(rng), d = u(rng);
    rois.data<float>()[r * 4 + 0] = std::min(a, c), rois.data<float>()[r * 4 + 2] = std::max(a, c);
    rois.data<float>()[r * 4 + 1] = std::min(b, d), rois.data<float>()[r * 4 + 3] = std::max(b, d);
    bidx.data<int64_t>()[r] = r % 2;
  }
  rois.data<float>()[0] = 30, rois.data<float>()[2] = 40; // a box right of the image
  for (const char* mode : {"avg", "max"})
    for (const char* ctm : {"half_pixel", "output_half_pixel"})
      for (int ratio : {0, 2}) {
        const std::string text =
            std::string("graph @g(%x: f32[2,3,8,9], %r: f32[5,4], %b: i64[5]) {\n  %y = "
                        "RoiAlign(%x, %r, %b) {mode = \"") +
            mode + "\", coordinate_transformation_mode = \"" + ctm +
            "\", output_height = 3, output_width = 2, sampling_ratio = " + std::to_string(ratio) +
            ", spatial_scale = 0.75} : f32[5,3,3,2]\n  return %y\n}\n";
        SCOPED_TRACE(text);
        Model m = parseModel(text);
        inferShapes(*m.graph);
        const std::vector<RValue> in = {RValue::of(x), RValue::of(rois), RValue::of(bidx)};
        expectJitMatches(m, in, {1e-6, 1e-7}, "mode");
        Tensor bad = bidx.clone();
        bad.data<int64_t>()[3] = 2;
        EXPECT_THROW(runtime::runJit(*m.graph, {in[0], in[1], RValue::of(bad)}), Error);
      }
}

// MaxUnpool: values at random indices (duplicates: the later wins) into the unpooled shape and
// into a larger output_shape given at run time; an index past the unpooled tensor is an error.
TEST(JitMaxUnpool, IndicesAndOutputShapesMatchTheInterpreter) {
  std::mt19937 rng(11);
  Tensor x = test::uniformTensor({1, 2, 2, 3}, 5), ind(DType::I64, {1, 2, 2, 3});
  for (int64_t e = 0; e < ind.numel(); ++e) ind.data<int64_t>()[e] = int64_t(rng() % 48); // 1x2x4x6
  for (const std::string& out : {std::string("[1,2,4,6]"), std::string("[1,2,5,7]")}) {
    const bool shaped = out != "[1,2,4,6]";
    Model m = parseModel(
        "graph @g(%x: f32[1,2,2,3], %i: i64[1,2,2,3]" + std::string(shaped ? ", %s: i64[4]" : "") +
        ") {\n  %y = MaxUnpool(%x, %i" + (shaped ? ", %s" : "") +
        ") {kernel_shape = [2, 2], strides = [2, 2]} : f32" + out + "\n  return %y\n}\n");
    std::vector<RValue> in = {RValue::of(x), RValue::of(ind)};
    if (shaped) in.push_back(RValue::of(Tensor::fromI64({1, 2, 5, 7})));
    SCOPED_TRACE(out);
    expectJitMatches(m, in, {0, 0}, "");
    Tensor bad = ind.clone();
    bad.data<int64_t>()[4] = 48;
    in[1] = RValue::of(bad);
    EXPECT_THROW(runtime::runJit(*m.graph, in), Error);
  }
}

// MaxPool's Indices output: ties (values on a coarse grid: the first maximum), pads, strides,
// dilations, storage_order 1, and windows wholly in the padding (index -1, the lowest value).
TEST(JitMaxPoolIndices, MatchTheInterpreter) {
  Tensor x = test::uniformTensor({2, 2, 5, 6}, 3, -2, 2);
  for (int64_t e = 0; e < x.numel(); ++e) x.data<float>()[e] = std::round(x.data<float>()[e] * 2);
  const char* attrs[] = {"kernel_shape = [2, 2]",
                         "kernel_shape = [3, 2], pads = [1, 0, 1, 1], strides = [2, 1]",
                         "kernel_shape = [2, 2], dilations = [2, 1], storage_order = 1",
                         "kernel_shape = [1, 1], pads = [2, 2, 0, 0], strides = [1, 1]"};
  for (const char* a : attrs) {
    Model m = parseModel(std::string("graph @g(%x: f32[2,2,5,6]) {\n  %y, %i = MaxPool(%x) {") + a +
                         "}\n  return %y, %i\n}\n");
    inferShapes(*m.graph);
    SCOPED_TRACE(a);
    expectJitMatches(m, {RValue::of(x)}, {0, 0}, "");
  }
}

TEST(JitGridSample, EveryModePaddingAndAlignmentMatchesTheInterpreter) {
  for (const char* spatial : {"[2,3,5,6]", "[1,2,3,4,5]"}) {
    const bool vol = std::string(spatial).size() > 9;
    const std::string grid = vol ? "[1,2,3,4,3]" : "[2,4,7,2]";
    for (const char* mode : {"nearest", "linear", "cubic"})
      for (const char* pad : {"zeros", "border", "reflection"})
        for (int align : {0, 1}) {
          if (vol && std::string(mode) == "cubic") continue; // ONNX: cubic on 4-D inputs only
          SCOPED_TRACE(std::string(spatial) + " " + mode + " " + pad + " align " +
                       std::to_string(align));
          Model m = parseModel(
              std::string("graph @g(%x: f32") + spatial + ", %g: f32" + grid +
              ") {\n  %y = GridSample(%x, %g) {mode = \"" + mode + "\", padding_mode = \"" + pad +
              "\", align_corners = " + std::to_string(align) + "}\n  return %y\n}\n");
          inferShapes(*m.graph);
          std::mt19937 rng(21);
          std::vector<RValue> in;
          for (const Value* v : m.graph->inputs) {
            Tensor t(DType::F32, *toDims(*v->type.shape));
            std::uniform_real_distribution<float> u(v == m.graph->inputs[0] ? -2.0f : -3.5f,
                                                    v == m.graph->inputs[0] ? 2.0f : 3.5f);
            for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
            if (v != m.graph->inputs[0]) {
              t.data<float>()[0] = 1.0f, t.data<float>()[1] = -1.0f; // on the borders
              t.data<float>()[2] = 0.5f;
              t.data<float>()[3] = std::nanf("");
            }
            in.push_back(RValue::of(t));
          }
          runtime::JitExecutable exe(*m.graph);
          const auto got = exe.run(in);
          EXPECT_EQ(exe.stats().fallback, 0);
          auto diff = compareValues(interpret(*m.graph, in)[0], got[0], {1e-5, 1e-6});
          EXPECT_FALSE(diff) << *diff;
        }
  }
}

TEST(JitGridSample, CenterCropPadMatchesTheInterpreter) {
  struct Case {
    std::string graph;
    std::vector<int64_t> shape;
  };
  const Case cases[] = {
      {"graph @g(%x: f32[9,6,3], %s: i64[3]) {\n  %y = CenterCropPad(%x, %s) : f32[4,9,3]\n"
       "  return %y\n}\n",
       {4, 9, 3}},
      {"graph @g(%x: f32[9,6,3], %s: i64[2]) {\n  %y = CenterCropPad(%x, %s) {axes = [-3, 1]} : "
       "f32[10,3,3]\n  return %y\n}\n",
       {10, 3}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.graph);
    Model m = parseModel(c.graph);
    inferShapes(*m.graph);
    Tensor x(DType::F32, {9, 6, 3}), s(DType::I64, {int64_t(c.shape.size())});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(i);
    for (size_t i = 0; i < c.shape.size(); ++i) s.data<int64_t>()[i] = c.shape[i];
    runtime::JitExecutable exe(*m.graph);
    const std::vector<RValue> in = {RValue::of(x), RValue::of(s)};
    const auto got = exe.run(in);
    EXPECT_EQ(exe.stats().fallback, 0);
    EXPECT_FALSE(compareValues(interpret(*m.graph, in)[0], got[0], {0, 0}));
    s.data<int64_t>()[0] += 1;
    EXPECT_THROW(exe.run({RValue::of(x), RValue::of(s)}), Error);
  }
}

TEST(JitGridSample, ResizeLinearAndCubicMatchTheInterpreter) {
  const char* ctms[] = {"half_pixel", "asymmetric", "align_corners"};
  int turn = 0;
  for (const char* mode : {"linear", "cubic"})
    for (const char* extra : {"", ", exclude_outside = 1, cubic_coeff_a = -0.5", ", antialias = 1"})
      for (const char* scales : {"[1.0, 1.0, 1.7, 0.6]", "[1.0, 1.0, 0.5, 2.25]"}) {
        const char* ctm = ctms[turn++ % 3];
        const bool up = std::string(scales).find("1.7") != std::string::npos;
        const std::string g = std::string("graph @g(%x: f32[1,2,6,8]) {\n  %s = const f32[4] ") +
                              scales + "\n  %y = Resize(%x, _, %s) {mode = \"" + mode +
                              "\", coordinate_transformation_mode = \"" + ctm + "\"" + extra +
                              "} : f32[1,2," + (up ? "10,4" : "3,18") + "]\n  return %y\n}\n";
        SCOPED_TRACE(g);
        Model m = parseModel(g);
        inferShapes(*m.graph);
        Tensor x(DType::F32, {1, 2, 6, 8});
        std::mt19937 rng(8);
        for (int64_t i = 0; i < x.numel(); ++i)
          x.data<float>()[i] = std::uniform_real_distribution<float>(-3, 3)(rng);
        runtime::JitExecutable exe(*m.graph);
        const std::vector<RValue> in = {RValue::of(x)};
        const auto got = exe.run(in);
        EXPECT_EQ(exe.stats().fallback, 0)
            << (exe.stats().fallbackReasons.empty() ? "" : exe.stats().fallbackReasons[0]);
        auto diff = compareValues(interpret(*m.graph, in)[0], got[0], {1e-5, 1e-6});
        EXPECT_FALSE(diff) << *diff;
      }
  // Scales at run time for the axes the attribute names (in its order: W before H).
  Model m = parseModel("graph @g(%x: f32[1,2,6,8], %s: f32[2]) {\n  %y = Resize(%x, _, %s) "
                       "{mode = \"cubic\", axes = [3, 2]} : f32[1,2,3,12]\n  return %y\n}\n");
  inferShapes(*m.graph);
  Tensor x(DType::F32, {1, 2, 6, 8}), sc(DType::F32, {2});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float((i * 7) % 11) - 5.0f;
  sc.data<float>()[0] = 1.5f, sc.data<float>()[1] = 0.5f;
  runtime::JitExecutable exe(*m.graph);
  const std::vector<RValue> in = {RValue::of(x), RValue::of(sc)};
  const auto got = exe.run(in);
  EXPECT_EQ(exe.stats().fallback, 0);
  EXPECT_FALSE(compareValues(interpret(*m.graph, in)[0], got[0], {1e-5, 1e-6}));
}

// tf_crop_and_resize with the roi given at run time (inside, partly outside: extrapolation_value,
// a single output row), nearest and linear, on named axes; sizes given at run time under each
// keep_aspect_ratio_policy (not_larger / not_smaller map coordinates by the one scale they pick,
// not the output's ratio), and sizes other than the declared output's as a one-line error.
TEST(JitGridSample, ResizeCropAndRunTimeSizesMatchTheInterpreter) {
  const Tensor x = test::uniformTensor({1, 2, 5, 7}, 9);
  for (const char* mode : {"nearest", "linear"})
    for (const auto& roi : {std::vector<double>{0.2, 0.1, 0.8, 0.9}, {-0.3, 0.4, 1.2, 0.6}}) {
      SCOPED_TRACE(testing::Message() << mode << " roi " << roi[0]);
      Model m = parseWithShapes(
          std::string("graph @g(%x: f32[1,2,5,7], %roi: f32[4], %sz: i64[2]) {\n"
                      "  %y = Resize(%x, %roi, _, %sz) {mode = \"") +
          mode +
          "\", coordinate_transformation_mode = \"tf_crop_and_resize\", axes = [2, 3], "
          "extrapolation_value = -9.0} : f32[1,2,1,9]\n  return %y\n}\n");
      expectJitMatches(m,
                       {RValue::of(x), RValue::of(tensorOf(DType::F32, roi)),
                        RValue::of(tensorOfInts(DType::I64, {1, 9}))},
                       {1e-6, 1e-6}, "tf_crop_and_resize");
    }
  for (const char* policy : {"stretch", "not_larger", "not_smaller"}) {
    SCOPED_TRACE(policy);
    // [5, 7] by sizes [3, 3]: stretch [3, 3], not_larger 3/7 -> [2, 3], not_smaller 3/5 -> [3, 4].
    const std::string out = std::string(policy) == "stretch"      ? "[1,2,3,3]"
                            : std::string(policy) == "not_larger" ? "[1,2,2,3]"
                                                                  : "[1,2,3,4]";
    Model m = parseWithShapes(
        std::string("graph @g(%x: f32[1,2,5,7], %sz: i64[2]) {\n  %y = Resize(%x, _, _, %sz) "
                    "{mode = \"linear\", axes = [2, 3], keep_aspect_ratio_policy = \"") +
        policy + "\"} : f32" + out + "\n  return %y\n}\n");
    expectJitMatches(m, {RValue::of(x), RValue::of(tensorOfInts(DType::I64, {3, 3}))}, {1e-6, 1e-6},
                     "linear");
    runtime::JitExecutable exe(*m.graph);
    try {
      exe.run({RValue::of(x), RValue::of(tensorOfInts(DType::I64, {5, 5}))});
      ADD_FAILURE() << "sizes [5, 5] ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("this model's declared shapes need"), std::string::npos)
          << e.what();
    }
  }
}

// Antialias with scales given at run time: the footprint of the smallest scale the declared
// output allows (out / in) holds every run's (the extra taps weigh 0), two scales per mode that
// give the same output; a scale giving another output is the runtime's error.
TEST(JitGridSample, ResizeAntialiasWithRunTimeScales) {
  const Tensor x = test::uniformTensor({1, 2, 5, 7}, 10);
  for (const char* mode : {"linear", "cubic"}) {
    SCOPED_TRACE(mode);
    Model m = parseWithShapes(std::string("graph @g(%x: f32[1,2,5,7], %s: f32[4]) {\n"
                                          "  %y = Resize(%x, _, %s) {mode = \"") +
                              mode + "\", antialias = 1} : f32[1,2,3,3]\n  return %y\n}\n");
    runtime::JitExecutable exe(*m.graph);
    for (const auto& sc : {std::vector<double>{1, 1, 0.6, 0.5}, {1, 1, 0.79, 0.56}}) {
      const std::vector<RValue> in = {RValue::of(x), RValue::of(tensorOf(DType::F32, sc))};
      EXPECT_FALSE(compareValues(interpret(*m.graph, in)[0], exe.run(in)[0], {1e-6, 1e-6}));
    }
    EXPECT_EQ(exe.stats().fallback, 0);
    try {
      exe.run({RValue::of(x), RValue::of(tensorOf(DType::F32, {1, 1, 0.4, 0.5}))});
      ADD_FAILURE() << "scale 0.4 ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("differs from the 3"), std::string::npos) << e.what();
    }
  }
}

} // namespace
} // namespace aicc
