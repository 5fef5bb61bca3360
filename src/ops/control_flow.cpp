// Control flow: If, Loop, Scan (this file) and the sequence/optional ops (control_flow_seq.cpp).
// Subgraphs run through KernelCtx::runSubgraph; their inference runs inferShapes on the body with
// the body's input types set from the node's inputs (merged with the types the model declares).
#include "ops/control_flow_seq.h"
#include "ops/helpers.h"
#include "passes/shape_inference.h"

#include <algorithm>
#include <limits>

namespace aicc {
namespace {

Graph& graphAttr(const Node& n, const std::string& name) {
  const Attribute* a = n.attr(name);
  AICC_CHECK(a && a->kind() == Attribute::Kind::Graph, "{}: missing graph attribute '{}'",
             n.describe(), name);
  return *std::get<GraphPtr>(a->v);
}

// Types of every value in a graph and its nested subgraphs, to re-run inference from scratch
// (inference merges with what a value already holds, so a second run must start clean).
struct TypeSnapshot {
  std::vector<std::pair<Value*, Type>> types;

  void take(Graph& g) {
    for (const auto& v : g.values()) types.emplace_back(v.get(), v->type);
    for (auto& n : g.nodes)
      for (auto& [_, a] : n->attrs) {
        if (auto* sg = std::get_if<GraphPtr>(&a.v)) take(**sg);
        if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
          for (auto& s : *sgs) take(*s);
      }
  }
  void restore(ShapeValues& sv) const {
    for (const auto& [v, t] : types) {
      v->type = t;
      sv.erase(v);
    }
  }
};

// A type with every dim unknown (rank kept): what a loop-carried value may become.
Type relaxed(const Type& t) {
  if (t.kind == Type::Kind::Tensor) {
    if (!t.shape) return t;
    return Type::tensor(t.dtype, Shape(t.shape->size()));
  }
  if (t.kind == Type::Kind::Sequence) return Type::sequence(relaxed(*t.elem));
  if (t.kind == Type::Kind::Optional) return Type::optional(relaxed(*t.elem));
  return t;
}

// Infers a loop body whose inputs are `before` + carried + `after` and whose carried outputs start
// at body.outputs[outOff]. Iterates to a fixed point (types only widen), so that the carried types
// cover every iteration; returns the carried types (initial values included).
std::vector<Type> inferLoopBody(InferCtx& c, Graph& body, const std::vector<Type>& before,
                                std::vector<Type> carried, const std::vector<Type>& after,
                                size_t outOff) {
  AICC_CHECK(body.inputs.size() == before.size() + carried.size() + after.size(),
             "the body takes {} inputs, expected {}", body.inputs.size(),
             before.size() + carried.size() + after.size());
  AICC_CHECK(body.outputs.size() >= outOff + carried.size(),
             "the body has {} outputs, expected at least {}", body.outputs.size(),
             outOff + carried.size());
  TypeSnapshot snap;
  snap.take(body);
  for (int round = 0;; ++round) {
    if (round > 0) snap.restore(c.shapeValues());
    if (round >= 3)
      for (Type& t : carried) t = relaxed(t);
    size_t k = 0;
    for (const Type& t : before) setSubgraphInputType(body.inputs[k++], t);
    for (const Type& t : carried) setSubgraphInputType(body.inputs[k++], t);
    for (const Type& t : after) setSubgraphInputType(body.inputs[k++], t);
    try {
      inferShapes(body, c.shapeValues());
    } catch (const Error&) {
      if (round >= 3) throw;
      round = 2; // too precise carried types may contradict later iterations: relax them
      continue;
    }
    bool stable = true;
    for (size_t i = 0; i < carried.size(); ++i) {
      Type u = unionType(carried[i], body.outputs[outOff + i]->type);
      if (!(u == carried[i])) stable = false;
      carried[i] = u;
    }
    if (stable || round >= 3) return carried;
  }
}

// Dim `d` inserted at `axis` of a tensor type's shape (the stacked scan outputs).
Type withNewAxis(const Type& t, int64_t axis, const Dim& d) {
  if (!t.isTensor()) return t.kind == Type::Kind::Unknown ? Type{} : Type::tensor(DType::Undefined);
  if (!t.shape) return Type::tensor(t.dtype);
  Shape s = *t.shape;
  int64_t a = normAxis(axis, static_cast<int64_t>(s.size()) + 1);
  s.insert(s.begin() + a, d);
  return Type::tensor(t.dtype, s);
}

// An empty stack of scan outputs (zero iterations): dims from the body's output type.
Tensor emptyStack(const Type& t) {
  Dims d{0};
  if (t.isTensor() && t.shape)
    for (const Dim& x : *t.shape) d.push_back(x.isStatic() ? x.value : 0);
  return Tensor(t.isTensor() && t.dtype != DType::Undefined ? t.dtype : DType::F32, d);
}

void registerIf(OpRegistry& r) {
  r.op("If")
      .since(1)
      .inputs(1, 1)
      .outputs(1, 1 << 30)
      .attr("then_branch", Attribute::Kind::Graph, true)
      .attr("else_branch", Attribute::Kind::Graph, true)
      // A result dim the branches give different sizes (both known): the run's condition picks
      // one, at most the larger (the sum where their difference is not a constant). Each such
      // dim its own symbol.
      .dataDim([](const Node& n, size_t out, size_t dim) -> std::optional<DataDim> {
        const Attribute* t = n.attr("then_branch");
        const Attribute* e = n.attr("else_branch");
        const GraphPtr* th = t ? std::get_if<GraphPtr>(&t->v) : nullptr;
        const GraphPtr* el = e ? std::get_if<GraphPtr>(&e->v) : nullptr;
        if (!th || !el || out >= (*th)->outputs.size() || out >= (*el)->outputs.size())
          return std::nullopt;
        const Type& a = (*th)->outputs[out]->type;
        const Type& b = (*el)->outputs[out]->type;
        if (!a.isTensor() || !b.isTensor() || !a.shape || !b.shape ||
            a.shape->size() != b.shape->size() || dim >= a.shape->size())
          return std::nullopt;
        const Dim &da = (*a.shape)[dim], &db = (*b.shape)[dim];
        const auto ea = dimExpr(da), eb = dimExpr(db);
        if (da == db || !ea || !eb) return std::nullopt;
        const auto diff = (*ea - *eb).constantValue();
        const Dim bound = diff ? (*diff >= 0 ? da : db) : dimOf(*ea + *eb);
        return DataDim{bound, int(out * 64 + dim)};
      })
      .infer([](InferCtx& c) {
        Graph& th = graphAttr(c.node, "then_branch");
        Graph& el = graphAttr(c.node, "else_branch");
        AICC_CHECK(th.outputs.size() == el.outputs.size() &&
                       th.outputs.size() >= c.node.outputs.size(),
                   "the branches have {} and {} outputs, the node {}", th.outputs.size(),
                   el.outputs.size(), c.node.outputs.size());
        // A branch whose static shapes provably fail can never be taken: the other decides.
        std::optional<Error> thErr, elErr;
        try {
          inferShapes(th, c.shapeValues());
        } catch (const Error& e) {
          thErr = e;
        }
        try {
          inferShapes(el, c.shapeValues());
        } catch (const Error& e) {
          elErr = e;
        }
        if (thErr && elErr) throw Error(fmt::format("then_branch: {}", thErr->what()));
        for (size_t i = 0; i < c.node.outputs.size(); ++i) {
          const Type& a = th.outputs[i]->type;
          const Type& b = el.outputs[i]->type;
          c.setOutput(i, thErr ? b : elErr ? a : unionType(a, b));
        }
      })
      .kernel([](KernelCtx& c) {
        bool cond = scalarTruth(c.in(0), "cond");
        return c.runSubgraph(graphAttr(c.node, cond ? "then_branch" : "else_branch"), {});
      });
}

void registerLoop(OpRegistry& r) {
  r.op("Loop")
      .since(1)
      .inputs(2, 1 << 30)
      .outputs(1, 1 << 30)
      .attr("body", Attribute::Kind::Graph, true)
      // The scan outputs' rows: one per iteration run, at most a constant trip count.
      .dataDim([](const Node& n, size_t out, size_t dim) -> std::optional<DataDim> {
        const Value* m = n.hasInput(0) ? n.inputs[0] : nullptr;
        if (out + 2 < n.inputs.size() || dim != 0 || !m || !m->constant ||
            m->constant->numel() != 1)
          return std::nullopt;
        return DataDim{Dim::known(std::max<int64_t>(m->constant->getI64(0), 0)), 0};
      })
      .infer([](InferCtx& c) {
        Graph& body = graphAttr(c.node, "body");
        size_t n = c.numInputs() - 2;
        std::vector<Type> carried;
        for (size_t i = 0; i < n; ++i) carried.push_back(c.inType(2 + i));
        carried = inferLoopBody(
            c, body, {Type::tensor(DType::I64, Shape{}), Type::tensor(DType::Bool, Shape{})},
            carried, {}, 1);
        for (size_t i = 0; i < n; ++i) c.setOutput(i, carried[i]);
        // Trip count: known when M is a constant and there is no condition.
        Dim trips;
        if (const auto* m = c.shapeValue(0); m && m->size() == 1 && !c.has(1)) trips = (*m)[0];
        for (size_t k = 0; n + k < c.node.outputs.size() && 1 + n + k < body.outputs.size(); ++k)
          c.setOutput(n + k, withNewAxis(body.outputs[1 + n + k]->type, 0, trips));
      })
      .kernel([](KernelCtx& c) {
        const Graph& body = graphAttr(c.node, "body");
        size_t n = c.numInputs() - 2;
        AICC_CHECK(body.inputs.size() == n + 2, "the body takes {} inputs, expected {}",
                   body.inputs.size(), n + 2);
        AICC_CHECK(body.outputs.size() >= n + 1, "the body has {} outputs, expected at least {}",
                   body.outputs.size(), n + 1);
        size_t k = body.outputs.size() - 1 - n;
        int64_t maxTrips = std::numeric_limits<int64_t>::max();
        if (c.has(0)) {
          AICC_CHECK(c.in(0).numel() == 1, "M must be a scalar");
          maxTrips = c.in(0).getI64(0);
        }
        bool cond = c.has(1) ? scalarTruth(c.in(1), "cond") : true;
        std::vector<RValue> state;
        for (size_t i = 0; i < n; ++i)
          state.push_back(c.has(2 + i) ? c.value(2 + i) : RValue::none());
        std::vector<std::vector<Tensor>> scans(k);
        std::vector<int64_t> scanBytes(k, 0); // the stacked result must stay allocatable
        for (int64_t it = 0; it < maxTrips && cond; ++it) {
          std::vector<RValue> args{RValue::of(Tensor::scalar(DType::I64, static_cast<double>(it))),
                                   RValue::of(Tensor::scalar(DType::Bool, cond ? 1 : 0))};
          args.insert(args.end(), state.begin(), state.end());
          std::vector<RValue> outs = c.runSubgraph(body, args);
          if (c.has(1)) {
            AICC_CHECK(outs[0].kind == RValue::Kind::Tensor,
                       "the body's condition output must be a tensor");
            cond = scalarTruth(outs[0].tensor, "the body's condition output");
          }
          for (size_t i = 0; i < n; ++i) state[i] = std::move(outs[1 + i]);
          for (size_t j = 0; j < k; ++j) {
            AICC_CHECK(outs[1 + n + j].kind == RValue::Kind::Tensor,
                       "scan output {} must be a tensor", j);
            scanBytes[j] += int64_t(outs[1 + n + j].tensor.nbytes());
            AICC_CHECK(scanBytes[j] <= kMaxTensorBytes,
                       "scan output {} grows past the {}-byte tensor limit after {} iterations "
                       "(trip count {})",
                       j, kMaxTensorBytes, it + 1, maxTrips);
            scans[j].push_back(std::move(outs[1 + n + j].tensor));
          }
        }
        std::vector<RValue> result = std::move(state);
        for (size_t j = 0; j < k; ++j)
          result.push_back(RValue::of(scans[j].empty() ? emptyStack(body.outputs[1 + n + j]->type)
                                                       : stackTensors(scans[j], 0)));
        return result;
      });
}

struct ScanAttrs {
  size_t numState = 0, numScan = 0;
  std::vector<int64_t> inAxes, inDirs, outAxes, outDirs;
};

ScanAttrs scanAttrs(const Node& n, size_t numInputs, size_t numBodyOutputs) {
  ScanAttrs s;
  int64_t m = n.attrInt("num_scan_inputs");
  AICC_CHECK(m >= 1 && static_cast<size_t>(m) <= numInputs,
             "num_scan_inputs {} is out of range for {} inputs", m, numInputs);
  s.numScan = static_cast<size_t>(m);
  s.numState = numInputs - s.numScan;
  AICC_CHECK(numBodyOutputs >= s.numState, "the body has {} outputs but there are {} states",
             numBodyOutputs, s.numState);
  size_t k = numBodyOutputs - s.numState;
  auto get = [&](const char* name, size_t count, std::vector<int64_t>& out) {
    out = n.attrInts(name, std::vector<int64_t>(count, 0));
    AICC_CHECK(out.size() == count, "attribute '{}' has {} entries, expected {}", name, out.size(),
               count);
  };
  get("scan_input_axes", s.numScan, s.inAxes);
  get("scan_input_directions", s.numScan, s.inDirs);
  get("scan_output_axes", k, s.outAxes);
  get("scan_output_directions", k, s.outDirs);
  return s;
}

// Scan-8 had a leading sequence_lens input and a batch axis 0 on every input and output. It is
// the Scan-9 form mapped over the batch: an outer Scan over axis 0 (no states) whose body is the
// original Scan over the sequence axis (axis 0 once the batch axis is gone).
void upgradeScan8(ImportCtx& ctx) {
  Node& n = ctx.node;
  AICC_CHECK(!n.hasInput(0), "unsupported: Scan-8 with a sequence_lens input");
  GraphPtr body = std::get<GraphPtr>(n.attr("body")->v);
  int64_t m = n.attrInt("num_scan_inputs");
  size_t numIn = n.inputs.size() - 1;
  AICC_CHECK(m >= 1 && static_cast<size_t>(m) <= numIn, "num_scan_inputs {} is out of range", m);
  AICC_CHECK(body->inputs.size() == numIn, "the body takes {} inputs, the node has {}",
             body->inputs.size(), numIn);
  auto outer = std::make_shared<Graph>();
  outer->parent = &ctx.graph;
  outer->name = body->name + "_batch";
  std::vector<Value*> ins;
  for (size_t i = 0; i < numIn; ++i)
    ins.push_back(outer->addInput(outer->uniqueName(body->inputs[i]->name + "_batch"), Type{}));
  std::vector<std::string> outNames;
  for (size_t i = 0; i < body->outputs.size(); ++i)
    outNames.push_back(outer->uniqueName(body->outputs[i]->name + "_batch"));
  Node* inner = outer->addNode("Scan", ins, outNames);
  inner->def = n.def;
  inner->name = n.name.empty() ? "scan8_inner" : n.name + "_inner";
  body->parent = outer.get();
  inner->attrs["body"] = Attribute{body};
  inner->attrs["num_scan_inputs"] = Attribute{m};
  if (const Attribute* d = n.attr("directions")) inner->attrs["scan_input_directions"] = *d;
  for (Value* o : inner->outputs) outer->outputs.push_back(o);
  n.inputs.erase(n.inputs.begin());
  n.attrs.erase("directions");
  n.attrs["body"] = Attribute{GraphPtr(outer)};
  n.attrs["num_scan_inputs"] = Attribute{static_cast<int64_t>(numIn)};
}

void registerScan(OpRegistry& r) {
  r.op("Scan")
      .since(8)
      .inputs(1, 1 << 30)
      .outputs(1, 1 << 30)
      .attr("body", Attribute::Kind::Graph, true)
      .attr("num_scan_inputs", Attribute::Kind::Int, true)
      .attr("scan_input_axes", Attribute::Kind::Ints)
      .attr("scan_input_directions", Attribute::Kind::Ints)
      .attr("scan_output_axes", Attribute::Kind::Ints)
      .attr("scan_output_directions", Attribute::Kind::Ints)
      .upgrade(8, 8, upgradeScan8, {{"directions", Attribute::Kind::Ints, std::nullopt, false}})
      .infer([](InferCtx& c) {
        Graph& body = graphAttr(c.node, "body");
        ScanAttrs s = scanAttrs(c.node, c.numInputs(), body.outputs.size());
        std::vector<Type> states, slices;
        for (size_t i = 0; i < s.numState; ++i) states.push_back(c.inType(i));
        Dim len;
        for (size_t j = 0; j < s.numScan; ++j) {
          const Type& t = c.inType(s.numState + j);
          if (!t.isTensor() || !t.shape) {
            slices.push_back(Type::tensor(t.isTensor() ? t.dtype : DType::Undefined));
            continue;
          }
          Shape sh = *t.shape;
          int64_t ax = normAxis(s.inAxes[j], static_cast<int64_t>(sh.size()));
          if (j == 0) len = sh[static_cast<size_t>(ax)];
          sh.erase(sh.begin() + ax);
          slices.push_back(Type::tensor(t.dtype, sh));
        }
        states = inferLoopBody(c, body, {}, states, slices, 0);
        for (size_t i = 0; i < s.numState; ++i) c.setOutput(i, states[i]);
        for (size_t k = 0; s.numState + k < c.node.outputs.size() && k < s.outAxes.size(); ++k)
          c.setOutput(s.numState + k,
                      withNewAxis(body.outputs[s.numState + k]->type, s.outAxes[k], len));
      })
      .kernel([](KernelCtx& c) {
        const Graph& body = graphAttr(c.node, "body");
        ScanAttrs s = scanAttrs(c.node, c.numInputs(), body.outputs.size());
        AICC_CHECK(body.inputs.size() == c.numInputs(), "the body takes {} inputs, the node has {}",
                   body.inputs.size(), c.numInputs());
        std::vector<RValue> state;
        for (size_t i = 0; i < s.numState; ++i) state.push_back(c.value(i));
        int64_t len = -1;
        std::vector<int64_t> axes;
        for (size_t j = 0; j < s.numScan; ++j) {
          const Tensor& x = c.in(s.numState + j);
          int64_t ax = normAxis(s.inAxes[j], x.rank());
          AICC_CHECK(x.rank() >= 1, "scan input {} must have rank >= 1", j);
          AICC_CHECK(len < 0 || x.dim(ax) == len, "scan inputs have different lengths ({} and {})",
                     len, x.dim(ax));
          len = x.dim(ax);
          axes.push_back(ax);
        }
        size_t k = s.outAxes.size();
        std::vector<std::vector<Tensor>> scans(k);
        for (int64_t t = 0; t < len; ++t) {
          std::vector<RValue> args = state;
          for (size_t j = 0; j < s.numScan; ++j)
            args.push_back(RValue::of(
                sliceAlong(c.in(s.numState + j), axes[j], s.inDirs[j] ? len - 1 - t : t)));
          std::vector<RValue> outs = c.runSubgraph(body, args);
          for (size_t i = 0; i < s.numState; ++i) state[i] = std::move(outs[i]);
          for (size_t j = 0; j < k; ++j) {
            AICC_CHECK(outs[s.numState + j].kind == RValue::Kind::Tensor,
                       "scan output {} must be a tensor", j);
            scans[j].push_back(std::move(outs[s.numState + j].tensor));
          }
        }
        std::vector<RValue> result = std::move(state);
        for (size_t j = 0; j < k; ++j) {
          if (scans[j].empty()) {
            Tensor e = emptyStack(body.outputs[s.numState + j]->type);
            Dims d(e.shape().begin() + 1, e.shape().end());
            d.insert(d.begin() + normAxis(s.outAxes[j], e.rank()), 0);
            result.push_back(RValue::of(e.reshaped(d)));
            continue;
          }
          if (s.outDirs[j]) std::reverse(scans[j].begin(), scans[j].end());
          int64_t ax = normAxis(s.outAxes[j], scans[j][0].rank() + 1);
          result.push_back(RValue::of(stackTensors(scans[j], ax)));
        }
        return result;
      });
}

} // namespace

void registerControlFlowOps(OpRegistry& r) {
  registerIf(r);
  registerLoop(r);
  registerScan(r);
  registerSequenceOps(r);
}

} // namespace aicc
