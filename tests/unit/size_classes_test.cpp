// Size classes (passes/size_predicates.h, tools/aicc/compile_variants.cpp, issue #12): an If on
// the input sizes alone whose condition changes over a symbol's range ("squeeze the frames axis
// if it is 1") splits the range; `aicc compile` compiles each piece as a variant with the If
// folded, and the runtime takes the variant whose ranges hold the run's sizes. One whose
// condition has one value over the ranges (the batch is never 0) just folds. Every run matches
// the interpreter, at sizes of both classes.
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "runtime/artifact.h"
#include "shared_models.h"
#include "support/file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace aicc {
namespace {

namespace fs = std::filesystem;

// y: x's frames axis squeezed when it is 1 (rank 1), else x (rank 2), then doubled; z: the
// batch's rows summed, or x's first rows when the batch is 0 (never, over 1..4).
const char* kGuarded = R"(graph @g(%x: f32[N,T]) {
  %zero = Constant() {value = tensor i64[1] [0]} : i64[1]
  %one = Constant() {value = tensor i64[1] [1]} : i64[1]
  %two = Constant() {value = tensor f32[] [2]} : f32[]
  %shape = Shape(%x) : i64[2]
  %t = Gather(%shape, %one) {axis = 0} : i64[1]
  %t1 = Equal(%t, %one) : bool[1]
  %sq = If(%t1) {
    else_branch = graph @keep() {
      %k = Identity(%x) : f32[N,T]
      return %k
    },
    then_branch = graph @squeeze() {
      %s = Squeeze(%x, %one) : f32[N]
      return %s
    }
  } : f32[*]
  %y = Mul(%sq, %two) : f32[*]
  %n = Gather(%shape, %zero) {axis = 0} : i64[1]
  %n0 = Equal(%n, %zero) : bool[1]
  %z = If(%n0) {
    else_branch = graph @sum() {
      %r = ReduceSum(%x, %one) {keepdims = 1} : f32[N,1]
      return %r
    },
    then_branch = graph @first() {
      %f = Slice(%x, %zero, %one, %one) : f32[N,1]
      return %f
    }
  } : f32[N,1]
  return %y, %z
}
)";

TEST(SizeClasses, AnIfOnTheSizesSplitsTheRangeIntoCompiledClasses) {
  const fs::path dir =
      fs::temp_directory_path() / ("aicc_size_classes_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  { std::ofstream(dir / "model.aicc") << kGuarded; }
  const std::string cmd = std::string(AICC_BINARY) + " compile " + (dir / "model.aicc").string() +
                          " -o " + (dir / "art").string() + " --dim N=1..4 --dim T=1..8 > " +
                          (dir / "out.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << readFile((dir / "out.txt").string());
  const std::string out = readFile((dir / "out.txt").string());
  // Two classes, T = 1 and 2..8; the batch's If folded (no class for it).
  EXPECT_NE(out.find("size class variants/0: T=1 "), std::string::npos) << out;
  EXPECT_NE(out.find("size class variants/1: T=2..8 "), std::string::npos) << out;
  EXPECT_EQ(out.find("variants/2"), std::string::npos) << out;
  for (const char* v : {"variants/0", "variants/1"}) {
    const std::string plan = readFile((dir / "art" / v / "model.plan").string());
    EXPECT_EQ(plan.find("\nfallback "), std::string::npos) << v << "\n" << plan;
    EXPECT_EQ(plan.find("If"), std::string::npos) << v << " still has an If\n" << plan;
  }
  Model ref = parseModel(kGuarded);
  runtime::LoadedArtifact art((dir / "art").string());
  for (auto [n, t] : {std::pair<int64_t, int64_t>{1, 1}, {3, 1}, {2, 5}, {4, 8}, {1, 2}}) {
    Tensor x(DType::F32, {n, t});
    for (int64_t i = 0; i < x.numel(); ++i) x.setF64(i, double(i % 7) - 2.5);
    const std::vector<RValue> in = {RValue::of(x)};
    const std::vector<RValue> want = interpret(*ref.graph, in), got = art.run(in);
    ASSERT_EQ(got.size(), want.size());
    // A class ran (the plan for the whole ranges has y as f32[*], a dynamic output).
    EXPECT_TRUE(art.outputs()[0].dynamic.empty()) << n << "x" << t;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].tensor.shape(), want[i].tensor.shape()) << n << "x" << t << " output " << i;
      EXPECT_TRUE(got[i].tensor.sameAs(want[i].tensor)) << n << "x" << t << " output " << i;
    }
  }
  fs::remove_all(dir);
}

} // namespace
} // namespace aicc
