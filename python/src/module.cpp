// The extension module aicc._aicc (pybind11): a session over the JIT (compiled once per input
// shape signature), a loaded compiled folder, and compile / optimize / autodiff through the CLI's
// own command code (tools/aicc), so Python and `aicc` give the same results and the same error
// messages. python/aicc/__init__.py builds ONNX Runtime's surface on it (docs/python.md).
//
// Threads: numpy conversions hold the GIL; compiling and running release it. One session or
// artifact serializes its runs with a mutex (one arena), so concurrent run() calls on one object
// are safe and run one after another; separate objects run in parallel.
#include "commands.h"

#include "autodiff/autodiff.h"
#include "frontend/onnx/onnx_exporter.h"
#include "frontend/onnx/onnx_importer.h"
#include "interp/interpreter.h"
#include "passes/dim_steps.h"
#include "rt/parallel.h"
#include "runtime/jit_executor.h"
#include "support/error.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <mutex>

namespace py = pybind11;

namespace aicc::python {
namespace {

// numpy dtype -> aicc DType (strings: numpy 'U'/'S'/'O' arrays). Kind and size are read as Python
// attributes: pybind11 2.10 (Debian 12) reads the descriptor struct with numpy 1's layout, which
// numpy 2 changed (dtype::itemsize() returns garbage there).
DType dtypeOf(const py::dtype& dt, const std::string& what) {
  const char k = std::string(py::str(dt.attr("kind")))[0];
  const auto n = dt.attr("itemsize").cast<int64_t>();
  if (k == 'f' && n == 4) return DType::F32;
  if (k == 'f' && n == 8) return DType::F64;
  if (k == 'f' && n == 2) return DType::F16;
  if (k == 'i' && n == 1) return DType::I8;
  if (k == 'i' && n == 2) return DType::I16;
  if (k == 'i' && n == 4) return DType::I32;
  if (k == 'i' && n == 8) return DType::I64;
  if (k == 'u' && n == 1) return DType::U8;
  if (k == 'u' && n == 2) return DType::U16;
  if (k == 'u' && n == 4) return DType::U32;
  if (k == 'u' && n == 8) return DType::U64;
  if (k == 'b') return DType::Bool;
  if (k == 'c' && n == 8) return DType::C64;
  if (k == 'c' && n == 16) return DType::C128;
  if (k == 'U' || k == 'S' || k == 'O') return DType::String;
  fail("{}: numpy dtype '{}' has no aicc element type", what, std::string(py::str(py::handle(dt))));
}

py::dtype numpyDtype(DType t) {
  switch (t) {
  case DType::F32:
    return py::dtype("float32");
  case DType::F64:
    return py::dtype("float64");
  case DType::F16:
    return py::dtype("float16");
  case DType::I8:
    return py::dtype("int8");
  case DType::I16:
    return py::dtype("int16");
  case DType::I32:
    return py::dtype("int32");
  case DType::I64:
    return py::dtype("int64");
  case DType::U8:
    return py::dtype("uint8");
  case DType::U16:
    return py::dtype("uint16");
  case DType::U32:
    return py::dtype("uint32");
  case DType::U64:
    return py::dtype("uint64");
  case DType::Bool:
    return py::dtype("bool");
  case DType::C64:
    return py::dtype("complex64");
  case DType::C128:
    return py::dtype("complex128");
  default:
    fail("element type {} has no numpy dtype", dtypeName(t));
  }
}

// A numpy array (or anything np.asarray takes) as a tensor; the data is copied.
Tensor toTensor(const py::handle& obj, const std::string& what) {
  py::array a = py::array::ensure(obj, py::array::c_style);
  if (!a) fail("{}: not convertible to a numpy array", what);
  const DType dt = dtypeOf(a.dtype(), what);
  Dims shape(a.shape(), a.shape() + a.ndim());
  Tensor t(dt, shape);
  if (dt == DType::String) {
    py::list flat = a.attr("ravel")().attr("tolist")();
    for (size_t i = 0; i < flat.size(); ++i) {
      py::handle e = flat[i];
      t.strings()[i] = py::isinstance<py::bytes>(e) ? std::string(py::bytes(e.cast<py::bytes>()))
                                                    : std::string(py::str(e));
    }
    return t;
  }
  const auto itemsize = a.attr("itemsize").cast<int64_t>();
  AICC_CHECK(size_t(itemsize) == dtypeSize(dt), "{}: {}-byte elements for {}", what, itemsize,
             dtypeName(dt));
  if (t.nbytes()) std::memcpy(t.raw(), a.data(), t.nbytes());
  return t;
}

py::object toNumpy(const Tensor& t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  if (t.dtype() == DType::String) {
    py::list items;
    for (int64_t i = 0; i < t.numel(); ++i) items.append(py::str(t.strings()[i]));
    py::module_ np = py::module_::import("numpy");
    return np.attr("array")(items, py::dtype("O")).attr("reshape")(shape);
  }
  // Explicit C-order strides (pybind11 2.10 would derive them from dtype::itemsize(), see dtypeOf).
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t step = py::ssize_t(dtypeSize(t.dtype()));
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = step;
    step *= shape[i];
  }
  return py::array(numpyDtype(t.dtype()), shape, strides, t.raw()); // copies
}

// Outputs as Python values: arrays; sequences as lists; maps as dicts (ZipMap: a list of dicts).
py::object toPython(const RValue& v) {
  switch (v.kind) {
  case RValue::Kind::Tensor:
    return toNumpy(v.tensor);
  case RValue::Kind::None:
    return py::none();
  case RValue::Kind::Map: {
    py::dict d;
    py::list keys = toNumpy(v.seq[0]).attr("tolist")(), vals = toNumpy(v.seq[1]).attr("tolist")();
    for (size_t i = 0; i < keys.size(); ++i) d[keys[i]] = vals[i];
    return d;
  }
  case RValue::Kind::Sequence: {
    py::list l;
    if (v.isMapSeq())
      for (const RValue& m : v.maps) l.append(toPython(m));
    else
      for (const Tensor& t : v.seq) l.append(toNumpy(t));
    return l;
  }
  }
  return py::none();
}

std::vector<RValue> toInputs(const py::list& arrays, const std::vector<std::string>& names) {
  AICC_CHECK(arrays.size() == names.size(), "run: {} inputs given, the model has {}", arrays.size(),
             names.size());
  std::vector<RValue> in;
  for (size_t i = 0; i < arrays.size(); ++i)
    in.push_back(RValue::of(toTensor(arrays[i], "input '" + names[i] + "'")));
  return in;
}

// (name, element type, dims: int or symbol string / None) of each graph input or output.
using ArgInfo = std::tuple<std::string, std::string, std::optional<std::vector<py::object>>>;
ArgInfo argInfo(const Value& v) {
  std::optional<std::vector<py::object>> dims;
  if (v.type.shape) {
    dims.emplace();
    for (const Dim& d : *v.type.shape)
      dims->push_back(d.value >= 0       ? py::object(py::int_(d.value))
                      : d.symbol.empty() ? py::object(py::none())
                                         : py::object(py::str(d.symbol)));
  }
  std::string type =
      v.type.kind == Type::Kind::Tensor ? std::string(dtypeName(v.type.dtype)) : "sequence";
  return {v.name, type, dims};
}

// An ONNX model run by the JIT (or the reference interpreter). A model whose only symbolic input
// dims are leading ones (a batch, or a length after a batch of 1) is compiled once for every size
// up to a bound (per-sample and symbolic tasks, loop/per_sample.h; the bound doubles when a run
// exceeds it); other models, or one whose nodes cannot take the symbol, are compiled on first use
// for each input shape signature.
class Session {
public:
  Session(std::string bytes, std::string baseDir, std::string engine, int optLevel,
          std::map<std::string, int64_t> dims)
      : bytes_(std::move(bytes)), baseDir_(std::move(baseDir)), engine_(std::move(engine)),
        optLevel_(optLevel), dims_(std::move(dims)) {
    AICC_CHECK(engine_ == "jit" || engine_ == "interp", "engine '{}': expected jit or interp",
               engine_);
    AICC_CHECK(optLevel_ >= 0 && optLevel_ <= 3, "opt_level must be 0 to 3, got {}", optLevel_);
    py::gil_scoped_release nogil;
    model_ = import();
    for (const Value* v : model_.model.graph->inputs) inputNames_.push_back(v->name);
    symbolic_ = !inputSymbols(*model_.model.graph).empty();
  }

  std::vector<ArgInfo> inputs() const { return infos(model_.model.graph->inputs); }
  std::vector<ArgInfo> outputs() const { return infos(model_.model.graph->outputs); }

  py::list run(const py::list& arrays) {
    std::vector<RValue> in = toInputs(arrays, inputNames_);
    std::vector<RValue> out;
    {
      py::gil_scoped_release nogil;
      std::lock_guard<std::mutex> lock(mu_);
      out = runLocked(in);
    }
    py::list l;
    for (const RValue& v : out) l.append(toPython(v));
    return l;
  }

  int64_t compiledShapes() {
    std::lock_guard<std::mutex> lock(mu_);
    return int64_t(cache_.size()) + (once_ ? 1 : 0);
  }

private:
  struct Compiled {
    ImportedModel model;
    std::unique_ptr<runtime::JitExecutable> exe;
  };

  ImportedModel import() const {
    ImportOptions o;
    o.dims = dims_;
    return importOnnxBytes(bytes_, baseDir_, o);
  }

  std::vector<ArgInfo> infos(const std::vector<Value*>& vs) const {
    std::vector<ArgInfo> r;
    for (const Value* v : vs) r.push_back(argInfo(*v));
    return r;
  }

  // The symbols of g's inputs when every symbolic dim is a named plain symbol (a batch, a length,
  // an image side), else none (an unnamed or derived dim: one executable per shape).
  static std::set<std::string> inputSymbols(const Graph& g) {
    std::set<std::string> out;
    for (const Value* v : g.inputs) {
      if (!v->type.isTensor() || !v->type.shape) return {};
      for (const Dim& d : *v->type.shape) {
        if (d.isStatic()) continue;
        if (d.derived || d.symbol.empty()) return {};
        out.insert(d.symbol);
      }
    }
    return out;
  }

  // The run through the one executable of every size (compiled with the symbols symbolic, their
  // bound doubled when a run exceeds it), or nullopt when the model does not take that path.
  std::optional<std::vector<RValue>> runOnce(const std::vector<RValue>& in) {
    if (!symbolic_) return std::nullopt;
    std::set<std::string> conflicting;
    const auto values = cli::dimsFromInputs(*model_.model.graph, in, &conflicting);
    if (!conflicting.empty()) return std::nullopt;
    int64_t largest = 1;
    for (const auto& [_, v] : values) largest = std::max(largest, v);
    if (!once_ || largest > bound_) {
      once_.reset();
      auto c = std::make_unique<Compiled>(Compiled{import(), nullptr});
      // Symbols whose shapes agree only at multiples of a step (passes/dim_steps.h).
      const std::map<std::string, int64_t> steps = findDimSteps(*c->model.model.graph);
      applyDimSteps(*c->model.model.graph, steps);
      cli::OptArgs o;
      o.optLevel = optLevel_;
      o.layoutBlock = cli::jitLayoutBlock();
      cli::optimize(c->model.model, o);
      runtime::JitRunOptions jo;
      // Doubled when a run exceeds it: a few compiles for any growth.
      const int64_t bound = std::max({2 * bound_, largest, runtime::kDefaultSymbolBound});
      for (const std::string& s : inputSymbols(*model_.model.graph)) {
        const auto step = steps.find(s);
        const int64_t k = step == steps.end() ? 1 : step->second;
        jo.symbols.push_back({s, k, std::max(k, bound / k * k), k});
      }
      try {
        c->exe = std::make_unique<runtime::JitExecutable>(*c->model.model.graph, jo);
      } catch (const Error&) { // a node without a lowering for symbolic sizes
      }
      if (!c->exe || !c->exe->stats().planned) { // one executable per shape instead
        symbolic_ = false;
        return std::nullopt;
      }
      once_ = std::move(c);
      bound_ = bound;
    }
    return once_->exe->run(in);
  }

  std::vector<RValue> runLocked(const std::vector<RValue>& in) {
    if (engine_ == "interp") {
      if (!optimizedInterp_) {
        cli::OptArgs o;
        o.optLevel = std::min(optLevel_, 1); // fusion is for the compiled engines
        cli::optimize(model_.model, o);
        optimizedInterp_ = true;
      }
      return interpret(*model_.model.graph, in); // checks the inputs itself
    }
    checkGraphInputs(*model_.model.graph, in); // names the input and dim before compiling
    if (auto out = runOnce(in)) return std::move(*out);
    std::string sig;
    for (const RValue& v : in) {
      for (int64_t d : v.tensor.shape()) sig += std::to_string(d) + ",";
      sig += ";";
    }
    auto it = cache_.find(sig);
    if (it == cache_.end()) {
      if (cache_.size() >= kMaxCompiledShapes) { // the least recently used one goes
        cache_.erase(order_.front());
        order_.erase(order_.begin());
      }
      auto c = std::make_unique<Compiled>(Compiled{import(), nullptr});
      cli::specializeToInputs(c->model, in);
      cli::OptArgs o;
      o.optLevel = optLevel_;
      o.layoutBlock = cli::jitLayoutBlock();
      cli::optimize(c->model.model, o);
      c->exe = std::make_unique<runtime::JitExecutable>(*c->model.model.graph);
      it = cache_.emplace(sig, std::move(c)).first;
    }
    order_.erase(std::remove(order_.begin(), order_.end(), sig), order_.end());
    order_.push_back(sig);
    return it->second->exe->run(in);
  }

  std::string bytes_, baseDir_, engine_;
  int optLevel_;
  std::map<std::string, int64_t> dims_;
  ImportedModel model_; // imported once: metadata, the interpreter's graph
  bool optimizedInterp_ = false;
  // A model with symbolic input dims: the executable of every size up to bound_.
  bool symbolic_ = false;
  std::unique_ptr<Compiled> once_;
  int64_t bound_ = 0;
  std::vector<std::string> inputNames_;
  // Compiled code and arena per input shape signature, at most kMaxCompiledShapes (a server fed
  // ever-new sizes keeps the most recently used ones).
  static constexpr size_t kMaxCompiledShapes = 16;
  std::map<std::string, std::unique_ptr<Compiled>> cache_;
  std::vector<std::string> order_; // least recently used first
  std::mutex mu_;
};

// A folder written by `aicc compile` (runtime::LoadedArtifact: its checked run serializes).
class Artifact {
public:
  explicit Artifact(const std::string& dir) {
    py::gil_scoped_release nogil;
    art_ = std::make_unique<runtime::LoadedArtifact>(dir);
  }
  std::vector<ArgInfo> inputs() const { return infos(art_->inputs(), art_->symbols()); }
  std::vector<ArgInfo> outputs() const { return infos(art_->outputs(), art_->outputSymbols()); }
  py::list run(const py::list& arrays) {
    std::vector<std::string> names;
    for (const auto& d : art_->inputs()) names.push_back(d.name);
    std::vector<RValue> in = toInputs(arrays, names), out;
    {
      py::gil_scoped_release nogil;
      out = art_->run(in);
    }
    py::list l;
    for (const RValue& v : out) l.append(toPython(v));
    return l;
  }

private:
  // Dims: ints, a symbolic batch by its name (as the model's inputs() give symbols).
  static std::vector<ArgInfo> infos(const std::vector<runtime::TensorDesc>& ds,
                                    const std::vector<rt::Symbol>& symbols) {
    std::vector<ArgInfo> r;
    for (const auto& d : ds) {
      std::vector<py::object> dims;
      for (size_t k = 0; k < d.dims.size(); ++k)
        dims.push_back(d.symbolAt(k) < 0
                           ? py::object(py::int_(d.dims[k]))
                           : py::object(py::str(symbols[size_t(d.symbolAt(k))].name)));
      r.emplace_back(d.name, std::string(dtypeName(d.dtype)), dims);
    }
    return r;
  }
  std::unique_ptr<runtime::LoadedArtifact> art_;
};

void compileModel(const std::string& path, const std::string& outDir, const std::string& target,
                  int optLevel, const std::vector<std::string>& dims,
                  const std::vector<std::string>& shapes) {
  cli::CompileArgs a;
  a.model = path;
  a.outputDir = outDir;
  a.target = target;
  a.optLevel = optLevel;
  a.dims = dims;
  a.shapes = shapes;
  a.quiet = true;
  py::gil_scoped_release nogil;
  cli::compileCommand(a);
}

py::bytes optimizeModel(const std::string& bytes, const std::string& baseDir,
                        const std::string& passes) {
  std::string out;
  {
    py::gil_scoped_release nogil;
    ImportedModel m = importOnnxBytes(bytes, baseDir);
    cli::OptArgs o;
    o.passes = passes;
    cli::optimize(m.model, o);
    out = exportOnnxBytes(m.model);
  }
  return py::bytes(out);
}

py::bytes autodiffModel(const std::string& bytes, const std::string& baseDir,
                        const std::string& loss, const std::vector<std::string>& wrt,
                        bool keepOutputs) {
  std::string out;
  {
    py::gil_scoped_release nogil;
    ImportedModel m = importOnnxBytes(bytes, baseDir);
    AutodiffOptions o;
    o.loss = loss;
    o.wrt = wrt;
    o.keepForwardOutputs = keepOutputs;
    differentiate(m.model, o);
    out = exportOnnxBytes(m.model);
  }
  return py::bytes(out);
}

} // namespace
} // namespace aicc::python

PYBIND11_MODULE(_aicc, m) {
  using namespace aicc::python;
  m.doc() = "aicc's C++ core (use the aicc package)";
  py::register_exception<aicc::Error>(m, "Error", PyExc_RuntimeError);
  py::class_<Session>(m, "Session")
      .def(py::init<std::string, std::string, std::string, int, std::map<std::string, int64_t>>(),
           py::arg("model"), py::arg("base_dir"), py::arg("engine"), py::arg("opt_level"),
           py::arg("dims"))
      .def("inputs", &Session::inputs)
      .def("outputs", &Session::outputs)
      .def("run", &Session::run)
      .def("compiled_shapes", &Session::compiledShapes);
  py::class_<Artifact>(m, "Artifact")
      .def(py::init<std::string>(), py::arg("dir"))
      .def("inputs", &Artifact::inputs)
      .def("outputs", &Artifact::outputs)
      .def("run", &Artifact::run);
  m.def("compile", &compileModel, py::arg("path"), py::arg("output_dir"), py::arg("target"),
        py::arg("opt_level"), py::arg("dims"), py::arg("shapes"));
  m.def("optimize", &optimizeModel, py::arg("model"), py::arg("base_dir"), py::arg("passes"));
  m.def("autodiff", &autodiffModel, py::arg("model"), py::arg("base_dir"), py::arg("loss"),
        py::arg("wrt"), py::arg("keep_outputs"));
  m.def("set_num_threads", [](int n) {
    AICC_CHECK(n >= 1 && n <= 1024, "set_num_threads: {} is not in [1, 1024]", n);
    aicc::runtime::setNumThreads(n);
  });
  m.def("version", [] { return std::string(AICC_VERSION); });
}
