#include "kernels/conv_nchwc.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/thread_pool.h"
#include "rt/error.h"

namespace aicc::kernels {

namespace {
constexpr int64_t B = kNchwcBlock;
} // namespace

bool nchwcConvApplies(const Conv2dShape& s) {
  return s.dilH == 1 && s.dilW == 1 && (s.strideW == 1 || s.strideW == 2) && s.strideH >= 1 &&
         s.OW() >= 1 && s.OH() >= 1 && s.Cin >= 1 && s.Cout >= 1;
}

namespace {

// Weights per pair of output blocks as [blocks][KH * KW][P][32], P input lanes per block (16, or
// 1 for plane input), zeros past Cin and Cout.
int64_t packedFloats(const Conv2dShape& s, int64_t P) {
  const int64_t pairs = (nchwcBlocks(s.Cout) + 1) / 2;
  return pairs * ((s.Cin + P - 1) / P) * s.KH * s.KW * P * 2 * B;
}

void packWeights(const Conv2dShape& s, const float* w, float* dst, int64_t P) {
  const int64_t pairs = (nchwcBlocks(s.Cout) + 1) / 2, blocks = (s.Cin + P - 1) / P;
  const int64_t taps = s.KH * s.KW;
  std::fill_n(dst, packedFloats(s, P), 0.0f);
  for (int64_t pr = 0; pr < pairs; ++pr)
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t i = 0; i < P; ++i) {
          const int64_t ci = b * P + i;
          if (ci >= s.Cin) continue;
          float* d = dst + (((pr * blocks + b) * taps + t) * P + i) * 2 * B;
          for (int64_t j = 0; j < 2 * B; ++j) {
            const int64_t co = pr * 2 * B + j;
            if (co < s.Cout) d[j] = w[(co * s.Cin + ci) * taps + t];
          }
        }
}

} // namespace

int64_t nchwcPackedWeightFloats(const Conv2dShape& s) { return packedFloats(s, B); }
void packNchwcWeights(const Conv2dShape& s, const float* w, float* dst) {
  packWeights(s, w, dst, B);
}
int64_t nchwcPlanePackedWeightFloats(const Conv2dShape& s) { return packedFloats(s, 1); }
void packNchwcPlaneWeights(const Conv2dShape& s, const float* w, float* dst) {
  packWeights(s, w, dst, 1);
}

namespace {

// The input as the tiles read it: pixels P floats apart (16 on NCHW16c, 1 on NCHW planes). A
// padded input, or a blocked stride-2 one, is copied first (the caller's buffer, shared with the
// workers): rows of Wp pixels with zero borders, blocked stride 2 split into the even columns,
// then the odd ones (half = their first index), so output pixel x reads column 2x + kw at
// (kw % 2) * half + x + kw / 2 (planes read every other float instead). taps[t]: tap t's offset
// in floats from an output pixel's first input pixel. `narrow` (rows under a tile's 14 pixels,
// convBlocked) copies always and leaves `slack` zero floats past the last row: a tile's pixels
// past the row read there (computed, never stored).
struct BlockedInput {
  const float* src;
  int64_t Hp, Wp, half, P;
  std::vector<int64_t> taps;
  // Output pixel (oh, ow)'s first input pixel, in floats from a block's start.
  int64_t at(const Conv2dShape& s, int64_t oh, int64_t ow) const {
    return (oh * s.strideH * Wp + (half ? ow : ow * s.strideW)) * P;
  }
};

BlockedInput blockedInput(const Conv2dShape& s, int64_t blocks, int64_t P, const float* in,
                          ThreadPool* pool, bool narrow = false) {
  const bool split = P == B && s.strideW == 2;
  const bool padded = s.padTop || s.padLeft || s.padBottom || s.padRight;
  BlockedInput r{in, s.H + s.padTop + s.padBottom, s.W + s.padLeft + s.padRight, 0, P, {}};
  const int64_t Hp = r.Hp, Wp = r.Wp, half = r.half = split ? (Wp + 1) / 2 : 0;
  for (int64_t kh = 0; kh < s.KH; ++kh)
    for (int64_t kw = 0; kw < s.KW; ++kw)
      r.taps.push_back((kh * Wp + (split ? (kw % 2) * half + kw / 2 : kw)) * P);
  if (!padded && !split && !narrow) return r;
  thread_local std::vector<float> copyBuf;
  const int64_t slack = narrow ? (2 * kNchwcTilePixels + s.KW) * P : 0;
  copyBuf.resize(size_t(blocks * Hp * Wp * P + slack));
  float* buf = copyBuf.data();
  std::fill_n(buf + blocks * Hp * Wp * P, slack, 0.0f);
  parallelRanges(pool, blocks * Hp, blocks * Hp * Wp * P >= 32768, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t b = u / Hp, y = u % Hp;
      float* row = buf + u * Wp * P;
      const int64_t iy = y - s.padTop;
      if (iy < 0 || iy >= s.H) {
        std::memset(row, 0, size_t(Wp * P) * sizeof(float));
        continue;
      }
      const float* from = in + (b * s.H + iy) * s.W * P;
      if (!split) {
        std::memset(row, 0, size_t(s.padLeft * P) * sizeof(float));
        std::memcpy(row + s.padLeft * P, from, size_t(s.W * P) * sizeof(float));
        std::memset(row + (s.padLeft + s.W) * P, 0, size_t(s.padRight * P) * sizeof(float));
        continue;
      }
      for (int64_t x = 0; x < Wp; ++x) {
        float* d = row + ((x % 2) * half + x / 2) * B;
        const int64_t ix = x - s.padLeft;
        if (ix < 0 || ix >= s.W)
          std::memset(d, 0, B * sizeof(float));
        else
          std::memcpy(d, from + ix * B, B * sizeof(float));
      }
    }
  });
  r.src = buf;
  return r;
}

// The bias, zero past `channels` up to `floats` (the tiles read whole blocks), or null.
const float* paddedBias(const float* bias, int64_t channels, int64_t floats) {
  if (!bias) return nullptr;
  thread_local std::vector<float> biasBuf;
  biasBuf.assign(size_t(floats), 0.0f);
  std::copy_n(bias, channels, biasBuf.begin());
  return biasBuf.data();
}

void checkShape(const KernelDesc& kd, const Conv2dShape& s, bool depthwise) {
  AICC_RT_CHECK(kd.op == KernelOp::ConvNchw16c && kd.nchwc && kd.nchwcDw,
                "conv2dNchw16c: '{}' is not a blocked convolution kernel", kd.name);
  AICC_RT_CHECK(nchwcConvApplies(s) && (!depthwise || s.Cin == s.Cout),
                "conv2dNchw16c: {}x{} stride {}x{} dilation {}x{} output width {} is not "
                "supported",
                s.KH, s.KW, s.strideH, s.strideW, s.dilH, s.dilW, s.OW());
}

} // namespace

namespace {

// The dense convolution on either input layout: P = 16 (NCHW16c) or 1 (NCHW planes).
void convBlocked(const KernelDesc& kd, const Conv2dShape& s, int64_t P, const float* packedW,
                 const float* in, float* out, const Epilogue& ep, ThreadPool* pool) {
  constexpr int64_t np = kNchwcTilePixels;
  const int64_t blocks = (s.Cin + P - 1) / P, outBlocks = nchwcBlocks(s.Cout);
  const int64_t OH = s.OH(), OW = s.OW();
  const int64_t pairs = (outBlocks + 1) / 2, taps = s.KH * s.KW;
  const int64_t pairFloats = blocks * taps * P * 2 * B;
  const float* bias = paddedBias(ep.bias, s.Cout, pairs * 2 * B);
  const NchwcTileFn tile = P == B ? kd.nchwc : kd.nchwcPlane;
  // Work: (chunk of output rows, pair of output blocks, row), contiguous ranges per thread. A
  // chunk's input rows (~kChunkBytes) stay in L2 while every pair's weights pass over them, and
  // a pair's weights stay in cache over the chunk's rows. Pair-major order over whole images
  // streamed the input once per pair and per thread: resnet50's 1x1 reductions at 2 threads
  // (56x56x256 -> 64: 3.2 MB in, 64 KB of weights) ran 1.15-1.5x their 1-thread speed.
  // 7-pixel rows (7x7 maps) go two to a tile: a "row" below is then a pair of rows, the last
  // one overlapping its predecessor when OH is odd (its first row not stored again). Other rows
  // under 14 pixels (symbolic sizes: the run's, passes/assign_layout.h) are narrow: one tile per
  // row on a padded copy with slack past its end, stored through a scratch tile (its pixels past
  // the row would land on the next row's, another thread's).
  constexpr int64_t kChunkBytes = 256 * 1024;
  const bool twoRows = P == B && OW == np / 2 && OH >= 2, narrow = OW < np && !twoRows;
  const BlockedInput x = blockedInput(s, blocks, P, in, pool, narrow);
  NchwcTileParams base{};
  base.taps = x.taps.data();
  base.ntaps = taps;
  base.blocks = blocks;
  base.aBlk = x.Hp * x.Wp * P;
  base.cBlk = narrow ? np * B : OH * OW * B;
  base.lo = ep.lo();
  base.hi = ep.hi();
  base.act = ep.post;
  base.stride = s.strideW;
  base.rowStride = x.at(s, 1, 0); // between consecutive output rows' input pixels
  const int64_t VH = twoRows ? (OH + 1) / 2 : OH, rowsPer = twoRows ? 2 : 1;
  const int64_t rowBytes = rowsPer * s.strideH * blocks * x.Wp * P * int64_t(sizeof(float));
  const int64_t R = std::clamp<int64_t>(kChunkBytes / std::max<int64_t>(1, rowBytes), 1, VH);
  const int64_t units = pairs * VH, rowTiles = twoRows || narrow ? 1 : (OW + np - 1) / np;
  const double flops = 2.0 * double(OH * OW) * double(s.Cout) * double(s.Cin * taps);
  parallelRanges(pool, units, flops >= 262144.0, [&](int64_t u0, int64_t u1) {
    NchwcTileParams p = base;
    p.rowPixels = twoRows ? OW : np;
    alignas(64) float scratch[2][2][np * B]; // narrow rows: the tile's output and residual
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t c0 = u / (pairs * R) * R, rows = std::min(R, VH - c0); // this chunk's rows
      const int64_t local = u - c0 * pairs, pr = local / rows, r = c0 + local % rows;
      const int64_t b0 = pr * 2;
      p.w = packedW + pr * pairFloats;
      p.bias = bias ? bias + b0 * B : nullptr;
      p.nv = std::min<int64_t>(2, outBlocks - b0);
      // The next pair's weights into L2, a share per tile of this pair's rows in the chunk (read
      // from memory at its first row otherwise: resnet18's 14x14x256 3x3 layers ran ~13% slower
      // in the model than in aicc_bench).
      const float* next = pr + 1 < pairs ? p.w + pairFloats : nullptr;
      // Two-row tiles: one per row pair, rows oh and oh + 1 (contiguous in the output), the last
      // one's first row already done when it overlaps.
      const int64_t oh = twoRows ? std::min(2 * r, OH - 2) : r;
      for (int64_t ow = 0; ow < OW; ow += np) {
        p.pf = tileShare(next, pairFloats * int64_t(sizeof(float)), (r - c0) * rowTiles + ow / np,
                         rows * rowTiles, p.pfLines);
        // The last tile of a row ends at its end (its first pixels done by the tile before).
        const int64_t start = twoRows || narrow ? 0 : std::min<int64_t>(ow, OW - np);
        p.p0 = twoRows ? (2 * r - oh) * OW : ow - start;
        p.a = x.src + x.at(s, oh, start);
        const int64_t o = (b0 * OH + oh) * OW * B + start * B;
        p.c = out + o;
        p.res = ep.residual ? ep.residual + o : nullptr;
        if (!narrow) {
          tile(p);
          continue;
        }
        p.c = scratch[0][0];
        for (int64_t v = 0; v < p.nv && p.res; ++v)
          std::memcpy(scratch[1][v], p.res + v * OH * OW * B, size_t(OW * B) * sizeof(float));
        p.res = p.res ? scratch[1][0] : nullptr;
        tile(p);
        for (int64_t v = 0; v < p.nv; ++v)
          std::memcpy(out + o + v * OH * OW * B, scratch[0][v], size_t(OW * B) * sizeof(float));
      }
    }
  });
}

} // namespace

void conv2dNchw16c(const KernelDesc& kd, const Conv2dShape& s, const float* packedW,
                   const float* in, float* out, const Epilogue& ep, ThreadPool* pool) {
  checkShape(kd, s, false);
  convBlocked(kd, s, B, packedW, in, out, ep, pool);
}

void conv2dNchwToNchw16c(const KernelDesc& kd, const Conv2dShape& s, const float* packedW,
                         const float* in, float* out, const Epilogue& ep, ThreadPool* pool) {
  checkShape(kd, s, false);
  AICC_RT_CHECK(kd.nchwcPlane, "conv2dNchwToNchw16c: '{}' has no plane-input tile", kd.name);
  convBlocked(kd, s, 1, packedW, in, out, ep, pool);
}

int64_t nchwcDepthwiseWeightFloats(const Conv2dShape& s) {
  return nchwcBlocks(s.Cin) * s.KH * s.KW * B;
}

void packNchwcDepthwise(const Conv2dShape& s, const float* w, float* dst) {
  const int64_t taps = s.KH * s.KW;
  std::fill_n(dst, nchwcDepthwiseWeightFloats(s), 0.0f);
  for (int64_t c = 0; c < s.Cin; ++c)
    for (int64_t t = 0; t < taps; ++t) dst[((c / B) * taps + t) * B + c % B] = w[c * taps + t];
}

void depthwiseNchw16c(const KernelDesc& kd, const Conv2dShape& s, const float* packedW,
                      const float* in, float* out, const Epilogue& ep, ThreadPool* pool) {
  checkShape(kd, s, true);
  const int64_t blocks = nchwcBlocks(s.Cin), OH = s.OH(), OW = s.OW(), sW = s.strideW;
  const float* bias = paddedBias(ep.bias, s.Cin, blocks * B);
  // Read in place: each row takes the taps whose input row is inside; the row kernel checks the
  // columns of its border pixels (a padded copy was half the time: 56x56x144 270 us).
  std::vector<int64_t> kw, wt;
  for (int64_t kh = 0; kh < s.KH; ++kh)
    for (int64_t x = 0; x < s.KW; ++x) kw.push_back(x), wt.push_back(kh * s.KW + x);
  NchwcDwParams base{};
  base.kw = kw.data();
  base.n = OW;
  base.W = s.W;
  base.padLeft = s.padLeft;
  base.stride = sW;
  // Inside pixels: q * sW - padLeft >= 0 and q * sW - padLeft + KW - 1 < W.
  base.qlo = std::min(OW, (s.padLeft + sW - 1) / sW);
  base.qhi = std::max(base.qlo, std::min(OW, (s.W - s.KW + s.padLeft) / sW + 1));
  base.lo = ep.lo();
  base.hi = ep.hi();
  base.act = ep.post;
  // Work: (channel block, output row), contiguous ranges per thread.
  parallelRanges(pool, blocks * OH, blocks * OH * OW * s.KH * s.KW >= 16384,
                 [&](int64_t u0, int64_t u1) {
                   NchwcDwParams p = base;
                   std::vector<int64_t> taps(kw.size()), wts(kw.size());
                   p.taps = taps.data();
                   p.wt = wts.data();
                   for (int64_t u = u0; u < u1; ++u) {
                     const int64_t b = u / OH, oh = u % OH, iy = oh * s.strideH - s.padTop;
                     // Whole rows of taps drop out, so kw[t] (= t mod KW) still holds for the ones
                     // left.
                     int64_t n = 0;
                     for (int64_t kh = 0; kh < s.KH; ++kh) {
                       if (iy + kh < 0 || iy + kh >= s.H) continue;
                       for (int64_t x = 0; x < s.KW; ++x, ++n)
                         taps[size_t(n)] = ((iy + kh) * s.W + x - s.padLeft) * B,
                         wts[size_t(n)] = kh * s.KW + x;
                     }
                     p.ntaps = n;
                     p.a = in + b * s.H * s.W * B;
                     p.w = packedW + b * s.KH * s.KW * B;
                     p.bias = bias ? bias + b * B : nullptr;
                     const int64_t o = (b * OH + oh) * OW * B;
                     p.c = out + o;
                     p.res = ep.residual ? ep.residual + o : nullptr;
                     kd.nchwcDw(p);
                   }
                 });
}

void meanNchw16c(const KernelDesc& kd, const float* in, int64_t blocks, int64_t HW, float* out,
                 ThreadPool* pool) {
  AICC_RT_CHECK(kd.nchwcMean, "meanNchw16c: '{}' has no blocked mean", kd.name);
  parallelRanges(pool, blocks, blocks * HW >= 4096, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) kd.nchwcMean(in + b * HW * B, HW, out + b * B);
  });
}

void poolNchw16c(const KernelDesc& kd, const DwShape& s, bool isMax, bool countPad, const float* in,
                 float* out, ThreadPool* pool) {
  AICC_RT_CHECK(kd.nchwcPool, "poolNchw16c: '{}' has no blocked pooling", kd.name);
  AICC_RT_CHECK(s.dilH == 1 && s.dilW == 1, "poolNchw16c: dilation {}x{} is not supported", s.dilH,
                s.dilW);
  const int64_t blocks = nchwcBlocks(s.C), OH = s.OH(), OW = s.OW();
  NchwcPoolParams base{};
  base.n = OW;
  base.KW = s.KW;
  base.W = s.W;
  base.padLeft = s.padLeft;
  base.padRight = s.padRight;
  base.stride = s.strideW;
  base.max = isMax;
  base.countPad = countPad;
  // Work: (channel block, output row), contiguous ranges per thread.
  parallelRanges(
      pool, blocks * OH, blocks * OH * OW * s.KH * s.KW >= 16384, [&](int64_t u0, int64_t u1) {
        NchwcPoolParams p = base;
        std::vector<int64_t> rows(size_t(s.KH));
        p.rows = rows.data();
        for (int64_t u = u0; u < u1; ++u) {
          const int64_t b = u / OH, oh = u % OH, iy = oh * s.strideH - s.padTop;
          p.nrows = 0;
          for (int64_t kh = 0; kh < s.KH; ++kh)
            if (iy + kh >= 0 && iy + kh < s.H) rows[size_t(p.nrows++)] = (iy + kh) * s.W * B;
          // With countPad the rows inside the padded extent (ceil_mode's overhang
          // never counts).
          p.rowCount = float(countPad ? std::min(s.KH, s.H + s.padBottom - iy) : p.nrows);
          p.a = in + b * s.H * s.W * B;
          p.c = out + (b * OH + oh) * OW * B;
          kd.nchwcPool(p);
        }
      });
}

void reorderToNchw16c(const KernelDesc& kd, const float* in, int64_t C, int64_t HW, float* out,
                      ThreadPool* pool) {
  AICC_RT_CHECK(kd.toNchwc, "reorderToNchw16c: '{}' has no layout changes", kd.name);
  parallelRanges(pool, nchwcBlocks(C), C * HW >= 32768, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      kd.toNchwc(in + b * B * HW, std::min(B, C - b * B), HW, out + b * HW * B);
  });
}

void reorderFromNchw16c(const KernelDesc& kd, const float* in, int64_t C, int64_t HW, float* out,
                        ThreadPool* pool) {
  AICC_RT_CHECK(kd.fromNchwc, "reorderFromNchw16c: '{}' has no layout changes", kd.name);
  parallelRanges(pool, nchwcBlocks(C), C * HW >= 32768, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      kd.fromNchwc(in + b * HW * B, std::min(B, C - b * B), HW, out + b * B * HW);
  });
}

} // namespace aicc::kernels
