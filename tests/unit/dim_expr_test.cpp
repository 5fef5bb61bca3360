// Dimension expressions (ir/dim_expr.h) and symbolic shape inference: the normal form, its text
// round trip, evaluation against plain integer arithmetic, and on the shared models the symbolic
// shapes of every value evaluated at concrete sizes against shape inference run at those sizes.
#include <gtest/gtest.h>

#include "frontend/onnx/onnx_importer.h"
#include "interp/interpreter.h"
#include "ir/dim_expr.h"
#include "ir/graph.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "loop/per_sample.h"
#include "loop/simplify.h"
#include "passes/shape_inference.h"
#include "shared_models.h"

#include <random>

namespace aicc {
namespace {

DimExpr P(const std::string& s) {
  std::string why;
  auto e = DimExpr::parse(s, &why);
  EXPECT_TRUE(e) << s << ": " << why;
  return e ? *e : DimExpr::constant(0);
}

TEST(DimExpr, NormalFormAndText) {
  const DimExpr H = DimExpr::symbol("H"), W = DimExpr::symbol("W");
  EXPECT_EQ((H + DimExpr::constant(0)).str(), "H");
  EXPECT_EQ((H * DimExpr::constant(1)).str(), "H");
  EXPECT_EQ((H - H).str(), "0");
  EXPECT_EQ(((H + DimExpr::constant(1)).floorDiv(2)).str(), "(H+1)/2");
  EXPECT_EQ(((H * DimExpr::constant(2) + DimExpr::constant(3)).floorDiv(2)).str(), "H+1");
  // Two stride-2 layers: floor((floor((H+1)/2) + 1) / 2) = floor((H+3)/4).
  EXPECT_EQ(((H + DimExpr::constant(1)).floorDiv(2) + DimExpr::constant(1)).floorDiv(2).str(),
            "(H+3)/4");
  EXPECT_EQ(H.ceilDiv(32).str(), "(H+31)/32");
  EXPECT_EQ((W * H).str(), (H * W).str());
  EXPECT_EQ((H.floorDiv(2) * DimExpr::constant(3)).str(), "3*(H/2)");
  EXPECT_EQ(DimExpr::symbol("p2o.Dim.1").floorDiv(2).str(), "p2o.Dim.1/2");
  EXPECT_EQ(DimExpr::symbol("a b").str(), "\"a b\"");
  // exact division of products (Reshape's -1)
  auto q =
      (DimExpr::symbol("N") * DimExpr::constant(128 * 768)).exactDiv(DimExpr::constant(128 * 12));
  ASSERT_TRUE(q);
  EXPECT_EQ(q->str(), "64*N");
  EXPECT_EQ((H * W).exactDiv(W)->str(), "H");
  EXPECT_FALSE((H * W + DimExpr::constant(1)).exactDiv(W));
  EXPECT_FALSE(H.exactDiv(DimExpr::constant(2)));
}

TEST(DimExpr, NondecreasingWhenNoTermHasANegativeCoefficient) {
  for (const char* t :
       {"N", "H-4", "(H+3)/4", "S+T", "2*N*S", "(W+1)/2*3-7", "(samples+128)/160-3"})
    EXPECT_TRUE(P(t).nondecreasing()) << t;
  for (const char* t : {"S-T", "10-N", "N*(4-H)"}) EXPECT_FALSE(P(t).nondecreasing()) << t;
}

TEST(DimExpr, ParseRejectsWhatIsNotAnExpression) {
  const std::string deep = std::string(100000, '(') + "H" + std::string(100000, ')');
  for (const std::string bad :
       {"", "H+", "(H", "H/0", "H/W", "2H", "H)", ".x", "H/-2", "99999999999999999999",
        "9999999999*9999999999*9999999999", deep.c_str()}) {
    std::string why;
    EXPECT_FALSE(DimExpr::parse(bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
}

// Random expressions built by the operators: their text parses back to the same normal form, and
// evaluation equals the same arithmetic on integers (floor division) at random sizes.
TEST(DimExpr, EvaluationMatchesIntegerArithmetic) {
  std::mt19937 rng(3);
  const std::vector<std::string> syms = {"N", "H", "W"};
  struct Built {
    DimExpr e;
    std::function<int64_t(const std::map<std::string, int64_t>&)> f;
  };
  auto floorDiv = [](int64_t a, int64_t d) { return a >= 0 ? a / d : -((-a + d - 1) / d); };
  std::function<Built(int)> build = [&](int depth) -> Built {
    const int pick = depth == 0 ? int(rng() % 2) : int(rng() % 6);
    if (pick == 0) {
      const int64_t c = int64_t(rng() % 9);
      return {DimExpr::constant(c), [c](const auto&) { return c; }};
    }
    if (pick == 1) {
      const std::string s = syms[rng() % syms.size()];
      return {DimExpr::symbol(s), [s](const auto& m) { return m.at(s); }};
    }
    Built a = build(depth - 1), b = build(depth - 1);
    switch (pick) {
    case 2:
      return {a.e + b.e, [a, b](const auto& m) { return a.f(m) + b.f(m); }};
    case 3:
      return {a.e - b.e, [a, b](const auto& m) { return a.f(m) - b.f(m); }};
    case 4:
      return {a.e * b.e, [a, b](const auto& m) { return a.f(m) * b.f(m); }};
    default: {
      const int64_t d = int64_t(2 + rng() % 4);
      return {a.e.floorDiv(d), [a, d, floorDiv](const auto& m) { return floorDiv(a.f(m), d); }};
    }
    }
  };
  for (int t = 0; t < 400; ++t) {
    Built b = build(3);
    SCOPED_TRACE(b.e.str());
    EXPECT_EQ(P(b.e.str()).str(), b.e.str());
    for (int k = 0; k < 5; ++k) {
      std::map<std::string, int64_t> m;
      for (const auto& s : syms) m[s] = int64_t(rng() % 300);
      EXPECT_EQ(b.e.evaluate(m), b.f(m));
      // The loop IR's form (what a lowering reads a symbolic size as) computes the same.
      if (b.f(m) < 0) continue; // a dim is never negative
      std::map<std::string, loop::ExprPtr> at;
      for (const auto& [s, v] : m) at[s] = loop::intImm(v);
      const loop::ExprPtr e =
          loop::loopExprOf(b.e, [](const std::string& s) { return loop::var(s); });
      EXPECT_EQ(loop::asInt(loop::simplifyExpr(loop::substitute(e, at))), b.f(m));
    }
  }
}

// Derived dims print as their expressions and parse back (IR text), quoted symbols included.
TEST(DimExpr, IrTextRoundTripsDerivedDims) {
  std::string w = "[";
  for (int i = 0; i < 54; ++i) w += i ? ", 0" : "0";
  const std::string text = "graph @g(%x: f32[N,3,H,\"p W\"]) {\n  %w = const f32[2,3,3,3] " + w +
                           "]\n  %y = Conv(%x, %w) {kernel_shape = [3, 3], strides = [2, 2]}\n"
                           "  %z = Concat(%y, %y) {axis = 2}\n  return %z\n}\n";
  Model m = parseModel(text);
  inferShapes(*m.graph);
  const std::string printed = printModel(m);
  // floor((H - 3) / 2) + 1 = floor((H + 1) / 2) - 1; the Concat doubles it.
  const std::string want = "f32[N,2,2*((H+1)/2)-2,(\"p W\"+1)/2-1]";
  EXPECT_NE(printed.find(want), std::string::npos) << printed;
  Model again = parseModel(printed);
  EXPECT_EQ(printModel(again), printed);
}

// Range up to a symbolic limit: the inferred length, evaluated, equals the length the reference
// kernel produces, for starts 0 and -2 and steps 1, 2, 5 over many sizes.
TEST(DimExpr, RangeLengthMatchesTheKernel) {
  for (int64_t start : {0, -2})
    for (int64_t step : {1, 2, 5}) {
      const std::string text = "graph @g(%x: f32[3,H]) {\n  %sh = Shape(%x)\n"
                               "  %one = const i64[] [1]\n  %h = Gather(%sh, %one) {axis = 0}\n"
                               "  %s = const i64[] [" +
                               std::to_string(start) +
                               "]\n"
                               "  %d = const i64[] [" +
                               std::to_string(step) +
                               "]\n"
                               "  %r = Range(%s, %h, %d)\n  return %r\n}\n";
      Model m = parseModel(text);
      inferShapes(*m.graph);
      const Dim d = (*m.graph->outputs[0]->type.shape)[0];
      auto e = dimExpr(d);
      ASSERT_TRUE(e) << text;
      for (int64_t h = 0; h < 40; ++h) {
        auto got = interpret(*m.graph, {RValue::of(Tensor(DType::F32, {3, h}))});
        EXPECT_EQ(e->evaluate({{"H", h}}), got[0].tensor.numel()) << e->str() << " at H=" << h;
      }
    }
}

// The main graph's inputs and node results.
template <typename F> void forEachValue(const Graph& g, F f) {
  for (const Value* v : g.inputs) f(v);
  for (const auto& n : g.nodes)
    for (const Value* v : n->outputs)
      if (v) f(v);
}

// Every value of the shared models with symbolic inputs: its symbolic dims (input symbols and
// derived expressions), evaluated at a concrete size per symbol, equal what shape inference
// gives when the model is imported with those sizes (ImportOptions::dims), at three sizes.
TEST(DimExpr, SymbolicShapesOfSharedModelsMatchInferenceAtConcreteSizes) {
  struct Case {
    std::string model;
    std::vector<std::map<std::string, int64_t>> sizes;
  };
  const std::vector<Case> cases = {
      {"ppocrv4-det",
       {{{"p2o.DynamicDimension.0", 1},
         {"p2o.DynamicDimension.1", 640},
         {"p2o.DynamicDimension.2", 640}},
        {{"p2o.DynamicDimension.0", 2},
         {"p2o.DynamicDimension.1", 320},
         {"p2o.DynamicDimension.2", 480}},
        {{"p2o.DynamicDimension.0", 1},
         {"p2o.DynamicDimension.1", 96},
         {"p2o.DynamicDimension.2", 1024}}}},
      {"ppocrv4-rec",
       {{{"p2o.DynamicDimension.0", 1}, {"p2o.DynamicDimension.1", 320}},
        {{"p2o.DynamicDimension.0", 3}, {"p2o.DynamicDimension.1", 100}},
        {{"p2o.DynamicDimension.0", 1}, {"p2o.DynamicDimension.1", 1001}}}},
      {"mobilenetv2-12-int8", {{{"batch_size", 1}}, {{"batch_size", 2}}, {{"batch_size", 5}}}},
      {"oww-melspectrogram",
       {{{"batch_size", 1}, {"samples", 16000}},
        {{"batch_size", 2}, {"samples", 1280}},
        {{"batch_size", 1}, {"samples", 17001}}}},
  };
  const auto dir = test::sharedModelsDir();
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no shared models at " << dir;
  int64_t derived = 0, checked = 0;
  for (const Case& c : cases) {
    const auto path = dir / c.model / "model.onnx";
    if (!std::filesystem::exists(path)) {
      std::printf("[ skipped  ] %s: not in the shared folder\n", c.model.c_str());
      continue;
    }
    SCOPED_TRACE(c.model);
    ImportedModel sym = importOnnxFile(path.string());
    std::map<std::string, const Value*> byName;
    forEachValue(*sym.model.graph, [&](const Value* v) { byName[v->name] = v; });
    for (const auto& sizes : c.sizes) {
      ImportOptions o;
      o.dims = sizes;
      ImportedModel fixed = importOnnxFile(path.string(), o);
      forEachValue(*fixed.model.graph, [&](const Value* v) {
        auto it = byName.find(v->name);
        if (it == byName.end() || !v->type.isTensor() || !v->type.shape) return;
        const Type& st = it->second->type;
        if (!st.isTensor() || !st.shape || st.shape->size() != v->type.shape->size()) return;
        for (size_t i = 0; i < st.shape->size(); ++i) {
          const Dim &s = (*st.shape)[i], &f = (*v->type.shape)[i];
          auto e = dimExpr(s);
          // (a symbol of the exporter's own, an output's, is no input size: nothing to evaluate)
          auto got = e ? e->evaluate(sizes) : std::nullopt;
          if (!got || !f.isStatic()) continue;
          derived += s.derived;
          ++checked;
          EXPECT_EQ(*got, f.value) << "value '" << v->name << "' dim " << i << ": "
                                   << formatType(st) << " vs " << formatType(v->type);
        }
      });
    }
  }
  std::printf("checked %lld dims, %lld of them derived expressions\n", (long long)checked,
              (long long)derived);
  EXPECT_GT(derived, 1000);
}

} // namespace
} // namespace aicc
