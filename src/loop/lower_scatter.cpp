// ScatterND and ScatterElements as loop nests: out = data, then serially over the indices
// (later duplicates win, or combine by `reduction`) the updates, with the reference kernels'
// semantics; indices given at run time are checked by the runtime and clamped.
#include "loop/lower_ops.h"

namespace aicc::loop::detail {

namespace {

// ScatterND's combination of the current value `a` with the update `u`, as the reference kernel
// computes it (max/min keep `a` unless `u` is strictly larger/smaller, like std::max/std::min).
ExprPtr scatterCombine(const std::string& red, ExprPtr a, ExprPtr u) {
  if (red == "none") return u;
  if (red == "add") return add(a, u);
  if (red == "mul") return mul(a, u);
  if (red == "max") return select(cmp(Op::Lt, a, u), u, a);
  if (red == "min") return select(cmp(Op::Lt, u, a), u, a);
  no("scatter reduction '" + red + "'");
}

// The body of one index tuple `tv` of ScatterND: lets for its k coordinates (negative ones
// wrapped), then the update slice stored/combined into `out` when the tuple is in range (out of
// range is an error, checked before: at compile time for constant indices, else by the runtime).
Block scatterTuple(FuncBuilder& b, const std::string& tv, const std::string& out,
                   const std::string& ind, const std::string& upd, const Dims& dd, int64_t k,
                   int64_t slice, const LowerOptions& o) {
  const DType t = b.node.outputs[0]->type.dtype, it = b.node.inputs[1]->type.dtype;
  auto ds = strides(dd);
  Block body;
  ExprPtr off = intImm(0), inRange;
  for (int64_t j = 0; j < k; ++j) {
    ExprPtr raw = load(ind, add(mul(var(tv), intImm(k)), intImm(j)), it);
    if (it != DType::I64) raw = cast(DType::I64, raw);
    std::string c = b.fresh("c" + std::to_string(j));
    body.push_back(Stmt::let(c, select(cmp(Op::Lt, raw, intImm(0)), add(raw, intImm(dd[j])), raw)));
    ExprPtr ok =
        binary(Op::And, cmp(Op::Ge, var(c), intImm(0)), cmp(Op::Lt, var(c), intImm(dd[j])));
    inRange = inRange ? binary(Op::And, inRange, ok) : ok;
    off = add(off, mul(var(c), intImm(ds[j])));
  }
  std::string sv = b.fresh("s");
  ExprPtr dst = add(off, var(sv)), src = add(mul(var(tv), intImm(slice)), var(sv));
  ExprPtr v = scatterCombine(b.node.attrString("reduction"), load(out, dst, t), load(upd, src, t));
  body.push_back(Stmt::ifThen(inRange, nest({sv}, {slice}, {Stmt::store(out, dst, v)}, false,
                                            vectorWidthFor(o, t, slice))));
  return body;
}

// The checks ScatterND and ScatterElements share: shapes static, int32/int64 indices, data,
// updates and output of one type, a known reduction (none on bool).
struct ScatterOperands {
  Dims dd, xd, ud; // data, indices, updates
  DType t, it;     // element and index types
  std::string red;
};
ScatterOperands scatterOperands(const Node& n) {
  ScatterOperands s{staticDims(n.inputs.at(0), "data"),
                    staticDims(n.inputs.at(1), "indices"),
                    staticDims(n.inputs.at(2), "updates"),
                    n.outputs[0]->type.dtype,
                    n.inputs[1]->type.dtype,
                    n.attrString("reduction")};
  scatterCombine(s.red, intImm(0), intImm(0)); // declines unknown reductions
  if (s.it != DType::I64 && s.it != DType::I32) no("indices must be int32/int64");
  if (s.t == DType::Bool && s.red != "none") no(n.op + " reduction '" + s.red + "' on bool");
  if (s.dd != staticDims(n.outputs[0], "output") || n.inputs[0]->type.dtype != s.t ||
      n.inputs[2]->type.dtype != s.t)
    no("data, updates and output differ in type or shape");
  return s;
}

} // namespace

// ScatterND: out = data, then for each index tuple (in order: with duplicate indices the last
// update wins, or all combine) the update slice at the tuple's offset.
std::optional<LoweredNode> lowerScatterND(const Node& n, const std::string& name,
                                          const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  const auto [dd, xd, ud, t, it, red] = scatterOperands(n);
  if (xd.empty() || xd.back() < 1 || xd.back() > static_cast<int64_t>(dd.size()))
    no("indices' last dim is out of range for the data rank");
  const int64_t k = xd.back();
  Dims want(xd.begin(), xd.end() - 1), sliceDims(dd.begin() + k, dd.end());
  want.insert(want.end(), sliceDims.begin(), sliceDims.end());
  if (ud != want) no("updates shape " + formatDims(ud) + ", expected " + formatDims(want));
  // An out-of-range index is an error (the reference kernel reports it): constant ones are
  // checked here, those given at run time by the runtime, one tuple component at a time against
  // its own dim (checkIndexTuples); a tuple out of range is skipped besides (scatterTuple).
  const Tensor* ic = n.inputs[1]->constant ? &*n.inputs[1]->constant : nullptr;
  for (int64_t e = 0; ic && e < ic->numel(); ++e) {
    int64_t v = ic->getI64(e), dim = dd[size_t(e % k)];
    if (v < -dim || v >= dim) no("ScatterND index " + std::to_string(v) + " is out of range");
  }
  std::string data = b.input(n.inputs[0]), ind = b.input(n.inputs[1]), upd = b.input(n.inputs[2]);
  const int64_t total = numel(dd);
  std::string i = b.fresh("i"), tv = b.fresh("t");
  Block body =
      ic ? Block{}
         : checkIndexTuples(b, ind, it, numel(xd) / k, Dims(dd.begin(), dd.begin() + k), o);
  for (auto& s : nest({i}, {total}, {Stmt::store(out, var(i), load(data, var(i), t))}, true,
                      vectorWidthFor(o, t, total)))
    body.push_back(std::move(s));
  // Serial over tuples: later tuples see (and may overwrite) earlier ones.
  for (auto& s : nest({tv}, {numel(xd) / k},
                      scatterTuple(b, tv, out, ind, upd, dd, k, numel(sliceDims), o), false))
    body.push_back(std::move(s));
  Schedule s;
  s["reduction"] = red;
  return b.finish(std::move(body), std::move(s), o);
}

// TensorScatter (a KV cache's update): out = past_cache, then each batch row's update written
// along `axis` from write_indices[b] (0 when omitted); "circular" wraps modulo the cache length,
// "linear" needs the update to fit: write indices outside [0, cache - update] are the run's error
// (checkValuesBelow), and the stores clamp besides.
std::optional<LoweredNode> lowerTensorScatter(const Node& n, const std::string& name,
                                              const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  const Dims pd = staticDims(n.inputs.at(0), "past_cache"),
             ud = staticDims(n.inputs.at(1), "update");
  const DType t = n.outputs[0]->type.dtype;
  if (t == DType::String || n.inputs[1]->type.dtype != t)
    no("TensorScatter of strings or mixed types");
  if (pd.size() < 2 || ud.size() != pd.size() || staticDims(n.outputs[0], "output") != pd)
    no("past_cache, update and output shapes");
  const size_t axis = size_t(normAxis(n.attrInt("axis", -2), pd.size(), n));
  if (axis == 0) no("axis 0 (the batch)");
  for (size_t i = 0; i < pd.size(); ++i)
    if (i == axis ? ud[i] > pd[i] : ud[i] != pd[i]) no("an update that does not fit the cache");
  const bool circular = n.attrString("mode") == "circular";
  if (!circular && n.attrString("mode") != "linear") no("mode " + n.attrString("mode"));
  const int64_t B = pd[0], M = pd[axis], L = ud[axis];
  int64_t outer = 1, inner = 1;
  for (size_t i = 1; i < axis; ++i) outer *= pd[i];
  for (size_t i = axis + 1; i < pd.size(); ++i) inner *= pd[i];
  const std::string past = b.input(n.inputs[0]), upd = b.input(n.inputs[1]), out = b.output(0);
  const std::string wi = n.hasInput(2) ? b.input(n.inputs[2]) : "";
  if (!wi.empty() && (n.inputs[2]->type.dtype != DType::I64 ||
                      numel(staticDims(n.inputs[2], "write_indices")) != B))
    no("write_indices that are not int64 [batch]");
  const int64_t total = numel(pd);
  const std::string iv = b.fresh("i"), bv = b.fresh("b"), ov = b.fresh("o"), sv = b.fresh("s"),
                    ev = b.fresh("e");
  Block body = wi.empty() || circular ? Block{} : checkValuesBelow(wi, DType::I64, B, M - L + 1, o);
  for (auto& st : nest({iv}, {total}, {Stmt::store(out, var(iv), load(past, var(iv), t))}, true,
                       vectorWidthFor(o, t, total)))
    body.push_back(std::move(st));
  const ExprPtr w = wi.empty() ? intImm(0) : load(wi, var(bv), DType::I64);
  ExprPtr dst = add(w, var(sv));
  dst = circular ? mod(add(mod(dst, intImm(M)), intImm(M)), intImm(M)) : clampIndex(dst, M);
  const ExprPtr bo = add(mul(var(bv), intImm(outer)), var(ov));
  for (auto& st :
       nest({bv, ov, sv, ev}, {B, outer, L, inner},
            {Stmt::store(
                out, add(mul(add(mul(bo, intImm(M)), dst), intImm(inner)), var(ev)),
                load(upd, add(mul(add(mul(bo, intImm(L)), var(sv)), intImm(inner)), var(ev)), t))},
            false))
    body.push_back(std::move(st));
  Schedule sch;
  sch["mode"] = n.attrString("mode");
  return b.finish(std::move(body), std::move(sch), o);
}

// ScatterElements: out = data, then for each element of `indices` (in order: later duplicates
// win, or combine by `reduction`) out at the element's own coordinates with the one along `axis`
// replaced by the index = the update. Indices computed at run time are checked by the runtime
// (@check_indices_*) and clamped, so the stores stay inside `out`.
std::optional<LoweredNode> lowerScatterElements(const Node& n, const std::string& name,
                                                const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  const auto [dd, xd, ud, t, it, red] = scatterOperands(n);
  if (ud != xd || xd.size() != dd.size() || dd.empty()) no("indices and updates do not match");
  const size_t axis = static_cast<size_t>(normAxis(n.attrInt("axis"), dd.size(), n));
  for (size_t d = 0; d < dd.size(); ++d)
    if (d != axis && xd[d] > dd[d]) no("indices larger than the data off the axis");
  std::string data = b.input(n.inputs[0]), ind = b.input(n.inputs[1]), upd = b.input(n.inputs[2]);
  // Symbolic sizes: the data (and the result, its copy) and the indices (and the updates) at
  // their run dims.
  const std::vector<ExprPtr> dr = runDims(o, n.inputs[0], dd), xr = runDims(o, n.inputs[1], xd);
  if (!sameRunDims(dd, runDims(o, n.outputs[0], dd), dr) ||
      !sameRunDims(xd, runDims(o, n.inputs[2], ud), xr))
    no("a result or updates of other dims than the data or the indices");
  const ExprPtr total = product(dr);
  std::string i = b.fresh("i");
  Block body = checkIndices(ind, it, product(xr), dr[axis], o);
  for (auto& s : runNest({i}, {total}, {Stmt::store(out, var(i), load(data, var(i), t))}, true,
                         vectorWidthFor(o, t, numel(dd))))
    body.push_back(std::move(s));
  std::vector<std::string> vs;
  for (size_t d = 0; d < xd.size(); ++d) vs.push_back(b.fresh("e" + std::to_string(d)));
  std::vector<ExprPtr> at = vars(vs), to = vars(vs);
  const ExprPtr src = runIndex(at, stridesOf(xr));
  to[axis] = clampedIndex(load(ind, src, it), it, dr[axis]);
  const ExprPtr dst = runIndex(to, stridesOf(dr));
  // Serial: later elements see (and may overwrite) earlier ones.
  for (auto& s :
       runNest(vs, xr,
               {Stmt::store(out, dst, scatterCombine(red, load(out, dst, t), load(upd, src, t)))},
               false))
    body.push_back(std::move(s));
  Schedule s;
  s["reduction"] = red;
  return b.finish(std::move(body), std::move(s), o);
}

} // namespace aicc::loop::detail
