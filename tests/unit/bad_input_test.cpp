// Bad input never crashes: each case runs the real `aicc` binary and expects a non-zero exit with
// exactly one line on stderr ("aicc: error: ..." naming the problem). Under the ASan/UBSan build
// this also proves the paths are memory-clean (a sanitizer report would add lines).
#include "frontend/onnx/tensor_proto.h"
#include "support/file.h"

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

// `env`: "NAME=VALUE ..." set for this run only.
CmdResult runAicc(const std::string& args, const std::string& env = "") {
  fs::path errFile = fs::temp_directory_path() / ("aicc_err_" + std::to_string(getpid()));
  std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(AICC_BINARY) + " " +
                    args + " >/dev/null 2>" + errFile.string();
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
  std::string bytes = aicc::readFile(mnist());
  for (size_t cut : {size_t{1}, size_t{17}, bytes.size() / 2, bytes.size() - 3}) {
    std::string p = write("trunc.onnx", bytes.substr(0, cut));
    expectCleanError(runAicc("run " + p), {"trunc.onnx"});
  }
}

TEST_F(BadInput, CorruptedModelNeverCrashes) {
  std::string bytes = aicc::readFile(mnist());
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
  // A tensor file where a sequence or optional is declared (protobuf would parse most of it as
  // an empty sequence): the file and the kind it should hold.
  aicc::tensorToProto(aicc::Tensor::fromF32({1, 2, 3}, {3}), "x", t);
  for (auto [type, kind] :
       {std::pair{aicc::Type::sequence(aicc::Type::tensor(aicc::DType::F32, {})), "SequenceProto"},
        {aicc::Type::optional(aicc::Type::tensor(aicc::DType::F32, {})), "OptionalProto"}})
    try {
      aicc::readValueBytes(t.SerializeAsString(), "in.pb", type);
      ADD_FAILURE() << "read as " << kind;
    } catch (const aicc::Error& e) {
      EXPECT_NE(
          std::string(e.what()).find(std::string("'in.pb' is not a valid serialized ") + kind),
          std::string::npos)
          << e.what();
    }
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

// .npy headers whose shape is not a tuple of sizes.
TEST_F(BadInput, MalformedNpyHeaders) {
  auto npy = [&](const std::string& name, const std::string& shape, size_t dataBytes) {
    std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    h += std::string(63 - (10 + h.size()) % 64, ' ') + "\n";
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(h.size() & 0xff) +
                        char(h.size() >> 8) + h + std::string(dataBytes, '\0');
    return write(name, bytes);
  };
  const std::string model = write("m.onnx", tinyModel().SerializeAsString());
  expectCleanError(runAicc("run " + model + " --input x=" + npy("a.npy", "(2, abc)", 24)),
                   {"a.npy", "'abc' is not an integer"});
  expectCleanError(runAicc("run " + model + " --input x=" + npy("b.npy", "(2, 3 }", 24)),
                   {"b.npy", "malformed .npy shape"});
  expectCleanError(runAicc("run " + model + " --input x=" + npy("c.npy", "(2, -3)", 24)),
                   {"c.npy", "out of range"});
  // The same header with a well-formed shape runs.
  EXPECT_EQ(runAicc("run " + model + " --input x=" + npy("ok.npy", "(2, 3)", 24)).status, 0);
}

TEST_F(BadInput, ExternalDataOffsetNotANumber) {
  onnx::ModelProto m = tinyModel();
  auto* init = m.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(2);
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const char* k, const char* v) {
    auto* e = init->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", "w.bin");
  kv("offset", "abc");
  write("w.bin", std::string(8, '\0'));
  expectCleanError(runAicc("run " + write("m.onnx", m.SerializeAsString())),
                   {"'w'", "external data offset", "'abc'"});
}

TEST_F(BadInput, UnwritableOutputPlaces) {
  const std::string model = write("m.onnx", tinyModel().SerializeAsString());
  const std::string file = write("a_file", "x");
  expectCleanError(runAicc("compile " + model + " -o " + file + "/sub"), {"a_file"});
  expectCleanError(runAicc("run " + model + " --output-dir " + file), {"a_file"});
}

// Every flag value is checked: numbers in range, names that exist, environment variables.
TEST_F(BadInput, FlagValuesAreChecked) {
  const std::string model = write("m.onnx", tinyModel().SerializeAsString());
  expectCleanError(runAicc("bench " + model + " --threads 0"), {"--threads"});
  expectCleanError(runAicc("bench " + model + " --warmup -5"), {"--warmup", "-5"});
  expectCleanError(runAicc("bench " + model + " --iters 1", "AICC_NUM_THREADS=abc"),
                   {"AICC_NUM_THREADS", "'abc'"});
  expectCleanError(runAicc("run " + model, "AICC_NUM_THREADS=0"), {"AICC_NUM_THREADS"});
  expectCleanError(runAicc("run " + model, "AICC_PIN_THREADS=yes"), {"AICC_PIN_THREADS", "'yes'"});
  expectCleanError(runAicc("run " + model + " --no-such-flag"), {"--no-such-flag"});
  const std::string out = (dir_ / "out").string();
  expectCleanError(runAicc("compile " + model + " -o " + out + " --select NoSuchNode=loop"),
                   {"--select NoSuchNode=loop", "no node 'NoSuchNode'"});
  expectCleanError(runAicc("compile " + model + " -o " + out + " --select relu1=loop"),
                   {"--select relu1=loop", "no kernel candidates"});
  expectCleanError(
      runAicc("compile " + mnist() + " -o " + out + " --select Convolution28=nokernel"),
      {"--select Convolution28=nokernel", "applicable: loop"});
  expectCleanError(runAicc("compile " + model + " -o " + out + " --target nosuchcpu"),
                   {"nosuchcpu"});
  expectCleanError(runAicc("opt " + model + " --passes dce,nosuchpass"), {"nosuchpass"});
  expectCleanError(runAicc("opt " + model + " --print-ir-after nosuchpass"), {"nosuchpass"});
  EXPECT_EQ(runAicc("compile " + mnist() + " -o " + out + " --select Convolution28=loop").status,
            0);
}

// --max-memory (or AICC_MAX_MEMORY): an allocation past the budget is an error naming it, for the
// interpreter, the JIT and a compiled folder.
TEST_F(BadInput, MemoryBudget) {
  const std::string mnistModel = mnist();
  expectCleanError(runAicc("run " + mnistModel + " --max-memory 10K"),
                   {"memory budget", "[16,8,5,5]"});
  expectCleanError(runAicc("run " + mnistModel + " --engine jit", "AICC_MAX_MEMORY=20K"),
                   {"memory budget"});
  expectCleanError(runAicc("run " + mnistModel, "AICC_MAX_MEMORY=lots"),
                   {"--max-memory", "'lots'"});
  const fs::path out = dir_ / "out";
  ASSERT_EQ(runAicc("compile " + mnistModel + " -o " + out.string()).status, 0);
  expectCleanError(runAicc("run " + out.string() + " --max-memory 50K"),
                   {"loading", "memory budget"});
  EXPECT_EQ(runAicc("run " + mnistModel + " --max-memory 64M").status, 0);
}

// A damaged compiled folder through the CLI: one error line, never a signal.
TEST_F(BadInput, DamagedCompiledFolder) {
  const std::string model = write("m.onnx", tinyModel().SerializeAsString());
  const fs::path out = dir_ / "out";
  ASSERT_EQ(runAicc("compile " + model + " -o " + out.string()).status, 0);
  fs::resize_file(out / "model.so", fs::file_size(out / "model.so") / 2);
  expectCleanError(runAicc("run " + out.string()), {"model.so", "truncated"});
}

} // namespace
