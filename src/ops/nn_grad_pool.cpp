// Gradient rules of pooling: MaxPool (routes dY to the argmax positions through the Indices
// output and a ScatterElements(reduction=add) over the flattened input), AveragePool (dY divided
// by each window's element count, spread back with a ConvTranspose of a ones kernel over the
// [N*C, 1, ...] view), GlobalAveragePool and GlobalMaxPool.
#include "ops/nn.h"
#include "ops/nn_grad.h"

namespace aicc::nngrad {
namespace {

Dims spatialOf(GradCtx& c, Value* x) {
  AICC_CHECK(x->type.shape && x->type.shape->size() >= 3, "{}: the gradient needs the rank of '{}'",
             c.node.describe(), x->name);
  auto d = toDims(Shape(x->type.shape->begin() + 2, x->type.shape->end()));
  AICC_CHECK(d, "{}: unsupported: the gradient needs static spatial dims of '{}', it is {}",
             c.node.describe(), x->name, formatType(x->type));
  return *d;
}

std::vector<Window> poolGeometry(GradCtx& c, const Dims& in) {
  const Node& n = c.node;
  WindowAttrs a = readWindowAttrs(n, in.size());
  return slideDims(a, in, n.attrInts("kernel_shape"), n.attrInt("ceil_mode") != 0);
}

// Number of taps of window o in one dim whose positions lie in [from, to).
int64_t tapsIn(const Window& w, int64_t o, int64_t from, int64_t to) {
  int64_t start = o * w.stride - w.padBegin, cnt = 0;
  for (int64_t t = 0; t < w.kernel; ++t) {
    int64_t p = start + t * w.dilation;
    cnt += p >= from && p < to;
  }
  return cnt;
}

void maxPoolGrad(GradCtx& c) {
  if (!c.needs(0)) return;
  E e{c};
  Value *X = c.in(0), *dy = c.doutOrZeros(0);
  Value* idx = c.out(1);
  if (!idx || c.node.attrInt("storage_order") != 0) {
    AttrMap attrs = c.node.attrs;
    attrs.erase("storage_order");
    idx = c.emitN("MaxPool", {X}, 2, std::move(attrs))[1];
  }
  // A window entirely in the padding has index -1: send nothing from it.
  bool emptyWindow = true;
  if (auto in = X->type.shape ? toDims(Shape(X->type.shape->begin() + 2, X->type.shape->end()))
                              : std::nullopt) {
    emptyWindow = false;
    for (const Window& w : poolGeometry(c, *in))
      for (int64_t o = 0; o < w.out; ++o) emptyWindow |= tapsIn(w, o, 0, w.in) == 0;
  }
  Value* flatIdx = e.reshape(idx, {-1});
  Value* flatDy = e.reshape(dy, {-1});
  if (emptyWindow) {
    Value* none = e.op("Less", {flatIdx, e.i64(0)});
    flatDy = e.where(none, e.k(0, dy), flatDy);
    flatIdx = e.where(none, e.i64(0), flatIdx);
  }
  Value* zeros = e.reshape(c.zerosLike(X), {-1});
  Value* acc =
      e.op("ScatterElements", {zeros, flatIdx, flatDy},
           {{"axis", Attribute{int64_t{0}}}, {"reduction", Attribute{std::string("add")}}});
  c.give(0, e.reshape(acc, e.shape(X)));
}

void averagePoolGrad(GradCtx& c) {
  if (!c.needs(0)) return;
  E e{c};
  Value *X = c.in(0), *dy = c.doutOrZeros(0);
  Dims in = spatialOf(c, X);
  auto ws = poolGeometry(c, in);
  const bool includePad = c.node.attrInt("count_include_pad") != 0;
  const size_t sp = ws.size();
  // 1 / (element count of each window), over the output's spatial positions.
  Dims outSp;
  for (const Window& w : ws) outSp.push_back(w.out);
  Tensor inv(X->type.dtype, outSp);
  Dims st = stridesOf(outSp);
  bool uniform = true;
  double first = -1;
  for (int64_t p = 0; p < inv.numel(); ++p) {
    int64_t cnt = 1;
    for (size_t i = 0; i < sp; ++i) {
      const Window& w = ws[i];
      int64_t o = (p / st[i]) % w.out;
      cnt *= includePad ? tapsIn(w, o, -w.padBegin, w.in + w.padEnd) : tapsIn(w, o, 0, w.in);
    }
    double v = cnt > 0 ? 1.0 / static_cast<double>(cnt) : 0.0;
    inv.setF64(p, v);
    if (first < 0) first = v;
    uniform = uniform && v == first;
  }
  Value* g = e.mul(dy, uniform && inv.numel() > 0 ? e.k(first, X) : c.constant(inv));
  // Spread each output's share over its window: ConvTranspose with a ones kernel per plane.
  std::vector<int64_t> planes{-1, 1};
  planes.insert(planes.end(), outSp.begin(), outSp.end());
  g = e.reshape(g, planes);
  Dims kshape{1, 1}, strides, dil, pads(2 * sp, 0), outPad;
  for (size_t i = 0; i < sp; ++i) {
    const Window& w = ws[i];
    kshape.push_back(w.kernel), strides.push_back(w.stride), dil.push_back(w.dilation);
    int64_t pe = w.stride * (w.out - 1) + w.extent() - w.padBegin - w.in;
    pads[i] = w.padBegin;
    pads[i + sp] = std::max<int64_t>(pe, 0);
    outPad.push_back(pe < 0 ? -pe : 0);
  }
  Tensor ones(X->type.dtype, kshape);
  for (int64_t i = 0; i < ones.numel(); ++i) ones.setF64(i, 1.0);
  Value* dx = e.op("ConvTranspose", {g, c.constant(ones)},
                   {{"strides", Attribute{strides}},
                    {"dilations", Attribute{dil}},
                    {"pads", Attribute{pads}},
                    {"output_padding", Attribute{outPad}}});
  c.give(0, e.reshape(dx, e.shape(X)));
}

std::vector<int64_t> spatialAxes(GradCtx& c, Value* x) {
  std::vector<int64_t> axes;
  for (int64_t i = 2; i < c.rankOf(x); ++i) axes.push_back(i);
  return axes;
}

void globalAveragePoolGrad(GradCtx& c) {
  if (!c.needs(0)) return;
  E e{c};
  Value *X = c.in(0), *dy = c.doutOrZeros(0);
  auto axes = spatialAxes(c, X);
  Value* size;
  auto d = toDims(*X->type.shape);
  if (d) {
    int64_t S = 1;
    for (int64_t a : axes) S *= (*d)[static_cast<size_t>(a)];
    size = e.k(static_cast<double>(std::max<int64_t>(S, 1)), X);
  } else {
    size = e.cast(e.op("ReduceProd", {e.shape(X, 2)}, {{"keepdims", Attribute{int64_t{0}}}}),
                  X->type.dtype);
  }
  c.give(0, e.op("Expand", {e.div(dy, size), e.shape(X)}));
}

// The gradient goes to the elements equal to the maximum, shared equally between ties.
void globalMaxPoolGrad(GradCtx& c) {
  if (!c.needs(0)) return;
  E e{c};
  Value *X = c.in(0), *Y = c.out(0), *dy = c.doutOrZeros(0);
  auto axes = spatialAxes(c, X);
  Value* mask = e.op("Equal", {X, Y});
  Value* share = dy;
  if (!axes.empty()) share = e.div(dy, e.reduceSum(e.cast(mask, X->type.dtype), axes, true));
  c.give(0, e.where(mask, share, e.k(0, X)));
}

} // namespace

void registerPoolGrads(OpRegistry& r) {
  r.at("MaxPool").grad = maxPoolGrad;
  r.at("AveragePool").grad = averagePoolGrad;
  r.at("GlobalAveragePool").grad = globalAveragePoolGrad;
  r.at("GlobalMaxPool").grad = globalMaxPoolGrad;
}

} // namespace aicc::nngrad
