// MaxPool, AveragePool, LpPool (NCHW, any spatial rank; pads, strides, dilations, ceil_mode through
// the static output shape), GlobalAveragePool and GlobalMaxPool as loop nests: for every output
// element, an accumulation over the window with bounds guards; runtime kernels where they apply,
// including the NCHW16c pools and means of the layout pass.
#include "kernels/conv_nchwc.h"
#include "kernels/registry.h"
#include "loop/lower_ops.h"

namespace aicc::loop::detail {

namespace {

std::optional<LoweredNode> lowerGlobal(const Node& n, const std::string& name,
                                       const LowerOptions& o, bool isMax) {
  FuncBuilder b(n, name, "pool");
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input");
  DType t = n.outputs[0]->type.dtype;
  if (!isComputeFloat(t) || id.size() < 2) no("a float input of rank >= 2 is needed");
  int64_t rows = id[0] * id[1], len = numel(id) / std::max<int64_t>(1, rows);
  // Symbolic sizes: the run's rows (N * C) and row length (the spatial dims).
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id);
  const std::vector<ExprPtr> orr = runDims(o, n.outputs[0], staticDims(n.outputs[0], "output"));
  if (orr.empty() || !equal(orr[0], ir[0])) no("the result's batch is not the input's");
  const ExprPtr rowsE = product(ir, 0, 2), lenE = product(ir, 2);
  std::string in = b.input(n.inputs[0]);
  // f32 GlobalAveragePool with runtime kernels: vector row sums, rows over the threads.
  if (!isMax && o.runtimeKernels && t == DType::F32 && rows >= 1 && len >= 1) {
    const auto& kd = kernels::defaultKernel(kernels::KernelOp::DepthwiseConvNchw, o.kernelIsa);
    std::vector<CallArg> a = {CallArg{in, nullptr, nullptr}, CallArg{out, nullptr, nullptr},
                              CallArg{"", nullptr, rowsE}, CallArg{"", nullptr, lenE}};
    Schedule sch;
    markKernel(sch, kd.name);
    sch["parallel"] = std::vector<std::string>{"rows"};
    return b.finish({Stmt::callKernel(std::string("global_avgpool_") + kd.name, a)}, std::move(sch),
                    o);
  }
  std::string r = b.fresh("r"), k = b.fresh("k");
  ExprPtr acc = load(out, var(r), t), x = load(in, add(mul(var(r), lenE), var(k)), t);
  Block body = {Stmt::store(
      out, var(r), isMax ? constant(t, -std::numeric_limits<double>::infinity()) : constant(t, 0))};
  if (len > 0)
    for (auto& s : runNest(
             {k}, {lenE},
             {Stmt::store(out, var(r), isMax ? select(cmp(Op::Gt, x, acc), x, acc) : add(acc, x))},
             false))
      body.push_back(std::move(s));
  if (!isMax)
    body.push_back(
        Stmt::store(out, var(r), div(acc, asInt(lenE) ? constant(t, double(len)) : cast(t, lenE))));
  Schedule sch;
  sch["parallel"] = std::vector<std::string>{r};
  if (rows == 0) return b.finish({}, std::move(sch), o);
  return b.finish(runNest({r}, {rowsE}, std::move(body), true), std::move(sch), o);
}

std::optional<LoweredNode> lowerWindow(const Node& n, const std::string& name,
                                       const LowerOptions& o, bool isMax) {
  if (n.outputs.size() > 1 && n.outputs[1]) no("MaxPool Indices output");
  FuncBuilder b(n, name, "pool");
  std::string out = b.output(0);
  Dims id = staticDims(n.inputs.at(0), "input"), od = staticDims(n.outputs[0], "output");
  DType t = n.outputs[0]->type.dtype;
  // MaxPool also on 8-bit integers (fold-qdq's DQ -> MaxPool -> Q), in the loop nest below.
  const bool int8Max = isMax && n.op == "MaxPool" && (t == DType::U8 || t == DType::I8);
  if ((!isComputeFloat(t) && !int8Max) || id.size() < 3 || od.size() != id.size())
    no("a float (or, for MaxPool, 8-bit integer) input of rank >= 3 is needed");
  size_t r = id.size() - 2;
  Dims k = n.attrInts("kernel_shape");
  Dims st = n.attrInts("strides", Dims(r, 1)), dl = n.attrInts("dilations", Dims(r, 1));
  if (k.size() != r || st.size() != r || dl.size() != r) no("attributes of the wrong rank");
  std::string ap = n.attrString("auto_pad");
  Dims pb(r, 0), pe(r, 0);
  if (ap == "NOTSET") {
    Dims p = n.attrInts("pads", Dims(2 * r, 0));
    if (p.size() != 2 * r) no("pads of the wrong rank");
    for (size_t d = 0; d < r; ++d) pb[d] = p[d], pe[d] = p[d + r];
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t d = 0; d < r; ++d) {
      int64_t total =
          std::max<int64_t>(0, (od[d + 2] - 1) * st[d] + (k[d] - 1) * dl[d] + 1 - id[d + 2]);
      pb[d] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe[d] = total - pb[d];
    }
  } else if (ap != "VALID") {
    no("auto_pad " + ap);
  }
  // Symbolic sizes: the run's batch and spatial sizes, on the runtime kernels only.
  const std::vector<ExprPtr> ir = runDims(o, n.inputs[0], id), orr = runDims(o, n.outputs[0], od);
  bool symbolic = false;
  for (size_t d = 0; d < id.size(); ++d) symbolic |= !isImm(ir[d]) || !isImm(orr[d]);
  if (symbolic && ap != "NOTSET" && ap != "VALID")
    no("auto_pad " + ap + " with symbolic sizes (its pads follow the size)");
  // LpPool: the sum of |x|^p over the window's inside positions, then its p-th root.
  const int64_t lp = n.op == "LpPool" ? n.attrInt("p") : 0;
  if (n.op == "LpPool" && lp < 1) no("LpPool with p < 1");
  bool countPad = !isMax && !lp && n.attrInt("count_include_pad") != 0;
  std::string in = b.input(n.inputs[0]);
  // 2-D f32 MaxPool and AveragePool with runtime kernels, one call per image: on NCHW16c
  // (passes/assign_layout.h: a 3-D pool over (H, W, lanes), one lane wide) the blocked row kernel
  // over C = blocks x 16 lanes; else the depthwise machinery (its max mode, or sums then divided
  // by the window counts).
  const kernels::KernelDesc* bk = kernels::bestKernel(kernels::KernelOp::ConvNchw16c, o.kernelIsa);
  const bool blocked = bk && r == 3 && id[4] == kernels::kNchwcBlock &&
                       od[4] == kernels::kNchwcBlock && k[2] == 1 && st[2] == 1 && pb[2] == 0 &&
                       pe[2] == 0 && dl == Dims{1, 1, 1};
  if ((isMax || !lp) && o.runtimeKernels && t == DType::F32 && (r == 2 || blocked)) {
    const auto& kd =
        blocked ? *bk : kernels::defaultKernel(kernels::KernelOp::DepthwiseConvNchw, o.kernelIsa);
    std::string nv = b.fresh("n");
    ExprPtr nn = var(nv);
    const int64_t C = blocked ? id[1] * kernels::kNchwcBlock : id[1];
    std::vector<CallArg> a = {CallArg{in, mul(nn, product({intImm(C), ir[2], ir[3]})), nullptr},
                              CallArg{out, mul(nn, product({intImm(C), orr[2], orr[3]})), nullptr}};
    auto arg = [&](ExprPtr v) { a.push_back(CallArg{"", nullptr, std::move(v)}); };
    for (int64_t v : {C, int64_t(0), int64_t(0), int64_t(0)}) arg(intImm(v));
    arg(ir[2]), arg(ir[3]);
    for (int64_t v : {k[0], k[1], st[0], st[1], pb[0], pb[1], pe[0], pe[1], dl[0], dl[1]})
      arg(intImm(v));
    arg(orr[2]), arg(orr[3]);
    if (!isMax) arg(intImm(countPad ? 1 : 0));
    Schedule sch;
    markKernel(sch, kd.name);
    sch["layout"] = std::string(blocked ? "nchw16c" : "nchw; padded planes");
    sch["parallel"] = blocked ? std::vector<std::string>{"channel blocks", "rows"}
                              : std::vector<std::string>{"channels"};
    const std::string callee =
        std::string(isMax ? "maxpool_nchw" : "avgpool_nchw") + (blocked ? "16c_" : "_") + kd.name;
    return b.finish(runNest({nv}, {ir[0]}, {Stmt::callKernel(callee, a)}, false), std::move(sch),
                    o);
  }
  if (symbolic) no(n.op + " with symbolic sizes runs on the 2-D f32 pooling kernels only");
  // One loop over batch x channels (the parallel one: batch is usually 1), then the window.
  std::vector<std::string> ov = {b.fresh("nc")}, kv;
  for (size_t d = 0; d < r; ++d) ov.push_back(b.fresh("o" + std::to_string(d)));
  for (size_t d = 0; d < r; ++d) kv.push_back(b.fresh("k" + std::to_string(d)));
  Dims inner(id.begin() + 2, id.end());
  Dims ext = {od[0] * od[1]};
  ext.insert(ext.end(), od.begin() + 2, od.end());
  ExprPtr yIdx = linearIndex(vars(ov), strides(ext));
  ExprPtr base = var(ov[0]);
  std::vector<ExprPtr> pos;
  ExprPtr inside, counted;
  for (size_t d = 0; d < r; ++d) {
    ExprPtr p =
        add(sub(mul(var(ov[d + 1]), intImm(st[d])), intImm(pb[d])), mul(var(kv[d]), intImm(dl[d])));
    pos.push_back(p);
    ExprPtr ok = binary(Op::And, cmp(Op::Ge, p, intImm(0)), cmp(Op::Lt, p, intImm(inner[d])));
    inside = inside ? binary(Op::And, inside, ok) : ok;
    ExprPtr cok = cmp(Op::Lt, p, intImm(inner[d] + pe[d]));
    counted = counted ? binary(Op::And, counted, cok) : cok;
  }
  ExprPtr xIdx = add(mul(base, intImm(numel(inner))), linearIndex(pos, strides(inner)));
  ExprPtr acc = load(out, yIdx, t), x = load(in, xIdx, t);
  Block pix = {Stmt::store(out, yIdx,
                           int8Max ? constant(t, t == DType::U8 ? 0.0 : -128.0)
                           : isMax ? constant(t, -std::numeric_limits<double>::infinity())
                                   : constant(t, 0))};
  std::string cnt;
  if (!isMax && !lp) {
    cnt = b.temp("count", t, od);
    pix.push_back(Stmt::store(cnt, yIdx, constant(t, 0)));
  }
  ExprPtr step = isMax ? select(cmp(Op::Gt, x, acc), x, acc)
                 : lp  ? add(acc, call("pow", {call("abs", {x}), constant(t, double(lp))}))
                       : add(acc, x);
  Block win = {Stmt::ifThen(inside, {Stmt::store(out, yIdx, step)})};
  if (!isMax && !lp)
    win.push_back(Stmt::ifThen(countPad ? counted : inside,
                               {Stmt::store(cnt, yIdx, add(load(cnt, yIdx, t), constant(t, 1)))}));
  for (auto& s : nest(kv, k, std::move(win), false)) pix.push_back(std::move(s));
  if (lp)
    pix.push_back(Stmt::store(out, yIdx, call("pow", {acc, constant(t, 1.0 / double(lp))})));
  else if (!isMax)
    pix.push_back(Stmt::store(out, yIdx, div(acc, load(cnt, yIdx, t))));
  Schedule sch;
  sch["parallel"] = std::vector<std::string>{ov[0]};
  return b.finish(nest(ov, ext, std::move(pix), true), std::move(sch), o);
}

} // namespace

// ReduceMean over H and W of an NCHW16c tensor [N, C/16, H, W, 16] (the layout pass's
// GlobalAveragePool), per image, when the blocked kernels are there; else nullopt (the reduction
// lowering's loop nest).
std::optional<LoweredNode> lowerBlockedMean(const Node& n, const std::string& name,
                                            const LowerOptions& o) {
  const kernels::KernelDesc* kd = kernels::bestKernel(kernels::KernelOp::ConvNchw16c, o.kernelIsa);
  if (!o.runtimeKernels || !kd || n.inputs.size() != 2 || !n.inputs[1] ||
      !n.inputs[1]->isConstant() || !n.inputs[1]->constant->defined() ||
      n.inputs[1]->constant->toI64Vector() != std::vector<int64_t>{2, 3} ||
      n.attrInt("keepdims", 1) != 1 || n.inputs[0]->type.dtype != DType::F32)
    return std::nullopt;
  const auto shape = n.inputs[0]->type.shape ? toDims(*n.inputs[0]->type.shape) : std::nullopt;
  if (!shape || shape->size() != 5 || (*shape)[4] != kernels::kNchwcBlock) return std::nullopt;
  const Dims& d = *shape;
  FuncBuilder b(n, name, "reduce");
  const std::string X = b.input(n.inputs[0]), Y = b.output(0), nv = b.fresh("n");
  const ExprPtr nn = var(nv);
  Schedule sched;
  markKernel(sched, kd->name);
  sched["layout"] = std::string("nchw16c");
  Block body =
      nest({nv}, {d[0]},
           {Stmt::callKernel(std::string("mean_nchw16c_") + kd->name,
                             {CallArg{X, mul(nn, intImm(d[1] * d[2] * d[3] * d[4])), nullptr},
                              CallArg{Y, mul(nn, intImm(d[1] * d[4])), nullptr},
                              CallArg{"", nullptr, intImm(d[1])},
                              CallArg{"", nullptr, intImm(d[2] * d[3])}})},
           false);
  return b.finish(std::move(body), std::move(sched), o);
}

std::optional<LoweredNode> lowerPoolFamily(const Node& n, const std::string& name,
                                           const LowerOptions& o) {
  if (!n.domain.empty()) return std::nullopt;
  if (n.op == "ReduceMean") return lowerBlockedMean(n, name, o); // else the reduction's nest
  if (n.op == "GlobalAveragePool") return lowerGlobal(n, name, o, false);
  if (n.op == "GlobalMaxPool") return lowerGlobal(n, name, o, true);
  if (n.op == "MaxPool") return lowerWindow(n, name, o, true);
  if (n.op == "AveragePool" || n.op == "LpPool") return lowerWindow(n, name, o, false);
  return std::nullopt;
}

} // namespace aicc::loop::detail
