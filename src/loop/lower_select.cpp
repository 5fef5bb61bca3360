// Ops whose result size is the count of something in the run's data (passes/data_dims.h):
// NonZero (the coordinates of the nonzero elements) and Compress (the slices the condition
// keeps). Each counts first, in one serial pass, hands the count to setDataDim (which stores it
// into the shape block as the data symbol's value, for the tasks after it), then writes its
// result densely at that count. The plan holds the bound (every element nonzero, every slice
// kept), so the counts always fit.
#include "loop/lower_ops.h"

namespace aicc::loop::detail {

namespace {

// The count's statement for dim k of the node's result, and the size to write it at: the data
// symbol's store (setDataDim) and `count`; or, where the model declares that dim (an exporter's
// fixed output shape), the runtime's check that the count (in buffer `cnt`) is it, and it.
std::pair<Stmt, ExprPtr> dataDim(const Node& n, const LowerOptions& o, size_t k,
                                 const ExprPtr& count, const std::string& cnt) {
  if (auto st = o.setDataDim ? o.setDataDim(n.outputs.at(0), k, count) : std::nullopt)
    return {*st, count};
  if (!o.runtimeKernels)
    no(n.op + "'s result size is data-dependent (checked by the runtime only)");
  const int64_t declared = staticDims(n.outputs[0], "result").at(k);
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

} // namespace

std::optional<LoweredNode> lowerSelectFamily(const Node& n, const std::string& name,
                                             const LowerOptions& o) {
  if (!n.domain.empty()) return std::nullopt;
  if (n.op == "NonZero") return lowerNonZero(n, name, o);
  if (n.op == "Compress") return lowerCompress(n, name, o);
  return std::nullopt;
}

} // namespace aicc::loop::detail
