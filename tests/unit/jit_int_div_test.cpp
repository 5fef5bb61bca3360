// Integer Div through the JIT: truncation toward zero, INT_MIN / -1 wrapping (as the interpreter:
// no trap), and a zero divisor reported as the run's error, against the interpreter.
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "jit_check.h"
#include "passes/shape_inference.h"
#include "runtime/jit_executor.h"

#include <gtest/gtest.h>

#include <limits>

namespace aicc {
namespace {

TEST(JitIntDiv, MatchesTheInterpreterAndReportsZero) {
  const int64_t m32 = std::numeric_limits<int32_t>::min();
  for (const auto& [t, name] : std::vector<std::pair<DType, std::string>>{
           {DType::I32, "i32"}, {DType::I8, "i8"}, {DType::U16, "u16"}, {DType::I64, "i64"}}) {
    SCOPED_TRACE(name);
    Model m = parseModel("graph @g(%a: " + name + "[8], %b: " + name +
                         "[8]) {\n  %c = Div(%a, %b)\n"
                         "  return %c\n}\n");
    inferShapes(*m.graph);
    runtime::JitExecutable exe(*m.graph);
    const bool s = t != DType::U16;
    const std::vector<int64_t> a = {
        7, s ? -7 : 9, 7, s ? -7 : 100, 0, t == DType::I32 ? m32 : 5, s ? -128 : 255, 1};
    const std::vector<int64_t> b = {2, 2, s ? -2 : 3, s ? -2 : 7, 5, s ? -1 : 1, s ? -1 : 16, 3};
    const std::vector<RValue> in = {RValue::of(tensorOfInts(t, a)), RValue::of(tensorOfInts(t, b))};
    const auto got = exe.run(in);
    EXPECT_EQ(exe.stats().fallback, 0);
    const auto want = interpret(*m.graph, in);
    auto diff = compareValues(want[0], got[0], {0, 0});
    EXPECT_FALSE(diff) << *diff;
    std::vector<int64_t> z = b;
    z[3] = 0;
    EXPECT_THROW(exe.run({RValue::of(tensorOfInts(t, a)), RValue::of(tensorOfInts(t, z))}), Error);
  }
}

} // namespace
} // namespace aicc
