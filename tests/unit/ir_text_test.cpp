// The IR text form: print -> parse -> print round trips, structural identity of the parsed graph
// (values, types, attributes with exact float bits, constants, subgraphs, outer-scope references),
// parse errors with line:column, truncation fuzzing, and round trips of real and ONNX test models.
#include "frontend/onnx/onnx_importer.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "ops/op_def.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

using namespace aicc;
namespace fs = std::filesystem;

namespace {

// ---- Structural comparison ----------------------------------------------------------------

bool sameBits(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == DType::String) {
    for (int64_t i = 0; i < a.numel(); ++i)
      if (a.strings()[i] != b.strings()[i]) return false;
    return true;
  }
  return std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

struct Compare {
  const OpRegistry* reg;
  int64_t maxElems; // constants above this size are expected elided in `b`; <0: never
  std::map<const Value*, const Value*> map;

  void value(const Value* a, const Value* b, const Graph& gb, const Node* producer) {
    ASSERT_EQ(a == nullptr, b == nullptr);
    if (!a) return;
    EXPECT_EQ(a->name, b->name);
    EXPECT_EQ(a->type, b->type) << a->name << ": " << printType(a->type) << " vs "
                                << printType(b->type);
    EXPECT_EQ(b->owner, &gb) << b->name;
    EXPECT_EQ(b->producer, producer) << b->name;
    EXPECT_EQ(a->isConstant(), b->isConstant()) << a->name;
    map[a] = b;
  }
  void ref(const Value* a, const Value* b) {
    ASSERT_EQ(a == nullptr, b == nullptr);
    if (a) {
      EXPECT_EQ(map.at(a), b) << "reference to " << a->name;
    }
  }
  void attr(const std::string& name, const Attribute& a, const Attribute& b, const Graph& gb) {
    ASSERT_EQ(a.kind(), b.kind()) << name;
    switch (a.kind()) {
    case Attribute::Kind::Float:
      EXPECT_EQ(std::bit_cast<uint32_t>(std::get<float>(a.v)),
                std::bit_cast<uint32_t>(std::get<float>(b.v)))
          << name;
      break;
    case Attribute::Kind::Floats: {
      auto& x = std::get<std::vector<float>>(a.v);
      auto& y = std::get<std::vector<float>>(b.v);
      ASSERT_EQ(x.size(), y.size()) << name;
      EXPECT_TRUE(x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0) << name;
      break;
    }
    case Attribute::Kind::Tensor:
      EXPECT_TRUE(sameBits(std::get<Tensor>(a.v), std::get<Tensor>(b.v))) << name;
      break;
    case Attribute::Kind::Tensors: {
      auto& x = std::get<std::vector<Tensor>>(a.v);
      auto& y = std::get<std::vector<Tensor>>(b.v);
      ASSERT_EQ(x.size(), y.size()) << name;
      for (size_t i = 0; i < x.size(); ++i)
        EXPECT_TRUE(sameBits(x[i], y[i])) << name << "[" << i << "]";
      break;
    }
    case Attribute::Kind::Graph:
      graph(*std::get<GraphPtr>(a.v), *std::get<GraphPtr>(b.v), &gb);
      break;
    case Attribute::Kind::Graphs: {
      auto& x = std::get<std::vector<GraphPtr>>(a.v);
      auto& y = std::get<std::vector<GraphPtr>>(b.v);
      ASSERT_EQ(x.size(), y.size()) << name;
      for (size_t i = 0; i < x.size(); ++i) graph(*x[i], *y[i], &gb);
      break;
    }
    case Attribute::Kind::Int:
      EXPECT_EQ(std::get<int64_t>(a.v), std::get<int64_t>(b.v)) << name;
      break;
    case Attribute::Kind::Ints:
      EXPECT_EQ(std::get<std::vector<int64_t>>(a.v), std::get<std::vector<int64_t>>(b.v)) << name;
      break;
    case Attribute::Kind::String:
      EXPECT_EQ(std::get<std::string>(a.v), std::get<std::string>(b.v)) << name;
      break;
    case Attribute::Kind::Strings:
      EXPECT_EQ(std::get<std::vector<std::string>>(a.v), std::get<std::vector<std::string>>(b.v))
          << name;
      break;
    case Attribute::Kind::Type:
      EXPECT_EQ(std::get<Type>(a.v), std::get<Type>(b.v)) << name;
      break;
    }
  }
  void graph(const Graph& a, const Graph& b, const Graph* parentB) {
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(b.parent, parentB);
    ASSERT_EQ(a.inputs.size(), b.inputs.size());
    for (size_t i = 0; i < a.inputs.size(); ++i) value(a.inputs[i], b.inputs[i], b, nullptr);
    ASSERT_EQ(a.constants.size(), b.constants.size());
    for (size_t i = 0; i < a.constants.size(); ++i) {
      const Value *x = a.constants[i], *y = b.constants[i];
      value(x, y, b, nullptr);
      const Tensor& tx = *x->constant;
      bool elided = maxElems >= 0 && tx.defined() && tx.numel() > maxElems;
      if (elided) {
        EXPECT_FALSE(y->constant->defined()) << x->name;
      } else {
        EXPECT_TRUE(sameBits(tx, *y->constant)) << x->name;
      }
    }
    ASSERT_EQ(a.nodes.size(), b.nodes.size());
    for (size_t i = 0; i < a.nodes.size(); ++i) {
      const Node &x = *a.nodes[i], &y = *b.nodes[i];
      SCOPED_TRACE(x.describe());
      EXPECT_EQ(x.op, y.op);
      EXPECT_EQ(x.domain, y.domain);
      EXPECT_EQ(x.name, y.name);
      EXPECT_EQ(y.def, reg->find(y.domain, y.op));
      EXPECT_EQ(y.owner, &b);
      ASSERT_EQ(x.inputs.size(), y.inputs.size());
      for (size_t k = 0; k < x.inputs.size(); ++k) ref(x.inputs[k], y.inputs[k]);
      ASSERT_EQ(x.attrs.size(), y.attrs.size());
      for (const auto& [n, at] : x.attrs) {
        ASSERT_TRUE(y.attrs.count(n)) << n;
        attr(n, at, y.attrs.at(n), b);
      }
      ASSERT_EQ(x.outputs.size(), y.outputs.size());
      for (size_t k = 0; k < x.outputs.size(); ++k) value(x.outputs[k], y.outputs[k], b, &y);
    }
    ASSERT_EQ(a.outputs.size(), b.outputs.size());
    for (size_t i = 0; i < a.outputs.size(); ++i) ref(a.outputs[i], b.outputs[i]);
  }
};

void expectSameModel(const Model& a, const Model& b, const OpRegistry& reg, int64_t maxElems) {
  EXPECT_EQ(a.irVersion, b.irVersion);
  EXPECT_EQ(a.opsets, b.opsets);
  EXPECT_EQ(a.producerName, b.producerName);
  EXPECT_EQ(a.producerVersion, b.producerVersion);
  Compare c{&reg, maxElems, {}};
  c.graph(*a.graph, *b.graph, nullptr);
}

// Round trips `m` with and without constant data, checking text equality and structure.
void roundTrip(const Model& m, const OpRegistry& reg) {
  ParseOptions po;
  po.registry = &reg;
  PrintOptions full;
  full.printConstants = true;
  std::string t1 = printModel(m, full);
  Model m2 = parseModel(t1, po);
  EXPECT_EQ(printModel(m2, full), t1);
  expectSameModel(m, m2, reg, -1);
  std::string e1 = printModel(m); // large constants elided
  Model m3 = parseModel(e1, po);
  EXPECT_EQ(printModel(m3), e1);
  expectSameModel(m, m3, reg, PrintOptions{}.maxConstantElems);
}

// ---- A hand-built model covering every dtype, attribute kind and syntax corner --------------

const OpRegistry& testRegistry() {
  static const OpRegistry reg = [] {
    OpRegistry r;
    r.op("Relu").inputs(1, 1);
    r.op("Add").inputs(2, 2);
    r.op("Identity").inputs(1, 1);
    r.op("Dropout").inputs(1, 3).outputs(1, 2).attrInt("seed", 0);
    r.op("Conv")
        .inputs(2, 3)
        .attrInts("pads", {})
        .attrInts("strides", {})
        .attrString("auto_pad", "NOTSET");
    r.op("If")
        .inputs(1, 1)
        .outputs(1, 1 << 30)
        .attr("then_branch", Attribute::Kind::Graph, true)
        .attr("else_branch", Attribute::Kind::Graph, true);
    r.op("Sink", "com.test").inputs(0, 1 << 30).outputs(0, 0);
    auto all = r.op("AllAttrs", "com.test").inputs(0, 1 << 30).outputs(0, 8);
    using K = Attribute::Kind;
    for (auto [n, k] : std::vector<std::pair<const char*, K>>{{"f", K::Float},
                                                              {"f_neg0", K::Float},
                                                              {"f_nan", K::Float},
                                                              {"f_inf", K::Float},
                                                              {"f_tiny", K::Float},
                                                              {"f_int", K::Float},
                                                              {"i", K::Int},
                                                              {"s", K::String},
                                                              {"t", K::Tensor},
                                                              {"t_undef", K::Tensor},
                                                              {"g", K::Graph},
                                                              {"fs", K::Floats},
                                                              {"fs_empty", K::Floats},
                                                              {"is", K::Ints},
                                                              {"is_empty", K::Ints},
                                                              {"ss", K::Strings},
                                                              {"ss_empty", K::Strings},
                                                              {"ts", K::Tensors},
                                                              {"ts_empty", K::Tensors},
                                                              {"gs", K::Graphs},
                                                              {"gs_empty", K::Graphs},
                                                              {"ty", K::Type},
                                                              {"ty_opt", K::Type},
                                                              {"ty_unknown", K::Type},
                                                              {"weird name", K::Int}})
      all.attr(n, k);
    return r;
  }();
  return reg;
}

template <typename T> Tensor tensorOf(DType dt, const std::vector<T>& v, Dims shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  Tensor t(dt, shape);
  std::memcpy(t.raw(), v.data(), v.size() * sizeof(T));
  return t;
}

std::vector<Tensor> everyDTypeTensors() {
  std::vector<Tensor> ts;
  float fnanp = std::bit_cast<float>(0x7fc00001u), fsnan = std::bit_cast<float>(0x7f800001u);
  float fneg_nan = std::bit_cast<float>(0xffc00000u);
  ts.push_back(tensorOf<float>(DType::F32, {0.f, -0.f, 1.f, -1.5f, 0.1f, 1e-45f, 1.17549435e-38f,
                                            std::numeric_limits<float>::max(), -INFINITY, INFINITY,
                                            NAN, fneg_nan, fnanp, fsnan, 3.14159265f, 1e20f}));
  double dnanp = std::bit_cast<double>(0x7ff8000000000123ull);
  ts.push_back(tensorOf<double>(DType::F64,
                                {0.0, -0.0, 0.1, 1e-320, 5e-324, std::numeric_limits<double>::max(),
                                 -INFINITY, NAN, dnanp, 1.0 / 3}));
  ts.push_back(tensorOf<int8_t>(DType::I8, {-128, 0, 127}));
  ts.push_back(tensorOf<int16_t>(DType::I16, {-32768, 32767}));
  ts.push_back(tensorOf<int32_t>(DType::I32, {INT32_MIN, INT32_MAX}));
  ts.push_back(tensorOf<int64_t>(DType::I64, {INT64_MIN, INT64_MAX, -1, 0}, {2, 2}));
  ts.push_back(tensorOf<uint8_t>(DType::U8, {0, 255}));
  ts.push_back(tensorOf<uint16_t>(DType::U16, {0, 65535}));
  ts.push_back(tensorOf<uint32_t>(DType::U32, {0, UINT32_MAX}));
  ts.push_back(tensorOf<uint64_t>(DType::U64, {0, UINT64_MAX}));
  ts.push_back(tensorOf<uint8_t>(DType::Bool, {0, 1, 1}));
  ts.push_back(tensorOf<int8_t>(DType::I4, {-8, -1, 0, 7}));
  ts.push_back(tensorOf<uint8_t>(DType::U4, {0, 9, 15}));
  ts.push_back(tensorOf<int8_t>(DType::I2, {-2, -1, 0, 1}));
  ts.push_back(tensorOf<uint8_t>(DType::U2, {0, 1, 2, 3}));
  ts.push_back(tensorOf<float>(DType::C64, {1.f, -2.f, NAN, fnanp}, {2}));
  ts.push_back(tensorOf<double>(DType::C128, {0.5, -0.0}, {1}));
  Tensor s(DType::String, {4});
  s.strings()[0] = "";
  s.strings()[1] = "quote\" backslash\\ nl\n tab\t cr\r ctl\x01 del\x7f";
  s.strings()[2] = "h\xc3\xa9llo";
  s.strings()[3] = std::string("nul\0byte", 8);
  ts.push_back(s);
  // Every bit pattern of the reduced float types.
  for (DType dt : {DType::F16, DType::BF16}) {
    std::vector<uint16_t> bits(65536);
    for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i);
    ts.push_back(tensorOf<uint16_t>(dt, bits));
  }
  for (DType dt : {DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2, DType::F8E5M2FNUZ,
                   DType::F8E8M0, DType::F4E2M1}) {
    std::vector<uint8_t> bits(dt == DType::F4E2M1 ? 16 : 256);
    for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint8_t>(i);
    ts.push_back(tensorOf<uint8_t>(dt, bits, {static_cast<int64_t>(bits.size()) / 4, 4}));
  }
  ts.push_back(Tensor(DType::F32, {0}));         // empty
  ts.push_back(Tensor::scalar(DType::F32, 2.5)); // rank 0
  return ts;
}

Model handBuiltModel() {
  const OpRegistry& reg = testRegistry();
  Model m;
  m.irVersion = 8;
  m.opsets = {{"", 17}, {"com.test", 1}};
  m.producerName = "hand \"built\"";
  m.producerVersion = "0.1";
  m.graph = std::make_shared<Graph>();
  Graph& g = *m.graph;
  g.name = "main";
  auto node = [&](Graph& gr, std::string op, std::vector<Value*> ins, std::vector<std::string> outs,
                  std::string domain = "") {
    Node* n = gr.addNode(std::move(op), std::move(ins), outs, std::move(domain));
    n->def = reg.find(n->domain, n->op);
    return n;
  };
  Value* x = g.addInput("input.1", Type::tensor(DType::F32, Shape{Dim::sym("N"), Dim::known(3),
                                                                  Dim::sym("batch size"), Dim{}}));
  Value* c = g.addInput("cond", Type::tensor(DType::Bool, Shape{}));
  Value* unk = g.addInput("123", Type::tensor(DType::I64));
  Value* seq = g.addInput("seq", Type::sequence(Type::tensor(DType::F32, Shape{Dim{}})));
  Value* opt = g.addInput("opt", Type::optional(Type::sequence(Type::tensor(DType::I64, Shape{}))));
  g.addInput("unknown", Type{});
  g.addInput("nodtype", Type::tensor(DType::Undefined, Shape{Dim::known(2)}));
  int k = 0;
  for (Tensor& t : everyDTypeTensors())
    g.addConstant(fmt::format("c{}_{}", k++, dtypeName(t.dtype())), t);
  Value* w = g.addConstant("onnx::Conv_5",
                           Tensor::fromF32(std::vector<float>(64 * 3, 0.25f), {64, 3, 1, 1}));
  Value* b = g.addConstant("/layer/bias", Tensor::fromF32({1, 2}));

  Node* conv = node(g, "Conv", {x, w, nullptr}, {"/layer/Conv_output_0"});
  conv->name = "/layer/Conv";
  conv->attrs["pads"] = Attribute{std::vector<int64_t>{0, 0, 0, 0}};
  conv->attrs["auto_pad"] = Attribute{std::string("NOTSET")};
  conv->outputs[0]->type =
      Type::tensor(DType::F32, Shape{Dim::sym("N"), Dim::known(64), Dim{}, Dim{}});
  Value* y = conv->outputs[0];
  Node* drop = node(g, "Dropout", {y, nullptr, c}, {"with space", ""});
  drop->outputs[0]->type = y->type;
  Node* relu = node(g, "Relu", {drop->outputs[0]}, {"quote\"name"});
  relu->name = "relu \"1\"";

  auto branch = [&](const std::string& name, Value* outer) {
    auto sg = std::make_shared<Graph>();
    sg->name = name;
    sg->parent = &g;
    Value* bc = sg->addConstant("bc", Tensor::fromF32({0.5f}));
    Node* add = node(*sg, "Add", {outer, bc}, {name + "_out"});
    add->outputs[0]->type = Type::tensor(DType::F32, Shape{Dim{}});
    sg->outputs.push_back(add->outputs[0]);
    return sg;
  };
  Node* iff = node(g, "If", {c}, {"if_out"});
  iff->attrs["then_branch"] = Attribute{branch("then", relu->outputs[0])};
  iff->attrs["else_branch"] = Attribute{branch("else", x)};
  iff->outputs[0]->type = Type::tensor(DType::F32, Shape{Dim{}});

  Node* all =
      node(g, "AllAttrs", {x, nullptr, unk, seq, opt, nullptr}, {"a0", "", "_"}, "com.test");
  auto& at = all->attrs;
  at["f"] = Attribute{1.0f};
  at["f_neg0"] = Attribute{-0.0f};
  at["f_nan"] = Attribute{std::bit_cast<float>(0x7fa00001u)};
  at["f_inf"] = Attribute{-INFINITY};
  at["f_tiny"] = Attribute{1e-45f};
  at["f_int"] = Attribute{3.0f};
  at["i"] = Attribute{int64_t{-5}};
  at["s"] = Attribute{std::string("str \"q\" \\ \n")};
  at["t"] = Attribute{Tensor::fromI64({1, 2, 3})};
  at["t_undef"] = Attribute{Tensor()};
  auto inner = std::make_shared<Graph>();
  inner->name = "inner graph";
  inner->parent = &g;
  Value* ii = inner->addInput("i", Type::tensor(DType::I64, Shape{}));
  Node* id = node(*inner, "Add", {ii, unk}, {"o"}); // outer-scope reference
  inner->outputs = {id->outputs[0], b, ii};         // outputs may be outer values or inputs
  at["g"] = Attribute{inner};
  at["fs"] = Attribute{std::vector<float>{1.5f, 2.0f, -0.0f, NAN}};
  at["fs_empty"] = Attribute{std::vector<float>{}};
  at["is"] = Attribute{std::vector<int64_t>{1, -2, INT64_MIN}};
  at["is_empty"] = Attribute{std::vector<int64_t>{}};
  at["ss"] = Attribute{std::vector<std::string>{"a", "", "c,d"}};
  at["ss_empty"] = Attribute{std::vector<std::string>{}};
  at["ts"] = Attribute{std::vector<Tensor>{Tensor::fromF32({1.f}), everyDTypeTensors()[17]}};
  at["ts_empty"] = Attribute{std::vector<Tensor>{}};
  at["gs"] = Attribute{std::vector<GraphPtr>{branch("g0", x), branch("", x)}};
  at["gs_empty"] = Attribute{std::vector<GraphPtr>{}};
  at["ty"] = Attribute{Type::sequence(Type::tensor(DType::F32, Shape{Dim::sym("N")}))};
  at["ty_opt"] = Attribute{Type::optional(Type{})};
  at["ty_unknown"] = Attribute{Type{}};
  at["weird name"] = Attribute{int64_t{7}};
  all->outputs[0]->type = Type::tensor(DType::F32);
  node(g, "Sink", {all->outputs[0], nullptr}, {}, "com.test");
  g.outputs = {iff->outputs[0], x, b, iff->outputs[0], all->outputs[2]};
  return m;
}

} // namespace

TEST(IrText, HandBuiltModelVerifies) {
  Model m = handBuiltModel();
  VerifyOptions vo;
  vo.registry = &testRegistry();
  EXPECT_NO_THROW(verifyModel(m, vo));
}

TEST(IrText, HandBuiltModelRoundTrips) {
  Model m = handBuiltModel();
  roundTrip(m, testRegistry());
  std::string text = printModel(m);
  // Spot checks of the readable form.
  EXPECT_NE(text.find("model ir_version=8 producer=\"hand \\\"built\\\"\" producer_version=\"0.1\" "
                      "opsets={\"\": 17, \"com.test\": 1} {"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("graph @main(%input.1: f32[N,3,\"batch size\",?], %cond: bool[], %123: i64[*]"),
      std::string::npos);
  EXPECT_NE(text.find("%\"onnx::Conv_5\" = const f32[64,3,1,1] <elided>"), std::string::npos);
  EXPECT_NE(
      text.find(
          "%\"/layer/Conv_output_0\" = Conv(%input.1, %\"onnx::Conv_5\", _) "
          "{auto_pad = \"NOTSET\", pads = [0, 0, 0, 0]} : f32[N,64,?,?] loc(\"/layer/Conv\")"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("%\"with space\", _ = Dropout(%\"/layer/Conv_output_0\", _, %cond)"),
            std::string::npos);
  EXPECT_NE(text.find("f_nan = nan(0x7fa00001)"), std::string::npos);
  EXPECT_NE(text.find("f_int = 3.0,"), std::string::npos);
  EXPECT_NE(text.find("fs_empty = floats[]"), std::string::npos);
  EXPECT_NE(text.find("ty = type seq<f32[N]>"), std::string::npos);
  EXPECT_NE(text.find("t_undef = tensor undefined"), std::string::npos);
  EXPECT_NE(
      text.find(
          "%c0_f32 = const f32[16] [0, -0, 1, -1.5, 0.1, 1e-45, 1.1754944e-38, 3.4028235e+38, "
          "-inf, inf, nan, -nan, 0x7fc00001, 0x7f800001, 3.1415927, 1e+20]"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("com.test.Sink(%a0, _)\n"), std::string::npos);
  EXPECT_NE(text.find("return %if_out, %input.1, %\"/layer/bias\", %if_out, %_\n"),
            std::string::npos);
}

TEST(IrText, ElidedConstantsParseUndefined) {
  ParseOptions po;
  po.registry = &testRegistry();
  Model m = parseModel("graph @g() {\n  %w = const f32[2,N] <elided>\n  return %w\n}\n", po);
  ASSERT_EQ(m.graph->constants.size(), 1u);
  const Value* w = m.graph->constants[0];
  EXPECT_TRUE(w->isConstant());
  EXPECT_FALSE(w->constant->defined());
  EXPECT_EQ(printType(w->type), "f32[2,N]");
  VerifyOptions vo;
  vo.registry = &testRegistry();
  EXPECT_NO_THROW(verifyModel(m, vo));
  EXPECT_EQ(printModel(m),
            "model ir_version=0 opsets={} {\ngraph @g() {\n  %w = const f32[2,N] <elided>\n"
            "  return %w\n}\n}\n");
}

TEST(IrText, CommentsAndLenientSpacing) {
  ParseOptions po;
  po.registry = &testRegistry();
  Model m =
      parseModel("// header\nmodel opsets={\"\":17} ir_version=7{graph @g(%x:f32[2]){ // body\n"
                 "%y=Relu(%x):f32[2]\n%z = Add(%y,%x) // trailing\nreturn %z}}",
                 po);
  EXPECT_EQ(m.irVersion, 7);
  ASSERT_EQ(m.graph->nodes.size(), 2u);
  EXPECT_EQ(m.graph->nodes[1]->inputs[0], m.graph->nodes[0]->outputs[0]);
  EXPECT_EQ(m.graph->nodes[1]->outputs[0]->type.kind, Type::Kind::Unknown);
}

TEST(IrText, ParseErrorsHaveLineAndColumn) {
  ParseOptions po;
  po.registry = &testRegistry();
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"graph @g() {\n  %y = NoSuchOp(%x)\n  return %y\n}",
       "2:8: unknown op 'NoSuchOp' in domain 'ai.onnx'"},
      {"graph @g() {\n  %y = Relu(%x)\n  return %y\n}", "2:13: undefined value %x"},
      {"graph @g(%x: f32[2]) {\n  %x = Relu(%x)\n  return %x\n}", "2:3: value %x is defined twice"},
      {"graph @g(%x: f32[2]) {\n  %y = Relu(%x) : f32[2], f32[3]\n  return %y\n}",
       "2:17: 2 types for 1 outputs"},
      {"graph @g(%x: f33[2]) {\n  return %x\n}", "1:14: unknown element type 'f33'"},
      {"graph @g() {\n  %c = const f32[3] [1, 2]\n  return %c\n}",
       "2:14: f32[3] has 3 elements, the data lists 2"},
      {"graph @g() {\n  %c = const f32[1] [1, 2]\n  return %c\n}",
       "2:25: more than the 1 elements of f32[1]"},
      {"graph @g() {\n  %c = const i8[1] [300]\n  return %c\n}",
       "2:21: element 300 is out of range"},
      {"graph @g() {\n  %c = const f32[N] [1]\n  return %c\n}",
       "2:14: tensor data needs a known element type"},
      {"graph @g() {\n  %c = const f32[1] [abc]\n  return %c\n}",
       "2:22: expected a floating-point number"},
      {"graph @g() {\n  %c = const string[1] [\"abc]\n  return %c\n}", "2:25: unterminated string"},
      {"graph @g(%x: f32[2]) {\n  %y = Relu(%x) {a = 1, a = 2}\n  return %y\n}",
       "2:25: attribute 'a' given twice"},
      {"graph @g(%x: f32[2]) {\n  return %x\n}\nextra", "4:1: expected end of input, got 'extra'"},
      {"model ir_version=x {}", "1:18: expected ir_version (an integer), got 'x'"},
      {"model foo=1 {}", "1:7: unknown model field 'foo'"},
      {"graph @g(%x: f32[2]) {\n  %y = Relu(%x) {a = \"\\q\"}\n  return %y\n}",
       "2:24: unknown escape '\\q'"},
      {"", "1:1: expected 'graph', got end of input"},
      {"graph @g(%x: f32[2]) {\n  %y = Relu(%x", "2:15: expected ',', got end of input"},
  };
  for (const Case& c : cases) {
    try {
      parseModel(c.text, po);
      ADD_FAILURE() << "no error for:\n" << c.text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.error), std::string::npos)
          << "got: " << e.what() << "\nwant: " << c.error;
    }
  }
}

TEST(IrText, DeepNestingIsAnErrorNotACrash) {
  std::string t = "graph @g(%x: ";
  for (int i = 0; i < 100000; ++i) t += "seq<";
  EXPECT_THROW(parseModel(t), Error);
}

TEST(IrText, TruncatedAndMutatedTextNeverCrashes) {
  ParseOptions po;
  po.registry = &testRegistry();
  Model m = handBuiltModel();
  PrintOptions small;
  small.maxConstantElems = 4;
  std::string text = printModel(m, small);
  int ok = 0, errors = 0;
  for (size_t n = 0; n < text.size(); n += 7) {
    try {
      parseModel(std::string_view(text).substr(0, n), po);
      ++ok;
    } catch (const Error&) {
      ++errors;
    }
  }
  std::mt19937 rng(7);
  const char junk[] = "%@(){}[]<>,=:?*\"\\_ax09.-+/\n";
  for (int i = 0; i < 3000; ++i) {
    std::string t = text;
    for (int j = 0; j < 3; ++j) t[rng() % t.size()] = junk[rng() % (sizeof(junk) - 1)];
    try {
      parseModel(t, po);
      ++ok;
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
  std::cout << "fuzz: " << ok << " parsed, " << errors << " rejected with an error\n";
}

// ---- Real models ----------------------------------------------------------------------------

namespace {

std::string sharedDir() { return AICC_SHARED_DIR; }

std::vector<std::string> modelNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(sharedDir() + "/models", ec))
    if (fs::exists(e.path() / "model.onnx")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  if (names.empty()) names.push_back("(none)");
  return names;
}

class ModelRoundTrip : public testing::TestWithParam<std::string> {};

} // namespace

TEST_P(ModelRoundTrip, PrintParsePrint) {
  const std::string& name = GetParam();
  if (name == "(none)") GTEST_SKIP() << "no models under " << sharedDir() << "/models";
  if (name == "superres-prepost-customops") GTEST_SKIP() << "custom ops (onnxruntime-extensions)";
  ImportedModel im;
  try {
    im = importOnnxFile(sharedDir() + "/models/" + name + "/model.onnx");
  } catch (const Error& e) {
    FAIL() << name << " no longer imports: " << e.what();
  }
  roundTrip(im.model, OpRegistry::instance());
  EXPECT_NO_THROW(verifyModel(im.model));
}

INSTANTIATE_TEST_SUITE_P(Models, ModelRoundTrip, testing::ValuesIn(modelNames()),
                         [](const testing::TestParamInfo<std::string>& i) {
                           std::string s = i.param;
                           for (char& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(IrText, OnnxNodeTestModelsRoundTrip) {
  std::string dir = sharedDir() + "/onnx-backend/onnx/backend/test/data/node";
  if (!fs::is_directory(dir)) GTEST_SKIP() << dir << " is missing";
  std::vector<fs::path> models;
  for (const auto& e : fs::directory_iterator(dir))
    if (fs::exists(e.path() / "model.onnx")) models.push_back(e.path() / "model.onnx");
  std::sort(models.begin(), models.end());
  int imported = 0, roundTripped = 0, verified = 0;
  std::vector<std::string> verifyFailures, importFailures;
  for (const auto& p : models) {
    ImportedModel im;
    try {
      im = importOnnxFile(p.string());
    } catch (const Error& e) {
      importFailures.push_back(p.parent_path().filename().string() + ": " + e.what());
      continue;
    }
    ++imported;
    SCOPED_TRACE(p.parent_path().filename().string());
    auto parts = [] {
      return testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
    };
    int before = parts();
    try {
      roundTrip(im.model, OpRegistry::instance());
    } catch (const Error& e) {
      ADD_FAILURE() << "round trip threw: " << e.what();
    }
    if (parts() == before) ++roundTripped;
    try {
      verifyModel(im.model);
      ++verified;
    } catch (const Error& e) {
      verifyFailures.push_back(p.parent_path().filename().string() + ": " + e.what());
    }
  }
  std::cout << "node tests: " << models.size() << " models, " << imported << " imported, "
            << roundTripped << " round-tripped, " << verified << " verified\n";
  for (const auto& f : verifyFailures) ADD_FAILURE() << "verifier: " << f;
  for (const auto& f : importFailures) ADD_FAILURE() << "import: " << f;
}
