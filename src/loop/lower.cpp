#include "loop/lower.h"

#include "interp/interpreter.h"
#include "kernels/lut.h"
#include "kernels/registry.h"
#include "loop/compute.h"
#include "loop/lower_ops.h"
#include "loop/simplify.h"
#include "ops/op_def.h"
#include "support/error.h"

#include <set>

namespace aicc::loop {

namespace {

// f16 / bf16: 16-bit storage, computed in f32 and rounded per op (codegen/llvm/emit_llvm.cpp).
// float8 / float4 (a byte each) and 4/2-bit integers: for Cast / CastLike / Identity only (see
// below); so is float8e8m0 (Cast's round_mode in loop/compute.cpp).
bool supportedDType(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16 ||
         isByteFloat(t) || t == DType::F8E8M0 || t == DType::Bool || isInteger(t);
}

bool castOnly(DType t) { return isSubByteInt(t) || isByteFloat(t) || t == DType::F8E8M0; }

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v" + out;
  return out;
}

class Lowerer {
public:
  Lowerer(const Node& n, const LowerOptions& o) : n_(n), opts_(o) {}

  std::optional<LoweredNode> run(const std::string& funcName, std::string* why) {
    try {
      return lower(funcName);
    } catch (const NotLowerable& e) {
      if (why) *why = e.reason;
      return std::nullopt;
    }
  }

private:
  struct NotLowerable {
    std::string reason;
  };
  [[noreturn]] static void no(std::string r) { throw NotLowerable{std::move(r)}; }

  struct Leaf {
    const Value* inner; // the value read inside the computation
    const Value* outer; // the value the caller binds
    std::string param;
    Dims shape;
    std::vector<ExprPtr> run;    // the run's dims (symbolic sizes; else shape's immediates)
    std::vector<ExprPtr> stride; // per loop
  };

  std::string fresh(const std::string& base) {
    std::string n = sanitize(base);
    for (int k = 0; used_.count(n); ++k) n = sanitize(base) + "_" + std::to_string(k);
    used_.insert(n);
    return n;
  }

  static Dims staticDims(const Value* v, const char* what) {
    if (!v->type.isTensor() || !v->type.shape)
      no(fmt::format("{} '{}' has no known shape", what, v->name));
    auto d = toDims(*v->type.shape);
    if (!d)
      no(fmt::format("{} '{}' has a dynamic shape {}", what, v->name, formatShape(*v->type.shape)));
    if (!supportedDType(v->type.dtype))
      no(fmt::format("{} '{}' has element type {}, not lowered yet", what, v->name,
                     dtypeName(v->type.dtype)));
    return *d;
  }

  std::optional<LoweredNode> lower(const std::string& funcName) {
    // The computation: the node itself, or the body of an elementwise aicc.Fused node.
    std::vector<const Value*> innerOut;
    if (n_.domain == kAiccDomain && n_.op == "Fused") {
      if (n_.attrString("kind") != "elementwise")
        no("aicc.Fused of kind '" + n_.attrString("kind") + "'");
      const Graph& body = *std::get<GraphPtr>(n_.attr("body")->v);
      for (size_t i = 0; i < body.inputs.size() && i < n_.inputs.size(); ++i)
        if (n_.inputs[i]) bind_[body.inputs[i]] = n_.inputs[i];
      for (const auto& bn : body.nodes) nodes_.push_back(bn.get());
      innerOut.assign(body.outputs.begin(), body.outputs.end());
    } else if (n_.domain.empty() && hasComputeDefinition(n_.op)) {
      nodes_.push_back(&n_);
      innerOut.assign(n_.outputs.begin(), n_.outputs.end());
    } else {
      no("no compute definition for " + n_.op);
    }
    for (const Node* x : nodes_) {
      if (!x->domain.empty() || (!hasComputeDefinition(x->op) && !detail::isChainActivation(x->op)))
        no("no compute definition for " + (x->domain.empty() ? x->op : x->domain + "." + x->op));
      // 4/2-bit integers and float8/float4: only conversions take them (into float8 saturating
      // or not, as Cast's saturate says).
      const bool conversion = x->op == "Cast" || x->op == "CastLike" || x->op == "Identity";
      for (const auto* vs : {&x->inputs, &x->outputs})
        for (const Value* v : *vs)
          if (v && castOnly(v->type.dtype)) {
            if (!conversion)
              no("4/2-bit integers and float8 are lowered for Cast and CastLike only");
          }
      for (const Value* o : x->outputs)
        if (o) producer_[o] = x;
      for (const Value* i : x->inputs)
        if (i) ++uses_[i];
    }
    for (const Value* o : innerOut) ++uses_[o];

    // The iteration domain: the (common) static shape of the outputs.
    AICC_CHECK(!n_.outputs.empty() && n_.outputs[0], "{}: no output", n_.describe());
    dims_ = staticDims(n_.outputs[0], "output");
    // Symbolic sizes (LowerOptions::runDim): the loops run the run's extents.
    runOut_ = detail::runDims(opts_, n_.outputs[0], dims_);
    for (const ExprPtr& e : runOut_) symbolic_ |= !isImm(e);
    for (const Value* o : n_.outputs) {
      if (!o) no("an omitted output");
      if (staticDims(o, "output") != dims_ ||
          !detail::sameRunDims(dims_, detail::runDims(opts_, o, dims_), runOut_))
        no("outputs of different shapes");
    }

    LoweredNode ln;
    Func& f = ln.func;
    f.name = funcName;
    // Output parameters first reserve their names; inputs are discovered while building.
    std::vector<std::string> outParams;
    for (const Value* o : n_.outputs) outParams.push_back(fresh(o->name));
    collectLeaves(innerOut);
    for (auto& l : leaves_) l.param = fresh(l.inner->name);
    if (auto table = symbolic_ ? std::nullopt : tableLookup(funcName, innerOut, outParams))
      return table;

    coalesce();
    std::vector<std::string> vars;
    for (size_t j = 0; j < extents_.size(); ++j) vars.push_back(fresh("i" + std::to_string(j)));

    // The innermost body: lets for shared intermediates, then one store per output.
    loopVars_ = vars;
    ExprPtr outIndex = linear(outStride_);
    Block inner;
    body_ = &inner;
    for (size_t k = 0; k < innerOut.size(); ++k) {
      ExprPtr v = valueExpr(innerOut[k]);
      DType want = n_.outputs[k]->type.dtype;
      if (v->type != want)
        no(fmt::format("output {} computes as {} but is declared {}", k, dtypeName(v->type),
                       dtypeName(want)));
      inner.push_back(Stmt::store(outParams[k], outIndex, v));
    }

    // The loop nest with the default schedule.
    DType dt = n_.outputs[0]->type.dtype;
    int64_t lanes = std::max<int64_t>(
        1, std::min<int64_t>(64, opts_.vectorBytes / std::max<int64_t>(1, dtypeSize(dt))));
    int64_t width = 1;
    if (!extents_.empty())
      while (width * 2 <= lanes && width * 2 <= extents_.back()) width *= 2;
    Block nest = std::move(inner);
    bool anyZero = false;
    for (int64_t e : extents_) anyZero |= e == 0;
    std::string parallelVar;
    for (size_t j = extents_.size(); j-- > 0;) {
      LoopKind k = LoopKind::Serial;
      int64_t factor = 1;
      if (j + 1 == extents_.size() && width > 1) {
        k = LoopKind::Vectorize;
        factor = width;
      } else if (j == 0 && parallel_) {
        k = LoopKind::Parallel;
        parallelVar = vars[j];
      }
      Block b;
      b.push_back(Stmt::forLoop(vars[j], intImm(0), runExtents_[j], std::move(nest), k, factor));
      nest = std::move(b);
    }
    if (anyZero) nest.clear();
    f.body = std::move(nest);

    for (const auto& l : leaves_) {
      f.params.push_back({l.param, l.inner->type.dtype, l.shape, "", Role::In});
      ln.inputs.push_back({l.param, l.outer});
    }
    for (size_t k = 0; k < n_.outputs.size(); ++k) {
      f.params.push_back({outParams[k], n_.outputs[k]->type.dtype, dims_, "", Role::Out});
      ln.outputs.push_back({outParams[k], n_.outputs[k]});
    }
    f.schedule["kind"] = std::string("elementwise");
    f.schedule["op"] = n_.domain.empty() ? n_.op : n_.domain + "." + n_.op;
    f.schedule["loop_order"] = vars;
    f.schedule["parallel"] =
        parallelVar.empty() ? std::vector<std::string>{} : std::vector<std::string>{parallelVar};
    f.schedule["vector_width"] = width;
    if (opts_.simplify) simplifyFunc(f);
    return ln;
  }

  // A region whose only operand read from memory is an 8-bit tensor of the output's shape, with an
  // 8-bit result (a QDQ model's DequantizeLinear -> Sigmoid -> QuantizeLinear, or HardSwish, Tanh,
  // a BatchNormalization's per-channel Mul / Add between them) is a function of 256 values per
  // channel (the one axis its constants vary along, if any): tabulated here by the reference
  // kernels (the compiled result is then the interpreter's, bit for bit) and looked up by the
  // runtime's @lut8 (kernels/lut.h: 64 bytes per two vpermi2b with AVX512-VBMI). Taken where the
  // region computes something dearer than a lookup (a transcendental, a division), and for any
  // region where this CPU has the vector lookup and the target is at least AVX512-VNNI (the JIT,
  // a native artifact); nullopt otherwise.
  std::optional<LoweredNode> tableLookup(const std::string& funcName,
                                         const std::vector<const Value*>& innerOut,
                                         const std::vector<std::string>& outParams) {
    static const std::set<std::string> kDear = {
        "Sigmoid",  "Tanh",       "Exp",   "Log",   "Erf",  "Gelu", "Swish", "HardSwish",
        "Softplus", "Softsign",   "Mish",  "Elu",   "Selu", "Celu", "Div",   "Pow",
        "Sqrt",     "Reciprocal", "Sin",   "Cos",   "Tan",  "Asin", "Acos",  "Atan",
        "Sinh",     "Cosh",       "Asinh", "Acosh", "Atanh"};
    if (!opts_.runtimeKernels || innerOut.size() != 1 || leaves_.empty()) return std::nullopt;
    const DType out = n_.outputs[0]->type.dtype;
    auto byte = [](DType t) { return t == DType::U8 || t == DType::I8; };
    // The data (the one 8-bit leaf of the output's shape) and the per-channel constants.
    const Leaf* data = nullptr;
    std::vector<const Leaf*> perChannel;
    size_t axis = dims_.size();
    for (const Leaf& l : leaves_) {
      if (byte(l.inner->type.dtype) && l.shape == dims_ && !data) {
        data = &l;
        continue;
      }
      const Value* c = l.outer;
      if (!c->constant) return std::nullopt;
      const size_t off = dims_.size() - l.shape.size();
      for (size_t d = 0; d < l.shape.size(); ++d)
        if (l.shape[d] != 1) {
          if (axis != dims_.size() && axis != off + d) return std::nullopt;
          axis = off + d;
        }
      perChannel.push_back(&l);
    }
    if (!data || !byte(out)) return std::nullopt;
    const bool vectorLookup =
        kernels::lut8HasVector() && kernels::isaWithin(kernels::Isa::Avx512Vnni, opts_.kernelIsa);
    if (!vectorLookup && std::none_of(nodes_.begin(), nodes_.end(),
                                      [](const Node* x) { return kDear.count(x->op); }))
      return std::nullopt;
    const DType in = data->inner->type.dtype;
    const int64_t channels = axis < dims_.size() ? dims_[axis] : 1;
    int64_t outer = 1, inner = 1; // the dims before the channel axis, and after it (or all)
    for (size_t d = 0; d < dims_.size(); ++d)
      if (d != axis) (d < axis && axis < dims_.size() ? outer : inner) *= dims_[d];
    if (channels > 1 && inner < 16) return std::nullopt; // a lookup call per few bytes: the loop
    // Per channel, the region's nodes on the 256 values of the input type (index x ^ flip), the
    // per-channel constants at that channel.
    Tensor tables(DType::U8, {channels, 256});
    Tensor xs(in, {256});
    for (int64_t i = 0; i < 256; ++i) xs.setI64(i, in == DType::U8 ? i : i - 128);
    for (int64_t c = 0; c < channels; ++c) {
      std::map<const Value*, RValue> vals;
      vals[data->inner] = RValue::of(xs);
      for (const Leaf* l : perChannel) {
        const Tensor& t = *l->outer->constant;
        Tensor one(t.dtype(), {});
        one.setF64(0, t.getF64(t.numel() == 1 ? 0 : c));
        vals[l->inner] = RValue::of(std::move(one));
      }
      const OuterLookup fetch = [&](const Value* v) -> const RValue* {
        if (auto it = vals.find(v); it != vals.end()) return &it->second;
        auto b = bind_.find(v);
        const Value* k = b != bind_.end() ? b->second : v;
        return k->constant ? &(vals[v] = RValue::of(*k->constant)) : nullptr;
      };
      try {
        for (const Node* x : nodes_) {
          std::vector<RValue> outs = runReferenceKernel(*x, fetch);
          for (size_t k = 0; k < x->outputs.size() && k < outs.size(); ++k)
            if (x->outputs[k]) vals[x->outputs[k]] = std::move(outs[k]);
        }
      } catch (const std::exception&) {
        return std::nullopt; // the region's own lowering then says what is wrong, if anything
      }
      const RValue* r = fetch(innerOut[0]);
      if (!r || r->kind != RValue::Kind::Tensor || r->tensor.numel() != 256 ||
          r->tensor.dtype() != out)
        return std::nullopt;
      for (int64_t i = 0; i < 256; ++i)
        tables.data<uint8_t>()[c * 256 + i] = static_cast<uint8_t>(r->tensor.getI64(i));
    }
    LoweredNode ln;
    Func& f = ln.func;
    f.name = funcName;
    const std::string tp = fresh("tables");
    f.params.push_back({data->param, in, data->shape, "", Role::In});
    ln.inputs.push_back({data->param, data->outer});
    f.params.push_back(
        {tp, DType::U8, {channels, 256}, "u8 [C, 256]: the region at each input", Role::In});
    ln.constants.push_back({tp, std::move(tables)});
    f.params.push_back({outParams[0], out, dims_, "", Role::Out});
    ln.outputs.push_back({outParams[0], n_.outputs[0]});
    f.body = {Stmt::callKernel("lut8", {detail::bufferArg(data->param), detail::bufferArg(tp),
                                        detail::bufferArg(outParams[0]), detail::intArg(outer),
                                        detail::intArg(channels), detail::intArg(inner),
                                        detail::intArg(in == DType::I8 ? 0x80 : 0)})};
    f.schedule["kind"] = std::string("elementwise");
    f.schedule["op"] = n_.domain.empty() ? n_.op : n_.domain + "." + n_.op;
    f.schedule["micro_kernel"] = std::string("lut8");
    f.schedule["precision"] = std::string(dtypeName(out)) + " (tables of the 256 inputs" +
                              (channels > 1 ? " per channel" : "") + ", by the reference kernels)";
    return ln;
  }

  // Values read from outside the computation (inputs, non-scalar constants).
  void collectLeaves(const std::vector<const Value*>& outs) {
    std::set<const Value*> seen;
    std::function<void(const Value*)> visit = [&](const Value* v) {
      if (!v || !seen.insert(v).second) return;
      if (auto it = producer_.find(v); it != producer_.end()) {
        for (size_t k = 0; k < it->second->inputs.size(); ++k)
          if (readsElements(*it->second, k)) visit(it->second->inputs[k]);
        return;
      }
      if (v->constant && v->constant->numel() == 1) {
        if (!supportedDType(v->constant->dtype()))
          no("constant '" + v->name + "' of an unsupported type");
        return; // an immediate
      }
      Leaf l;
      l.inner = v;
      auto b = bind_.find(v);
      l.outer = b != bind_.end() ? b->second : v;
      l.shape = staticDims(v, "input");
      if (l.shape.size() > dims_.size())
        no(fmt::format("input '{}' has a higher rank than the output", v->name));
      size_t off = dims_.size() - l.shape.size();
      for (size_t d = 0; d < l.shape.size(); ++d)
        if (l.shape[d] != 1 && l.shape[d] != dims_[off + d])
          no(fmt::format("input '{}' of shape {} does not broadcast to {}", v->name,
                         formatDims(l.shape), formatDims(dims_)));
      l.run = detail::runDims(opts_, l.outer, l.shape);
      if (!detail::sameRunDims(l.shape, l.run, runOut_))
        no(fmt::format("input '{}' has symbolic dims other than the output's", v->name));
      leafIndex_[v] = leaves_.size();
      leaves_.push_back(std::move(l));
    };
    for (const Value* o : outs) visit(o);
  }

  // Drops unit output dims and merges adjacent dims that every leaf reads the same way (all
  // full, or all broadcast), then computes each leaf's stride per loop.
  // The loops (detail::flatSpace): merged dims, split for the threads when there is one.
  void coalesce() {
    std::vector<Dims> shapes;
    for (const auto& l : leaves_) shapes.push_back(l.shape);
    const DType dt = n_.outputs[0]->type.dtype;
    const int64_t lanes =
        std::max<int64_t>(1, opts_.vectorBytes / std::max<int64_t>(1, dtypeSize(dt)));
    detail::FlatSpace fs = detail::flatSpace(dims_, shapes, lanes, runOut_);
    extents_ = fs.extents();
    runExtents_ = fs.runExtents();
    parallel_ = fs.parallel;
    outStride_ = fs.runStrideOf(dims_, runOut_);
    for (auto& l : leaves_) l.stride = fs.runStrideOf(l.shape, l.run);
  }

  ExprPtr linear(const std::vector<ExprPtr>& stride) {
    return detail::runIndex(detail::vars(loopVars_), stride);
  }

  ExprPtr valueExpr(const Value* v) {
    if (auto it = memo_.find(v); it != memo_.end()) return it->second;
    ExprPtr e;
    if (auto p = producer_.find(v); p != producer_.end()) {
      const Node& x = *p->second;
      std::vector<ExprPtr> args;
      for (size_t k = 0; k < x.inputs.size(); ++k)
        args.push_back(x.inputs[k] && readsElements(x, k) ? valueExpr(x.inputs[k]) : nullptr);
      std::string why;
      // chainExpr: compute.h's definitions plus the activations it lacks (Swish, HardSwish, ...).
      e = detail::chainExpr(x, args, v->type.dtype, &why);
      if (!e) no(x.describe() + ": " + why);
      if (uses_[v] > 1 && !isImm(e)) {
        std::string t = fresh("t_" + v->name);
        body_->push_back(Stmt::let(t, e));
        e = var(t, e->type);
      }
    } else if (auto l = leafIndex_.find(v); l != leafIndex_.end()) {
      const Leaf& leaf = leaves_[l->second];
      e = load(leaf.param, linear(leaf.stride), v->type.dtype);
    } else if (v->constant && v->constant->numel() == 1) {
      const Tensor& t = *v->constant;
      e = isFloat(t.dtype()) ? floatImm(t.getF64(0), t.dtype()) : intImm(t.getI64(0), t.dtype());
    } else {
      no("value '" + v->name + "' has no definition in the computation");
    }
    memo_[v] = e;
    return e;
  }

  const Node& n_;
  const LowerOptions& opts_;
  std::vector<const Node*> nodes_;
  std::map<const Value*, const Node*> producer_;
  std::map<const Value*, const Value*> bind_;
  std::map<const Value*, int> uses_;
  std::map<const Value*, size_t> leafIndex_;
  std::map<const Value*, ExprPtr> memo_;
  std::vector<Leaf> leaves_;
  Dims dims_;
  std::vector<int64_t> extents_; // at the bounds (symbolic sizes)
  std::vector<ExprPtr> runExtents_, runOut_;
  std::vector<ExprPtr> outStride_;
  bool symbolic_ = false;
  bool parallel_ = false;
  std::vector<std::string> loopVars_;
  std::set<std::string> used_;
  Block* body_ = nullptr;
};

} // namespace

std::optional<LoweredNode> lowerNode(const Node& n, const std::string& funcName,
                                     std::string* whyNot, const LowerOptions& opts) {
  std::optional<LoweredNode> r;
  if (lowerNonElementwise(n, funcName, opts, r, whyNot)) return r;
  return Lowerer(n, opts).run(funcName, whyNot);
}

Module lowerGraph(const Graph& g, const LowerOptions& opts, std::vector<std::string>* skipped) {
  Module m;
  std::set<std::string> names;
  for (const auto& n : g.nodes) {
    std::string base = sanitize(n->name.empty() ? n->op : n->name);
    std::string name = base;
    for (int k = 0; names.count(name); ++k) name = base + "_" + std::to_string(k);
    std::string why;
    auto ln = lowerNode(*n, name, &why, opts);
    if (!ln) {
      if (skipped) skipped->push_back(n->describe() + ": " + why);
      continue;
    }
    names.insert(name);
    m.funcs.push_back(std::move(ln->func));
  }
  return m;
}

const Value* LoweredNode::valueOf(const std::string& p) const {
  for (const auto& [name, v] : inputs)
    if (name == p) return v;
  for (const auto& [name, v] : outputs)
    if (name == p) return v;
  return nullptr;
}

const Tensor* LoweredNode::constantOf(const std::string& p) const {
  for (const auto& [name, t] : constants)
    if (name == p) return &t;
  return nullptr;
}

std::string opLabel(const Node& n) {
  if (n.domain != kAiccDomain || n.op != "Fused")
    return n.domain.empty() ? n.op : n.domain + "." + n.op;
  std::string s = "Fused(";
  if (const Attribute* a = n.attr("body"))
    if (auto* g = std::get_if<GraphPtr>(&a->v))
      for (size_t i = 0; i < (*g)->nodes.size(); ++i) s += (i ? "+" : "") + (*g)->nodes[i]->op;
  return s + ")";
}

} // namespace aicc::loop
