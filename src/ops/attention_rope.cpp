// RotaryEmbedding (opset 23) and TensorScatter (opset 24), the KV-cache companions of Attention.
//
// RotaryEmbedding rotates the first rotary_embedding_dim (default: head_size) features of every
// head: pairs (x1, x2) are the two halves of that span, or adjacent features when interleaved;
// with c, s = cos_cache / sin_cache at the token's position (position_ids[b, s] indexes rows of
// 2-D caches; without position_ids the caches are [B, S, dim / 2]):
//   x1' = c * x1 - s * x2,   x2' = s * x1 + c * x2
// computed in double, rounded to the input type after each product and sum as the reference does.
//
// TensorScatter copies `update` into `past_cache` along `axis` (not the batch axis), starting at
// write_indices[b] per batch row (0 when omitted); mode "circular" wraps modulo the cache length,
// "linear" requires the update to fit.
#include "ops/attention.h"

#include "ops/helpers.h"

#include <cstring>

namespace aicc {
namespace {

using attn::roundTo;

std::vector<RValue> rotaryKernel(KernelCtx& c) {
  const Node& n = c.node;
  for (size_t i : {0, 1, 2}) attn::requireFloat(c, i, {DType::F32, DType::F16, DType::BF16});
  const Tensor &X = c.in(0), &C = c.in(1), &S = c.in(2);
  AICC_CHECK(C.dtype() == X.dtype() && S.dtype() == X.dtype(),
             "cos_cache and sin_cache must have the input's type {}", dtypeName(X.dtype()));
  AICC_CHECK(X.rank() == 3 || X.rank() == 4, "input must be 3-D or 4-D, got {}",
             formatDims(X.shape()));
  const DType t = X.dtype();
  // Element (b, s, h, d) of X at flat index ((b * sB) + s * sS + h * sH + d).
  int64_t B = X.dim(0), Sl = 0, H = 0, hd = 0, sB = 0, sS = 0, sH = 0;
  if (X.rank() == 4) {
    H = X.dim(1), Sl = X.dim(2), hd = X.dim(3);
    sB = H * Sl * hd, sH = Sl * hd, sS = hd;
  } else {
    H = n.attrInt("num_heads", 0);
    AICC_CHECK(H > 0, "num_heads must be given (> 0) for a 3-D input");
    AICC_CHECK(X.dim(2) % H == 0, "hidden size {} is not a multiple of num_heads {}", X.dim(2), H);
    Sl = X.dim(1), hd = X.dim(2) / H;
    sB = Sl * H * hd, sS = H * hd, sH = hd;
  }
  int64_t rd = n.attrInt("rotary_embedding_dim");
  if (rd == 0) rd = hd;
  AICC_CHECK(rd > 0 && rd <= hd && rd % 2 == 0,
             "rotary_embedding_dim {} must be even and at most the head size {}", rd, hd);
  const int64_t half = rd / 2;
  const bool interleaved = n.attrInt("interleaved") != 0;
  AICC_CHECK(C.shape() == S.shape(), "cos_cache {} and sin_cache {} differ", formatDims(C.shape()),
             formatDims(S.shape()));
  std::vector<int64_t> pos;
  if (c.has(3)) {
    const Tensor& P = c.in(3);
    AICC_CHECK(P.rank() == 2 && P.dim(0) == B && P.dim(1) == Sl,
               "position_ids must be [{},{}], got {}", B, Sl, formatDims(P.shape()));
    AICC_CHECK(C.rank() == 2 && C.dim(1) == half, "cos_cache must be [max_position, {}], got {}",
               half, formatDims(C.shape()));
    pos = P.toI64Vector();
    for (int64_t p : pos)
      AICC_CHECK(p >= 0 && p < C.dim(0), "position id {} is out of [0, {})", p, C.dim(0));
  } else {
    AICC_CHECK(C.rank() == 3 && C.dim(0) == B && C.dim(1) == Sl && C.dim(2) == half,
               "without position_ids cos_cache must be [{},{},{}], got {}", B, Sl, half,
               formatDims(C.shape()));
  }
  std::vector<double> x = attn::toDoubles(X), cv = attn::toDoubles(C), sv = attn::toDoubles(S);
  std::vector<double> y = x;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < Sl; ++s) {
      const int64_t row = pos.empty() ? b * Sl + s : pos[static_cast<size_t>(b * Sl + s)];
      const double* cr = cv.data() + row * half;
      const double* sr = sv.data() + row * half;
      for (int64_t h = 0; h < H; ++h) {
        const int64_t base = b * sB + s * sS + h * sH;
        for (int64_t k = 0; k < half; ++k) {
          const int64_t i1 = base + (interleaved ? 2 * k : k);
          const int64_t i2 = base + (interleaved ? 2 * k + 1 : k + half);
          const double x1 = x[static_cast<size_t>(i1)], x2 = x[static_cast<size_t>(i2)];
          const double co = cr[k], si = sr[k];
          y[static_cast<size_t>(i1)] = roundTo(t, roundTo(t, co * x1) - roundTo(t, si * x2));
          y[static_cast<size_t>(i2)] = roundTo(t, roundTo(t, si * x1) + roundTo(t, co * x2));
        }
      }
    }
  return {RValue::of(attn::fromDoubles(t, X.shape(), y))};
}

void rotaryInfer(InferCtx& c) {
  const auto& s = c.inShape(0);
  if (s) {
    AICC_CHECK(s->size() == 3 || s->size() == 4, "input must be 3-D or 4-D, got {}",
               formatShape(*s));
    if (s->size() == 3)
      AICC_CHECK(c.node.attrInt("num_heads", 0) > 0,
                 "num_heads must be given (> 0) for a 3-D input");
  }
  inferSameAsInput0(c);
}

std::vector<RValue> tensorScatterKernel(KernelCtx& c) {
  const Node& n = c.node;
  const Tensor &past = c.in(0), &upd = c.in(1);
  AICC_CHECK(past.dtype() == upd.dtype(), "update is {} but past_cache is {}",
             dtypeName(upd.dtype()), dtypeName(past.dtype()));
  AICC_CHECK(past.rank() >= 2 && upd.rank() == past.rank(),
             "past_cache {} and update {} must have the same rank >= 2", formatDims(past.shape()),
             formatDims(upd.shape()));
  const int64_t axis = normAxis(n.attrInt("axis"), past.rank());
  AICC_CHECK(axis != 0, "axis cannot be the batch axis 0");
  const std::string mode = n.attrString("mode");
  AICC_CHECK(mode == "linear" || mode == "circular", "mode '{}' is not 'linear' or 'circular'",
             mode);
  for (int64_t i = 0; i < past.rank(); ++i)
    AICC_CHECK(i == axis ? upd.dim(i) <= past.dim(i) : upd.dim(i) == past.dim(i),
               "update {} does not fit past_cache {} (axis {})", formatDims(upd.shape()),
               formatDims(past.shape()), axis);
  const int64_t B = past.dim(0), M = past.dim(axis), L = upd.dim(axis);
  std::vector<int64_t> wi(static_cast<size_t>(B), 0);
  if (c.has(2)) {
    const Tensor& w = c.in(2);
    AICC_CHECK(w.dtype() == DType::I64 && w.numel() == B,
               "write_indices must be int64 [{}], got {} {}", B, dtypeName(w.dtype()),
               formatDims(w.shape()));
    wi = w.toI64Vector();
  }
  int64_t outer = 1, inner = 1;
  for (int64_t i = 1; i < axis; ++i) outer *= past.dim(i);
  for (int64_t i = axis + 1; i < past.rank(); ++i) inner *= past.dim(i);
  Tensor out = past.clone();
  const size_t es = dtypeSize(past.dtype());
  for (int64_t b = 0; b < B; ++b) {
    const int64_t w = wi[static_cast<size_t>(b)];
    if (mode == "linear")
      AICC_CHECK(w >= 0 && w + L <= M,
                 "write index {} + update length {} exceeds the cache length {}", w, L, M);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t s = 0; s < L; ++s) {
        int64_t dst = w + s;
        if (mode == "circular") dst = ((dst % M) + M) % M;
        const int64_t di = ((b * outer + o) * M + dst) * inner,
                      si = ((b * outer + o) * L + s) * inner;
        if (past.dtype() == DType::String) {
          for (int64_t e = 0; e < inner; ++e) out.strings()[di + e] = upd.strings()[si + e];
        } else {
          std::memcpy(static_cast<std::byte*>(out.raw()) + di * static_cast<int64_t>(es),
                      static_cast<const std::byte*>(upd.raw()) + si * static_cast<int64_t>(es),
                      static_cast<size_t>(inner) * es);
        }
      }
  }
  return {RValue::of(out)};
}

void tensorScatterInfer(InferCtx& c) {
  const auto &ps = c.inShape(0), &us = c.inShape(1);
  if (ps && us) {
    AICC_CHECK(ps->size() == us->size() && ps->size() >= 2,
               "past_cache {} and update {} must have the same rank >= 2", formatShape(*ps),
               formatShape(*us));
    const int64_t axis = normAxis(c.node.attrInt("axis"), static_cast<int64_t>(ps->size()));
    AICC_CHECK(axis != 0, "axis cannot be the batch axis 0");
    for (size_t i = 0; i < ps->size(); ++i)
      if (static_cast<int64_t>(i) != axis)
        attn::checkSameDim((*ps)[i], (*us)[i], "past_cache and update dims");
  }
  inferSameAsInput0(c);
}

} // namespace

void registerRopeOps(OpRegistry& r) {
  r.op("RotaryEmbedding")
      .since(23)
      .inputs(3, 4)
      .attrInt("interleaved", 0)
      .attr("num_heads", Attribute::Kind::Int)
      .attrInt("rotary_embedding_dim", 0)
      .infer(rotaryInfer)
      .kernel(rotaryKernel);
  r.op("TensorScatter")
      .since(24)
      .inputs(2, 3)
      .attrInt("axis", -2)
      .attrString("mode", "linear")
      .infer(tensorScatterInfer)
      .kernel(tensorScatterKernel);
}

} // namespace aicc
