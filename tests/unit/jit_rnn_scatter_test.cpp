// GRU and LSTM (micro-kernel calls, kernels/rnn.h), ScatterND and ScatterElements (loop nests)
// through the JIT
// (runtime::runJit): small graphs over every direction, linear_before_reset / input_forget,
// peepholes, optional input and output, clip, activation and reduction, compared with the
// interpreter. Every node must lower (no fallback).
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "jit_check.h"
#include "loop/lower.h"
#include "runtime/jit_executor.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace aicc {
namespace {

Tensor randomTensor(DType t, const Dims& d, std::mt19937& rng) {
  Tensor x(t, d);
  std::uniform_real_distribution<double> u(-2, 2);
  for (int64_t i = 0; i < x.numel(); ++i) x.setF64(i, u(rng));
  return x;
}

// Runs the graph of `text` through the JIT and the interpreter on random inputs.
void expectJitMatchesInterpreter(const std::string& text, uint32_t seed = 1) {
  SCOPED_TRACE(text);
  Model m = parseModel(text);
  std::mt19937 rng(seed);
  std::vector<RValue> in;
  for (const Value* v : m.graph->inputs)
    in.push_back(RValue::of(randomTensor(v->type.dtype, *toDims(*v->type.shape), rng)));
  runtime::JitStats st;
  std::vector<RValue> actual;
  ASSERT_NO_THROW(actual = runtime::runJit(*m.graph, in, {}, &st));
  EXPECT_EQ(st.fallback, 0) << (st.fallbackReasons.empty() ? "" : st.fallbackReasons[0]);
  auto expected = interpret(*m.graph, in);
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    auto diff = compareValues(expected[k], actual[k], {1e-5, 1e-6});
    EXPECT_FALSE(diff) << "output " << k << ": " << *diff;
  }
}

// A GRU over X [5, 3, 3] with hidden size 4; `extra` adds graph inputs (B, initial_h),
// `consts` constant inputs (sequence_lens), `args` names inputs 3..5 of the GRU.
std::string gruGraph(const std::string& attrs, const std::string& extra, const std::string& consts,
                     const std::string& args, int dirs, const std::string& outs = "%y, %yh") {
  std::string d = std::to_string(dirs);
  std::string types = outs == "%y, %yh"  ? "f32[5," + d + ",3,4], f32[" + d + ",3,4]"
                      : outs == "_, %yh" ? "f32[" + d + ",3,4]"
                                         : "f32[5," + d + ",3,4]";
  std::string ret = outs == "%y, %yh" ? "%y, %yh" : outs == "_, %yh" ? "%yh" : "%y";
  return "graph @g(%x: f32[5,3,3], %w: f32[" + d + ",12,3], %r: f32[" + d + ",12,4]" + extra +
         ") {\n" + consts + "  " + outs + " = GRU(%x, %w, %r" + args + ") {" + attrs +
         "} : " + types + "\n  return " + ret + "\n}\n";
}

// Why the last node of `text` does not lower (it must not).
std::string declineReason(const std::string& text, const loop::LowerOptions& o) {
  Model m = parseModel(text);
  std::string reason;
  EXPECT_FALSE(loop::lowerNode(*m.graph->nodes.back(), "f", &reason, o)) << text;
  return reason;
}

std::string biasInput(int dirs) { return ", %b: f32[" + std::to_string(dirs) + ",24]"; }
std::string h0Input(int dirs) { return ", %h0: f32[" + std::to_string(dirs) + ",3,4]"; }
const char* kLens = "  %sl = const i32[3] [5, 2, 0]\n";

TEST(JitRnn, GruForwardAndReverseMatchTheInterpreter) {
  for (const char* dir : {"forward", "reverse"})
    for (int lbr : {0, 1}) {
      std::string attrs = "direction = \"" + std::string(dir) + "\", hidden_size = 4, " +
                          "linear_before_reset = " + std::to_string(lbr);
      expectJitMatchesInterpreter(
          gruGraph(attrs, biasInput(1) + h0Input(1), "", ", %b, _, %h0", 1));
      expectJitMatchesInterpreter(gruGraph(attrs, "", "", "", 1), 2);
      expectJitMatchesInterpreter(gruGraph(attrs, h0Input(1), kLens, ", _, %sl, %h0", 1), 3);
    }
}

TEST(JitRnn, GruBidirectionalMatchesTheInterpreter) {
  for (int lbr : {0, 1}) {
    std::string attrs = "direction = \"bidirectional\", hidden_size = 4, linear_before_reset = " +
                        std::to_string(lbr);
    expectJitMatchesInterpreter(
        gruGraph(attrs, biasInput(2) + h0Input(2), kLens, ", %b, %sl, %h0", 2));
    expectJitMatchesInterpreter(gruGraph(attrs, biasInput(2), "", ", %b", 2), 4);
  }
}

TEST(JitRnn, GruClipActivationsAndOptionalOutputs) {
  expectJitMatchesInterpreter(gruGraph("hidden_size = 4, clip = 0.75", biasInput(1), "", ", %b", 1),
                              5);
  expectJitMatchesInterpreter(
      gruGraph("direction = \"bidirectional\", hidden_size = 4, "
               "activations = [\"Sigmoid\", \"Relu\", \"Tanh\", \"Sigmoid\"]",
               biasInput(2), "", ", %b", 2),
      6);
  expectJitMatchesInterpreter(gruGraph("hidden_size = 4", "", "", "", 1, "_, %yh"), 7);
  expectJitMatchesInterpreter(gruGraph("hidden_size = 4", "", "", "", 1, "%y"), 8);
}

TEST(JitRnn, GruDeclinesWhatTheKernelDoesNotCompute) {
  loop::LowerOptions jit;
  jit.runtimeKernels = true;
  std::string softsign =
      gruGraph("hidden_size = 4, activations = [\"Softsign\", \"Tanh\"]", "", "", "", 1);
  EXPECT_NE(declineReason(softsign, jit).find("Softsign"), std::string::npos);
  // Not for the C bundle (no portable stand-in of the call).
  EXPECT_NE(declineReason(gruGraph("hidden_size = 4", "", "", "", 1), {}).find("JIT"),
            std::string::npos);
}

// An LSTM over X [4, 3, 3] (T, batch, I) with hidden size 5. `inputs` names the optional inputs
// present, among "b" (B), "sl" (sequence_lens, a constant), "h0", "c0" and "p" (P); `outs` the
// outputs kept, among "y", "yh" and "yc".
struct LstmCase {
  std::string attrs;
  int dirs = 1;
  std::set<std::string> inputs, outs = {"y", "yh", "yc"};
  std::string lens = "[4, 2, 0]";
};

std::string lstmGraph(const LstmCase& c) {
  const std::string d = std::to_string(c.dirs), state = "f32[" + d + ",3,5]";
  const std::pair<const char*, std::string> optional[] = {{"b", "f32[" + d + ",40]"},
                                                          {"sl", ""},
                                                          {"h0", state},
                                                          {"c0", state},
                                                          {"p", "f32[" + d + ",15]"}};
  std::string params, args, consts;
  std::string pending; // "_" of absent inputs, written once a later input is present
  for (const auto& [name, type] : optional) {
    pending += ", _";
    if (!c.inputs.count(name)) continue;
    args += pending.substr(0, pending.size() - 1) + "%" + name;
    pending.clear();
    if (type.empty())
      consts = "  %sl = const i32[3] " + c.lens + "\n";
    else
      params += ", %" + std::string(name) + ": " + type;
  }
  const std::pair<const char*, std::string> outputs[] = {
      {"y", "f32[4," + d + ",3,5]"}, {"yh", state}, {"yc", state}};
  std::string outs, types, ret;
  pending.clear();
  for (const auto& [name, type] : outputs) {
    if (!c.outs.count(name)) {
      pending += "_, ";
      continue;
    }
    outs += pending + "%" + name + ", ";
    pending.clear();
    types += (types.empty() ? "" : ", ") + type;
    ret += (ret.empty() ? "%" : ", %") + std::string(name);
  }
  outs.resize(outs.size() - 2);
  return "graph @g(%x: f32[4,3,3], %w: f32[" + d + ",20,3], %r: f32[" + d + ",20,5]" + params +
         ") {\n" + consts + "  " + outs + " = LSTM(%x, %w, %r" + args + ") {hidden_size = 5" +
         (c.attrs.empty() ? "" : ", " + c.attrs) + "} : " + types + "\n  return " + ret + "\n}\n";
}

TEST(JitRnn, LstmForwardAndReverseMatchTheInterpreter) {
  uint32_t seed = 40;
  for (const char* dir : {"forward", "reverse"}) {
    std::string attrs = "direction = \"" + std::string(dir) + "\"";
    expectJitMatchesInterpreter(lstmGraph({attrs, 1, {"b", "h0", "c0", "p"}}), seed++);
    expectJitMatchesInterpreter(lstmGraph({attrs, 1, {}}), seed++);
    expectJitMatchesInterpreter(lstmGraph({attrs, 1, {"sl", "h0", "c0"}}), seed++);
    expectJitMatchesInterpreter(lstmGraph({attrs, 1, {"b", "sl", "p"}}), seed++);
  }
}

TEST(JitRnn, LstmBidirectionalMatchesTheInterpreter) {
  const std::string bi = "direction = \"bidirectional\"";
  // Every input, sequences shorter than T (and one empty).
  expectJitMatchesInterpreter(lstmGraph({bi, 2, {"b", "sl", "h0", "c0", "p"}}), 50);
  expectJitMatchesInterpreter(
      lstmGraph({bi, 2, {"b", "sl", "h0", "c0", "p"}, {"y", "yh", "yc"}, "[3, 1, 2]"}), 51);
  expectJitMatchesInterpreter(lstmGraph({bi, 2, {"b"}}), 52);
  expectJitMatchesInterpreter(lstmGraph({bi, 2, {"sl", "p"}, {"y", "yc"}, "[2, 3, 1]"}), 53);
}

TEST(JitRnn, LstmClipInputForgetAndActivations) {
  const std::string bi = "direction = \"bidirectional\"";
  expectJitMatchesInterpreter(lstmGraph({"clip = 0.5", 1, {"b", "p"}}), 60);
  expectJitMatchesInterpreter(lstmGraph({bi + ", clip = 0.75", 2, {"b", "sl", "c0"}}), 61);
  expectJitMatchesInterpreter(lstmGraph({"input_forget = 1", 1, {"b", "h0", "c0", "p"}}), 62);
  expectJitMatchesInterpreter(
      lstmGraph({bi + ", input_forget = 1, clip = 1.0", 2, {"b", "sl", "p"}}), 63);
  expectJitMatchesInterpreter(
      lstmGraph({"activations = [\"Sigmoid\", \"Relu\", \"Relu\"]", 1, {"b", "c0"}}), 64);
  expectJitMatchesInterpreter(lstmGraph({bi + ", activations = [\"Relu\", \"Tanh\", \"Sigmoid\", "
                                              "\"Sigmoid\", \"Sigmoid\", \"Tanh\"]",
                                         2,
                                         {"b", "h0", "p"}}),
                              65);
  expectJitMatchesInterpreter(lstmGraph({bi + ", activations = [\"sigmoid\", \"tanh\", "
                                              "\"relu\"]",
                                         2,
                                         {"b"}}),
                              66);
}

TEST(JitRnn, LstmAnySubsetOfTheOutputs) {
  uint32_t seed = 70;
  for (std::set<std::string> outs : std::vector<std::set<std::string>>{
           {"y"}, {"yh"}, {"yc"}, {"y", "yh"}, {"y", "yc"}, {"yh", "yc"}})
    for (int dirs : {1, 2})
      expectJitMatchesInterpreter(lstmGraph({dirs == 2 ? "direction = \"bidirectional\"" : "",
                                             dirs,
                                             {"b", "sl", "c0", "p"},
                                             outs}),
                                  seed++);
}

TEST(JitRnn, LstmDeclinesWhatTheKernelDoesNotCompute) {
  loop::LowerOptions jit;
  jit.runtimeKernels = true;
  std::string hardSigmoid =
      lstmGraph({"activations = [\"HardSigmoid\", \"Tanh\", \"Tanh\"]", 1, {}});
  EXPECT_NE(declineReason(hardSigmoid, jit).find("HardSigmoid"), std::string::npos);
  EXPECT_NE(declineReason(lstmGraph({"", 1, {}}), {}).find("JIT"), std::string::npos);
}

// layout 1 (batch first: X [batch, T, I], the states [batch, dirs, H], Y [batch, T, dirs, H]):
// transposed into the kernel's layout and back; batch 2, T 4, both directions, every output.
TEST(JitRnn, BatchFirstLayoutMatchesTheInterpreter) {
  for (int dirs : {1, 2}) {
    const std::string d = std::to_string(dirs), dir = dirs == 2 ? "bidirectional" : "reverse";
    const std::string state = "f32[2," + d + ",5]";
    expectJitMatchesInterpreter("graph @g(%x: f32[2,4,3], %w: f32[" + d + ",20,3], %r: f32[" + d +
                                    ",20,5], %h0: " + state + ", %c0: " + state +
                                    ") {\n  %y, %yh, %yc = LSTM(%x, %w, %r, _, _, %h0, %c0) "
                                    "{hidden_size = 5, layout = 1, direction = \"" +
                                    dir + "\"} : f32[2,4," + d + ",5], " + state + ", " + state +
                                    "\n  return %y, %yh, %yc\n}\n",
                                80 + dirs);
    expectJitMatchesInterpreter(
        "graph @g(%x: f32[2,4,3], %w: f32[" + d + ",15,3], %r: f32[" + d + ",15,5], %h0: " + state +
            ") {\n  %y, %yh = GRU(%x, %w, %r, _, _, %h0) {hidden_size = 5, layout = 1, "
            "direction = \"" +
            dir + "\"} : f32[2,4," + d + ",5], " + state + "\n  return %y, %yh\n}\n",
        90 + dirs);
  }
}

std::string scatterGraph(const std::string& dtype, const std::string& reduction,
                         const std::string& indices) {
  return "graph @g(%d: " + dtype + "[4,3,5], %u: " + dtype + "[3,5]) {\n  %i = const " + indices +
         "\n  %y = ScatterND(%d, %i, %u) {reduction = \"" + reduction + "\"} : " + dtype +
         "[4,3,5]\n  return %y\n}\n";
}

// RNN (a loop nest in double, as the reference): forward, reverse and bidirectional, layout 0
// and 1, bias and initial_h, constant sequence lengths (one 0), clip, Relu and Sigmoid, only Y_h;
// against the interpreter.
TEST(JitRnn, SimpleRnnMatchesTheInterpreter) {
  const std::string x0 = "%x: f32[4,3,2]", x1 = "%x: f32[3,4,2]";
  struct Case {
    std::string params, consts, args, attrs, types, ret;
  };
  const Case cases[] = {
      {x0 + ", %w: f32[1,5,2], %r: f32[1,5,5]", "", "", "hidden_size = 5",
       "f32[4,1,3,5], f32[1,3,5]", "%y, %yh"},
      {x0 + ", %w: f32[1,5,2], %r: f32[1,5,5], %b: f32[1,10], %h0: f32[1,3,5]", "", ", %b, _, %h0",
       "direction = \"reverse\", clip = 0.5, activations = [\"Relu\"]", "f32[4,1,3,5], f32[1,3,5]",
       "%y, %yh"},
      {x0 + ", %w: f32[2,5,2], %r: f32[2,5,5], %b: f32[2,10]", "  %sl = const i32[3] [4, 0, 2]\n",
       ", %b, %sl", "direction = \"bidirectional\", activations = [\"Sigmoid\", \"Tanh\"]",
       "f32[4,2,3,5], f32[2,3,5]", "%y, %yh"},
      {x1 + ", %w: f32[1,5,2], %r: f32[1,5,5], %h0: f32[3,1,5]", "", ", _, _, %h0", "layout = 1",
       "f32[3,4,1,5], f32[3,1,5]", "%y, %yh"},
      {x0 + ", %w: f32[1,5,2], %r: f32[1,5,5]", "", "", "", "f32[1,3,5]", "_, %yh"},
  };
  uint32_t seed = 90;
  for (const Case& c : cases) {
    const std::string ret = c.ret == "_, %yh" ? "%yh" : c.ret;
    expectJitMatchesInterpreter("graph @g(" + c.params + ") {\n" + c.consts + "  " + c.ret +
                                    " = RNN(%x, %w, %r" + c.args + ") {" + c.attrs +
                                    "} : " + c.types + "\n  return " + ret + "\n}\n",
                                seed++);
  }
}

// Constant W and R (a model's weights) are packed for the GEMM kernel at compile time
// (kernels::packRnnWeights, one weight of the artifact) instead of per call: GRU with and without
// linear_before_reset, bidirectional, and a bidirectional LSTM, against the interpreter.
TEST(JitRnn, ConstantWeightsArePackedAtCompileTime) {
  const std::string texts[] = {
      gruGraph("", "", "", "", 1),
      gruGraph("direction = \"bidirectional\", linear_before_reset = 1", "", "", "", 2),
      gruGraph("direction = \"bidirectional\"", biasInput(2) + h0Input(2), "", ", %b, _, %h0", 2),
      lstmGraph({"direction = \"bidirectional\"", 2, {"b", "h0", "c0", "p"}})};
  uint32_t seed = 80;
  for (const std::string& text : texts) {
    SCOPED_TRACE(text);
    Model m = parseModel(text);
    Graph& g = *m.graph;
    std::mt19937 rng(seed++);
    // %w and %r become constants; the other inputs stay.
    std::vector<Value*> keep;
    for (Value* v : g.inputs) {
      if (v->name != "w" && v->name != "r") {
        keep.push_back(v);
        continue;
      }
      Value* c =
          g.addConstant(v->name + "_c", randomTensor(DType::F32, *toDims(*v->type.shape), rng));
      for (const auto& n : g.nodes)
        for (Value*& in : n->inputs)
          if (in == v) in = c;
    }
    g.inputs = keep;
    std::vector<RValue> in;
    for (const Value* v : g.inputs)
      in.push_back(RValue::of(randomTensor(v->type.dtype, *toDims(*v->type.shape), rng)));
    expectJitMatches(m, in, {1e-5, 1e-6}, "W and R packed at compile time");
  }
}

TEST(JitScatterND, EveryReductionAndNegativeIndicesMatchTheInterpreter) {
  uint32_t seed = 10;
  for (const char* dtype : {"f32", "i32", "i64"})
    for (const char* red : {"none", "add", "mul", "max", "min"}) {
      // Tuples of 2 coordinates (slices of 5), negative ones and a duplicate.
      const char* idx = std::string(red) == "none" ? "i64[3,2] [0, -1, -4, 1, 3, 0]"
                                                   : "i64[3,2] [0, -1, -4, 2, 0, 2]";
      expectJitMatchesInterpreter(scatterGraph(dtype, red, idx), seed++);
    }
  // Whole-row updates ([1] coordinates, int32 indices) and single elements ([3] coordinates).
  expectJitMatchesInterpreter(
      "graph @g(%d: f32[4,3,5], %u: f32[2,3,5]) {\n  %i = const i32[2,1] [-1, 1]\n"
      "  %y = ScatterND(%d, %i, %u) {reduction = \"add\"} : f32[4,3,5]\n  return %y\n}\n",
      30);
  expectJitMatchesInterpreter(
      "graph @g(%d: f32[4,3,5], %u: f32[2]) {\n  %i = const i64[2,3] [3, 2, -1, 0, -3, 4]\n"
      "  %y = ScatterND(%d, %i, %u) : f32[4,3,5]\n  return %y\n}\n",
      31);
}

// ScatterND with its index tuples given at run time: every reduction, negative and duplicate
// tuples, against the interpreter; a component out of range for its own dim (in range for the
// larger first dim) is an error.
TEST(JitScatterND, IndicesGivenAtRunTimeMatchTheInterpreter) {
  uint32_t seed = 60;
  for (const char* red : {"none", "add", "max"}) {
    SCOPED_TRACE(red);
    Model m = parseModel(std::string("graph @g(%d: f32[4,3,5], %i: i64[3,2], %u: f32[3,5]) {\n"
                                     "  %y = ScatterND(%d, %i, %u) {reduction = \"") +
                         red + "\"} : f32[4,3,5]\n  return %y\n}\n");
    std::mt19937 rng(seed++);
    Tensor ind = Tensor::fromI64({0, -1, -4, 2, 3, 0}, {3, 2});
    if (std::string(red) == "none") ind.data<int64_t>()[2] = 1; // (distinct tuples)
    const std::vector<RValue> in = {RValue::of(randomTensor(DType::F32, {4, 3, 5}, rng)),
                                    RValue::of(ind),
                                    RValue::of(randomTensor(DType::F32, {3, 5}, rng))};
    expectJitMatches(m, in, {0, 0}, "");
    ind.data<int64_t>()[3] = 3; // the second component of tuple 1: dim 1 has 3
    EXPECT_THROW(runtime::runJit(*m.graph, {in[0], RValue::of(ind), in[2]}), Error);
  }
}

// TensorScatter (a KV cache's update): linear and circular modes, the default axis -2 and axis
// 1 of a 3-D cache, write indices given at run time (circular ones past the end and negative),
// against the interpreter; a linear write index past cache - update is an error.
TEST(JitTensorScatter, LinearAndCircularMatchTheInterpreter) {
  struct Case {
    std::string graph;
    std::vector<int64_t> idx, bad;
  };
  const Case cases[] = {
      {"graph @g(%p: f32[2,3,6,4], %u: f32[2,3,2,4], %w: i64[2]) {\n"
       "  %y = TensorScatter(%p, %u, %w) : f32[2,3,6,4]\n  return %y\n}\n",
       {4, 0},
       {5, 0}},
      {"graph @g(%p: f32[2,3,6,4], %u: f32[2,3,3,4], %w: i64[2]) {\n"
       "  %y = TensorScatter(%p, %u, %w) {mode = \"circular\"} : f32[2,3,6,4]\n  return %y\n}\n",
       {5, -2},
       {}},
      {"graph @g(%p: f16[3,5,2], %u: f16[3,2,2], %w: i64[3]) {\n"
       "  %y = TensorScatter(%p, %u, %w) {axis = 1} : f16[3,5,2]\n  return %y\n}\n",
       {0, 3, 1},
       {0, -1, 1}},
  };
  std::mt19937 rng(100);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.graph);
    Model m = parseModel(c.graph);
    const Value *p = m.graph->inputs[0], *u = m.graph->inputs[1];
    const std::vector<RValue> in = {
        RValue::of(randomTensor(p->type.dtype, *toDims(*p->type.shape), rng)),
        RValue::of(randomTensor(u->type.dtype, *toDims(*u->type.shape), rng)),
        RValue::of(Tensor::fromI64(c.idx))};
    expectJitMatches(m, in, {0, 0}, "mode");
    if (!c.bad.empty()) {
      EXPECT_THROW(runtime::runJit(*m.graph, {in[0], in[1], RValue::of(Tensor::fromI64(c.bad))}),
                   Error);
    }
  }
}

// ScatterElements: every reduction over each axis, duplicate and negative indices given at run
// time (the runtime checks them), against the interpreter; an index out of range is an error.
TEST(JitScatterElements, EveryReductionAndAxisMatchTheInterpreter) {
  uint32_t seed = 40;
  for (const char* red : {"none", "add", "mul", "max", "min"})
    for (int axis : {0, 1, -1}) {
      SCOPED_TRACE(std::string(red) + " axis " + std::to_string(axis));
      Model m = parseModel(std::string("graph @g(%d: f32[4,3,5], %i: i64[2,3,4], %u: f32[2,3,4]) "
                                       "{\n  %y = ScatterElements(%d, %i, %u) {axis = ") +
                           std::to_string(axis) + ", reduction = \"" + red +
                           "\"} : f32[4,3,5]\n  return %y\n}\n");
      const int64_t dim = axis == 0 ? 4 : axis == 1 ? 3 : 5;
      std::mt19937 rng(seed++);
      Tensor ind(DType::I64, {2, 3, 4});
      for (int64_t e = 0; e < ind.numel(); ++e)
        ind.data<int64_t>()[e] =
            int64_t(rng() % uint32_t(2 * dim)) - dim; // negative and duplicates
      const std::vector<RValue> in = {RValue::of(randomTensor(DType::F32, {4, 3, 5}, rng)),
                                      RValue::of(ind),
                                      RValue::of(randomTensor(DType::F32, {2, 3, 4}, rng))};
      runtime::JitStats st;
      std::vector<RValue> got;
      ASSERT_NO_THROW(got = runtime::runJit(*m.graph, in, {}, &st));
      EXPECT_EQ(st.fallback, 0) << (st.fallbackReasons.empty() ? "" : st.fallbackReasons[0]);
      auto diff = compareValues(interpret(*m.graph, in)[0], got[0], {1e-5, 1e-6});
      EXPECT_FALSE(diff) << *diff;
      ind.data<int64_t>()[5] = dim; // out of range
      EXPECT_THROW(runtime::runJit(*m.graph, {in[0], RValue::of(ind), in[2]}, {}, &st), Error);
    }
}

// GatherND: tuples of 1, 2 and 3 coordinates, batch_dims 0 and 1, negative indices given at run
// time, against the interpreter; a component out of range for its own dim (in range for a larger
// one) is an error.
TEST(JitGatherND, TuplesAndBatchDimsMatchTheInterpreter) {
  struct Case {
    const char* graph;
    Dims idx;
    int64_t batchDims;
  };
  const Case cases[] = {
      {"graph @g(%d: f32[4,3,5], %i: i64[2,2,1]) {\n  %y = GatherND(%d, %i) : f32[2,2,3,5]\n"
       "  return %y\n}\n",
       {2, 2, 1},
       0},
      {"graph @g(%d: f32[4,3,5], %i: i64[3,2]) {\n  %y = GatherND(%d, %i) : f32[3,5]\n"
       "  return %y\n}\n",
       {3, 2},
       0},
      {"graph @g(%d: i32[4,3,5], %i: i64[6,3]) {\n  %y = GatherND(%d, %i) : i32[6]\n"
       "  return %y\n}\n",
       {6, 3},
       0},
      {"graph @g(%d: f32[2,3,5], %i: i64[2,4,1]) {\n  %y = GatherND(%d, %i) {batch_dims = 1} : "
       "f32[2,4,5]\n  return %y\n}\n",
       {2, 4, 1},
       1},
  };
  std::mt19937 rng(70);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.graph);
    Model m = parseModel(c.graph);
    const Value* d = m.graph->inputs[0];
    const Dims dd = *toDims(*d->type.shape);
    Tensor ind(DType::I64, c.idx);
    const int64_t K = c.idx.back(), B = c.batchDims;
    for (int64_t e = 0; e < ind.numel(); ++e) {
      const int64_t dim = dd[size_t(B + e % K)];
      ind.data<int64_t>()[e] = int64_t(rng() % uint32_t(2 * dim)) - dim; // negative ones too
    }
    const std::vector<RValue> in = {RValue::of(randomTensor(d->type.dtype, dd, rng)),
                                    RValue::of(ind)};
    expectJitMatches(m, in, {0, 0}, "");
    if (K > 1) {
      ind.data<int64_t>()[K - 1] = dd[size_t(B + K - 1)]; // the last component: its own dim
      EXPECT_THROW(runtime::runJit(*m.graph, {in[0], RValue::of(ind)}), Error);
    }
  }
}

} // namespace
} // namespace aicc
