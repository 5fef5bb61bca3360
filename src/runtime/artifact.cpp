#include "runtime/artifact.h"

#include "backend/memory_plan.h"
#include "backend/target.h"
#include "codegen/llvm/emit_llvm.h"
#include "interp/interpreter.h"
#include "ir/dtype.h"
#include "ir/parser.h"
#include "runtime/parallel.h"
#include "support/hash.h"
#include "support/memory.h"
#include "support/trace.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <dlfcn.h>

namespace aicc::runtime {

namespace fs = std::filesystem;

int64_t TensorDesc::bytes() const {
  int64_t n = dtypeSize(dtype);
  for (int64_t d : dims) n *= d;
  return n;
}

namespace {

constexpr int64_t kAlign = kArenaAlignment; // every region and placement in an artifact
int64_t aligned(int64_t x) { return alignUp(x, kAlign); }

// Names in the plan file: percent-encoded so they hold no spaces or newlines.
std::string enc(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (c <= ' ' || c == '%' || c >= 0x7f) o += fmt::format("%{:02X}", int(c));
    else o += char(c);
  }
  return o.empty() ? "%" : o;
}
std::string dec(const std::string& s) {
  if (s == "%") return "";
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      o += char(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      o += s[i];
    }
  }
  return o;
}

const char* regionName(Region r) {
  switch (r) {
  case Region::Arena: return "A";
  case Region::Weights: return "W";
  case Region::Input: return "I";
  case Region::Scratch: return "S";
  }
  return "?";
}

constexpr const char* kPlanHeader = "aicc-artifact 3";

std::string hashHex(const void* p, size_t n) { return fmt::format("{:016x}", hashBytes(p, n)); }

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  AICC_CHECK(f.good(), "cannot open '{}'", path);
  std::ostringstream s;
  s << f.rdbuf();
  AICC_CHECK(!f.bad(), "cannot read '{}'", path);
  return s.str();
}

std::string dimsText(const Dims& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s.empty() ? "-" : s;
}

} // namespace

WrittenArtifact writeArtifact(const ArtifactSpec& spec, const std::string& dir,
                              const Target& target, const codegen::AotOptions& o) {
  WrittenArtifact w;
  fs::create_directories(dir);
  auto t0 = std::chrono::steady_clock::now();
  std::string obj = codegen::emitObject(spec.code, target, o);
  auto t1 = std::chrono::steady_clock::now();
  w.codegenSeconds = std::chrono::duration<double>(t1 - t0).count();
  auto writeFile = [](const fs::path& p, const void* data, size_t n) {
    std::ofstream f(p, std::ios::binary);
    f.write(static_cast<const char*>(data), std::streamsize(n));
    AICC_CHECK(f.good(), "cannot write '{}'", p.string());
  };
  fs::path d(dir);
  writeFile(d / "model.o", obj.data(), obj.size());
  w.objectBytes = int64_t(obj.size());
  std::string cmd = fmt::format("cc -shared -o '{}' '{}' -lm", (d / "model.so").string(),
                                (d / "model.o").string());
  int rc = std::system(cmd.c_str());
  AICC_CHECK(rc == 0,
             "linking model.so failed (`{}` exited with {}); a C compiler driver `cc` "
             "must be on PATH; model.o was written",
             cmd, rc);
  w.linkSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  const std::string lib = readFile((d / "model.so").string());
  w.sharedBytes = int64_t(lib.size());
  writeFile(d / "model.weights", spec.weights.data(), spec.weights.size());
  w.weightBytes = int64_t(spec.weights.size());
  std::ostringstream p;
  p << kPlanHeader << "\n";
  // Sizes and content hashes of the two files the plan goes with: checked before either is used.
  p << "arena " << spec.arenaBytes << "\nscratch " << spec.scratchBytes << "\nweights "
    << spec.weights.size() << " " << hashHex(spec.weights.data(), spec.weights.size())
    << "\nlibrary " << lib.size() << " " << hashHex(lib.data(), lib.size()) << "\n";
  // The ISA features the code was compiled for: the loader refuses a CPU without them.
  p << "requires " << enc(target.name);
  for (uint32_t i = 0; i < static_cast<uint32_t>(CpuFeature::Count); ++i)
    if (target.has(static_cast<CpuFeature>(i))) p << " " << cpuFeatureName(static_cast<CpuFeature>(i));
  p << "\n";
  for (const TensorDesc& t : spec.inputs)
    p << "input " << enc(t.name) << " " << dtypeName(t.dtype) << " " << dimsText(t.dims) << "\n";
  for (const auto& [t, b] : spec.outputs)
    p << "output " << enc(t.name) << " " << dtypeName(t.dtype) << " " << dimsText(t.dims) << " "
      << regionName(b.region) << ":" << b.offset << ":" << b.bytes << "\n";
  static const char* kKinds[] = {"task", "copy", "jumpz", "jump", "fail", "fallback"};
  for (const ArtifactTask& t : spec.tasks) {
    p << kKinds[int(t.kind)];
    if (t.kind == ArtifactTask::Kind::Call) p << " " << t.fn;
    if (t.kind == ArtifactTask::Kind::Fallback) p << " " << enc(t.fn);
    p << " " << enc(t.node);
    for (const Binding& b : t.params)
      p << " " << regionName(b.region) << ":" << b.offset << ":" << b.bytes;
    if (t.kind == ArtifactTask::Kind::JumpIfZero || t.kind == ArtifactTask::Kind::Jump)
      p << " @" << t.target;
    p << "\n";
  }
  std::string text = p.str();
  writeFile(d / "model.plan", text.data(), text.size());
  return w;
}

// ---- loading ----

struct LoadedArtifact::Impl {
  void* lib = nullptr;
  struct Task {
    ArtifactTask::Kind kind;
    codegen::LoopFnPtr fn; // Call
    std::string node;
    std::vector<Binding> params;
    size_t target;                    // jumps
    std::shared_ptr<const Model> ref; // Fallback: the node as a one-node model
  };
  std::vector<Task> tasks;
  std::vector<Binding> outputs;
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  using Bytes = std::unique_ptr<std::byte[], Free>;
  Bytes arena, weights, scratch;
  int64_t arenaBytes = 0, weightBytes = 0, scratchBytes = 0;
  std::vector<const void*> inputs;
  std::vector<void*> ptrs;
  std::mutex mu; // one run at a time per instance (see LoadedArtifact)
  MemoryReservation reserved; // arena + scratch + weights, against the memory budget

  static Bytes alloc(int64_t n) {
    auto* p = static_cast<std::byte*>(std::aligned_alloc(kAlign, size_t(aligned(std::max<int64_t>(n, 1)))));
    AICC_CHECK(p, "out of memory allocating {} bytes", n);
    return Bytes(p);
  }
  // Runs a Fallback task's node with the reference interpreter on its bound buffers.
  void runFallback(const Task& t) {
    const Graph& g = *t.ref->graph;
    std::vector<RValue> in;
    for (size_t i = 0; i < g.inputs.size(); ++i)
      in.push_back(RValue::of(Tensor::view(g.inputs[i]->type.dtype, *toDims(*g.inputs[i]->type.shape),
                                           nullptr, at(t.params[i]))));
    std::vector<RValue> out;
    try {
      out = interpret(g, in);
    } catch (const Error& e) {
      fail("{}: {}", t.node, e.what());
    }
    for (size_t k = 0; k < out.size(); ++k) {
      const Binding& b = t.params[g.inputs.size() + k];
      AICC_CHECK(out[k].kind == RValue::Kind::Tensor && int64_t(out[k].tensor.nbytes()) == b.bytes,
                 "{}: result {} has {} bytes, {} planned", t.node, k, out[k].tensor.nbytes(), b.bytes);
      std::memmove(at(b), out[k].tensor.raw(), size_t(b.bytes)); // may alias an input
    }
  }

  std::byte* at(const Binding& b) const {
    switch (b.region) {
    case Region::Arena: return arena.get() + b.offset;
    case Region::Weights: return weights.get() + b.offset;
    case Region::Scratch: return scratch.get() + b.offset;
    case Region::Input: return const_cast<std::byte*>(static_cast<const std::byte*>(inputs[size_t(b.offset)]));
    }
    return nullptr;
  }
};

namespace {

// A non-negative integer that is the whole word (std::invalid_argument / std::out_of_range
// otherwise: the plan parser turns them into "malformed line").
int64_t parseCount(const std::string& w) {
  size_t used = 0;
  const int64_t v = std::stoll(w, &used);
  if (used != w.size() || v < 0) throw std::invalid_argument(w);
  return v;
}

Binding parseBinding(const std::string& s, const std::string& file) {
  Binding b;
  AICC_CHECK(s.size() > 2 && s[1] == ':', "{}: bad binding '{}'", file, s);
  const std::string r = s.substr(0, 1);
  b.region = r == "A" ? Region::Arena : r == "W" ? Region::Weights : r == "I" ? Region::Input
           : r == "S" ? Region::Scratch : throw Error(fmt::format("{}: bad region in '{}'", file, s));
  size_t c = s.find(':', 2);
  AICC_CHECK(c != std::string::npos, "{}: bad binding '{}'", file, s);
  b.offset = parseCount(s.substr(2, c - 2));
  b.bytes = parseCount(s.substr(c + 1));
  return b;
}

// A binding into the arena, weights or scratch must be aligned for its elements (inputs are the
// caller's pointers).
bool alignedFor(const Binding& b, int64_t elem) {
  return b.region == Region::Input || b.offset % elem == 0;
}

std::optional<ArtifactTask::Kind> taskKind(const std::string& s) {
  using K = ArtifactTask::Kind;
  if (s == "task") return K::Call;
  if (s == "copy") return K::Copy;
  if (s == "jumpz") return K::JumpIfZero;
  if (s == "jump") return K::Jump;
  if (s == "fail") return K::Fail;
  if (s == "fallback") return K::Fallback;
  return std::nullopt;
}

// A fallback task's one-node model, checked against its bindings (inputs, then results, each
// of its static size).
std::shared_ptr<const Model> parseFallback(const ArtifactTask& t, const std::string& file) {
  std::shared_ptr<Model> m;
  try {
    m = std::make_shared<Model>(parseModel(t.fn));
  } catch (const Error& e) {
    fail("{}: fallback task for {}: {}", file, t.node, e.what());
  }
  const Graph& g = *m->graph;
  AICC_CHECK(g.nodes.size() == 1 && g.inputs.size() + g.outputs.size() == t.params.size(),
             "{}: fallback task for {} does not match its bindings", file, t.node);
  std::vector<const Value*> vals(g.inputs.begin(), g.inputs.end());
  vals.insert(vals.end(), g.outputs.begin(), g.outputs.end());
  for (size_t i = 0; i < vals.size(); ++i) {
    auto d = vals[i]->type.shape ? toDims(*vals[i]->type.shape) : std::nullopt;
    int64_t bytes = -1;
    if (vals[i]->type.isTensor() && d) {
      bytes = int64_t(dtypeSize(vals[i]->type.dtype));
      for (int64_t x : *d) bytes *= x;
    }
    AICC_CHECK(bytes == t.params[i].bytes, "{}: fallback task for {}: '{}' is {} but bound to {} bytes",
               file, t.node, vals[i]->name, formatType(vals[i]->type), t.params[i].bytes);
    AICC_CHECK(
        alignedFor(t.params[i], std::max<int64_t>(1, int64_t(dtypeSize(vals[i]->type.dtype)))),
        "{}: fallback task for {}: '{}' is bound at offset {}, not aligned for its elements", file,
        t.node, vals[i]->name, t.params[i].offset);
  }
  return m;
}

Dims parseDims(const std::string& s) {
  Dims d;
  if (s == "-") return d;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, ',')) {
    d.push_back(parseCount(x));
    AICC_CHECK(d.back() <= (int64_t(1) << 40), "absurd dimension in '{}'", s);
  }
  return d;
}

// The next word of a plan line as a byte count (throws std::invalid_argument when it is none).
int64_t readCount(std::istringstream& ls) {
  std::string w;
  ls >> w;
  return parseCount(w);
}

// A file the plan names with its size and content hash ("<bytes> <hash>"), read whole and checked.
struct FileCheck {
  int64_t bytes = -1;
  std::string hash;
};
// Reads the file into dst (want.bytes bytes) after checking its size, then checks its hash.
void readChecked(const fs::path& path, const FileCheck& want, std::byte* dst) {
  const std::string file = path.string();
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  AICC_CHECK(!ec, "cannot open '{}': {}", file, ec.message());
  AICC_CHECK(int64_t(size) == want.bytes,
             "'{}' holds {} bytes, the plan says {} (a truncated or "
             "mismatched file; recompile the model)",
             file, size, want.bytes);
  std::ifstream f(file, std::ios::binary);
  f.read(reinterpret_cast<char*>(dst), std::streamsize(want.bytes));
  AICC_CHECK(f.gcount() == std::streamsize(want.bytes), "cannot read '{}'", file);
  AICC_CHECK(hashHex(dst, size_t(want.bytes)) == want.hash,
             "'{}' does not match the plan's content hash (a damaged or mismatched file; recompile "
             "the model)",
             file);
}

// Parses the library's aicc_artifact_signature: task function -> byte size of each parameter.
struct ParamSig {
  int64_t bytes = 0, elem = 1;
};
std::map<std::string, std::vector<ParamSig>> parseSignature(const char* sig) {
  std::map<std::string, std::vector<ParamSig>> out;
  std::istringstream ss(sig);
  std::string line;
  while (std::getline(ss, line)) {
    std::istringstream ls(line);
    std::string fn, p;
    ls >> fn;
    auto& params = out[fn];
    while (ls >> p) {
      const size_t slash = p.find('/');
      params.push_back(
          {parseCount(p.substr(0, slash)),
           slash == std::string::npos ? 1 : std::max<int64_t>(1, parseCount(p.substr(slash + 1)))});
    }
  }
  return out;
}

} // namespace

LoadedArtifact::LoadedArtifact(const std::string& dir) : impl_(std::make_unique<Impl>()) {
  checkThreadsEnv();
  fs::path d(dir);
  const std::string planFile = (d / "model.plan").string();
  std::ifstream pf(planFile);
  AICC_CHECK(pf.good(), "'{}': no model.plan here (not an `aicc compile --emit so` folder)", dir);
  std::string line, header;
  std::getline(pf, header);
  AICC_CHECK(header == kPlanHeader,
             "{}: not an aicc artifact plan of this version (first line "
             "'{}', expected '{}'; recompile the model)",
             planFile, header, kPlanHeader);
  std::vector<ArtifactTask> taskLines;
  FileCheck weightsFile, libraryFile;
  try {
    while (std::getline(pf, line)) {
      std::istringstream ls(line);
      std::string kind;
      ls >> kind;
      if (kind == "arena")
        impl_->arenaBytes = readCount(ls);
      else if (kind == "scratch")
        impl_->scratchBytes = readCount(ls);
      else if (kind == "weights" || kind == "library") {
        FileCheck& f = kind == "weights" ? weightsFile : libraryFile;
        f.bytes = readCount(ls);
        ls >> f.hash;
      } else if (kind == "requires") {
        std::string target, f;
        ls >> target;
        const Target host = nativeTarget();
        std::vector<std::string> lacking;
        while (ls >> f) {
          CpuFeature cf;
          if (!parseCpuFeature(f, cf) || !host.has(cf)) lacking.push_back(f);
        }
        AICC_CHECK(lacking.empty(), "{}: compiled for target '{}', which needs {} that this CPU lacks",
                   planFile, dec(target), fmt::join(lacking, ", "));
      }
      else if (kind == "input" || kind == "output") {
        std::string name, dt, dims, where;
        ls >> name >> dt >> dims;
        auto dtype = dtypeFromName(dt);
        AICC_CHECK(dtype, "{}: unknown element type '{}'", planFile, dt);
        TensorDesc t{dec(name), *dtype, parseDims(dims)};
        int64_t elems = 1; // checked before multiplying: no overflow, no negative dim
        for (int64_t x : t.dims) {
          AICC_CHECK(x >= 0 && (x == 0 || elems <= (int64_t(1) << 40) / x),
                     "{}: {} '{}' has an absurd size {}", planFile, kind, t.name, dims);
          if (x) elems *= x;
        }
        if (kind == "input") {
          inputs_.push_back(t);
        } else {
          ls >> where;
          outputDescs_.push_back(t);
          impl_->outputs.push_back(parseBinding(where, planFile));
        }
      } else if (auto k = taskKind(kind)) {
        ArtifactTask t;
        t.kind = *k;
        std::string node, b;
        if (t.kind == ArtifactTask::Kind::Call) ls >> t.fn;
        if (t.kind == ArtifactTask::Kind::Fallback) {
          ls >> t.fn;
          t.fn = dec(t.fn);
        }
        ls >> node;
        AICC_CHECK(!node.empty(), "{}: malformed line '{}'", planFile, line);
        t.node = dec(node);
        while (ls >> b) {
          if (b[0] == '@')
            t.target = parseCount(b.substr(1));
          else
            t.params.push_back(parseBinding(b, planFile));
        }
        taskLines.push_back(std::move(t));
      } else if (!kind.empty()) {
        fail("{}: unknown line '{}'", planFile, line);
      }
    }
  } catch (const std::invalid_argument&) {
    fail("{}: malformed line '{}'", planFile, line);
  } catch (const std::out_of_range&) {
    fail("{}: malformed line '{}'", planFile, line);
  }
  AICC_CHECK(weightsFile.bytes >= 0 && libraryFile.bytes >= 0 && !weightsFile.hash.empty() &&
                 !libraryFile.hash.empty(),
             "{}: the 'weights' and 'library' lines (sizes and hashes) are missing", planFile);
  impl_->weightBytes = weightsFile.bytes;
  // Every binding must lie inside its region.
  auto checkBinding = [&](const Binding& b, const std::string& where) {
    int64_t size = b.region == Region::Arena     ? impl_->arenaBytes
                   : b.region == Region::Weights ? impl_->weightBytes
                   : b.region == Region::Scratch ? impl_->scratchBytes
                                                 : -1;
    if (b.region == Region::Input) {
      AICC_CHECK(b.offset < int64_t(inputs_.size()) && b.bytes <= inputs_[size_t(b.offset)].bytes(),
                 "{}: {} binds input {} out of range", planFile, where, b.offset);
      return;
    }
    AICC_CHECK(b.offset <= size && b.bytes <= size - b.offset, "{}: {} reaches past its region",
               planFile, where);
  };
  for (size_t i = 0; i < taskLines.size(); ++i) {
    const ArtifactTask& t = taskLines[i];
    const std::string where = fmt::format("task {} ({})", i, t.node);
    for (const Binding& b : t.params) checkBinding(b, where);
    using K = ArtifactTask::Kind;
    // Calls are checked against the library's signature below, fallbacks against their node.
    if (t.kind != K::Call && t.kind != K::Fallback) {
      const size_t want = t.kind == K::Copy ? 2 : t.kind == K::JumpIfZero ? 1 : 0;
      AICC_CHECK(t.params.size() == want, "{}: {} has {} bindings, not {}", planFile, where,
                 t.params.size(), want);
    }
    AICC_CHECK(t.kind != K::Copy || t.params[0].bytes == t.params[1].bytes,
               "{}: {} copies between bindings of different sizes", planFile, where);
    AICC_CHECK(t.kind != K::JumpIfZero || t.params[0].bytes >= 1, "{}: {} reads an empty condition",
               planFile, where);
    if (t.kind == K::JumpIfZero || t.kind == K::Jump) // forward only: every run ends
      AICC_CHECK(t.target > int64_t(i) && t.target <= int64_t(taskLines.size()),
                 "{}: {} jumps to {}, not forward within the plan", planFile, where, t.target);
  }
  for (size_t i = 0; i < impl_->outputs.size(); ++i) { // outputs are read as their declared type
    checkBinding(impl_->outputs[i], "an output");
    AICC_CHECK(impl_->outputs[i].bytes == outputDescs_[i].bytes(),
               "{}: output '{}' is bound to {} bytes, its type {} {} needs {}", planFile,
               outputDescs_[i].name, impl_->outputs[i].bytes, dtypeName(outputDescs_[i].dtype),
               formatDims(outputDescs_[i].dims), outputDescs_[i].bytes());
  }
  int64_t total = 0; // each size fits an int64; their sum must too
  AICC_CHECK(!__builtin_add_overflow(impl_->arenaBytes, impl_->scratchBytes, &total) &&
                 !__builtin_add_overflow(total, impl_->weightBytes, &total),
             "{}: arena {}, scratch {} and weights {} bytes: absurd sizes", planFile,
             impl_->arenaBytes, impl_->scratchBytes, impl_->weightBytes);
  // The weights and the library, each checked against the plan's size and hash before use (a
  // truncated model.so would otherwise fault inside dlopen or later, in a task).
  impl_->reserved = MemoryReservation(
      total, fmt::format("loading '{}' (arena {}, scratch {}, weights {} bytes)", dir,
                         impl_->arenaBytes, impl_->scratchBytes, impl_->weightBytes));
  impl_->weights = Impl::alloc(impl_->weightBytes); // read in place, no staging copy
  readChecked(d / "model.weights", weightsFile, impl_->weights.get());
  {
    std::vector<std::byte> lib(size_t(libraryFile.bytes)); // only to check it before dlopen
    readChecked(d / "model.so", libraryFile, lib.data());
  }
  impl_->arena = Impl::alloc(impl_->arenaBytes);
  impl_->scratch = Impl::alloc(impl_->scratchBytes);
  // Code.
  const std::string so = fs::absolute(d / "model.so").string();
  impl_->lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  AICC_CHECK(impl_->lib, "cannot load '{}': {}", so, dlerror());
  using BindFn = void (*)(void* const*);
  auto bindFn = reinterpret_cast<BindFn>(dlsym(impl_->lib, "aicc_artifact_bind"));
  AICC_CHECK(bindFn, "'{}' has no aicc_artifact_bind (not an aicc artifact)", so);
  void* const table[] = {reinterpret_cast<void*>(&aicc_rt_call_kernel),
                         reinterpret_cast<void*>(&aicc_rt_parallel_for)};
  bindFn(table);
  auto* sigText = static_cast<const char*>(dlsym(impl_->lib, "aicc_artifact_signature"));
  AICC_CHECK(sigText, "'{}' has no aicc_artifact_signature (not an aicc artifact)", so);
  const auto signature = parseSignature(sigText);
  for (size_t i = 0; i < taskLines.size(); ++i) {
    ArtifactTask& t = taskLines[i];
    codegen::LoopFnPtr fn = nullptr;
    std::shared_ptr<const Model> ref;
    if (t.kind == ArtifactTask::Kind::Call) {
      auto sig = signature.find(t.fn);
      fn = reinterpret_cast<codegen::LoopFnPtr>(dlsym(impl_->lib, t.fn.c_str()));
      AICC_CHECK(fn && sig != signature.end(), "'{}' lacks the task function {}", so, t.fn);
      AICC_CHECK(sig->second.size() == t.params.size(),
                 "{}: task {} ({}) has {} bindings; {} takes {}", planFile, i, t.node,
                 t.params.size(), t.fn, sig->second.size());
      for (size_t k = 0; k < t.params.size(); ++k) {
        const ParamSig& want = sig->second[k];
        AICC_CHECK(t.params[k].bytes == want.bytes,
                   "{}: task {} ({}): binding {} has {} bytes; {} takes {}", planFile, i, t.node, k,
                   t.params[k].bytes, t.fn, want.bytes);
        AICC_CHECK(alignedFor(t.params[k], want.elem),
                   "{}: task {} ({}): binding {} at offset {} is not aligned for {}-byte elements",
                   planFile, i, t.node, k, t.params[k].offset, want.elem);
      }
    }
    if (t.kind == ArtifactTask::Kind::Fallback) ref = parseFallback(t, planFile);
    impl_->tasks.push_back(
        {t.kind, fn, std::move(t.node), std::move(t.params), size_t(t.target), std::move(ref)});
  }
  impl_->inputs.assign(inputs_.size(), nullptr);
}

LoadedArtifact::~LoadedArtifact() {
  if (impl_ && impl_->lib) dlclose(impl_->lib);
}

// The raw interface takes the instance's lock without waiting: a second thread gets an error.
#define AICC_RAW_LOCK(what)                                                                        \
  std::unique_lock<std::mutex> lock(impl_->mu, std::try_to_lock);                                  \
  AICC_CHECK(lock.owns_lock(),                                                                     \
             "{}: the model is in use by another thread (use one instance per "                    \
             "thread, or the checked run that waits)",                                             \
             what)

void LoadedArtifact::setInput(size_t i, const void* data, int64_t bytes) {
  AICC_RAW_LOCK("setting an input");
  setInputLocked(i, data, bytes);
}

void LoadedArtifact::run() {
  AICC_RAW_LOCK("run");
  runLocked();
}

void LoadedArtifact::setInputLocked(size_t i, const void* data, int64_t bytes) {
  AICC_CHECK(i < inputs_.size(), "input index {} out of range: the model has {} inputs", i,
             inputs_.size());
  AICC_CHECK(data, "input '{}': null data", inputs_[i].name);
  AICC_CHECK(bytes == inputs_[i].bytes(), "input '{}': expected {} bytes ({}{}), got {}",
             inputs_[i].name, inputs_[i].bytes(), dtypeName(inputs_[i].dtype),
             formatDims(inputs_[i].dims), bytes);
  impl_->inputs[i] = data;
}

void LoadedArtifact::runLocked() {
  for (size_t i = 0; i < inputs_.size(); ++i)
    AICC_CHECK(impl_->inputs[i], "input '{}' was not set", inputs_[i].name);
  using K = ArtifactTask::Kind;
  for (size_t ti = 0; ti < impl_->tasks.size();) {
    const Impl::Task& t = impl_->tasks[ti++];
    trace::TaskScope traced(t.node, "task");
    switch (t.kind) {
    case K::Call: {
      impl_->ptrs.resize(t.params.size());
      for (size_t i = 0; i < t.params.size(); ++i) impl_->ptrs[i] = impl_->at(t.params[i]);
      int32_t rc = t.fn(impl_->ptrs.data());
      AICC_CHECK(rc == 0, "{}: {}", t.node,
                 rc == 1 ? std::string("integer division by zero") : std::string(aicc_rt_last_error()));
      break;
    }
    case K::Copy:
      std::memmove(impl_->at(t.params[1]), impl_->at(t.params[0]), size_t(t.params[0].bytes));
      break;
    case K::JumpIfZero:
      if (*impl_->at(t.params[0]) == std::byte{0}) ti = t.target;
      break;
    case K::Jump: ti = t.target; break;
    case K::Fail: fail("{}", t.node);
    case K::Fallback: impl_->runFallback(t); break;
    }
  }
}

const void* LoadedArtifact::output(size_t i) const {
  AICC_CHECK(i < outputDescs_.size(), "output index {} out of range: the model has {} outputs", i,
             outputDescs_.size());
  return impl_->at(impl_->outputs[i]);
}

std::vector<RValue> LoadedArtifact::run(const std::vector<RValue>& in) {
  std::lock_guard<std::mutex> lock(impl_->mu); // waits for another thread's run of this instance
  AICC_CHECK(in.size() == inputs_.size(), "the model takes {} inputs, got {}", inputs_.size(),
             in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const TensorDesc& d = inputs_[i];
    AICC_CHECK(in[i].kind == RValue::Kind::Tensor, "input '{}': expected a tensor", d.name);
    const Tensor& t = in[i].tensor;
    AICC_CHECK(t.dtype() == d.dtype, "input '{}': expected element type {}, got {}", d.name,
               dtypeName(d.dtype), dtypeName(t.dtype()));
    AICC_CHECK(t.shape() == d.dims, "input '{}': expected shape {}, got {}", d.name,
               formatDims(d.dims), formatDims(t.shape()));
    setInputLocked(i, t.raw(), int64_t(t.nbytes()));
  }
  runLocked();
  std::vector<RValue> out;
  for (size_t i = 0; i < outputDescs_.size(); ++i) {
    Tensor t(outputDescs_[i].dtype, outputDescs_[i].dims);
    std::memcpy(t.raw(), output(i), size_t(outputDescs_[i].bytes()));
    out.push_back(RValue::of(std::move(t)));
  }
  return out;
}

} // namespace aicc::runtime
