// The compiled-model loader (aicc_model_load, include/aicc/runtime.h) on damaged artifact folders.
// A small model is compiled once into a template folder (model.plan, model.weights, model.so);
// each input damages a copy of it, which is loaded and, when the loader accepts it, run on zero
// inputs. Loading must fail with a message, or the model must run (or fail with a message):
// never crash. Input: byte 0 picks the damage, the rest is its data:
//   0: model.plan is the data            1: model.weights is the data
//   2: the data is edits (3 bytes each: file and offset, offset, xor mask) of plan and weights
//   3: bytes 1..3 truncate plan, weights, model.so to (byte / 255) of their size
// AICC_FUZZ_ARTIFACT_DIR: where to write the template (kept; for making seeds); default a
// temporary folder removed at exit. AICC_FUZZ_VERBOSE=1: print why the loader refused a folder.
#include "aicc/runtime.h"
#include "backend/target.h"
#include "fuzz_util.h"
#include "ir/parser.h"
#include "runtime/artifact.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

namespace {

namespace fs = std::filesystem;

const char* kModel = R"(graph @g(%x: f32[3,4], %p: bool[]) {
  %w = const f32[4,4] [1, 2, 3, 4, -1, -2, -3, -4, 0.5, 0.25, 0, 1, 2, 2, 2, 2]
  %b = const f32[4] [0.1, 0.2, 0.3, 0.4]
  %m = MatMul(%x, %w) : f32[3,4]
  %a = Add(%m, %b) : f32[3,4]
  %r = Relu(%a) : f32[3,4]
  %s = const i64[3] [3, 2, 2]
  %q = Reshape(%r, %s) : f32[3,2,2]
  %c = Det(%q) : f32[3]
  %y = If(%p) {then_branch = graph @then() { %t = Sigmoid(%r) : f32[3,4]  return %t },
                else_branch = graph @else() { return %a }} : f32[3,4]
  return %c, %y
})";

struct Folders {
  fs::path root, tmpl, damaged;
  std::string plan, weights;
  size_t soBytes = 0;
  bool keep = false;
  ~Folders() {
    std::error_code ec;
    if (!root.empty()) fs::remove_all(keep ? damaged : root, ec);
  }
};

std::string readAll(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void writeAll(const fs::path& p, std::string_view bytes) {
  fs::remove(p); // a new file (inode), never one a loaded library maps
  std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

Folders& folders() {
  static Folders f = [] {
    Folders f;
    const char* keep = std::getenv("AICC_FUZZ_ARTIFACT_DIR");
    f.keep = keep != nullptr;
    f.root = keep ? fs::path(keep)
                  : fs::temp_directory_path() / ("aicc-fuzz-artifact-" + std::to_string(getpid()));
    f.tmpl = f.root / "template";
    f.damaged = f.root / "damaged";
    fs::create_directories(f.damaged);
    aicc::Model m = aicc::parseModel(kModel);
    aicc::loop::LowerOptions lo;
    lo.runtimeKernels = true;
    aicc::runtime::writeArtifact(aicc::runtime::buildArtifact(*m.graph, lo), f.tmpl.string(),
                                 aicc::genericTarget());
    f.plan = readAll(f.tmpl / "model.plan");
    f.weights = readAll(f.tmpl / "model.weights");
    f.soBytes = fs::file_size(f.tmpl / "model.so");
    return f;
  }();
  return f;
}

void loadAndRun(const fs::path& dir) {
  static const bool verbose = std::getenv("AICC_FUZZ_VERBOSE") != nullptr;
  aicc_model* m = aicc_model_load(dir.c_str());
  if (!m) {
    if (verbose) std::fprintf(stderr, "fuzz: rejected: %s\n", aicc_last_error());
    return;
  }
  std::vector<std::vector<char>> inputs;
  for (int i = 0; i < aicc_model_num_inputs(m); ++i) {
    // A damaged plan may declare any size (the template's inputs are tiny): bind at most 1 MiB.
    inputs.emplace_back(std::min<size_t>(aicc_model_input_bytes(m, i), 1 << 20));
    aicc_model_set_input(m, i, inputs.back().data(), inputs.back().size());
  }
  if (aicc_model_run(m) != 0) {
    if (verbose) std::fprintf(stderr, "fuzz: run failed: %s\n", aicc_last_error());
  } else {
    for (int i = 0; i < aicc_model_num_outputs(m); ++i) {
      size_t bytes = 0;
      const auto* p = static_cast<const uint8_t*>(aicc_model_output(m, i, &bytes));
      for (size_t k = 0; p && k < bytes; ++k) aicc::fuzz::keep(p[k]);
    }
  }
  aicc_model_free(m);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Folders& f = folders();
  if (size == 0) return 0;
  std::string_view rest = aicc::fuzz::text(data + 1, size - 1);
  std::string plan = f.plan, weights = f.weights;
  std::optional<std::string> so; // none: the template's model.so, linked
  switch (data[0] % 4) {
  case 0:
    plan = rest;
    break;
  case 1:
    weights = rest;
    break;
  case 2:
    for (size_t i = 0; i + 3 <= rest.size(); i += 3) {
      std::string& s = rest[i] & 1 ? weights : plan;
      size_t off = (size_t(uint8_t(rest[i])) >> 1 << 8 | uint8_t(rest[i + 1]));
      if (!s.empty()) s[off % s.size()] ^= rest[i + 2];
    }
    break;
  default: {
    auto cut = [&](size_t i, size_t n) { return i < rest.size() ? n * uint8_t(rest[i]) / 255 : n; };
    plan.resize(cut(0, plan.size()));
    weights.resize(cut(1, weights.size()));
    if (size_t n = cut(2, f.soBytes); n < f.soBytes) so = readAll(f.tmpl / "model.so").substr(0, n);
  }
  }
  writeAll(f.damaged / "model.plan", plan);
  writeAll(f.damaged / "model.weights", weights);
  if (!so) {
    fs::remove(f.damaged / "model.so");
    fs::create_symlink(f.tmpl / "model.so", f.damaged / "model.so");
  } else {
    writeAll(f.damaged / "model.so", *so);
  }
  loadAndRun(f.damaged);
  return 0;
}
