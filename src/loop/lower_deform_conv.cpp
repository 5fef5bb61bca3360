// DeformConv as the reference computes it (ops/misc_vision.cpp), in double: per image, each input
// channel's samples at every kernel tap and output position (the tap's place moved by its offset,
// read by linear interpolation over the 2^r neighbours, zero outside, times the mask) into a
// column temp, then each output channel the bias plus its group's weights times the columns.
#include "loop/lower_ops.h"

namespace aicc::loop::detail {

std::optional<LoweredNode> lowerDeformConv(const Node& n, const std::string& name,
                                           const LowerOptions& o) {
  const Value *xv = n.inputs.at(0), *wv = n.inputs.at(1), *ov = n.inputs.at(2);
  const DType t = xv->type.dtype;
  if (t != DType::F32 && t != DType::F64) no("DeformConv is lowered for f32/f64");
  for (const Value* v : n.inputs)
    if (v && v->type.dtype != t) no("inputs of different types");
  const Dims xd = staticDims(xv, "X"), wd = staticDims(wv, "W"), od = staticDims(ov, "offset"),
             yd = staticDims(n.outputs[0], "Y");
  const size_t r = xd.size() >= 3 ? xd.size() - 2 : 0;
  if (r < 1 || r > 3 || wd.size() != xd.size() || yd.size() != xd.size()) no("unexpected ranks");
  const Dims in(xd.begin() + 2, xd.end()), out(yd.begin() + 2, yd.end());
  const Dims kernel = n.attrInts("kernel_shape", Dims(wd.begin() + 2, wd.end())),
             stride = n.attrInts("strides", Dims(r, 1)), dil = n.attrInts("dilations", Dims(r, 1)),
             pads = n.attrInts("pads", Dims(2 * r, 0));
  const int64_t N = xd[0], C = xd[1], OC = wd[0], group = n.attrInt("group"),
                og = n.attrInt("offset_group");
  if (kernel.size() != r || stride.size() != r || dil.size() != r || pads.size() != 2 * r ||
      group < 1 || og < 1 || C % group || OC % group || C % og || wd[1] != C / group ||
      Dims(wd.begin() + 2, wd.end()) != kernel || yd[0] != N || yd[1] != OC)
    no("shapes that do not fit the attributes (the reference kernel reports them)");
  const int64_t K = numel(kernel), O = numel(out), I = numel(in);
  const int64_t icg = C / group, ocg = OC / group, icog = C / og;
  Dims offShape{N, og * K * int64_t(r)}, maskShape{N, og * K};
  offShape.insert(offShape.end(), out.begin(), out.end());
  maskShape.insert(maskShape.end(), out.begin(), out.end());
  if (od != offShape) no("offset of another shape");
  if (n.hasInput(4) && staticDims(n.inputs[4], "mask") != maskShape) no("mask of another shape");
  if (n.hasInput(3) && staticDims(n.inputs[3], "B") != Dims{OC}) no("B of another shape");
  FuncBuilder b(n, name, "conv");
  const std::string x = b.input(xv), w = b.input(wv), off = b.input(ov), y = b.output(0);
  const std::string col = b.temp("columns", DType::F64, {C * K * O});
  const std::string nv = b.loopVar("n"), cv = b.loopVar("ic"), kv = b.loopVar("k"),
                    pv = b.loopVar("o"), ocv = b.loopVar("oc"), jv = b.loopVar("j");
  const ExprPtr nn = var(nv), ic = var(cv), k = var(kv), po = var(pv);
  auto i64 = [](int64_t v) { return intImm(v); };
  auto f64 = [](double v) { return floatImm(v, DType::F64); };
  auto rd = [&](const std::string& buf, const ExprPtr& at) {
    return cast(DType::F64, load(buf, at, t));
  };
  const std::vector<int64_t> inSt = strides(in), kSt = strides(kernel), oSt = strides(out);
  const ExprPtr ogi = div(ic, i64(icog));
  // The tap's place along each dim, its floor and fraction.
  Block tap;
  std::vector<ExprPtr> fl, fr;
  ExprPtr far; // far outside (or NaN): every neighbour is padding
  for (size_t d = 0; d < r; ++d) {
    const ExprPtr odd = mod(div(po, i64(oSt[d])), i64(out[d])),
                  kd = mod(div(k, i64(kSt[d])), i64(kernel[d]));
    const ExprPtr offAt =
        add(mul(add(mul(add(mul(add(mul(nn, i64(og)), ogi), i64(K)), k), i64(int64_t(r))),
                    i64(int64_t(d))),
                i64(O)),
            po);
    const std::string p = b.fresh("p"), f = b.fresh("f");
    tap.push_back(Stmt::let(p, add(cast(DType::F64, add(sub(mul(odd, i64(stride[d])), i64(pads[d])),
                                                        mul(kd, i64(dil[d])))),
                                   rd(off, offAt))));
    const ExprPtr pd = var(p, DType::F64);
    const ExprPtr near = cmp(Op::Lt, call("abs", {pd}), f64(1e9));
    tap.push_back(Stmt::let(f, call("floor", {select(near, pd, f64(0))})));
    fl.push_back(var(f, DType::F64));
    fr.push_back(sub(select(near, pd, f64(0)), var(f, DType::F64)));
    far = far ? binary(Op::Or, far, logicalNot(near)) : logicalNot(near);
  }
  ExprPtr total = f64(0);
  const ExprPtr plane = mul(add(mul(nn, i64(C)), ic), i64(I));
  for (uint32_t corner = 0; corner < (1u << r); ++corner) {
    ExprPtr wgt, inside, at = i64(0);
    for (size_t d = 0; d < r; ++d) {
      const bool up = (corner >> d) & 1u;
      const ExprPtr i = add(cast(DType::I64, fl[d]), i64(up ? 1 : 0));
      const ExprPtr wd1 = up ? fr[d] : sub(f64(1), fr[d]);
      wgt = wgt ? mul(wgt, wd1) : wd1;
      const ExprPtr ok = binary(Op::And, cmp(Op::Ge, i, i64(0)), cmp(Op::Lt, i, i64(in[d])));
      inside = inside ? binary(Op::And, inside, ok) : ok;
      at = add(at, mul(max(min(i, i64(in[d] - 1)), i64(0)), i64(inSt[d])));
    }
    total = add(total, select(binary(Op::And, inside, cmp(Op::Ne, wgt, f64(0))),
                              mul(wgt, rd(x, add(plane, at))), f64(0)));
  }
  const ExprPtr m = n.hasInput(4)
                        ? rd(b.input(n.inputs[4]),
                             add(mul(add(mul(add(mul(nn, i64(og)), ogi), i64(K)), k), i64(O)), po))
                        : f64(1);
  const std::string mv = b.fresh("m");
  tap.push_back(Stmt::let(mv, m));
  const ExprPtr mm = var(mv, DType::F64);
  tap.push_back(
      Stmt::store(col, add(mul(add(mul(ic, i64(K)), k), i64(O)), po),
                  select(binary(Op::Or, cmp(Op::Eq, mm, f64(0)), far), f64(0), mul(mm, total))));
  Block image = nest({cv, kv, pv}, {C, K, O}, std::move(tap), false);
  // Y[n, oc, o] = B[oc] + sum over j of W[oc, j] * col[group's j, o], j = (channel in group, tap).
  const std::string acc = b.temp("acc", DType::F64, {1});
  const ExprPtr oc = var(ocv), a = load(acc, i64(0), DType::F64);
  const ExprPtr gi = div(oc, i64(ocg));
  Block point = {Stmt::store(acc, i64(0), n.hasInput(3) ? rd(b.input(n.inputs[3]), oc) : f64(0))};
  for (auto& s :
       nest({jv}, {icg * K},
            {Stmt::store(
                acc, i64(0),
                add(a, mul(rd(w, add(mul(oc, i64(icg * K)), var(jv))),
                           load(col, add(mul(add(mul(gi, i64(icg * K)), var(jv)), i64(O)), po),
                                DType::F64))))},
            false))
    point.push_back(std::move(s));
  point.push_back(Stmt::store(y, add(mul(add(mul(nn, i64(OC)), oc), i64(O)), po), cast(t, a)));
  for (auto& s : nest({ocv, pv}, {OC, O}, std::move(point), false)) image.push_back(std::move(s));
  return b.finish(nest({nv}, {N}, std::move(image), false), {}, o);
}

} // namespace aicc::loop::detail
