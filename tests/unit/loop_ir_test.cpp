// The loop IR: text round trip (hand-written, random expressions, lowered functions), verifier
// invariants (one negative case per invariant), the simplifier (expected rewrites, and random
// index expressions evaluated before/after), schedule transformations (split/unroll keep
// results), pass-manager instrumentation at this level, and lowering + the reference executor
// against the graph interpreter on random inputs with random broadcasting shapes.
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "ir/parser.h"
#include "loop/eval.h"
#include "loop/executor.h"
#include "loop/lower.h"
#include "loop/parser.h"
#include "loop/passes.h"
#include "loop/printer.h"
#include "loop/simplify.h"
#include "loop/verifier.h"
#include "passes/pipelines.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

using namespace aicc;
using namespace aicc::loop;

namespace {

const char* kHandWritten = R"(// comment
func @add_relu(%x: f32[2,8] in, %y: f32[8] in, %out: f32[2,8] out) schedule {loop_order = ["i", "j"], parallel = ["i"], tile = [32, 64], vector_width = 16, empty = ints[]} {
  for %i in 0..2 parallel {
    for %j in 0..8 vectorize(8) {
      let %t = %x[%i * 8 + %j] + %y[%j]
      store %out[%i * 8 + %j], max(%t, 0.0)
    }
  }
}

func @"odd name"(%a: f32[1,4,16] nchw16c in, %w: f64[4] in, %o: i32[4] out, %s: f32[64] temp, %"q.1": bool[] in) {
  for %i in 0..4 unroll(4) {
    if %i < 3 && !(%i == 1) || %"q.1"[0] {
      store %o[%i], cast<i32>(%w[%i] * 2.5:f64 - -3.0:f64) % 7:i32
    } else {
      store %o[%i], -(3:i32)
    }
    call @f32_gemm_avx512_14x32(%a, &%s[%i * 16], 14, 32, 1.5, -2)
  }
  for %k in 0..64 {
    let %m = %k - (%k - 1) * -(2)
    store %s[%k], select(%k < 10, exp(-%a[%k]), pow(1e-07, -inf)) / (nan - -0.0) + 3.4028235e+38
  }
}
)";

std::string roundTrip(const std::string& text) { return printModule(parseModule(text)); }

TEST(LoopText, HandWrittenRoundTrip) {
  Module m = parseModule(kHandWritten);
  ASSERT_EQ(m.funcs.size(), 2u);
  EXPECT_EQ(m.funcs[1].name, "odd name");
  EXPECT_EQ(m.funcs[1].params[0].layout, "nchw16c");
  EXPECT_EQ(m.funcs[1].params[3].role, Role::Temp);
  std::string once = printModule(m);
  EXPECT_EQ(roundTrip(once), once);
  EXPECT_TRUE(verifyMessages(m).empty()) << verifyMessages(m)[0];
  // Printed exactly as written (modulo the comment and the `empty` list form).
  EXPECT_NE(once.find("func @\"odd name\""), std::string::npos);
  EXPECT_NE(once.find("store %o[%i], -(3:i32)"), std::string::npos) << once;
  EXPECT_NE(once.find("let %m = %k - (%k - 1) * -(2)"), std::string::npos) << once;
}

TEST(LoopText, ParseErrorsNameLineAndColumn) {
  try {
    parseModule("func @f(%x: f32[2] in) {\n  store %x[0] 1.0\n}");
    FAIL() << "expected a parse error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2:15"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parseModule("func @f(%x: f32[2] inout) {}"), Error);
  EXPECT_THROW(parseModule("func @f() { store %x[0], foo(1.0) }"), Error);
}

// Random expressions over i64 variables %i, %j, f32 variable %f and bool variable %b.
class ExprGen {
public:
  explicit ExprGen(uint32_t seed) : rng_(seed) {}

  ExprPtr gen(DType t, int depth) {
    int pick = static_cast<int>(rng_() % (depth <= 0 ? 2 : 9));
    if (t == DType::Bool) {
      switch (pick) {
      case 0:
        return boolImm(rng_() % 2);
      case 1:
        return var("b", DType::Bool);
      case 2:
        return logicalNot(gen(t, depth - 1));
      case 3:
        return binary(rng_() % 2 ? Op::And : Op::Or, gen(t, depth - 1), gen(t, depth - 1));
      default: {
        DType o = rng_() % 2 ? DType::I64 : DType::F32;
        return cmp(static_cast<Op>(static_cast<int>(Op::Lt) + rng_() % 6), gen(o, depth - 1),
                   gen(o, depth - 1));
      }
      }
    }
    if (pick == 0) {
      int64_t v = static_cast<int64_t>(rng_() % 41) - 20;
      return t == DType::I64 ? intImm(v) : floatImm(v / 4.0, t);
    }
    if (pick == 1) return t == DType::I64 ? var(rng_() % 2 ? "i" : "j") : var("f", DType::F32);
    switch (rng_() % 7) {
    case 0:
      return neg(gen(t, depth - 1));
    case 1:
      return select(gen(DType::Bool, depth - 1), gen(t, depth - 1), gen(t, depth - 1));
    case 2:
      return t == DType::I64 ? cast(t, gen(DType::F32, depth - 1))
                             : call("exp", {gen(t, depth - 1)});
    default: {
      static const Op ops[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Mod, Op::Min, Op::Max};
      Op op = ops[rng_() % 7];
      if (op == Op::Mod && t != DType::I64) op = Op::Sub;
      return binary(op, gen(t, depth - 1), gen(t, depth - 1));
    }
    }
  }

private:
  std::mt19937 rng_;
};

TEST(LoopText, RandomExpressionsRoundTrip) {
  ExprGen g(7);
  std::map<std::string, DType> vars = {
      {"i", DType::I64}, {"j", DType::I64}, {"f", DType::F32}, {"b", DType::Bool}};
  for (int k = 0; k < 2000; ++k) {
    DType t = k % 3 == 0 ? DType::I64 : k % 3 == 1 ? DType::F32 : DType::Bool;
    ExprPtr e = g.gen(t, 5);
    std::string text = printExpr(e);
    ExprPtr back = parseExpr(text, vars);
    ASSERT_TRUE(equal(e, back)) << text << "\n reads back as " << printExpr(back);
  }
}

// ---- Verifier: one failing case per invariant ----
struct BadCase {
  const char* invariant;
  const char* text;
};

TEST(LoopVerifier, EveryInvariantHasANegativeCase) {
  const BadCase cases[] = {
      {"[L1]", "func @f(%a: f32[2] in, %a: f32[2] out) {}"},
      {"[L1]", "func @f() {}\nfunc @f() {}"},
      {"[L2]", "func @f(%a: string[2] in) {}"},
      {"[L2]", "func @f(%a: f32[2] in in) {}"},
      {"[L3]", "func @f(%o: i64[4] out) { store %o[0], %k }"},
      {"[L3]", "func @f(%o: i64[4] out) { for %i in 0..2 { for %i in 0..2 { store %o[%i], 1 } } }"},
      {"[L3]", "func @f(%o: i64[4] out) { for %o in 0..2 { } }"},
      {"[L3]", "func @f(%o: i64[4] out) { for %i in 0..2 { store %o[%i], 1 } store %o[%i], 2 }"},
      {"[L4]", "func @f(%o: i64[4] out) { for %i in 0..2 vectorize(128) { store %o[%i], 1 } }"},
      {"[L4]", "func @f(%o: i64[4] out) { for %i in 0..2.0 { store %o[%i], 1 } }"},
      {"[L5]", "func @f(%o: i64[4] out) { store %p[0], 1 }"},
      {"[L5]", "func @f(%o: f32[4] out) { store %o[0], %q[1] }"},
      {"[L6]", "func @f(%o: i64[4] out) { store %o[1:i32], 1 }"},
      {"[L7]", "func @f(%o: i64[4] in) { store %o[0], 1 }"},
      {"[L7]", "func @f(%o: f32[4] out) { store %o[0], 1 }"},
      {"[L8]", "func @f(%o: f32[4] out) { store %o[0], 1.0 + 2.0:f64 }"},
      {"[L8]", "func @f(%o: f32[4] out) { store %o[0], 1.0 % 2.0 }"},
      {"[L8]", "func @f(%o: f32[4] out) { store %o[0], select(1, 1.0, 2.0) }"},
      {"[L8]", "func @f(%o: i64[4] out) { store %o[0], exp(1) }"},
      {"[L8]", "func @f(%o: i64[4] out) { if 1 { store %o[0], 1 } }"},
      {"[L9]", "func @f(%o: i64[4] out) { for %i in 0..5 { store %o[%i], 1 } }"},
      {"[L9]",
       "func @f(%o: i64[4] out, %x: i64[4] in) { for %i in 0..4 { store %o[%i], %x[%i - 1] } }"},
      {"[L10]", "func @f(%o: i64[4] out) { store %o[0], 7 / 0 }"},
      {"[L11]", "func @f(%o: i64[4] out) { call @k(%o, true) }"},
  };
  for (const auto& c : cases) {
    auto msgs = verifyMessages(parseModule(c.text));
    ASSERT_FALSE(msgs.empty()) << c.text;
    bool found = false;
    for (const auto& m : msgs) found |= m.find(c.invariant) == 0;
    EXPECT_TRUE(found) << c.text << "\n first message: " << msgs[0];
  }
  // Guards narrow ranges: this index is in range under the `if`.
  EXPECT_TRUE(
      verifyMessages(
          parseModule(
              "func @f(%o: i64[4] out) { for %i in 0..9 { if %i < 4 { store %o[%i], 1 } } }"))
          .empty());
  EXPECT_THROW(verify(parseModule(cases[0].text)), Error);
}

// ---- Simplifier ----
std::string simp(const std::string& text, std::map<std::string, Interval> ranges = {}) {
  RangeScope s;
  std::map<std::string, DType> vars;
  for (const auto& [v, r] : ranges) {
    s.push(v, r);
    vars[v] = DType::I64;
  }
  for (const char* v : {"x", "y"}) vars.emplace(v, DType::I64);
  return printExpr(simplifyExpr(parseExpr(text, vars), s));
}

TEST(LoopSimplify, Patterns) {
  Interval i{0, 3}, j{0, 7}, k{0, 15};
  EXPECT_EQ(simp("%x * 1 + 0"), "%x");
  EXPECT_EQ(simp("(%x + 3) + 4"), "%x + 7");
  EXPECT_EQ(simp("(3 + %x) - 5"), "%x - 2");
  EXPECT_EQ(simp("((%i * 4 + %j) * 8 + %k) + 1", {{"i", i}, {"j", j}, {"k", k}}),
            "%i * 32 + %j * 8 + %k + 1");
  EXPECT_EQ(simp("(%i * 8 + %j) / 8", {{"i", i}, {"j", j}}), "%i");
  EXPECT_EQ(simp("(%i * 8 + %j) % 8", {{"i", i}, {"j", j}}), "%j");
  EXPECT_EQ(simp("(%i * 8 + %j + 17) / 8", {{"i", i}, {"j", j}}), "%i + (%j + 1) / 8 + 2");
  EXPECT_EQ(simp("%j % 8", {{"j", j}}), "%j");
  EXPECT_EQ(simp("%j / 8", {{"j", j}}), "0");
  EXPECT_EQ(simp("(%k / 2) / 4", {{"k", k}}), "%k / 8");
  EXPECT_EQ(simp("%x / 1 + %x % 1"), "%x");
  EXPECT_EQ(simp("min(3, 5) + max(-2, 7) * 2"), "17");
  EXPECT_EQ(simp("min(%j, 7)", {{"j", j}}), "%j");
  EXPECT_EQ(simp("max(%j + 1, %j)", {{"j", j}}), "%j + 1");
  EXPECT_EQ(simp("select(%j < 8, %x, %y)", {{"j", j}}), "%x");
  EXPECT_EQ(simp("%x - %x + %y * 0"), "0");
  EXPECT_EQ(simp("7 / 0"), "7 / 0");        // left for the verifier to report
  EXPECT_EQ(simp("-7 / 2 + -7 % 2"), "-4"); // truncating division: -3 + -1
  EXPECT_EQ(simp("%x * 2 - %x * 3"), "%x * -1");
  // Floats: x + 0.0 is not x (-0.0 + 0.0 == +0.0), x * 1.0 is.
  std::map<std::string, DType> fv = {{"f", DType::F32}};
  EXPECT_EQ(printExpr(simplifyExpr(parseExpr("%f + 0.0", fv))), "%f + 0.0");
  EXPECT_EQ(printExpr(simplifyExpr(parseExpr("%f * 1.0 - 0.0", fv))), "%f");
  EXPECT_EQ(printExpr(simplifyExpr(parseExpr("0.1 + 0.2", fv))), "0.3"); // rounded to f32 each step
}

TEST(LoopSimplify, ReportsChangesAndStats) {
  Module m = parseModule("func @f(%o: i64[4] out) { for %i in 0..4 { store %o[%i * 1], %i } }");
  SimplifyStats st;
  EXPECT_TRUE(simplifyModule(m, &st));
  EXPECT_EQ(st.hits["identity"], 1);
  EXPECT_FALSE(simplifyModule(m, &st));
  // Statement patterns: a constant if keeps one branch, a one-iteration loop disappears.
  Module m2 = parseModule("func @f(%o: i64[4] out) { for %i in 2..3 { if %i == 2 { store %o[%i], 1 "
                          "} else { store %o[0], 2 } } }");
  EXPECT_TRUE(simplifyModule(m2));
  EXPECT_EQ(printModule(m2), "func @f(%o: i64[4] out) {\n  store %o[2], 1\n}\n");
}

// Evaluates f and returns its single out buffer.
Tensor runFunc(const Func& f, std::map<std::string, Tensor> bufs = {}) {
  evaluate(f, bufs);
  for (const auto& b : f.params)
    if (b.role == Role::Out) return bufs.at(b.name);
  return {};
}

TEST(LoopSimplify, RandomIndexExpressionsKeepTheirValues) {
  std::mt19937 rng(11);
  ExprGen g(3);
  int simplified = 0;
  for (int k = 0; k < 400; ++k) {
    int64_t a = 1 + rng() % 6, b = 1 + rng() % 9;
    ExprPtr e = g.gen(DType::I64, 4);
    // Keep the integer-only subset (casts of floats may saturate; fine, but keep it simple) and
    // guard divisions: x / c and x % c only with c != 0 immediates.
    bool ok = true;
    walk(e, [&](const Expr& x) {
      if (x.type == DType::F32 || (x.op == Op::Var && x.type != DType::I64)) ok = false;
      if ((x.op == Op::Div || x.op == Op::Mod) &&
          !(x.args[1]->op == Op::IntImm && x.args[1]->i != 0))
        ok = false;
      if (x.op == Op::Select || x.op == Op::Cast) ok = false;
    });
    if (!ok) continue;
    std::string text = fmt::format("func @f(%o: i64[{}] out) {{ for %i in 0..{} {{ for %j in 0..{} "
                                   "{{ store %o[%i * {} + %j], {} }} }} }}",
                                   a * b, a, b, b, printExpr(e));
    Module m = parseModule(text);
    ASSERT_TRUE(verifyMessages(m).empty()) << text << verifyMessages(m)[0];
    Tensor before = runFunc(m.funcs[0]);
    simplified += simplifyModule(m);
    ASSERT_TRUE(verifyMessages(m).empty()) << printModule(m);
    Tensor after = runFunc(m.funcs[0]);
    ASSERT_TRUE(before.sameAs(after)) << text << "\nsimplified:\n" << printModule(m);
  }
  EXPECT_GT(simplified, 50);
}

// ---- Schedule transformations ----
TEST(LoopSchedule, SplitAndUnrollKeepResults) {
  const char* text = R"(func @f(%x: f32[6,10] in, %o: f32[6,10] out) {
  for %i in 0..6 parallel {
    for %j in 0..10 vectorize(8) {
      let %v = %x[%i * 10 + %j]
      store %o[%i * 10 + %j], %v * %v + 1.0
    }
  }
})";
  Module m = parseModule(text);
  Tensor x(DType::F32, {6, 10});
  for (int64_t k = 0; k < 60; ++k) x.setF64(k, static_cast<double>(k) / 7 - 3);
  Tensor ref = runFunc(m.funcs[0], {{"x", x}});
  EXPECT_TRUE(splitLoop(m.funcs[0], "j", 4)); // 10 = 4 + 4 + 2: guarded
  EXPECT_TRUE(splitLoop(m.funcs[0], "i", 3));
  EXPECT_TRUE(verifyMessages(m).empty()) << printModule(m) << verifyMessages(m)[0];
  std::string printed = printModule(m);
  EXPECT_NE(printed.find("for %i_o in 0..2 parallel"), std::string::npos) << printed;
  EXPECT_NE(printed.find("let %j = %j_o * 4 + %j_i\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("if %j < 10 {"), std::string::npos) << printed;
  EXPECT_TRUE(runFunc(m.funcs[0], {{"x", x}}).sameAs(ref));

  Module u = parseModule(R"(func @g(%x: f32[8] in, %o: f32[8] out) {
  for %i in 0..8 unroll(4) {
    let %v = %x[%i]
    store %o[%i], %v + %v
  }
})");
  Tensor x8(DType::F32, {8});
  for (int64_t k = 0; k < 8; ++k) x8.setF64(k, k * 0.5);
  Tensor ref8 = runFunc(u.funcs[0], {{"x", x8}});
  PassManager<Module> pm;
  pm.add(makeLoopPass("unroll"));
  pm.add(makeLoopPass("simplify"));
  EXPECT_TRUE(pm.run(u));
  std::string up = printModule(u);
  EXPECT_NE(up.find("for %i_o in 0..2 {"), std::string::npos) << up;
  EXPECT_NE(up.find("let %v_2 = %x[%i_o * 4 + 2]"), std::string::npos) << up;
  EXPECT_TRUE(runFunc(u.funcs[0], {{"x", x8}}).sameAs(ref8));
}

// ---- Pass manager integration ----
TEST(LoopPassManager, VerifyEachCatchesABadPassAndWritesAReproducer) {
  Module m = parseModule("func @f(%o: i64[4] out) { for %i in 0..4 { store %o[%i], %i } }");
  std::string path = (std::filesystem::temp_directory_path() / "aicc_loop_repro.loop").string();
  PassInstrumentation inst;
  inst.reproducerPath = path;
  std::ostringstream log;
  inst.out = &log;
  inst.printAfterAll = true;
  PassManager<Module> pm(inst);
  pm.add(makeLoopPass("simplify"));
  LoopPass bad;
  bad.name = "break-bounds";
  bad.run = [](Module& mm) {
    mm.funcs[0].body[0].hi = intImm(5);
    return true;
  };
  pm.add(bad);
  try {
    pm.run(m);
    FAIL() << "expected the verifier to reject the pass's output";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("pass 'break-bounds' produced invalid IR"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[L9]"), std::string::npos) << msg;
  }
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(),
            "func @f(%o: i64[4] out) {\n  for %i in 0..4 {\n    store %o[%i], %i\n  }\n}\n");
  EXPECT_NE(log.str().find("// -----// IR after simplify (no change) //----- //"),
            std::string::npos);
  EXPECT_THROW(makeLoopPass("nope"), Error);
}

// ---- Lowering + execution against the interpreter ----
Tensor randomTensor(DType t, const Dims& shape, std::mt19937& rng) {
  Tensor x(t, shape);
  std::uniform_real_distribution<double> d(-3, 3);
  for (int64_t k = 0; k < x.numel(); ++k) {
    if (t == DType::Bool)
      x.setI64(k, rng() % 2);
    else if (isInteger(t))
      x.setI64(k, static_cast<int64_t>(rng() % 21) - 10);
    else
      x.setF64(k, d(rng));
  }
  return x;
}

std::string typeText(DType t, const Dims& d) {
  return fmt::format("{}{}", dtypeName(t), formatDims(d));
}

// A random pair of shapes broadcasting to `out`: each input drops leading dims and sets some
// dims to 1.
Dims randomBroadcast(const Dims& out, std::mt19937& rng) {
  size_t drop = rng() % (out.size() + 1);
  Dims d(out.begin() + static_cast<std::ptrdiff_t>(drop), out.end());
  for (auto& x : d)
    if (rng() % 3 == 0) x = 1;
  return d;
}

void checkAgainstInterpreter(const std::string& graphText, const std::vector<Tensor>& ins,
                             int expectLowered) {
  Model m = parseModel(graphText);
  std::vector<RValue> in;
  for (const auto& t : ins) in.push_back(RValue::of(t));
  auto expected = interpret(*m.graph, in);
  LoopRunStats st;
  auto actual = runLowered(*m.graph, in, {}, &st);
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t k = 0; k < expected.size(); ++k) {
    auto diff = compareValues(expected[k], actual[k], Tolerance{1e-5, 1e-6});
    EXPECT_FALSE(diff) << *diff << "\n" << graphText;
  }
  EXPECT_EQ(st.lowered, expectLowered)
      << graphText << (st.fallbackReasons.empty() ? "" : st.fallbackReasons[0]);
  // Every lowered function verifies and round-trips through the text form.
  Module lm = lowerGraph(*m.graph);
  EXPECT_TRUE(verifyMessages(lm).empty()) << printModule(lm);
  std::string text = printModule(lm);
  EXPECT_EQ(roundTrip(text), text);
}

TEST(LoopLowering, ElementwiseOpsMatchTheInterpreter) {
  std::mt19937 rng(5);
  struct OpCase {
    const char* op;
    int arity;
    DType in, out;
    const char* attrs;
  };
  const OpCase ops[] = {
      {"Add", 2, DType::F32, DType::F32, ""},
      {"Sub", 2, DType::F32, DType::F32, ""},
      {"Mul", 2, DType::F64, DType::F64, ""},
      {"Div", 2, DType::F32, DType::F32, ""},
      {"Add", 2, DType::I32, DType::I32, ""},
      {"Mul", 2, DType::I64, DType::I64, ""},
      {"Relu", 1, DType::F32, DType::F32, ""},
      {"Sigmoid", 1, DType::F32, DType::F32, ""},
      {"Tanh", 1, DType::F32, DType::F32, ""},
      {"Exp", 1, DType::F32, DType::F32, ""},
      {"Erf", 1, DType::F32, DType::F32, ""},
      {"Abs", 1, DType::I32, DType::I32, ""},
      {"Neg", 1, DType::F32, DType::F32, ""},
      {"Max", 3, DType::F32, DType::F32, ""},
      {"Min", 2, DType::I64, DType::I64, ""},
      {"Less", 2, DType::F32, DType::Bool, ""},
      {"Equal", 2, DType::I32, DType::Bool, ""},
      {"Sign", 1, DType::F32, DType::F32, ""},
      {"LeakyRelu", 1, DType::F32, DType::F32, " {alpha = 0.2}"},
      {"Floor", 1, DType::F32, DType::F32, ""},
      {"HardSigmoid", 1, DType::F32, DType::F32, ""},
      {"Sum", 3, DType::F32, DType::F32, ""},
      {"Softsign", 1, DType::F32, DType::F32, ""},
  };
  for (const auto& c : ops) {
    for (int trial = 0; trial < 3; ++trial) {
      Dims out;
      size_t rank = rng() % 4;
      for (size_t k = 0; k < rank; ++k) out.push_back(static_cast<int64_t>(1 + rng() % 5));
      std::vector<Dims> shapes;
      for (int a = 0; a < c.arity; ++a) shapes.push_back(a == 0 ? out : randomBroadcast(out, rng));
      if (c.arity == 1) shapes[0] = out;
      std::string params, args;
      std::vector<Tensor> ins;
      for (int a = 0; a < c.arity; ++a) {
        params += fmt::format("{}%x{}: {}", a ? ", " : "", a, typeText(c.in, shapes[a]));
        args += fmt::format("{}%x{}", a ? ", " : "", a);
        ins.push_back(randomTensor(c.in, shapes[a], rng));
      }
      std::string g = fmt::format("graph @main({}) {{\n  %y = {}({}){} : {}\n  return %y\n}}\n",
                                  params, c.op, args, c.attrs, typeText(c.out, out));
      checkAgainstInterpreter(g, ins, 1);
    }
  }
}

TEST(LoopLowering, WhereClipAndCastWithBroadcasting) {
  std::mt19937 rng(9);
  Tensor c = randomTensor(DType::Bool, {3, 1}, rng), a = randomTensor(DType::F32, {2, 3, 4}, rng),
         b = randomTensor(DType::F32, {4}, rng);
  checkAgainstInterpreter("graph @main(%c: bool[3,1], %a: f32[2,3,4], %b: f32[4]) {\n"
                          "  %lo = const f32[] [-1]\n  %hi = const f32[] [1.5]\n"
                          "  %w = Where(%c, %a, %b) : f32[2,3,4]\n"
                          "  %k = Clip(%w, %lo, %hi) : f32[2,3,4]\n"
                          "  %i = Cast(%k) {to = 6} : i32[2,3,4]\n"
                          "  return %k, %i\n}\n",
                          {c, a, b}, 3);
}

TEST(LoopLowering, FusedElementwiseBodyIsOneLoopNest) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 6; ++trial) {
    Dims out = {static_cast<int64_t>(1 + rng() % 3), static_cast<int64_t>(1 + rng() % 4),
                static_cast<int64_t>(1 + rng() % 6)};
    Dims sy = randomBroadcast(out, rng), sz = randomBroadcast(out, rng);
    std::string text =
        fmt::format("graph @main(%x: {0}, %y: {1}, %z: {2}) {{\n"
                    "  %half = const f32[] [0.5]\n"
                    "  %m = Mul(%x, %half) : {0}\n"
                    "  %a = Add(%m, %y) : {0}\n"
                    "  %t = Tanh(%a) : {0}\n"
                    "  %s = Sub(%t, %z) : {0}\n"
                    "  %r = Mul(%s, %s) : {0}\n"
                    "  %o = Relu(%r) : {0}\n"
                    "  return %o\n}}\n",
                    typeText(DType::F32, out), typeText(DType::F32, sy), typeText(DType::F32, sz));
    Model m = parseModel(text);
    PassManager<Model> pm;
    pm.add(makeGraphPass("fuse-elementwise"));
    pm.run(m);
    ASSERT_EQ(m.graph->nodes.size(), 1u) << text;
    ASSERT_EQ(m.graph->nodes[0]->op, "Fused");
    std::vector<RValue> in = {RValue::of(randomTensor(DType::F32, out, rng)),
                              RValue::of(randomTensor(DType::F32, sy, rng)),
                              RValue::of(randomTensor(DType::F32, sz, rng))};
    auto expected = interpret(*m.graph, in);
    LoopRunStats st;
    auto actual = runLowered(*m.graph, in, {}, &st);
    EXPECT_EQ(st.lowered, 1);
    auto diff = compareValues(expected[0], actual[0], Tolerance{1e-5, 1e-6});
    EXPECT_FALSE(diff) << *diff;
    Module lm = lowerGraph(*m.graph);
    ASSERT_EQ(lm.funcs.size(), 1u);
    std::string printed = printModule(lm);
    EXPECT_EQ(roundTrip(printed), printed);
    EXPECT_NE(printed.find("let %t_s = "), std::string::npos) << printed; // %s is used twice
    EXPECT_NE(printed.find("op = \"aicc.Fused\""), std::string::npos) << printed;
  }
}

TEST(LoopLowering, CoalescesDimsAndSchedules) {
  Model m = parseModel(
      "graph @main(%x: f32[4,8,16], %b: f32[8,1]) {\n"
      "  %y = Add(%x, %b) : f32[4,8,16]\n  %z = Relu(%y) : f32[4,8,16]\n  return %z\n}\n");
  Module lm = lowerGraph(*m.graph);
  ASSERT_EQ(lm.funcs.size(), 2u);
  EXPECT_EQ(
      printFunc(lm.funcs[0]),
      "func @Add(%x: f32[4,8,16] in, %b: f32[8,1] in, %y: f32[4,8,16] out) schedule {kind = "
      "\"elementwise\", "
      "loop_order = [\"i0\", \"i1\", \"i2\"], op = \"Add\", parallel = strings[], vector_width = "
      "16} {\n"
      "  for %i0 in 0..4 {\n"
      "    for %i1 in 0..8 {\n"
      "      for %i2 in 0..16 vectorize(16) {\n"
      "        store %y[%i0 * 128 + %i1 * 16 + %i2], %x[%i0 * 128 + %i1 * 16 + %i2] + %b[%i1]\n"
      "      }\n    }\n  }\n}\n");
  // No broadcasting: one flat loop.
  EXPECT_NE(printFunc(lm.funcs[1])
                .find("for %i0 in 0..512 vectorize(16) {\n    store %z[%i0], max(%y[%i0], 0.0)"),
            std::string::npos)
      << printFunc(lm.funcs[1]);
  // Enough elements for the threads (>= 16384): the flat loop splits into [chunks, block], the
  // outer loop parallel, the inner one vectorized.
  Model big = parseModel("graph @main(%x: f32[4,64,128]) {\n  %z = Relu(%x) : f32[4,64,128]\n"
                         "  return %z\n}\n");
  Module bm = lowerGraph(*big.graph);
  ASSERT_EQ(bm.funcs.size(), 1u);
  EXPECT_NE(printFunc(bm.funcs[0]).find("for %i0 in 0..4 parallel {\n    for %i1 in 0..8192 "
                                        "vectorize(16) {\n      store %z[%i0 * 8192 + %i1]"),
            std::string::npos)
      << printFunc(bm.funcs[0]);
  // Not lowerable: the reason is given.
  Model mm = parseModel("graph @main(%x: f32[1,4,1]) {\n  %r = const f32[] [0.5]\n"
                        "  %t = const bool[] [1]\n"
                        "  %y = Dropout(%x, %r, %t) {seed = 3} : f32[1,4,1]\n  return %y\n}\n");
  std::string why;
  EXPECT_FALSE(lowerNode(*mm.graph->nodes.back(), "f", &why));
  EXPECT_NE(why.find("random draws"), std::string::npos) << why;
  // Fallback nodes still run.
  LoopRunStats st;
  auto out = runLowered(*mm.graph, {RValue::of(Tensor::fromF32({1, 2, 3, 4}, {1, 4, 1}))}, {}, &st);
  EXPECT_EQ(st.fallback, 1);
  const auto want = interpret(*mm.graph, {RValue::of(Tensor::fromF32({1, 2, 3, 4}, {1, 4, 1}))});
  EXPECT_EQ(out[0].tensor.getF64(3), want[0].tensor.getF64(3)); // (seeded: the same draws)
}

TEST(LoopEval, BoundsAreChecked) {
  Module m = parseModule("func @f(%o: i64[4] out) { for %i in 0..5 { store %o[%i], 1 } }");
  std::map<std::string, Tensor> bufs;
  EXPECT_THROW(evaluate(m.funcs[0], bufs), Error);
}

} // namespace
