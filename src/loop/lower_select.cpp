// Ops whose result size is the count of something in the run's data (passes/data_dims.h):
// NonZero (the coordinates of the nonzero elements), Compress (the slices the condition keeps),
// Unique (the distinct slices) and NonMaxSuppression (the boxes selected). Each counts first, in
// one serial pass, hands the count to setDataDim (which stores it into the shape block as the data
// symbol's value, for the tasks after it), then writes its result densely at that count. The plan
// holds the bound (every element nonzero, every slice kept), so the counts always fit.
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

// NonMaxSuppression, per batch and class: the boxes whose score is a number (above the score
// threshold when one is given) are candidates; up to max_output_boxes_per_class times, the best
// candidate left (the highest score, the lower index on ties: the reference's stable order) is
// selected, and it and every candidate whose IoU with it is above the threshold leave. That is the
// reference's greedy pass over the sorted candidates (a candidate is kept unless a kept box
// suppresses it), in the same double-precision arithmetic (corners ordered, areas, intersection
// over union), without a sort. The rows selected in all are the data symbol.
std::optional<LoweredNode> lowerNonMaxSuppression(const Node& n, const std::string& name,
                                                  const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  const Dims bd = staticDims(n.inputs.at(0), "boxes"), sd = staticDims(n.inputs.at(1), "scores");
  if (bd.size() != 3 || bd[2] != 4 || sd.size() != 3 || sd[0] != bd[0] || sd[2] != bd[1])
    no("boxes [batches, boxes, 4] and scores [batches, classes, boxes]");
  if (n.inputs[0]->type.dtype != DType::F32 || n.inputs[1]->type.dtype != DType::F32)
    no("f32 boxes and scores");
  const int64_t N = bd[1], rowsBound = std::max<int64_t>(bd[0] * sd[1] * N, 1);
  // Symbolic sizes: the run's batches, boxes and classes (the temps at the bound).
  const std::vector<ExprPtr> br = runDims(o, n.inputs[0], bd), sr = runDims(o, n.inputs[1], sd);
  const ExprPtr BE = br[0], NE = br[1], CE = sr[1];
  // An optional scalar input: its one value, or absent (not given, or empty).
  auto scalar = [&](size_t i, DType t) -> ExprPtr {
    if (!n.hasInput(i)) return nullptr;
    const int64_t e = numel(staticDims(n.inputs[i], "a scalar input"));
    if (e == 0) return nullptr;
    if (e != 1 || n.inputs[i]->type.dtype != t) no("a scalar input of another type or size");
    return load(b.input(n.inputs[i]), intImm(0), t);
  };
  const ExprPtr maxOutIn = scalar(2, DType::I64), iouIn = scalar(3, DType::F32),
                scoreIn = scalar(4, DType::F32);
  const ExprPtr maxOut = maxOutIn ? min(max(maxOutIn, intImm(0)), NE) : intImm(0);
  const ExprPtr iouThr = iouIn ? cast(DType::F64, iouIn) : floatImm(0, DType::F64);
  const bool center = n.attrInt("center_point_box", 0) != 0;
  const std::string boxes = b.input(n.inputs[0]), scores = b.input(n.inputs[1]), out = b.output(0);
  const std::string corners = b.temp("corners", DType::F64, {std::max<int64_t>(4 * N, 4)}),
                    alive = b.temp("alive", DType::I64, {std::max<int64_t>(N, 1)}),
                    cnt = b.temp("count", DType::I64, {1}), best = b.temp("best", DType::I64, {1}),
                    bestScore = b.temp("best_score", DType::F32, {1});
  const std::string bv = b.fresh("b"), cv = b.fresh("c"), iv = b.fresh("i"), sv = b.fresh("s"),
                    jv = b.fresh("j"), total = b.fresh("total");
  const ExprPtr i = var(iv), j = var(jv), c = load(cnt, intImm(0), DType::I64);
  const ExprPtr f64 = floatImm(0, DType::F64), two = floatImm(2, DType::F64);
  auto land = [](ExprPtr a, ExprPtr e) { return binary(Op::And, std::move(a), std::move(e)); };
  // Box i of batch b as x0, y0, x1, y1 (ordered corners).
  Block body = {Stmt::store(cnt, intImm(0), intImm(0))};
  auto coord = [&](int64_t k) {
    return cast(DType::F64,
                load(boxes, add(mul(add(mul(var(bv), NE), i), intImm(4)), intImm(k)), DType::F32));
  };
  Block readBoxes;
  {
    const ExprPtr a = coord(0), e = coord(1), g = coord(2), d = coord(3);
    const ExprPtr x0 = center ? sub(a, div(g, two)) : min(e, d),
                  y0 = center ? sub(e, div(d, two)) : min(a, g),
                  x1 = center ? add(a, div(g, two)) : max(e, d),
                  y1 = center ? add(e, div(d, two)) : max(a, g);
    int k = 0;
    for (const ExprPtr& v : {x0, y0, x1, y1})
      readBoxes.push_back(Stmt::store(corners, add(mul(i, intImm(4)), intImm(k++)), v));
  }
  auto corner = [&](const ExprPtr& box, int k) {
    return load(corners, add(mul(box, intImm(4)), intImm(k)), DType::F64);
  };
  // Whether the kept box q suppresses candidate p: IoU above the threshold, boxes of positive
  // area and intersection only (suppresses() in ops/misc_vision.cpp, operand for operand).
  auto suppresses = [&](const ExprPtr& p, const ExprPtr& q) {
    const ExprPtr ix = sub(min(corner(p, 2), corner(q, 2)), max(corner(p, 0), corner(q, 0)));
    const ExprPtr iy = sub(min(corner(p, 3), corner(q, 3)), max(corner(p, 1), corner(q, 1)));
    const ExprPtr inter = mul(ix, iy);
    const ExprPtr areaP = mul(sub(corner(p, 2), corner(p, 0)), sub(corner(p, 3), corner(p, 1)));
    const ExprPtr areaQ = mul(sub(corner(q, 2), corner(q, 0)), sub(corner(q, 3), corner(q, 1)));
    const ExprPtr uni = sub(add(areaP, areaQ), inter);
    ExprPtr ok = land(cmp(Op::Gt, ix, f64), cmp(Op::Gt, iy, f64));
    ok = land(ok, land(cmp(Op::Gt, areaP, f64), cmp(Op::Gt, areaQ, f64)));
    ok = land(ok, cmp(Op::Gt, uni, f64));
    // (the division only where uni > 0; a select evaluates both arms)
    return land(ok, cmp(Op::Gt, div(inter, select(ok, uni, floatImm(1, DType::F64))), iouThr));
  };
  const ExprPtr score = [&](const ExprPtr& box) {
    return load(scores, add(mul(add(mul(var(bv), CE), var(cv)), NE), box), DType::F32);
  }(i);
  ExprPtr candidate = cmp(Op::Eq, score, score); // (not NaN)
  if (scoreIn) candidate = land(candidate, cmp(Op::Gt, score, scoreIn));
  const ExprPtr bestI = clampIndex(load(best, intImm(0), DType::I64), N);
  const ExprPtr row = clampIndex(c, rowsBound);
  // One selection: the best candidate left, written as a row; it and those it suppresses leave.
  Block select1 = {
      Stmt::store(best, intImm(0), intImm(-1)),
      Stmt::forLoop(
          iv, intImm(0), NE,
          {Stmt::ifThen(
              land(cmp(Op::Ne, load(alive, i, DType::I64), intImm(0)),
                   binary(Op::Or, cmp(Op::Lt, load(best, intImm(0), DType::I64), intImm(0)),
                          cmp(Op::Gt, score, load(bestScore, intImm(0), DType::F32)))),
              {Stmt::store(best, intImm(0), i), Stmt::store(bestScore, intImm(0), score)})}),
      Stmt::ifThen(
          cmp(Op::Ge, load(best, intImm(0), DType::I64), intImm(0)),
          {Stmt::store(out, mul(row, intImm(3)), var(bv)),
           Stmt::store(out, add(mul(row, intImm(3)), intImm(1)), var(cv)),
           Stmt::store(out, add(mul(row, intImm(3)), intImm(2)), bestI),
           Stmt::store(cnt, intImm(0), add(c, intImm(1))), Stmt::store(alive, bestI, intImm(0)),
           Stmt::forLoop(jv, intImm(0), NE,
                         {Stmt::ifThen(land(cmp(Op::Ne, load(alive, j, DType::I64), intImm(0)),
                                            suppresses(j, bestI)),
                                       {Stmt::store(alive, j, intImm(0))})})})};
  Block perClass = {Stmt::forLoop(
      iv, intImm(0), NE, {Stmt::store(alive, i, select(candidate, intImm(1), intImm(0)))})};
  perClass.push_back(Stmt::forLoop(sv, intImm(0), maxOut, std::move(select1)));
  Block perBatch = {Stmt::forLoop(iv, intImm(0), NE, std::move(readBoxes)),
                    Stmt::forLoop(cv, intImm(0), CE, std::move(perClass))};
  body.push_back(Stmt::forLoop(bv, intImm(0), BE, std::move(perBatch)));
  body.push_back(Stmt::let(total, min(c, mul(mul(BE, CE), NE))));
  auto [set, size] = dataDim(n, o, 0, var(total), cnt);
  body.push_back(std::move(set));
  (void)size;
  Schedule sch;
  sch["selection"] = std::string("greedy, one pass over the boxes per selected box");
  return b.finish(std::move(body), std::move(sch), o);
}

} // namespace

std::optional<LoweredNode> lowerSelectFamily(const Node& n, const std::string& name,
                                             const LowerOptions& o) {
  if (!n.domain.empty()) return std::nullopt;
  if (n.op == "NonZero") return lowerNonZero(n, name, o);
  if (n.op == "Compress") return lowerCompress(n, name, o);
  if (n.op == "Unique") return lowerUnique(n, name, o);
  if (n.op == "NonMaxSuppression") return lowerNonMaxSuppression(n, name, o);
  return std::nullopt;
}

} // namespace aicc::loop::detail
