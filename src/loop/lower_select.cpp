// Ops whose result size is the count of something in the run's data (passes/data_dims.h):
// NonZero (the coordinates of the nonzero elements), Compress (the slices the condition keeps)
// and Unique (the distinct slices). Each counts first, in one serial pass, hands the count to
// setDataDim (which stores it into the shape block as the data symbol's value, for the tasks after
// it), then writes its result densely at that count. The plan holds the bound (every element
// nonzero, every slice kept), so the counts always fit.
#include "loop/lower_ops.h"

namespace aicc::loop::detail {

namespace {

// The count's statement for dim k of the node's result, and the size to write it at: the data
// symbol's store (setDataDim) and `count`; or, where the model declares that dim (an exporter's
// fixed output shape), the runtime's check that the count (in buffer `cnt`) is it, and it.
std::pair<Stmt, ExprPtr> dataDim(const Node& n, const LowerOptions& o, size_t k,
                                 const ExprPtr& count, const std::string& cnt, size_t out = 0) {
  if (auto st = o.setDataDim ? o.setDataDim(n.outputs.at(out), k, count) : std::nullopt)
    return {*st, count};
  if (!o.runtimeKernels)
    no(n.op + "'s result size is data-dependent (checked by the runtime only)");
  const int64_t declared = staticDims(n.outputs[out], "result").at(k);
  return {checkValuesI64(cnt, std::vector<int64_t>{declared}), intImm(declared)};
}

// NonZero: pass 1 counts the nonzero elements (NaN counts, as x != 0); pass 2 writes each one's
// coordinates, dim d of the j-th at out[d * count + j].
std::optional<LoweredNode> lowerNonZero(const Node& n, const std::string& name,
                                        const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  const Value* x = n.inputs.at(0);
  const Dims id = staticDims(x, "input");
  const std::vector<ExprPtr> ir = runDims(o, x, id), stride = stridesOf(ir);
  const DType t = x->type.dtype;
  const std::string in = b.input(x), out = b.output(0), cnt = b.temp("count", DType::I64, {1}),
                    total = b.fresh("total"), iv = b.fresh("i"), jv = b.fresh("j");
  const ExprPtr E = product(ir), c = load(cnt, intImm(0), DType::I64);
  auto nonzero = [&](const ExprPtr& i) { return cmp(Op::Ne, load(in, i, t), constant(t, 0)); };
  Block body = {Stmt::store(cnt, intImm(0), intImm(0)),
                Stmt::forLoop(iv, intImm(0), E,
                              {Stmt::ifThen(nonzero(var(iv)),
                                            {Stmt::store(cnt, intImm(0), add(c, intImm(1)))})}),
                Stmt::let(total, min(c, E))};
  auto [set, size] = dataDim(n, o, 1, var(total), cnt);
  body.push_back(std::move(set));
  Block write;
  for (size_t d = 0; d < id.size(); ++d) // (i / stride_d) % dim_d: its coordinate d
    write.push_back(Stmt::store(out,
                                add(mul(intImm(int64_t(d)), size), min(c, sub(size, intImm(1)))),
                                mod(div(var(jv), stride[d]), ir[d])));
  write.push_back(Stmt::store(cnt, intImm(0), add(c, intImm(1))));
  body.push_back(Stmt::store(cnt, intImm(0), intImm(0)));
  body.push_back(Stmt::forLoop(jv, intImm(0), E, {Stmt::ifThen(nonzero(var(jv)), write)}));
  return b.finish(std::move(body), {}, o);
}

// Compress: the positions the condition keeps (the first min(its length, the dim) of it) into a
// temp, then a gather of those slices along the axis (of the flattened input without one).
std::optional<LoweredNode> lowerCompress(const Node& n, const std::string& name,
                                         const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  const Value* x = n.inputs.at(0);
  const Dims id = staticDims(x, "input"), cd = staticDims(n.inputs.at(1), "condition");
  if (cd.size() != 1) no("a condition that is not 1-D");
  const std::vector<ExprPtr> ir = runDims(o, x, id);
  const bool flat = !n.attrs.count("axis");
  const size_t a = flat ? 0 : size_t(normAxis(n.attrInt("axis"), id.size(), n));
  const ExprPtr outer = flat ? intImm(1) : product(ir, 0, a), len = flat ? product(ir) : ir.at(a),
                inner = flat ? intImm(1) : product(ir, a + 1);
  const int64_t lenBound = flat ? numel(id) : id.at(a);
  const DType t = x->type.dtype;
  const std::string in = b.input(x), cond = b.input(n.inputs[1]), out = b.output(0),
                    cnt = b.temp("count", DType::I64, {1}),
                    pos = b.temp("kept", DType::I64, {std::max<int64_t>(lenBound, 1)}),
                    total = b.fresh("total"), jv = b.fresh("j"), ov = b.fresh("o"),
                    qv = b.fresh("q"), iv = b.fresh("i");
  const ExprPtr c = load(cnt, intImm(0), DType::I64);
  const ExprPtr keep = cmp(Op::Ne, load(cond, var(jv), n.inputs[1]->type.dtype),
                           constant(n.inputs[1]->type.dtype, 0));
  Block body = {
      Stmt::store(cnt, intImm(0), intImm(0)),
      Stmt::forLoop(jv, intImm(0), min(len, runDims(o, n.inputs[1], cd)[0]),
                    {Stmt::ifThen(keep, {Stmt::store(pos, min(c, intImm(lenBound - 1)), var(jv)),
                                         Stmt::store(cnt, intImm(0), add(c, intImm(1)))})}),
      Stmt::let(total, min(c, len))};
  auto [set, size] = dataDim(n, o, a, var(total), cnt);
  body.push_back(std::move(set));
  // (The result's dims other than the kept one are the input's: read as the result's.)
  const std::vector<ExprPtr> rd = runDims(o, n.outputs[0], staticDims(n.outputs[0], "output"));
  const ExprPtr from = clampIndex(load(pos, var(qv), DType::I64), lenBound);
  Block copy = {Stmt::store(out, add(mul(add(mul(var(ov), size), var(qv)), inner), var(iv)),
                            load(in, add(mul(add(mul(var(ov), len), from), inner), var(iv)), t))};
  for (auto& st :
       runNest({ov, qv, iv},
               {flat ? outer : product(rd, 0, a), size, flat ? inner : product(rd, a + 1)},
               std::move(copy), false))
    body.push_back(std::move(st));
  return b.finish(std::move(body), {}, o);
}

// Unique's inputs of at most this many slices compile: the compares are quadratic in it (a
// longer one runs on its reference kernel, which sorts).
constexpr int64_t kMaxUniqueSlices = 4096;

// Unique (along the axis, or over the elements): pass 1 finds each slice's first equal slice
// (its representative; a slice that is its own is new), comparing slices lexicographically in
// one loop (the first differing element decides, as the reference's order does); pass 2 gives
// each new slice its place: the number of new slices before it in order (sorted) or before it in
// the input; the count of new slices is the data symbol (passes/data_dims.h); pass 3 writes the
// values, the first indices, each slice's inverse index and the counts.
std::optional<LoweredNode> lowerUnique(const Node& n, const std::string& name,
                                       const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  const Value* x = n.inputs.at(0);
  if (x->type.dtype == DType::String) no("Unique of strings");
  const Dims id = staticDims(x, "input");
  const std::vector<ExprPtr> ir = runDims(o, x, id);
  const bool flat = !n.attrs.count("axis");
  const size_t a = flat ? 0 : size_t(normAxis(n.attrInt("axis"), id.size(), n));
  const int64_t bound = flat ? numel(id) : id.at(a);
  if (bound > kMaxUniqueSlices)
    no(fmt::format("Unique of {} slices (compiled up to {}: quadratic compares)", bound,
                   kMaxUniqueSlices));
  const ExprPtr L = flat ? product(ir) : ir.at(a), outer = flat ? intImm(1) : product(ir, 0, a),
                inner = flat ? intImm(1) : product(ir, a + 1);
  auto out = [&](size_t k) { return k < n.outputs.size() && n.outputs[k]; };
  for (size_t k = 0; k < n.outputs.size(); ++k) // (every dim read as the run's)
    if (out(k)) runDims(o, n.outputs[k], staticDims(n.outputs[k], "result"));
  const DType t = x->type.dtype;
  const int64_t L1 = std::max<int64_t>(bound, 1);
  const std::string in = b.input(x), rep = b.temp("rep", DType::I64, {L1}),
                    pos = b.temp("pos", DType::I64, {L1}), state = b.temp("order", DType::I64, {1}),
                    cnt = b.temp("count", DType::I64, {1}), iv = b.fresh("i"), jv = b.fresh("j"),
                    total = b.fresh("total");
  const ExprPtr st = load(state, intImm(0), DType::I64), c = load(cnt, intImm(0), DType::I64);
  // Element (o, e) of a slice.
  auto at = [&](const std::string& ov, const std::string& ev, const ExprPtr& slice) {
    return add(mul(add(mul(var(ov), L), slice), inner), var(ev));
  };
  // order := 0 when slices p and q are equal, 1 when p comes first, 2 when q does.
  auto compare = [&](const ExprPtr& p, const ExprPtr& q) {
    const std::string ov = b.fresh("o"), ev = b.fresh("e");
    const ExprPtr vp = load(in, at(ov, ev, p), t), vq = load(in, at(ov, ev, q), t);
    Block body = {Stmt::store(state, intImm(0), intImm(0))};
    for (auto& l : runNest(
             {ov, ev}, {outer, inner},
             {Stmt::ifThen(
                 cmp(Op::Eq, st, intImm(0)),
                 {Stmt::ifThen(cmp(Op::Ne, vp, vq),
                               {Stmt::store(state, intImm(0),
                                            select(cmp(Op::Lt, vp, vq), intImm(1), intImm(2)))})})},
             false))
      body.push_back(std::move(l));
    return body;
  };
  const ExprPtr i = var(iv), j = var(jv), repI = load(rep, i, DType::I64);
  const ExprPtr isNew = cmp(Op::Eq, repI, i);
  // Pass 1: rep[i], the first slice equal to slice i.
  Block find = compare(j, i);
  find.push_back(
      Stmt::ifThen(cmp(Op::Eq, st, intImm(0)), {Stmt::ifThen(isNew, {Stmt::store(rep, i, j)})}));
  Block body = {Stmt::forLoop(iv, intImm(0), L,
                              {Stmt::store(rep, i, i), Stmt::forLoop(jv, intImm(0), i, find)})};
  // Pass 2: each new slice's place; their count.
  body.push_back(Stmt::store(cnt, intImm(0), intImm(0)));
  Block place;
  if (n.attrInt("sorted", 1)) {
    Block before = compare(j, i); // new slices j ordered before i
    before.push_back(Stmt::ifThen(cmp(Op::Eq, st, intImm(1)),
                                  {Stmt::store(pos, i, add(load(pos, i, DType::I64), intImm(1)))}));
    place = {Stmt::store(pos, i, intImm(0)),
             Stmt::forLoop(jv, intImm(0), L,
                           {Stmt::ifThen(cmp(Op::Eq, load(rep, j, DType::I64), j), before)})};
  } else {
    place = {Stmt::store(pos, i, c)};
  }
  place.push_back(Stmt::store(cnt, intImm(0), add(c, intImm(1))));
  body.push_back(Stmt::forLoop(iv, intImm(0), L, {Stmt::ifThen(isNew, place)}));
  body.push_back(Stmt::let(total, min(c, L)));
  const size_t first = out(0) ? 0 : out(1) ? 1 : 3; // an output that has the count
  if (out(first)) {
    auto [set, size] = dataDim(n, o, first == 0 && !flat ? a : 0, var(total), cnt, first);
    body.push_back(std::move(set));
    // Pass 3: values, first indices and zero counts at each new slice's place; then each slice's
    // inverse index and its count.
    // (indices into the results clamped to their planned rows: the bound, or a declared size)
    auto rows = [&](size_t k) { return staticDims(n.outputs[k], "result").at(k == 0 ? a : 0); };
    const ExprPtr p = load(pos, i, DType::I64);
    Block write;
    if (out(0)) {
      const std::string ov = b.fresh("o"), ev = b.fresh("e");
      const ExprPtr to = add(mul(add(mul(var(ov), size), clampIndex(p, rows(0))), inner), var(ev));
      for (auto& l : runNest({ov, ev}, {outer, inner},
                             {Stmt::store(b.output(0), to, load(in, at(ov, ev, i), t))}, false))
        write.push_back(std::move(l));
    }
    if (out(1)) write.push_back(Stmt::store(b.output(1), clampIndex(p, rows(1)), i));
    if (out(3)) write.push_back(Stmt::store(b.output(3), clampIndex(p, rows(3)), intImm(0)));
    body.push_back(Stmt::forLoop(iv, intImm(0), L, {Stmt::ifThen(isNew, write)}));
  }
  if (out(2) || out(3)) {
    const ExprPtr p = load(pos, clampIndex(repI, L1), DType::I64);
    Block each;
    if (out(2)) each.push_back(Stmt::store(b.output(2), i, p));
    if (out(3)) {
      const ExprPtr q = clampIndex(p, staticDims(n.outputs[3], "counts").at(0));
      each.push_back(Stmt::store(b.output(3), q, add(load(b.output(3), q, DType::I64), intImm(1))));
    }
    body.push_back(Stmt::forLoop(iv, intImm(0), L, each));
  }
  Schedule sch;
  sch["compares"] = std::string("quadratic in the slices");
  return b.finish(std::move(body), std::move(sch), o);
}

} // namespace

std::optional<LoweredNode> lowerSelectFamily(const Node& n, const std::string& name,
                                             const LowerOptions& o) {
  if (!n.domain.empty()) return std::nullopt;
  if (n.op == "NonZero") return lowerNonZero(n, name, o);
  if (n.op == "Compress") return lowerCompress(n, name, o);
  if (n.op == "Unique") return lowerUnique(n, name, o);
  return std::nullopt;
}

} // namespace aicc::loop::detail
