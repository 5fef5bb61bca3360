// Sequences whose elements are known at compile time (passes/unroll_sequences.h) compile with no
// fallback task: built by SequenceConstruct / SequenceEmpty / SequenceInsert / SequenceErase at
// constant positions (negative ones too) and SplitToSequence (chunks of 1 squeezed, a scalar
// split with a shorter last chunk, the count of a 1-D split given at run time), read by SequenceAt,
// SequenceLength and ConcatFromSequence (with and without new_axis). The artifact matches the
// interpreter on the graph as written. A sequence returned from the graph, and a chunk of a
// run-time split (a Split of data-dependent sizes), stay fallbacks; an Identity of a sequence
// input shares it (a copy task).
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "jit_check.h"
#include "runtime/artifact.h"
#include "shared_models.h"
#include "support/file.h"

#include <gtest/gtest.h>

namespace aicc {
namespace {

TEST(CompiledSequences, ListsBuiltAtConstantPositionsMatchTheInterpreter) {
  const char* ir = R"(graph @g(%x: f32[4,6], %y: f32[4,2], %s: i64[2]) {
  %one = const i64[] [1]
  %neg = const i32[] [-2]
  %two = const i64[] [4]
  %sq = SplitToSequence(%x) {axis = 1, keepdims = 0}
  %a = SequenceAt(%sq, %neg)
  %e0 = SequenceEmpty() {dtype = 1}
  %e1 = SequenceInsert(%e0, %x)
  %c = SequenceInsert(%e1, %x, %one)
  %i = SequenceInsert(%c, %y, %one)
  %e = SequenceErase(%i, %neg)
  %cat = ConcatFromSequence(%e) {axis = -1}
  %st = ConcatFromSequence(%c) {axis = 1, new_axis = 1}
  %n = SequenceLength(%i)
  %ch = SplitToSequence(%x, %two) {axis = 1}
  %last = SequenceAt(%ch, %one)
  %ds = SplitToSequence(%x, %s) {axis = 1}
  %dn = SequenceLength(%ds)
  %sum = Add(%a, %a)
  return %sum, %cat, %st, %n, %last, %dn
}
)";
  Model m = parseModel(ir), ref = parseModel(ir);
  const auto dir = test::compileArtifact(m, "aicc_compiled_sequences", {});
  const std::string plan = readFile((dir / "model.plan").string());
  EXPECT_EQ(plan.find("\nfallback "), std::string::npos) << plan;
  runtime::LoadedArtifact art(dir.string());
  for (uint32_t seed : {1u, 2u}) {
    std::vector<RValue> in = {RValue::of(test::uniformTensor({4, 6}, seed)),
                              RValue::of(test::uniformTensor({4, 2}, seed + 10)),
                              RValue::of(tensorOfInts(DType::I64, {2, 4}))};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {0, 0});
  }
}

// A returned sequence stays a fallback (a value of the interpreter's, in a dynamic slot); chunks
// of run-time lengths are a Split whose lengths the run sizes (docs/backend.md "Sizes without a
// bound"): compiled, through several lengths.
TEST(CompiledSequences, ReturnedSequencesStayFallbacksRunTimeChunksCompile) {
  for (const char* ir : {"graph @g(%x: f32[4,6]) {\n  %sq = SplitToSequence(%x) {axis = 0}\n"
                         "  return %sq\n}\n",
                         "graph @g(%x: f32[4,6], %s: i64[2]) {\n  %one = const i64[] [1]\n"
                         "  %ds = SplitToSequence(%x, %s) {axis = 1}\n"
                         "  %d1 = SequenceAt(%ds, %one)\n  return %d1\n}\n"}) {
    Model m = parseModel(ir), ref = parseModel(ir);
    const auto dir = test::compileArtifact(m, "aicc_compiled_sequences_out", {});
    const bool chunks = ref.graph->inputs.size() == 2;
    EXPECT_EQ(readFile((dir / "model.plan").string()).find("\nfallback ") == std::string::npos,
              chunks);
    if (!chunks) continue;
    runtime::LoadedArtifact art(dir.string());
    for (const auto& lengths : std::vector<std::vector<int64_t>>{{1, 5}, {6, 0}, {2, 4}}) {
      std::vector<RValue> in = {RValue::of(test::uniformTensor({4, 6}, 3)),
                                RValue::of(tensorOfInts(DType::I64, lengths))};
      test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {0, 0});
    }
  }
}

// An Identity of a sequence input (and OptionalGetElement of one, simplified to it) compiles to a
// copy task that shares the value: no fallback, the output the input's tensors.
TEST(CompiledSequences, AnIdentityOfASequenceSharesIt) {
  const char* ir = R"(graph @g(%s: seq<f32[?]>) {
  %a = OptionalGetElement(%s) : seq<f32[?]>
  %b = Identity(%a) : seq<f32[?]>
  return %b
}
)";
  Model m = parseModel(ir);
  const auto dir = test::compileArtifact(m, "aicc_compiled_sequences_share", {});
  const std::string plan = readFile((dir / "model.plan").string());
  EXPECT_EQ(plan.find("\nfallback "), std::string::npos) << plan;
  runtime::LoadedArtifact art(dir.string());
  const RValue in = RValue::ofSeq({test::uniformTensor({3}, 1), test::uniformTensor({5}, 2)});
  const std::vector<RValue> out = art.run({in});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].kind, RValue::Kind::Sequence);
  ASSERT_EQ(out[0].seq.size(), 2u);
  for (size_t k = 0; k < 2; ++k)
    EXPECT_FALSE(compareValues(RValue::of(in.seq[k]), RValue::of(out[0].seq[k]), {0, 0}));
}

} // namespace
} // namespace aicc
