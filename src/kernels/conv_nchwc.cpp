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
         s.OW() >= kNchwcTilePixels && s.OH() >= 1 && s.Cin >= 1 && s.Cout >= 1;
}

int64_t nchwcPackedWeightFloats(const Conv2dShape& s) {
  const int64_t pairs = (nchwcBlocks(s.Cout) + 1) / 2;
  return pairs * nchwcBlocks(s.Cin) * s.KH * s.KW * B * 2 * B;
}

void packNchwcWeights(const Conv2dShape& s, const float* w, float* dst) {
  const int64_t pairs = (nchwcBlocks(s.Cout) + 1) / 2, blocks = nchwcBlocks(s.Cin);
  const int64_t taps = s.KH * s.KW;
  std::fill_n(dst, nchwcPackedWeightFloats(s), 0.0f);
  for (int64_t pr = 0; pr < pairs; ++pr)
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t i = 0; i < B; ++i) {
          const int64_t ci = b * B + i;
          if (ci >= s.Cin) continue;
          float* d = dst + (((pr * blocks + b) * taps + t) * B + i) * 2 * B;
          for (int64_t j = 0; j < 2 * B; ++j) {
            const int64_t co = pr * 2 * B + j;
            if (co < s.Cout) d[j] = w[(co * s.Cin + ci) * taps + t];
          }
        }
}

void conv2dNchw16c(const KernelDesc& kd, const Conv2dShape& s, const float* packedW,
                   const float* in, float* out, const Epilogue& ep, ThreadPool* pool) {
  AICC_RT_CHECK(kd.op == KernelOp::ConvNchw16c && kd.nchwc,
                "conv2dNchw16c: '{}' is not a "
                "blocked convolution kernel",
                kd.name);
  AICC_RT_CHECK(nchwcConvApplies(s),
                "conv2dNchw16c: {}x{} stride {}x{} dilation {}x{} output "
                "width {} is not supported",
                s.KH, s.KW, s.strideH, s.strideW, s.dilH, s.dilW, s.OW());
  constexpr int64_t np = kNchwcTilePixels;
  const int64_t blocks = nchwcBlocks(s.Cin), outBlocks = nchwcBlocks(s.Cout);
  const int64_t OH = s.OH(), OW = s.OW(), sH = s.strideH, sW = s.strideW;
  const int64_t pairs = (outBlocks + 1) / 2, taps = s.KH * s.KW;
  const int64_t pairFloats = blocks * taps * B * 2 * B;
  // The tile reads its pixels 16 floats apart. A padded input, or a stride-2 one, is copied
  // first (the caller's buffer, shared with the workers): rows of Wp pixels with zero borders,
  // for stride 2 split into the even columns, then the odd ones (half = their first index), so
  // output pixel x reads column 2x + kw at (kw % 2) * half + x + kw / 2.
  const bool padded = s.padTop || s.padLeft || s.padBottom || s.padRight;
  const int64_t Hp = s.H + s.padTop + s.padBottom, Wp = s.W + s.padLeft + s.padRight;
  const int64_t half = sW == 2 ? (Wp + 1) / 2 : 0;
  thread_local std::vector<float> copyBuf, biasBuf;
  const float* src = in;
  if (padded || sW == 2) {
    copyBuf.resize(size_t(blocks * Hp * Wp * B));
    float* buf = copyBuf.data();
    parallelRanges(pool, blocks, blocks * Hp * Wp >= 2048, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b)
        for (int64_t y = 0; y < Hp; ++y) {
          float* row = buf + (b * Hp + y) * Wp * B;
          const int64_t iy = y - s.padTop;
          if (iy < 0 || iy >= s.H) {
            std::memset(row, 0, size_t(Wp * B) * sizeof(float));
            continue;
          }
          const float* from = in + (b * s.H + iy) * s.W * B;
          if (sW == 1) {
            std::memset(row, 0, size_t(s.padLeft * B) * sizeof(float));
            std::memcpy(row + s.padLeft * B, from, size_t(s.W * B) * sizeof(float));
            std::memset(row + (s.padLeft + s.W) * B, 0, size_t(s.padRight * B) * sizeof(float));
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
    src = buf;
  }
  // The bias per pair of output blocks, zero past Cout (the tile reads whole blocks).
  const float* bias = nullptr;
  if (ep.bias) {
    biasBuf.assign(size_t(pairs * 2 * B), 0.0f);
    std::copy_n(ep.bias, s.Cout, biasBuf.begin());
    bias = biasBuf.data();
  }
  int64_t tapOff[64];
  std::vector<int64_t> tapVec;
  int64_t* tap = tapOff;
  if (taps > 64) tapVec.resize(size_t(taps)), tap = tapVec.data();
  for (int64_t kh = 0, t = 0; kh < s.KH; ++kh)
    for (int64_t kw = 0; kw < s.KW; ++kw)
      tap[t++] = (kh * Wp + (sW == 2 ? (kw % 2) * half + kw / 2 : kw)) * B;

  NchwcTileParams base{};
  base.taps = tap;
  base.ntaps = taps;
  base.blocks = blocks;
  base.aBlk = Hp * Wp * B;
  base.cBlk = OH * OW * B;
  base.lo = ep.lo();
  base.hi = ep.hi();
  base.act = ep.post;
  // Work: (pair of output blocks, output row), contiguous ranges per thread; a pair's weights
  // stay in cache over its rows.
  const int64_t units = pairs * OH, rowTiles = (OW + np - 1) / np;
  const double flops = 2.0 * double(OH * OW) * double(s.Cout) * double(s.Cin * taps);
  parallelRanges(pool, units, flops >= 262144.0, [&](int64_t u0, int64_t u1) {
    NchwcTileParams p = base;
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t pr = u / OH, oh = u % OH, b0 = pr * 2;
      p.w = packedW + pr * pairFloats;
      p.bias = bias ? bias + b0 * B : nullptr;
      p.nv = std::min<int64_t>(2, outBlocks - b0);
      // The next pair's weights into L2, a share per tile of this pair (read from memory at its
      // first row otherwise: resnet18's 14x14x256 3x3 layers ran ~13% slower in the model than
      // in aicc_bench).
      const float* next = pr + 1 < pairs ? p.w + pairFloats : nullptr;
      for (int64_t ow = 0; ow < OW; ow += np) {
        p.pf = tileShare(next, pairFloats * int64_t(sizeof(float)), oh * rowTiles + ow / np,
                         OH * rowTiles, p.pfLines);
        // The last tile of a row ends at its end (its first pixels done by the tile before).
        const int64_t start = std::min<int64_t>(ow, OW - np);
        p.p0 = ow - start;
        p.a = src + (oh * sH * Wp + (sW == 2 ? start : start * sW)) * B;
        const int64_t o = (b0 * OH + oh) * OW * B + start * B;
        p.c = out + o;
        p.res = ep.residual ? ep.residual + o : nullptr;
        kd.nchwc(p);
      }
    }
  });
}

void reorderToNchw16c(const float* in, int64_t C, int64_t HW, float* out, ThreadPool* pool) {
  const int64_t blocks = nchwcBlocks(C);
  parallelRanges(pool, blocks, C * HW >= 32768, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t rows = std::min(B, C - b * B);
      float* dst = out + b * HW * B;
      if (rows < B) std::fill_n(dst, HW * B, 0.0f);
      transposeBlocked(in + b * B * HW, rows, HW, HW, dst, B);
    }
  });
}

void reorderFromNchw16c(const float* in, int64_t C, int64_t HW, float* out, ThreadPool* pool) {
  const int64_t blocks = nchwcBlocks(C);
  parallelRanges(pool, blocks, C * HW >= 32768, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      transposeBlocked(in + b * HW * B, HW, std::min(B, C - b * B), B, out + b * B * HW, HW);
  });
}

} // namespace aicc::kernels
