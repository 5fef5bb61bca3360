// Sequence and optional ops, plus tensor/type helpers shared by the control-flow family.
#include "ops/control_flow_seq.h"

#include "ops/helpers.h"
#include "passes/shape_inference.h"

#include <cstring>

namespace aicc {

// ---- Shared helpers ---------------------------------------------------------------------------

Type unionType(const Type& a, const Type& b) {
  if (a.kind != b.kind || a.kind == Type::Kind::Unknown) return Type{};
  if (a.kind != Type::Kind::Tensor) {
    Type e = unionType(*a.elem, *b.elem);
    return a.kind == Type::Kind::Sequence ? Type::sequence(e) : Type::optional(e);
  }
  DType dt = a.dtype == b.dtype ? a.dtype : DType::Undefined;
  if (!a.shape || !b.shape || a.shape->size() != b.shape->size()) return Type::tensor(dt);
  Shape s = *a.shape;
  for (size_t i = 0; i < s.size(); ++i)
    if (!(s[i] == (*b.shape)[i])) s[i] = Dim{};
  return Type::tensor(dt, s);
}

void setSubgraphInputType(Value* v, const Type& t) {
  v->type = mergeTypes(v->type, t, fmt::format("subgraph input '{}'", v->name));
}

static void copyElems(Tensor& dst, int64_t dOff, const Tensor& src, int64_t sOff, int64_t n) {
  if (n <= 0) return;
  if (dst.dtype() == DType::String) {
    for (int64_t i = 0; i < n; ++i) dst.strings()[dOff + i] = src.strings()[sOff + i];
    return;
  }
  size_t es = dtypeSize(dst.dtype());
  std::memcpy(static_cast<std::byte*>(dst.raw()) + static_cast<size_t>(dOff) * es,
              static_cast<const std::byte*>(src.raw()) + static_cast<size_t>(sOff) * es,
              static_cast<size_t>(n) * es);
}

static int64_t prod(const Dims& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= d[i];
  return p;
}

Tensor concatTensors(const std::vector<Tensor>& parts, int64_t axis) {
  AICC_CHECK(!parts.empty(), "cannot concatenate zero tensors");
  const Tensor& first = parts[0];
  auto ax = static_cast<size_t>(axis);
  AICC_CHECK(axis >= 0 && axis < first.rank(), "concat axis {} is out of range for rank {}", axis,
             first.rank());
  Dims outShape = first.shape();
  outShape[ax] = 0;
  for (const Tensor& p : parts) {
    AICC_CHECK(p.dtype() == first.dtype(), "cannot concatenate {} and {} tensors",
               dtypeName(first.dtype()), dtypeName(p.dtype()));
    AICC_CHECK(p.rank() == first.rank(), "cannot concatenate shapes {} and {}",
               formatDims(first.shape()), formatDims(p.shape()));
    for (size_t i = 0; i < outShape.size(); ++i)
      AICC_CHECK(i == ax || p.shape()[i] == first.shape()[i],
                 "cannot concatenate shapes {} and {} along axis {}", formatDims(first.shape()),
                 formatDims(p.shape()), axis);
    outShape[ax] += p.shape()[ax];
  }
  Tensor out(first.dtype(), outShape);
  int64_t outer = prod(outShape, 0, ax), rowOut = prod(outShape, ax, outShape.size());
  int64_t col = 0;
  for (const Tensor& p : parts) {
    int64_t row = prod(p.shape(), ax, p.shape().size());
    for (int64_t o = 0; o < outer; ++o) copyElems(out, o * rowOut + col, p, o * row, row);
    col += row;
  }
  return out;
}

Tensor stackTensors(const std::vector<Tensor>& parts, int64_t axis) {
  AICC_CHECK(!parts.empty(), "cannot stack zero tensors");
  std::vector<Tensor> r;
  for (const Tensor& p : parts) {
    AICC_CHECK(p.shape() == parts[0].shape(), "cannot stack shapes {} and {}",
               formatDims(parts[0].shape()), formatDims(p.shape()));
    Dims d = p.shape();
    AICC_CHECK(axis >= 0 && axis <= p.rank(), "stack axis {} is out of range for rank {}", axis,
               p.rank());
    d.insert(d.begin() + axis, 1);
    r.push_back(p.reshaped(d));
  }
  return concatTensors(r, axis);
}

Tensor sliceAlong(const Tensor& x, int64_t axis, int64_t index) {
  AICC_CHECK(axis >= 0 && axis < x.rank(), "axis {} is out of range for rank {}", axis, x.rank());
  auto ax = static_cast<size_t>(axis);
  int64_t n = x.shape()[ax];
  AICC_CHECK(index >= 0 && index < n, "index {} is out of range for dim {}", index, n);
  Dims d = x.shape();
  d.erase(d.begin() + axis);
  Tensor out(x.dtype(), d);
  int64_t outer = prod(x.shape(), 0, ax), inner = prod(x.shape(), ax + 1, x.shape().size());
  for (int64_t o = 0; o < outer; ++o) copyElems(out, o * inner, x, (o * n + index) * inner, inner);
  return out;
}

bool scalarTruth(const Tensor& t, const char* what) {
  AICC_CHECK(t.numel() == 1, "{} must have exactly one element, got shape {}", what,
             formatDims(t.shape()));
  return t.getF64(0) != 0;
}

// ---- Sequence ops -------------------------------------------------------------------------------
namespace {

const std::vector<Tensor>& seqIn(KernelCtx& c, size_t i) {
  const RValue& v = c.value(i);
  AICC_CHECK(v.kind == RValue::Kind::Sequence, "input {} must be a sequence", i);
  return v.seq;
}

// The element type of sequence input i (Unknown when not known).
Type seqElem(InferCtx& c, size_t i) {
  const Type& t = c.inType(i);
  return t.kind == Type::Kind::Sequence && t.elem ? *t.elem : Type{};
}

// Position input `i` normalized into [0, n] (`allowEnd`) or [0, n); `dflt` when absent.
int64_t position(KernelCtx& c, size_t i, int64_t n, bool allowEnd, int64_t dflt) {
  if (!c.has(i)) return dflt;
  const Tensor& p = c.in(i);
  AICC_CHECK(p.dtype() == DType::I32 || p.dtype() == DType::I64, "position must be i32 or i64");
  AICC_CHECK(p.numel() == 1, "position must be a scalar");
  int64_t pos = p.getI64(0);
  int64_t hi = allowEnd ? n : n - 1;
  AICC_CHECK(pos >= -n && pos <= hi, "position {} is out of range for a sequence of {} tensors",
             pos, n);
  return pos < 0 ? pos + n : pos;
}

void registerSequenceCore(OpRegistry& r) {
  r.op("SequenceEmpty")
      .since(11)
      .inputs(0, 0)
      .attrInt("dtype", static_cast<int64_t>(DType::F32))
      .infer([](InferCtx& c) {
        auto dt = dtypeFromOnnx(static_cast<int32_t>(c.node.attrInt("dtype")));
        c.setOutput(0, Type::sequence(Type::tensor(dt ? *dt : DType::Undefined)));
      })
      .kernel([](KernelCtx&) { return std::vector<RValue>{RValue::ofSeq({})}; });

  r.op("SequenceConstruct")
      .since(11)
      .inputs(1, 1 << 30)
      .infer([](InferCtx& c) {
        Type e = c.inType(0);
        for (size_t i = 1; i < c.numInputs(); ++i) e = unionType(e, c.inType(i));
        c.setOutput(0, Type::sequence(e));
      })
      .kernel([](KernelCtx& c) {
        std::vector<Tensor> s;
        for (size_t i = 0; i < c.numInputs(); ++i) {
          s.push_back(c.in(i));
          AICC_CHECK(s.back().dtype() == s[0].dtype(), "all inputs must have one element type");
        }
        return std::vector<RValue>{RValue::ofSeq(std::move(s))};
      });

  r.op("SequenceAt")
      .since(11)
      .inputs(2, 2)
      .infer([](InferCtx& c) { c.setOutput(0, seqElem(c, 0)); })
      .dataDim(dataDimAtRunTime) // (an element's dims: the run's, no bound)
      .kernel([](KernelCtx& c) {
        const auto& s = seqIn(c, 0);
        AICC_CHECK(c.has(1), "position is required");
        int64_t p = position(c, 1, static_cast<int64_t>(s.size()), false, 0);
        return std::vector<RValue>{RValue::of(s[static_cast<size_t>(p)])};
      });

  r.op("SequenceInsert")
      .since(11)
      .inputs(2, 3)
      .infer([](InferCtx& c) {
        const Type& s = c.inType(0);
        Type e = c.inType(1);
        // Inserting into an empty sequence: the new element alone decides the element type.
        if (c.node.inputs[0]->producer && c.node.inputs[0]->producer->op == "SequenceEmpty") {
          Type declared = seqElem(c, 0);
          if (declared.dtype != DType::Undefined && e.isTensor() && declared.dtype != e.dtype)
            fail("cannot insert a {} tensor into a sequence of {}", dtypeName(e.dtype),
                 dtypeName(declared.dtype));
          c.setOutput(0, Type::sequence(e));
          return;
        }
        c.setOutput(0, s.kind == Type::Kind::Sequence ? Type::sequence(unionType(*s.elem, e))
                                                      : Type{});
      })
      .kernel([](KernelCtx& c) {
        std::vector<Tensor> s = seqIn(c, 0);
        const Tensor& t = c.in(1);
        AICC_CHECK(s.empty() || s[0].dtype() == t.dtype(),
                   "cannot insert a {} tensor into a sequence of {}", dtypeName(t.dtype()),
                   dtypeName(s[0].dtype()));
        int64_t n = static_cast<int64_t>(s.size());
        int64_t p = position(c, 2, n, true, n);
        s.insert(s.begin() + p, t);
        return std::vector<RValue>{RValue::ofSeq(std::move(s))};
      });

  r.op("SequenceErase")
      .since(11)
      .inputs(1, 2)
      .infer([](InferCtx& c) { c.setOutput(0, c.inType(0)); })
      .kernel([](KernelCtx& c) {
        std::vector<Tensor> s = seqIn(c, 0);
        int64_t n = static_cast<int64_t>(s.size());
        AICC_CHECK(n > 0, "cannot erase from an empty sequence");
        int64_t p = position(c, 1, n, false, n - 1);
        s.erase(s.begin() + p);
        return std::vector<RValue>{RValue::ofSeq(std::move(s))};
      });

  r.op("SequenceLength")
      .since(11)
      .inputs(1, 1)
      .infer([](InferCtx& c) { c.setTensor(0, DType::I64, Shape{}); })
      .kernel([](KernelCtx& c) {
        return std::vector<RValue>{
            RValue::of(Tensor::scalar(DType::I64, static_cast<double>(seqIn(c, 0).size())))};
      });
}

void registerSequenceTensorOps(OpRegistry& r) {
  r.op("ConcatFromSequence")
      .since(11)
      .inputs(1, 1)
      .attr("axis", Attribute::Kind::Int, true)
      .attrInt("new_axis", 0)
      .infer([](InferCtx& c) {
        Type e = seqElem(c, 0);
        if (!e.isTensor() || !e.shape) {
          c.setTensor(0, e.isTensor() ? e.dtype : DType::Undefined, std::nullopt);
          return;
        }
        bool newAxis = c.node.attrInt("new_axis") != 0;
        auto r = static_cast<int64_t>(e.shape->size());
        int64_t ax = normAxis(c.node.attrInt("axis"), newAxis ? r + 1 : r);
        Shape s = *e.shape;
        if (newAxis)
          s.insert(s.begin() + ax, Dim{});
        else
          s[static_cast<size_t>(ax)] = Dim{};
        c.setTensor(0, e.dtype, s);
      })
      .kernel([](KernelCtx& c) {
        const auto& s = seqIn(c, 0);
        AICC_CHECK(!s.empty(), "cannot concatenate an empty sequence");
        bool newAxis = c.node.attrInt("new_axis") != 0;
        int64_t r = s[0].rank();
        int64_t ax = normAxis(c.node.attrInt("axis"), newAxis ? r + 1 : r);
        return std::vector<RValue>{
            RValue::of(newAxis ? stackTensors(s, ax) : concatTensors(s, ax))};
      });

  r.op("SplitToSequence")
      .since(11)
      .inputs(1, 2)
      .attrInt("axis", 0)
      .attrInt("keepdims", 1)
      .infer([](InferCtx& c) {
        const auto& in = c.inShape(0);
        if (!in) {
          c.setOutput(0, Type::sequence(Type::tensor(c.inDType(0))));
          return;
        }
        int64_t ax = normAxis(c.node.attrInt("axis"), static_cast<int64_t>(in->size()));
        Shape s = *in;
        if (c.has(1))
          s[static_cast<size_t>(ax)] = Dim{};
        else if (c.node.attrInt("keepdims"))
          s[static_cast<size_t>(ax)] = Dim::known(1);
        else
          s.erase(s.begin() + ax);
        c.setOutput(0, Type::sequence(Type::tensor(c.inDType(0), s)));
      })
      .kernel([](KernelCtx& c) {
        const Tensor& x = c.in(0);
        int64_t ax = normAxis(c.node.attrInt("axis"), x.rank());
        int64_t n = x.dim(ax);
        std::vector<int64_t> sizes;
        bool squeeze = false;
        if (!c.has(1)) {
          sizes.assign(static_cast<size_t>(n), 1);
          squeeze = c.node.attrInt("keepdims") == 0;
        } else {
          const Tensor& sp = c.in(1);
          AICC_CHECK(sp.dtype() == DType::I32 || sp.dtype() == DType::I64,
                     "split must be i32 or i64");
          if (sp.rank() == 0) {
            int64_t k = sp.getI64(0);
            AICC_CHECK(k > 0, "split size must be positive, got {}", k);
            for (int64_t done = 0; done < n; done += k) sizes.push_back(std::min(k, n - done));
          } else {
            AICC_CHECK(sp.rank() == 1, "split must be a scalar or 1-D");
            sizes = sp.toI64Vector();
            int64_t total = 0;
            for (int64_t v : sizes) {
              AICC_CHECK(v >= 0, "split sizes must be non-negative");
              total += v;
            }
            AICC_CHECK(total == n, "split sizes sum to {} but the axis has {} elements", total, n);
          }
        }
        std::vector<Tensor> out;
        int64_t start = 0;
        auto ax_ = static_cast<size_t>(ax);
        int64_t outer = prod(x.shape(), 0, ax_), inner = prod(x.shape(), ax_ + 1, x.shape().size());
        for (int64_t len : sizes) {
          Dims d = x.shape();
          d[ax_] = len;
          Tensor t(x.dtype(), d);
          for (int64_t o = 0; o < outer; ++o)
            copyElems(t, o * len * inner, x, (o * n + start) * inner, len * inner);
          if (squeeze) {
            d.erase(d.begin() + ax);
            t = t.reshaped(d);
          }
          out.push_back(std::move(t));
          start += len;
        }
        return std::vector<RValue>{RValue::ofSeq(std::move(out))};
      });
}

void registerSequenceMap(OpRegistry& r) {
  r.op("SequenceMap")
      .since(17)
      .inputs(1, 1 << 30)
      .outputs(1, 1 << 30)
      .attr("body", Attribute::Kind::Graph, true)
      .infer([](InferCtx& c) {
        Graph& body = *std::get<GraphPtr>(c.node.attr("body")->v);
        AICC_CHECK(body.inputs.size() == c.numInputs(), "body takes {} inputs, the node has {}",
                   body.inputs.size(), c.numInputs());
        AICC_CHECK(body.outputs.size() == c.node.outputs.size(),
                   "body has {} outputs, the node has {}", body.outputs.size(),
                   c.node.outputs.size());
        for (size_t i = 0; i < c.numInputs(); ++i) {
          const Type& t = c.inType(i);
          setSubgraphInputType(body.inputs[i], t.kind == Type::Kind::Sequence ? *t.elem : t);
        }
        inferShapes(body, c.shapeValues());
        for (size_t i = 0; i < body.outputs.size(); ++i)
          c.setOutput(i, Type::sequence(body.outputs[i]->type));
      })
      .kernel([](KernelCtx& c) {
        const Graph& body = *std::get<GraphPtr>(c.node.attr("body")->v);
        size_t n = seqIn(c, 0).size();
        for (size_t i = 1; i < c.numInputs(); ++i)
          if (c.value(i).kind == RValue::Kind::Sequence)
            AICC_CHECK(c.value(i).seq.size() == n,
                       "input sequences have different lengths ({} and {})", n,
                       c.value(i).seq.size());
        std::vector<std::vector<Tensor>> outs(body.outputs.size());
        for (size_t k = 0; k < n; ++k) {
          std::vector<RValue> args;
          for (size_t i = 0; i < c.numInputs(); ++i) {
            const RValue& v = c.value(i);
            args.push_back(v.kind == RValue::Kind::Sequence ? RValue::of(v.seq[k]) : v);
          }
          auto res = c.runSubgraph(body, args);
          for (size_t j = 0; j < res.size() && j < outs.size(); ++j) {
            AICC_CHECK(res[j].kind == RValue::Kind::Tensor, "body output {} must be a tensor", j);
            outs[j].push_back(std::move(res[j].tensor));
          }
        }
        std::vector<RValue> r;
        for (auto& o : outs) r.push_back(RValue::ofSeq(std::move(o)));
        return r;
      });
}

void registerOptionalOps(OpRegistry& r) {
  r.op("Optional")
      .since(15)
      .inputs(0, 1)
      .attr("type", Attribute::Kind::Type)
      .infer([](InferCtx& c) {
        if (c.has(0))
          c.setOutput(0, Type::optional(c.inType(0)));
        else if (const Attribute* a = c.node.attr("type"))
          c.setOutput(0, Type::optional(std::get<Type>(a->v)));
        else
          fail("an Optional without input needs the 'type' attribute");
      })
      .kernel(
          [](KernelCtx& c) { return std::vector<RValue>{c.has(0) ? c.value(0) : RValue::none()}; });

  r.op("OptionalHasElement")
      .since(15)
      .inputs(0, 1)
      .infer([](InferCtx& c) { c.setTensor(0, DType::Bool, Shape{}); })
      .kernel([](KernelCtx& c) {
        return std::vector<RValue>{RValue::of(Tensor::scalar(DType::Bool, c.has(0) ? 1 : 0))};
      });

  r.op("OptionalGetElement")
      .since(15)
      .inputs(1, 1)
      .infer([](InferCtx& c) {
        const Type& t = c.inType(0);
        c.setOutput(0, t.kind == Type::Kind::Optional ? *t.elem : t);
      })
      .kernel([](KernelCtx& c) {
        AICC_CHECK(c.has(0), "the optional input is empty");
        return std::vector<RValue>{c.value(0)};
      });
}

} // namespace

void registerSequenceOps(OpRegistry& r) {
  registerSequenceCore(r);
  registerSequenceTensorOps(r);
  registerSequenceMap(r);
  registerOptionalOps(r);
}

} // namespace aicc
