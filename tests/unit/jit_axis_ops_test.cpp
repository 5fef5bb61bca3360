// Ops normalizing along one axis through the JIT: Hardmax (ties keep the first maximum, a NaN in
// front wins as in the reference) and LpNormalization (p = 1 and 2, rows of zeros give zeros),
// over every axis of a 3-D input, against the interpreter.
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "passes/shape_inference.h"
#include "runtime/jit_executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace aicc {
namespace {

TEST(JitAxisOps, HardmaxAndLpNormalizationMatchTheInterpreter) {
  Tensor x(DType::F32, {3, 4, 5});
  std::mt19937 rng(9);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(int(rng() % 7) - 3); // ties
  for (int64_t i = 0; i < 5; ++i) x.data<float>()[20 + i] = 0.0f; // a zero row along axis 2
  x.data<float>()[0] = std::nanf("");                             // NaN first along every axis
  for (const char* op : {"Hardmax", "LpNormalization"})
    for (int axis : {0, 1, 2, -1})
      for (int p : {1, 2}) {
        if (std::string(op) == "Hardmax" && p == 2) continue;
        const std::string attrs =
            "axis = " + std::to_string(axis) +
            (std::string(op) == "Hardmax" ? "" : ", p = " + std::to_string(p));
        SCOPED_TRACE(std::string(op) + " " + attrs);
        Model m = parseModel("graph @g(%x: f32[3,4,5]) {\n  %y = " + std::string(op) + "(%x) {" +
                             attrs + "}\n  return %y\n}\n");
        inferShapes(*m.graph);
        runtime::JitExecutable exe(*m.graph);
        const std::vector<RValue> in = {RValue::of(x)};
        const auto got = exe.run(in);
        EXPECT_EQ(exe.stats().fallback, 0);
        const auto want = interpret(*m.graph, in);
        auto diff = compareValues(want[0], got[0], {1e-6, 1e-7});
        EXPECT_FALSE(diff) << *diff;
      }
}

} // namespace
} // namespace aicc
