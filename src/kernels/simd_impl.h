// Vector-width-generic bodies of the GEMM tile and depthwise-row kernels.
//
// Each ISA file defines a vector traits type V in an anonymous namespace (so every instantiation
// has internal linkage and is compiled with that file's ISA flags only) and instantiates these
// templates. V provides: vec, mask, width, maskFor(n) (first n lanes, n may be <= 0 or > width),
// zero(), set1(x), load(p), loadMasked(p, m), store(p, v), storeMasked(p, m, v), fmadd(a, b, c)
// (a * b + c), add(a, b), max(a, b), min(a, b).
#pragma once

#include "kernels/ukernel.h"

namespace aicc::kernels::detail {

// ROWS rows of an MRS-row tile with NV vectors per row (NR = NV * V::width).
template <class V, int MRS, int ROWS, int NV> void gemmTile(const GemmTileParams& p) {
  using vec = typename V::vec;
  constexpr int W = V::width;
  constexpr int NR = NV * W;
  const bool full = p.nr == NR;
  typename V::mask m[NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) m[v] = V::maskFor(p.nr - v * W);

  vec acc[ROWS][NV];
  if ((p.flags & kGemmFirst) && (p.flags & kGemmRowBias) && p.bias) {
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
      const vec b = V::set1(p.bias[i]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = b;
    }
  } else if (p.flags & kGemmFirst) {
    vec b[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
      b[v] = !p.bias ? V::zero()
             : full  ? V::load(p.bias + v * W)
                     : V::loadMasked(p.bias + v * W, m[v]);
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = b[v];
  } else {
    // Later K blocks sum from zero and are added to C at the end (blocked summation): the
    // rounding error grows with kc + K / kc instead of K, for the cost of one add per block.
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = V::zero();
  }

  const float* a = p.a;
  const float* w = p.w;
  for (int64_t k = 0; k < p.kc; ++k, a += MRS, w += NR) {
    vec wv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) wv[v] = V::load(w + v * W);
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
      const vec av = V::set1(a[i]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = V::fmadd(av, wv[v], acc[i][v]);
    }
  }

  if (!(p.flags & kGemmFirst)) {
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        const float* src = p.c + i * p.ldc + v * W;
        acc[i][v] = V::add(acc[i][v], full ? V::load(src) : V::loadMasked(src, m[v]));
      }
  }
  if (p.flags & kGemmLast) {
    const vec lo = V::set1(p.lo), hi = V::set1(p.hi);
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = V::min(hi, V::max(lo, acc[i][v]));
  }
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      float* dst = p.c + i * p.ldc + v * W;
      if (full)
        V::store(dst, acc[i][v]);
      else
        V::storeMasked(dst, m[v], acc[i][v]);
    }
}

// Depthwise 3x3 (pad 1) over one output row, NHWC: channel blocks of V::width outside, output
// pixels inside (the block's 9 weights stay in registers); interior pixels run 4 at a time without
// bounds checks so four independent FMA chains hide the FMA latency.
template <class V> void dwRow(const DwRowParams& p) {
  using vec = typename V::vec;
  constexpr int W = V::width;
  const int64_t C = p.C, s = p.stride, OW = p.OW, IW = p.W;
  // Interior: all three taps in range: ox * s - 1 >= 0 and ox * s + 1 <= IW - 1.
  int64_t oxLo = 1;
  int64_t oxHi = IW >= 2 ? (IW - 2) / s + 1 : 0; // exclusive
  if (oxHi > OW) oxHi = OW;
  if (oxLo > oxHi) oxLo = oxHi = OW; // no interior: everything goes through the checked path
  const vec lo = V::set1(p.lo), hi = V::set1(p.hi);
  for (int64_t c0 = 0; c0 < C; c0 += W) {
    const typename V::mask m = V::maskFor(C - c0);
    const bool full = C - c0 >= W;
    auto ld = [&](const float* q) { return full ? V::load(q) : V::loadMasked(q, m); };
    vec wv[9];
#pragma GCC unroll 9
    for (int t = 0; t < 9; ++t) wv[t] = ld(p.w + t * C + c0);
    const vec bv = p.bias ? ld(p.bias + c0) : V::zero();
    auto checked = [&](int64_t ox) {
      vec acc = bv;
      const int64_t ix0 = ox * s - 1;
      for (int ky = 0; ky < 3; ++ky) {
        if (!p.rows[ky]) continue;
        for (int kx = 0; kx < 3; ++kx) {
          const int64_t ix = ix0 + kx;
          if (ix < 0 || ix >= IW) continue;
          acc = V::fmadd(ld(p.rows[ky] + ix * C + c0), wv[ky * 3 + kx], acc);
        }
      }
      acc = V::min(hi, V::max(lo, acc));
      float* dst = p.out + ox * C + c0;
      if (full)
        V::store(dst, acc);
      else
        V::storeMasked(dst, m, acc);
    };
    const bool allRows = p.rows[0] && p.rows[1] && p.rows[2];
    int64_t ox = 0;
    for (; ox < oxLo; ++ox) checked(ox);
    if (allRows) {
      for (; ox + 4 <= oxHi; ox += 4) {
        vec acc[4] = {bv, bv, bv, bv};
#pragma GCC unroll 3
        for (int ky = 0; ky < 3; ++ky) {
          const float* r = p.rows[ky] + c0 + (ox * s - 1) * C;
#pragma GCC unroll 3
          for (int kx = 0; kx < 3; ++kx)
#pragma GCC unroll 4
            for (int u = 0; u < 4; ++u)
              acc[u] = V::fmadd(ld(r + (u * s + kx) * C), wv[ky * 3 + kx], acc[u]);
        }
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) {
          acc[u] = V::min(hi, V::max(lo, acc[u]));
          float* dst = p.out + (ox + u) * C + c0;
          if (full)
            V::store(dst, acc[u]);
          else
            V::storeMasked(dst, m, acc[u]);
        }
      }
    }
    for (; ox < OW; ++ox) checked(ox);
  }
}

// Depthwise NCHW row (see DwNchwRowParams): output pixels in vectors of V::width. The interior
// [oxLo, oxHi) reads every tap in range with plain (stride 1) or strided loads; the edges go
// through a checked scalar path.
template <class V> void dwNchwRow(const DwNchwRowParams& p) {
  using vec = typename V::vec;
  constexpr int W = V::width;
  const int64_t s = p.stride, d = p.dil, pl = p.padLeft, IW = p.W, OW = p.OW;
  // ix = ox * s + kx * d - pl must lie in [0, IW) for kx = 0 and kx = KW - 1.
  int64_t oxLo = (pl + s - 1) / s;
  int64_t last = IW - 1 + pl - (p.KW - 1) * d; // ox * s <= last
  int64_t oxHi = last < 0 ? 0 : last / s + 1;
  if (oxHi > OW) oxHi = OW;
  if (oxLo > oxHi) oxLo = oxHi;
  auto scalarAt = [&](int64_t ox) {
    float acc = p.bias;
    for (int64_t ky = 0; ky < p.KH; ++ky) {
      const float* r = p.rows[ky];
      if (!r) continue;
      for (int64_t kx = 0; kx < p.KW; ++kx) {
        const int64_t ix = ox * s + kx * d - pl;
        if (ix >= 0 && ix < IW) acc += p.w[ky * p.KW + kx] * r[ix];
      }
    }
    acc = acc < p.lo ? p.lo : acc;
    p.out[ox] = acc > p.hi ? p.hi : acc;
  };
  for (int64_t ox = 0; ox < oxLo; ++ox) scalarAt(ox);
  const vec lo = V::set1(p.lo), hi = V::set1(p.hi), bias = V::set1(p.bias);
  // W outputs from ox on (all taps in range); `m` limits loads and the store to `n` lanes.
  auto vecAt = [&](int64_t ox, bool masked, int64_t n) {
    const typename V::mask m = V::maskFor(n);
    vec acc = bias;
    for (int64_t ky = 0; ky < p.KH; ++ky) {
      const float* r = p.rows[ky];
      if (!r) continue;
      const float* base = r + ox * s - pl;
      for (int64_t kx = 0; kx < p.KW; ++kx) {
        const float* q = base + kx * d;
        const vec x = s == 1 ? (masked ? V::loadMasked(q, m) : V::load(q)) : V::loadStrided(q, s);
        acc = V::fmadd(V::set1(p.w[ky * p.KW + kx]), x, acc);
      }
    }
    acc = V::min(hi, V::max(lo, acc));
    if (masked)
      V::storeMasked(p.out + ox, m, acc);
    else
      V::store(p.out + ox, acc);
  };
  int64_t ox = oxLo;
  if (oxHi - oxLo >= W) {
    for (; ox + W <= oxHi; ox += W) vecAt(ox, false, W);
    if (ox < oxHi) vecAt(oxHi - W, false, W); // the tail overlaps the last vector (same values)
    ox = oxHi;
  } else if (s == 1 && oxHi > oxLo) { // a short interior: one masked vector
    vecAt(oxLo, true, oxHi - oxLo);
    ox = oxHi;
  }
  for (; ox < OW; ++ox) scalarAt(ox);
}

} // namespace aicc::kernels::detail
