// Sequences whose elements are known at compile time (passes/unroll_sequences.h) compile with no
// fallback task: built by SequenceConstruct / SequenceEmpty / SequenceInsert / SequenceErase at
// constant positions (negative ones too) and SplitToSequence (chunks of 1 squeezed, a scalar
// split with a shorter last chunk, the count of a 1-D split given at run time), read by SequenceAt,
// SequenceLength and ConcatFromSequence (with and without new_axis). The artifact matches the
// interpreter on the graph as written. The others (a sequence input or output, a run-time
// position, an If's sequence results) are the runtime's own, built and read by seq tasks
// (rt/sequence.h), also through the C API; an Identity of a sequence input shares it (a copy).
#include "aicc/runtime.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "jit_check.h"
#include "runtime/artifact.h"
#include "shared_models.h"
#include "support/file.h"

#include <gtest/gtest.h>

#include <cstring>

namespace aicc {
namespace {

namespace fs = std::filesystem;

// A sequence of 1-D tensors of those lengths, filled from seeds seed, seed + 1, ...
RValue seq(const std::vector<int64_t>& lengths, uint32_t seed) {
  std::vector<Tensor> items;
  for (int64_t l : lengths) items.push_back(test::uniformTensor({l}, seed++));
  return RValue::ofSeq(std::move(items));
}

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

// Chunks of run-time lengths are a Split whose lengths the run sizes (docs/backend.md "Sizes
// without a bound"): compiled, through several lengths.
TEST(CompiledSequences, RunTimeChunksCompile) {
  const char* ir = "graph @g(%x: f32[4,6], %s: i64[2]) {\n  %one = const i64[] [1]\n"
                   "  %ds = SplitToSequence(%x, %s) {axis = 1}\n"
                   "  %d1 = SequenceAt(%ds, %one)\n  return %d1\n}\n";
  Model m = parseModel(ir), ref = parseModel(ir);
  const auto dir = test::compileArtifact(m, "aicc_compiled_sequences_out", {});
  EXPECT_EQ(readFile((dir / "model.plan").string()).find("\nfallback "), std::string::npos);
  runtime::LoadedArtifact art(dir.string());
  for (const auto& lengths : std::vector<std::vector<int64_t>>{{1, 5}, {6, 0}, {2, 4}}) {
    std::vector<RValue> in = {RValue::of(test::uniformTensor({4, 6}, 3)),
                              RValue::of(tensorOfInts(DType::I64, lengths))};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {0, 0});
  }
}

// Sequences and optionals at the graph's edges are the runtime's own (rt/sequence.h): seq tasks
// build and read them (inputs, outputs, run-time positions, an If's sequence results), with no
// fallback task, matching the interpreter through runs of other lengths and positions.
TEST(CompiledSequences, SequencesAtTheGraphsEdgesAreTheRuntimes) {
  const char* ir = R"(graph @g(%s: seq<f32[?]>, %x: f32[3], %p: i64[], %q: i32[], %c: bool[],
                    %o: opt<f32[3]>, %os: opt<seq<f32[?]>>) {
  %i = SequenceInsert(%s, %x, %p) : seq<f32[?]>
  %e = SequenceErase(%i, %q) : seq<f32[?]>
  %n = SequenceLength(%e) : i64[]
  %a = SequenceAt(%i, %p) : f32[3]
  %sp = SplitToSequence(%x) {axis = 0, keepdims = 0} : seq<f32[]>
  %ox = Optional(%x) : opt<f32[3]>
  %on = Optional() {type = type seq<f32[3]>} : opt<seq<f32[3]>>
  %h1 = OptionalHasElement(%o) : bool[]
  %h2 = OptionalHasElement(%os) : bool[]
  %f = If(%c) {
    then_branch = graph @t() {
      %t1 = SequenceConstruct(%x, %x) : seq<f32[3]>
      return %t1
    },
    else_branch = graph @f() {
      %f1 = SequenceEmpty() {dtype = 1} : seq<f32[3]>
      return %f1
    }
  } : seq<f32[3]>
  return %e, %n, %a, %sp, %ox, %on, %h1, %h2, %f
}
)";
  Model m = parseModel(ir), ref = parseModel(ir);
  const auto dir = test::compileArtifact(m, "aicc_compiled_sequences_edges", {});
  const std::string plan = readFile((dir / "model.plan").string());
  EXPECT_EQ(plan.find("\nfallback "), std::string::npos) << plan;
  runtime::LoadedArtifact art(dir.string());
  struct Case {
    std::vector<int64_t> lengths;
    int64_t p;
    int32_t q;
    bool c, o, os;
  };
  for (const Case& k : std::vector<Case>{{{2, 5}, 1, -1, true, true, true},
                                         {{4}, 0, 0, false, false, false},
                                         {{1, 3, 7, 2}, 4, -5, true, false, true},
                                         {{}, 0, 0, false, true, false}}) {
    const std::vector<RValue> in = {seq(k.lengths, 7),
                                    RValue::of(test::uniformTensor({3}, 2)),
                                    RValue::of(Tensor::scalar(DType::I64, double(k.p))),
                                    RValue::of(Tensor::scalar(DType::I32, double(k.q))),
                                    RValue::of(Tensor::scalar(DType::Bool, k.c)),
                                    k.o ? RValue::of(test::uniformTensor({3}, 4)) : RValue::none(),
                                    k.os ? seq({2, 0}, 9) : RValue::none()};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {0, 0});
  }
  // A position out of range and an empty optional read are the run's errors, naming the node;
  // the instance runs again afterwards.
  const char* get = "graph @g(%os: opt<seq<f32[?]>>) {\n"
                    "  %gs = OptionalGetElement(%os) : seq<f32[?]>\n  return %gs\n}\n";
  Model m2 = parseModel(get), ref2 = parseModel(get);
  const auto dir2 = test::compileArtifact(m2, "aicc_compiled_sequences_get", {});
  EXPECT_EQ(readFile((dir2 / "model.plan").string()).find("\nfallback "), std::string::npos);
  runtime::LoadedArtifact art2(dir2.string());
  auto runError = [&](int64_t p, bool os) {
    try {
      art.run({seq({2}, 1), RValue::of(test::uniformTensor({3}, 2)),
               RValue::of(Tensor::scalar(DType::I64, double(p))),
               RValue::of(Tensor::scalar(DType::I32, 0)),
               RValue::of(Tensor::scalar(DType::Bool, 1)), RValue::none(), RValue::none()});
      art2.run({os ? seq({1, 4}, 3) : RValue::none()});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(runError(3, true).find("(SequenceInsert): position 3 is out of range for a sequence "
                                   "of 1 tensors"),
            std::string::npos)
      << runError(3, true);
  EXPECT_NE(runError(0, false).find("(OptionalGetElement): the optional is empty"),
            std::string::npos)
      << runError(0, false);
  EXPECT_EQ(runError(1, true), "");
  test::expectOutputsClose(interpret(*ref2.graph, {seq({1, 4}, 3)}), art2.run({seq({1, 4}, 3)}),
                           {0, 0});
}

// The C API passes sequences and optionals (include/aicc/runtime.h): set as lists of tensors, read
// back tensor by tensor, checked against the declaration.
TEST(CompiledSequences, TheCApiPassesSequences) {
  const char* ir = R"(graph @g(%s: seq<f32[2,?]>, %x: f32[2,3], %o: opt<i64[]>) {
  %i = SequenceInsert(%s, %x) : seq<f32[2,?]>
  %h = OptionalHasElement(%o) : bool[]
  return %i, %h
}
)";
  Model m = parseModel(ir);
  const auto dir = test::compileArtifact(m, "aicc_compiled_sequences_c", {});
  aicc_model* cm = aicc_model_load(dir.c_str());
  ASSERT_TRUE(cm) << aicc_last_error();
  EXPECT_STREQ(aicc_model_input_type(cm, 0), "seq<f32[2,?]>");
  EXPECT_STREQ(aicc_model_input_dtype(cm, 0), "f32");
  EXPECT_EQ(aicc_model_input_type(cm, 1), nullptr);
  const float a[4] = {1, 2, 3, 4}, x[6] = {5, 6, 7, 8, 9, 10};
  const int64_t da[2] = {2, 2}, bad[2] = {3, 2}, one = 7;
  const void* data[1] = {a};
  const int64_t* dims[1] = {da};
  const int ranks[1] = {2};
  // Checked against the declaration: a dim 3 where 2 is declared, a tensor setter, a rank.
  const int64_t* badDims[1] = {bad};
  EXPECT_NE(aicc_model_set_input_sequence(cm, 0, 1, data, badDims, ranks), 0);
  EXPECT_NE(std::string(aicc_last_error()).find("input 's': tensor 0 has dims [3,2]"),
            std::string::npos)
      << aicc_last_error();
  EXPECT_NE(aicc_model_set_input(cm, 0, a, sizeof a), 0);
  EXPECT_NE(aicc_model_set_input_sequence(cm, 1, 1, data, dims, ranks), 0);
  ASSERT_EQ(aicc_model_set_input_sequence(cm, 0, 1, data, dims, ranks), 0) << aicc_last_error();
  ASSERT_EQ(aicc_model_set_input(cm, 1, x, sizeof x), 0) << aicc_last_error();
  for (int present : {1, 0}) {
    const void* od[1] = {&one};
    const int scalar[1] = {0};
    ASSERT_EQ(aicc_model_set_input_sequence(cm, 2, present ? 1 : -1, od, nullptr, scalar), 0)
        << aicc_last_error();
    ASSERT_EQ(aicc_model_run(cm), 0) << aicc_last_error();
    int count = 0;
    ASSERT_EQ(aicc_model_output_sequence(cm, 0, &count), 0) << aicc_last_error();
    ASSERT_EQ(count, 2);
    const float* want[2] = {a, x};
    for (int k = 0; k < 2; ++k) {
      const void* p = nullptr;
      size_t bytes = 0;
      int64_t d[4];
      ASSERT_EQ(aicc_model_output_item(cm, 0, k, &p, &bytes, d, 4), 2) << aicc_last_error();
      EXPECT_EQ(d[0], 2);
      EXPECT_EQ(d[1], k ? 3 : 2);
      ASSERT_EQ(bytes, size_t(d[0] * d[1]) * sizeof(float));
      EXPECT_EQ(std::memcmp(p, want[k], bytes), 0);
    }
    EXPECT_EQ(aicc_model_output_item(cm, 0, 2, nullptr, nullptr, nullptr, 0), -1);
    EXPECT_EQ(*static_cast<const bool*>(aicc_model_output(cm, 1, nullptr)), present == 1);
    EXPECT_NE(aicc_model_output_sequence(cm, 1, &count), 0); // a tensor
  }
  aicc_model_free(cm);
}

// SequenceMap's body is an artifact of its own, compiled for symbolic input sizes and run once
// per item by the runtime (rt/sequence.h Map): items of other lengths in each run, two results
// (one of the item's size, one static), a tensor input every item shares; through the artifact,
// the C API and the JIT, with no fallback. An item past the body's bounds is the run's error.
TEST(CompiledSequences, SequenceMapRunsItsBodyPerItem) {
  const char* ir = R"(graph @g(%s: seq<f32[?]>, %t: seq<f32[?]>, %w: f32[]) {
  %y, %z = SequenceMap(%s, %t, %w) {
    body = graph @b(%a: f32[L], %b: f32[L], %c: f32[]) {
      %m = Mul(%a, %c) : f32[L]
      %d = Sub(%m, %b) : f32[L]
      %r = Relu(%d) : f32[L]
      %h = Shape(%a) : i64[1]
      return %r, %h
    }
  } : seq<f32[?]>, seq<i64[1]>
  return %y, %z
}
)";
  Model m = parseModel(ir), ref = parseModel(ir);
  const auto dir = test::compileArtifact(m, "aicc_compiled_sequences_map", {});
  EXPECT_EQ(readFile((dir / "model.plan").string()).find("\nfallback "), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "body0" / "model.so"));
  runtime::LoadedArtifact art(dir.string());
  for (const auto& lengths : std::vector<std::vector<int64_t>>{{3, 17}, {1}, {}, {100, 2, 64}}) {
    const std::vector<RValue> in = {seq(lengths, 1), seq(lengths, 50),
                                    RValue::of(Tensor::scalar(DType::F32, 1.5))};
    const auto want = interpret(*ref.graph, in);
    test::expectOutputsClose(want, art.run(in), {1e-6, 1e-6});
    expectJitMatches(ref, in, {1e-6, 1e-6}, "");
  }
  // Items of different lengths in one run are the body's error (its L), named with the item.
  try {
    art.run({seq({2, 3}, 1), seq({2, 4}, 9), RValue::of(Tensor::scalar(DType::F32, 1))});
    ADD_FAILURE() << "items of lengths 3 and 4 ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(SequenceMap): item 1: "), std::string::npos) << e.what();
  }
  // Through the C API: a sequence in, the body's results out.
  aicc_model* cm = aicc_model_load(dir.c_str());
  ASSERT_TRUE(cm) << aicc_last_error();
  const float a[2] = {1, -2}, b[2] = {0.5f, 0.5f}, w = 2;
  const int64_t d2[1] = {2};
  const void* da[1] = {a};
  const void* db[1] = {b};
  const int64_t* dims[1] = {d2};
  const int ranks[1] = {1};
  ASSERT_EQ(aicc_model_set_input_sequence(cm, 0, 1, da, dims, ranks), 0) << aicc_last_error();
  ASSERT_EQ(aicc_model_set_input_sequence(cm, 1, 1, db, dims, ranks), 0) << aicc_last_error();
  ASSERT_EQ(aicc_model_set_input(cm, 2, &w, sizeof w), 0) << aicc_last_error();
  ASSERT_EQ(aicc_model_run(cm), 0) << aicc_last_error();
  const void* p = nullptr;
  size_t bytes = 0;
  int64_t d[2];
  ASSERT_EQ(aicc_model_output_item(cm, 0, 0, &p, &bytes, d, 2), 1) << aicc_last_error();
  ASSERT_EQ(bytes, 2 * sizeof(float));
  EXPECT_EQ(static_cast<const float*>(p)[0], 1.5f); // relu(1 * 2 - 0.5)
  EXPECT_EQ(static_cast<const float*>(p)[1], 0.0f); // relu(-2 * 2 - 0.5)
  ASSERT_EQ(aicc_model_output_item(cm, 1, 0, &p, &bytes, d, 2), 1) << aicc_last_error();
  EXPECT_EQ(*static_cast<const int64_t*>(p), 2);
  aicc_model_free(cm);
}

// A body compiled apart takes its symbols' sizes from what they meet in broadcasts
// (passes/data_dims.h mergeSymbolsMetInBroadcasts): items of length N added to a tensor of 4 are
// of length 4, compiled as such; an item of another length is the run's error, naming the item
// and the dim.
TEST(CompiledSequences, ABodysSymbolsTakeTheSizesTheyMeet) {
  const char* ir = R"(graph @g(%s: seq<f32[N]>, %t: f32[4]) {
  %y = SequenceMap(%s, %t) {
    body = graph @b(%a: f32[N], %b: f32[4]) {
      %c = Add(%a, %b) : f32[4]
      return %c
    }
  } : seq<f32[4]>
  return %y
}
)";
  Model m = parseModel(ir), ref = parseModel(ir);
  const auto dir = test::compileArtifact(m, "aicc_compiled_sequences_met", {});
  EXPECT_EQ(readFile((dir / "body0" / "model.plan").string()).find("\nfallback "),
            std::string::npos);
  runtime::LoadedArtifact art(dir.string());
  const RValue t = RValue::of(test::uniformTensor({4}, 3));
  const std::vector<RValue> in = {
      RValue::ofSeq({test::uniformTensor({4}, 1), test::uniformTensor({4}, 2)}), t};
  test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {0, 0});
  expectJitMatches(ref, in, {0, 0}, "");
  try {
    art.run({RValue::ofSeq({test::uniformTensor({4}, 1), test::uniformTensor({3}, 2)}), t});
    ADD_FAILURE() << "an item of length 3 ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("item 1: input 'a': dim 0 is 3, the model takes 4"),
              std::string::npos)
        << e.what();
  }
}

// A Loop that carries a sequence (here with a slice of run-time length, and a SequenceAt of the
// iteration's position into a value sized at run time) runs its body as an artifact of its own
// per iteration (rt::SeqOp::Loop): no fallback, through trip counts 0..4 and the body's reads
// of the enclosing graph (a sequence and a tensor); the JIT alike.
TEST(CompiledSequences, LoopsCarryingSequencesRunTheirBodyPerIteration) {
  const char* ir = R"(graph @g(%n: i64[], %s: seq<f32[?]>, %x: f32[6]) {
  %c = const bool[] [1]
  %e = SequenceEmpty() {dtype = 1} : seq<f32[?]>
  %out = Loop(%n, %c, %e) {
    body = graph @b(%i: i64[], %ci: bool[], %acc: seq<f32[?]>) {
      %one = const i64[1] [1]
      %zero = const i64[1] [0]
      %i1 = Unsqueeze(%i, %zero) : i64[1]
      %end = Add(%i1, %one) : i64[1]
      %sl = Slice(%x, %zero, %end) : f32[?]
      %a1 = SequenceInsert(%acc, %sl) : seq<f32[?]>
      %it = SequenceAt(%s, %i) : f32[?]
      %tw = Add(%it, %it) : f32[?]
      %a2 = SequenceInsert(%a1, %tw) : seq<f32[?]>
      %co = Identity(%ci) : bool[]
      return %co, %a2
    }
  } : seq<f32[?]>
  return %out
}
)";
  Model m = parseModel(ir), ref = parseModel(ir);
  const auto dir = test::compileArtifact(m, "aicc_compiled_sequences_loop", {});
  const std::string plan = readFile((dir / "model.plan").string());
  EXPECT_EQ(plan.find("\nfallback "), std::string::npos) << plan;
  EXPECT_EQ(readFile((dir / "body0" / "model.plan").string()).find("\nfallback "),
            std::string::npos);
  runtime::LoadedArtifact art(dir.string());
  std::vector<Tensor> items;
  for (int64_t l : {3, 1, 7, 2}) items.push_back(test::uniformTensor({l}, uint32_t(l)));
  for (int64_t trips : {0, 1, 4}) {
    const std::vector<RValue> in = {RValue::of(Tensor::scalar(DType::I64, double(trips))),
                                    RValue::ofSeq(items), RValue::of(test::uniformTensor({6}, 5))};
    test::expectOutputsClose(interpret(*ref.graph, in), art.run(in), {0, 0});
    expectJitMatches(ref, in, {0, 0}, "");
  }
  // Past the sequence's end: the body's SequenceAt fails, named with the iteration.
  try {
    art.run({RValue::of(Tensor::scalar(DType::I64, 5)), RValue::ofSeq(items),
             RValue::of(test::uniformTensor({6}, 5))});
    ADD_FAILURE() << "ran past the sequence";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(Loop): iteration 4: "), std::string::npos) << e.what();
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
