// ONNX importer: initializers (also listed as inputs), Constant nodes, external data, subgraphs
// with outer-scope references, unsorted nodes, opset imports of unused domains, symbolic dims.
#include "frontend/onnx/onnx_importer.h"
#include "interp/interpreter.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace aicc;

namespace {

void setType(onnx::ValueInfoProto* vi, const std::string& name, std::vector<std::string> dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (std::isdigit(static_cast<unsigned char>(d[0]))) dim->set_dim_value(std::stoll(d));
    else dim->set_dim_param(d);
  }
}

onnx::NodeProto* addNode(onnx::GraphProto* g, const std::string& op, std::vector<std::string> ins,
                         std::vector<std::string> outs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  for (auto& i : ins) n->add_input(i);
  for (auto& o : outs) n->add_output(o);
  return n;
}

onnx::TensorProto* addFloatInit(onnx::GraphProto* g, const std::string& name, std::vector<float> v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(static_cast<int64_t>(v.size()));
  for (float x : v) t->add_float_data(x);
  return t;
}

onnx::ModelProto baseModel(int irVersion = 8, int opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(irVersion);
  m.add_opset_import()->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

std::vector<float> runF32(ImportedModel& m, std::vector<Tensor> ins) {
  std::vector<RValue> rv;
  for (auto& t : ins) rv.push_back(RValue::of(t));
  auto out = interpret(*m.model.graph, rv, {true});
  std::vector<float> v;
  for (double d : out[0].tensor.toF64Vector()) v.push_back(static_cast<float>(d));
  return v;
}

TEST(Importer, InitializerListedAsInputIsAConstant) {
  onnx::ModelProto m = baseModel(3, 8);
  auto* g = m.mutable_graph();
  setType(g->add_input(), "x", {"3"});
  setType(g->add_input(), "b", {"3"}); // old IR style: initializer also listed as an input
  setType(g->add_output(), "y", {"3"});
  addFloatInit(g, "b", {1, 2, 3});
  addNode(g, "Add", {"x", "b"}, {"y"});
  ImportedModel im = importOnnxBytes(m.SerializeAsString(), ".");
  ASSERT_EQ(im.model.graph->inputs.size(), 1u);
  EXPECT_EQ(im.model.graph->constants.size(), 1u);
  EXPECT_EQ(im.allInputNames, (std::vector<std::string>{"x", "b"}));
  EXPECT_EQ(runF32(im, {Tensor::fromF32({10, 20, 30})}), (std::vector<float>{11, 22, 33}));
  // The backend-test rule can make it an input again.
  promoteConstantToInput(im.model, "b");
  EXPECT_EQ(runF32(im, {Tensor::fromF32({1, 1, 1}), Tensor::fromF32({5, 5, 5})}), (std::vector<float>{6, 6, 6}));
}

TEST(Importer, ConstantNodesAndUnsortedNodes) {
  onnx::ModelProto m = baseModel();
  auto* g = m.mutable_graph();
  setType(g->add_input(), "x", {"2"});
  setType(g->add_output(), "y", {"2"});
  addNode(g, "Add", {"x", "c"}, {"y"}); // uses c before the Constant node defines it
  auto* c = addNode(g, "Constant", {}, {"c"});
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(2);
  a->mutable_t()->add_float_data(0.5f);
  a->mutable_t()->add_float_data(-1.0f);
  ImportedModel im = importOnnxBytes(m.SerializeAsString(), ".");
  EXPECT_EQ(im.model.graph->nodes[0]->op, "Constant");
  EXPECT_EQ(runF32(im, {Tensor::fromF32({1, 1})}), (std::vector<float>{1.5f, 0.0f}));
}

TEST(Importer, ExternalData) {
  fs::path dir = fs::temp_directory_path() / ("aicc_ext_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::vector<float> w = {1, 2, 3, 4};
  {
    std::ofstream f(dir / "w.bin", std::ios::binary);
    f.write("pad!", 4); // offset 4... then unaligned: the importer must copy, not view
    f.write(reinterpret_cast<const char*>(w.data()), 16);
  }
  onnx::ModelProto m = baseModel();
  auto* g = m.mutable_graph();
  setType(g->add_input(), "x", {"4"});
  setType(g->add_output(), "y", {"4"});
  auto* t = g->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const char* k, const char* v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", "w.bin");
  kv("offset", "4");
  kv("length", "16");
  addNode(g, "Mul", {"x", "w"}, {"y"});
  std::ofstream(dir / "m.onnx", std::ios::binary) << m.SerializeAsString();
  ImportedModel im = importOnnxFile((dir / "m.onnx").string());
  EXPECT_EQ(runF32(im, {Tensor::fromF32({1, 1, 2, 2})}), (std::vector<float>{1, 2, 6, 8}));
  // A location escaping the model folder is refused.
  t->mutable_external_data(0)->set_value("../w.bin");
  std::ofstream(dir / "bad.onnx", std::ios::binary) << m.SerializeAsString();
  EXPECT_THROW(importOnnxFile((dir / "bad.onnx").string()), Error);
  fs::remove_all(dir);
}

TEST(Importer, UnusedDomainsIgnoredUnknownDomainRejected) {
  onnx::ModelProto m = baseModel();
  auto* os = m.add_opset_import();
  os->set_domain("com.example.unused");
  os->set_version(3);
  auto* g = m.mutable_graph();
  setType(g->add_input(), "x", {"2"});
  setType(g->add_output(), "y", {"2"});
  addNode(g, "Relu", {"x"}, {"y"});
  EXPECT_NO_THROW(importOnnxBytes(m.SerializeAsString(), "."));
  g->mutable_node(0)->set_domain("com.example.unused");
  try {
    importOnnxBytes(m.SerializeAsString(), ".");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("com.example.unused"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Relu"), std::string::npos) << e.what();
  }
}

TEST(Importer, SymbolicDimsInferredAndSpecialized) {
  onnx::ModelProto m = baseModel();
  auto* g = m.mutable_graph();
  setType(g->add_input(), "x", {"N", "3"});
  setType(g->add_input(), "z", {"1", "3"});
  auto* out = g->add_output();
  out->set_name("y");
  addNode(g, "Add", {"x", "z"}, {"y"});
  ImportedModel im = importOnnxBytes(m.SerializeAsString(), ".");
  EXPECT_EQ(formatType(im.model.graph->outputs[0]->type), "f32[N,3]");
  ImportOptions opts;
  opts.dims["N"] = 5;
  ImportedModel im2 = importOnnxBytes(m.SerializeAsString(), ".", opts);
  EXPECT_EQ(formatType(im2.model.graph->outputs[0]->type), "f32[5,3]");
}

// Declared shapes of computed values are hints, as ONNX Runtime takes them (issue #12's exporter
// quirks): one the graph does not compute (another size, another rank: ddddocr's output) is
// ignored with a warning naming the value; a declared name that is no input's symbol (PyTorch's
// "floor(width/2 - 1/2) + 1") is not adopted, the inferred dim stays.
TEST(Importer, DeclaredShapeConflictIsAWarning) {
  onnx::ModelProto m = baseModel();
  auto* g = m.mutable_graph();
  setType(g->add_input(), "x", {"2", "3"});
  setType(g->add_output(), "y", {"2", "4"}); // Relu cannot change the shape
  addNode(g, "Relu", {"x"}, {"y"});
  ImportedModel im = importOnnxBytes(m.SerializeAsString(), ".");
  EXPECT_EQ(formatType(im.model.graph->outputs[0]->type), "f32[2,3]");
  ASSERT_EQ(im.warnings.size(), 1u);
  EXPECT_EQ(im.warnings[0],
            "value 'y' is declared f32[2,4] but computes f32[2,3]: the declaration is ignored");
  g->mutable_output(0)->Clear();
  setType(g->mutable_output(0), "y", {"1", "2", "3"}); // another rank
  EXPECT_EQ(importOnnxBytes(m.SerializeAsString(), ".").warnings.size(), 1u);

  onnx::ModelProto s = baseModel();
  g = s.mutable_graph();
  setType(g->add_input(), "x", {"N", "3"});
  setType(g->add_output(), "y", {"floor(N/2 - 1/2) + 1", "3"});
  addNode(g, "Relu", {"x"}, {"y"});
  im = importOnnxBytes(s.SerializeAsString(), ".");
  EXPECT_EQ(formatType(im.model.graph->outputs[0]->type), "f32[N,3]");
  EXPECT_TRUE(im.warnings.empty());
}

TEST(Importer, ArityAndDuplicateOutputs) {
  onnx::ModelProto m = baseModel();
  auto* g = m.mutable_graph();
  setType(g->add_input(), "x", {"2"});
  setType(g->add_output(), "y", {"2"});
  addNode(g, "Relu", {"x", "x"}, {"y"}); // Relu takes one input
  EXPECT_THROW(importOnnxBytes(m.SerializeAsString(), "."), Error);
  g->mutable_node(0)->mutable_input()->RemoveLast();
  addNode(g, "Relu", {"x"}, {"y"}); // y defined twice
  EXPECT_THROW(importOnnxBytes(m.SerializeAsString(), "."), Error);
}

TEST(Importer, ModelLocalFunctionsAreInlined) {
  onnx::ModelProto m = baseModel();
  auto* os = m.add_opset_import();
  os->set_domain("local");
  os->set_version(1);
  auto* f = m.add_functions();
  f->set_name("LeakyTwice");
  f->set_domain("local");
  f->add_input("a");
  f->add_output("b");
  f->add_attribute("alpha");
  auto* fo = f->add_opset_import();
  fo->set_version(17);
  auto* n1 = f->add_node();
  n1->set_op_type("LeakyRelu");
  n1->add_input("a");
  n1->add_output("t");
  auto* ref = n1->add_attribute();
  ref->set_name("alpha");
  ref->set_type(onnx::AttributeProto::FLOAT);
  ref->set_ref_attr_name("alpha");
  auto* n2 = f->add_node();
  n2->set_op_type("Add");
  n2->add_input("t");
  n2->add_input("t");
  n2->add_output("b");
  auto* g = m.mutable_graph();
  setType(g->add_input(), "x", {"2"});
  setType(g->add_output(), "y", {"2"});
  auto* call = addNode(g, "LeakyTwice", {"x"}, {"y"});
  call->set_domain("local");
  auto* alpha = call->add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_f(0.5f);
  ImportedModel im = importOnnxBytes(m.SerializeAsString(), ".");
  ASSERT_EQ(im.model.graph->nodes.size(), 2u);
  EXPECT_EQ(runF32(im, {Tensor::fromF32({-2, 3})}), (std::vector<float>{-2, 6}));
}

} // namespace
