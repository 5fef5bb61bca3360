// aicc.Reorder: between NCHW and NCHW16c (ops/layout.h). Attribute `to` ("nchw16c" or "nchw");
// `channels`, the logical channel count, for "nchw".
#include "ops/layout.h"

#include "ops/helpers.h"

namespace aicc {

namespace {

// Moves element (n, c, s) of [N, C, S] to or from (n, c / 16, s, c % 16) of the blocked tensor.
template <class F> void forEachLane(int64_t N, int64_t C, int64_t S, F f) {
  const int64_t blocks = (C + kLayoutBlock - 1) / kLayoutBlock;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s)
        f((n * C + c) * S + s,
          ((n * blocks + c / kLayoutBlock) * S + s) * kLayoutBlock + c % kLayoutBlock);
}

std::vector<RValue> reorderKernel(KernelCtx& c) {
  const Tensor& x = c.in(0);
  const std::string to = c.node.attrString("to");
  if (to == "nchw16c") return {RValue::of(blockChannels(x))};
  AICC_CHECK(to == "nchw", "attribute 'to' is '{}' (nchw16c or nchw)", to);
  return {RValue::of(unblockChannels(x, c.node.attrInt("channels")))};
}

void reorderInfer(InferCtx& c) {
  const auto& xs = c.inShape(0);
  const std::string to = c.node.attrString("to");
  AICC_CHECK(to == "nchw16c" || to == "nchw", "attribute 'to' is '{}' (nchw16c or nchw)", to);
  if (!xs) return c.setTensor(0, c.inDType(0), std::nullopt);
  Shape out;
  if (to == "nchw16c") {
    AICC_CHECK(xs->size() >= 3, "input {} has no channel dim and spatial dims", formatShape(*xs));
    out = *xs;
    const Dim ch = (*xs)[1];
    out[1] = ch.isStatic() ? Dim::known((ch.value + kLayoutBlock - 1) / kLayoutBlock) : Dim{};
    out.push_back(Dim::known(kLayoutBlock));
  } else {
    AICC_CHECK(xs->size() >= 4, "input {} is not blocked ([N, C/16, spatial..., 16])",
               formatShape(*xs));
    const int64_t ch = c.node.attrInt("channels");
    out.assign(xs->begin(), xs->end() - 1);
    out[1] = Dim::known(ch);
  }
  c.setTensor(0, c.inDType(0), out);
}

} // namespace

Tensor blockChannels(const Tensor& x) {
  AICC_CHECK(x.rank() >= 3, "cannot block {}: no channel dim and spatial dims",
             formatDims(x.shape()));
  const int64_t N = x.dim(0), C = x.dim(1), S = x.numel() / std::max<int64_t>(1, N * C);
  Dims shape = x.shape();
  shape[1] = (C + kLayoutBlock - 1) / kLayoutBlock;
  shape.push_back(kLayoutBlock);
  Tensor y(x.dtype(), shape); // zero-filled
  const size_t es = dtypeSize(x.dtype());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(y.raw());
  forEachLane(N, C, S,
              [&](int64_t from, int64_t to) { std::memcpy(dst + to * es, src + from * es, es); });
  return y;
}

Tensor unblockChannels(const Tensor& x, int64_t channels) {
  AICC_CHECK(x.rank() >= 4 && x.shape().back() == kLayoutBlock,
             "cannot unblock {}: not [N, C/16, spatial..., 16]", formatDims(x.shape()));
  AICC_CHECK(channels >= 1 && (channels + kLayoutBlock - 1) / kLayoutBlock == x.dim(1),
             "{} channels do not fill the {} blocks of {}", channels, x.dim(1),
             formatDims(x.shape()));
  Dims shape(x.shape().begin(), x.shape().end() - 1);
  shape[1] = channels;
  Tensor y(x.dtype(), shape);
  const int64_t N = shape[0], S = y.numel() / std::max<int64_t>(1, N * channels);
  const size_t es = dtypeSize(x.dtype());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(y.raw());
  forEachLane(N, channels, S, [&](int64_t flat, int64_t blocked) {
    std::memcpy(dst + flat * es, src + blocked * es, es);
  });
  return y;
}

void registerLayoutOps(OpRegistry& r) {
  r.op("Reorder", kAiccDomain)
      .perSample()
      .inputs(1, 1)
      .outputs(1, 1)
      .attr("to", Attribute::Kind::String, /*required=*/true)
      .attrInt("channels", 0)
      .infer(reorderInfer)
      .kernel(reorderKernel);
}

} // namespace aicc
