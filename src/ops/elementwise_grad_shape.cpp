// Gradient rules of the shape and data-movement ops: Reshape Flatten Squeeze Unsqueeze Transpose
// Expand Concat Split Trilu DepthToSpace SpaceToDepth, and (by running the op on a tensor of
// element indices and scatter-adding dy back, see scatterBack) Slice Gather GatherElements
// GatherND Tile Pad Compress ReverseSequence.
#include "ops/elementwise_grad.h"

#include "ops/helpers.h"

namespace aicc::grad {

namespace {

// y = op(x, ...) only moves elements of input 0: run the same node on x's element indices.
void movementGrad(OpRegistry& r, const char* op) {
  OpBuilder(r.at(op)).grad([](GradCtx& c) {
    for (size_t i = 1; i < c.node.inputs.size(); ++i)
      AICC_CHECK(!c.needs(i), "{} has no gradient for input {} (indices/parameters)", c.node.op, i);
    if (!c.needs(0)) return;
    c.give(0, scatterBack(c, c.in(0), c.doutOrZeros(0), [&](Value* iota, Value*) {
           std::vector<Value*> ins = c.node.inputs;
           ins[0] = iota;
           return c.emitN(c.node.op, ins, 1, c.node.attrs, c.node.domain)[0];
         }));
  });
}

void reshapeLike(OpRegistry& r, const char* op) {
  OpBuilder(r.at(op)).grad([](GradCtx& c) {
    if (!c.needs(0)) return;
    B b{c};
    c.give(0, b.reshape(c.doutOrZeros(0), b.shape(c.in(0))));
  });
}

} // namespace

void registerDataMovementGrads(OpRegistry& r) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) reshapeLike(r, op);
  for (const char* op :
       {"Slice", "Gather", "GatherElements", "GatherND", "Tile", "Compress", "ReverseSequence"})
    movementGrad(r, op);

  // DepthToSpace / SpaceToDepth are Reshape -> Transpose -> Reshape; the gradient runs the
  // inverse (ONNX Runtime has these ops for floats only, so the index trick cannot be used).
  OpBuilder(r.at("DepthToSpace")).grad([](GradCtx& c) {
    if (!c.needs(0)) return;
    B b{c};
    Value *x = c.in(0), *dy = c.doutOrZeros(0);
    int64_t bs = c.node.attrInt("blocksize");
    bool crd = c.node.attrString("mode") == "CRD";
    auto dims = [&](Value* v, int64_t s, int64_t e) {
      return b.op("Shape", {v}, {{"start", Attribute{s}}, {"end", Attribute{e}}});
    };
    // dy is [N, C', H*b, W*b] = the forward's transposed [N, C', H, b, W, b].
    Value* mid = c.emitN("Concat",
                         {dims(dy, 0, 2), dims(x, 2, 3), b.ints({bs}), dims(x, 3, 4), b.ints({bs})},
                         1, {{"axis", Attribute{int64_t{0}}}})[0];
    std::vector<int64_t> inv =
        crd ? std::vector<int64_t>{0, 1, 3, 5, 2, 4} : std::vector<int64_t>{0, 3, 5, 1, 2, 4};
    Value* t = b.op("Transpose", {b.reshape(dy, mid)}, {{"perm", Attribute{inv}}});
    c.give(0, b.reshape(t, b.shape(x)));
  });
  OpBuilder(r.at("SpaceToDepth")).grad([](GradCtx& c) {
    if (!c.needs(0)) return;
    B b{c};
    Value *x = c.in(0), *dy = c.doutOrZeros(0);
    int64_t bs = c.node.attrInt("blocksize");
    auto dims = [&](Value* v, int64_t s, int64_t e) {
      return b.op("Shape", {v}, {{"start", Attribute{s}}, {"end", Attribute{e}}});
    };
    // dy is [N, C*b*b, H/b, W/b] = the forward's transposed [N, b, b, C, H/b, W/b].
    Value* mid =
        c.emitN("Concat", {dims(dy, 0, 1), b.ints({bs, bs}), dims(x, 1, 2), dims(dy, 2, 4)}, 1,
                {{"axis", Attribute{int64_t{0}}}})[0];
    Value* t = b.op("Transpose", {b.reshape(dy, mid)},
                    {{"perm", Attribute{std::vector<int64_t>{0, 3, 4, 1, 5, 2}}}});
    c.give(0, b.reshape(t, b.shape(x)));
  });

  OpBuilder(r.at("Transpose")).grad([](GradCtx& c) {
    if (!c.needs(0)) return;
    B b{c};
    int64_t rank = c.rankOf(c.in(0));
    std::vector<int64_t> perm = c.node.attrInts("perm", {});
    if (perm.empty())
      for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    AICC_CHECK(static_cast<int64_t>(perm.size()) == rank, "perm has {} entries for rank {}",
               perm.size(), rank);
    std::vector<int64_t> inv(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) {
      int64_t p = normAxis(perm[i], rank);
      inv[static_cast<size_t>(p)] = static_cast<int64_t>(i);
    }
    c.give(0, b.op("Transpose", {c.doutOrZeros(0)}, {{"perm", Attribute{inv}}}));
  });

  OpBuilder(r.at("Expand")).grad([](GradCtx& c) {
    if (c.needs(0)) c.give(0, c.sumToShape(c.doutOrZeros(0), c.in(0)));
  });

  OpBuilder(r.at("Trilu")).grad([](GradCtx& c) {
    if (!c.needs(0)) return;
    B b{c};
    std::vector<Value*> ins{c.doutOrZeros(0)};
    if (c.node.hasInput(1)) ins.push_back(c.in(1));
    c.give(0, b.op("Trilu", ins, c.node.attrs));
  });

  OpBuilder(r.at("Concat")).grad([](GradCtx& c) {
    B b{c};
    int64_t rank = c.rankOf(c.out(0));
    int64_t axis = normAxis(c.node.attrInt("axis"), rank);
    std::vector<Value*> sizes;
    for (Value* x : c.node.inputs)
      sizes.push_back(
          b.op("Shape", {x}, {{"start", Attribute{axis}}, {"end", Attribute{axis + 1}}}));
    Value* split = c.emitN("Concat", sizes, 1, {{"axis", Attribute{int64_t{0}}}})[0];
    auto parts = c.emitN("Split", {c.doutOrZeros(0), split}, static_cast<int>(sizes.size()),
                         {{"axis", Attribute{axis}}});
    for (size_t i = 0; i < parts.size(); ++i) c.give(i, parts[i]);
  });

  OpBuilder(r.at("Split")).grad([](GradCtx& c) {
    if (!c.needs(0)) return;
    std::vector<Value*> parts;
    for (size_t i = 0; i < c.node.outputs.size(); ++i) {
      AICC_CHECK(c.out(i) || c.dout(i), "Split output {} is omitted; its gradient is unknown", i);
      parts.push_back(c.doutOrZeros(i));
    }
    c.give(0, c.emitN("Concat", parts, 1, {{"axis", Attribute{c.node.attrInt("axis")}}})[0]);
  });

  // Pad: constant mode scatters the padding's gradient into an extra slot (the constant_value's
  // gradient); the other modes map padded positions to their source elements.
  OpBuilder(r.at("Pad")).grad([](GradCtx& c) {
    AICC_CHECK(!c.needs(1) && !c.needs(3), "Pad has no gradient for pads/axes");
    if (!c.needs(0) && !c.needs(2)) return;
    B b{c};
    bool constant = c.node.attrString("mode") == "constant";
    Value* fillGrad = nullptr;
    Value* gx = scatterBack(
        c, c.in(0), c.doutOrZeros(0),
        [&](Value* iota, Value* fill) {
          std::vector<Value*> ins{iota, c.in(1), constant ? fill : nullptr};
          if (c.node.hasInput(3)) ins.push_back(c.in(3));
          while (!ins.back()) ins.pop_back();
          return c.emitN("Pad", ins, 1, c.node.attrs)[0];
        },
        constant ? &fillGrad : nullptr);
    c.give(0, gx);
    if (c.needs(2))
      c.give(2, fillGrad ? b.reshape(fillGrad, b.shape(c.in(2))) : c.zerosLike(c.in(2)));
  });
}

} // namespace aicc::grad
