// Vector-width-generic bodies of the GEMM tile and depthwise-row kernels.
//
// Each ISA file defines a vector traits type V in an anonymous namespace (so every instantiation
// has internal linkage and is compiled with that file's ISA flags only) and instantiates these
// templates. V provides: vec, mask, width, maskFor(n) (first n lanes, n may be <= 0 or > width),
// zero(), set1(x), load(p), loadMasked(p, m), store(p, v), storeMasked(p, m, v), fmadd(a, b, c)
// (a * b + c), select(m, a, b) (a in the lanes of m, else b), add(a, b), max(a, b), min(a, b),
// mul(a, b), div(a, b), round(a) (to nearest), pow2(n) (2^n for integral n in [-126, 127]).
// A traits type with mac(a, w, acc) runs the GEMM tile on pairs instead (bf16: a and w hold two
// bf16 values of consecutive k per 32-bit lane, acc += a.lo * w.lo + a.hi * w.hi in f32; kc counts
// the pairs, B comes packed only); its macBroadcast(p, w, acc) is mac(set1(*p), w, acc).
#pragma once

#include "kernels/ukernel.h"

#include <limits>

namespace aicc::kernels::detail {

// exp(x) (NEG: exp(-x), without a negation) for f32: x = n ln2 + r with |r| <= ln2 / 2, exp(r) by
// its degree-6 Taylor polynomial (relative error < 3e-7 there), times 2^n (one vscalefps where V
// has scale2). Inputs are clamped to [-87.3, 88.3], so overflow gives FLT_MAX-ish values rather
// than inf and tiny results flush to ~1e-38 (sigmoid's tails saturate). Every operation counts:
// on Zen 4 a zmm operation issues about once per cycle and swish ran ~25 cycles per vector.
template <class V, bool NEG = false> typename V::vec expApprox(typename V::vec x) {
  using vec = typename V::vec;
  constexpr float s = NEG ? -1.0f : 1.0f;
  x = V::min(V::set1(s > 0 ? 88.3f : 87.3f), V::max(V::set1(s > 0 ? -87.3f : -88.3f), x));
  const vec n = V::round(V::mul(x, V::set1(s * 1.44269504088896341f)));
  // s r = s x - n ln2 with ln2 in two parts (Cody-Waite); for NEG the polynomial takes -r.
  vec r = V::fmadd(n, V::set1(-s * 0.693359375f), x);
  r = V::fmadd(n, V::set1(s * 2.12194440e-4f), r);
  vec p = V::set1(1.0f / 720);
  p = V::fmadd(p, r, V::set1(s / 120));
  p = V::fmadd(p, r, V::set1(1.0f / 24));
  p = V::fmadd(p, r, V::set1(s / 6));
  p = V::fmadd(p, r, V::set1(0.5f));
  p = V::fmadd(p, r, V::set1(s));
  p = V::fmadd(p, r, V::set1(1.0f));
  if constexpr (requires { V::scale2(p, n); })
    return V::scale2(p, n);
  else
    return V::mul(p, V::pow2(n));
}

// 1 / x: where V has a reciprocal estimate (rcpApprox: AVX-512's 14 bits, AVX2's 12), one
// Newton step r + r (1 - x r) makes it good to ~1 ulp at a fraction of a divide's cost (a zmm
// divide issues once per ~5 cycles on Zen 4, and sigmoid, swish and GELU epilogues have one per
// vector). Huge x (sigmoid of very negative inputs) flushes to 0, the limit.
template <class V> typename V::vec reciprocal(typename V::vec x) {
  if constexpr (requires { V::rcpApprox(x); }) {
    const typename V::vec r = V::rcpApprox(x);
    return V::fmadd(r, V::fnmadd(x, r, V::set1(1.0f)), r);
  } else {
    return V::div(V::set1(1.0f), x);
  }
}

// The fused activation (ukernel.h kAct*) of one vector.
template <class V>
__attribute__((always_inline)) inline typename V::vec activate(typename V::vec x, unsigned act) {
  using vec = typename V::vec;
  switch (act) {
  case kActHardSwish: {
    const vec g = V::fmadd(x, V::set1(1.0f / 6), V::set1(0.5f));
    return V::mul(x, V::min(V::set1(1.0f), V::max(V::zero(), g)));
  }
  case kActSwish:
  case kActSigmoid: {
    const vec e = expApprox<V, true>(x);
    const vec s = reciprocal<V>(V::add(V::set1(1.0f), e));
    return act == kActSwish ? V::mul(x, s) : s;
  }
  case kActGelu: {
    // max(x, 0) - |x| q(|x|) with q = 1 - Phi(|x|) = 0.5 * poly(t) * exp(-x^2 / 2): one form for
    // both signs (for x < 0, x Phi(x) = -|x| q).
    const vec ax = V::max(x, V::mul(x, V::set1(-1.0f)));
    const vec t = reciprocal<V>(V::fmadd(ax, V::set1(0.3275911f * 0.70710678f), V::set1(1.0f)));
    vec poly = V::set1(1.061405429f);
    poly = V::fmadd(poly, t, V::set1(-1.453152027f));
    poly = V::fmadd(poly, t, V::set1(1.421413741f));
    poly = V::fmadd(poly, t, V::set1(-0.284496736f));
    poly = V::fmadd(poly, t, V::set1(0.254829592f));
    poly = V::mul(poly, t);
    const vec e = expApprox<V>(V::mul(V::mul(x, x), V::set1(-0.5f)));
    const vec q = V::mul(V::set1(0.5f), V::mul(poly, e));
    return V::fmadd(V::mul(ax, V::set1(-1.0f)), q, V::max(x, V::zero()));
  }
  default:
    return x;
  }
}

// act(x) over the stored rows [0, rows) x columns [0, nr) of a C tile (in L1), four vectors per
// step: one vector's activation is a dependency chain of ~20 operations (exp's polynomial, the
// reciprocal), so one vector at a time left the FP pipes mostly idle (swish doubled the time of
// EfficientNet's 16 -> 96 1x1 convolutions). One copy per activation and ISA, not per tile shape.
template <class V, unsigned ACT>
__attribute__((noinline)) void activateTile(float* c, int64_t ldc, int64_t rows, int64_t nr) {
  using vec = typename V::vec;
  constexpr int W = V::width, U = 4;
  float* ptr[U];
  int n = 0;
  // Full vectors with plain loads and stores (masked ones are slower on Zen 4), the columns past
  // the last full vector masked.
  const int64_t fullCols = nr / W * W;
  auto flush = [&] {
    vec x[U];
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) x[u] = V::load(ptr[u]);
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) x[u] = activate<V>(x[u], ACT);
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) V::store(ptr[u], x[u]);
  };
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < fullCols; j += W) {
      ptr[n] = c + i * ldc + j;
      if (++n == U) flush(), n = 0;
    }
  for (int u = n; u < U && n; ++u) ptr[u] = ptr[n - 1]; // a partial group repeats its last vector
  if (n) flush();
  if (fullCols < nr) {
    const typename V::mask m = V::maskFor(nr - fullCols);
    for (int64_t i = 0; i < rows; ++i) {
      float* q = c + i * ldc + fullCols;
      V::storeMasked(q, m, activate<V>(V::loadMasked(q, m), ACT));
    }
  }
}

template <class V>
void activateTile(float* c, int64_t ldc, int64_t rows, int64_t nr, unsigned act) {
  switch (act) {
  case kActHardSwish:
    return activateTile<V, kActHardSwish>(c, ldc, rows, nr);
  case kActSwish:
    return activateTile<V, kActSwish>(c, ldc, rows, nr);
  case kActSigmoid:
    return activateTile<V, kActSigmoid>(c, ldc, rows, nr);
  case kActGelu:
    return activateTile<V, kActGelu>(c, ldc, rows, nr);
  default:
    return;
  }
}

// Whether a tile's k loop may take the one-row (GEMV) form (gemmTile).
template <bool B> struct Gemv { static constexpr bool value = B; };

// ROWS rows of an MRS-row tile with NV vectors per row, B panels PNR columns wide (a half-width
// tile, NV * width < PNR, serves a last panel of few columns at part of the cost).
template <class V, int MRS, int ROWS, int NV, int PNR = NV* V::width>
void gemmTile(const GemmTileParams& p) {
  using vec = typename V::vec;
  constexpr int W = V::width;
  constexpr int NR = NV * W;
  constexpr bool kPairs = requires(vec x) { V::mac(x, x, x); };
  const bool full = p.nr == NR;
  typename V::mask m[NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) m[v] = V::maskFor(p.nr - v * W);

    // C (and the residual) are touched after the k loop: prefetch their lines now, so a C tile that
    // fell out of L2 since the previous K block (rows ldc apart) arrives during the FMAs.
#pragma GCC unroll 16
  for (int i = 0; i < ROWS; ++i) {
    __builtin_prefetch(p.c + i * p.ldc, 1, 3);
    __builtin_prefetch(p.c + i * p.ldc + NR - 1, 1, 3);
    if (p.res && (p.flags & kGemmLast)) __builtin_prefetch(p.res + i * p.ldc, 0, 3);
  }
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

  // The k loop; loadRow(k, wv) loads B row k: a packed panel (row stride PNR), B read in place
  // (row stride ldw; a partial panel loads masked, the columns past nr may be past the buffer), or
  // rows through an offset table (implicit im2col of a padded input, see GemmTileParams::koff).
  // Unrolled by 8: the loop's own instructions otherwise cost ~20% of the FMA rate (measured on
  // Zen 3: 69 -> 84-89 GFLOP/s of a 96 peak for an L1-resident 6x16 tile at kc 128). Only the full
  // vector tiles: the partial ones (the last rows of a matrix) and the scalar ones unroll by 2,
  // which keeps the runtime library small (they were most of its code).
  auto step = [&](auto loadRow, int64_t k, const float* a) {
    vec wv[NV];
    loadRow(k, wv);
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
      const vec av = V::set1(a[i]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        if constexpr (kPairs)
          acc[i][v] = V::macBroadcast(a + i, wv[v], acc[i][v]);
        else
          acc[i][v] = V::fmadd(av, wv[v], acc[i][v]);
      }
    }
  };
  auto kLoop = [&](auto loadRow, auto gemv) {
    const float* a = p.a;
    if constexpr (ROWS == 1 && !kPairs && V::width > 1 && decltype(gemv)::value) {
      // One row over whole-vector B rows (a GEMV: a 1x1 convolution of a 1x1 map, a batch-1
      // matrix product, both on packed panels): four partial sums over k mod 4, so the FMA chains
      // are four deep instead of NV (latency-bound at 2). Only this loadRow form: the runtime
      // library's size budget.
      // The next panel's lines spread over the k loop, as the full tiles do (a GEMV has one tile
      // per panel: a burst at its start was the whole next panel, 512 lines at kc 256).
      int64_t l = 0;
      vec part[3][NV];
#pragma GCC unroll 3
      for (int j = 0; j < 3; ++j)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) part[j][v] = V::zero();
      int64_t k = 0;
      for (; k + 4 <= p.kc; k += 4, a += 4 * MRS) {
        vec wv[4][NV];
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) loadRow(k + j, wv[j]);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
          acc[0][v] = V::fmadd(V::set1(a[0]), wv[0][v], acc[0][v]);
#pragma GCC unroll 3
          for (int j = 0; j < 3; ++j)
            part[j][v] = V::fmadd(V::set1(a[(j + 1) * MRS]), wv[j + 1][v], part[j][v]);
        }
        for (int j = 0; j < 4 * NV && l < p.pfLines; ++j, ++l) prefetchTileLine(p, l);
      }
      for (; k < p.kc; ++k, a += MRS) step(loadRow, k, a);
      prefetchTileLines(p, l);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v)
        acc[0][v] = V::add(acc[0][v], V::add(V::add(part[0][v], part[1][v]), part[2][v]));
    } else {
      // The next weight panel's lines into L2 one per k step: issued in a burst before the tile,
      // the prefetches stalled it once the fill buffers ran out (Intel Xeon: 8.5% of resnet18,
      // the weights of its 14x14 and 7x7 layers streaming from L3).
      const int64_t kpf = p.kc < p.pfLines ? p.kc : p.pfLines;
      if constexpr (ROWS == MRS && V::width > 1) {
#pragma GCC unroll 8
        for (int64_t k = 0; k < p.kc; ++k, a += MRS) {
          step(loadRow, k, a);
          if (k < kpf) prefetchTileLine(p, k);
        }
      } else {
#pragma GCC unroll 2
        for (int64_t k = 0; k < p.kc; ++k, a += MRS) {
          step(loadRow, k, a);
          if (k < kpf) prefetchTileLine(p, k);
        }
      }
      prefetchTileLines(p, kpf);
    }
  };
  const int64_t ws = p.ldw ? p.ldw : PNR;
  auto strided = [&](int64_t k) { return p.w + k * ws; };
  if constexpr (kPairs) {
    kLoop(
        [&](int64_t k, vec* wv) {
          const float* w = p.w + k * PNR;
#pragma GCC unroll 8
          for (int v = 0; v < NV; ++v) wv[v] = V::load(w + v * W);
        },
        Gemv<false>{});
  } else if (p.koff) {
    // Implicit im2col: each vector at its own offset from the row's start; a vector whose pixels
    // continue on the next output row blends two loads.
    bool split = false;
    int64_t off[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      off[v] = p.voff[v];
      split = split || p.vsplit[v] < W;
    }
    if (!split) {
      kLoop(
          [&](int64_t k, vec* wv) {
            const float* w = p.w + p.koff[k];
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) wv[v] = V::load(w + off[v]);
          },
          Gemv<false>{});
    } else {
      // Both loads of a vector from one offset, the second from the row's base vgap further on
      // (fewer live registers than an offset pair per vector: the loop spilled them).
      typename V::mask lo[NV];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) lo[v] = V::maskFor(p.vsplit[v]);
      const int64_t gap = p.vgap;
      kLoop(
          [&](int64_t k, vec* wv) {
            const float* w = p.w + p.koff[k];
            const float* w2 = w + gap;
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v)
              wv[v] = V::select(lo[v], V::load(w + off[v]), V::load(w2 + off[v]));
          },
          Gemv<false>{});
    }
  } else if (p.ldw && !full) {
    kLoop(
        [&](int64_t k, vec* wv) {
          const float* w = strided(k);
#pragma GCC unroll 8
          for (int v = 0; v < NV; ++v) wv[v] = V::loadMasked(w + v * W, m[v]);
        },
        Gemv<false>{});
  } else {
    kLoop(
        [&](int64_t k, vec* wv) {
          const float* w = strided(k);
#pragma GCC unroll 8
          for (int v = 0; v < NV; ++v) wv[v] = V::load(w + v * W);
        },
        Gemv<true>{});
  }

  // C (later K blocks) and the residual (last block) are tiles laid out like C.
  auto addTile = [&](const float* base) {
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        const float* src = base + i * p.ldc + v * W;
        acc[i][v] = V::add(acc[i][v], full ? V::load(src) : V::loadMasked(src, m[v]));
      }
  };
  if (!(p.flags & kGemmFirst)) addTile(p.c);
  if ((p.flags & kGemmLast) && p.res) addTile(p.res);
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
  // The activation runs over the stored tile (in L1) out of line: inlined per accumulator it
  // multiplied the kernels' code size (every tile shape of every ISA).
  if ((p.flags & kGemmLast) && p.act != kActNone)
    activateTile<V>(p.c, p.ldc, ROWS, p.nr < NR ? p.nr : NR, p.act);
}

// The blocked convolution tile (ukernel.h NchwcTileParams), 16-lane vectors: every k step loads
// NV weight vectors and broadcasts NP input lanes at fixed offsets from one pointer.
// CI input lanes per block and pixel, PS floats between input pixels: NCHW16c input (16, 16), or
// NCHW planes of a stem (1, the stride along W). L pixels per output row: NP (one row), or NP / 2
// (two rows of a 7x7 map, the second's input p.rowStride floats after the first's).
template <class V, int NP, int NV, int CI = 16, int PS = 16, int L = NP>
void nchwcTile(const NchwcTileParams& p) {
  static_assert(NP % L == 0 && NP / L <= 2);
  using vec = typename V::vec;
  static_assert(V::width == 16);
  vec acc[NP][NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    const vec b = p.bias ? V::load(p.bias + v * 16) : V::zero();
#pragma GCC unroll 16
    for (int q = 0; q < NP; ++q) acc[q][v] = b;
  }
  const float* w = p.w;
  const int64_t steps = p.blocks * p.ntaps, per = (p.pfLines + steps - 1) / steps;
  int64_t line = 0;
  for (int64_t blk = 0; blk < p.blocks; ++blk) {
    const float* ab = p.a + blk * p.aBlk;
    for (int64_t t = 0; t < p.ntaps; ++t, w += CI * 32) {
      const float* a = ab + p.taps[t];
      const float* a2 = L < NP ? a + p.rowStride : a; // the second row's pixels
      for (int64_t l = 0; l < per && line < p.pfLines; ++l, ++line)
        __builtin_prefetch(p.pf + line * 64, 0, 2);
#pragma GCC unroll 2
      for (int i = 0; i < CI; ++i) {
        vec wv[NV];
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) wv[v] = V::load(w + v * 16 + i * 32);
#pragma GCC unroll 16
        for (int q = 0; q < NP; ++q) {
          // (Not (q < L ? a : a2)[(q % L) * PS + i]: GCC 12 under -fsanitize=shift or
          // integer-divide-by-zero read the second row's last pixel for all of its pixels.)
          const vec x = V::set1(q < L ? a[q * PS + i] : a2[(q - L) * PS + i]);
#pragma GCC unroll 8
          for (int v = 0; v < NV; ++v) acc[q][v] = V::fmadd(x, wv[v], acc[q][v]);
        }
      }
    }
  }
  // The epilogue from a copy of the tile (one loop, not 28 unrolled stores with their checks:
  // the runtime library's size).
  alignas(64) float tile[NV][NP][16];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v)
#pragma GCC unroll 16
    for (int q = 0; q < NP; ++q) V::store(tile[v][q], acc[q][v]);
  const vec lo = V::set1(p.lo), hi = V::set1(p.hi);
  for (int64_t v = 0; v < p.nv; ++v) {
    float* c = p.c + v * p.cBlk;
    const float* r = p.res ? p.res + v * p.cBlk : nullptr;
    for (int64_t q = p.p0; q < NP; ++q) {
      vec x = V::load(tile[v][q]);
      if (r) x = V::add(x, V::load(r + q * 16));
      V::store(c + q * 16, V::min(hi, V::max(lo, x)));
    }
    if (p.act != kActNone) activateTile<V>(c + p.p0 * 16, 16, NP - p.p0, 16, p.act);
  }
}

// Layout changes of one channel block (ukernel.h NchwcReorderFn), 16 pixels per transpose.
template <class V> void toNchwc(const float* in, int64_t rows, int64_t hw, float* out) {
  static_assert(V::width == 16);
  for (int64_t p = 0; p < hw; p += 16) {
    const int64_t n = hw - p < 16 ? hw - p : 16;
    const typename V::mask m = V::maskFor(n);
    typename V::vec r[16];
#pragma GCC unroll 16
    for (int64_t i = 0; i < 16; ++i)
      r[i] = i < rows ? V::loadMasked(in + i * hw + p, m) : V::zero();
    V::transpose(r);
    for (int64_t j = 0; j < n; ++j) V::store(out + (p + j) * 16, r[j]);
  }
}
template <class V> void fromNchwc(const float* in, int64_t rows, int64_t hw, float* out) {
  static_assert(V::width == 16);
  for (int64_t p = 0; p < hw; p += 16) {
    const int64_t n = hw - p < 16 ? hw - p : 16;
    const typename V::mask m = V::maskFor(n);
    typename V::vec r[16];
#pragma GCC unroll 16
    for (int64_t j = 0; j < 16; ++j) r[j] = j < n ? V::load(in + (p + j) * 16) : V::zero();
    V::transpose(r);
    for (int64_t i = 0; i < rows; ++i) V::storeMasked(out + i * hw + p, m, r[i]);
  }
}

// The mean of a channel block's pixels (ukernel.h NchwcMeanFn), four partial sums.
template <class V> void nchwcMean(const float* in, int64_t hw, float* out) {
  static_assert(V::width == 16);
  typename V::vec s[4] = {V::zero(), V::zero(), V::zero(), V::zero()};
  int64_t p = 0;
  for (; p + 4 <= hw; p += 4)
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) s[k] = V::add(s[k], V::load(in + (p + k) * 16));
  for (; p < hw; ++p) s[0] = V::add(s[0], V::load(in + p * 16));
  V::store(out, V::mul(V::add(V::add(s[0], s[1]), V::add(s[2], s[3])), V::set1(1.0f / float(hw))));
}

// A pooling row on NCHW16c (ukernel.h NchwcPoolParams): each pixel's window columns clipped to
// the input, one vector per tap.
template <class V, bool MAX> void nchwcPoolRow(const NchwcPoolParams& p) {
  using vec = typename V::vec;
  static_assert(V::width == 16);
  for (int64_t q = 0; q < p.n; ++q) {
    const int64_t ix = q * p.stride - p.padLeft;
    const int64_t k0 = ix < 0 ? -ix : 0, k1 = p.KW < p.W - ix ? p.KW : p.W - ix;
    const float* a = p.a + ix * 16;
    vec acc = MAX ? V::set1(-std::numeric_limits<float>::infinity()) : V::zero();
    for (int64_t r = 0; r < p.nrows; ++r)
      for (int64_t kw = k0; kw < k1; ++kw) {
        const vec x = V::load(a + p.rows[r] + kw * 16);
        acc = MAX ? V::max(acc, x) : V::add(acc, x);
      }
    if (!MAX) {
      const int64_t padded = p.W + p.padRight - ix,
                    cols = p.countPad ? (p.KW < padded ? p.KW : padded) : k1 - k0;
      const float count = p.rowCount * float(cols); // 0 only for a window wholly outside
      acc = V::mul(acc, V::set1(count > 0 ? 1.0f / count : 0.0f));
    }
    V::store(p.c + q * 16, acc);
  }
}

// The depthwise row on NCHW16c (ukernel.h NchwcDwParams): inside pixels eight at a time, each
// tap's weights loaded once for the eight, the last group overlapping the one before it (stores
// start at its first new pixel); border pixels one at a time with their columns checked.
template <class V, int S> void nchwcDwRow(const NchwcDwParams& p) {
  using vec = typename V::vec;
  static_assert(V::width == 16);
  constexpr int64_t G = 8;
  const vec lo = V::set1(p.lo), hi = V::set1(p.hi);
  const vec b = p.bias ? V::load(p.bias) : V::zero();
  auto finish = [&](int64_t q, vec x) {
    if (p.res) x = V::add(x, V::load(p.res + q * 16));
    V::store(p.c + q * 16, V::min(hi, V::max(lo, x)));
  };
  auto single = [&](int64_t q) {
    vec acc = b;
    for (int64_t t = 0; t < p.ntaps; ++t) {
      const int64_t col = q * S - p.padLeft + p.kw[t];
      if (col >= 0 && col < p.W)
        acc = V::fmadd(V::load(p.a + q * S * 16 + p.taps[t]), V::load(p.w + p.wt[t] * 16), acc);
    }
    finish(q, acc);
  };
  int64_t q0 = 0;
  for (; q0 < p.qlo; ++q0) single(q0);
  if (p.qhi - p.qlo >= G) {
    for (; q0 < p.qhi; q0 += G) {
      const int64_t start = q0 + G <= p.qhi ? q0 : p.qhi - G;
      vec acc[G];
#pragma GCC unroll 8
      for (int64_t q = 0; q < G; ++q) acc[q] = b;
      const float* a = p.a + start * S * 16;
      for (int64_t t = 0; t < p.ntaps; ++t) {
        const vec w = V::load(p.w + p.wt[t] * 16);
        const float* at = a + p.taps[t];
#pragma GCC unroll 8
        for (int64_t q = 0; q < G; ++q) acc[q] = V::fmadd(V::load(at + q * S * 16), w, acc[q]);
      }
      alignas(64) float tile[G][16]; // the epilogue loop indexes it (acc stays in registers)
#pragma GCC unroll 8
      for (int64_t q = 0; q < G; ++q) V::store(tile[q], acc[q]);
      for (int64_t q = q0 - start; q < G; ++q) finish(start + q, V::load(tile[q]));
    }
    q0 = p.qhi;
  }
  for (; q0 < p.n; ++q0) single(q0);
  if (p.act != kActNone) activateTile<V>(p.c, 16, p.n, 16, p.act);
}

// Packs an A micro-panel (dst[k * MR + i], GemmPackAFn) W = V::width k at a time: each row's run
// of W loaded (rows past `rows` repeat the last one, whose lanes are never read), the W x W block
// transposed in registers, column k stored whole (its extra lanes overwritten by the next
// column) but a block's last (MR lanes). On Zen 4 one gather per k took 11% of a 1024^3 GEMM
// (AVX-512) and a scalar copy 4% (AVX2).
template <class V, int MR>
void packATransposed(const float* a, int64_t lda, int64_t rows, int64_t kc, float* dst) {
  using vec = typename V::vec;
  constexpr int W = V::width;
  static_assert(MR <= W);
  const typename V::mask lanes = V::maskFor(MR);
  const float* row[MR];
  for (int i = 0; i < MR; ++i) row[i] = a + (i < rows ? i : rows - 1) * lda;
  for (int64_t k = 0; k < kc; k += W) {
    const int64_t n = kc - k < W ? kc - k : W;
    const typename V::mask m = V::maskFor(n);
    vec r[W];
#pragma GCC unroll 16
    for (int i = 0; i < W; ++i)
      r[i] = i >= MR ? V::zero() : n == W ? V::load(row[i] + k) : V::loadMasked(row[i] + k, m);
    V::transpose(r);
    float* d = dst + k * MR;
    if (n == W) {
#pragma GCC unroll 16
      for (int j = 0; j < W - 1; ++j) V::store(d + j * MR, r[j]);
      V::storeMasked(d + (W - 1) * MR, lanes, r[W - 1]);
    } else {
      for (int64_t j = 0; j < n; ++j) V::storeMasked(d + j * MR, lanes, r[j]);
    }
  }
}

// Runs tile.template operator()<ROWS>() for ROWS = min(rows, MAXROWS), at least 1: the int8 GEMM
// entry points pick the tile body compiled for a micro-panel's row count.
template <int MAXROWS, class Tile> void byRows(int64_t rows, const Tile& tile) {
  if constexpr (MAXROWS > 1)
    if (rows < MAXROWS) return byRows<MAXROWS - 1>(rows, tile);
  tile.template operator()<MAXROWS>();
}

// Rows [off, off + rows) of a GEMM tile: A lanes, C and residual rows, row biases.
inline GemmTileParams rowSlice(const GemmTileParams& p, int64_t off, int64_t rows) {
  GemmTileParams q = p;
  q.a = p.a + off;
  q.c = p.c + off * p.ldc;
  if (p.res) q.res = p.res + off * p.ldc;
  if (p.bias && (p.flags & kGemmRowBias)) q.bias = p.bias + off;
  q.mr = rows;
  return q;
}

template <int R, class Tile>
void evenRows(int64_t rows, const GemmTileParams& p, const Tile& tile) {
  if constexpr (R >= 2) {
    if (rows < R) return evenRows<R - 2>(rows, p, tile);
    tile.template operator()<R>(p);
  }
}

// The GEMM entry points' dispatch on a micro-panel's row count p.mr: a full panel runs the
// MAXROWS body, a partial one the body of its even part and, for an odd count, the 1-row body
// for the last row. Bodies for even counts only (plus 1) halve the tile code, most of the
// runtime library's size; partial panels are the last of a matrix, and mostly even.
template <int MAXROWS, bool COMPACT = false, class Tile>
void byEvenRows(const GemmTileParams& p, const Tile& tile) {
  if (p.mr >= MAXROWS) return tile.template operator()<MAXROWS>(p);
  if constexpr (COMPACT) { // (built for size: a partial panel row by row)
    for (int64_t r = 0; r < p.mr; ++r) tile.template operator()<1>(rowSlice(p, r, 1));
    return;
  }
  const int64_t even = p.mr & ~int64_t(1);
  if (even) evenRows<(MAXROWS - 1) & ~1>(even, rowSlice(p, 0, even), tile);
  if (p.mr & 1) tile.template operator()<1>(rowSlice(p, even, 1));
}

// The lanes of v added in order.
template <class V> float laneSum(typename V::vec v) {
  float lanes[V::width];
  V::store(lanes, v);
  float sum = 0;
  for (int j = 0; j < V::width; ++j) sum += lanes[j];
  return sum;
}

// sum of x[0..n): four vector accumulators, a masked tail, then the lanes in order.
template <class V> float sumRow(const float* x, int64_t n) {
  using vec = typename V::vec;
  constexpr int W = V::width;
  vec acc[4] = {V::zero(), V::zero(), V::zero(), V::zero()};
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W)
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) acc[u] = V::add(acc[u], V::load(x + i + u * W));
  for (; i + W <= n; i += W) acc[0] = V::add(acc[0], V::load(x + i));
  if (i < n) acc[1] = V::add(acc[1], V::loadMasked(x + i, V::maskFor(n - i)));
  const vec t = V::add(V::add(acc[0], acc[1]), V::add(acc[2], acc[3]));
  return laneSum<V>(t);
}

// x[i] = exp(x[i] - shift), returning the sum (see ExpSumFn); the tail (< one vector) through a
// masked load and store, its lanes past n dropped from the sum by a 0/1 weight vector.
template <class V> float expSum(float* x, int64_t n, float shift) {
  using vec = typename V::vec;
  constexpr int W = V::width;
  const vec sh = V::set1(-shift), one = V::set1(1.0f);
  vec acc = V::zero();
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const vec e = expApprox<V>(V::add(V::load(x + i), sh));
    V::store(x + i, e);
    acc = V::add(acc, e);
  }
  if (i < n) {
    const typename V::mask m = V::maskFor(n - i);
    const vec e = expApprox<V>(V::add(V::loadMasked(x + i, m), sh));
    V::storeMasked(x + i, m, e);
    float ones[W];
    for (int j = 0; j < W; ++j) ones[j] = 0.0f;
    V::storeMasked(ones, m, one);
    acc = V::fmadd(e, V::load(ones), acc);
  }
  return laneSum<V>(acc);
}

// The channel-blocked depthwise convolution's inner form: in[(y * Wp + x) * W + c] a padded tile,
// w[t * W + c], out[(oy * OW + ox) * W + c].
struct DwTile {
  const float* in;
  const float* w;
  const float* bias;
  float* out;
  int64_t KH, KW, OH, OW, Wp, strideH, strideW, dilH, dilW;
  float lo, hi;
  unsigned act;
};

// A KxK kernel with stride S, no dilation: four outputs of one row at a time; each input vector of
// the row is loaded once and feeds every output whose window covers it (a 5x5 stride-1 row reads
// 8 vectors for 20 FMAs instead of 20). A row's last group reads past the row (into the next one
// or the tile's slack) for outputs that are not stored.
template <class V, int K, int S> void dwTileRows(const DwTile& p) {
  using vec = typename V::vec;
  constexpr int W = V::width, U = 4, NI = (U - 1) * S + K;
  const vec lo = V::set1(p.lo), hi = V::set1(p.hi);
  const vec bias = p.bias ? V::load(p.bias) : V::zero();
  for (int64_t oy = 0; oy < p.OH; ++oy)
    for (int64_t ox0 = 0; ox0 < p.OW; ox0 += U) {
      vec acc[U] = {bias, bias, bias, bias};
#pragma GCC unroll 7
      for (int ky = 0; ky < K; ++ky) {
        const float* in = p.in + ((oy * S + ky) * p.Wp + ox0 * S) * W;
        vec wv[K];
#pragma GCC unroll 7
        for (int kx = 0; kx < K; ++kx) wv[kx] = V::load(p.w + (ky * K + kx) * W);
#pragma GCC unroll 16
        for (int j = 0; j < NI; ++j) {
          const vec x = V::load(in + j * W);
#pragma GCC unroll 4
          for (int u = 0; u < U; ++u) {
            const int kx = j - u * S;
            if (kx >= 0 && kx < K) acc[u] = V::fmadd(wv[kx], x, acc[u]);
          }
        }
      }
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) acc[u] = activate<V>(V::min(hi, V::max(lo, acc[u])), p.act);
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u)
        if (ox0 + u < p.OW) V::store(p.out + (oy * p.OW + ox0 + u) * W, acc[u]);
    }
}

// Any kernel, stride and dilation: four output pixels at a time, each tap's weight vector feeding
// four independent FMA chains.
template <class V> void dwTileAny(const DwTile& p) {
  using vec = typename V::vec;
  constexpr int W = V::width, U = 4;
  const vec lo = V::set1(p.lo), hi = V::set1(p.hi);
  const vec bias = p.bias ? V::load(p.bias) : V::zero();
  const int64_t P = p.OH * p.OW;
  for (int64_t q0 = 0; q0 < P; q0 += U) {
    const float* base[U];
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      const int64_t q = q0 + u < P ? q0 + u : P - 1; // past the end: repeat the last pixel
      base[u] = p.in + ((q / p.OW) * p.strideH * p.Wp + (q % p.OW) * p.strideW) * W;
    }
    vec acc[U] = {bias, bias, bias, bias};
    const float* wt = p.w;
    for (int64_t ky = 0; ky < p.KH; ++ky)
      for (int64_t kx = 0; kx < p.KW; ++kx, wt += W) {
        const int64_t off = (ky * p.dilH * p.Wp + kx * p.dilW) * W;
        const vec wv = V::load(wt);
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) acc[u] = V::fmadd(wv, V::load(base[u] + off), acc[u]);
      }
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) acc[u] = activate<V>(V::min(hi, V::max(lo, acc[u])), p.act);
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u)
      if (q0 + u < P) V::store(p.out + (q0 + u) * W, acc[u]);
  }
}

// r[i] lane j -> r[j] lane i: V's register transpose where it has one, else through memory.
template <class V> void transposeSquare(typename V::vec* r) {
  if constexpr (requires { V::transpose(r); }) {
    V::transpose(r);
  } else {
    constexpr int W = V::width;
    float a[W * W], b[W * W];
    for (int i = 0; i < W; ++i) V::store(a + i * W, r[i]);
    for (int i = 0; i < W; ++i)
      for (int j = 0; j < W; ++j) b[j * W + i] = a[i * W + j];
    for (int i = 0; i < W; ++i) r[i] = V::load(b + i * W);
  }
}

// DwCBlockParams (ukernel.h).
template <class V> void dwCBlock(const DwCBlockParams& p) {
  using vec = typename V::vec;
  constexpr int W = V::width;
  const int64_t Hp = p.H + p.padTop + p.padBottom, Wp = p.W + p.padLeft + p.padRight;
  const int64_t taps = p.KH * p.KW, nc = p.channels, HW = p.H * p.W, P = p.OH * p.OW;
  float* tile = p.scratch;
  float* otile = tile + (Hp * Wp + 3 * p.strideW + p.KW) * W;
  float* wb = otile + (P + W) * W;
  float* bias = wb + taps * W;
  // Taps and bias, lanes past the block's channels zero (their outputs are never stored); the
  // taps W at a time by the same transposes as the pixels below.
  vec r[W];
  for (int64_t t0 = 0; t0 < taps; t0 += W) {
    const typename V::mask m = V::maskFor(taps - t0);
    for (int64_t c = 0; c < W; ++c)
      r[c] = c < nc ? V::loadMasked(p.w + c * taps + t0, m) : V::zero();
    transposeSquare<V>(r);
    for (int64_t j = 0; j < W && t0 + j < taps; ++j) V::store(wb + (t0 + j) * W, r[j]);
  }
  for (int64_t c = 0; c < W; ++c) bias[c] = c < nc && p.bias ? p.bias[c] : 0.0f;
  // The input pixels W at a time: one vector per channel (W consecutive pixels of its plane),
  // transposed into one vector per pixel. Only interior pixels are written: the padding and the
  // slack keep the zeros the caller put there.
  for (int64_t q0 = 0; q0 < HW; q0 += W) {
    const typename V::mask m = V::maskFor(HW - q0);
    const bool whole = q0 + W <= HW; // plain loads (masked ones are slower on Zen 4)
    for (int64_t c = 0; c < W; ++c)
      r[c] = c >= nc ? V::zero()
             : whole ? V::load(p.in + c * HW + q0)
                     : V::loadMasked(p.in + c * HW + q0, m);
    transposeSquare<V>(r);
    int64_t y = q0 / p.W, x = q0 % p.W;
    for (int64_t j = 0; j < W && q0 + j < HW; ++j) {
      V::store(tile + ((y + p.padTop) * Wp + x + p.padLeft) * W, r[j]);
      if (++x == p.W) x = 0, ++y;
    }
  }
  DwTile t{tile,      wb,        p.bias ? bias : nullptr,
           otile,     p.KH,      p.KW,
           p.OH,      p.OW,      Wp,
           p.strideH, p.strideW, p.dilH,
           p.dilW,    p.lo,      p.hi,
           p.act};
  const bool rows = p.dilH == 1 && p.dilW == 1 && p.KH == p.KW && p.strideH == p.strideW;
  if (rows && p.KH == 3 && p.strideH == 1)
    dwTileRows<V, 3, 1>(t);
  else if (rows && p.KH == 3 && p.strideH == 2)
    dwTileRows<V, 3, 2>(t);
  else if (rows && p.KH == 5 && p.strideH == 1)
    dwTileRows<V, 5, 1>(t);
  else if (rows && p.KH == 5 && p.strideH == 2)
    dwTileRows<V, 5, 2>(t);
  else
    dwTileAny<V>(t);
  // Back into planes: W pixels' vectors transposed into one vector per channel.
  for (int64_t q0 = 0; q0 < P; q0 += W) {
    for (int64_t j = 0; j < W; ++j) r[j] = V::load(otile + (q0 + j) * W); // past P: slack
    transposeSquare<V>(r);
    const typename V::mask m = V::maskFor(P - q0);
    for (int64_t c = 0; c < nc; ++c)
      if (q0 + W <= P)
        V::store(p.out + c * P + q0, r[c]);
      else
        V::storeMasked(p.out + c * P + q0, m, r[c]);
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

// Depthwise NCHW plane (see DwNchwPlaneParams). The work is a list of jobs, one per output vector
// (row oy, columns ox0..ox0 + width); four jobs run together so each broadcast tap feeds four
// independent FMA chains (a row of 14 outputs alone would be one latency-bound chain). A last
// group of fewer jobs repeats its last job (same values stored twice). MODE: 0 stride 1, 1 stride
// 2 over deinterleaved rows, 2 any stride (strided loads).
template <class V, int MODE, int KWS, bool MAX> void dwNchwPlaneMode(const DwNchwPlaneParams& p) {
  using vec = typename V::vec;
  constexpr int W = V::width, U = 4;
  const int64_t OW = p.OW, KW = KWS ? KWS : p.KW, nv = (OW + W - 1) / W, jobs = p.OH * nv;
  const int64_t sW = p.strideW, dW = p.dilW, rowStep = p.dilH * p.pitch;
  const vec lo = V::set1(p.lo), hi = V::set1(p.hi), bias = V::set1(p.bias);
  int64_t nextY = 0, nextX = 0; // the job after the current group
  for (int64_t j0 = 0; j0 < jobs; j0 += U) {
    const float* base[U];
    int64_t oy[U], ox[U];
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      if (j0 + u < jobs) {
        oy[u] = nextY, ox[u] = nextX;
        nextX += W;
        if (nextX >= OW) nextX = 0, ++nextY;
      } else { // repeat the last job
        oy[u] = oy[u - 1], ox[u] = ox[u - 1];
      }
      const float* row = p.in + oy[u] * p.strideH * p.pitch;
      base[u] = MODE == 2 ? row + ox[u] * sW : row + ox[u];
    }
    const vec init = MAX ? V::set1(-__builtin_inff()) : bias;
    vec acc[U] = {init, init, init, init};
    for (int64_t ky = 0; ky < p.KH; ++ky) {
      const int64_t rowOff = ky * rowStep;
      const float* wk = MAX ? nullptr : p.w + ky * KW;
#pragma GCC unroll 8
      for (int64_t kx = 0; kx < KW; ++kx) {
        const vec wv = MAX ? V::zero() : V::set1(wk[kx]);
        const int64_t off = rowOff + (MODE == 1 ? (kx & 1) * p.half + (kx >> 1) : kx * dW);
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) {
          const vec x = MODE == 2 ? V::loadStrided(base[u] + off, sW) : V::load(base[u] + off);
          // max(x, acc) keeps acc when x is NaN, like the reference's select(x > acc, x, acc)
          acc[u] = MAX ? V::max(x, acc[u]) : V::fmadd(wv, x, acc[u]);
        }
      }
    }
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      const vec r = MAX ? acc[u] : activate<V>(V::min(hi, V::max(lo, acc[u])), p.act);
      float* dst = p.out + oy[u] * OW + ox[u];
      if (ox[u] + W <= OW)
        V::store(dst, r);
      else
        V::storeMasked(dst, V::maskFor(OW - ox[u]), r);
    }
  }
}

// Stride 1, 3x3, no dilation: four output rows at a time, so each input row vector (and its +1,
// +2 column shifts) is loaded once for the up to three output rows it feeds (the one-row kernel
// above loads every tap for every output: one load per FMA, and the loads bound it). CB column
// vectors per step give 4 * CB independent accumulators. Rows past the last block of four take
// the one-row kernel.
template <class V, int CB> void dwNchwPlane3x3Rows(const DwNchwPlaneParams& p) {
  using vec = typename V::vec;
  constexpr int W = V::width, RB = 4;
  const int64_t OW = p.OW, nv = (OW + W - 1) / W, pitch = p.pitch;
  const vec lo = V::set1(p.lo), hi = V::set1(p.hi), bias = V::set1(p.bias);
  vec w[9];
#pragma GCC unroll 9
  for (int t = 0; t < 9; ++t) w[t] = V::set1(p.w[t]);
  const int64_t blocks = p.OH / RB;
  for (int64_t b = 0; b < blocks; ++b) {
    const float* in = p.in + b * RB * pitch;
    float* out = p.out + b * RB * OW;
    for (int64_t v0 = 0; v0 < nv; v0 += CB) {
      int64_t ox[CB];
#pragma GCC unroll 4
      for (int c = 0; c < CB; ++c) ox[c] = (v0 + c < nv ? v0 + c : nv - 1) * W; // repeat the last
      vec acc[RB][CB];
#pragma GCC unroll 4
      for (int i = 0; i < RB; ++i)
#pragma GCC unroll 4
        for (int c = 0; c < CB; ++c) acc[i][c] = bias;
#pragma GCC unroll 6
      for (int r = 0; r < RB + 2; ++r) {
#pragma GCC unroll 4
        for (int c = 0; c < CB; ++c) {
          const float* row = in + r * pitch + ox[c];
          const vec x0 = V::load(row), x1 = V::load(row + 1), x2 = V::load(row + 2);
#pragma GCC unroll 4
          for (int i = 0; i < RB; ++i) {
            const int ky = r - i; // output row i reads input rows i .. i + 2
            if (ky < 0 || ky > 2) continue;
            acc[i][c] = V::fmadd(w[ky * 3], x0, acc[i][c]);
            acc[i][c] = V::fmadd(w[ky * 3 + 1], x1, acc[i][c]);
            acc[i][c] = V::fmadd(w[ky * 3 + 2], x2, acc[i][c]);
          }
        }
      }
#pragma GCC unroll 4
      for (int i = 0; i < RB; ++i)
#pragma GCC unroll 4
        for (int c = 0; c < CB; ++c) {
          const vec r = activate<V>(V::min(hi, V::max(lo, acc[i][c])), p.act);
          float* dst = out + i * OW + ox[c];
          if (ox[c] + W <= OW)
            V::store(dst, r);
          else
            V::storeMasked(dst, V::maskFor(OW - ox[c]), r);
        }
    }
  }
  if (blocks * RB == p.OH) return;
  DwNchwPlaneParams rest = p;
  rest.in = p.in + blocks * RB * pitch;
  rest.out = p.out + blocks * RB * OW;
  rest.OH = p.OH - blocks * RB;
  dwNchwPlaneMode<V, 0, 3, false>(rest);
}

// A vector type built for size (V::compact: x86-64's portable fallback, which only backs CPUs
// without AVX2) takes no kernel-width specializations: the same results from fewer bodies.
template <class V> constexpr bool compactKernels() {
  if constexpr (requires { V::compact; })
    return V::compact;
  else
    return false;
}

template <class V, int MODE> void dwNchwPlaneK(const DwNchwPlaneParams& p) {
  if constexpr (compactKernels<V>())
    return p.max ? dwNchwPlaneMode<V, MODE, 0, true>(p) : dwNchwPlaneMode<V, MODE, 0, false>(p);
  if constexpr (MODE == 0 && V::width > 1)
    if (!p.max && p.KH == 3 && p.KW == 3 && p.dilH == 1 && p.dilW == 1 && p.strideH == 1 &&
        p.OH >= 4)
      return V::width >= 16 && p.OW > V::width ? dwNchwPlane3x3Rows<V, 2>(p)
                                               : dwNchwPlane3x3Rows<V, 1>(p);
  if (p.max)
    dwNchwPlaneMode<V, MODE, 0, true>(p);
  else if constexpr (MODE == 2) // (strides past 2, or dilated: rare; one body for every width)
    dwNchwPlaneMode<V, MODE, 0, false>(p);
  else if (p.KW == 3)
    dwNchwPlaneMode<V, MODE, 3, false>(p);
  else if (p.KW == 5)
    dwNchwPlaneMode<V, MODE, 5, false>(p);
  else
    dwNchwPlaneMode<V, MODE, 0, false>(p);
}

template <class V> void dwNchwPlane(const DwNchwPlaneParams& p) {
  if constexpr (compactKernels<V>()) // (one lane: the any-stride mode is stride 1's as well)
    return p.half > 0 ? dwNchwPlaneK<V, 1>(p) : dwNchwPlaneK<V, 2>(p);
  if (p.strideW == 1)
    dwNchwPlaneK<V, 0>(p);
  else if (p.half > 0)
    dwNchwPlaneK<V, 1>(p);
  else
    dwNchwPlaneK<V, 2>(p);
}

} // namespace aicc::kernels::detail

// The entry points every ISA file defines over its vector type V (ukernel.h declares them).
#define AICC_SIMD_ENTRY_POINTS(V, isa)                                                             \
  void f32_dwconv3x3_##isa(const DwRowParams& p) { detail::dwRow<V>(p); }                          \
  void f32_dwconv_nchw_##isa(const DwNchwPlaneParams& p) { detail::dwNchwPlane<V>(p); }            \
  float f32_expsum_##isa(float* x, int64_t n, float shift) {                                       \
    return detail::expSum<V>(x, n, shift);                                                         \
  }                                                                                                \
  float f32_sum_##isa(const float* x, int64_t n) { return detail::sumRow<V>(x, n); }

// The channel-blocked depthwise form, for the vector ISAs (a block of one lane would be a plane).
#define AICC_SIMD_CBLOCK_ENTRY_POINT(V, isa)                                                       \
  void f32_dwconv_cblock_##isa(const DwCBlockParams& p) { detail::dwCBlock<V>(p); }
