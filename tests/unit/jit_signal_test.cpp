// DFT through the JIT (loop/lower_signal.cpp: the reference kernel's linear map as a constant f64
// matrix), against the interpreter: real and complex lanes, forward / inverse / one-sided /
// inverse one-sided, dft_length truncating and zero-padding, an axis with dims after it, f32 and
// f64; a transform longer than the direct sum's limit stays on the reference FFT and says why.
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "jit_check.h"
#include "passes/shape_inference.h"
#include "runtime/jit_executor.h"

#include <gtest/gtest.h>

#include <random>

namespace aicc {
namespace {

TEST(JitSignal, DftMatchesTheInterpreter) {
  struct Case {
    std::string type, attrs;
    Dims dims;
    int64_t axis;
    int64_t length; // 0: none
  };
  for (const Case& c : {Case{"f32", "", {2, 16, 1}, 1, 0}, Case{"f32", "", {3, 10, 2}, 1, 0},
                        Case{"f32", " {onesided = 1}", {2, 12, 1}, 1, 0},
                        Case{"f32", " {inverse = 1}", {2, 9, 2}, 1, 0},
                        Case{"f32", " {inverse = 1, onesided = 1}", {2, 7, 2}, 1, 12},
                        Case{"f32", "", {2, 11, 3, 2}, 1, 8}, Case{"f32", "", {2, 5, 3, 1}, 1, 13},
                        Case{"f64", "", {4, 3, 6, 2}, 2, 0}}) {
    std::string d = "[";
    for (size_t k = 0; k < c.dims.size(); ++k) d += (k ? "," : "") + std::to_string(c.dims[k]);
    d += "]";
    std::string text = "graph @g(%x: " + c.type + d + ") {\n  %axis = const i64[] [" +
                       std::to_string(c.axis) + "]\n";
    if (c.length) text += "  %len = const i64[] [" + std::to_string(c.length) + "]\n";
    text += "  %y = DFT(%x, " + std::string(c.length ? "%len" : "_") + ", %axis)" + c.attrs +
            "\n  return %y\n}\n";
    SCOPED_TRACE(text);
    Model m = parseModel(text);
    inferShapes(*m.graph);
    std::mt19937 rng(4);
    std::uniform_real_distribution<double> u(-2.0, 2.0);
    Tensor x(m.graph->inputs[0]->type.dtype, c.dims);
    for (int64_t i = 0; i < x.numel(); ++i) x.setF64(i, u(rng));
    std::vector<RValue> in = {RValue::of(x)};
    const auto want = interpret(*m.graph, in);
    runtime::JitExecutable exe(*m.graph);
    EXPECT_EQ(exe.stats().fallback, 0);
    const auto got = exe.run(in);
    ASSERT_EQ(got.size(), 1u);
    auto diff = compareValues(want[0], got[0], {1e-6, 1e-5});
    EXPECT_FALSE(diff) << *diff;
  }
  // Longer than the direct sum's limit: the reference FFT, with the reason.
  Model m = parseModel("graph @g(%x: f32[1,300,1]) {\n  %axis = const i64[] [1]\n"
                       "  %y = DFT(%x, _, %axis)\n  return %y\n}\n");
  inferShapes(*m.graph);
  runtime::JitExecutable exe(*m.graph);
  EXPECT_EQ(exe.stats().fallback, 1);
}

} // namespace
} // namespace aicc
