// Ops along one axis through the JIT, against the interpreter: Hardmax (ties keep the first
// maximum, a NaN in front wins as in the reference) and LpNormalization (p = 1 and 2, rows of
// zeros give zeros) over every axis of a 3-D input; CumSum / CumProd with the axis given at run
// time (every axis, negative ones, exclusive, reverse; f32 and wrapping i64), and an axis out of
// range as an error; LpPool windows (p 1-3, pads, strides, dilations, 1-D and 2-D); TopK (largest
// and smallest, ties, NaN, every axis) with K at run time, another K an error; LRN (odd and even
// windows clipped at the first and last channel, f32 and f64); Einsum (explicit, implicit,
// diagonal, ellipsis, broadcast, full sum, three operands). Det (pivoting, singular and zero
// matrices, a batch of them, f32 and f64).
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

TEST(JitAxisOps, DetMatchesTheInterpreter) {
  for (const char* t : {"f32", "f64"}) {
    Model m = parseModel(std::string("graph @g(%x: ") + t + "[2,3,4,4]) {\n  %y = Det(%x) : " + t +
                         "[2,3]\n  return %y\n}\n");
    Tensor x = test::uniformTensor({2, 3, 4, 4}, 17, -2, 2).castTo(m.graph->inputs[0]->type.dtype);
    for (int64_t e = 0; e < 4; ++e) x.setF64(16 + e * 4, x.getF64(16 + e * 4 + 1)); // equal columns
    for (int64_t e = 0; e < 16; ++e) x.setF64(32 + e, 0);                           // all zeros
    x.setF64(48, 0); // a zero first pivot candidate: the row swap
    expectJitMatches(m, {RValue::of(x)}, {1e-6, 1e-7}, "partial pivoting");
  }
}

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

TEST(JitAxisOps, CumSumAndCumProdWithTheAxisAtRunTime) {
  for (const char* op : {"CumSum", "CumProd"})
    for (const char* type : {"f32", "i64"})
      for (const char* attrs :
           {"", " {exclusive = 1}", " {reverse = 1}", " {exclusive = 1, reverse = 1}"}) {
        SCOPED_TRACE(std::string(op) + " " + type + attrs);
        Model m =
            parseModel(std::string("graph @g(%x: ") + type + "[3,4,5], %a: i32[]) {\n  %y = " + op +
                       "(%x, %a)" + attrs + "\n  return %y\n}\n");
        inferShapes(*m.graph);
        runtime::JitExecutable exe(*m.graph);
        Tensor x(std::string(type) == "f32" ? DType::F32 : DType::I64, {3, 4, 5});
        std::mt19937 rng(4);
        for (int64_t i = 0; i < x.numel(); ++i)
          x.setF64(i, std::string(type) == "f32" ? double(int(rng() % 9) - 4) * 0.5
                                                 : double(int64_t(rng()) - (int64_t(1) << 31)));
        for (int32_t axis : {0, 1, 2, -1, -3}) {
          Tensor a(DType::I32, {});
          a.data<int32_t>()[0] = axis;
          const std::vector<RValue> in = {RValue::of(x), RValue::of(a)};
          const auto got = exe.run(in);
          EXPECT_EQ(exe.stats().fallback, 0);
          const auto want = interpret(*m.graph, in);
          auto diff = compareValues(want[0], got[0], {1e-5, 1e-6});
          EXPECT_FALSE(diff) << "axis " << axis << ": " << *diff;
        }
        Tensor bad(DType::I32, {});
        bad.data<int32_t>()[0] = 3;
        EXPECT_THROW(exe.run({RValue::of(x), RValue::of(bad)}), Error);
      }
}

TEST(JitAxisOps, LpPoolMatchesTheInterpreter) {
  const char* graphs[] = {
      "graph @g(%x: f32[2,3,9,8]) {\n  %y = LpPool(%x) {kernel_shape = [3, 2], p = 2} : "
      "f32[2,3,7,7]\n  return %y\n}\n",
      "graph @g(%x: f32[2,3,9,8]) {\n  %y = LpPool(%x) {kernel_shape = [3, 3], p = 1, "
      "pads = [1, 1, 1, 1], strides = [2, 2]} : f32[2,3,5,4]\n  return %y\n}\n",
      "graph @g(%x: f32[1,2,11]) {\n  %y = LpPool(%x) {kernel_shape = [3], p = 3, "
      "dilations = [2]} : f32[1,2,7]\n  return %y\n}\n"};
  for (const char* g : graphs) {
    SCOPED_TRACE(g);
    Model m = parseModel(g);
    inferShapes(*m.graph);
    Tensor x(DType::F32, *toDims(*m.graph->inputs[0]->type.shape));
    std::mt19937 rng(3);
    for (int64_t i = 0; i < x.numel(); ++i)
      x.data<float>()[i] = std::uniform_real_distribution<float>(-2, 2)(rng);
    expectJitMatches(m, {RValue::of(x)}, {1e-5, 1e-6}, "kind = \"pool\"");
  }
}

TEST(JitAxisOps, TopKMatchesTheInterpreter) {
  Tensor x(DType::F32, {3, 4, 5});
  std::mt19937 rng(5);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(int(rng() % 5)); // ties
  x.data<float>()[7] = std::nanf("");
  for (int axis : {0, 1, 2})
    for (int largest : {0, 1}) {
      Dims out = {3, 4, 5};
      out[size_t(axis)] = axis == 0 ? 2 : 3;
      const std::string o = "[" + std::to_string(out[0]) + "," + std::to_string(out[1]) + "," +
                            std::to_string(out[2]) + "]";
      SCOPED_TRACE("axis " + std::to_string(axis) + " largest " + std::to_string(largest));
      Model m =
          parseModel("graph @g(%x: f32[3,4,5], %k: i64[1]) {\n  %v, %i = TopK(%x, %k) {axis = " +
                     std::to_string(axis) + ", largest = " + std::to_string(largest) + "} : f32" +
                     o + ", i64" + o + "\n  return %v, %i\n}\n");
      inferShapes(*m.graph);
      Tensor k(DType::I64, {1});
      k.data<int64_t>()[0] = out[size_t(axis)];
      expectJitMatches(m, {RValue::of(x), RValue::of(k)}, {0, 0}, "kind = \"reduce\"");
      runtime::JitExecutable exe(*m.graph);
      k.data<int64_t>()[0] = 1;
      EXPECT_THROW(exe.run({RValue::of(x), RValue::of(k)}), Error);
    }
}

TEST(JitAxisOps, LrnMatchesTheInterpreter) {
  for (const std::string type : {"f32", "f64"})
    for (int size : {1, 3, 4, 7}) {
      SCOPED_TRACE(type + " size " + std::to_string(size));
      const DType t = *dtypeFromName(type);
      Tensor x(t, {2, 5, 3, 2});
      std::mt19937 rng(size);
      for (int64_t i = 0; i < x.numel(); ++i) x.setF64(i, double(int(rng() % 200) - 100) / 17);
      Model m = parseWithShapes("graph @g(%x: " + type + "[2,5,3,2]) {\n  %y = LRN(%x) {alpha = " +
                                "0.002, beta = 0.6, bias = 1.5, size = " + std::to_string(size) +
                                "}\n  return %y\n}\n");
      expectJitMatches(m, {RValue::of(x)}, {1e-6, 0}, "size");
    }
}

// Einsum as one nest: explicit and implicit outputs, a repeated label (a diagonal), ellipsis dims
// right-aligned across operands of different ranks, a size-1 dim broadcast against its label, a
// full sum to a scalar, three operands, f64.
TEST(JitAxisOps, EinsumMatchesTheInterpreter) {
  struct Case {
    std::string eq;
    std::vector<Dims> ins;
    DType t = DType::F32;
  };
  const Case cases[] = {
      {"ij,jk->ik", {{5, 7}, {7, 3}}},
      {"ij,jk", {{4, 6}, {6, 5}}},                 // implicit: "ik"
      {"...ii->...i", {{2, 3, 4, 4}}},             // batch diagonal
      {"b...k,...kn->b...n", {{2, 3, 4}, {4, 5}}}, // ellipsis of ranks 1 and 0
      {"ij,ij->i", {{6, 1}, {6, 4}}},              // j broadcast from size 1
      {"ijk->", {{3, 4, 5}}},                      // everything summed
      {"ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}, DType::F64},
      {"ji", {{3, 5}}}, // implicit transpose: the output is "ij"
  };
  std::mt19937 rng(21);
  std::uniform_real_distribution<double> u(-1, 1);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.eq);
    const std::string tn = c.t == DType::F32 ? "f32" : "f64";
    std::string sig, args;
    std::vector<RValue> in;
    for (size_t i = 0; i < c.ins.size(); ++i) {
      sig +=
          (i ? ", " : "") + std::string("%x") + std::to_string(i) + ": " + tn + dimsText(c.ins[i]);
      args += (i ? ", " : "") + std::string("%x") + std::to_string(i);
      Tensor x(c.t, c.ins[i]);
      for (int64_t k = 0; k < x.numel(); ++k) x.setF64(k, u(rng));
      in.push_back(RValue::of(x));
    }
    const Model m = parseWithShapes("graph @g(" + sig + ") {\n  %y = Einsum(" + args +
                                    ") {equation = \"" + c.eq + "\"}\n  return %y\n}\n");
    expectJitMatches(m, in, {1e-5, 1e-6}, "kind = \"reduce\"");
  }
}

} // namespace
} // namespace aicc
