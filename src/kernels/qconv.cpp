#include "kernels/qconv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kernels/conv.h"
#include "kernels/dqgemm.h"
#include "kernels/thread_pool.h"
#include "rt/error.h"

namespace aicc::kernels {

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t elemBytes(const KernelDesc& kd) { return kd.kg == 4 ? 1 : 2; }

// The tiles' geometry for one group.
struct QGeom {
  int64_t OH, OW, P, Kc, cg, mg, kgroups, mPanels, pPanels, aPanelBytes, bPanelBytes;
  QGeom(const KernelDesc& kd, const QConvShape& s)
      : OH(s.OH()), OW(s.OW()), P(OH * OW), Kc(s.Kc()), cg(s.C / s.group), mg(s.M / s.group),
        kgroups(ceilDiv(ceilDiv(Kc, kd.kg), std::max(1, kd.kuAlign)) * std::max(1, kd.kuAlign)),
        mPanels(ceilDiv(mg, kd.mr)), pPanels(ceilDiv(P, kd.nr)),
        aPanelBytes(kgroups * kd.mr * kd.kg * elemBytes(kd)),
        bPanelBytes(kgroups * kd.nr * kd.kg * elemBytes(kd)) {}
};

// Row k of the group's im2col matrix for output pixels [p0, p0 + nr) into out (raw input bytes;
// padding reads rawPad): runs of pixels on one output row, each padding or a (strided) slice of
// an input row between padding.
void im2colRow(const QConvShape& s, const QGeom& g, const uint8_t* x, uint8_t rawPad, int64_t k,
               int64_t p0, int64_t nr, uint8_t* out) {
  const int64_t ci = k / (s.KH * s.KW), ky = k / s.KW % s.KH, kx = k % s.KW;
  const uint8_t* plane = x + ci * s.H * s.W;
  const int64_t off = kx * s.dilW - s.padLeft, sw = s.strideW; // ix = ox * sw + off
  auto firstAtLeast = [sw](int64_t v) {                        // the least t with t * sw >= v
    return v >= 0 ? (v + sw - 1) / sw : -(-v / sw);
  };
  // Output columns [first, last) read inside the input row.
  const int64_t first = firstAtLeast(-off), last = firstAtLeast(s.W - off);
  int64_t oy = p0 / g.OW, ox0 = p0 % g.OW;
  for (int64_t j = 0; j < nr; ++oy, ox0 = 0) {
    const int64_t run = std::min(nr - j, g.OW - ox0);
    const int64_t iy = oy * s.strideH - s.padTop + ky * s.dilH;
    if (iy < 0 || iy >= s.H) {
      std::memset(out + j, rawPad, size_t(run));
    } else {
      const int64_t a = std::clamp<int64_t>(first - ox0, 0, run);
      const int64_t b = std::clamp<int64_t>(last - ox0, a, run);
      std::memset(out + j, rawPad, size_t(a));
      const uint8_t* src = plane + iy * s.W + (ox0 + a) * sw + off;
      uint8_t* dst = out + j + a;
      if (sw == 1)
        std::memcpy(dst, src, size_t(b - a));
      else if (sw == 2) // vectorized
        for (int64_t i = 0; i < b - a; ++i) dst[i] = src[2 * i];
      else
        for (int64_t i = 0; i < b - a; ++i) dst[i] = src[i * sw];
      std::memset(out + j + b, rawPad, size_t(run - b));
    }
    j += run;
  }
}

// One B panel: columns (output pixels) [p0, p0 + nr) of the group's im2col matrix, as
// dst[q][NR][KG] with element (k, j) at (k / KG) * NR * KG + j * KG + k % KG; values are the input
// as uint8 (`flip` adds 128 to int8 inputs), padding reads the shifted zero point `pad`, and rows
// past Kc are 0. E is uint8_t (KG 4) or int16_t (KG 2). `cols` (or null) is the whole im2col
// matrix [Kc][P] of a spatial convolution, built beforehand; a pointwise one's is x.
template <class E, int KG>
void packPanel(const QConvShape& s, const QGeom& g, int64_t NR, const uint8_t* x,
               const uint8_t* cols, uint8_t flip, uint8_t pad, int64_t p0, int64_t nr, E* dst) {
  if (s.isPointwise()) cols = x;
  // Rows past Kc must be 0 (they are summed into every column); columns past nr need not be (the
  // tiles compute them from whatever is there and do not store them), so a tail panel is not
  // cleared: a 7x7 layer's 1-pixel panel would clear Kc x 48 bytes.
  const uint8_t rawPad = pad ^ flip;
  uint8_t rows[4][512];
  int64_t k0 = 0;
  if constexpr (KG == 4) // quads of matrix rows: one interleave (rows past Kc read 0 once flipped)
    if (cols) {
      if (g.Kc % 4) std::memset(rows[0], flip, size_t(nr));
      for (; k0 < g.Kc; k0 += 4) {
        const uint8_t* r[4];
        for (int c = 0; c < 4; ++c) r[c] = k0 + c < g.Kc ? cols + (k0 + c) * g.P + p0 : rows[0];
        interleave4(r, nr, flip, reinterpret_cast<uint8_t*>(dst + (k0 / 4) * NR * 4));
      }
    }
  if (KG != 4 && g.Kc % KG) std::memset(dst, 0, size_t(g.bPanelBytes));
  if constexpr (KG == 4) // quads of im2col rows, interleaved (rows past Kc are zero)
    if (!cols)
      for (; k0 < g.Kc; k0 += 4) {
        const uint8_t* r[4];
        for (int c = 0; c < 4; ++c) {
          if (k0 + c < g.Kc)
            im2colRow(s, g, x, rawPad, k0 + c, p0, nr, rows[c]);
          else
            std::memset(rows[c], flip, size_t(nr)); // 0 once flipped
          r[c] = rows[c];
        }
        interleave4(r, nr, flip, reinterpret_cast<uint8_t*>(dst + (k0 / 4) * NR * 4));
      }
  for (int64_t k = k0; k < g.Kc; ++k) {
    E* d = dst + (k / KG) * NR * KG + k % KG;
    const uint8_t* src = cols ? cols + k * g.P + p0 : rows[0];
    if (!cols) im2colRow(s, g, x, rawPad, k, p0, nr, rows[0]);
    for (int64_t j = 0; j < nr; ++j) d[j * KG] = E(uint8_t(src[j] ^ flip));
  }
}

// The largest im2col matrix runGemm builds whole (bytes): 4 MB takes resnet50's 56 x 56 3x3 layers
// (576 x 3136) and its 7x7 stem (147 x 12544), which per panel cost one short im2colRow per k and
// panel (Intel Xeon, AMX tile, resnet50 int8 at 1 thread: 26-31 ms with 1 MB, 21-22 ms with 4).
constexpr int64_t kWholeIm2colBytes = int64_t(1) << 22;

// y: bytes (requantized by factor), or int32 sums with factor null (ConvInteger).
template <class E, int KG>
void runGemm(const KernelDesc& kd, const QConvShape& s, const QConvParams& q, const uint8_t* x,
             const uint8_t* wp, const int32_t* rowOffset, const float* factor, void* y,
             ThreadPool* pool) {
  const QGeom g(kd, s);
  const uint8_t flip = q.xSigned ? 0x80 : 0;
  const uint8_t pad = uint8_t(q.xzp + (q.xSigned ? 128 : 0));
  const int32_t lo = q.ySigned ? -128 : 0, hi = q.ySigned ? 127 : 255;
  const int64_t T = pool ? pool->numThreads() : 1;
  // Work items: a panel of output pixels (packed once) times a share of the output channels. The
  // channels are split across the threads when there are few pixel panels (deep layers: a 7x7
  // layer has a 48-pixel and a 1-pixel panel), items ordered share-major so each thread takes
  // one share of every panel.
  const int64_t mSplit = g.pPanels >= 4 * T ? 1 : std::min(g.mPanels, T);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t grp = 0; grp < s.group; ++grp) {
      const uint8_t* xg = x + (n * s.C + grp * g.cg) * s.H * s.W;
      const int64_t yOff = (n * s.M + grp * g.mg) * g.P; // the group's first output element
      uint8_t* yg = factor ? static_cast<uint8_t*>(y) + yOff : nullptr;
      int32_t* y32g = factor ? nullptr : static_cast<int32_t*>(y) + yOff;
      // A last panel of at most 4 pixels (a 7x7 layer's 49 = 48 + 1) goes with the panel before
      // it: each A panel is then used for both while it is in cache, instead of streaming all the
      // weights once more for a few pixels.
      const int64_t tail = g.P - (g.pPanels - 1) * kd.nr;
      const int64_t panels = g.pPanels >= 2 && tail <= 4 ? g.pPanels - 1 : g.pPanels;
      const int64_t items = panels * mSplit, parts = std::min(T, items);
      // A small spatial convolution's whole im2col matrix (the stem's is 27 x 12544 bytes), built
      // a row of output pixels at a time instead of per 48-pixel panel: with one channel share,
      // each thread builds the columns of its own pixel panels (in its cache, and in parallel).
      thread_local std::vector<uint8_t> whole; // the caller's (the workers fill it through cols)
      uint8_t* cols = nullptr;
      if (!s.isPointwise() && g.Kc * g.P <= kWholeIm2colBytes) {
        whole.resize(size_t(g.Kc * g.P));
        cols = whole.data();
      }
      // With one M part, each thread builds the columns of its own pixel panels.
      const bool splitCols = cols && mSplit == 1 && parts > 1;
      auto buildCols = [&](int64_t part) { // the columns of this part's pixel panels
        const int64_t first = items * part / parts, last = items * (part + 1) / parts;
        const int64_t p0 = first * kd.nr, p1 = last == panels ? g.P : last * kd.nr;
        for (int64_t k = 0; k < g.Kc; ++k)
          im2colRow(s, g, xg, uint8_t(pad ^ flip), k, p0, p1 - p0, cols + k * g.P + p0);
      };
      // Otherwise the whole matrix first, its k rows split over the threads. Built by the caller
      // alone, it kept the 14x14 and 7x7 3x3 layers from scaling (resnet50 int8, Intel Xeon, AMX
      // tile: layer3/4's conv2 1.02-1.16x faster on 2 threads than on 1).
      if (cols && !splitCols) {
        auto rows = [&](int64_t i) {
          for (int64_t k = g.Kc * i / parts; k < g.Kc * (i + 1) / parts; ++k)
            im2colRow(s, g, xg, uint8_t(pad ^ flip), k, 0, g.P, cols + k * g.P);
        };
        if (parts > 1)
          pool->parallelFor(parts, rows);
        else
          rows(0);
      }
      auto item = [&](int64_t it) {
        const int64_t pp = it % panels, ms = it / panels;
        thread_local std::vector<E> panel, tailPanel;
        const bool withTail = panels < g.pPanels && pp == panels - 1;
        panel.resize(size_t(g.bPanelBytes) / sizeof(E));
        const int64_t p0 = pp * kd.nr, nr = std::min<int64_t>(kd.nr, g.P - p0);
        packPanel<E, KG>(s, g, kd.nr, xg, cols, flip, pad, p0, nr, panel.data());
        if (withTail) {
          tailPanel.resize(panel.size());
          packPanel<E, KG>(s, g, kd.nr, xg, cols, flip, pad, p0 + nr, tail, tailPanel.data());
        }
        QGemmTileParams t{};
        t.kgroups = g.kgroups;
        t.yzp = q.yzp, t.lo = lo, t.hi = hi;
        t.ldy = g.P;
        for (int64_t mp = g.mPanels * ms / mSplit; mp < g.mPanels * (ms + 1) / mSplit; ++mp) {
          const int64_t m0 = mp * kd.mr, mo = grp * g.mg + m0;
          t.a = wp + (grp * g.mPanels + mp) * g.aPanelBytes;
          t.mr = std::min<int64_t>(kd.mr, g.mg - m0);
          t.rowOffset = rowOffset + mo;
          t.factor = factor ? factor + mo : nullptr;
          t.b = panel.data(), t.nr = nr;
          const int64_t at = m0 * g.P + p0;
          t.y = yg ? yg + at : nullptr, t.y32 = y32g ? y32g + at : nullptr;
          kd.qgemm(t);
          if (withTail) {
            t.b = tailPanel.data(), t.nr = tail;
            t.y = yg ? yg + at + nr : nullptr, t.y32 = y32g ? y32g + at + nr : nullptr;
            kd.qgemm(t);
          }
        }
      };
      // Each thread takes one contiguous range of items: neighbouring pixel panels write the same
      // cache lines of y (48-byte rows of a panel), which interleaved claiming would share.
      auto range = [&](int64_t i) {
        if (splitCols) buildCols(i);
        for (int64_t it = items * i / parts; it < items * (i + 1) / parts; ++it) item(it);
      };
      if (parts > 1)
        pool->parallelFor(parts, range);
      else
        range(0);
    }
}

// float(x - zp) for one input row (int8 x with isSigned) into out, or with `odd` its columns 2m
// into out[m] and 2m + 1 into odd[m] (ukernel.h's Q8RowFn; the AVX-512 one handles the short
// rows' tails with masks).
void toFloat(const uint8_t* x, int64_t n, bool isSigned, float zp, float* out, float* odd) {
  if (odd) {
    const int64_t pairs = n / 2;
    if (isSigned)
      for (int64_t m = 0; m < pairs; ++m) {
        out[m] = float(int8_t(x[2 * m])) - zp;
        odd[m] = float(int8_t(x[2 * m + 1])) - zp;
      }
    else
      for (int64_t m = 0; m < pairs; ++m) {
        out[m] = float(x[2 * m]) - zp;
        odd[m] = float(x[2 * m + 1]) - zp;
      }
    if (n & 1) out[pairs] = (isSigned ? float(int8_t(x[n - 1])) : float(x[n - 1])) - zp;
    return;
  }
  if (isSigned)
    for (int64_t i = 0; i < n; ++i) out[i] = float(int8_t(x[i])) - zp;
  else
    for (int64_t i = 0; i < n; ++i) out[i] = float(x[i]) - zp;
}

// y = saturate(nearbyint(acc * factor) + yzp) over one plane of exact integer sums. The clamp in
// float first keeps |v| small, where adding and subtracting 1.5 * 2^23 rounds half to even (the
// default rounding mode), and the loop vectorizes.
AICC_KERNEL_CLONES void requantizePlane(const float* acc, int64_t P, float factor, int32_t yzp,
                                        int32_t lo, int32_t hi, uint8_t* y) {
  const float flo = float(lo - yzp - 1), fhi = float(hi - yzp + 1), magic = 12582912.0f;
  for (int64_t p = 0; p < P; ++p) {
    const float v = std::min(std::max(acc[p] * factor, flo), fhi);
    const int32_t r = int32_t((v + magic) - magic) + yzp;
    y[p] = uint8_t(std::min(std::max(r, lo), hi));
  }
}

} // namespace

bool qconvGemmTakes(const KernelDesc& kd, const int16_t* w, int64_t count) {
  if (kd.kg != 4) return true;
  return std::all_of(w, w + count, [](int16_t v) { return v >= -128 && v <= 127; });
}

int64_t qconvPackedBytes(const KernelDesc& kd, const QConvShape& s) {
  const QGeom g(kd, s);
  return s.group * g.mPanels * g.aPanelBytes;
}

void packQConvWeights(const KernelDesc& kd, const QConvShape& s, const int16_t* w, void* dst) {
  const QGeom g(kd, s);
  std::memset(dst, 0, size_t(qconvPackedBytes(kd, s)));
  for (int64_t m = 0; m < s.M; ++m) {
    const int64_t grp = m / g.mg, mi = m % g.mg, mp = mi / kd.mr, r = mi % kd.mr;
    const int64_t panel = (grp * g.mPanels + mp) * g.aPanelBytes / elemBytes(kd);
    for (int64_t k = 0; k < g.Kc; ++k) {
      const int64_t at = kd.aRows ? panel + r * g.kgroups * kd.kg + k
                                  : panel + (k / kd.kg) * kd.mr * kd.kg + r * kd.kg + k % kd.kg;
      if (kd.kg == 4)
        static_cast<int8_t*>(dst)[at] = static_cast<int8_t>(w[m * g.Kc + k]);
      else
        static_cast<int16_t*>(dst)[at] = w[m * g.Kc + k];
    }
  }
}

void qconv2d(const KernelDesc& kd, const QConvShape& s, const QConvParams& q, const void* x,
             const void* wp, const int32_t* rowSum, const int32_t* bias, const float* factor,
             void* y, ThreadPool* pool) {
  AICC_RT_CHECK(kd.op == KernelOp::QConvGemm && kd.qgemm && (kd.kg == 2 || kd.kg == 4) &&
                    kd.nr <= 512, // packPanel's row buffers
                "int8 conv: '{}' is not an int8 GEMM kernel", kd.name);
  // bias - uzp * rowSum per output channel, in wrap-around int32 (exact whenever the sum is).
  const int64_t uzp = q.xzp + (q.xSigned ? 128 : 0);
  std::vector<int32_t> rowOffset(size_t(s.M));
  for (int64_t m = 0; m < s.M; ++m)
    rowOffset[size_t(m)] =
        int32_t(uint32_t(bias ? bias[m] : 0) - uint32_t(uzp) * uint32_t(rowSum[m]));
  const auto* xb = static_cast<const uint8_t*>(x);
  const auto* wb = static_cast<const uint8_t*>(wp);
  if (kd.kg == 4)
    runGemm<uint8_t, 4>(kd, s, q, xb, wb, rowOffset.data(), factor, y, pool);
  else
    runGemm<int16_t, 2>(kd, s, q, xb, wb, rowOffset.data(), factor, y, pool);
}

void qconvRows(const KernelDesc& dq, int64_t rows, int64_t C, int64_t M, const QConvParams& q,
               const uint8_t* x, const void* wp, const int32_t* colSum, const int32_t* bias,
               const float* factor, uint8_t* y, ThreadPool* pool) {
  AICC_RT_CHECK(dq.op == KernelOp::DqGemm && dq.dqgemm && !q.xSigned,
                "int8 conv rows: '{}' is not an int8 GEMM kernel for u8 rows", dq.name);
  const int32_t lo = q.ySigned ? -128 : 0, hi = q.ySigned ? 127 : 255;
  // requantizePlane's arithmetic, a factor per column: y = sat(nearbyint(float(bias + sum) *
  // factor) + yzp), bias + sum in wrap-around int32.
  const float flo = float(lo - q.yzp - 1), fhi = float(hi - q.yzp + 1), magic = 12582912.0f;
  dqgemmSums(dq, rows, M, C, x, C, q.xzp, wp, colSum, pool,
             [&](int64_t r0, int64_t r1, const int32_t* sums) {
               for (int64_t r = r0; r < r1; ++r)
                 for (int64_t m = 0; m < M; ++m) {
                   const int32_t s =
                       int32_t(uint32_t(sums[r * M + m]) + uint32_t(bias ? bias[m] : 0));
                   const float t = std::min(std::max(float(s) * factor[m], flo), fhi);
                   y[r * M + m] =
                       uint8_t(std::min(std::max(int32_t((t + magic) - magic) + q.yzp, lo), hi));
                 }
             });
}

bool qdepthwiseExact(const QConvShape& s, const float* w, const int32_t* bias) {
  const int64_t taps = s.KH * s.KW;
  for (int64_t m = 0; m < s.M; ++m) {
    double bound = bias ? std::fabs(double(bias[m])) : 0.0;
    for (int64_t t = 0; t < taps; ++t) bound += 255.0 * std::fabs(double(w[m * taps + t]));
    if (bound >= double(1 << 24)) return false;
  }
  return true;
}

bool qdepthwise3x3Shape(const QConvShape& s) {
  return s.group == s.C && s.KH == 3 && s.KW == 3 && s.strideH == s.strideW &&
         (s.strideH == 1 || s.strideH == 2) && s.dilH == 1 && s.dilW == 1 && s.padTop == 1 &&
         s.padLeft == 1 && s.padBottom == 1 && s.padRight == 1;
}

bool packQDepthwise3x3Weights(int64_t M, const int16_t* w, int8_t* dst) {
  if (!std::all_of(w, w + 9 * M, [](int16_t v) { return v >= -128 && v <= 127; })) return false;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t ky = 0; ky < 3; ++ky) {
      int8_t* g = dst + 12 * m + 4 * ky;
      for (int64_t kx = 0; kx < 3; ++kx) g[kx] = static_cast<int8_t>(w[9 * m + 3 * ky + kx]);
      g[3] = 0;
    }
  return true;
}

void qdepthwise3x3(const KernelDesc& kd, const QConvShape& s, const QConvParams& q, const void* x,
                   const int8_t* w, const int32_t* bias, const float* factor, void* y,
                   ThreadPool* pool) {
  AICC_RT_CHECK(kd.op == KernelOp::QDepthwise3x3 && kd.qdw3x3 && qdepthwise3x3Shape(s) &&
                    s.M % s.C == 0,
                "int8 depthwise conv: '{}' does not run this shape", kd.name);
  const int64_t OH = s.OH(), OW = s.OW(), st = s.strideH, mult = s.M / s.C;
  const int32_t uzp = q.xzp + (q.xSigned ? 128 : 0);
  // Rows up to W + 2 bytes; the last vector load of a row starts at st * (OW rounded up to 16 -
  // 16) and reads 64 bytes.
  const int64_t pitch = (std::max(s.W + 2, st * ceilDiv(OW, 16) * 16 + 48) + 63) / 64 * 64;
  auto channels = [&](int64_t n, int64_t c0, int64_t c1) {
    thread_local std::vector<uint8_t> ring;
    ring.assign(size_t((kQDwRingRows + 1) * pitch), uint8_t(uzp)); // the padding reads uzp
    QDw3x3Params p{};
    p.H = s.H, p.W = s.W, p.xSigned = q.xSigned;
    p.yzp = q.yzp, p.lo = q.ySigned ? -128 : 0, p.hi = q.ySigned ? 127 : 255;
    p.OH = OH, p.OW = OW, p.stride = st, p.ring = ring.data(), p.pitch = pitch;
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t m = 0; m < mult; ++m) {
        const int64_t co = c * mult + m;
        p.x = static_cast<const uint8_t*>(x) + (n * s.C + c) * s.H * s.W;
        p.w = w + 12 * co;
        uint32_t taps = 0;
        for (int64_t t = 0; t < 12; ++t) taps += uint32_t(int32_t(p.w[t]));
        p.offset = int32_t(uint32_t(bias ? bias[co] : 0) - uint32_t(uzp) * taps);
        p.factor = factor[co];
        p.y = static_cast<uint8_t*>(y) + (n * s.M + co) * OH * OW;
        kd.qdw3x3(p);
      }
  };
  const int64_t T = pool ? std::min<int64_t>(pool->numThreads(), s.C) : 1;
  for (int64_t n = 0; n < s.N; ++n) {
    if (T <= 1 || s.M * OH * OW < 4096) {
      channels(n, 0, s.C);
      continue;
    }
    pool->parallelFor(T, [&](int64_t i) { channels(n, s.C * i / T, s.C * (i + 1) / T); });
  }
}

void qdepthwiseConv2d(const KernelDesc& kd, const QConvShape& s, const QConvParams& q,
                      const void* x, const float* w, const int32_t* bias, const float* factor,
                      void* y, ThreadPool* pool) {
  AICC_RT_CHECK(s.group == s.C && s.M % s.C == 0, "int8 depthwise conv: {} groups for {} channels",
                s.group, s.C);
  const int64_t P = s.OH() * s.OW();
  const int32_t lo = q.ySigned ? -128 : 0, hi = q.ySigned ? 127 : 255;
  Q8RowFn toRow = toFloat;
#if defined(__x86_64__)
  if (isaWithin(kd.isa, Isa::Avx512) && cpuSupports(Isa::Avx512Vnni) &&
      isaWithin(Isa::Avx512Vnni, bestIsa()))
    toRow = q8_to_f32_row_avx512vnni;
#endif
  // The f32 NCHW plane kernels over padded planes of x - xzp, then each accumulator plane
  // requantized.
  std::vector<float> biasF;
  if (bias) biasF.assign(bias, bias + s.M);
  DwShape d;
  d.C = s.C, d.mult = s.M / s.C, d.H = s.H, d.W = s.W, d.KH = s.KH, d.KW = s.KW;
  d.strideH = s.strideH, d.strideW = s.strideW, d.dilH = s.dilH, d.dilW = s.dilW;
  d.padTop = s.padTop, d.padLeft = s.padLeft, d.padBottom = s.padBottom, d.padRight = s.padRight;
  for (int64_t n = 0; n < s.N; ++n) {
    uint8_t* yn = factor ? static_cast<uint8_t*>(y) + n * s.M * P : nullptr;
    int32_t* yn32 = factor ? nullptr : static_cast<int32_t*>(y) + n * s.M * P;
    const uint8_t* xn = static_cast<const uint8_t*>(x) + n * s.C * s.H * s.W;
    const float zp = float(q.xzp);
    const bool sgn = q.xSigned;
    depthwiseConvNchwRows(
        kd, d, w, bias ? biasF.data() : nullptr,
        [&](int64_t c, float* top, int64_t pitch, int64_t first, int64_t second) {
          for (int64_t row = 0; row < s.H; ++row) {
            float* dst = top + row * pitch;
            toRow(xn + (c * s.H + row) * s.W, s.W, sgn, zp, dst + first,
                  second >= 0 ? dst + second : nullptr);
          }
        },
        [&](int64_t co, const float* acc) {
          if (yn32) // ConvInteger: the sums, exact integers below 2^24
            for (int64_t p = 0; p < P; ++p) yn32[co * P + p] = static_cast<int32_t>(acc[p]);
          else
            requantizePlane(acc, P, factor[co], q.yzp, lo, hi, yn + co * P);
        },
        pool);
  }
}

} // namespace aicc::kernels
