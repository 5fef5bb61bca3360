// Ops whose sizes come as run-time inputs that the declared result shape fixes, through the JIT
// against the interpreter (loop/lower_signal.cpp, loop/lower_grid_ops.cpp): DFT with its axis
// given at run time (each axis the shapes allow, chosen by the value, negative ones too; one they
// do not allow as an error), STFT (frame step and length fixed by the result's shape, a window,
// a complex signal), the window functions (periodic and symmetric), AffineGrid (2-D and
// 3-D, both align_corners; a size other than the result's as an error) and Col2Im (block shapes
// given at run time, two that give the same block count told apart by their values, strides,
// pads and dilations; an image shape other than the result's as an error) and MelWeightMatrix.
#include "interp/interpreter.h"
#include "jit_check.h"
#include "runtime/artifact.h"
#include "shared_models.h"
#include "support/file.h"

#include <gtest/gtest.h>

namespace aicc {
namespace {

Tensor scalarI64(int64_t v) {
  Tensor t(DType::I64, {});
  t.setI64(0, v);
  return t;
}

// Runs m through the JIT on `in`, expecting a one-line error that contains `what`.
void expectJitError(const Model& m, const std::vector<RValue>& in, const std::string& what) {
  runtime::JitExecutable exe(*m.graph);
  try {
    exe.run(in);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(JitRunTimeSizes, DftWithTheAxisGivenAtRunTime) {
  for (const char* attrs : {"", " {onesided = 1}", " {inverse = 1}"}) {
    const bool onesided = std::string(attrs).find("onesided") != std::string::npos;
    const std::string out = onesided ? "[2,5,5,2]" : "[2,8,8,2]";
    Model m = parseWithShapes(
        std::string("graph @g(%x: f32[2,8,8,1], %axis: i64[]) {\n  %y = DFT(%x, _, %axis)") +
        attrs + " : f32" + (onesided ? "[2,5,8,2]" : out) + "\n  return %y\n}\n");
    if (onesided) { // [2, 8, 8] -> [2, 5, 8]: axis 1 only
      expectJitMatches(m,
                       {RValue::of(test::uniformTensor({2, 8, 8, 1}, 3)), RValue::of(scalarI64(1))},
                       {1e-5, 1e-5}, "direct sum");
      expectJitError(m,
                     {RValue::of(test::uniformTensor({2, 8, 8, 1}, 3)), RValue::of(scalarI64(2))},
                     "differs from the 1");
      continue;
    }
    for (int64_t axis : {1, 2, -2, -3}) {
      SCOPED_TRACE(testing::Message() << attrs << " axis " << axis);
      expectJitMatches(
          m, {RValue::of(test::uniformTensor({2, 8, 8, 1}, 4)), RValue::of(scalarI64(axis))},
          {1e-5, 1e-5}, "given at run time");
    }
  }
}

TEST(JitRunTimeSizes, StftFramesWindowsAndRunTimeSizes) {
  // frame_step and frame_length given at run time: [2, 128] one-sided into 15 frames of 9 bins
  // leaves one pair (16 every 8); another step is the runtime's error.
  Model m = parseWithShapes("graph @g(%x: f32[2,128,1], %s: i64[], %l: i32[]) {\n"
                            "  %y = STFT(%x, %s, _, %l) : f32[2,15,9,2]\n  return %y\n}\n");
  Tensor len(DType::I32, {});
  len.setI64(0, 16);
  expectJitMatches(
      m, {RValue::of(test::uniformTensor({2, 128, 1}, 7)), RValue::of(scalarI64(8)), RValue::of(len)},
      {1e-5, 1e-5}, "16 every 8");
  expectJitError(
      m, {RValue::of(test::uniformTensor({2, 128, 1}, 7)), RValue::of(scalarI64(9)), RValue::of(len)},
      "differs from the 8");
  // A complex f64 signal, a run-time window, two-sided, a constant step (frames overlapping).
  Model w = parseWithShapes("graph @g(%x: f64[1,40,2], %w: f64[10]) {\n"
                            "  %s = const i64[] [3]\n"
                            "  %y = STFT(%x, %s, %w) {onesided = 0} : f64[1,11,10,2]\n"
                            "  return %y\n}\n");
  expectJitMatches(w,
                   {RValue::of(test::uniformTensor({1, 40, 2}, 8).castTo(DType::F64)),
                    RValue::of(test::uniformTensor({10}, 9).castTo(DType::F64))},
                   {1e-12, 1e-12}, "10 every 3");
}

// STFT under a symbolic batch, through `aicc compile`: each signal alone (per sample), no
// fallback, at batches 1 and 3.
TEST(JitRunTimeSizes, StftPerSampleInAnArtifact) {
  const char* ir = "graph @g(%x: f32[N,64,1], %w: f32[16]) {\n  %s = const i64[] [8]\n"
                   "  %y = STFT(%x, %s, %w) : f32[N,7,9,2]\n  return %y\n}\n";
  Model m = parseWithShapes(ir), ref = parseWithShapes(ir);
  const auto dir = test::compileArtifact(m, "aicc_stft_symbolic", {{"N", 1, 4}});
  EXPECT_EQ(readFile((dir / "model.plan").string()).find("\nfallback "), std::string::npos);
  runtime::LoadedArtifact art(dir.string());
  for (int64_t n : {1, 3}) {
    const std::vector<RValue> in = {RValue::of(test::uniformTensor({n, 64, 1}, uint32_t(n))),
                                    RValue::of(test::uniformTensor({16}, 4))};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {1e-5, 1e-5});
  }
}

TEST(JitRunTimeSizes, WindowFunctionsOfARunTimeSize) {
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    for (int periodic : {0, 1}) {
      SCOPED_TRACE(testing::Message() << op << " periodic " << periodic);
      Model m = parseWithShapes(std::string("graph @g(%n: i32[]) {\n  %y = ") + op +
                                "(%n) {periodic = " + std::to_string(periodic) +
                                "} : f32[12]\n  return %y\n}\n");
      Tensor n(DType::I32, {});
      n.setI64(0, 12);
      expectJitMatches(m, {RValue::of(n)}, {1e-7, 1e-7}, "signal");
      n.setI64(0, 11);
      expectJitError(m, {RValue::of(n)}, "differs from the 12");
    }
}

// MelWeightMatrix of run-time inputs (the result's shape fixes num_mel_bins and dft_length / 2):
// sample rates and edges that move the filters, and an odd dft_length; a zero sample rate, edges
// out of order and a mel point past the spectrogram are the run's errors.
TEST(JitRunTimeSizes, MelWeightMatrixOfRunTimeInputs) {
  Model m = parseWithShapes("graph @g(%mels: i32[], %len: i64[], %rate: i32[], %lo: f32[], %hi: "
                            "f32[]) {\n  %y = MelWeightMatrix(%mels, %len, %rate, %lo, %hi) : "
                            "f32[33,10]\n  return %y\n}\n");
  auto in = [](int64_t len, int64_t rate, double lo, double hi) {
    Tensor mels(DType::I32, {}), l(DType::I64, {}), r(DType::I32, {}), a(DType::F32, {}),
        b(DType::F32, {});
    mels.setI64(0, 10), l.setI64(0, len), r.setI64(0, rate), a.setF64(0, lo), b.setF64(0, hi);
    return std::vector<RValue>{RValue::of(mels), RValue::of(l), RValue::of(r), RValue::of(a),
                               RValue::of(b)};
  };
  for (const auto& x : {in(64, 16000, 0, 8000), in(65, 8000, 100, 3000), in(64, 44100, 20, 900)})
    expectJitMatches(m, x, {1e-7, 1e-7}, "signal");
  expectJitError(m, in(64, 0, 0, 8000), "differs from the 1");
  expectJitError(m, in(64, 16000, 500, 100), "differs from the 1");
  expectJitError(m, in(64, 8000, 0, 8000), "out of range");
  expectJitError(m, in(40, 16000, 0, 8000), "differs from the 32");
}

TEST(JitRunTimeSizes, AffineGridMatchesTheInterpreter) {
  for (int align : {0, 1}) {
    SCOPED_TRACE(testing::Message() << "align_corners " << align);
    Model m2 = parseWithShapes("graph @g(%t: f32[2,2,3], %s: i64[4]) {\n"
                               "  %y = AffineGrid(%t, %s) {align_corners = " +
                               std::to_string(align) + "} : f32[2,5,1,2]\n  return %y\n}\n");
    expectJitMatches(m2,
                     {RValue::of(test::uniformTensor({2, 2, 3}, 5)),
                      RValue::of(tensorOfInts(DType::I64, {2, 7, 5, 1}))},
                     {1e-6, 1e-6}, "data");
    expectJitError(m2,
                   {RValue::of(test::uniformTensor({2, 2, 3}, 5)),
                    RValue::of(tensorOfInts(DType::I64, {2, 7, 5, 2}))},
                   "differs from the 1");
    Model m3 = parseWithShapes("graph @g(%t: f64[1,3,4], %s: i64[5]) {\n"
                               "  %y = AffineGrid(%t, %s) {align_corners = " +
                               std::to_string(align) + "} : f64[1,3,4,2,3]\n  return %y\n}\n");
    expectJitMatches(m3,
                     {RValue::of(test::uniformTensor({1, 3, 4}, 6).castTo(DType::F64)),
                      RValue::of(tensorOfInts(DType::I64, {1, 1, 3, 4, 2}))},
                     {1e-12, 1e-12}, "data");
  }
}

TEST(JitRunTimeSizes, Col2ImWithRunTimeShapes) {
  // [1, 5, 5] into 5x5: block [1, 5] and [5, 1] both give 5 blocks; the values choose.
  Model m = parseWithShapes("graph @g(%x: f32[1,5,5], %i: i64[2], %b: i64[2]) {\n"
                            "  %y = Col2Im(%x, %i, %b) : f32[1,1,5,5]\n  return %y\n}\n");
  for (const std::vector<int64_t>& blk : {std::vector<int64_t>{1, 5}, {5, 1}})
    expectJitMatches(m,
                     {RValue::of(test::uniformTensor({1, 5, 5}, 7)),
                      RValue::of(tensorOfInts(DType::I64, {5, 5})),
                      RValue::of(tensorOfInts(DType::I64, blk))},
                     {1e-6, 1e-6}, "data");
  expectJitError(m,
                 {RValue::of(test::uniformTensor({1, 5, 5}, 7)),
                  RValue::of(tensorOfInts(DType::I64, {5, 6})),
                  RValue::of(tensorOfInts(DType::I64, {1, 5}))},
                 "differs from the 5");
  // Overlapping 3x3 blocks with strides, pads and dilations, two channels, a batch of 2.
  Model s = parseWithShapes(
      "graph @g(%x: f32[2,18,12], %i: i64[2], %b: i64[2]) {\n"
      "  %y = Col2Im(%x, %i, %b) {strides = [2, 1], pads = [1, 0, 1, 2], dilations = [1, 2]} "
      ": f32[2,2,5,6]\n  return %y\n}\n");
  expectJitMatches(s,
                   {RValue::of(test::uniformTensor({2, 18, 12}, 8)),
                    RValue::of(tensorOfInts(DType::I64, {5, 6})),
                    RValue::of(tensorOfInts(DType::I64, {3, 3}))},
                   {1e-6, 1e-6}, "data");
}

} // namespace
} // namespace aicc
