#include "kernels/conv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/thread_pool.h"
#include "rt/error.h"

namespace aicc::kernels {

// conv.h.
AICC_KERNEL_CLONES void transposeBlocked(const float* src, int64_t rows, int64_t cols, int64_t lds,
                                         float* dst, int64_t ldd) {
  for (int64_t i0 = 0; i0 < rows; i0 += 16)
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      const int64_t i1 = std::min(rows, i0 + 16), j1 = std::min(cols, j0 + 16);
      for (int64_t j = j0; j < j1; ++j)
        for (int64_t i = i0; i < i1; ++i) dst[j * ldd + i] = src[i * lds + j];
    }
}

DwConvWeights packDepthwise3x3(const KernelDesc& kernel, const float* weightC133, const float* bias,
                               int64_t C) {
  AICC_RT_CHECK(kernel.op == KernelOp::DepthwiseConv3x3 && kernel.dwRow,
                "packDepthwise3x3: '{}' is not a depthwise kernel", kernel.name);
  AICC_RT_CHECK(C >= 1, "packDepthwise3x3: bad channel count {}", C);
  DwConvWeights wt;
  wt.kernel = &kernel;
  wt.C = C;
  wt.w.resize(size_t(9 * C));
  for (int64_t c = 0; c < C; ++c)
    for (int t = 0; t < 9; ++t) wt.w[size_t(t * C + c)] = weightC133[c * 9 + t];
  if (bias) wt.bias.assign(bias, bias + C);
  return wt;
}

void depthwiseConv3x3Nhwc(const DwConvWeights& wt, int64_t N, int64_t H, int64_t W, int64_t stride,
                          const float* in, float* out, const Epilogue& act, ThreadPool* pool) {
  AICC_RT_CHECK(wt.kernel && wt.kernel->dwRow, "depthwiseConv3x3: weights are not packed");
  AICC_RT_CHECK(stride == 1 || stride == 2, "depthwiseConv3x3: stride {} (1 or 2 supported)",
                stride);
  AICC_RT_CHECK(N >= 0 && H >= 1 && W >= 1, "depthwiseConv3x3: bad shape N={} H={} W={}", N, H, W);
  AICC_RT_CHECK(!act.bias, "depthwiseConv3x3: the bias lives in the packed weights");
  const int64_t C = wt.C, OH = dwOutSize(H, stride), OW = dwOutSize(W, stride);
  const int64_t rowsTotal = N * OH;
  auto runRows = [&](int64_t r0, int64_t r1) {
    DwRowParams p{};
    p.w = wt.w.data();
    p.bias = wt.bias.empty() ? nullptr : wt.bias.data();
    p.W = W;
    p.C = C;
    p.OW = OW;
    p.stride = stride;
    p.lo = act.lo();
    p.hi = act.hi();
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / OH, oy = r % OH;
      const float* img = in + n * H * W * C;
      for (int ky = 0; ky < 3; ++ky) {
        const int64_t iy = oy * stride - 1 + ky;
        p.rows[ky] = iy >= 0 && iy < H ? img + iy * W * C : nullptr;
      }
      p.out = out + r * OW * C;
      wt.kernel->dwRow(p);
    }
  };
  parallelRanges(pool, rowsTotal, true, runRows);
}

Conv2dWeights packConv2d(const KernelDesc& gemmKernel, const Conv2dShape& s,
                         const float* weightOIHW, const float* bias) {
  AICC_RT_CHECK(s.N >= 0 && s.H >= 1 && s.W >= 1 && s.Cin >= 1 && s.Cout >= 1 && s.KH >= 1 &&
                    s.KW >= 1 && s.strideH >= 1 && s.strideW >= 1 && s.dilH >= 1 && s.dilW >= 1 &&
                    s.padTop >= 0 && s.padLeft >= 0 && s.padBottom >= 0 && s.padRight >= 0,
                "packConv2d: bad shape");
  AICC_RT_CHECK(s.OH() >= 1 && s.OW() >= 1, "packConv2d: empty output ({}x{})", s.OH(), s.OW());
  const int64_t K = s.KH * s.KW * s.Cin;
  std::vector<float> b(size_t(K * s.Cout)); // [K, Cout], row (kh * KW + kw) * Cin + ci
  for (int64_t co = 0; co < s.Cout; ++co)
    for (int64_t ci = 0; ci < s.Cin; ++ci)
      for (int64_t kh = 0; kh < s.KH; ++kh)
        for (int64_t kw = 0; kw < s.KW; ++kw)
          b[size_t(((kh * s.KW + kw) * s.Cin + ci) * s.Cout + co)] =
              weightOIHW[((co * s.Cin + ci) * s.KH + kh) * s.KW + kw];
  Conv2dWeights wt;
  wt.shape = s;
  wt.w = packB(gemmKernel, b.data(), K, s.Cout, s.Cout);
  if (bias) wt.bias.assign(bias, bias + s.Cout);
  return wt;
}

namespace {
// Rows [p0, p1) of the im2col matrix of image `img` ([H, W, Cin]): one row per output pixel, K
// columns ordered (kh, kw, ci); padding reads as zero.
void im2colRows(const Conv2dShape& s, const float* img, int64_t p0, int64_t p1, float* dst) {
  const int64_t OW = s.OW(), Cin = s.Cin, K = s.KH * s.KW * Cin;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t oy = p / OW, ox = p % OW;
    float* row = dst + (p - p0) * K;
    for (int64_t kh = 0; kh < s.KH; ++kh) {
      const int64_t iy = oy * s.strideH - s.padTop + kh * s.dilH;
      for (int64_t kw = 0; kw < s.KW; ++kw) {
        const int64_t ix = ox * s.strideW - s.padLeft + kw * s.dilW;
        float* d = row + (kh * s.KW + kw) * Cin;
        if (iy < 0 || iy >= s.H || ix < 0 || ix >= s.W)
          std::fill(d, d + Cin, 0.0f);
        else
          std::copy_n(img + (iy * s.W + ix) * Cin, Cin, d);
      }
    }
  }
}
} // namespace

void conv2dNhwc(const Conv2dWeights& wt, const float* in, float* out, const Epilogue& act,
                ThreadPool* pool) {
  const Conv2dShape& s = wt.shape;
  AICC_RT_CHECK(wt.w.kernel, "conv2d: weights are not packed");
  AICC_RT_CHECK(!act.bias, "conv2d: the bias lives in the packed weights");
  Epilogue ep = act;
  ep.bias = wt.bias.empty() ? nullptr : wt.bias.data();
  const int64_t OH = s.OH(), OW = s.OW(), P = OH * OW, K = s.KH * s.KW * s.Cin;
  if (s.isPointwise()) { // the NHWC input already is the [N*H*W, Cin] A matrix
    gemm(wt.w, s.N * P, in, s.Cin, out, s.Cout, ep, pool);
    return;
  }
  // im2col in chunks of output pixels so the chunk stays in cache between the copy and the GEMM.
  const int64_t chunk = std::max<int64_t>(wt.w.kernel->mr, std::min<int64_t>(P, 256));
  const int64_t chunksPerImage = (P + chunk - 1) / chunk, total = s.N * chunksPerImage;
  const int64_t T = pool ? pool->numThreads() : 1;
  auto runChunk = [&](int64_t c, ThreadPool* inner) {
    const int64_t n = c / chunksPerImage, p0 = (c % chunksPerImage) * chunk;
    const int64_t p1 = std::min(P, p0 + chunk);
    thread_local std::vector<float> col;
    if (col.size() < size_t((p1 - p0) * K)) col.resize(size_t((p1 - p0) * K));
    im2colRows(s, in + n * s.H * s.W * s.Cin, p0, p1, col.data());
    gemm(wt.w, p1 - p0, col.data(), K, out + (n * P + p0) * s.Cout, s.Cout, ep, inner);
  };
  if (T > 1 && total >= 2 * T) { // enough chunks: one thread per chunk
    pool->parallelFor(T, [&](int64_t t) {
      for (int64_t c = total * t / T; c < total * (t + 1) / T; ++c) runChunk(c, nullptr);
    });
  } else { // few pixels: parallelize inside each GEMM
    for (int64_t c = 0; c < total; ++c) runChunk(c, pool);
  }
}

namespace {

// Packs rows [0, kc) x columns [0, cols) of an im2col panel from the padded copy: element (k, j)
// is pad[koff[k] + pix[j]] (koff: tap k's offset, pix: output pixel j's first input pixel), so a
// row is one gather with a fixed index vector; columns [cols, nr) are zero. It replaced a
// bounds-checked copy per element (Intel Xeon with AMX, 1 thread: the 7x7x512 3x3 -> 512 layer's
// panels took ~35% of its bf16 time).
constexpr int64_t kMaxPanelColumns = 64; // nr of every GEMM tile (registry.cpp: 8 .. 48)
AICC_KERNEL_CLONES void gatherPanel(const float* pad, const int64_t* koff, const int32_t* pix,
                                    int64_t kc, int64_t cols, int64_t nr, float* dst) {
  for (int64_t k = 0; k < kc; ++k, dst += nr) {
    const float* src = pad + koff[k];
    for (int64_t j = 0; j < cols; ++j) dst[j] = src[pix[j]];
    for (int64_t j = cols; j < nr; ++j) dst[j] = 0.0f;
  }
}

} // namespace

namespace {

// Columns 2m of src[0, 32) to even[m], columns 2m + 1 to odd[m]: a block of 16 pairs, which the
// compiler turns into a few permutes (cloned for the vector ISAs). Through local arrays, so it
// tells the three streams apart without restrict parameters (lost where a row loop inlines it:
// 56-column rows ran scalar, 3x slower).
__attribute__((always_inline)) inline void deinterleaveBlock(const float* src, float* even,
                                                             float* odd) {
  constexpr int B = 16;
  float t[2 * B], e[B], o[B];
  std::memcpy(t, src, sizeof t);
  for (int j = 0; j < B; ++j) {
    e[j] = t[2 * j];
    o[j] = t[2 * j + 1];
  }
  std::memcpy(even, e, sizeof e);
  std::memcpy(odd, o, sizeof o);
}

// Columns 2m of src[0, n) to first[m], columns 2m + 1 to second[m]: two contiguous streams, in
// blocks of 16 pairs; a last partial block is redone as the block ending at the last pair (the
// same values stored twice), where a vectorized loop's scalar tail took most of a 28-column row.
__attribute__((always_inline)) inline void deinterleaveRow(const float* src, int64_t n,
                                                           float* first, float* second) {
  constexpr int64_t B = 16;
  const int64_t pairs = n / 2;
  if (pairs >= B) {
    int64_t m = 0;
    for (; m + B <= pairs; m += B) deinterleaveBlock(src + 2 * m, first + m, second + m);
    if (m < pairs) deinterleaveBlock(src + 2 * (pairs - B), first + pairs - B, second + pairs - B);
  } else {
    for (int64_t m = 0; m < pairs; ++m) {
      first[m] = src[2 * m];
      second[m] = src[2 * m + 1];
    }
  }
  if (n & 1) first[pairs] = src[2 * pairs];
}
AICC_KERNEL_CLONES void deinterleave(const float* __restrict__ src, int64_t n,
                                     float* __restrict__ first, float* __restrict__ second) {
  deinterleaveRow(src, n, first, second);
}

// deinterleave over `rows` rows of n >= 32 floats (src rows n apart, dst rows `pitch` apart,
// even columns to dst + first, odd ones to dst + second), in one call: a call per row through
// the clones' dispatch cost 112x112 stride-2 depthwise layers ~15% (Intel Xeon: 112x112x96
// 0.47 -> 0.40 ms at 1 thread, 0.27 -> 0.21 at 2; MobileNetV2's features.2 0.56 -> 0.46 ms in
// the model). Rows under 64 columns keep the per-row calls (no gain measured there).
AICC_KERNEL_CLONES void deinterleaveRows(const float* src, int64_t rows, int64_t n, float* dst,
                                         int64_t pitch, int64_t first, int64_t second) {
  for (int64_t r = 0; r < rows; ++r, src += n, dst += pitch)
    deinterleaveRow(src, n, dst + first, dst + second);
}

// Whether channel rows read B through the implicit im2col of a padded copy (see
// conv2dChannelRows): spatial kernels with output rows of at least one vector or >= 14 pixels.
bool implicitIm2col(const KernelDesc& kd, const Conv2dShape& s) {
  const int64_t OW = s.OW(), W = std::max<int64_t>(1, kd.vectorWidth);
  return !s.isPointwise() && (OW >= W || OW >= 14) && !(s.KH == 1 && s.KW == 1);
}

// ConvRows::Channels (conv.h).
void conv2dChannelRows(const KernelDesc& kd, const Conv2dShape& s, const float* packedW,
                       const float* in, float* out, const Epilogue& ep, ThreadPool* pool) {
  // bf16 (kd.kg 2): the weights are packed in k pairs and each B panel is rounded into pairs by
  // kd.packB from where the f32 tile would read it, once per block, before the weight panels
  // stream over it.
  const bool bf = kd.op == KernelOp::GemmBf16;
  AICC_RT_CHECK(!bf || (kd.packB && kd.nr == 32), "conv2d: '{}' has no 32-column B packer",
                kd.name);
  // Activations stored as bf16 (Epilogue::bf16, bf16 kernels only): the input is widened where it
  // is copied anyway (the padded copy, the subsampled pixels) or paired as it is (a pointwise
  // layer's B rows); a bf16 result or residual is the tile's own (KernelDesc::bf16Io).
  AICC_RT_CHECK(!ep.bf16 || (bf && kd.widenBf16 && kd.packB16),
                "conv2d: '{}' stores activations in f32 only", kd.name);
  AICC_RT_CHECK(kd.bf16Io || !(ep.bf16 & (kBf16Output | kBf16Residual)),
                "conv2d: '{}' reads bf16 input only", kd.name);
  const bool bf16In = ep.bf16 & kBf16Input;
  const auto* in16 = reinterpret_cast<const uint16_t*>(in);
  // Row n floats of the input from element `at`, f32 (in place) or widened into `tmp`.
  auto inputRow = [&](int64_t at, int64_t n, std::vector<float>& tmp) -> const float* {
    if (!bf16In) return in + at;
    tmp.resize(size_t(n));
    kd.widenBf16(in16 + at, n, tmp.data());
    return tmp.data();
  };
  // A strided 1x1 convolution without padding is a pointwise one over the input's subsampled
  // pixels: copied once (a 1/(sH sW) share of the input) they are read in place, where packing
  // im2col panels cost a bounds-checked scalar copy per element (resnet50's stride-2
  // downsampling layers ran ~25% below its other 1x1 convolutions of the same FLOPs).
  if (s.KH == 1 && s.KW == 1 && !s.isPointwise() && !s.padTop && !s.padLeft && !s.padBottom &&
      !s.padRight) {
    Conv2dShape sub = s;
    sub.H = s.OH(), sub.W = s.OW(), sub.strideH = sub.strideW = 1, sub.dilH = sub.dilW = 1;
    thread_local std::vector<float> pixels;
    pixels.resize(size_t(s.Cin * sub.H * sub.W));
    float* buf = pixels.data(); // this thread's buffer (the workers' thread_local is another)
    auto copy = [&](int64_t c0, int64_t c1) {
      std::vector<float> tmp;
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t y = 0; y < sub.H; ++y) {
          const float* src = inputRow((c * s.H + y * s.strideH) * s.W, s.W, tmp);
          float* dst = buf + (c * sub.H + y) * sub.W;
          for (int64_t x = 0; x < sub.W; ++x) dst[x] = src[x * s.strideW];
        }
    };
    parallelRanges(pool, s.Cin, s.Cin * sub.H * sub.W >= (int64_t(1) << 15), copy);
    Epilogue f32In = ep;
    f32In.bf16 &= ~kBf16Input;
    return conv2dChannelRows(kd, sub, packedW, buf, out, f32In, pool);
  }
  auto units = [&](int64_t k) { return packedKUnits(kd, k); };
  const int64_t M = s.Cout, K = s.Cin * s.KH * s.KW, P = s.OH() * s.OW();
  const int64_t mr = kd.mr, nr = kd.nr, kcMax = kd.kc, Mpad = (M + mr - 1) / mr * mr;
  const bool pointwise = s.isPointwise();
  // Spatial convolutions read B from a zero-padded copy of the input through an offset table:
  // element (k, pixel) of the im2col matrix, k = (ci, kh, kw), is at koff[k] + the pixel's first
  // input pixel. For a column stride sW the copy is split into sW phases (phase p holds the padded
  // columns c = p mod sW at c / sW), so the pixels of one output row are contiguous for every tap.
  // With output rows of at least one vector (or >= 14 pixels) the tile reads it in place
  // (implicit im2col, `direct`): vector v of row k starts at koff[k] + voff[v]. With rows of >= W
  // pixels (W = the vector width) a panel is nr consecutive output pixels (`flat`, every panel
  // full: a 56-pixel row no longer ends in a half-empty panel); a vector that continues on the
  // next output row blends two loads. With shorter rows (14 pixels under AVX-512) a panel is a
  // segment of one row. Shorter rows (7x7 maps under AVX2, and under bf16) gather im2col panels
  // from the copy (gatherPanel); strided 1x1 convolutions without padding were made pointwise
  // above.
  AICC_RT_CHECK(nr <= kMaxPanelColumns, "conv2d: '{}' has {} columns, more than a panel holds",
                kd.name, nr);
  const int64_t OW = s.OW(), segs = (OW + nr - 1) / nr, sW = s.strideW;
  const int64_t W = std::max<int64_t>(1, kd.vectorWidth), NV = nr / W;
  const bool direct = implicitIm2col(kd, s);
  const bool flat = direct && OW >= W;
  const int64_t Hp = s.H + s.padTop + s.padBottom, Wp = s.W + s.padLeft + s.padRight;
  const int64_t Wh = (Wp + sW - 1) / sW, phase = s.Cin * Hp * Wh;
  thread_local std::vector<float> padded;
  std::vector<int64_t> koff;
  if (!pointwise) {
    // + slack: a split tile reads every vector a row gap further on too (GemmTileParams::vgap)
    padded.assign(size_t(sW * phase + (s.strideH + 1) * Wh + 2 * nr), 0.0f);
    float* buf = padded.data(); // this thread's buffer (the workers' thread_local is another)
    auto copyChannels = [&](int64_t c0, int64_t c1) {
      std::vector<float> tmp;
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t y = 0; y < s.H; ++y) {
          const float* src = inputRow((c * s.H + y) * s.W, s.W, tmp);
          float* row = buf + (c * Hp + y + s.padTop) * Wh;
          if (sW == 1) {
            std::copy_n(src, s.W, row + s.padLeft);
            continue;
          }
          // Column x goes to phase (x + padLeft) mod sW at (x + padLeft) / sW: sW contiguous
          // streams, one per residue of x; for sW 2 one deinterleave (the strided loop was ~9%
          // of a 56x56x64 3x3/2 layer, Intel Xeon).
          if (sW == 2) {
            const int64_t c0 = s.padLeft, c1 = s.padLeft + 1;
            deinterleave(src, s.W, row + (c0 % 2) * phase + c0 / 2,
                         row + (c1 % 2) * phase + c1 / 2);
            continue;
          }
          for (int64_t r0 = 0; r0 < sW && r0 < s.W; ++r0) {
            const int64_t col = r0 + s.padLeft;
            float* d = row + (col % sW) * phase + col / sW;
            const int64_t n = (s.W - r0 + sW - 1) / sW;
            for (int64_t j = 0; j < n; ++j) d[j] = src[r0 + j * sW];
          }
        }
    };
    parallelRanges(pool, s.Cin, s.Cin * s.H * s.W >= (int64_t(1) << 15), copyChannels);
    koff.resize(size_t(K));
    for (int64_t c = 0, k = 0; c < s.Cin; ++c)
      for (int64_t kh = 0; kh < s.KH; ++kh)
        for (int64_t kw = 0; kw < s.KW; ++kw) {
          const int64_t col = kw * s.dilW;
          koff[size_t(k++)] = (col % sW) * phase + (c * Hp + kh * s.dilH) * Wh + col / sW;
        }
  }
  AICC_RT_CHECK(direct || pointwise || Hp * Wh < (int64_t(1) << 31),
                "conv2d: a {}x{} input plane is too large", s.H, s.W);
  const float* pad = padded.data();
  const int64_t panels = direct && !flat ? s.OH() * segs : (P + nr - 1) / nr, mPanels = Mpad / mr;
  // Pixel panels per B block: the block (kc x nb*nr floats, 256 KB at kc 128 and 32-pixel
  // panels) stays in L2 while each weight micro-panel, in L1, meets all of its panels. bf16: the
  // block's panels are rounded into pairs first (512 KB of them); in BLIS order the AMX tile
  // streamed its 63 KB weight micro-panel from L3 for
  // 32 pixels (resnet50 bf16, Intel Xeon with AMX, 1 thread, alternating: 27.0-28.9 -> 23.4-26.1
  // ms; 2 threads within noise).
  const bool bf16Out = ep.bf16 & kBf16Output, bf16Io = bf16Out || (ep.bf16 & kBf16Residual);
  const int64_t nb =
      std::max<int64_t>(1, std::min<int64_t>(panels, bf ? (int64_t(1) << 17) / (units(kcMax) * nr)
                                                        : 16 * 128 / kcMax));
  auto run = [&](int64_t pa, int64_t pb, int64_t ma, int64_t mb) { // panels [pa,pb) x rows
    thread_local std::vector<float> bBuf, pairBlock, partial;
    thread_local std::vector<std::pair<GemmTileParams, int64_t>> blockTiles; // tile, its n0
    // bf16 output over several K blocks: the partial sums of the block's tiles, [row][slot][nr]
    if (bf16Out && K > kcMax && partial.size() < size_t(Mpad * nb * nr))
      partial.resize(size_t(Mpad * nb * nr));
    // A pointwise convolution reads its input in place (B row k = input channel k) unless the
    // rows are far apart (P >= 512 floats) and many weight micro-panels meet each B panel: a B
    // panel then touches kc pages, one 128-byte run each, which neither the prefetchers nor the
    // TLB follow (resnet50's 56x56x256 -> 64 ran at 45% of ORT's speed). Those copy the block's
    // panels first, one contiguous run of the block's pixels per input channel (Intel Xeon, 1
    // thread, in resnet50: 256 -> 64 1.42 -> 1.05 ms). With 1-3 weight micro-panels the copy
    // costs more than it saves (112x112x32 -> 16: 100 -> 61 GFLOP/s).
    // Smaller maps copy too when >= 64 weight micro-panels meet each B panel: rows P floats
    // apart are rarely line-aligned, so a panel read in place splits most of its loads over two
    // lines (Intel Xeon, 1 thread: squeezenet's 13x13x512 -> 1000 0.97 -> 0.92 ms, 7x7x320 ->
    // 1280 0.28 -> 0.26; 14x14x640 -> 128, 10 micro-panels, 10% slower copied).
    const bool packPointwise = pointwise && !bf && ((P >= 512 && mPanels >= 4) || mPanels >= 64);
    const bool inPlace = pointwise && !packPointwise, blis = inPlace && !bf;
    if (!direct && !inPlace && bBuf.size() < size_t(kcMax * nb * nr))
      bBuf.resize(size_t(kcMax * nb * nr));
    if (bf && pairBlock.size() < size_t(nb * units(kcMax) * nr))
      pairBlock.resize(size_t(nb * units(kcMax) * nr));
    // The tile over B panel tt (output columns from n0) and weight micro-panel mp.
    // `slot`: the B panel's place in its block (bf16 partial sums).
    auto tile = [&](GemmTileParams& tt, int64_t n0, int64_t slot, int64_t mp, int64_t k0,
                    int64_t kc) {
      const int64_t i0 = mp * mr;
      tt.a = packedW + units(k0) * Mpad + i0 * units(kc);
      tt.mr = std::min(mr, M - i0);
      tt.bias = ep.bias ? ep.bias + i0 : nullptr;
      if (!bf16Io) {
        tt.c = out + i0 * P + n0;
        tt.res = ep.residual ? ep.residual + i0 * P + n0 : nullptr;
        return kd.gemm(tt);
      }
      // bf16 output or residual: the tile reads and writes them itself (KernelDesc::bf16Io), its
      // earlier K blocks' sums kept in f32 (the output itself when it is f32, else this thread's
      // partial-sum block).
      const bool resBf16 = ep.bf16 & kBf16Residual;
      tt.c = !bf16Out    ? out + i0 * P + n0
             : K > kcMax ? partial.data() + (i0 * nb + slot) * nr
                         : nullptr; // one K block: no sums to keep
      tt.ldc = bf16Out ? nb * nr : P;
      tt.cb = bf16Out ? reinterpret_cast<uint16_t*>(out) + i0 * P + n0 : nullptr;
      tt.ldcb = P;
      tt.res = ep.residual && !resBf16 ? ep.residual + i0 * P + n0 : nullptr;
      tt.resb = ep.residual && resBf16
                    ? reinterpret_cast<const uint16_t*>(ep.residual) + i0 * P + n0
                    : nullptr;
      kd.gemm(tt);
    };
    GemmTileParams t{};
    t.ldc = P;
    t.lo = ep.lo();
    t.hi = ep.hi();
    t.act = ep.post;
    for (int64_t pc = pa; pc < pb; pc += nb) {
      const int64_t pcEnd = std::min(pb, pc + nb);
      for (int64_t k0 = 0; k0 < K; k0 += kcMax) {
        const int64_t kc = std::min(kcMax, K - k0);
        // Pointwise: in place or copied (above); direct: through koff; others pack their im2col
        // panels.
        for (int64_t k = 0; k < kc && packPointwise; ++k) {
          const float* src = in + (k0 + k) * P;
          for (int64_t q = pc; q < pcEnd; ++q) {
            const int64_t n0 = q * nr, cols = std::min(nr, P - n0);
            float* d = bBuf.data() + ((q - pc) * kc + k) * nr;
            std::copy_n(src + n0, cols, d);
            std::fill(d + cols, d + nr, 0.0f);
          }
        }
        for (int64_t q = pc; q < pcEnd && !pointwise && !direct; ++q) {
          const int64_t n0 = q * nr, cols = std::min(nr, P - n0);
          int32_t pix[kMaxPanelColumns];
          for (int64_t j = 0; j < cols; ++j) {
            const int64_t p = n0 + j, oy = p / OW, ox = p % OW;
            pix[j] = int32_t(oy * s.strideH * Wh + ox);
          }
          gatherPanel(pad, koff.data() + k0, pix, kc, cols, nr, bBuf.data() + (q - pc) * kc * nr);
        }
        t.kc = kc;
        t.flags = (k0 == 0 ? kGemmFirst | kGemmRowBias : 0u) | (k0 + kc == K ? kGemmLast : 0u);
        t.koff = direct ? koff.data() + k0 : nullptr;
        // Weight micro-panels outer: one (L1) meets every B panel of the block (L2), so
        // consecutive tiles write C (and read the residual) where the previous one stopped. BLIS
        // order (one B panel in L1 meets every weight micro-panel from L2) wrote each tile's rows
        // a map apart: Intel Xeon, 1 thread, resnet50's 56x56x64 -> 256 + residual + Relu 1.34-1.40
        // -> 1.00-1.05 ms, the 224x224 stems -15-20%, tasks of resnet50 72.0 -> 70.8 ms. f32 B
        // panels read in place keep BLIS order: they are strided, read once into L1 there.
        for (int64_t q = pc; q < pcEnd; ++q) {
          int64_t n0 = q * nr;
          if (flat) {
            t.w = pad;
            t.vgap = s.strideH * Wh - OW;
            t.nr = std::min(nr, P - n0);
            for (int64_t v = 0; v < NV; ++v) {
              // Vector v's pixels start at output (oy, ox); past the last pixel it reads any
              // in-bounds lanes (ignored). Lanes from OW - ox on belong to row oy + 1.
              const int64_t f = std::min(n0 + v * W, P - 1), oy = f / OW, ox = f % OW;
              const bool wraps = OW - ox < W && n0 + v * W + (OW - ox) < n0 + t.nr;
              t.voff[v] = oy * s.strideH * Wh + ox;
              t.vsplit[v] = int32_t(wraps ? OW - ox : W);
            }
          } else if (direct) {
            const int64_t oy = q / segs, ox0 = (q % segs) * nr;
            n0 = oy * OW + ox0;
            t.w = pad;
            t.nr = std::min(nr, OW - ox0);
            for (int64_t v = 0; v < NV; ++v) {
              t.voff[v] = oy * s.strideH * Wh + ox0 + v * W;
              t.vsplit[v] = int32_t(W);
            }
          } else {
            t.w = inPlace ? in + k0 * P + n0 : bBuf.data() + (q - pc) * kc * nr;
            t.ldw = inPlace ? P : 0;
            t.nr = std::min(nr, P - n0);
          }
          if (blis) {
            for (int64_t mp = ma; mp < mb; ++mp) tile(t, n0, 0, mp, k0, kc);
            continue;
          }
          GemmTileParams pt = t; // the tile over this B panel (rounded into pairs for bf16)
          if (bf) {
            float* pairs = pairBlock.data() + (q - pc) * units(kc) * nr;
            if (bf16In && inPlace) // bf16 rows read in place: pairs by interleaving, no rounding
              kd.packB16(in16 + k0 * P + n0, P, kc, t.nr, units(kc), pairs);
            else
              kd.packB(t, pairs);
            pt.w = pairs, pt.kc = units(kc), pt.ldw = 0, pt.koff = nullptr;
          }
          blockTiles.emplace_back(pt, n0);
        }
        for (int64_t mp = ma; mp < mb && !blis; ++mp)
          for (size_t slot = 0; slot < blockTiles.size(); ++slot)
            tile(blockTiles[slot].first, blockTiles[slot].second, int64_t(slot), mp, k0, kc);
        blockTiles.clear();
      }
    }
  };
  const int64_t T = pool ? pool->numThreads() : 1;
  if (T <= 1 || panels * mPanels < 2 || 2 * M * K * P < (int64_t(1) << 18))
    return run(0, panels, 0, mPanels);
  // Split the operand that costs more to stream: the pixels (each thread packs only its own
  // im2col columns, all threads read every weight) when the im2col matrix is the larger one and
  // there are enough panels; otherwise the output channels (each thread streams its share of the
  // weights and packs every column). Deep layers (7x7 maps, 2.4M weights) take the second.
  const bool byPixels = panels >= 2 * T && (K * P >= M * K || mPanels < 2 * T);
  if (byPixels) {
    pool->parallelFor(T, [&](int64_t i) { run(panels * i / T, panels * (i + 1) / T, 0, mPanels); });
  } else {
    const int64_t parts = std::min<int64_t>(T, mPanels);
    pool->parallelFor(
        parts, [&](int64_t i) { run(0, panels, mPanels * i / parts, mPanels * (i + 1) / parts); });
  }
}

// A run of an A micro-panel's pixels with consecutive source offsets: columns [col, col + len)
// of each row k read src[koff[k] + off + j].
struct PixelRun {
  int64_t col, len, off;
};

// Rows [0, kc) of an A micro-panel (row k at dst + k * mr) from its pixel runs (a stride-1
// convolution: a run per output row the tile touches): rows [0, fast) copy B floats per run (B 8
// or 16, >= mr), whose tail spills into columns the row's next run or a later row overwrites;
// rows [fast, kc) copy exactly (the caller picks fast so nothing is written past the panel and
// src has the floats read). The scalar gather cost resnet18's 14x14 and 7x7 convolutions 20-25%
// of their time (Intel Xeon).
template <int64_t B>
AICC_KERNEL_CLONES void gatherRuns(const float* src, const int64_t* koff, int64_t kc, int64_t fast,
                                   const PixelRun* runs, int nRuns, int64_t mr, float* dst) {
  int64_t k = 0;
  for (; k < fast; ++k, dst += mr) {
    const float* base = src + koff[k];
    for (int r = 0; r < nRuns; ++r) std::memcpy(dst + runs[r].col, base + runs[r].off, B * 4);
  }
  for (; k < kc; ++k, dst += mr)
    for (int r = 0; r < nRuns; ++r)
      std::copy_n(src + koff[k] + runs[r].off, runs[r].len, dst + runs[r].col);
}

// ConvRows::Pixels (conv.h): the output pixels as the GEMM rows over the weights' B panels.
void conv2dPixelRows(const KernelDesc& kd, const Conv2dShape& s, const float* packedB,
                     const float* in, float* out, const Epilogue& ep, ThreadPool* pool) {
  const int64_t N = s.Cout, K = s.Cin * s.KH * s.KW, OW = s.OW(), P = s.OH() * OW;
  const int64_t mr = kd.mr, nr = kd.nr, kcMax = kd.kc, mc = kd.mc;
  const int64_t Npad = (N + nr - 1) / nr * nr, nPanels = Npad / nr;
  // Element (p, k) of im2col^T is src[koff[k] + pixOff[p]]: the input itself when unpadded, else
  // a zero-padded copy (Hp x Wp planes).
  const bool padded = s.padTop || s.padLeft || s.padBottom || s.padRight;
  const int64_t Hp = s.H + s.padTop + s.padBottom, Wp = s.W + s.padLeft + s.padRight;
  thread_local std::vector<float> padBuf, yt, rt; // the calling thread's: shared with the workers
  const float* src = in;
  int64_t srcFloats = s.Cin * s.H * s.W;
  if (padded) {
    srcFloats = s.Cin * Hp * Wp;
    padBuf.resize(size_t(srcFloats + 16)); // + gatherRuns' overread
    float* buf = padBuf.data();            // (a worker naming padBuf gets its own)
    std::fill_n(buf + srcFloats, 16, 0.0f);
    // Each padded plane written whole (zeros, then the rows), the planes split over the threads:
    // one thread copying them took ~9% of a 28x28x128 3x3 layer's time at 2 threads.
    parallelRanges(pool, s.Cin, srcFloats >= (int64_t(1) << 15), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        float* plane = buf + c * Hp * Wp;
        std::fill_n(plane, Hp * Wp, 0.0f);
        for (int64_t y = 0; y < s.H; ++y)
          std::copy_n(in + (c * s.H + y) * s.W, s.W, plane + (y + s.padTop) * Wp + s.padLeft);
      }
    });
    src = buf;
  }
  std::vector<int64_t> koff(static_cast<size_t>(K)), pixOff(static_cast<size_t>(P));
  const int64_t taps = s.KH * s.KW;
  for (int64_t j = 0; j < taps; ++j)
    koff[size_t(j)] = (j / s.KW) * s.dilH * Wp + (j % s.KW) * s.dilW;
  for (int64_t k = taps; k < K; ++k) koff[size_t(k)] = koff[size_t(k - taps)] + Hp * Wp;
  for (int64_t p = 0; p < P; ++p)
    pixOff[size_t(p)] = (p / OW) * s.strideH * Wp + (p % OW) * s.strideW;
  // y^T rows ldy floats apart: N itself is often a multiple of 512 bytes, which puts a tile's
  // 14 rows into a few L1 sets.
  const int64_t ldy = N % 128 == 0 ? N + 16 : N;
  yt.resize(size_t(P * ldy));
  if (ep.residual) rt.resize(size_t(P * ldy));
  float* ytp = yt.data();
  float* rtp = rt.data();
  // Micro-panel a[k * mr + i] of pixels [p0, p0 + r) over k in [k0, k0 + kc).
  auto gatherA = [&](int64_t p0, int64_t r, int64_t k0, int64_t kc, float* dst) {
    const int64_t* po = pixOff.data() + p0;
    const int64_t* ko = koff.data() + k0;
    if (r <= 2) { // a pixel's k run at a time (squeeze-excite's 1x1 maps: one long run)
      for (int64_t i = 0; i < r; ++i)
        for (int64_t k = 0; k < kc; ++k) dst[k * mr + i] = src[ko[k] + po[i]];
      return;
    }
    constexpr int kMaxRuns = 4;
    PixelRun runs[kMaxRuns];
    int nRuns = 0;
    for (int64_t i = 0, j = 0; i < r && nRuns <= kMaxRuns; i = j, ++nRuns) {
      for (j = i + 1; j < r && po[j] == po[j - 1] + 1;) ++j;
      if (nRuns < kMaxRuns) runs[nRuns] = {i, j - i, po[i]};
    }
    if (nRuns <= kMaxRuns && mr <= 16) {
      // Block copies while they end inside the panel and inside src (koff grows with k).
      const int64_t B = mr <= 8 ? 8 : 16, last = runs[nRuns - 1].col;
      const int64_t room = kc * mr - last - B, lastOff = runs[nRuns - 1].off;
      int64_t fast = room < 0 ? 0 : std::min(kc, room / mr + 1);
      while (fast > 0 && ko[fast - 1] + lastOff + B > srcFloats) --fast;
      return B == 8 ? gatherRuns<8>(src, ko, kc, fast, runs, nRuns, mr, dst)
                    : gatherRuns<16>(src, ko, kc, fast, runs, nRuns, mr, dst);
    }
    for (int64_t k = 0; k < kc; ++k) {
      const float* base = src + ko[k];
      for (int64_t i = 0; i < r; ++i) dst[k * mr + i] = base[po[i]];
    }
  };
  // Threads split the pixels (whole micro-panels: each gathers its own rows of A and reads every
  // weight), or the output channels when there are fewer micro-panels than threads. Splitting
  // the channels made every thread gather all of A (the gather's cost, twice), and with A
  // gathered once into a buffer both read, A crossed between the cores' caches: Intel Xeon, 2
  // threads, aicc_bench: 28x28x128 3x3 -> 128 0.95 -> 0.68 ms, 14x14x256 3x3 -> 256 0.79 ->
  // 0.64, 7x7x512 3x3 -> 512 0.86 -> 0.78, 14x14x1024 1x1 -> 256 0.36 -> 0.30.
  const int64_t Ppad = (P + mr - 1) / mr * mr;
  const int64_t threads = pool ? pool->numThreads() : 1;
  const bool byPixels = Ppad / mr >= threads || nPanels < threads;
  const int64_t T = std::min(threads, byPixels ? Ppad / mr : nPanels);
  const bool threaded = T > 1 && 2 * N * K * P >= (int64_t(1) << 18);
  // The output channels of panels [pa, pb) at pixels [r0, r1) (r0 a multiple of mr).
  auto run = [&](int64_t pa, int64_t pb, int64_t r0, int64_t r1) {
    const int64_t c0 = pa * nr, c1 = std::min(N, pb * nr);
    if (ep.residual) // the residual [Cout, P] as the tile reads it: [P, Cout]
      transposeBlocked(ep.residual + c0 * P + r0, c1 - c0, r1 - r0, P, rtp + r0 * ldy + c0, ldy);
    thread_local std::vector<float> aBuf;
    const int64_t capacity = rowBlockCapacity(mc, mr); // (gemm.h)
    if (aBuf.size() < size_t(capacity * kcMax)) aBuf.resize(size_t(capacity * kcMax));
    GemmTileParams t{};
    t.ldc = ldy;
    t.lo = ep.lo();
    t.hi = ep.hi();
    t.act = ep.post;
    for (int64_t k0 = 0; k0 < K; k0 += kcMax) {
      const int64_t kc = std::min(kcMax, K - k0);
      t.kc = kc;
      t.flags = (k0 == 0 ? kGemmFirst : 0u) | (k0 + kc == K ? kGemmLast : 0u);
      for (int64_t ic = r0, rows = 0; ic < r1; ic += rows) {
        rows = rowBlock(mc, r1 - ic);
        // This chunk's A micro-panels.
        const float* a = aBuf.data();
        for (int64_t i0 = 0; i0 < rows; i0 += mr)
          gatherA(ic + i0, std::min(mr, rows - i0), k0, kc, aBuf.data() + i0 * kc);
        for (int64_t q = pa; q < pb; ++q) {
          const int64_t n0 = q * nr;
          t.w = packedB + k0 * Npad + n0 * kc;
          // The next B panel (this K block's next, or the next block's first: with a second row
          // block the same panels come again, from L2), prefetched into L2 a share per row
          // tile: the weights stream from L3 or memory, and the first tile over a panel waited
          // for its lines (Intel Xeon, resnet50's layer4 at 1 thread: -5-12% per convolution, all
          // tasks 73.3 -> 71.2 ms). The tile spreads them over its k loop (GemmTileParams::pf):
          // issued in a burst they stalled it (resnet18 1 thread 24.4 -> 22.6 ms, 2 threads
          // 13.8 -> 13.3; aicc_bench 49x512x4608 158 -> 183 GFLOP/s, 1024^3 194 -> 201).
          const int64_t nextKc = q + 1 < pb ? kc : std::min(kcMax, K - k0 - kc);
          const float* next = q + 1 < pb   ? t.w + kc * nr
                              : nextKc > 0 ? packedB + (k0 + kc) * Npad + pa * nr * nextKc
                                           : nullptr;
          const int64_t nextBytes = next ? int64_t(sizeof(float)) * nr * nextKc : 0;
          const int64_t tiles = (rows + mr - 1) / mr;
          t.nr = std::min(nr, N - n0);
          t.bias = ep.bias ? ep.bias + n0 : nullptr;
          for (int64_t i0 = 0; i0 < rows; i0 += mr) {
            const int64_t j = i0 / mr;
            t.pf = tileShare(next, nextBytes, j, tiles, t.pfLines);
            t.a = a + i0 * kc;
            t.mr = std::min(mr, rows - i0);
            t.c = ytp + (ic + i0) * ldy + n0;
            t.res = ep.residual ? rtp + (ic + i0) * ldy + n0 : nullptr;
            kd.gemm(t);
          }
        }
      }
    }
    // its share into NCHW
    transposeBlocked(ytp + r0 * ldy + c0, r1 - r0, c1 - c0, ldy, out + c0 * P + r0, P);
  };
  if (!threaded) return run(0, nPanels, 0, P);
  const int64_t panelsA = Ppad / mr;
  pool->parallelFor(T, [&](int64_t i) {
    if (!byPixels) return run(nPanels * i / T, nPanels * (i + 1) / T, 0, P);
    run(0, nPanels, panelsA * i / T * mr, std::min(P, panelsA * (i + 1) / T * mr));
  });
}

} // namespace

ConvRows convRowsFor(const KernelDesc& kd, const Conv2dShape& s) {
  if (kd.op != KernelOp::Gemm || kd.mr <= 0 || kd.nr <= 0) return ConvRows::Channels;
  const int64_t OW = s.OW(), P = s.OH() * OW, M = s.Cout;
  const int64_t W = std::max<int64_t>(1, kd.vectorWidth), mr = kd.mr, nr = kd.nr;
  auto up = [](int64_t a, int64_t b) { return (a + b - 1) / b * b; };
  // Lanes computed for n columns in nr-wide panels (a last panel of <= W columns runs one vector).
  auto lanes = [&](int64_t n) { return n % nr != 0 && n % nr <= W ? up(n, W) : up(n, nr); };
  const bool segments = implicitIm2col(kd, s) && OW < W; // panels of one output row each
  const double channels = double(P) / double(segments ? (P / OW) * lanes(OW) : lanes(P)) *
                          double(M) / double(up(M, mr));
  // A map of fewer pixels than a tile's rows (squeeze-excite's 1x1 maps) runs a tile of just
  // those rows, which keeps the FMA rate (one row sums k mod 4 apart, simd_impl.h gemmTile).
  const double pixels = double(P) / double(P < mr ? P : up(P, mr)) * double(M) / double(lanes(M));
  // What Pixels adds: gathering A (per k and micro-panel, against ceil(M / nr) tiles of FMAs),
  // transposing the output (per output, against K FMAs) and, for 1x1 kernels, what the channel
  // rows' in-place B saves. Fitted to aicc_bench's conv2d cases (bench/kernels_bench.cpp runs
  // every case both ways) on Intel Xeon, 1 and 2 threads, once the gather copied runs and
  // threads split the pixels (was 30 / M + 16 / K for both, fitted on Zen 4 to the scalar
  // gather). Summed log-loss against the better form over the 35 cases: AVX-512 (14x32) 1.32 ->
  // 0.36, AVX2 (6x16, AICC_KERNEL_ISA=avx2 on the same CPU: unchecked on an AVX2-only one) 3.35
  // -> 0.83.
  const bool wide = W >= 16;
  // A column stride > 1 leaves runs of one pixel: those gather element by element, at the old
  // coefficient (resnet18's 56x56x64 3x3/2 -> 128 in the model: 0.97 ms as pixel rows, 0.84-0.90
  // as channel rows, where aicc_bench alone preferred pixel rows).
  const bool runs = s.strideW == 1 || s.isPointwise();
  const double gather = !runs ? 30.0 : wide ? 10.0 : 2.0, transpose = wide ? 8.0 : 4.0;
  const double cost = gather / double(M) + transpose / double(s.Cin * s.KH * s.KW) +
                      (wide && s.KH == 1 && s.KW == 1 ? 0.05 : 0.0);
  // What Channels adds where it packs im2col panels per call (no implicit im2col: rows shorter
  // than a vector and 14 pixels, e.g. 7x7 maps under AVX-512): a copy per element of B against M
  // FMAs. Fitted on Intel Xeon (AVX-512), 1 thread, with the bounds-checked copy that gatherPanel
  // replaced: DenseNet's 7x7x128 3x3 -> 32 ran channel rows at 29 GFLOP/s against 66 as pixel
  // rows; 7x7x512 3x3 -> 512 99 against 126 (with the gather, on another Xeon: 159 against 192,
  // so the choice there stands).
  const bool packsIm2col =
      !s.isPointwise() && !implicitIm2col(kd, s) &&
      !(s.KH == 1 && s.KW == 1 && !s.padTop && !s.padLeft && !s.padBottom && !s.padRight);
  const double channelCost = packsIm2col ? 60.0 / double(M) : 0.0;
  return pixels * (1.0 + channelCost) > channels * (1.0 + cost) ? ConvRows::Pixels
                                                                : ConvRows::Channels;
}

int64_t convPackedWeightFloats(const KernelDesc& kd, const Conv2dShape& s, ConvRows rows) {
  const int64_t K = s.Cin * s.KH * s.KW;
  return rows == ConvRows::Pixels ? packedBFloats(kd, K, s.Cout) : packedAFloats(kd, s.Cout, K);
}

int64_t convPackedWeightFloats(const KernelDesc& kd, const Conv2dShape& s) {
  return convPackedWeightFloats(kd, s, convRowsFor(kd, s));
}

void packConvWeights(const KernelDesc& kd, const Conv2dShape& s, ConvRows rows, const float* w,
                     float* dst) {
  const int64_t K = s.Cin * s.KH * s.KW;
  if (rows == ConvRows::Pixels)
    packBInto(kd, w, K, s.Cout, K, true, dst);
  else
    packAInto(kd, w, s.Cout, K, K, dst);
}

void packConvWeights(const KernelDesc& kd, const Conv2dShape& s, const float* w, float* dst) {
  packConvWeights(kd, s, convRowsFor(kd, s), w, dst);
}

void conv2dNchwPacked(const KernelDesc& kd, const Conv2dShape& s, ConvRows rows,
                      const float* packedW, const float* in, float* out, const Epilogue& ep,
                      ThreadPool* pool) {
  AICC_RT_CHECK(isGemmOp(kd.op) && kd.gemm, "conv2d: '{}' is not a GEMM kernel", kd.name);
  const int64_t K = s.Cin * s.KH * s.KW, P = s.OH() * s.OW();
  AICC_RT_CHECK(s.Cout >= 1 && K >= 1 && P >= 1, "conv2d: empty shape (Cout={} K={} pixels={})",
                s.Cout, K, P);
  AICC_RT_CHECK(rows == ConvRows::Channels || kd.op == KernelOp::Gemm,
                "conv2d: '{}' runs channel rows only", kd.name);
  if (rows == ConvRows::Pixels) return conv2dPixelRows(kd, s, packedW, in, out, ep, pool);
  conv2dChannelRows(kd, s, packedW, in, out, ep, pool);
}

void conv2dNchwPacked(const KernelDesc& kd, const Conv2dShape& s, const float* packedW,
                      const float* in, float* out, const Epilogue& ep, ThreadPool* pool) {
  conv2dNchwPacked(kd, s, convRowsFor(kd, s), packedW, in, out, ep, pool);
}

namespace {

// Input plane c into the padded plane (see PlaneRows in conv.h).
struct F32Rows {
  const float* in;
  int64_t H, W;
  void operator()(int64_t c, float* top, int64_t pitch, int64_t first, int64_t second) const {
    if (second >= 0 && W >= 64)
      return deinterleaveRows(in + c * H * W, H, W, top, pitch, first, second);
    for (int64_t y = 0; y < H; ++y) {
      const float* src = in + (c * H + y) * W;
      float* row = top + y * pitch;
      if (second >= 0)
        deinterleave(src, W, row + first, row + second);
      else
        std::copy_n(src, W, row + first);
    }
  }
};

// One channel plane at a time over a padded copy (0 for convolution, -inf for max pooling).
// `outPlane(co, scratch)` says where output plane co goes (scratch: a thread's OH*OW floats) and
// `done(co, plane)` is called once it is written.
template <class Rows, class OutPlane, class Done>
void planeOp(const KernelDesc& kd, const DwShape& s, const float* w, const Rows& rowsInto,
             const OutPlane& outPlane, const Done& done, const Epilogue& ep, ThreadPool* pool,
             bool isMax) {
  AICC_RT_CHECK(kd.op == KernelOp::DepthwiseConvNchw && kd.dwNchwPlane,
                "depthwise conv: '{}' is not an NCHW depthwise kernel", kd.name);
  const int64_t OH = s.OH(), OW = s.OW();
  AICC_RT_CHECK(s.C >= 1 && s.mult >= 1 && OH >= 1 && OW >= 1 && s.KH >= 1 && s.KW >= 1 &&
                    s.KH <= 64 && s.strideH >= 1 && s.strideW >= 1 && s.dilH >= 1 && s.dilW >= 1,
                "depthwise conv: bad shape");
  // Each input plane is copied once into a zero-padded plane (rows deinterleaved for stride 2)
  // large enough for every vector the kernel reads up to OW rounded up to whole vectors.
  const int64_t vw = std::max(kd.vectorWidth, 1), owr = (OW + vw - 1) / vw * vw;
  const int64_t sw = s.strideW, dw = s.dilW, span = (owr - 1) * sw + (s.KW - 1) * dw + 1;
  const bool split = sw == 2 && dw == 1;
  const int64_t half = split ? owr + (s.KW - 1) / 2 + 1 : 0;
  const int64_t pitch = std::max(split ? 2 * half : span, s.padLeft + s.W) + vw;
  const int64_t rows = std::max((OH - 1) * s.strideH + (s.KH - 1) * s.dilH + 1, s.padTop + s.H) + 1;
  auto planes = [&](int64_t c0, int64_t c1) {
    thread_local std::vector<float> padded, outScratch;
    padded.assign(size_t(rows * pitch), isMax ? -std::numeric_limits<float>::infinity() : 0.0f);
    outScratch.resize(size_t(OH * OW));
    DwNchwPlaneParams p{};
    p.max = isMax;
    p.in = padded.data();
    p.KH = s.KH, p.KW = s.KW, p.OH = OH, p.OW = OW, p.strideH = s.strideH, p.strideW = sw;
    p.dilH = s.dilH, p.dilW = dw, p.pitch = pitch, p.half = half;
    p.lo = ep.lo(), p.hi = ep.hi(), p.act = ep.post;
    for (int64_t c = c0; c < c1; ++c) {
      // Input column i is padded column pc = i + padLeft, stored (split) at
      // (pc & 1) * half + pc / 2.
      const int64_t pl = s.padLeft;
      float* top = padded.data() + s.padTop * pitch;
      if (split)
        rowsInto(c, top, pitch, (pl & 1) * half + pl / 2, ((pl + 1) & 1) * half + (pl + 1) / 2);
      else
        rowsInto(c, top, pitch, pl, -1);
      for (int64_t m = 0; m < s.mult; ++m) {
        const int64_t co = c * s.mult + m;
        p.w = w ? w + co * s.KH * s.KW : nullptr;
        p.bias = ep.bias ? ep.bias[co] : 0.0f;
        p.out = outPlane(co, outScratch.data());
        kd.dwNchwPlane(p);
        done(co, p.out);
      }
    }
  };
  parallelRanges(pool, s.C, s.C * OH * OW * s.mult >= 4096, planes);
}

// Output planes written in place.
struct InPlace {
  float* out;
  int64_t planeSize;
  float* operator()(int64_t co, float*) const { return out + co * planeSize; }
};
void noHook(int64_t, const float*) {}

} // namespace

// The channel-blocked form (DwCBlockParams, ukernel.h): blocks of V channels split over the
// threads.
namespace {
void depthwiseCBlocks(const KernelDesc& kd, const DwShape& s, const float* w, const float* in,
                      float* out, const Epilogue& ep, ThreadPool* pool) {
  const int64_t V = kd.vectorWidth, C = s.C, OH = s.OH(), OW = s.OW();
  const int64_t Hp = s.padTop + s.H + s.padBottom, Wp = s.padLeft + s.W + s.padRight;
  const int64_t taps = s.KH * s.KW, blocks = (C + V - 1) / V;
  auto run = [&](int64_t b0, int64_t b1) {
    thread_local std::vector<float> scratch;
    scratch.assign(size_t(dwCBlockScratch(V, Hp, Wp, s.KH, s.KW, OH, OW, s.strideW)), 0.0f);
    DwCBlockParams p{};
    p.scratch = scratch.data();
    p.H = s.H, p.W = s.W, p.KH = s.KH, p.KW = s.KW, p.OH = OH, p.OW = OW;
    p.strideH = s.strideH, p.strideW = s.strideW, p.dilH = s.dilH, p.dilW = s.dilW;
    p.padTop = s.padTop, p.padLeft = s.padLeft, p.padBottom = s.padBottom, p.padRight = s.padRight;
    p.lo = ep.lo(), p.hi = ep.hi(), p.act = ep.post;
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t c0 = b * V;
      p.channels = std::min(V, C - c0);
      p.in = in + c0 * s.H * s.W;
      p.w = w + c0 * taps;
      p.bias = ep.bias ? ep.bias + c0 : nullptr;
      p.out = out + c0 * OH * OW;
      kd.dwCBlock(p);
    }
  };
  parallelRanges(pool, blocks, C * OH * OW >= 4096, run);
}
} // namespace

// Where rows fill at most half a vector (7x7 maps under AVX-512): on Zen 4 (aicc_bench dwconv,
// 1 thread, with swish) 7x7x1152 5x5 190 -> 103 us, 7x7x960 3x3 103 -> 60 us; at 14x14 the two
// are level (5x5) or the planes win (3x3: 111 vs 132 us), and under AVX2 the planes win at 7x7.
bool depthwiseChannelBlocks(const KernelDesc& kd, const DwShape& s) {
  const int64_t V = kd.vectorWidth;
  return kd.dwCBlock && V > 1 && s.mult == 1 && !s.outH && !s.outW && 2 * s.OW() <= V;
}

void depthwiseConvNchw(const KernelDesc& kd, const DwShape& s, const float* w, const float* in,
                       float* out, const Epilogue& ep, ThreadPool* pool, int channelBlocks) {
  if (channelBlocks > 0 || (channelBlocks < 0 && depthwiseChannelBlocks(kd, s))) {
    AICC_RT_CHECK(kd.dwCBlock && s.mult == 1 && !s.outH && !s.outW,
                  "depthwise conv: '{}' has no channel-blocked form for this shape", kd.name);
    return depthwiseCBlocks(kd, s, w, in, out, ep, pool);
  }
  planeOp(kd, s, w, F32Rows{in, s.H, s.W}, InPlace{out, s.OH() * s.OW()}, noHook, ep, pool, false);
}

void maxPoolNchw(const KernelDesc& kd, const DwShape& s, const float* in, float* out,
                 ThreadPool* pool) {
  AICC_RT_CHECK(s.mult == 1, "max pool: a channel multiplier of {}", s.mult);
  planeOp(kd, s, nullptr, F32Rows{in, s.H, s.W}, InPlace{out, s.OH() * s.OW()}, noHook, Epilogue{},
          pool, true);
}

void avgPoolNchw(const KernelDesc& kd, const DwShape& s, bool countIncludePad, const float* in,
                 float* out, ThreadPool* pool) {
  AICC_RT_CHECK(s.mult == 1, "average pool: a channel multiplier of {}", s.mult);
  // The window sums are a depthwise convolution with weights 1 over zero padding; each sum is
  // then divided by its window's count, a product of the rows and columns it covers (inside
  // the input, or inside the padded extent with count_include_pad: ceil_mode's overhang past
  // the padding never counts).
  const int64_t OH = s.OH(), OW = s.OW();
  auto inverseCounts = [&](int64_t n, int64_t size, int64_t k, int64_t stride, int64_t dil,
                           int64_t pad0, int64_t pad1) {
    std::vector<float> inv(static_cast<size_t>(n), 0.0f);
    for (int64_t o = 0; o < n; ++o) {
      int64_t count = 0;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t p = o * stride - pad0 + j * dil;
        count += countIncludePad ? p < size + pad1 : p >= 0 && p < size;
      }
      inv[size_t(o)] = count ? 1.0f / float(count) : 0.0f;
    }
    return inv;
  };
  const std::vector<float> invRow =
      inverseCounts(OH, s.H, s.KH, s.strideH, s.dilH, s.padTop, s.padBottom);
  const std::vector<float> invCol =
      inverseCounts(OW, s.W, s.KW, s.strideW, s.dilW, s.padLeft, s.padRight);
  const std::vector<float> ones(size_t(s.C * s.KH * s.KW), 1.0f);
  auto divide = [&](int64_t, const float* plane) {
    float* y = const_cast<float*>(plane); // (InPlace: the output plane itself)
    for (int64_t r = 0; r < OH; ++r)
      for (int64_t c = 0; c < OW; ++c) y[r * OW + c] *= invRow[size_t(r)] * invCol[size_t(c)];
  };
  planeOp(kd, s, ones.data(), F32Rows{in, s.H, s.W}, InPlace{out, OH * OW}, divide, Epilogue{},
          pool, false);
}

void depthwiseConvNchwRows(const KernelDesc& kd, const DwShape& s, const float* w,
                           const float* bias, const PlaneRows& rows,
                           const std::function<void(int64_t, const float*)>& sink,
                           ThreadPool* pool) {
  planeOp(
      kd, s, w, rows, [](int64_t, float* scratch) { return scratch; }, sink, Epilogue::none(bias),
      pool, false);
}

void globalAveragePool(Isa isa, const float* in, float* out, int64_t rows, int64_t len,
                       ThreadPool* pool) {
  AICC_RT_CHECK(rows >= 0 && len >= 1, "global average pool: bad shape rows={} len={}", rows, len);
  const SumFn sum = sumKernel(isa);
  const float inv = 1.0f / float(len);
  auto run = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) out[r] = sum(in + r * len, len) * inv;
  };
  parallelRanges(pool, rows, rows * len >= (int64_t(1) << 15), run);
}

void conv2dReferenceNhwc(const Conv2dShape& s, const float* in, const float* weightOIHW,
                         const float* bias, float* out, const Epilogue& act) {
  const int64_t OH = s.OH(), OW = s.OW();
  const float lo = act.lo(), hi = act.hi();
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t co = 0; co < s.Cout; ++co) {
          double acc = bias ? bias[co] : 0.0;
          for (int64_t kh = 0; kh < s.KH; ++kh)
            for (int64_t kw = 0; kw < s.KW; ++kw) {
              const int64_t iy = oy * s.strideH - s.padTop + kh * s.dilH;
              const int64_t ix = ox * s.strideW - s.padLeft + kw * s.dilW;
              if (iy < 0 || iy >= s.H || ix < 0 || ix >= s.W) continue;
              for (int64_t ci = 0; ci < s.Cin; ++ci)
                acc += double(in[((n * s.H + iy) * s.W + ix) * s.Cin + ci]) *
                       double(weightOIHW[((co * s.Cin + ci) * s.KH + kh) * s.KW + kw]);
            }
          const float v = float(acc);
          out[((n * OH + oy) * OW + ox) * s.Cout + co] =
              std::isnan(v) ? v : std::min(hi, std::max(lo, v));
        }
}

} // namespace aicc::kernels
