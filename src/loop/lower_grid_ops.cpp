// AffineGrid (the sampling grid of an affine transform) and Col2Im (the sum of sliding blocks back
// into an image). Their sizes come as run-time inputs (AffineGrid's size, Col2Im's image_shape
// and block_shape) which the result's static shape fixes: the runtime checks the values given
// are those, and the nests are the reference's (ops/misc_vision.cpp, ops/shape_grid.cpp), in
// double as it computes.
#include "loop/lower_ops.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace aicc::loop::detail {

namespace {

ExprPtr f64(double v) { return floatImm(v, DType::F64); }

} // namespace

std::optional<LoweredNode> lowerAffineGrid(const Node& n, const std::string& name,
                                           const LowerOptions& o) {
  const Value *th = n.inputs.at(0), *sv = n.inputs.at(1);
  const DType t = th->type.dtype;
  if (t != DType::F32 && t != DType::F64) no("AffineGrid is lowered for f32/f64");
  const Dims td = staticDims(th, "theta"), yd = staticDims(n.outputs[0], "grid");
  const int64_t r = int64_t(yd.size()) - 2;
  if (r < 2 || r > 3 || yd.back() != r || td != Dims{yd[0], r, r + 1}) no("unexpected shapes");
  const Dims spatial(yd.begin() + 1, yd.end() - 1);
  const bool align = n.attrInt("align_corners") != 0;
  FuncBuilder b(n, name, "data");
  // size = [N, C, (D,) H, W]: all but C are the result's.
  std::vector<int64_t> at = {0}, want = {yd[0]};
  for (int64_t d = 0; d < r; ++d) {
    at.push_back(d + 2);
    want.push_back(spatial[size_t(d)]);
  }
  Block body = checkFixedValues(b, sv, at, want, o);
  const std::string y = b.output(0), x = b.input(th);
  std::vector<std::string> v = {b.loopVar("n")};
  for (int64_t d = 0; d < r; ++d) v.push_back(b.loopVar("p"));
  // The k-th homogeneous coordinate is spatial dim r-1-k's position, the last 1.
  std::vector<ExprPtr> h;
  for (int64_t k = 0; k < r; ++k) {
    const int64_t len = spatial[size_t(r - 1 - k)];
    const ExprPtr i = cast(DType::F64, var(v[size_t(r - k)]));
    h.push_back(align ? (len == 1 ? f64(-1) : add(f64(-1), mul(i, f64(2.0 / double(len - 1)))))
                      : add(add(f64(-1), f64(1.0 / double(len))), mul(i, f64(2.0 / double(len)))));
  }
  h.push_back(f64(1));
  Block point;
  const ExprPtr nv = var(v[0]);
  ExprPtr p = intImm(0); // the position's linear index over the spatial dims
  for (int64_t d = 0; d < r; ++d)
    p = add(mul(p, intImm(spatial[size_t(d)])), var(v[size_t(d + 1)]));
  const int64_t P = numel(spatial);
  for (int64_t i = 0; i < r; ++i) {
    ExprPtr acc = f64(0);
    for (int64_t j = 0; j <= r; ++j)
      acc =
          add(acc, mul(cast(DType::F64,
                            load(x, add(mul(nv, intImm(r * (r + 1))), intImm(i * (r + 1) + j)), t)),
                       h[size_t(j)]));
    point.push_back(
        Stmt::store(y, add(mul(add(mul(nv, intImm(P)), p), intImm(r)), intImm(i)), cast(t, acc)));
  }
  Dims ext = {yd[0]};
  ext.insert(ext.end(), spatial.begin(), spatial.end());
  for (auto& s : nest(v, ext, std::move(point), true)) body.push_back(std::move(s));
  return b.finish(std::move(body), {}, o);
}

std::optional<LoweredNode> lowerCol2Im(const Node& n, const std::string& name,
                                       const LowerOptions& o) {
  const Value *xv = n.inputs.at(0), *iv = n.inputs.at(1), *bv = n.inputs.at(2);
  const DType t = xv->type.dtype;
  if (t != DType::F32 && t != DType::F64) no("Col2Im is lowered for f32/f64");
  const Dims xd = staticDims(xv, "input"), yd = staticDims(n.outputs[0], "output");
  const size_t r = yd.size() >= 2 ? yd.size() - 2 : 0;
  if (xd.size() != 3 || r < 1 || yd[0] != xd[0] || yd[1] < 1 || xd[1] % yd[1] != 0)
    no("unexpected shapes");
  const Dims img(yd.begin() + 2, yd.end());
  const Dims dil = n.attrInts("dilations", Dims(r, 1)), str = n.attrInts("strides", Dims(r, 1)),
             pads = n.attrInts("pads", Dims(2 * r, 0));
  if (dil.size() != r || str.size() != r || pads.size() != 2 * r) no("attributes of another rank");
  const int64_t K = xd[1] / yd[1], L = xd[2];
  auto blocksOf = [&](const Dims& blk) {
    Dims out(r);
    for (size_t d = 0; d < r; ++d)
      out[d] = (img[d] + pads[d] + pads[d + r] - dil[d] * (blk[d] - 1) - 1) / str[d] + 1;
    return out;
  };
  // The block shape: the constant, else the one factorization of K that gives L blocks.
  std::vector<Dims> found;
  if (bv->constant) {
    found.push_back(bv->constant->toI64Vector());
  } else {
    Dims blk(r);
    std::function<void(size_t, int64_t)> factor = [&](size_t d, int64_t left) {
      if (found.size() > 4) return;
      if (d + 1 == r) {
        blk[d] = left;
        const Dims bl = blocksOf(blk);
        if (std::all_of(bl.begin(), bl.end(), [](int64_t x) { return x >= 1; }) && numel(bl) == L)
          found.push_back(blk);
        return;
      }
      for (int64_t f = 1; f <= left; ++f)
        if (left % f == 0) blk[d] = f, factor(d + 1, left / f);
    };
    factor(0, K);
  }
  if (found.empty() || found.size() > 4) no("the shapes do not determine block_shape");
  FuncBuilder b(n, name, "data");
  std::vector<int64_t> dimsAt(r);
  std::iota(dimsAt.begin(), dimsAt.end(), 0);
  Block body = checkFixedValues(b, iv, dimsAt, img, o);
  // Per (n, c) plane: a double accumulator, each block's element added where it lands inside.
  const int64_t plane = numel(img);
  const std::string x = b.input(xv), y = b.output(0), acc = b.temp("acc", DType::F64, {plane});
  auto sum = [&](const Dims& blk) {
    if (blk.size() != r || numel(blk) != K) no("block_shape does not match the input");
    const Dims blocks = blocksOf(blk);
    if (numel(blocks) != L) no("the input's block count is not the image's");
    const std::string nv = b.loopVar("n"), cv = b.loopVar("c"), kv = b.loopVar("k"),
                      lv = b.loopVar("l"), ev = b.loopVar("e");
    const std::vector<int64_t> ist = strides(img), kst = strides(blk), lst = strides(blocks);
    ExprPtr inside, off = intImm(0);
    for (size_t d = 0; d < r; ++d) {
      const ExprPtr kd = mod(div(var(kv), intImm(kst[d])), intImm(blk[d])),
                    ld = mod(div(var(lv), intImm(lst[d])), intImm(blocks[d]));
      const ExprPtr pos =
          add(sub(mul(ld, intImm(str[d])), intImm(pads[d])), mul(kd, intImm(dil[d])));
      const ExprPtr in =
          binary(Op::And, cmp(Op::Ge, pos, intImm(0)), cmp(Op::Lt, pos, intImm(img[d])));
      inside = inside ? binary(Op::And, inside, in) : in;
      off = add(off, mul(pos, intImm(ist[d])));
    }
    const ExprPtr at = max(min(off, intImm(plane - 1)), intImm(0)); // (only used inside)
    const ExprPtr src =
        add(mul(add(mul(var(nv), intImm(xd[1])), add(mul(var(cv), intImm(K)), var(kv))), intImm(L)),
            var(lv));
    Block per = {Stmt::forLoop(ev, intImm(0), intImm(plane), {Stmt::store(acc, var(ev), f64(0))})};
    for (auto& s :
         nest({kv, lv}, {K, L},
              {Stmt::ifThen(inside, {Stmt::store(acc, at,
                                                 add(load(acc, at, DType::F64),
                                                     cast(DType::F64, load(x, src, t))))})},
              false))
      per.push_back(std::move(s));
    const ExprPtr dst = add(mul(add(mul(var(nv), intImm(yd[1])), var(cv)), intImm(plane)), var(ev));
    per.push_back(Stmt::forLoop(ev, intImm(0), intImm(plane),
                                {Stmt::store(y, dst, cast(t, load(acc, var(ev), DType::F64)))}));
    return nest({nv, cv}, {yd[0], yd[1]}, std::move(per), false);
  };
  if (bv->constant) {
    for (auto& s : sum(found[0])) body.push_back(std::move(s));
    return b.finish(std::move(body), {}, o);
  }
  // Block shapes given at run time: each one the shapes allow ([1, 5] and [5, 1] both make 5
  // blocks of a 5x5 image), chosen by the values; any other fails the check against the first.
  Block chain = checkFixedValues(b, bv, dimsAt, found[0], o);
  for (size_t c = found.size(); c-- > 0;) {
    ExprPtr is;
    for (size_t d = 0; d < r; ++d) {
      const ExprPtr e = cmp(Op::Eq, loadI64(b, bv, int64_t(d)), intImm(found[c][d]));
      is = is ? binary(Op::And, is, e) : e;
    }
    chain = {Stmt::ifThen(is, sum(found[c]), std::move(chain))};
  }
  for (auto& s : chain) body.push_back(std::move(s));
  return b.finish(std::move(body), {}, o);
}

} // namespace aicc::loop::detail
