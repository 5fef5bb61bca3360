// The op is the unit of knowledge: everything aicc knows about one op is registered once, in one
// OpDef, from the file of its family (src/ops/<family>.cpp):
//   - ONNX import: opset range, attribute schema with the spec's defaults, and upgrade rules that
//     rewrite older opset forms into the canonical (latest) form the IR uses;
//   - shape/type inference;
//   - the reference kernel (the interpreter: the meaning of the op);
//   - the gradient rule (autodiff), set by the family's grad file (e.g. ops/elementwise_grad.cpp);
//   - properties the passes use.
#pragma once

#include "ir/graph.h"
#include "support/error.h"

#include <functional>
#include <span>

namespace aicc {

// A runtime value in the interpreter: a tensor, a sequence of tensors, an empty optional, a map
// (its keys and values as two 1-D tensors of one length), or a sequence of maps (ZipMap).
struct RValue {
  enum class Kind { None, Tensor, Sequence, Map };
  Kind kind = Kind::None;
  Tensor tensor;
  std::vector<Tensor> seq;  // Sequence: the tensors; Map: {keys, values}
  std::vector<RValue> maps; // a Sequence of maps: the maps (seq is then empty)

  static RValue of(Tensor t) { return {Kind::Tensor, std::move(t), {}, {}}; }
  static RValue ofSeq(std::vector<Tensor> s) { return {Kind::Sequence, {}, std::move(s), {}}; }
  static RValue ofMap(Tensor keys, Tensor values) {
    return {Kind::Map, {}, {std::move(keys), std::move(values)}, {}};
  }
  static RValue ofMapSeq(std::vector<RValue> m) { return {Kind::Sequence, {}, {}, std::move(m)}; }
  static RValue none() { return {}; }
  bool isMapSeq() const { return kind == Kind::Sequence && !maps.empty(); }
};

class KernelCtx;
class InferCtx;
class ImportCtx;
class GradCtx; // autodiff/grad_ctx.h

using KernelFn = std::function<std::vector<RValue>(KernelCtx&)>;
using InferFn = std::function<void(InferCtx&)>;
using ImportFn = std::function<void(ImportCtx&)>;
// Gradient rule: emits the nodes computing the gradients of a node's inputs from the gradients of
// its outputs (reverse-mode autodiff; see autodiff/grad_ctx.h).
using GradFn = std::function<void(GradCtx&)>;

struct AttrSpec {
  std::string name;
  Attribute::Kind kind;
  std::optional<Attribute> dflt; // the spec's default; nullopt = none
  bool required = false;
};

// Rewrites a node imported from opsets [from, to] into the canonical form. `legacyAttrs` are
// attributes that only exist in those opsets (the rule converts them, e.g. into inputs).
struct ImportRule {
  int from = 1, to = 1 << 30;
  std::vector<AttrSpec> legacyAttrs;
  ImportFn fn;
};

enum OpProp : uint32_t {
  kElementwise = 1u << 0, // out[i] depends only on in[i] (after broadcasting)
  kInjective = 1u << 1,   // data movement only (Reshape, Transpose, Slice, ...)
  kReduction = 1u << 2,
  kCommutative = 1u << 3,
  kShapeOnly = 1u << 4,   // result depends only on input shapes (Shape, Size)
  kNondeterministic = 1u << 5, // random ops: never constant-folded or CSE'd
};

// A data-dependent dim's upper bound (unknown: none, sized at run time), and which of its node's
// counts it is (OpDef::dataDim).
struct DataDim {
  Dim bound;
  int count = 0;
};

struct OpDef {
  std::string domain; // "" = ai.onnx
  std::string op;
  int sinceVersion = 1;
  std::vector<AttrSpec> attrs;
  int minInputs = 0, maxInputs = 1 << 30;
  int minOutputs = 1, maxOutputs = 1;
  InferFn infer;
  KernelFn kernel;
  GradFn grad; // nullptr: not differentiable (autodiff reports an error naming the op)
  std::vector<ImportRule> imports;
  uint32_t props = 0;
  // Per-sample ops (dynamic shapes, loop/per_sample.h): given inputs whose leading `dims` dims
  // are the symbolic ones (a batch: 1; a batch and a length: 2; and outputs that have them there
  // too), whether output sample i (one index of those dims) is computed from input sample i alone
  // and does not depend on i (Softmax over a sample dim, a Gather along one, a reversing Slice of
  // one, a convolution's channels as a second sample dim mix samples). Elementwise ops are
  // per-sample without it; null elsewhere: not per-sample.
  std::function<bool(const Node&, size_t dims)> perSample;
  // Data-dependent result dims (passes/data_dims.h): for dim `dim` of result `out` that shape
  // inference leaves unknown because the run's values decide it (NonZero's count, TopK's
  // run-time k), an upper bound as a dim of the inputs' (static or an expression of their
  // symbols: NonZero's input's elements) and which count of the node it is (dims of one node
  // with the same count are one size: TopK's values and indices); nullopt when there is none.
  std::function<std::optional<DataDim>(const Node&, size_t out, size_t dim)> dataDim;

  const AttrSpec* findAttr(const std::string& n) const;
  std::string qualifiedName() const; // "Conv" or "com.microsoft.QLinearAdd"
};

// Fluent registration: reg.op("Relu").inputs(1, 1).props(kElementwise).infer(...).kernel(...);
class OpBuilder {
public:
  explicit OpBuilder(OpDef& d) : d_(d) {}
  OpBuilder& since(int v) { d_.sinceVersion = v; return *this; }
  OpBuilder& inputs(int min, int max) { d_.minInputs = min; d_.maxInputs = max; return *this; }
  OpBuilder& outputs(int min, int max) { d_.minOutputs = min; d_.maxOutputs = max; return *this; }
  OpBuilder& attrInt(std::string n, int64_t dflt) { return add(std::move(n), Attribute::Kind::Int, Attribute{dflt}); }
  OpBuilder& attrFloat(std::string n, float dflt) { return add(std::move(n), Attribute::Kind::Float, Attribute{dflt}); }
  OpBuilder& attrString(std::string n, std::string dflt) { return add(std::move(n), Attribute::Kind::String, Attribute{std::move(dflt)}); }
  OpBuilder& attrInts(std::string n, std::vector<int64_t> dflt) { return add(std::move(n), Attribute::Kind::Ints, Attribute{std::move(dflt)}); }
  OpBuilder& attrFloats(std::string n, std::vector<float> dflt) { return add(std::move(n), Attribute::Kind::Floats, Attribute{std::move(dflt)}); }
  // An attribute with no default (optional unless `required`).
  OpBuilder& attr(std::string n, Attribute::Kind k, bool required = false) {
    d_.attrs.push_back({std::move(n), k, std::nullopt, required});
    return *this;
  }
  OpBuilder& props(uint32_t p) { d_.props |= p; return *this; }
  OpBuilder& infer(InferFn f) { d_.infer = std::move(f); return *this; }
  OpBuilder& kernel(KernelFn f) { d_.kernel = std::move(f); return *this; }
  OpBuilder& grad(GradFn f) { d_.grad = std::move(f); return *this; }
  // Per-sample (OpDef::perSample) over a batch (one sample dim): always, or when `f` says so.
  OpBuilder& perSample(std::function<bool(const Node&)> f = [](const Node&) { return true; }) {
    d_.perSample = [f = std::move(f)](const Node& n, size_t dims) { return dims == 1 && f(n); };
    return *this;
  }
  // Per-sample over any number of leading sample dims, when `f` says so.
  OpBuilder& perSampleDims(std::function<bool(const Node&, size_t dims)> f) {
    d_.perSample = std::move(f);
    return *this;
  }
  OpBuilder& dataDim(std::function<std::optional<DataDim>(const Node&, size_t out, size_t dim)> f) {
    d_.dataDim = std::move(f);
    return *this;
  }
  OpBuilder& upgrade(int from, int to, ImportFn f, std::vector<AttrSpec> legacyAttrs = {}) {
    d_.imports.push_back({from, to, std::move(legacyAttrs), std::move(f)});
    return *this;
  }
  OpDef& def() { return d_; }

private:
  OpBuilder& add(std::string n, Attribute::Kind k, Attribute dflt) {
    d_.attrs.push_back({std::move(n), k, std::move(dflt), false});
    return *this;
  }
  OpDef& d_;
};

class OpRegistry {
public:
  // The registry with every op family registered (see ops/all_ops.cpp).
  static const OpRegistry& instance();

  OpBuilder op(std::string name, std::string domain = "");
  const OpDef* find(const std::string& domain, const std::string& op) const;
  // The registered op, for attaching more knowledge (gradient rules); throws when absent.
  OpDef& at(const std::string& op, const std::string& domain = "");
  std::vector<const OpDef*> all() const;

private:
  std::map<std::pair<std::string, std::string>, std::unique_ptr<OpDef>> ops_;
};

// Domain names as they appear in ONNX models.
inline constexpr const char* kOnnxDomain = "";
inline constexpr const char* kMsDomain = "com.microsoft";
inline constexpr const char* kMlDomain = "ai.onnx.ml";
inline constexpr const char* kTrainingDomain = "ai.onnx.preview.training";
inline constexpr const char* kAiccDomain = "aicc"; // ops created by aicc's own passes (aicc.Fused)
std::string domainDisplay(const std::string& domain); // "" -> "ai.onnx"
// OpDef::perSample of n over `dims` leading sample dims (elementwise ops: true), false for an op
// without the knowledge.
bool computesPerSample(const Node& n, size_t dims);
// OpDef::perSample for ops with an `axis` attribute: per sample unless it names one of the sample
// dims of input 0 (default `dflt`; negative axes count from the end).
std::function<bool(const Node&, size_t)> perSampleOutsideAxis(int64_t dflt);
// OpDef::perSample for ops that keep their inputs' leading dims in place and mix none of them (a
// Reshape, Transpose or Concat whose results keep the same sample dims: loop/per_sample.cpp's
// rule 1 checks that): any number of sample dims.
bool perSampleAnyDims(const Node&, size_t);
// OpDef::dataDim for one count bounded by input 0's dim along the `axis` attribute (default
// `dflt`), or by its elements when the node has no axis (NonZero, Compress without axis, Unique
// without axis); and for ops whose result dim k is at most input 0's dim k, each its own count
// (Slice with run-time starts).
std::function<std::optional<DataDim>(const Node&, size_t, size_t)>
dataDimAlongAxis(std::optional<int64_t> dflt);
std::optional<DataDim> dataDimOfInput0(const Node& n, size_t out, size_t dim);
// OpDef::dataDim for ops whose result dims are their inputs' values, with no bound (a
// ConstantOfShape, Expand or Reshape of a run-time shape, Range, a Pad of run-time pads): each
// dim its own count, its bound unknown (the backend sizes it at run time: rt::HeapBuffer).
std::optional<DataDim> dataDimAtRunTime(const Node& n, size_t out, size_t dim);

// ---- Interpreter kernels ---------------------------------------------------------------------
class KernelCtx {
public:
  using SubgraphRunner = std::function<std::vector<RValue>(const Graph&, const std::vector<RValue>&)>;

  KernelCtx(const Node& n, std::vector<const RValue*> args, SubgraphRunner run)
      : node(n), args_(std::move(args)), run_(std::move(run)) {}

  const Node& node;
  size_t numInputs() const { return args_.size(); }
  bool has(size_t i) const { return i < args_.size() && args_[i] && args_[i]->kind != RValue::Kind::None; }
  const RValue& value(size_t i) const;  // throws when absent
  const Tensor& in(size_t i) const;     // throws when absent or not a tensor
  size_t numOutputs() const { return node.outputs.size(); }
  bool wantOutput(size_t i) const { return i < node.outputs.size() && node.outputs[i]; }
  // Runs a subgraph with the given inputs; outer-scope values resolve to the current environment.
  std::vector<RValue> runSubgraph(const Graph& g, const std::vector<RValue>& inputs) const {
    return run_(g, inputs);
  }

private:
  std::vector<const RValue*> args_;
  SubgraphRunner run_;
};

// ---- Shape and type inference ----------------------------------------------------------------
class InferCtx {
public:
  InferCtx(Node& n, std::map<const Value*, std::vector<Dim>>& shapeValues)
      : node(n), shapeValues_(shapeValues) {}

  Node& node;
  size_t numInputs() const { return node.inputs.size(); }
  bool has(size_t i) const { return node.hasInput(i); }
  const Type& inType(size_t i) const;
  // Element type / shape of tensor input i (Undefined / nullopt when unknown).
  DType inDType(size_t i) const;
  const std::optional<Shape>& inShape(size_t i) const;
  // The value of input i when it is a constant (an initializer, or a Constant node's tensor),
  // else nullptr.
  const Tensor* constInput(size_t i) const;
  // The contents of a small integer input known symbolically (data propagation through
  // Shape -> Gather -> Concat chains), else nullptr. Constants are covered too.
  const std::vector<Dim>* shapeValue(size_t i);

  void setOutput(size_t i, Type t);
  void setTensor(size_t i, DType dt, std::optional<Shape> s) { setOutput(i, Type::tensor(dt, std::move(s))); }
  void setShapeValue(size_t i, std::vector<Dim> v);
  // The whole data-propagation map (control-flow ops pass it on to their subgraphs' inference).
  std::map<const Value*, std::vector<Dim>>& shapeValues() { return shapeValues_; }

private:
  std::map<const Value*, std::vector<Dim>>& shapeValues_;
  std::vector<Dim> scratch_;
};

// ---- Import (ONNX opset upgrades) -------------------------------------------------------------
class ImportCtx {
public:
  ImportCtx(Graph& g, Node& n, int64_t opset) : graph(g), node(n), opset(opset) {}
  Graph& graph;
  Node& node;     // already appended to graph.nodes, with its attributes as given
  int64_t opset;  // the model's opset for the node's domain

  // Moves an ints/int/floats attribute into a constant input at `index` (inputs are padded with
  // nullptr as needed). No-op when the attribute is absent.
  void attrToInput(const std::string& attr, size_t index, DType dt = DType::I64);
  // Adds a constant and returns its value.
  Value* constant(Tensor t, const std::string& hint = "const");
  // Inserts a node just before `node`, with fresh output names.
  Node* emitBefore(const std::string& op, std::vector<Value*> inputs, int numOutputs);
  // Inserts a node just after `node`; the caller rewires outputs.
  Node* emitAfter(const std::string& op, std::vector<Value*> inputs, int numOutputs);
};

} // namespace aicc
