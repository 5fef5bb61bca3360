// aicc-run: runs a compiled model folder (`aicc compile MODEL -o DIR`) with nothing but the runtime
// (libaicc_rt, through the C API of include/aicc/runtime.h): no compiler, LLVM, protobuf or ONNX
// library. What a device needs besides the folder (docs/runtime.md).
//
//   aicc-run run DIR [--inputs-dir IN] [--input NAME=FILE]... [--output-dir OUT] [--threads N]
//   aicc-run bench DIR [--iters N] [--warmup N] [--threads N] [--inputs-dir IN] [--input ...]
//   aicc-run info DIR
//
// The contract of `aicc run DIR` / `aicc bench DIR`: inputs are input_<i>.pb TensorProto files (by
// position) or NAME=FILE (.pb or .npy); outputs are written as output_<i>.pb. Errors print one
// line naming the input, file or task and exit with status 1.
#include "aicc/runtime.h"
#include "tensor_io.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/stat.h>

using aicc_run::HostTensor;

namespace {

constexpr const char* kUsage =
    "usage: aicc-run run DIR [--inputs-dir IN] [--input NAME=FILE]... [--output-dir OUT] "
    "[--threads N]\n"
    "       aicc-run bench DIR [--iters N] [--warmup N] [--threads N] [--inputs-dir IN] "
    "[--input NAME=FILE]...\n"
    "       aicc-run info DIR\n"
    "Runs a model compiled by `aicc compile MODEL -o DIR` with the aicc runtime alone.\n"
    "Inputs: input_<i>.pb (ONNX TensorProto) in IN by position, or NAME=FILE (.pb or .npy);\n"
    "bench fills inputs that are not given with fixed pseudo-random values.\n";

struct Args {
  std::string command, dir, inputsDir, outputDir;
  std::vector<std::pair<std::string, std::string>> named;
  int threads = 0, iters = 20, warmup = 3;
};

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error(msg); }

long parseCount(const std::string& flag, const char* v, long min) {
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (errno || end == v || *end || n < min || n > 1000000)
    fail(flag + ": '" + v + "' is not an integer in [" + std::to_string(min) + ", 1000000]");
  return n;
}

Args parseArgs(int argc, char** argv) {
  Args a;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) fail(f + " needs a value");
      return argv[++i];
    };
    if (f == "-h" || f == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (f == "--inputs-dir") {
      a.inputsDir = value();
    } else if (f == "--output-dir") {
      a.outputDir = value();
    } else if (f == "--input") {
      const std::string v = value();
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) fail("--input: expected NAME=FILE, got '" + v + "'");
      a.named.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (f == "--threads") {
      a.threads = int(parseCount(f, value(), 1));
    } else if (f == "--iters") {
      a.iters = int(parseCount(f, value(), 1));
    } else if (f == "--warmup") {
      a.warmup = int(parseCount(f, value(), 0));
    } else if (!f.empty() && f[0] == '-') {
      fail("unknown option '" + f + "' (aicc-run --help)");
    } else {
      pos.push_back(f);
    }
  }
  if (pos.size() != 2) fail(std::string("expected a command and a folder\n") + kUsage);
  a.command = pos[0], a.dir = pos[1];
  if (a.command != "run" && a.command != "bench" && a.command != "info")
    fail("unknown command '" + a.command + "' (run, bench or info)");
  return a;
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

std::string dimsText(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

struct Model {
  aicc_model* m = nullptr;
  explicit Model(const std::string& dir) : m(aicc_model_load(dir.c_str())) {
    if (!m) fail(aicc_last_error());
  }
  ~Model() { aicc_model_free(m); }
  std::vector<int64_t> dims(int i, bool input) const {
    int64_t d[16];
    const int r = input ? aicc_model_input_dims(m, i, d, 16) : aicc_model_output_dims(m, i, d, 16);
    if (r < 0 || r > 16) fail("model: bad rank");
    return std::vector<int64_t>(d, d + r);
  }
};

// Fixed pseudo-random values (f32 in [-1, 1), integers 0, bools false) for bench inputs; a
// symbolic dim (-1) takes 1.
HostTensor generated(const Model& mod, int i) {
  HostTensor t;
  t.name = aicc_model_input_name(mod.m, i);
  t.onnxType = aicc_run::onnxTypeOf(aicc_model_input_dtype(mod.m, i));
  t.dims = mod.dims(i, true);
  size_t elems = 1;
  for (int64_t& d : t.dims) elems *= size_t(d < 0 ? (d = 1) : d);
  const size_t bytes = elems * size_t(aicc_run::elementBytes(t.onnxType));
  t.data.assign(bytes, 0);
  if (t.onnxType == 1) {
    uint32_t s = 12345u + uint32_t(i);
    for (size_t k = 0; k + 4 <= t.data.size(); k += 4) {
      s = s * 1664525u + 1013904223u;
      const float v = float(s >> 8) / float(1 << 24) * 2.0f - 1.0f;
      std::memcpy(&t.data[k], &v, 4);
    }
  }
  return t;
}

// The model's inputs from --inputs-dir / --input, checked against the declarations; missing ones
// are generated when `generate`, else an error.
std::vector<HostTensor> bindInputs(const Model& mod, const Args& a, bool generate) {
  const int n = aicc_model_num_inputs(mod.m);
  std::vector<HostTensor> in(static_cast<size_t>(n));
  std::vector<bool> given(size_t(n), false);
  if (!a.inputsDir.empty()) {
    if (!exists(a.inputsDir)) fail("--inputs-dir '" + a.inputsDir + "' does not exist");
    for (int i = 0; i < n; ++i) {
      const std::string p = a.inputsDir + "/input_" + std::to_string(i) + ".pb";
      if (!exists(p)) continue;
      in[size_t(i)] = aicc_run::readTensorFile(p);
      given[size_t(i)] = true;
    }
    if (exists(a.inputsDir + "/input_" + std::to_string(n) + ".pb"))
      fail("--inputs-dir '" + a.inputsDir + "' holds more than the model's " + std::to_string(n) +
           " inputs");
  }
  for (const auto& [name, file] : a.named) {
    int at = -1;
    for (int i = 0; i < n; ++i)
      if (name == aicc_model_input_name(mod.m, i)) at = i;
    if (at < 0) fail("--input " + name + ": the model has no input '" + name + "'");
    in[size_t(at)] = aicc_run::readTensorFile(file);
    given[size_t(at)] = true;
  }
  for (int i = 0; i < n; ++i) {
    const std::string name = aicc_model_input_name(mod.m, i);
    if (!given[size_t(i)]) {
      if (!generate)
        fail("input '" + name + "' is not given (--inputs-dir IN or --input " + name + "=FILE)");
      in[size_t(i)] = generated(mod, i);
      continue;
    }
    const HostTensor& t = in[size_t(i)];
    const char* want = aicc_model_input_dtype(mod.m, i);
    if (t.onnxType != aicc_run::onnxTypeOf(want))
      fail("input '" + name + "': expected element type " + want + ", got ONNX type " +
           std::to_string(t.onnxType));
    const std::vector<int64_t> decl = mod.dims(i, true); // -1: symbolic, checked by the runtime
    bool same = t.dims.size() == decl.size();
    for (size_t k = 0; same && k < decl.size(); ++k) same = decl[k] < 0 || t.dims[k] == decl[k];
    if (!same)
      fail("input '" + name + "': expected shape " + dimsText(decl) + ", got " + dimsText(t.dims));
  }
  return in;
}

void setInputs(const Model& mod, const std::vector<HostTensor>& in) {
  for (size_t i = 0; i < in.size(); ++i)
    if (aicc_model_set_input_dims(mod.m, int(i), in[i].data.data(), in[i].data.size(),
                                  in[i].dims.data(), int(in[i].dims.size())) != 0)
      fail(aicc_last_error());
}

int run(const Args& a) {
  Model mod(a.dir);
  const auto in = bindInputs(mod, a, false);
  setInputs(mod, in);
  if (aicc_model_run(mod.m) != 0) fail(aicc_last_error());
  if (!a.outputDir.empty()) ::mkdir(a.outputDir.c_str(), 0777);
  for (int i = 0; i < aicc_model_num_outputs(mod.m); ++i) {
    HostTensor t;
    t.name = aicc_model_output_name(mod.m, i);
    t.onnxType = aicc_run::onnxTypeOf(aicc_model_output_dtype(mod.m, i));
    t.dims = mod.dims(i, false);
    size_t bytes = 0;
    const auto* p = static_cast<const unsigned char*>(aicc_model_output(mod.m, i, &bytes));
    if (!p) fail(aicc_last_error());
    t.data.assign(p, p + bytes);
    if (!a.outputDir.empty()) {
      aicc_run::writeTensorPb(a.outputDir + "/output_" + std::to_string(i) + ".pb", t);
      continue;
    }
    std::printf("%s: %s%s", t.name.c_str(), aicc_model_output_dtype(mod.m, i),
                dimsText(t.dims).c_str());
    if (t.onnxType == 1 && bytes >= 4) {
      const size_t n = bytes / 4;
      double lo = INFINITY, hi = -INFINITY, sum = 0;
      for (size_t k = 0; k < n; ++k) {
        float v;
        std::memcpy(&v, p + 4 * k, 4);
        lo = std::min(lo, double(v)), hi = std::max(hi, double(v)), sum += v;
      }
      std::printf(" min %g max %g mean %g", lo, hi, sum / double(n));
    }
    std::printf("\n");
  }
  return 0;
}

int bench(const Args& a) {
  Model mod(a.dir);
  const auto in = bindInputs(mod, a, true);
  setInputs(mod, in);
  for (int i = 0; i < a.warmup; ++i)
    if (aicc_model_run(mod.m) != 0) fail(aicc_last_error());
  std::vector<double> ms;
  for (int i = 0; i < a.iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (aicc_model_run(mod.m) != 0) fail(aicc_last_error());
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%s: %d runs, median %.3f ms, min %.3f ms, max %.3f ms\n", a.dir.c_str(), a.iters,
              ms[ms.size() / 2], ms.front(), ms.back());
  return 0;
}

int info(const Args& a) {
  Model mod(a.dir);
  for (int io = 0; io < 2; ++io) {
    const bool input = io == 0;
    const int n = input ? aicc_model_num_inputs(mod.m) : aicc_model_num_outputs(mod.m);
    for (int i = 0; i < n; ++i) {
      // Symbolic dims by name, with their ranges ("[N,3,224,224] N in 1..16").
      const std::vector<int64_t> d = mod.dims(i, input);
      std::string dims = "[", ranges;
      for (size_t k = 0; k < d.size(); ++k) {
        int64_t lo = 0, hi = 0;
        const char* sym = input ? aicc_model_input_dim_symbol(mod.m, i, int(k), &lo, &hi)
                                : aicc_model_output_dim_symbol(mod.m, i, int(k), &lo, &hi);
        dims += (k ? "," : "") + (sym ? std::string(sym) : std::to_string(d[k]));
        if (sym)
          ranges +=
              " " + std::string(sym) + " in " + std::to_string(lo) + ".." + std::to_string(hi);
      }
      std::printf("%s %d %s: %s%s]%s\n", input ? "input" : "output", i,
                  input ? aicc_model_input_name(mod.m, i) : aicc_model_output_name(mod.m, i),
                  input ? aicc_model_input_dtype(mod.m, i) : aicc_model_output_dtype(mod.m, i),
                  dims.c_str(), ranges.c_str());
    }
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parseArgs(argc, argv);
    if (a.threads > 0) aicc_set_num_threads(a.threads);
    if (a.command == "run") return run(a);
    if (a.command == "bench") return bench(a);
    return info(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aicc-run: error: %s\n", e.what());
    return 1;
  }
}
