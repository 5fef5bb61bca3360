// Bad input never crashes: each case runs the real `aicc` binary and expects a non-zero exit with
// exactly one line on stderr ("aicc: error: ..." naming the problem). Under the ASan/UBSan build
// this also proves the paths are memory-clean (a sanitizer report would add lines).
#include "frontend/onnx/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sys/wait.h>

namespace fs = std::filesystem;

namespace {

struct CmdResult {
  int status;
  std::string err;
};

CmdResult runAicc(const std::string& args) {
  fs::path errFile = fs::temp_directory_path() / ("aicc_err_" + std::to_string(getpid()));
  std::string cmd = std::string(AICC_BINARY) + " " + args + " >/dev/null 2>" + errFile.string();
  int st = std::system(cmd.c_str());
  std::ifstream f(errFile);
  std::string err((std::istreambuf_iterator<char>(f)), {});
  fs::remove(errFile);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), err};
}

// One line, "aicc: error: ", containing every needle.
void expectCleanError(const CmdResult& r, std::initializer_list<std::string> needles) {
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err.rfind("aicc: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "missing '" << n << "' in: " << r.err;
}

class BadInput : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("aicc_bad_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& bytes) {
    fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }

  // A small valid model: y = Relu(x), x: f32[2,3].
  static onnx::ModelProto tinyModel() {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(17);
    auto* g = m.mutable_graph();
    g->set_name("tiny");
    auto addVi = [](onnx::ValueInfoProto* vi, const std::string& name, std::vector<int64_t> dims) {
      vi->set_name(name);
      auto* tt = vi->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(onnx::TensorProto::FLOAT);
      for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
    };
    addVi(g->add_input(), "x", {2, 3});
    addVi(g->add_output(), "y", {2, 3});
    auto* n = g->add_node();
    n->set_op_type("Relu");
    n->set_name("relu1");
    n->add_input("x");
    n->add_output("y");
    return m;
  }

  std::string mnist() const { return std::string(AICC_SOURCE_DIR) + "/models/mnist-8/model.onnx"; }

  fs::path dir_;
};

TEST_F(BadInput, TruncatedModel) {
  std::string bytes = aicc::readFileBytes(mnist());
  for (size_t cut : {size_t{1}, size_t{17}, bytes.size() / 2, bytes.size() - 3}) {
    std::string p = write("trunc.onnx", bytes.substr(0, cut));
    expectCleanError(runAicc("run " + p), {"trunc.onnx"});
  }
}

TEST_F(BadInput, CorruptedModelNeverCrashes) {
  std::string bytes = aicc::readFileBytes(mnist());
  std::string header = bytes;
  std::fill(header.begin(), header.begin() + 64, '\xff');
  expectCleanError(runAicc("run " + write("hdr.onnx", header)), {"hdr.onnx"});
  // Random corruption: either it still runs (the damage hit weight data) or it fails cleanly.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    std::string c = bytes;
    for (int k = 0; k < 8; ++k) c[rng() % c.size()] = static_cast<char>(rng());
    CmdResult r = runAicc("run " + write("c.onnx", c));
    if (r.status == 0) continue;
    expectCleanError(r, {});
  }
}

TEST_F(BadInput, UndefinedTensor) {
  onnx::ModelProto m = tinyModel();
  m.mutable_graph()->mutable_node(0)->set_input(0, "nothere");
  expectCleanError(runAicc("run " + write("m.onnx", m.SerializeAsString())), {"relu1", "nothere"});
}

TEST_F(BadInput, Cycle) {
  onnx::ModelProto m = tinyModel();
  auto* g = m.mutable_graph();
  g->mutable_node(0)->add_input("b"); // Relu(x, b) is also an arity error; make it a true cycle instead
  g->mutable_node(0)->mutable_input()->RemoveLast();
  g->mutable_node(0)->set_input(0, "b");
  auto* n2 = g->add_node();
  n2->set_op_type("Relu");
  n2->set_name("relu2");
  n2->add_input("y");
  n2->add_output("b");
  expectCleanError(runAicc("run " + write("m.onnx", m.SerializeAsString())), {"cycle"});
}

TEST_F(BadInput, UnknownOpNamesNodeDomainAndOpset) {
  onnx::ModelProto m = tinyModel();
  m.mutable_graph()->mutable_node(0)->set_op_type("NoSuchOp");
  expectCleanError(runAicc("run " + write("m.onnx", m.SerializeAsString())),
                   {"relu1", "NoSuchOp", "ai.onnx", "17"});
  m.mutable_graph()->mutable_node(0)->set_domain("com.example");
  expectCleanError(runAicc("run " + write("m.onnx", m.SerializeAsString())), {"com.example"});
}

TEST_F(BadInput, UnknownAttribute) {
  onnx::ModelProto m = tinyModel();
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("bogus");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(3);
  expectCleanError(runAicc("run " + write("m.onnx", m.SerializeAsString())), {"relu1", "bogus"});
}

TEST_F(BadInput, UnsupportedDtype) {
  onnx::ModelProto m = tinyModel();
  auto* init = m.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(99);
  init->add_dims(1);
  expectCleanError(runAicc("run " + write("m.onnx", m.SerializeAsString())), {"'w'", "99"});
}

TEST_F(BadInput, WrongInputFiles) {
  std::string model = write("m.onnx", tinyModel().SerializeAsString());
  onnx::TensorProto t;
  aicc::tensorToProto(aicc::Tensor(aicc::DType::F32, {2, 4}), "x", t);
  write("shape/input_0.pb", t.SerializeAsString());
  expectCleanError(runAicc("run " + model + " --inputs-dir " + (dir_ / "shape").string()), {"'x'", "[2,4]"});
  aicc::tensorToProto(aicc::Tensor(aicc::DType::I64, {2, 3}), "x", t);
  write("type/input_0.pb", t.SerializeAsString());
  expectCleanError(runAicc("run " + model + " --inputs-dir " + (dir_ / "type").string()), {"'x'", "i64"});
  write("garbage/input_0.pb", std::string("\x0a\xff\xff\xff\xff\x0f garbage", 12));
  expectCleanError(runAicc("run " + model + " --inputs-dir " + (dir_ / "garbage").string()), {"input_0.pb"});
  expectCleanError(runAicc("run " + model + " --input nope=" + (dir_ / "shape/input_0.pb").string()), {"nope"});
}

TEST_F(BadInput, AbsurdSizes) {
  constexpr int64_t kHuge = int64_t{1} << 40;
  onnx::ModelProto m = tinyModel();
  auto* dim = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1);
  dim->set_dim_value(kHuge);
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(kHuge);
  expectCleanError(runAicc("run " + write("big.onnx", m.SerializeAsString())), {"too many elements"});
  // An initializer claiming 2^40 elements with no data.
  onnx::ModelProto m2 = tinyModel();
  auto* init = m2.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(kHuge);
  expectCleanError(runAicc("run " + write("bigw.onnx", m2.SerializeAsString())), {"'w'"});
  // An input file claiming 2^40 elements.
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(2);
  t.add_dims(kHuge);
  write("in/input_0.pb", t.SerializeAsString());
  expectCleanError(runAicc("run " + write("m.onnx", tinyModel().SerializeAsString()) + " --inputs-dir " +
                           (dir_ / "in").string()),
                   {"input_0.pb"});
}

} // namespace
