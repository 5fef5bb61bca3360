#include "runtime/artifact.h"

#include "backend/memory_plan.h"
#include "backend/target.h"
#include "codegen/llvm/emit_llvm.h"
#include "interp/interpreter.h"
#include "ir/dtype.h"
#include "ir/parser.h"
#include "passes/dim_steps.h"
#include "rt/hash.h"
#include "rt/sequence.h"
#include "runtime/static_link.h"
#include "support/file.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace aicc::runtime {

namespace fs = std::filesystem;

namespace {

// Names in the plan file: percent-encoded so they hold no spaces or newlines.
std::string enc(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (c <= ' ' || c == '%' || c >= 0x7f) o += fmt::format("%{:02X}", int(c));
    else o += char(c);
  }
  return o.empty() ? "%" : o;
}
const char* regionName(Region r) {
  switch (r) {
  case Region::Arena: return "A";
  case Region::Weights: return "W";
  case Region::Input: return "I";
  case Region::Scratch: return "S";
  case Region::Dynamic:
    return "D";
  case Region::Symbols:
    return "Z";
  case Region::Heap:
    return "H";
  }
  return "?";
}

// Sizes, and symbols by name (percent-encoded, commas too).
std::string dimsText(const TensorDesc& t, const std::vector<rt::Symbol>& symbols) {
  std::string s;
  for (size_t i = 0; i < t.dims.size(); ++i) {
    if (i < t.exprs.size() && !t.exprs[i].empty()) { // a derived dim: "=" and its program
      std::string prog;
      const auto& p = t.exprs[i];
      for (size_t k = 0; k + 1 < p.size(); k += 2)
        prog += (k ? ":" : "=") + (p[k] == rt::kDimConst    ? std::to_string(p[k + 1])
                                   : p[k] == rt::kDimSymbol ? "$" + std::to_string(p[k + 1])
                                   : p[k] == rt::kDimDiv    ? "/" + std::to_string(p[k + 1])
                                   : p[k] == rt::kDimAdd    ? std::string("+")
                                                            : std::string("*"));
      s += (i ? "," : "") + enc(prog);
      continue;
    }
    std::string name = t.symbolAt(i) < 0 ? "" : enc(symbols[size_t(t.symbolAt(i))].name);
    for (size_t at; (at = name.find(',')) != std::string::npos;) name.replace(at, 1, "%2C");
    s += (i ? "," : "") + (name.empty() ? std::to_string(t.dims[i]) : name);
  }
  return s.empty() ? "-" : s;
}

} // namespace

namespace {

// The plan file's text; `library` is model.so's "<bytes> <hash>" ("0 -" where the plan is linked
// into the library itself).
std::string planText(const ArtifactSpec& spec, const Target& target, const std::string& library) {
  std::ostringstream p;
  p << rt::kPlanHeader << "\n";
  // Sizes and content hashes of the two files the plan goes with: checked before either is used.
  p << "arena " << spec.arenaBytes << "\nscratch " << spec.scratchBytes << "\nweights "
    << spec.weights.size() << " " << hashHex(spec.weights.data(), spec.weights.size())
    << "\nlibrary " << library << "\n";
  // The ISA features the code was compiled for: the loader refuses a CPU without them.
  p << "requires " << enc(target.name);
  // The architecture the code is for ("arch=..."; loaders of format 3 before it refuse such a
  // plan as needing an unknown feature, which is right: they cannot check it).
  p << " arch=" << (target.triple.empty() ? hostArch() : target.arch);
  for (uint32_t i = 0; i < static_cast<uint32_t>(CpuFeature::Count); ++i)
    if (target.has(static_cast<CpuFeature>(i))) p << " " << cpuFeatureName(static_cast<CpuFeature>(i));
  p << "\n";
  // A dynamic input or output: "dynamic" and its IR type (rt/artifact.h).
  auto type = [&](const TensorDesc& t) {
    return t.dynamic.empty() ? std::string(dtypeName(t.dtype)) + " " + dimsText(t, spec.symbols)
                             : "dynamic " + enc(t.dynamic);
  };
  // Symbolic dims of the inputs (before the inputs that name them): the range a run may give.
  for (const rt::Symbol& sym : spec.symbols)
    p << "symbol " << enc(sym.name) << " " << sym.lo << " " << sym.hi
      << (sym.data       ? std::string(" data")
          : sym.step > 1 ? " " + std::to_string(sym.step)
                         : "")
      << "\n";
  for (const TensorDesc& t : spec.inputs) p << "input " << enc(t.name) << " " << type(t) << "\n";
  // Values sized at run time: growable buffer k, its dims over the symbols.
  for (const TensorDesc& t : spec.heaps) p << "heap " << enc(t.name) << " " << type(t) << "\n";
  for (const std::string& v : spec.variants) p << "variant " << enc(v) << "\n";
  for (const ArtifactBody& b : spec.bodies) p << "body " << enc(b.folder) << "\n";
  for (const auto& [t, b] : spec.outputs)
    p << "output " << enc(t.name) << " " << type(t) << " " << regionName(b.region) << ":"
      << b.offset << ":" << b.bytes << "\n";
  static const char* kKinds[] = {"task", "copy",     "jumpz",  "jump",
                                 "fail", "fallback", "repeat", "seq"};
  for (const ArtifactTask& t : spec.tasks) {
    p << kKinds[int(t.kind)];
    if (t.kind == ArtifactTask::Kind::Seq) { // OP NODE ATTRS, then BINDING DTYPE DIMS per param
      p << " " << rt::seqOpName(t.seq.op) << " " << enc(t.node) << " ";
      for (size_t i = 0; i < t.seq.attrs.size(); ++i) p << (i ? "," : "") << t.seq.attrs[i];
      p << (t.seq.attrs.empty() ? "-" : "");
      for (size_t i = 0; i < t.params.size(); ++i)
        p << " " << regionName(t.params[i].region) << ":" << t.params[i].offset << ":"
          << t.params[i].bytes << " " << type(t.seq.descs[i]);
      p << "\n";
      continue;
    }
    if (t.kind == ArtifactTask::Kind::Call) p << " " << t.fn;
    if (t.kind == ArtifactTask::Kind::Fallback) p << " " << enc(t.fn);
    p << " " << enc(t.node);
    for (const Binding& b : t.params)
      p << " " << regionName(b.region) << ":" << b.offset << ":" << b.bytes;
    if (t.kind == ArtifactTask::Kind::JumpIfZero || t.kind == ArtifactTask::Kind::Jump ||
        t.kind == ArtifactTask::Kind::Repeat)
      p << " @" << t.target;
    if (t.kind == ArtifactTask::Kind::Repeat) p << " #" << t.limit;
    p << "\n";
  }
  return p.str();
}

} // namespace

WrittenArtifact writeArtifact(const ArtifactSpec& spec, const std::string& dir,
                              const Target& target, const WriteOptions& o) {
  installInterpreterFallback(); // the C API runs what this writes, fallback tasks included
  AICC_CHECK(!o.embedWeights || o.staticRuntime,
             "embedding the weights needs the self-contained form (--static-runtime)");
  AICC_CHECK(spec.bodies.empty() || !o.staticRuntime,
             "SequenceMap and Loop bodies are artifacts of their own: the folder form only (not "
             "--static-runtime)");
  WrittenArtifact w;
  fs::create_directories(dir);
  for (const ArtifactBody& b : spec.bodies) // (their folders inside this one)
    writeArtifact(b.spec, (fs::path(dir) / b.folder).string(), target, o);
  auto t0 = std::chrono::steady_clock::now();
  std::string obj = codegen::emitObject(spec.code, target, o.aot);
  auto t1 = std::chrono::steady_clock::now();
  w.codegenSeconds = std::chrono::duration<double>(t1 - t0).count();
  w.objectBytes = int64_t(obj.size());
  w.weightBytes = int64_t(spec.weights.size());
  fs::path d(dir);
  if (o.staticRuntime) {
    StaticLinkInput in;
    in.dir = dir;
    in.object = std::move(obj);
    in.plan = planText(spec, target, "0 -");
    in.weights = &spec.weights;
    in.embedWeights = o.embedWeights;
    for (const ArtifactTask& t : spec.tasks)
      if (t.kind == ArtifactTask::Kind::Call &&
          std::find(in.taskFns.begin(), in.taskFns.end(), t.fn) == in.taskFns.end())
        in.taskFns.push_back(t.fn);
    // Files of the other form that would shadow or contradict this one.
    for (const char* stale : {"model.plan", "model.o"}) fs::remove(d / stale);
    if (o.embedWeights) fs::remove(d / "model.weights");
    StaticLinkOutput out = linkStaticArtifact(in, target);
    w.sharedBytes = out.sharedBytes;
    w.archiveBytes = out.archiveBytes;
    w.linkSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    return w;
  }
  for (const char* stale : {"model.a", "aicc_runtime.h"}) fs::remove(d / stale);
  writeFile((d / "model.o").string(), obj);
  // The host's C compiler driver links; a cross target's is Debian's <triple>-gcc
  // (gcc-aarch64-linux-gnu, gcc-riscv64-linux-gnu).
  const std::string cc = target.triple.empty() ? "cc" : target.triple + "-gcc";
  std::string cmd = fmt::format("{} -shared -o '{}' '{}' -lm", cc, (d / "model.so").string(),
                                (d / "model.o").string());
  int rc = std::system(cmd.c_str());
  AICC_CHECK(rc == 0,
             "linking model.so failed (`{}` exited with {}); the C compiler driver `{}` "
             "must be on PATH{}; model.o was written",
             cmd, rc, cc,
             target.triple.empty() ? "" : fmt::format(" (Debian: gcc-{})", target.triple));
  w.linkSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  const std::string lib = readFile((d / "model.so").string());
  w.sharedBytes = int64_t(lib.size());
  writeFile(
      (d / "model.weights").string(),
      std::string_view(reinterpret_cast<const char*>(spec.weights.data()), spec.weights.size()));
  const std::string text =
      planText(spec, target, fmt::format("{} {}", lib.size(), hashHex(lib.data(), lib.size())));
  writeFile((d / "model.plan").string(), text);
  return w;
}

// ---- loading: the runtime's executor, with the interpreter for fallback tasks ----

namespace {
// r with every tensor a copy of its own.
RValue owned(RValue r) {
  if (r.kind == RValue::Kind::Tensor) r.tensor = r.tensor.clone();
  for (Tensor& t : r.seq) t = t.clone();
  for (RValue& m : r.maps) m = owned(std::move(m));
  return r;
}
} // namespace

// The runtime's sequences and optionals (rt/sequence.h) and the interpreter's values: a dynamic
// value whose IR type is one of numeric tensors is an rt::Sequence wherever the runtime holds it
// (rt/artifact.h); these convert at the interpreter's boundary (fallback tasks, runChecked).
std::shared_ptr<void> toRuntimeSequence(const RValue& r, const Type& t, const std::string& what) {
  const rt::SeqType type = *rt::seqTypeOf(formatType(t));
  auto s = std::make_shared<rt::Sequence>();
  s->kind = type.kind;
  s->dtype = type.dtype;
  s->none = r.kind == RValue::Kind::None;
  AICC_CHECK(s->none
                 ? type.kind != rt::SeqKind::Sequence
                 : (r.kind == RValue::Kind::Sequence) == (type.kind != rt::SeqKind::OptionalTensor),
             "{}: expected {}", what, formatType(t));
  for (const Tensor& x : r.kind == RValue::Kind::Tensor ? std::vector<Tensor>{r.tensor} : r.seq) {
    AICC_CHECK(x.dtype() == type.dtype, "{}: expected element type {}, got {}", what,
               dtypeName(type.dtype), dtypeName(x.dtype()));
    s->items.push_back(rt::makeItem(x.dtype(), x.shape(), x.raw(), what));
  }
  rt::checkSequence(*s, type, what);
  return s;
}

// Views of s's tensors (valid while s is).
RValue fromRuntimeSequence(const rt::Sequence& s) {
  if (s.none) return RValue::none();
  std::vector<Tensor> items;
  for (const rt::SeqItem& x : s.items)
    items.push_back(Tensor::view(s.dtype, x.dims, nullptr, x.data.get()));
  if (s.kind == rt::SeqKind::OptionalTensor) return RValue::of(items.at(0));
  return RValue::ofSeq(std::move(items));
}

std::map<std::string, int64_t> symbolMap(const std::vector<rt::Symbol>& symbols,
                                         const std::function<int64_t(size_t)>& value) {
  std::map<std::string, int64_t> at;
  for (size_t k = 0; k < symbols.size(); ++k)
    setSymbolValue(at, symbols[k].name, symbols[k].step, value(k));
  return at;
}

// A fallback task's one-node model, checked against its bindings (inputs, then results, each of
// its size at the symbols' bounds and aligned for its elements; then the shape block when its
// types have symbols), and the function that runs it on them: at the run's sizes, writing the
// data symbols (rt::Symbol::data) its results have.
rt::FallbackRun interpreterFallback(const std::string& text, const std::string& node,
                                    const std::vector<Binding>& params,
                                    const std::vector<rt::Symbol>& symbols,
                                    const std::string& file) {
  std::shared_ptr<Model> m;
  try {
    m = std::make_shared<Model>(parseModel(text));
  } catch (const Error& e) {
    fail("{}: fallback task for {}: {}", file, node, e.what());
  }
  const Graph& g = *m->graph;
  const bool symbolic = !params.empty() && params.back().region == Region::Symbols;
  AICC_CHECK(g.nodes.size() == 1 &&
                 g.inputs.size() + g.outputs.size() + (symbolic ? 1 : 0) == params.size(),
             "{}: fallback task for {} does not match its bindings", file, node);
  std::vector<const Value*> vals(g.inputs.begin(), g.inputs.end());
  vals.insert(vals.end(), g.outputs.begin(), g.outputs.end());
  const auto hi = symbolMap(symbols, [&](size_t k) { return symbols[k].hi; });
  std::vector<bool> dynamic; // bound to a dynamic slot or input (rt/artifact.h)
  std::vector<bool> seqs;    // of those, the runtime's sequences (rt/sequence.h)
  std::vector<bool> heap;    // bound to a growable buffer (rt::HeapBuffer): sized at run time
  // Per value: its dims as expressions of the symbols (static ones constant), when symbolic.
  std::vector<std::vector<DimExpr>> runDims(vals.size());
  for (size_t i = 0; i < vals.size(); ++i) {
    const Type& t = vals[i]->type;
    Type atHi = t; // (the type the builder bound it by: its symbols at their bounds)
    if (t.isTensor() && t.shape) atHi.shape = withSymbols(*t.shape, hi);
    heap.push_back(params[i].region == Region::Heap);
    dynamic.push_back(!heap.back() && hasDynamicSize(atHi));
    seqs.push_back(dynamic.back() && isNumericSequence(t));
    if (heap.back()) { // (its dims: the symbols' values when the task runs, or those it writes)
      AICC_CHECK(t.isTensor() && t.shape &&
                     std::all_of(t.shape->begin(), t.shape->end(),
                                 [](const Dim& d) { return dimExpr(d).has_value(); }),
                 "{}: fallback task for {}: '{}' ({}) is not a tensor of symbolic dims", file, node,
                 vals[i]->name, formatType(t));
      for (const Dim& x : *t.shape) runDims[i].push_back(*dimExpr(x));
      continue;
    }
    if (dynamic.back()) {
      AICC_CHECK(params[i].bytes == 0 &&
                     (params[i].region == Region::Dynamic || params[i].region == Region::Input),
                 "{}: fallback task for {}: '{}' ({}) is not bound to a dynamic value", file, node,
                 vals[i]->name, formatType(t));
      continue;
    }
    int64_t bytes = -1;
    if (t.isTensor() && atHi.shape)
      if (auto d = toDims(*atHi.shape)) {
        bytes = int64_t(dtypeSize(t.dtype));
        for (int64_t x : *d) bytes *= x;
        if (!toDims(*t.shape))
          for (const Dim& x : *t.shape) runDims[i].push_back(*dimExpr(x));
      }
    AICC_CHECK(bytes == params[i].bytes,
               "{}: fallback task for {}: '{}' is {} but bound to {} bytes", file, node,
               vals[i]->name, formatType(t), params[i].bytes);
    const int64_t elem = std::max<int64_t>(1, int64_t(dtypeSize(t.dtype)));
    AICC_CHECK(params[i].region == Region::Input || params[i].offset % elem == 0,
               "{}: fallback task for {}: '{}' is bound at offset {}, not aligned for its elements",
               file, node, vals[i]->name, params[i].offset);
  }
  return [m, node, dynamic, seqs, heap, runDims, symbols,
          symbolic](const std::vector<std::byte*>& bound) {
    const Graph& g = *m->graph;
    std::byte* block = symbolic ? bound.back() : nullptr;
    std::map<std::string, int64_t> at; // the run's symbols, data symbols as far as written
    auto valueAt = [&](size_t i) {
      return i < g.inputs.size() ? g.inputs[i] : g.outputs[i - g.inputs.size()];
    };
    auto dimsOf = [&](size_t i) {
      if (runDims[i].empty()) return *toDims(*valueAt(i)->type.shape);
      if (at.empty())
        at = symbolMap(symbols, [&](size_t k) {
          int64_t v;
          std::memcpy(&v, block + 8 * k, 8);
          return v;
        });
      Dims d;
      for (const DimExpr& e : runDims[i]) {
        const auto v = e.evaluate(at);
        AICC_CHECK(v && *v >= 0, "{}: '{}' has dim {} = {} in this run", node, valueAt(i)->name,
                   e.str(), v ? fmt::to_string(*v) : std::string("unknown"));
        d.push_back(*v);
      }
      return d;
    };
    std::vector<RValue> in;
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      if (dynamic[i]) {
        const auto& slot = *reinterpret_cast<const std::shared_ptr<void>*>(bound[i]);
        AICC_CHECK(slot, "{}: '{}' has no value (not computed in this run)", node,
                   g.inputs[i]->name);
        in.push_back(seqs[i] ? fromRuntimeSequence(*static_cast<const rt::Sequence*>(slot.get()))
                             : *static_cast<const RValue*>(slot.get()));
        continue;
      }
      std::byte* data = heap[i] ? reinterpret_cast<rt::HeapBuffer*>(bound[i])->data() : bound[i];
      in.push_back(RValue::of(Tensor::view(g.inputs[i]->type.dtype, dimsOf(i), nullptr, data)));
    }
    std::vector<RValue> out;
    try {
      out = interpret(g, in);
    } catch (const Error& e) { // (the interpreter's message names the node already)
      const std::string msg = e.what();
      if (msg.rfind(node, 0) == 0) throw;
      fail("{}: {}", node, msg);
    }
    for (size_t k = 0; k < out.size(); ++k) {
      const Value* v = g.outputs[k];
      const size_t i = g.inputs.size() + k;
      if (dynamic[i]) { // owned: a result may view a buffer the plan reuses
        *reinterpret_cast<std::shared_ptr<void>*>(bound[i]) =
            seqs[i] ? toRuntimeSequence(out[k], v->type, node + ": '" + v->name + "'")
                    : std::make_shared<RValue>(owned(std::move(out[k])));
        continue;
      }
      Tensor& t = out[k].tensor;
      AICC_CHECK(out[k].kind == RValue::Kind::Tensor && t.dtype() == v->type.dtype &&
                     t.shape().size() == v->type.shape->size(),
                 "{}: result {} is not the planned {}", node, k, formatType(v->type));
      // A data symbol first met here takes the result's dim (within the plan's bound).
      if (!runDims[i].empty())
        for (size_t d = 0; d < t.shape().size(); ++d) {
          const Dim& x = (*v->type.shape)[d];
          for (size_t s = 0; s < symbols.size(); ++s) {
            if (!symbols[s].data || x.derived || x.symbol != symbols[s].name) continue;
            int64_t have;
            std::memcpy(&have, block + 8 * s, 8);
            if (have >= 0) continue; // written earlier in this run (checked below)
            const int64_t n = t.shape()[d];
            AICC_CHECK(n <= symbols[s].hi,
                       "{}: result {} has {} = {}, more than the {} the plan holds", node, k,
                       symbols[s].name, n, symbols[s].hi);
            std::memcpy(block + 8 * s, &n, 8);
            at.clear();
          }
        }
      AICC_CHECK(t.shape() == dimsOf(i), "{}: result {} is {}, not the planned {}", node, k,
                 formatShape(staticShape(t.shape())), formatType(v->type));
      std::byte* to =
          heap[i]
              ? reinterpret_cast<rt::HeapBuffer*>(bound[i])->reserve(int64_t(t.nbytes()), v->name)
              : bound[i];
      if (t.nbytes()) // may alias an input
        std::memmove(to, t.raw(), t.nbytes());
    }
  };
}

namespace {
// The dynamic values the interpreter fallback creates are RValues: a tensor of numbers is read
// through the C API as it is (aicc_model_output of an output of run-time size).
bool tensorView(const std::shared_ptr<void>& v, rt::DynamicTensor& out) {
  const auto* r = static_cast<const RValue*>(v.get());
  if (r->kind != RValue::Kind::Tensor || r->tensor.dtype() == DType::String) return false;
  out.data = r->tensor.raw();
  out.bytes = int64_t(r->tensor.nbytes());
  out.dtype = r->tensor.dtype();
  out.dims = r->tensor.shape();
  return true;
}
} // namespace

void installInterpreterFallback() {
  rt::setFallbackProvider(&interpreterFallback);
  rt::setDynamicTensorView(&tensorView);
}

LoadedArtifact::LoadedArtifact(const std::string& dir)
    : rt::Artifact((installInterpreterFallback(), dir)) {}

std::vector<RValue> LoadedArtifact::run(const std::vector<RValue>& in) {
  return runChecked(*this, in);
}

std::vector<RValue> runChecked(rt::Artifact& art, const std::vector<RValue>& in) {
  const auto& decl = art.inputs();
  AICC_CHECK(in.size() == decl.size(), "the model takes {} inputs, got {}", decl.size(), in.size());
  std::vector<const void*> data;
  std::vector<int64_t> bytes;
  std::vector<std::shared_ptr<void>> dynamic(in.size()); // the values of dynamic inputs
  std::vector<std::vector<int64_t>> dims(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const TensorDesc& d = decl[i];
    if (!d.dynamic.empty()) { // against its declared type, as the interpreter checks inputs
      Graph decl1;
      decl1.addInput(d.name, parseType(d.dynamic));
      checkGraphInputs(decl1, {in[i]});
      dynamic[i] = isNumericSequence(decl1.inputs[0]->type)
                       ? toRuntimeSequence(in[i], decl1.inputs[0]->type, "input '" + d.name + "'")
                       : std::make_shared<RValue>(in[i]);
      data.push_back(nullptr);
      bytes.push_back(0);
      continue;
    }
    AICC_CHECK(in[i].kind == RValue::Kind::Tensor, "input '{}': expected a tensor", d.name);
    const Tensor& t = in[i].tensor;
    AICC_CHECK(t.dtype() == d.dtype, "input '{}': expected element type {}, got {}", d.name,
               dtypeName(d.dtype), dtypeName(t.dtype()));
    AICC_CHECK(t.shape().size() == d.dims.size(), "input '{}': rank {}, the model takes rank {} {}",
               d.name, t.shape().size(), d.dims.size(), formatDims(d.dims));
    for (size_t k = 0; k < d.dims.size(); ++k)
      AICC_CHECK(t.shape()[k] == d.dims[k] || d.symbolAt(k) >= 0,
                 "input '{}': dim {} is {}, the model was compiled for {} {}", d.name, k,
                 t.shape()[k], d.dims[k], formatDims(d.dims));
    dims[i] = t.shape(); // symbols: checked by the runtime
    data.push_back(t.raw());
    bytes.push_back(int64_t(t.nbytes()));
  }
  // Outputs are copied while the instance is held: another thread's run would overwrite them.
  std::vector<RValue> out;
  art.runWaiting(
      data, bytes,
      [&] {
        for (size_t i = 0; i < art.outputs().size(); ++i) {
          if (!art.outputs()[i].dynamic.empty()) {
            const auto& slot = *static_cast<const std::shared_ptr<void>*>(art.output(i));
            AICC_CHECK(slot, "output '{}' was not computed", art.outputs()[i].name);
            const auto seq = art.sequenceOutput(i);
            out.push_back(
                owned(seq ? fromRuntimeSequence(*seq) : *static_cast<const RValue*>(slot.get())));
            continue;
          }
          Tensor t(art.outputs()[i].dtype, art.outputDims(i));
          if (art.outputBytes(i) > 0)
            std::memcpy(t.raw(), art.output(i), size_t(art.outputBytes(i)));
          out.push_back(RValue::of(std::move(t)));
        }
      },
      dynamic, &dims);
  return out;
}

} // namespace aicc::runtime
