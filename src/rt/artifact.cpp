#include "rt/artifact.h"

#include "rt/cpu.h"
#include "rt/error.h"
#include "rt/hash.h"
#include "rt/linked_model.h"
#include "rt/memory.h"
#include "rt/parallel.h"
#include "rt/sequence.h"
#include "rt/trace.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include <dlfcn.h>
#include <sys/stat.h>

namespace aicc::rt {

namespace {

constexpr int64_t kAlign = 64; // every region and placement in an artifact (kArenaAlignment)
std::atomic<FallbackProvider> fallbackProvider{nullptr};
std::atomic<DynamicTensorView> dynamicTensorView{nullptr};

int64_t aligned(int64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// "f32[N,3,224,224]" (symbols by name, with their ranges after).
std::string declText(const TensorDesc& t, const std::vector<Symbol>& symbols) {
  std::string s = std::string(dtypeName(t.dtype)) + "[", ranges;
  for (size_t i = 0; i < t.dims.size(); ++i) {
    const int32_t j = t.symbolAt(i);
    if (i < t.exprs.size() && !t.exprs[i].empty()) { // infix, from the postfix program
      std::vector<std::string> st;
      const auto& p = t.exprs[i];
      for (size_t k = 0; k + 1 < p.size(); k += 2) {
        if (p[k] == kDimConst || p[k] == kDimSymbol) {
          st.push_back(p[k] == kDimConst ? std::to_string(p[k + 1])
                                         : symbols.at(size_t(p[k + 1])).name);
        } else if (p[k] == kDimDiv && !st.empty()) {
          st.back() = "(" + st.back() + ")/" + std::to_string(p[k + 1]);
        } else if (st.size() >= 2) {
          const std::string b = st.back();
          st.pop_back();
          st.back() = st.back() + (p[k] == kDimAdd ? "+" : "*") + b;
        }
      }
      s += (i ? "," : "") + (st.size() == 1 ? st[0] : "?");
      continue;
    }
    s += (i ? "," : "") + (j < 0 ? std::to_string(t.dims[i]) : symbols[size_t(j)].name);
    if (j >= 0 && ranges.find(symbols[size_t(j)].name + " ") == std::string::npos) {
      const Symbol& x = symbols[size_t(j)];
      ranges += format("{}{} in {}..{}", ranges.empty() ? "" : ", ", x.name, x.lo, x.hi);
      if (x.step > 1) ranges += format(", multiples of {}", x.step);
    }
  }
  return s + "]" + (ranges.empty() ? "" : " (" + ranges + ")");
}

// Names in the plan file are percent-encoded so they hold no spaces or newlines.
std::string dec(const std::string& s) {
  if (s == "%") return "";
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      char hex[3] = {s[i + 1], s[i + 2], 0};
      o += char(std::strtol(hex, nullptr, 16));
      i += 2;
    } else {
      o += s[i];
    }
  }
  return o;
}

// A line that does not parse (caught by the plan reader: "malformed line").
struct Malformed {};

// A derived dim's value (TensorDesc::exprs) with the symbols' values (unset ones: their hi via
// `hi`); -1 when the program is malformed.
int64_t evalDim(const std::vector<int64_t>& prog, const std::vector<int64_t>& values,
                const std::vector<int64_t>* hi) {
  int64_t stack[kMaxDimProgram];
  size_t top = 0;
  for (size_t i = 0; i + 1 < prog.size() && i / 2 < kMaxDimProgram; i += 2) {
    const int64_t op = prog[i], arg = prog[i + 1];
    if (op == kDimConst || op == kDimSymbol) {
      int64_t v = arg;
      if (op == kDimSymbol) {
        if (arg < 0 || (size_t(arg) >= values.size() && (!hi || size_t(arg) >= hi->size())))
          return -1;
        v = size_t(arg) < values.size() && values[size_t(arg)] >= 0 ? values[size_t(arg)]
            : hi                                                    ? (*hi)[size_t(arg)]
                                                                    : -1;
        if (v < 0) return -1; // a symbol without a value (before the first run)
      }
      stack[top++] = v;
      continue;
    }
    if (top < (op == kDimDiv ? 1u : 2u)) return -1;
    if (op == kDimDiv) {
      if (arg < 1) return -1;
      stack[top - 1] = stack[top - 1] >= 0 ? stack[top - 1] / arg : -1;
    } else if (op == kDimAdd || op == kDimMul) {
      const int64_t a = stack[top - 2], b = stack[top - 1];
      int64_t r = 0;
      if ((op == kDimAdd ? __builtin_add_overflow(a, b, &r) : __builtin_mul_overflow(a, b, &r)))
        return -1;
      stack[--top - 1] = r;
    } else {
      return -1;
    }
  }
  return top == 1 ? stack[0] : -1;
}

// A non-negative integer that is the whole word.
int64_t parseCount(const std::string& w) {
  if (w.empty() || w[0] == '-' || w[0] == '+' || w[0] == ' ') throw Malformed{};
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(w.c_str(), &end, 10);
  if (errno || end != w.c_str() + w.size()) throw Malformed{};
  return v;
}

// The whitespace-separated words of a line.
std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

Binding parseBinding(const std::string& s, const std::string& file) {
  Binding b;
  AICC_RT_CHECK(s.size() > 2 && s[1] == ':', "{}: bad binding '{}'", file, s);
  switch (s[0]) {
  case 'A':
    b.region = Region::Arena;
    break;
  case 'W':
    b.region = Region::Weights;
    break;
  case 'I':
    b.region = Region::Input;
    break;
  case 'S':
    b.region = Region::Scratch;
    break;
  case 'D':
    b.region = Region::Dynamic;
    break;
  case 'Z':
    b.region = Region::Symbols;
    break;
  case 'H':
    b.region = Region::Heap;
    break;
  default:
    raise(format("{}: bad region in '{}'", file, s));
  }
  const size_t c = s.find(':', 2);
  AICC_RT_CHECK(c != std::string::npos, "{}: bad binding '{}'", file, s);
  b.offset = parseCount(s.substr(2, c - 2));
  b.bytes = parseCount(s.substr(c + 1));
  return b;
}

// A binding into the arena, weights or scratch must be aligned for its elements (inputs are the
// caller's pointers).
bool alignedFor(const Binding& b, int64_t elem) {
  return b.region == Region::Input || b.region == Region::Heap || b.offset % elem == 0;
}

// A derived dim's program from its plan text, "=" then postfix tokens joined by ':' (an integer,
// perhaps negative, $K for symbol K, + and *, /D to divide by D): "=$1:3:+:/8" is (S1+3)/8.
std::vector<int64_t> parseDimProgram(const std::string& w, size_t symbols) {
  std::vector<int64_t> prog;
  size_t i = 1;
  while (i <= w.size()) {
    size_t j = w.find(':', i);
    if (j == std::string::npos) j = w.size();
    const std::string tok = w.substr(i, j - i);
    if (tok == "+" || tok == "*") {
      prog.insert(prog.end(), {tok == "+" ? kDimAdd : kDimMul, 0});
    } else if (!tok.empty() && (tok[0] == '/' || tok[0] == '$')) {
      const int64_t v = parseCount(tok.substr(1));
      if (tok[0] == '$' && size_t(v) >= symbols) throw Malformed{};
      prog.insert(prog.end(), {tok[0] == '/' ? kDimDiv : kDimSymbol, v});
    } else { // a constant, perhaps negative (a normal form's "-3 + ...")
      const bool minus = !tok.empty() && tok[0] == '-';
      const int64_t v = parseCount(minus ? tok.substr(1) : tok);
      prog.insert(prog.end(), {kDimConst, minus ? -v : v});
    }
    i = j + 1;
  }
  if (prog.empty() || prog.size() / 2 > kMaxDimProgram) throw Malformed{};
  return prog;
}

// Dims, each a size, a symbol's name (then its hi, and its index in t.syms) or a derived dim's
// program (then its value at the symbols' hi, and the program in t.exprs).
// `grows`: a value sized at run time (a growable buffer's), whose dims at the symbols' bounds are
// no size the plan holds (0 stands for a derived one there).
void parseDims(const std::string& s, const std::vector<Symbol>& symbols, TensorDesc& t,
               bool grows = false) {
  if (s == "-") return;
  std::vector<int64_t> hi;
  for (const Symbol& x : symbols) hi.push_back(x.hi);
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    const std::string w = dec(s.substr(i, j - i));
    auto sym =
        std::find_if(symbols.begin(), symbols.end(), [&](const Symbol& x) { return x.name == w; });
    if (!w.empty() && w[0] == '=') {
      t.exprs.resize(t.dims.size());
      t.exprs.push_back(parseDimProgram(w, symbols.size()));
      t.dims.push_back(grows ? 0 : evalDim(t.exprs.back(), {}, &hi));
      if (t.dims.back() < 0) throw Malformed{}; // (the plan reader names the line)
    } else if (sym != symbols.end()) {
      t.syms.resize(t.dims.size(), -1);
      t.syms.push_back(int32_t(sym - symbols.begin()));
      t.dims.push_back(sym->hi);
    } else {
      t.dims.push_back(parseCount(w));
    }
    AICC_RT_CHECK(t.dims.back() <= (int64_t(1) << 40), "absurd dimension in '{}'", s);
    i = j + 1;
  }
  if (!t.syms.empty()) t.syms.resize(t.dims.size(), -1);
  if (!t.exprs.empty()) t.exprs.resize(t.dims.size());
}

using Kind = Plan::Kind;

std::optional<Kind> taskKind(const std::string& s) {
  if (s == "task") return Kind::Call;
  if (s == "copy") return Kind::Copy;
  if (s == "jumpz") return Kind::JumpIfZero;
  if (s == "jump") return Kind::Jump;
  if (s == "fail") return Kind::Fail;
  if (s == "fallback") return Kind::Fallback;
  if (s == "repeat") return Kind::Repeat;
  if (s == "seq") return Kind::Seq;
  return std::nullopt;
}

// A file the plan names with its size and content hash ("<bytes> <hash>").
struct FileCheck {
  int64_t bytes = -1;
  std::string hash;
};

// Reads the whole file at path (the plan).
std::optional<std::string> readText(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return std::nullopt;
  std::string s;
  char buf[1 << 14];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  const bool ok = !std::ferror(f);
  std::fclose(f);
  if (!ok) return std::nullopt;
  return s;
}

// Reads the file into dst (want.bytes bytes) after checking its size, then checks its hash.
void readChecked(const std::string& file, const FileCheck& want, std::byte* dst) {
  struct stat st {};
  AICC_RT_CHECK(::stat(file.c_str(), &st) == 0, "cannot open '{}': {}", file, std::strerror(errno));
  AICC_RT_CHECK(int64_t(st.st_size) == want.bytes,
                "'{}' holds {} bytes, the plan says {} (a truncated or "
                "mismatched file; recompile the model)",
                file, int64_t(st.st_size), want.bytes);
  std::FILE* f = std::fopen(file.c_str(), "rb");
  AICC_RT_CHECK(f, "cannot open '{}': {}", file, std::strerror(errno));
  const size_t got = std::fread(dst, 1, size_t(want.bytes), f);
  std::fclose(f);
  AICC_RT_CHECK(got == size_t(want.bytes), "cannot read '{}'", file);
  AICC_RT_CHECK(hashHex(dst, size_t(want.bytes)) == want.hash,
                "'{}' does not match the plan's content hash (a damaged or mismatched file; "
                "recompile the model)",
                file);
}

// The library's aicc_artifact_signature: task function -> byte size (and element size) of each
// parameter, one function per line: "fn bytes[/elem] ...".
struct ParamSig {
  int64_t bytes = 0, elem = 1;
};
std::map<std::string, std::vector<ParamSig>> parseSignature(const char* sig) {
  std::map<std::string, std::vector<ParamSig>> out;
  const std::string text(sig);
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    const auto w = words(text.substr(at, nl - at));
    at = nl + 1;
    if (w.empty()) continue;
    auto& params = out[w[0]];
    for (size_t i = 1; i < w.size(); ++i) {
      const size_t slash = w[i].find('/');
      params.push_back({parseCount(w[i].substr(0, slash)),
                        slash == std::string::npos
                            ? 1
                            : std::max<int64_t>(1, parseCount(w[i].substr(slash + 1)))});
    }
  }
  return out;
}

// A repeat task's optional bindings (Plan::Kind::Repeat: count, index, then an optional
// condition and an optional Symbols binding for the iterations run, in that order).
struct RepeatExtras {
  const Binding* cond = nullptr;
  const Binding* iterations = nullptr;
};
RepeatExtras repeatExtras(const std::vector<Binding>& p) {
  RepeatExtras r;
  size_t n = p.size();
  if (n > 2 && p.back().region == Region::Symbols) r.iterations = &p[--n];
  if (n == 3) r.cond = &p[2];
  return r;
}

struct TaskLine {
  Kind kind = Kind::Call;
  std::string fn, node;
  std::vector<Binding> params;
  int64_t target = 0, limit = 0;
  SeqTask seq;
};

} // namespace

void setFallbackProvider(FallbackProvider p) { fallbackProvider.store(p); }
void setDynamicTensorView(DynamicTensorView v) { dynamicTensorView.store(v); }

int64_t TensorDesc::dimFor(size_t k, const std::vector<int64_t>& values) const {
  if (k < exprs.size() && !exprs[k].empty()) {
    const int64_t v = evalDim(exprs[k], values, nullptr);
    return v >= 0 ? v : dims[k];
  }
  const int32_t j = symbolAt(k);
  return j >= 0 && size_t(j) < values.size() && values[size_t(j)] >= 0 ? values[size_t(j)]
                                                                       : dims[k];
}

std::vector<int64_t> TensorDesc::dimsFor(const std::vector<int64_t>& values) const {
  std::vector<int64_t> d(dims.size());
  for (size_t k = 0; k < d.size(); ++k) d[k] = dimFor(k, values);
  return d;
}

int64_t TensorDesc::bytes(const std::vector<int64_t>& values) const {
  if (!dynamic.empty()) return 0;
  int64_t n = int64_t(dtypeSize(dtype));
  for (size_t k = 0; k < dims.size(); ++k) n *= dimFor(k, values); // (no allocation: per run)
  return n;
}

void PlanBytesFree::operator()(std::byte* p) const {
  if (owned) std::free(p);
}

Plan::Bytes Plan::allocate(int64_t n) {
  auto* p =
      static_cast<std::byte*>(std::aligned_alloc(kAlign, size_t(aligned(std::max<int64_t>(n, 1)))));
  AICC_RT_CHECK(p, "out of memory allocating {} bytes", n);
  return Bytes(p);
}

std::byte* HeapBuffer::reserve(int64_t n, const std::string& what) {
  if (n <= capacity && bytes) return bytes.get();
  AICC_RT_CHECK(n >= 0 && n <= (int64_t(1) << 40), "{}: {} bytes: an absurd size", what, n);
  const int64_t grown = std::max(n, capacity + capacity / 2); // (amortized when it keeps growing)
  MemoryReservation more(grown, what);
  Plan::Bytes b = Plan::allocate(grown);
  if (capacity) std::memcpy(b.get(), bytes.get(), size_t(capacity));
  bytes = std::move(b);
  reserved = std::move(more);
  capacity = grown;
  return bytes.get();
}

namespace {

// Where a plan's parts come from: a folder's model.plan, model.weights and model.so, or a linked
// model (rt/linked_model.h: the plan and the task functions in a binary, the weights embedded or
// in a file).
struct PlanSource {
  std::string planFile;    // names the plan in errors
  std::string text;        // the plan
  std::string weightsFile; // read and checked, unless the linked model embeds the weights
  std::string libraryFile; // a folder's model.so: checked against the plan, then dlopened
  const aicc_linked_model_desc* linked = nullptr;
  std::shared_ptr<void> code; // a linked model's library handle, if it was dlopened
};

// Reads and checks a plan, its weights and its code (see the header).
Plan readPlan(const PlanSource& src);

// Whether binding b refers to a dynamic value: a slot, or a dynamic input (a
// std::shared_ptr<void> there; rt/artifact.h). b's input index is checked already.
bool bindsDynamic(const Plan& plan, const Binding& b) {
  return b.region == Region::Dynamic ||
         (b.region == Region::Input && !plan.inputs[size_t(b.offset)].dynamic.empty());
}
// A folder: model.plan, or a model.so that carries its plan (`aicc compile --static-runtime`).
Plan readFolder(const std::string& dir);

} // namespace

struct Artifact::Impl {
  Plan plan;
  Plan::Bytes arena, scratch;
  std::vector<const void*> inputs;
  // Symbolic inputs: the dims each was set with; the symbols' values of the run (-1: none yet),
  // and the shape block the tasks read them from.
  std::vector<std::vector<int64_t>> inputDims;
  std::vector<int64_t> scratchDims; // setInput's, swapped with inputDims[i]
  std::vector<int64_t> values;
  Plan::Bytes symbolBlock;
  // Dynamic values (rt/artifact.h): the slots, and the values of dynamic inputs.
  mutable std::vector<std::shared_ptr<void>> slots, dynamicInputs;
  // Values sized at run time (Plan::heaps), and the shape block's values as they size them.
  mutable std::vector<HeapBuffer> heaps;
  mutable std::vector<int64_t> now;
  std::vector<void*> ptrs;
  std::vector<std::byte*> bound;
  std::mutex mu; // one run at a time per instance
  // Fixed-size variants (Plan::variants), and the one the last run took (null: this plan).
  std::vector<std::unique_ptr<Artifact>> variants;
  Artifact* ran = nullptr;
  bool profiling = false;
  std::vector<TaskTime> times;
  std::function<void(size_t)> afterTask;

  std::byte* at(const Binding& b) const {
    switch (b.region) {
    case Region::Arena:
      return arena.get() + b.offset;
    case Region::Weights:
      return plan.weights.get() + b.offset;
    case Region::Scratch:
      return scratch.get() + b.offset;
    case Region::Input:
      if (plan.inputs[size_t(b.offset)].dynamic.empty())
        return const_cast<std::byte*>(static_cast<const std::byte*>(inputs[size_t(b.offset)]));
      return reinterpret_cast<std::byte*>(&dynamicInputs[size_t(b.offset)]);
    case Region::Dynamic:
      return reinterpret_cast<std::byte*>(&slots[size_t(b.offset)]);
    case Region::Symbols:
      return symbolBlock.get() + b.offset;
    case Region::Heap:
      return heap(size_t(b.offset));
    }
    return nullptr;
  }
  // Heap buffer k grown to the bytes its dims take with the symbols' values at this point of the
  // run (the shape block), each of which an earlier task must have set.
  std::byte* heap(size_t k) const {
    const TensorDesc& d = plan.heaps[k];
    now.resize(plan.symbols.size());
    std::memcpy(now.data(), symbolBlock.get(), 8 * now.size());
    auto set = [&](int64_t s) {
      const Symbol& sym = plan.symbols[size_t(s)];
      AICC_RT_CHECK(now[size_t(s)] >= 0, "'{}' has no size yet in this run: {} is not set", d.name,
                    sym.name);
      AICC_RT_CHECK(now[size_t(s)] <= sym.hi, "'{}': {} is {} in this run, more than {}", d.name,
                    sym.name, now[size_t(s)], sym.hi);
    };
    int64_t n = int64_t(dtypeSize(d.dtype));
    for (size_t j = 0; j < d.dims.size(); ++j) {
      if (d.symbolAt(j) >= 0) set(d.symbolAt(j));
      if (j < d.exprs.size())
        for (size_t i = 0; i + 1 < d.exprs[j].size(); i += 2)
          if (d.exprs[j][i] == kDimSymbol) set(d.exprs[j][i + 1]);
      const int64_t x = d.dimFor(j, now);
      AICC_RT_CHECK(x >= 0 && !__builtin_mul_overflow(n, x, &n) && n <= (int64_t(1) << 40),
                    "'{}': dim {} is {} in this run: an absurd size", d.name, j, x);
    }
    return heaps[k].reserve(n, d.name);
  }
  void setInput(const std::vector<TensorDesc>& decl, size_t i, const void* data, int64_t bytes,
                const std::vector<int64_t>* dims);
  void resolveSymbols(const std::vector<TensorDesc>& decl);
  void run(const std::vector<TensorDesc>& decl);
  void runTasks(size_t from, size_t to); // tasks [from, to): jumps and loop bodies inside
  // The variant whose inputs have exactly this run's dims, run on this run's inputs; or false.
  bool runVariant(const std::vector<TensorDesc>& decl);
  const Artifact& last(const Artifact& self) const { return ran ? *ran : self; }
};

Artifact::Artifact(const std::string& dir) : Artifact(readFolder(dir)) {
  // The variants: whole artifacts of the same inputs and outputs (fixed sizes, or size classes
  // with narrower ranges).
  for (const std::string& v : impl_->plan.variants) {
    auto a = std::make_unique<Artifact>(dir + "/" + v);
    bool same = a->inputs_.size() == inputs_.size() && a->outputs_.size() == outputs_.size();
    for (size_t i = 0; same && i < inputs_.size(); ++i)
      same = a->inputs_[i].name == inputs_[i].name && a->inputs_[i].dtype == inputs_[i].dtype &&
             a->inputs_[i].dims.size() == inputs_[i].dims.size() && a->inputs_[i].dynamic.empty() &&
             inputs_[i].dynamic.empty();
    for (size_t i = 0; same && i < outputs_.size(); ++i)
      same = a->outputs_[i].name == outputs_[i].name &&
             (a->outputs_[i].dtype == outputs_[i].dtype || !outputs_[i].dynamic.empty());
    AICC_RT_CHECK(same && a->impl_->plan.variants.empty(),
                  "{}/model.plan: variant '{}' is not an artifact of the same inputs and outputs",
                  dir, v);
    impl_->variants.push_back(std::move(a));
  }
}

void Artifact::checkBodies(const std::string& planFile) const {
  for (const Plan::Task& t : impl_->plan.tasks) {
    if (t.kind != Kind::Seq || (t.seq.op != SeqOp::Map && t.seq.op != SeqOp::Loop)) continue;
    AICC_RT_CHECK(size_t(t.seq.attrs[0]) < impl_->plan.bodies.size() &&
                      impl_->plan.bodies[size_t(t.seq.attrs[0])],
                  "{}: {} runs body {}, which the plan lacks", planFile, t.node, t.seq.attrs[0]);
    const std::string problem = bodyProblem(t.seq, *impl_->plan.bodies[size_t(t.seq.attrs[0])]);
    AICC_RT_CHECK(problem.empty(), "{}: {}: {}", planFile, t.node, problem);
  }
}

Artifact::Artifact(Plan plan) : impl_(std::make_unique<Impl>()) {
  inputs_ = plan.inputs;
  outputs_ = plan.outputs;
  impl_->arena = Plan::allocate(plan.arenaBytes);
  impl_->scratch = Plan::allocate(plan.scratchBytes);
  impl_->inputs.assign(inputs_.size(), nullptr);
  impl_->inputDims.resize(inputs_.size());
  impl_->values.assign(plan.symbols.size(), -1);
  impl_->symbolBlock = Plan::allocate(int64_t(8 * std::max<size_t>(plan.symbols.size(), 1)));
  impl_->dynamicInputs.resize(inputs_.size());
  size_t slots = 0; // dynamic slots: one past the highest bound
  auto count = [&](const Binding& b) {
    if (b.region == Region::Dynamic) slots = std::max(slots, size_t(b.offset) + 1);
  };
  for (const Plan::Task& t : plan.tasks)
    for (const Binding& b : t.params) count(b);
  for (const Binding& b : plan.outputBindings) count(b);
  impl_->slots.resize(slots);
  impl_->heaps.resize(plan.heaps.size());
  impl_->times.assign(plan.tasks.size(), {});
  impl_->plan = std::move(plan);
  checkBodies("the plan");
}

Artifact::~Artifact() = default;

namespace {

Plan readFolder(const std::string& dir) {
  runtime::checkThreadsEnv();
  PlanSource src;
  src.planFile = dir + "/model.plan";
  src.weightsFile = dir + "/model.weights";
  if (auto text = readText(src.planFile)) {
    src.text = std::move(*text);
    src.libraryFile = dir + "/model.so";
    Plan plan = readPlan(src);
    // The bodies of SequenceMap tasks: this instance's own (each runs once per item).
    for (const std::string& b : plan.bodyFolders)
      plan.bodies.push_back(std::make_shared<Artifact>(dir + "/" + b));
    return plan;
  }
  // A self-contained model.so carries its plan (and maybe its weights): its runtime stays unused,
  // the task functions are bound to this one.
  const std::string so = dir + "/model.so";
  struct stat st {};
  AICC_RT_CHECK(::stat(so.c_str(), &st) == 0,
                "'{}': no model.plan here (not an `aicc compile --emit so` folder)", dir);
  void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  AICC_RT_CHECK(lib, "cannot load '{}': {}", so, dlerror());
  src.code = std::shared_ptr<void>(lib, [](void* h) { dlclose(h); });
  src.linked = static_cast<const aicc_linked_model_desc*>(dlsym(lib, "aicc_linked_model"));
  AICC_RT_CHECK(src.linked,
                "'{}': no model.plan here, and its model.so carries no plan (not an `aicc compile "
                "--emit so` folder)",
                dir);
  src.planFile = so + " (its linked plan)";
  src.text = src.linked->plan;
  return readPlan(src);
}

} // namespace

// Defined by a self-contained artifact's generated code; absent (null) elsewhere.
extern "C" const aicc_linked_model_desc aicc_linked_model __attribute__((weak));

Plan readLinkedModel(const char* weightsFile) {
  runtime::checkThreadsEnv();
  const aicc_linked_model_desc* linked = &aicc_linked_model;
  AICC_RT_CHECK(linked, "no model is linked into this program (aicc_model_load_linked runs the "
                        "model.so or model.a of `aicc compile --static-runtime`; load a folder "
                        "with aicc_model_load)");
  AICC_RT_CHECK(linked->weights || weightsFile,
                "the linked model's weights are not linked in (compiled without --embed-weights): "
                "pass its model.weights to aicc_model_load_linked");
  PlanSource src;
  src.planFile = "the linked model's plan";
  src.linked = linked;
  src.text = linked->plan;
  src.weightsFile = weightsFile ? weightsFile : "";
  Plan plan = readPlan(src);
  AICC_RT_CHECK(plan.bodyFolders.empty(),
                "{}: SequenceMap and Loop bodies are folders: load it with "
                "aicc_model_load",
                src.planFile);
  return plan;
}

namespace {

Plan readPlan(const PlanSource& src) {
  Plan plan;
  const std::string& planFile = src.planFile;
  const aicc_linked_model_desc* linked = src.linked;
  AICC_RT_CHECK(!linked || linked->version == AICC_LINKED_MODEL_VERSION,
                "{}: linked model of version {}, this runtime reads version {} (recompile the "
                "model)",
                planFile, linked ? linked->version : 0, AICC_LINKED_MODEL_VERSION);
  const std::string& text = src.text;
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  const std::string header = lines.empty() ? "" : lines[0];
  AICC_RT_CHECK(header == kPlanHeader,
                "{}: not an aicc artifact plan of this version (first line "
                "'{}', expected '{}'; recompile the model)",
                planFile, header, kPlanHeader);
  std::vector<TaskLine> taskLines;
  FileCheck weightsFile, libraryFile;
  const uint64_t host = hostCpuFeatures();
  for (size_t li = 1; li < lines.size(); ++li) {
    const std::string& line = lines[li];
    const auto w = words(line);
    if (w.empty()) continue;
    const std::string& kind = w[0];
    auto word = [&](size_t i) -> const std::string& {
      if (i >= w.size()) throw Malformed{};
      return w[i];
    };
    try {
      if (kind == "symbol") { // before the inputs that name it
        // NAME LO HI [STEP], or NAME 0 HI data (a data symbol: set by a task)
        const bool data = w.size() == 5 && w[4] == "data";
        Symbol sym{dec(word(1)), parseCount(word(2)), parseCount(word(3)),
                   w.size() > 4 && !data ? parseCount(word(4)) : 1, data};
        AICC_RT_CHECK(!data || sym.lo == 0, "{}: data symbol '{}' does not start at 0", planFile,
                      sym.name);
        AICC_RT_CHECK(sym.lo <= sym.hi && sym.hi <= (int64_t(1) << 40) && sym.step >= 1 &&
                          sym.step <= sym.hi,
                      "{}: symbol '{}' has the range {}..{} (step {})", planFile, sym.name, sym.lo,
                      sym.hi, sym.step);
        plan.symbols.push_back(sym);
      } else if (kind == "variant") { // a folder inside this one
        plan.variants.push_back(dec(word(1)));
        AICC_RT_CHECK(!plan.variants.back().empty() && plan.variants.back()[0] != '/' &&
                          plan.variants.back().find("..") == std::string::npos,
                      "{}: variant '{}' is not a folder inside the artifact's", planFile,
                      plan.variants.back());
      } else if (kind == "body") { // a folder inside this one (Plan::bodyFolders)
        plan.bodyFolders.push_back(dec(word(1)));
        AICC_RT_CHECK(!plan.bodyFolders.back().empty() && plan.bodyFolders.back()[0] != '/' &&
                          plan.bodyFolders.back().find("..") == std::string::npos,
                      "{}: body '{}' is not a folder inside the artifact's", planFile,
                      plan.bodyFolders.back());
      } else if (kind == "arena") {
        plan.arenaBytes = parseCount(word(1));
      } else if (kind == "scratch") {
        plan.scratchBytes = parseCount(word(1));
      } else if (kind == "weights" || kind == "library") {
        FileCheck& f = kind == "weights" ? weightsFile : libraryFile;
        f.bytes = parseCount(word(1));
        f.hash = w.size() > 2 ? w[2] : "";
      } else if (kind == "requires") {
        std::string lacking;
        for (size_t i = 2; i < w.size(); ++i) {
          if (w[i].rfind("arch=", 0) == 0) {
            AICC_RT_CHECK(w[i].substr(5) == hostArch(),
                          "{}: compiled for target '{}' ({}), not for this machine ({})", planFile,
                          dec(word(1)), w[i].substr(5), hostArch());
            continue;
          }
          CpuFeature cf;
          if (!parseCpuFeature(w[i], cf) || !(host >> static_cast<uint32_t>(cf) & 1))
            lacking += (lacking.empty() ? "" : ", ") + w[i];
        }
        AICC_RT_CHECK(lacking.empty(),
                      "{}: compiled for target '{}', which needs {} that this CPU lacks", planFile,
                      dec(word(1)), lacking);
      } else if (kind == "heap") { // NAME DTYPE DIMS: growable buffer k, k in order
        auto dtype = dtypeFromName(word(2));
        AICC_RT_CHECK(dtype && dtypeSize(*dtype) > 0, "{}: unknown element type '{}'", planFile,
                      word(2));
        TensorDesc t{dec(word(1)), *dtype, {}, "", {}, {}};
        parseDims(word(3), plan.symbols, t, true);
        plan.heaps.push_back(std::move(t));
      } else if (kind == "input" || kind == "output") {
        // "dynamic TYPE": a dynamic value (rt/artifact.h), its IR type for messages
        const bool dynamic = word(2) == "dynamic";
        auto dtype = dynamic ? std::optional<DType>(DType::Undefined) : dtypeFromName(word(2));
        AICC_RT_CHECK(dtype, "{}: unknown element type '{}'", planFile, word(2));
        TensorDesc t{dec(word(1)), *dtype, {}, dynamic ? dec(word(3)) : "", {}, {}};
        // (an output in a growable buffer: of the run's size, without a bound)
        const bool grows = kind == "output" && w.size() > 4 && w[4].rfind("H:", 0) == 0;
        if (!dynamic) parseDims(word(3), plan.symbols, t, grows);
        int64_t elems = 1; // checked before multiplying: no overflow, no negative dim
        for (int64_t x : grows ? std::vector<int64_t>{} : t.dims) {
          AICC_RT_CHECK(x >= 0 && (x == 0 || elems <= (int64_t(1) << 40) / x),
                        "{}: {} '{}' has an absurd size {}", planFile, kind, t.name, word(3));
          if (x) elems *= x;
        }
        if (kind == "input") {
          plan.inputs.push_back(t);
        } else {
          plan.outputs.push_back(t);
          plan.outputBindings.push_back(parseBinding(word(4), planFile));
        }
      } else if (auto k = taskKind(kind)) {
        TaskLine t;
        t.kind = *k;
        size_t i = 1;
        if (t.kind == Kind::Call) t.fn = word(i++);
        if (t.kind == Kind::Fallback) t.fn = dec(word(i++));
        if (t.kind == Kind::Seq) { // OP NODE ATTRS, then per param: BINDING DTYPE DIMS (a
          auto op = seqOpFromName(word(i++)); // dynamic value: BINDING dynamic TYPE)
          AICC_RT_CHECK(op, "{}: unknown seq op in '{}'", planFile, line);
          t.seq.op = *op;
          t.node = dec(word(i++));
          for (size_t a = 0; word(i) != "-" && a <= word(i).size();) { // "1,-2": signed ints
            size_t e = std::min(word(i).find(',', a), word(i).size());
            const std::string x = word(i).substr(a, e - a);
            t.seq.attrs.push_back(!x.empty() && x[0] == '-' ? -parseCount(x.substr(1))
                                                            : parseCount(x));
            a = e + 1;
          }
          for (++i; i < w.size(); i += 3) {
            t.params.push_back(parseBinding(w[i], planFile));
            TensorDesc d;
            if (word(i + 1) == "dynamic") {
              d.dynamic = dec(word(i + 2));
            } else {
              auto dtype = dtypeFromName(word(i + 1));
              AICC_RT_CHECK(dtype && dtypeSize(*dtype) > 0, "{}: unknown element type '{}'",
                            planFile, word(i + 1));
              d.dtype = *dtype;
              parseDims(word(i + 2), plan.symbols, d);
            }
            t.seq.descs.push_back(std::move(d));
          }
          taskLines.push_back(std::move(t));
          continue;
        }
        AICC_RT_CHECK(i < w.size(), "{}: malformed line '{}'", planFile, line);
        t.node = dec(w[i++]);
        for (; i < w.size(); ++i) {
          if (w[i][0] == '@')
            t.target = parseCount(w[i].substr(1));
          else if (w[i][0] == '#') // Repeat: its limit
            t.limit = parseCount(w[i].substr(1));
          else
            t.params.push_back(parseBinding(w[i], planFile));
        }
        taskLines.push_back(std::move(t));
      } else {
        raise(format("{}: unknown line '{}'", planFile, line));
      }
    } catch (const Malformed&) {
      raise(format("{}: malformed line '{}'", planFile, line));
    }
  }
  AICC_RT_CHECK(weightsFile.bytes >= 0 && libraryFile.bytes >= 0 && !weightsFile.hash.empty() &&
                    !libraryFile.hash.empty(),
                "{}: the 'weights' and 'library' lines (sizes and hashes) are missing", planFile);
  plan.weightBytes = weightsFile.bytes;
  // Every binding must lie inside its region.
  auto checkBinding = [&](const Binding& b, const std::string& where) {
    const int64_t size = b.region == Region::Arena     ? plan.arenaBytes
                         : b.region == Region::Weights ? plan.weightBytes
                         : b.region == Region::Scratch ? plan.scratchBytes
                         : b.region == Region::Symbols ? int64_t(8 * plan.symbols.size())
                                                       : -1;
    if (b.region == Region::Input) {
      AICC_RT_CHECK(b.offset < int64_t(plan.inputs.size()) &&
                        b.bytes <= plan.inputs[size_t(b.offset)].bytes(),
                    "{}: {} binds input {} out of range", planFile, where, b.offset);
      return;
    }
    if (b.region == Region::Heap) {
      AICC_RT_CHECK(b.bytes == 0 && b.offset < int64_t(plan.heaps.size()),
                    "{}: {} binds growable buffer {} with {} bytes", planFile, where, b.offset,
                    b.bytes);
      return;
    }
    if (b.region == Region::Dynamic) { // slots: as many as bound (Artifact(Plan))
      AICC_RT_CHECK(b.bytes == 0 && b.offset < (int64_t(1) << 24),
                    "{}: {} binds dynamic slot {} with {} bytes", planFile, where, b.offset,
                    b.bytes);
      return;
    }
    AICC_RT_CHECK(b.offset <= size && b.bytes <= size - b.offset, "{}: {} reaches past its region",
                  planFile, where);
  };
  for (size_t i = 0; i < taskLines.size(); ++i) {
    const TaskLine& t = taskLines[i];
    const std::string where = format("task {} ({})", i, t.node);
    for (const Binding& b : t.params) {
      checkBinding(b, where);
      // Only fallback tasks read or write dynamic values (rt/artifact.h), but a copy from one
      // to another, which shares it.
      AICC_RT_CHECK(!bindsDynamic(plan, b) || t.kind == Kind::Fallback || t.kind == Kind::Seq ||
                        (t.kind == Kind::Copy && t.params.size() == 2 &&
                         bindsDynamic(plan, t.params[0]) && bindsDynamic(plan, t.params[1]) &&
                         t.params[1].region == Region::Dynamic),
                    "{}: {} binds a dynamic value but is not a fallback task", planFile, where);
    }
    for (const Binding& b : t.params) // (a task that sizes it first, or reads it)
      AICC_RT_CHECK(b.region != Region::Heap || t.kind == Kind::Call || t.kind == Kind::Fallback ||
                        t.kind == Kind::Seq,
                    "{}: {} binds a growable buffer but is not a call or a fallback", planFile,
                    where);
    if (t.kind == Kind::Seq) { // its bindings: of the op's kinds and types, tensors in full
      std::vector<bool> dynamic;
      for (size_t k = 0; k < t.params.size(); ++k) {
        dynamic.push_back(bindsDynamic(plan, t.params[k]));
        AICC_RT_CHECK(dynamic.back() || t.params[k].region == Region::Heap ||
                          t.params[k].bytes == t.seq.descs[k].bytes(),
                      "{}: {}: binding {} has {} bytes, its type needs {}", planFile, where, k,
                      t.params[k].bytes, t.seq.descs[k].bytes());
        AICC_RT_CHECK(t.params[k].region != Region::Symbols, "{}: {} binds the shape block",
                      planFile, where);
      }
      const std::string problem = seqTaskProblem(t.seq, dynamic);
      AICC_RT_CHECK(problem.empty(), "{}: {}: {}", planFile, where, problem);
    }
    // Calls are checked against the library's signature below, fallbacks by their provider.
    if (t.kind != Kind::Call && t.kind != Kind::Fallback && t.kind != Kind::Repeat &&
        t.kind != Kind::Seq) {
      const size_t want = t.kind == Kind::Copy ? 2 : t.kind == Kind::JumpIfZero ? 1 : 0;
      AICC_RT_CHECK(t.params.size() == want, "{}: {} has {} bindings, not {}", planFile, where,
                    t.params.size(), want);
    }
    AICC_RT_CHECK(t.kind != Kind::Copy || t.params[0].bytes == t.params[1].bytes,
                  "{}: {} copies between bindings of different sizes", planFile, where);
    AICC_RT_CHECK(t.kind != Kind::JumpIfZero || t.params[0].bytes >= 1,
                  "{}: {} reads an empty condition", planFile, where);
    if (t.kind == Kind::JumpIfZero || t.kind == Kind::Jump || t.kind == Kind::Repeat)
      AICC_RT_CHECK(t.target > int64_t(i) && t.target <= int64_t(taskLines.size()),
                    "{}: {} jumps to {}, not forward within the plan", planFile, where, t.target);
    if (t.kind == Kind::Repeat) {
      // count, index, then an optional condition and an optional Symbols binding (in that
      // order); every jump and body inside ends inside (runs end: bodies run at most `limit`
      // times, and only forward jumps).
      const auto& p = t.params;
      const RepeatExtras x = repeatExtras(p);
      AICC_RT_CHECK(
          p.size() >= 2 && p.size() == size_t(2 + (x.cond ? 1 : 0) + (x.iterations ? 1 : 0)) &&
              p[0].bytes == 8 && p[1].bytes == 8 && p[1].region != Region::Weights &&
              p[1].region != Region::Input && (!x.cond || x.cond->bytes >= 1) &&
              (!x.iterations || x.iterations->bytes == 8) && t.limit >= 0,
          "{}: {} is not a repeat of (count, index[, condition][, iterations])", planFile, where);
      for (int64_t j = int64_t(i) + 1; j < t.target; ++j)
        AICC_RT_CHECK(!(taskLines[size_t(j)].kind == Kind::JumpIfZero ||
                        taskLines[size_t(j)].kind == Kind::Jump ||
                        taskLines[size_t(j)].kind == Kind::Repeat) ||
                          taskLines[size_t(j)].target <= t.target,
                      "{}: task {} leaves the loop body of {}", planFile, j, where);
    }
  }
  for (size_t i = 0; i < plan.outputBindings.size();
       ++i) { // outputs are read as their declared type
    checkBinding(plan.outputBindings[i], "an output");
    const bool dynamic = bindsDynamic(plan, plan.outputBindings[i]);
    AICC_RT_CHECK(dynamic == !plan.outputs[i].dynamic.empty(), "{}: output '{}' is {} but bound {}",
                  planFile, plan.outputs[i].name, dynamic ? "static" : "dynamic",
                  dynamic ? "to a dynamic value" : "statically");
    if (plan.outputBindings[i].region == Region::Heap) { // (sized as the run goes)
      AICC_RT_CHECK(plan.heaps[size_t(plan.outputBindings[i].offset)].dtype ==
                        plan.outputs[i].dtype,
                    "{}: output '{}' is bound to a growable buffer of another type", planFile,
                    plan.outputs[i].name);
      continue;
    }
    AICC_RT_CHECK(plan.outputBindings[i].bytes == plan.outputs[i].bytes(),
                  "{}: output '{}' is bound to {} bytes, its type {} {} needs {}", planFile,
                  plan.outputs[i].name, plan.outputBindings[i].bytes,
                  dtypeName(plan.outputs[i].dtype), dimsText(plan.outputs[i].dims),
                  plan.outputs[i].bytes());
  }
  // What this load allocates (embedded weights are the binary's read-only data, not allocated).
  const int64_t allocatedWeights = linked && linked->weights ? 0 : plan.weightBytes;
  int64_t total = 0; // each size fits an int64; their sum must too
  AICC_RT_CHECK(!__builtin_add_overflow(plan.arenaBytes, plan.scratchBytes, &total) &&
                    !__builtin_add_overflow(total, allocatedWeights, &total),
                "{}: arena {}, scratch {} and weights {} bytes: absurd sizes", planFile,
                plan.arenaBytes, plan.scratchBytes, plan.weightBytes);
  plan.reserved = MemoryReservation(
      total, format("loading '{}' (arena {}, scratch {}, weights {} bytes)", planFile,
                    plan.arenaBytes, plan.scratchBytes, allocatedWeights));
  void* const table[] = {reinterpret_cast<void*>(&aicc_rt_call_kernel),
                         reinterpret_cast<void*>(&aicc_rt_parallel_for)};
  const char* sigText = nullptr;
  std::string so; // names the code in errors
  std::function<void*(const std::string&)> lookup;
  if (linked) {
    // The weights: embedded (read in place from the binary's read-only data), or model.weights.
    if (linked->weights) {
      AICC_RT_CHECK(int64_t(linked->weight_bytes) == weightsFile.bytes,
                    "{}: {} bytes of weights are linked in, the plan says {}", planFile,
                    int64_t(linked->weight_bytes), weightsFile.bytes);
      plan.weights =
          Plan::Bytes(const_cast<std::byte*>(reinterpret_cast<const std::byte*>(linked->weights)),
                      Plan::Free{false});
    } else {
      plan.weights = Plan::allocate(plan.weightBytes);
      readChecked(src.weightsFile, weightsFile, plan.weights.get());
    }
    plan.code = src.code;
    linked->bind(table);
    sigText = linked->signature;
    so = src.planFile;
    lookup = [linked](const std::string& fn) -> void* {
      for (uint32_t i = 0; i < linked->num_fns; ++i)
        if (fn == linked->fns[i].name) return reinterpret_cast<void*>(linked->fns[i].fn);
      return nullptr;
    };
  } else {
    // The weights and the library, each checked against the plan's size and hash before use (a
    // truncated model.so would otherwise fault inside dlopen or later, in a task).
    plan.weights = Plan::allocate(plan.weightBytes); // read in place, no staging copy
    readChecked(src.weightsFile, weightsFile, plan.weights.get());
    so = src.libraryFile;
    {
      Plan::Bytes lib = Plan::allocate(libraryFile.bytes); // only to check it before dlopen
      readChecked(so, libraryFile, lib.get());
    }
    void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    AICC_RT_CHECK(lib, "cannot load '{}': {}", so, dlerror());
    plan.code = std::shared_ptr<void>(lib, [](void* h) { dlclose(h); });
    using BindFn = void (*)(void* const*);
    auto bindFn = reinterpret_cast<BindFn>(dlsym(lib, "aicc_artifact_bind"));
    AICC_RT_CHECK(bindFn, "'{}' has no aicc_artifact_bind (not an aicc artifact)", so);
    bindFn(table);
    sigText = static_cast<const char*>(dlsym(lib, "aicc_artifact_signature"));
    AICC_RT_CHECK(sigText, "'{}' has no aicc_artifact_signature (not an aicc artifact)", so);
    lookup = [lib](const std::string& fn) { return dlsym(lib, fn.c_str()); };
  }
  std::map<std::string, std::vector<ParamSig>> signature;
  try {
    signature = parseSignature(sigText);
  } catch (const Malformed&) {
    raise(format("'{}': malformed aicc_artifact_signature", so));
  }
  const FallbackProvider provider = fallbackProvider.load();
  for (size_t i = 0; i < taskLines.size(); ++i) {
    TaskLine& t = taskLines[i];
    Plan::Task task{t.kind,  nullptr, std::move(t.node), std::move(t.params), size_t(t.target),
                    t.limit, {},      std::move(t.seq)};
    if (t.kind == Kind::Call) {
      auto sig = signature.find(t.fn);
      task.fn = reinterpret_cast<int32_t (*)(void**)>(lookup(t.fn));
      AICC_RT_CHECK(task.fn && sig != signature.end(), "'{}' lacks the task function {}", so, t.fn);
      AICC_RT_CHECK(sig->second.size() == task.params.size(),
                    "{}: task {} ({}) has {} bindings; {} takes {}", planFile, i, task.node,
                    task.params.size(), t.fn, sig->second.size());
      for (size_t k = 0; k < task.params.size(); ++k) {
        const ParamSig& want = sig->second[k];
        AICC_RT_CHECK(task.params[k].bytes == want.bytes || task.params[k].region == Region::Heap,
                      "{}: task {} ({}): binding {} has {} bytes; {} takes {}", planFile, i,
                      task.node, k, task.params[k].bytes, t.fn, want.bytes);
        AICC_RT_CHECK(alignedFor(task.params[k], want.elem),
                      "{}: task {} ({}): binding {} at offset {} is not aligned for {}-byte "
                      "elements",
                      planFile, i, task.node, k, task.params[k].offset, want.elem);
      }
    }
    if (t.kind == Kind::Fallback && provider) {
      task.fallback = provider(t.fn, task.node, task.params, plan.symbols, planFile);
    } else if (t.kind == Kind::Fallback) { // an error if a run reaches it (a variant may run)
      task.kind = Kind::Fail;
      task.node = format("{}: task {} ({}) runs a node that has no lowering through the reference "
                         "interpreter, which this runtime (libaicc_rt) does not include; run the "
                         "folder with `aicc run`",
                         planFile, i, task.node);
    }
    plan.tasks.push_back(std::move(task));
  }
  return plan;
}

} // namespace

// The raw interface takes the instance's lock without waiting: a second thread gets an error.
#define AICC_RAW_LOCK(what)                                                                        \
  std::unique_lock<std::mutex> lock(impl_->mu, std::try_to_lock);                                  \
  AICC_RT_CHECK(lock.owns_lock(),                                                                  \
                "{}: the model is in use by another thread (use one instance per "                 \
                "thread, or the checked run that waits)",                                          \
                what)

void Artifact::setInput(size_t i, const void* data, int64_t bytes,
                        const std::vector<int64_t>* dims) {
  AICC_RAW_LOCK("setting an input");
  impl_->setInput(inputs_, i, data, bytes, dims);
}

const std::vector<Symbol>& Artifact::symbols() const { return impl_->plan.symbols; }

const std::vector<Symbol>& Artifact::outputSymbols() const {
  return impl_->last(*this).impl_->plan.symbols;
}

void Artifact::run() {
  AICC_RAW_LOCK("run");
  impl_->run(inputs_);
}

void Artifact::runWaiting(const std::vector<const void*>& data, const std::vector<int64_t>& bytes,
                          const std::function<void()>& whileHeld,
                          const std::vector<std::shared_ptr<void>>& dynamic,
                          const std::vector<std::vector<int64_t>>* dims) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  AICC_RT_CHECK(data.size() == inputs_.size() && bytes.size() == inputs_.size(),
                "the model takes {} inputs, got {}", inputs_.size(), data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    if (inputs_[i].dynamic.empty()) {
      impl_->setInput(inputs_, i, data[i], bytes[i], dims ? &(*dims)[i] : nullptr);
      continue;
    }
    AICC_RT_CHECK(i < dynamic.size() && dynamic[i], "input '{}' ({}) was not given",
                  inputs_[i].name, inputs_[i].dynamic);
    impl_->dynamicInputs[i] = dynamic[i];
    impl_->inputs[i] = impl_->dynamicInputs[i].get();
  }
  impl_->run(inputs_);
  if (whileHeld) whileHeld();
}

void Artifact::Impl::setInput(const std::vector<TensorDesc>& decl, size_t i, const void* data,
                              int64_t bytes, const std::vector<int64_t>* dims) {
  AICC_RT_CHECK(i < decl.size(), "input index {} out of range: the model has {} inputs", i,
                decl.size());
  AICC_RT_CHECK(decl[i].dynamic.empty(),
                "input '{}' is {}: not a tensor of static shape, which only `aicc run` and the "
                "Python package pass",
                decl[i].name, decl[i].dynamic);
  AICC_RT_CHECK(data, "input '{}': null data", decl[i].name);
  const TensorDesc& d = decl[i];
  if (d.syms.empty() && !dims) {
    AICC_RT_CHECK(bytes == d.bytes(), "input '{}': expected {} bytes ({}{}), got {}", d.name,
                  d.bytes(), dtypeName(d.dtype), dimsText(d.dims), bytes);
    inputs[i] = data;
    return;
  }
  // The dims are checked in a scratch vector swapped in on success (no allocation once warm; a
  // refused input leaves the previous one set); messages are formatted only on failure.
  std::vector<int64_t>& have = scratchDims;
  if (dims) {
    have.assign(dims->begin(), dims->end());
    AICC_RT_CHECK(have.size() == d.dims.size(),
                  "input '{}' has rank {}, the model takes rank {} {}", d.name, have.size(),
                  d.dims.size(), declText(d, plan.symbols));
  } else { // the one symbolic dim from the size
    int64_t rest = int64_t(dtypeSize(d.dtype)), at = -1, count = 0;
    for (size_t k = 0; k < d.dims.size(); ++k) {
      if (d.symbolAt(k) < 0)
        rest *= d.dims[k];
      else
        at = int64_t(k), ++count;
    }
    AICC_RT_CHECK(count == 1, "input '{}' is {}: give its dims (aicc_model_set_input_dims)", d.name,
                  declText(d, plan.symbols));
    AICC_RT_CHECK(rest > 0 && bytes % rest == 0,
                  "input '{}' is {}: {} bytes is not a whole number of {}-byte rows", d.name,
                  declText(d, plan.symbols), bytes, rest);
    have.assign(d.dims.begin(), d.dims.end());
    have[size_t(at)] = bytes / rest;
  }
  int64_t n = int64_t(dtypeSize(d.dtype));
  for (size_t k = 0; k < have.size(); ++k) {
    AICC_RT_CHECK(have[k] >= 0 && (d.symbolAt(k) >= 0 || have[k] == d.dims[k]),
                  "input '{}': dim {} is {}, the model takes {} {}", d.name, k, have[k], d.dims[k],
                  declText(d, plan.symbols));
    AICC_RT_CHECK(have[k] <= (int64_t(1) << 40), "input '{}': dim {} is {}: absurd", d.name, k,
                  have[k]);
    n *= have[k];
  }
  AICC_RT_CHECK(bytes == n, "input '{}': dims {} take {} bytes, got {}", d.name, dimsText(have), n,
                bytes);
  std::swap(inputDims[i], have);
  inputs[i] = data;
}

namespace {

// Where the inputs' dims do not fit a set of declarations (bindSymbols).
struct DimMismatch {
  enum What { Static, Range, Step, Twice } what;
  size_t input = 0, dim = 0;
  int64_t value = 0;
};

// The symbol values that inputs of dims `dims` (one vector per input; empty: its declared dims,
// an input of static shape) give under declarations `own` with symbols `symbols`: each static dim
// equal, each symbol's dims within its range, a multiple of its step and one value for all; into
// `values` (sized to the symbols). The first dim that does not fit, if any. The one core of the
// run's input checks (resolveSymbols, with the messages) and the choice among variants
// (runVariant): nothing allocated.
std::optional<DimMismatch> bindSymbols(const std::vector<TensorDesc>& own,
                                       const std::vector<Symbol>& symbols,
                                       const std::vector<std::vector<int64_t>>& dims,
                                       std::vector<int64_t>& values) {
  std::fill(values.begin(), values.end(), -1);
  for (size_t i = 0; i < own.size(); ++i)
    for (size_t k = 0; k < own[i].dims.size(); ++k) {
      const int64_t x = dims[i].empty() ? own[i].dims[k] : dims[i][k];
      const int32_t j = own[i].symbolAt(k);
      if (j < 0) {
        if (x != own[i].dims[k]) return DimMismatch{DimMismatch::Static, i, k, x};
        continue;
      }
      const Symbol& sym = symbols[size_t(j)];
      if (x < sym.lo || x > sym.hi) return DimMismatch{DimMismatch::Range, i, k, x};
      if (x % sym.step != 0) return DimMismatch{DimMismatch::Step, i, k, x};
      if (values[size_t(j)] >= 0 && values[size_t(j)] != x)
        return DimMismatch{DimMismatch::Twice, i, k, x};
      values[size_t(j)] = x;
    }
  return std::nullopt;
}

} // namespace

// Each symbol's value from the inputs that have it (bindSymbols), or the first that does not fit
// as a one-line error naming the input and the dim.
void Artifact::Impl::resolveSymbols(const std::vector<TensorDesc>& decl) {
  if (const auto bad = bindSymbols(decl, plan.symbols, inputDims, values)) {
    const TensorDesc& d = decl[bad->input];
    const int32_t j = d.symbolAt(bad->dim);
    const Symbol& sym = plan.symbols[size_t(std::max(j, 0))];
    const int64_t v = bad->value;
    AICC_RT_CHECK(bad->what != DimMismatch::Static, "input '{}': dim {} is {}, the model takes {}",
                  d.name, bad->dim, v, d.dims[bad->dim]);
    AICC_RT_CHECK(bad->what != DimMismatch::Range,
                  "input '{}': dim {} ({}) is {}, outside the range {}..{} it was compiled for "
                  "(compile with --dim {}={}..{})",
                  d.name, bad->dim, sym.name, v, sym.lo, sym.hi, sym.name, std::min(sym.lo, v),
                  std::max(sym.hi, v));
    AICC_RT_CHECK(bad->what != DimMismatch::Step,
                  "input '{}': dim {} ({}) is {}, not a multiple of {} (the model's shapes agree "
                  "only for multiples of {}: pad or resize the input)",
                  d.name, bad->dim, sym.name, v, sym.step, sym.step);
    // Twice: the first input that gives the symbol, and its value (for the message only).
    std::string first;
    int64_t was = -1;
    for (size_t i = 0; i < decl.size() && first.empty(); ++i)
      for (size_t k = 0; k < decl[i].syms.size() && first.empty(); ++k)
        if (decl[i].syms[k] == j) first = decl[i].name, was = inputDims[i][k];
    AICC_RT_CHECK(false, "input '{}': dim {} ({}) is {}, but input '{}' gives {} = {}", d.name,
                  bad->dim, sym.name, v, first, sym.name, was);
  }
  std::memcpy(symbolBlock.get(), values.data(), 8 * values.size());
}

// The first variant whose declarations take the run's dims (bindSymbols into its own symbol
// values, as scratch) runs, given the inputs; none: false.
bool Artifact::Impl::runVariant(const std::vector<TensorDesc>& decl) {
  for (const auto& v : variants) {
    if (bindSymbols(v->inputs_, v->impl_->plan.symbols, inputDims, v->impl_->values)) continue;
    for (size_t i = 0; i < decl.size(); ++i) {
      const bool known = !inputDims[i].empty() || decl[i].dims.empty();
      int64_t bytes = int64_t(dtypeSize(decl[i].dtype));
      for (int64_t x : known ? inputDims[i] : decl[i].dims) bytes *= x;
      v->impl_->setInput(v->inputs_, i, inputs[i], bytes, known ? &inputDims[i] : nullptr);
    }
    v->impl_->run(v->inputs_);
    ran = v.get();
    return true;
  }
  return false;
}

void Artifact::Impl::run(const std::vector<TensorDesc>& decl) {
  for (size_t i = 0; i < decl.size(); ++i)
    AICC_RT_CHECK(inputs[i], "input '{}' was not set", decl[i].name);
  if (!values.empty()) resolveSymbols(decl);
  ran = nullptr;
  if (!variants.empty() && runVariant(decl)) return;
  runTasks(0, plan.tasks.size());
  // The data symbols the tasks wrote (rt::Symbol::data), for the outputs' dims.
  for (size_t j = 0; j < values.size(); ++j)
    if (plan.symbols[j].data) std::memcpy(&values[j], symbolBlock.get() + 8 * j, 8);
}

void Artifact::Impl::runTasks(size_t from, size_t to) {
  using Clock = std::chrono::steady_clock;
  for (size_t ti = from; ti < to;) {
    const size_t index = ti;
    const Plan::Task& t = plan.tasks[ti++];
    trace::TaskScope traced(t.node, "task");
    struct Timed { // accumulates the task's time on every exit path
      TaskTime* time;
      Clock::time_point start;
      ~Timed() {
        if (!time) return;
        time->seconds += std::chrono::duration<double>(Clock::now() - start).count();
        ++time->calls;
      }
    } timed{profiling && t.kind != Kind::Repeat ? &times[index] : nullptr, // (a loop: its body's
            profiling ? Clock::now() : Clock::time_point{}};               // tasks count)
    switch (t.kind) {
    case Kind::Call: {
      ptrs.resize(t.params.size());
      for (size_t i = 0; i < t.params.size(); ++i) ptrs[i] = at(t.params[i]);
      aicc_rt_clear_last_error();
      const int32_t rc = t.fn(ptrs.data());
      AICC_RT_CHECK(rc == 0, "{}: {}", t.node,
                    rc == 1 ? "integer division by zero" : aicc_rt_last_error());
      break;
    }
    case Kind::Copy:
      if (bindsDynamic(plan, t.params[0])) // (a dynamic value shared: an Identity of a sequence)
        *reinterpret_cast<std::shared_ptr<void>*>(at(t.params[1])) =
            *reinterpret_cast<const std::shared_ptr<void>*>(at(t.params[0]));
      else
        std::memmove(at(t.params[1]), at(t.params[0]), size_t(t.params[0].bytes));
      break;
    case Kind::JumpIfZero:
      if (*at(t.params[0]) == std::byte{0}) ti = t.target;
      break;
    case Kind::Jump:
      ti = t.target;
      break;
    case Kind::Fail:
      raise(t.node);
    case Kind::Fallback:
      bound.resize(t.params.size());
      for (size_t i = 0; i < t.params.size(); ++i) // (a heap: the buffer, which it may size)
        bound[i] = t.params[i].region == Region::Heap
                       ? reinterpret_cast<std::byte*>(&heaps[size_t(t.params[i].offset)])
                       : at(t.params[i]);
      t.fallback(bound);
      break;
    case Kind::Seq: { // (a result in a growable buffer: the buffer, which the task sizes)
      const bool heap = t.params[0].region == Region::Heap;
      bound.resize(t.params.size());
      for (size_t i = 0; i < t.params.size(); ++i)
        bound[i] = i == 0 && heap ? reinterpret_cast<std::byte*>(&heaps[size_t(t.params[0].offset)])
                                  : at(t.params[i]);
      runSeqTask(t.seq, t.node, bound, reinterpret_cast<int64_t*>(symbolBlock.get()), plan, heap);
      break;
    }
    case Kind::Repeat: { // (checked at load: count, index[, condition][, iterations])
      const RepeatExtras x = repeatExtras(t.params);
      int64_t count, i = 0;
      std::memcpy(&count, at(t.params[0]), 8);
      for (; i < count && (!x.cond || *at(*x.cond) != std::byte{0}); ++i) {
        AICC_RT_CHECK(i < t.limit, "{}: more than the {} iterations the plan holds", t.node,
                      t.limit);
        std::memcpy(at(t.params[1]), &i, 8);
        runTasks(index + 1, t.target);
      }
      if (x.iterations) std::memcpy(at(*x.iterations), &i, 8);
      ti = t.target;
      break;
    }
    }
    if (afterTask) afterTask(index);
  }
}

const std::vector<TensorDesc>& Artifact::outputs() const { return impl_->last(*this).outputs_; }

const void* Artifact::output(size_t i) const {
  AICC_RT_CHECK(i < outputs_.size(), "output index {} out of range: the model has {} outputs", i,
                outputs_.size());
  const Artifact& a = impl_->last(*this);
  return a.impl_->at(a.impl_->plan.outputBindings[i]);
}

std::vector<int64_t> Artifact::outputDims(size_t i) const {
  AICC_RT_CHECK(i < outputs_.size(), "output index {} out of range: the model has {} outputs", i,
                outputs_.size());
  const Artifact& a = impl_->last(*this);
  return a.outputs_[i].dimsFor(a.impl_->values);
}

int64_t Artifact::outputBytes(size_t i) const {
  AICC_RT_CHECK(i < outputs_.size(), "output index {} out of range: the model has {} outputs", i,
                outputs_.size());
  const Artifact& a = impl_->last(*this);
  return a.outputs_[i].bytes(a.impl_->values);
}

bool Artifact::dynamicOutput(size_t i, DynamicTensor& out) const {
  if (i >= outputs().size() || outputs()[i].dynamic.empty() || seqTypeOf(outputs()[i].dynamic))
    return false;
  const auto& value = *static_cast<const std::shared_ptr<void>*>(output(i));
  const DynamicTensorView view = dynamicTensorView.load();
  return value && view && view(value, out);
}

void Artifact::setSequenceInput(size_t i, std::shared_ptr<const Sequence> value) {
  AICC_RAW_LOCK("setting an input");
  AICC_RT_CHECK(i < inputs_.size(), "input index {} out of range: the model has {} inputs", i,
                inputs_.size());
  const auto type = seqTypeOf(inputs_[i].dynamic);
  AICC_RT_CHECK(type, "input '{}' is not a sequence or an optional", inputs_[i].name);
  AICC_RT_CHECK(value, "input '{}': no value", inputs_[i].name);
  checkSequence(*value, *type, format("input '{}'", inputs_[i].name));
  impl_->dynamicInputs[i] = std::const_pointer_cast<Sequence>(std::move(value));
  impl_->inputs[i] = impl_->dynamicInputs[i].get();
}

std::shared_ptr<const Sequence> Artifact::sequenceOutput(size_t i) const {
  if (i >= outputs().size() || !seqTypeOf(outputs()[i].dynamic)) return nullptr;
  return std::static_pointer_cast<const Sequence>(
      *static_cast<const std::shared_ptr<void>*>(output(i)));
}

void Artifact::setProfiling(bool on) { impl_->profiling = on; }

const std::vector<TaskTime>& Artifact::taskTimes() const { return impl_->times; }

void Artifact::setAfterTask(std::function<void(size_t)> f) { impl_->afterTask = std::move(f); }

void* Artifact::address(const Binding& b) const { return impl_->at(b); }

} // namespace aicc::rt
