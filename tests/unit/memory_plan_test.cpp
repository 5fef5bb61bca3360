// The static memory planner (backend/memory_plan.h): reuse, in-place writes, views, weights,
// outer-scope liveness, the checker catching a broken plan, and plans of every real model of
// ../shared/models after the -O3 pipeline (symbolic dims fixed from test_data_set_0; models whose
// shapes stay dynamic are skipped, saying why). Extra models: AICC_PLAN_MODELS=DIR plans every
// DIR/*.onnx too (e.g. the materialized zoo: python3 /work/shared/zoo/materialize.py /tmp/zoo).
#include "backend/memory_plan.h"
#include "frontend/onnx/inputs.h"
#include "ir/parser.h"
#include "passes/memory_schedule.h"
#include "passes/pipelines.h"

#include "shared_models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace fs = std::filesystem;
using namespace aicc;

namespace {

const Value* val(const Model& m, const std::string& name) {
  const Value* v = m.graph->lookup(name);
  EXPECT_NE(v, nullptr) << name;
  return v;
}

const PlannedValue& pv(const MemoryPlan& p, const Model& m, const std::string& name) {
  const PlannedValue* v = p.find(val(m, name));
  if (!v) throw Error("not planned: " + name);
  return *v;
}

MemoryPlan planChecked(const Model& m, const MemoryPlanOptions& o = {}) {
  MemoryPlan p = planMemory(*m.graph, o);
  std::vector<std::string> errs = checkMemoryPlan(*m.graph, p);
  EXPECT_TRUE(errs.empty()) << errs.front() << "\n" << formatMemoryPlan(p);
  EXPECT_LE(p.lowerBoundBytes, p.arenaBytes);
  return p;
}

// 1024 floats = 4096 bytes per tensor; Softmax is not elementwise, so it needs a fresh buffer.
TEST(MemoryPlan, ChainReusesTwoBuffers) {
  Model m = parseModel(R"(graph @g(%x: f32[1024]) {
    %a = Softmax(%x) : f32[1024]
    %b = Softmax(%a) : f32[1024]
    %c = Softmax(%b) : f32[1024]
    %d = Softmax(%c) : f32[1024]
    %e = Softmax(%d) : f32[1024]
    return %e
  })");
  MemoryPlan p = planChecked(m);
  EXPECT_EQ(p.arenaBytes, 2 * 4096);
  EXPECT_EQ(p.lowerBoundBytes, 2 * 4096);
  EXPECT_EQ(p.unsharedBytes, 5 * 4096);
  EXPECT_EQ(pv(p, m, "a").offset, pv(p, m, "c").offset);
  EXPECT_NE(pv(p, m, "a").offset, pv(p, m, "b").offset);
  EXPECT_EQ(pv(p, m, "x").storage, MemStorage::Input);
  EXPECT_DOUBLE_EQ(p.ratio(), 1.0);
  std::string dump = formatMemoryPlan(p);
  EXPECT_NE(dump.find("%c  f32[1024]  4096 B  arena@"), std::string::npos) << dump;
}

TEST(MemoryPlan, SizesAreAlignedAndReusedBySize) {
  Model m = parseModel(R"(graph @g(%x: f32[10]) {
    %r = const i64[1] [4]
    %a = Softmax(%x) : f32[10]
    %b = Softmax(%a) : f32[10]
    %t = Tile(%b, %r) : f32[40]
    %u = Softmax(%t) : f32[40]
    return %u
  })");
  MemoryPlan p = planChecked(m);
  for (const PlannedValue& v : p.values)
    if (v.storage == MemStorage::Arena) {
      EXPECT_EQ(v.offset % 64, 0) << v.value->name;
    }
  // a, b: 64 each (40 bytes aligned); t, u: 192 each. Best: a|b then t|u over them.
  EXPECT_EQ(p.lowerBoundBytes, 2 * 192);
  EXPECT_EQ(p.arenaBytes, 2 * 192);
  ASSERT_EQ(p.weights.size(), 1u);
  EXPECT_EQ(p.weights[0].bytes, 8);
  EXPECT_EQ(p.weightBytes, 64);
}

TEST(MemoryPlan, ElementwiseRunsInPlace) {
  Model m = parseModel(R"(graph @g(%x: f32[4,256]) {
    %k = const f32[1,256] <elided>
    %a = Softmax(%x) : f32[4,256]
    %b = Relu(%a) : f32[4,256]
    %c = Add(%k, %b) : f32[4,256]
    %d = Exp(%c) : f32[4,256]
    return %d
  })");
  MemoryPlan p = planChecked(m);
  EXPECT_EQ(p.arenaBytes, 4096);
  EXPECT_EQ(p.inPlace, 3);
  EXPECT_EQ(pv(p, m, "b").how, MemHow::InPlace);
  EXPECT_EQ(pv(p, m, "b").aliasOf, val(m, "a"));
  EXPECT_EQ(pv(p, m, "c").aliasOf, val(m, "b")); // the broadcast constant is not a candidate
  EXPECT_EQ(pv(p, m, "d").offset, pv(p, m, "a").offset);
  // Without in-place: two buffers ping-pong.
  MemoryPlanOptions o;
  o.inPlace = false;
  EXPECT_EQ(planChecked(m, o).arenaBytes, 2 * 4096);
}

TEST(MemoryPlan, InPlaceOnlyWhenLegal) {
  Model m = parseModel(R"(graph @g(%x: f32[1024]) {
    %a = Softmax(%x) : f32[1024]
    %b = Relu(%a) : f32[1024]
    %c = Add(%a, %b) : f32[1024]
    %o = Softmax(%c) : f32[1024]
    %n = Neg(%o) : f32[1024]
    %i = Cast(%n) {to = 6} : i32[1024]
    %h = Cast(%x) {to = 10} : f16[1024]
    %hh = Relu(%h) : f16[1024]
    return %i, %o, %hh
  })");
  MemoryPlan p = planChecked(m);
  EXPECT_EQ(pv(p, m, "b").how, MemHow::Own);     // a is read later by Add
  EXPECT_EQ(pv(p, m, "c").how, MemHow::InPlace); // a and b both die at Add: the first is taken
  EXPECT_EQ(pv(p, m, "c").aliasOf, val(m, "a"));
  EXPECT_EQ(pv(p, m, "n").how, MemHow::Own); // o is a graph output
  EXPECT_EQ(pv(p, m, "i").how, MemHow::Own); // n dies here, but i has another dtype
  EXPECT_EQ(pv(p, m, "h").how, MemHow::Own); // graph inputs are never overwritten
  EXPECT_EQ(pv(p, m, "hh").how, MemHow::InPlace);
  EXPECT_EQ(p.inPlace, 2);
}

TEST(MemoryPlan, ViewsAliasTheirInput) {
  Model m = parseModel(R"(graph @g(%x: f32[2,6]) {
    %s = const i64[2] [3, 4]
    %w = const f32[3,4] <elided>
    %a = Softmax(%x) : f32[2,6]
    %r = Reshape(%a, %s) : f32[3,4]
    %q = Softmax(%r) : f32[3,4]
    %f = Flatten(%q) : f32[3,4]
    %y = Relu(%f) : f32[3,4]
    %xi = Identity(%x) : f32[2,6]
    %wi = Identity(%w) : f32[3,4]
    %z = Add(%y, %wi) : f32[3,4]
    return %z, %xi
  })");
  MemoryPlan p = planChecked(m);
  EXPECT_EQ(p.views, 4);
  const PlannedValue &a = pv(p, m, "a"), &r = pv(p, m, "r"), &q = pv(p, m, "q");
  EXPECT_EQ(r.how, MemHow::View);
  EXPECT_EQ(r.offset, a.offset);
  EXPECT_EQ(r.buffer, a.buffer);
  EXPECT_NE(q.offset, a.offset);                 // r (a's storage) is read by q's node
  EXPECT_EQ(pv(p, m, "y").how, MemHow::InPlace); // over the view f of q
  EXPECT_EQ(pv(p, m, "z").how, MemHow::InPlace);
  EXPECT_EQ(pv(p, m, "xi").storage, MemStorage::Input);
  EXPECT_EQ(pv(p, m, "wi").storage, MemStorage::Weight);
  ASSERT_EQ(p.weights.size(), 2u);
  EXPECT_EQ(pv(p, m, "wi").offset, p.weights[1].offset);
  EXPECT_EQ(p.weights[1].offset % 64, 0);
  EXPECT_EQ(p.arenaBytes, 2 * 64);
  std::string dump = formatMemoryPlan(p);
  EXPECT_NE(dump.find("%r  f32[3,4]  48 B  arena@"), std::string::npos) << dump;
  EXPECT_NE(dump.find("view of %a"), std::string::npos) << dump;
  EXPECT_NE(dump.find("in place over %f"), std::string::npos) << dump;
  EXPECT_NE(dump.find("%wi  f32[3,4]  48 B  weights@64"), std::string::npos) << dump;
}

// SqueezeNet's fire module: two results concatenated along channels (batch 1) are computed into
// their places in the Concat's result, which then copies nothing.
TEST(MemoryPlan, ConcatPlacesItsInputsInItsResult) {
  Model m = parseModel(R"(graph @g(%x: f32[1,16,4,4]) {
    %a = Softmax(%x) : f32[1,16,4,4]
    %b = Softmax(%a) : f32[1,16,4,4]
    %c = Neg(%a) : f32[1,16,4,4]
    %y = Concat(%b, %c) {axis = 1} : f32[1,32,4,4]
    %z = Softmax(%y) : f32[1,32,4,4]
    return %z
  })");
  MemoryPlan p = planChecked(m);
  const PlannedValue &b = pv(p, m, "b"), &c = pv(p, m, "c"), &y = pv(p, m, "y");
  EXPECT_EQ(b.how, MemHow::Slice);
  EXPECT_EQ(c.how, MemHow::Slice); // not in place over a: its place is in y
  EXPECT_EQ(y.how, MemHow::Own);
  EXPECT_EQ(b.offset, y.offset);
  EXPECT_EQ(c.offset, y.offset + 1024);
  EXPECT_EQ(c.within, 1024);
  EXPECT_EQ(b.buffer, y.buffer);
  EXPECT_EQ(p.buffers[size_t(y.buffer)].start, b.def); // live from its first member on
  EXPECT_EQ(p.concatsInPlace, 1);
  EXPECT_TRUE(producesInPlace(p, *m.graph->nodes[3]));
  EXPECT_FALSE(producesInPlace(p, *m.graph->nodes[4]));
  std::string dump = formatMemoryPlan(p);
  EXPECT_NE(dump.find("slice +1024 of %y"), std::string::npos) << dump;
  // A slice moved off its place is caught.
  MemoryPlan bad = p;
  bad.values[p.index.at(val(m, "c"))].within = 512;
  bad.values[p.index.at(val(m, "c"))].offset = y.offset + 512;
  std::vector<std::string> errs = checkMemoryPlan(*m.graph, bad);
  ASSERT_FALSE(errs.empty());
  EXPECT_NE(errs[0].find("illegal slice of 'y'"), std::string::npos) << errs[0];
  // A Concat's result claimed to lie in a graph input (no producer) is reported, not followed.
  MemoryPlan orphan = p;
  PlannedValue& yv = orphan.values[p.index.at(val(m, "y"))];
  yv.how = MemHow::Slice;
  yv.aliasOf = val(m, "x");
  yv.within = 0;
  errs = checkMemoryPlan(*m.graph, orphan);
  EXPECT_TRUE(std::any_of(errs.begin(), errs.end(), [](const std::string& e) {
    return e.find("value 'y': illegal slice of 'x'") != std::string::npos;
  })) << formatMemoryPlan(orphan);
  // Without the option every value owns its buffer and the Concat copies.
  MemoryPlanOptions o;
  o.concatInPlace = false;
  MemoryPlan q = planChecked(m, o);
  EXPECT_EQ(q.concatsInPlace, 0);
  EXPECT_FALSE(producesInPlace(q, *m.graph->nodes[3]));
}

// DenseNet: each layer concatenates every earlier result; each Concat is a prefix of the last
// one, whose buffer holds all of them.
TEST(MemoryPlan, GrowingConcatsArePrefixesOfTheLast) {
  Model m = parseModel(R"(graph @g(%x: f32[1,4,4,4]) {
    %w1 = const f32[4,4,1,1] <elided>
    %w2 = const f32[4,8,1,1] <elided>
    %x0 = Softmax(%x) : f32[1,4,4,4]
    %c1 = Concat(%x0) {axis = 1} : f32[1,4,4,4]
    %x1 = Conv(%c1, %w1) : f32[1,4,4,4]
    %c2 = Concat(%x0, %x1) {axis = 1} : f32[1,8,4,4]
    %x2 = Conv(%c2, %w2) : f32[1,4,4,4]
    %c3 = Concat(%x0, %x1, %x2) {axis = 1} : f32[1,12,4,4]
    %y = Softmax(%c3) : f32[1,12,4,4]
    return %y
  })");
  MemoryPlan p = planChecked(m);
  const int64_t base = pv(p, m, "c3").offset;
  EXPECT_EQ(pv(p, m, "x0").offset, base);
  EXPECT_EQ(pv(p, m, "x1").offset, base + 256);
  EXPECT_EQ(pv(p, m, "x2").offset, base + 512);
  for (const char* c : {"c1", "c2"}) {
    EXPECT_EQ(pv(p, m, c).how, MemHow::Slice) << c;
    EXPECT_EQ(pv(p, m, c).offset, base) << c;
  }
  EXPECT_EQ(p.concatsInPlace, 3);
  EXPECT_EQ(p.buffers[size_t(pv(p, m, "c3").buffer)].members.size(), 6u);
}

// Concats that must copy: outer dims not 1 (the inputs interleave in the result), a graph input,
// the same input twice, a graph output, an offset off the alignment.
TEST(MemoryPlan, ConcatCopiesWhereItsInputsCannotLieInIt) {
  auto plan = [](const std::string& tu, const std::string& cat) {
    Model m = parseModel(R"(graph @g(%x: f32[2,16]) {
      %a = Softmax(%x) : f32[2,16]
      %b = Softmax(%a) : f32[2,16]
      %o = Softmax(%a) : f32[2,16]
      %t = Softmax(%x) : f32[2,)" +
                         tu + R"(]
      %u = Softmax(%x) : f32[2,)" +
                         tu + R"(]
      %y = )" + cat + R"(
      %z = Softmax(%y) : f32[4,16]
      return %z, %o
    })");
    return planChecked(m).concatsInPlace;
  };
  EXPECT_EQ(plan("16", "Concat(%a, %b) {axis = 1} : f32[2,32]"), 0); // outer dim 2
  EXPECT_EQ(plan("16", "Concat(%x, %b) {axis = 0} : f32[4,16]"), 0); // a graph input
  EXPECT_EQ(plan("16", "Concat(%a, %a) {axis = 0} : f32[4,16]"), 0); // twice
  EXPECT_EQ(plan("16", "Concat(%b, %o) {axis = 0} : f32[4,16]"), 0); // a graph output
  EXPECT_EQ(plan("4", "Concat(%t, %u) {axis = 0} : f32[4,4]"), 0);   // u at byte 32
  // The same graphs with nothing in the way: in place (the cases above fail for their reason).
  EXPECT_EQ(plan("16", "Concat(%a, %b) {axis = 0} : f32[4,16]"), 1);
  EXPECT_EQ(plan("8", "Concat(%t, %u) {axis = 0} : f32[4,8]"), 1);
}

TEST(MemoryPlan, OuterScopeUsesExtendLiveness) {
  Model m = parseModel(R"(graph @g(%x: f32[1024], %c: bool[]) {
    %a = Softmax(%x) : f32[1024]
    %b = Softmax(%x) : f32[1024]
    %d = Softmax(%b) : f32[1024]
    %y = If(%c) {
      else_branch = graph @e() {
        %t = Neg(%d) : f32[1024]
        return %t
      },
      then_branch = graph @t() {
        %t = Relu(%a) : f32[1024]
        return %t
      }
    } : f32[1024]
    return %y
  })");
  MemoryPlan p = planChecked(m);
  EXPECT_EQ(pv(p, m, "a").lastUse, 3u);
  EXPECT_EQ(p.lowerBoundBytes, 3 * 4096); // a, b, d at node 2; a, d, y at the If
  // Moving d over a (as a planner ignoring the If body's use of a would) is caught.
  MemoryPlan bad = p;
  bad.values[p.index.at(val(m, "d"))].offset = pv(p, m, "a").offset;
  std::vector<std::string> errs = checkMemoryPlan(*m.graph, bad);
  ASSERT_FALSE(errs.empty());
  EXPECT_NE(errs[0].find("overlaps"), std::string::npos) << errs[0];
  EXPECT_THROW(verifyMemoryPlan(*m.graph, bad), Error);
}

TEST(MemoryPlan, CheckerRejectsIllegalInPlace) {
  Model m = parseModel(R"(graph @g(%x: f32[1024]) {
    %a = Softmax(%x) : f32[1024]
    %b = Relu(%a) : f32[1024]
    %c = Add(%a, %b) : f32[1024]
    return %c
  })");
  MemoryPlan p = planChecked(m);
  MemoryPlan bad = p;
  PlannedValue& b = bad.values[p.index.at(val(m, "b"))];
  b.how = MemHow::InPlace;
  b.aliasOf = val(m, "a");
  b.offset = pv(p, m, "a").offset;
  std::vector<std::string> errs = checkMemoryPlan(*m.graph, bad);
  ASSERT_FALSE(errs.empty());
  EXPECT_NE(errs[0].find("clobbers 'a'"), std::string::npos) << errs[0];
}

TEST(MemoryPlan, FusedElementwiseGroupRunsInPlace) {
  Model m = parseModel(R"(graph @g(%x: f32[32,32]) {
    %a = MatMul(%x, %x) : f32[32,32]
    %b = Exp(%a) : f32[32,32]
    %c = Neg(%b) : f32[32,32]
    %d = Abs(%c) : f32[32,32]
    %e = MatMul(%d, %d) : f32[32,32]
    return %e
  })");
  PassManager<Model> pm;
  pm.add(makeGraphPass("fuse-elementwise"));
  pm.run(m);
  ASSERT_EQ(m.graph->nodes.size(), 3u);
  MemoryPlan p = planChecked(m);
  EXPECT_EQ(p.inPlace, 1);
  EXPECT_EQ(p.values[p.index.at(m.graph->nodes[1]->outputs[0])].how, MemHow::InPlace);
}

// Values without a static size (symbolic or data-dependent dims, sequences, strings) get dynamic
// slots of their own (MemStorage::Dynamic, never aliased); the static values around them are
// planned as ever, and the checker accepts the plan.
TEST(MemoryPlan, ValuesWithoutStaticSizeGetDynamicSlots) {
  Model m = parseModel(R"(graph @g(%x: f32[4], %y: f32[N,4]) {
    %shape = const i64[1] [-1]
    %n = NonZero(%x) : i64[1,?]
    %r = Reshape(%n, %shape) : i64[?]
    %a = Softmax(%y) : f32[N,4]
    %b = Relu(%x) : f32[4]
    %c = Neg(%b) : f32[4]
    return %r, %a, %c
  })");
  MemoryPlan p = planMemory(*m.graph);
  EXPECT_EQ(p.dynamicValues, 3);
  for (const char* name : {"n", "r", "a"}) {
    const PlannedValue* v = p.find(m.graph->lookup(name));
    ASSERT_TRUE(v) << name;
    EXPECT_EQ(v->storage, MemStorage::Dynamic) << name;
    EXPECT_EQ(v->how, MemHow::Own) << name;
  }
  EXPECT_EQ(p.find(m.graph->lookup("c"))->storage, MemStorage::Arena);
  EXPECT_EQ(checkMemoryPlan(*m.graph, p), std::vector<std::string>{});
  EXPECT_NE(formatMemoryPlan(p).find("dynamic#"), std::string::npos) << formatMemoryPlan(p);
}

// ---- Real models -------------------------------------------------------------------------

// Fixes symbolic input dims from the test data (1 where there is none), runs -O3 and plans.
// Returns false (with `why`) when shapes stay dynamic.
bool planModel(ImportedModel& m, const fs::path& dataDir, MemoryPlan& plan, std::string& why) {
  std::map<std::string, int64_t> dims;
  std::vector<RValue> bound;
  if (fs::is_directory(dataDir)) {
    InputSpec spec;
    spec.inputsDir = dataDir.string();
    spec.generate = false;
    try {
      bound = bindInputs(m, spec);
    } catch (const Error&) {
      bound.clear();
    }
  }
  const Graph& g = *m.model.graph;
  bool unnamed = false; // '?' dims take the test input's size (what `aicc compile --shape` does)
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    if (!g.inputs[i]->type.shape) continue;
    Shape& s = *g.inputs[i]->type.shape;
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d].isStatic() || dims.count(s[d].symbol)) continue;
      int64_t v = 1;
      if (i < bound.size() && bound[i].kind == RValue::Kind::Tensor &&
          bound[i].tensor.shape().size() == s.size())
        v = bound[i].tensor.shape()[d];
      if (s[d].symbol.empty()) {
        s[d] = Dim::known(v);
        unnamed = true;
      } else {
        dims[s[d].symbol] = v;
      }
    }
  }
  if (!dims.empty() || unnamed) specializeDims(m.model, dims);
  PassInstrumentation inst;
  inst.verifyEach = true;
  PassManager<Model> pm(inst);
  for (auto& p : optPipeline(3)) pm.add(std::move(p));
  pm.run(m.model);
  try {
    plan = planMemory(*m.model.graph);
  } catch (const Error& e) {
    why = e.what();
    if (why.find("has no static size") == std::string::npos) throw;
    return false;
  }
  return true;
}

void checkModelPlan(const std::string& label, ImportedModel& m, const fs::path& dataDir) {
  MemoryPlan plan;
  std::string why;
  if (!planModel(m, dataDir, plan, why)) GTEST_SKIP() << label << ": dynamic shapes: " << why;
  std::vector<std::string> errs = checkMemoryPlan(*m.model.graph, plan);
  EXPECT_TRUE(errs.empty()) << label << ": " << errs.front();
  EXPECT_LE(plan.lowerBoundBytes, plan.arenaBytes);
  EXPECT_LE(plan.arenaBytes, plan.unsharedBytes);
  std::cout << "[plan] " << label << ": " << m.model.graph->nodes.size() << " nodes; "
            << formatMemorySummary(plan) << "; schedule peak (no views/in-place) "
            << peakMemoryBytes(*m.model.graph) << " B\n";
}

class ModelPlan : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelPlan, PlansEverySharedModel) {
  if (GetParam() == "(none)") GTEST_SKIP() << "no models: " << test::sharedModelsDir();
  fs::path dir = test::sharedModelsDir() / GetParam();
  ImportedModel m = importOnnxFile((dir / "model.onnx").string());
  checkModelPlan(GetParam(), m, dir / "test_data_set_0");
}

INSTANTIATE_TEST_SUITE_P(Shared, ModelPlan, ::testing::ValuesIn(test::sharedModelNames()),
                         [](const auto& info) { return test::modelParamName(info.param); });

TEST(ModelPlan, ExtraModelsFromEnvironment) {
  const char* dir = std::getenv("AICC_PLAN_MODELS");
  if (!dir)
    GTEST_SKIP() << "set AICC_PLAN_MODELS=DIR to plan DIR/*.onnx (e.g. the materialized zoo)";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".onnx") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    ImportedModel m = importOnnxFile(f.string());
    fs::path data = fs::path(AICC_SHARED_DIR) / "zoo" / f.stem() / "test_data_set_0";
    checkModelPlan(f.stem().string(), m, data);
  }
}

} // namespace
