// Micro-kernel calls of lowered code (generated code through aicc_rt_call_kernel, and the
// reference loop executor, loop/eval.h): the callee names the lowerings emit, dispatched to
// src/kernels. Contracts (all f32, NCHW, row-major):
//   @<gemm desc>(A, B, C, M, N, K, lda, ldb, ldc, transB)
//       C[m*ldc + n] = sum_k A[m*lda + k] * B(k, n), B(k, n) = B[k*ldb + n] (transB: B[n*ldb + k])
//   @conv2d_nchw_<gemm desc>(x, w, bias | 0, y, Cin, H, W, Cout, KH, KW, sH, sW, padTop, padLeft,
//       padBottom, padRight, dilH, dilW)   one image, one group: x [Cin,H,W], w [Cout,Cin,KH,KW]
//   @dwconv_nchw_<dw desc>(x, w, bias | 0, y, C, H, W, stride)   depthwise 3x3, pad 1, one image
//       (dw desc a DepthwiseConv3x3 kernel: NHWC inside the call), or
//   @dwconv_nchw_<nchw dw desc>(x, w, bias | 0, y, C, mult, H, W, KH, KW, sH, sW, padTop, padLeft,
//       padBottom, padRight, dilH, dilW, clampFlags, lo, hi)   any depthwise, NCHW, one image
//   @conv2d_nchw_packed_<gemm desc>(x, wp, bias | 0, y, Cin, Cout, H, W, KH, KW, sH, sW, padTop,
//       padLeft, padBottom, padRight, dilH, dilW, clampFlags, lo, hi, res | 0 [, flags])   one
//       image, one group, wp = the group's weights packed by kernels::packConvWeights (NCHW
//       output); flags: which of x, y, res hold bf16 (kernels::kBf16*, bf16 kernels) and the GEMM
//       form wp is packed for (kernels::kConv*Rows; absent: kernels::convRowsFor)
//   @conv2d_nchw16c_<nchw16c desc>(the arguments of @conv2d_nchw_packed_)   x, y and res in
//       NCHW16c (kernels/conv_nchwc.h), wp packed by kernels::packNchwcWeights
//   @dwconv_nchw16c_<nchw16c desc>(the same, Cin == Cout)   depthwise, wp packed by
//       kernels::packNchwcDepthwise
//   @mean_nchw16c_<nchw16c desc>(x, y, blocks, HW)   GlobalAveragePool on NCHW16c (one image,
//       ReduceMean over H and W of [blocks, H, W, 16])
//   @reorder_nchw16c_<nchw16c desc>(x, y, C, HW, toBlocked)   one image [C, HW] -> [C/16, HW, 16]
//       (toBlocked 1) or back (0)
//   @gemm_packed_<gemm desc>(A, Bp, C, M, N, K, lda, ldc, bias | 0, clampFlags, lo, hi, res | 0)
//       C = act(clamp(A * B + bias[N] + res)), Bp = B packed by kernels::packBInto, res laid out
//       as C (ldc)
//   @attention_<gemm desc>(Q, K, V, mask | 0, Y, B, Hq, Hkv, Sq, Skv, D, Dv, maskKind, maskStrideB,
//       maskStrideH, maskStrideI, maskStrideJ, causal, scale, softcap, causalOffset, layout,
//       qk | 0, qkMode)   (loop/lower_attention.cpp; layout bit i: operand i of Q, K, V, Y is
//       [B, S, H * D]; qk [B, Hq, Sq, Skv] the scores at stage qkMode, kernels/attention.h)
//   @gru_<gemm desc>(X, W, R, B | 0, lens | 0, h0 | 0, Y | 0, Yh | 0, T, batch, I, H, dirs, flags,
//       clip, acts[, packed | 0])   ONNX GRU, layout 0 (kernels/rnn.h): X [T,batch,I], W
//       [dirs,3H,I], R [dirs,3H,H], B [dirs,6H], lens [batch] (integer lengths stored as f32),
//       h0/Yh [dirs,batch,H], Y [T,dirs,batch,H]; flags bit 0 = reverse, bit 1 =
//       linear_before_reset, bit 2 = clip; acts: 2 bits per activation (0 Sigmoid, 1 Tanh, 2 Relu),
//       f0 | g0 << 2 | f1 << 4 | g1 << 6 (f: z and r gates, g: candidate; per direction); packed: W
//       and R packed at compile time (kernels::packRnnWeights), else they are packed per call
//   @lstm_<gemm desc>(X, W, R, B | 0, lens | 0, h0 | 0, c0 | 0, P | 0, Y | 0, Yh | 0, Yc | 0, T,
//       batch, I, H, dirs, flags, clip, acts[, packed | 0])   ONNX LSTM, layout 0 (kernels/rnn.h):
//       as @gru_ with 4 gates (i, o, f, c): W [dirs,4H,I], R [dirs,4H,H], B [dirs,8H], c0/Yh/Yc
//       [dirs,batch,H], P [dirs,3H] (peepholes i, o, f); flags bit 0 = reverse, bit 1 =
//       input_forget, bit 2 = clip; acts f0 | g0 << 2 | h0 << 4 | f1 << 6 | g1 << 8 | h1 << 10 (f:
//       i, o and f gates, g: cell candidate, h: output; per direction)
//   @maxpool_nchw_<nchw dw desc>(x, y, C, 0, 0, 0, H, W, KH, KW, sH, sW, padTop, padLeft,
//       padBottom, padRight, dilH, dilW, OH, OW)   2-D MaxPool of one image (kernels/conv.h)
//   @avgpool_nchw_<nchw dw desc>(the same, countIncludePad)   2-D AveragePool of one image
//   @maxpool_nchw16c_, @avgpool_nchw16c_<nchw16c desc>(the same, C = blocks x 16)   on NCHW16c
//   @global_avgpool_<nchw dw desc>(x, y, rows, len)   y[r] = mean of x[r*len, (r+1)*len) (the
//       descriptor picks the ISA of the sums)
//   @qconv2d_nchw_<q desc>(...), @qdwconv_nchw_<nchw dw | q dw desc>(...)   ONNX QLinearConv, int8
//       (rt/callees_quant.cpp); @qmatmul_u8s8(...)   QLinearMatMul with constant b (the same);
//       @dqgemm_<DqGemm desc>(...)   com.microsoft.MatMulIntegerToFloat with constant b (the same);
//       @lut8(x, tables, y, outer, channels, inner, flip)   byte table lookups (the same)
//   @check_indices_i64 / _i32(indices, count, dim)   Gather's index check (an error naming the
//       index and the dimension)
//   @check_reduce_axes(axes, count, rank, reduced, ones, flags)   a reduction's run-time axes
//       against the dims it was compiled for (loop/lower_reduce.cpp)
//   @check_values_i64(values, count, v0, ...)   a run-time shape input equals the compiled one
//   @check_targets_i64 / _i32(targets, count, classes, hasIgnore, ignore)   values within [0,
//       classes) unless ignored: the losses' targets, RotaryEmbedding's positions, TensorScatter's
//       write indices
// clampFlags: bit 0 applies max(lo, .), bit 1 min(hi, .); bits 2.. an activation applied after
// them (kernels::kAct*: 1 HardSwish, 2 Swish, 3 Sigmoid, 4 Gelu).
// Buffer arguments are addresses with the bytes available there (unbounded from generated code,
// exact from the loop IR evaluator); every extent is checked against them.
#include "rt/callees.h"

#include "kernels/attention.h"
#include "kernels/conv.h"
#include "kernels/conv_nchwc.h"
#include "kernels/gemm.h"
#include "kernels/rnn.h"
#include "rt/error.h"

#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>

namespace aicc::rt {

namespace {

float* span(const std::string& k, std::vector<KernelArg>& a, size_t i, int64_t need,
            const char* what) {
  AICC_RT_CHECK(i < a.size() && a[i].isBuffer, "call @{}: argument {} ({}) must be a buffer", k, i,
                what);
  AICC_RT_CHECK(!a[i].dtype || std::string_view(a[i].dtype) == "f32", "call @{}: {} must be f32", k,
                what);
  AICC_RT_CHECK(need >= 0 && need <= a[i].bytes / int64_t(sizeof(float)),
                "call @{}: {} needs {} elements but the buffer has {} bytes", k, what, need,
                a[i].bytes);
  return static_cast<float*>(a[i].ptr);
}

int64_t ival(const std::string& k, const std::vector<KernelArg>& a, size_t i) {
  AICC_RT_CHECK(i < a.size() && !a[i].isBuffer && !a[i].isFloat,
                "call @{}: argument {} must be an integer", k, i);
  return a[i].i;
}

// The index checks' arguments 0 and 1: a buffer of T and how many of them it holds (`args`: the
// call's argument count, `what`: its signature for the error).
template <class T>
std::pair<const T*, int64_t> integers(const std::string& k, const std::vector<KernelArg>& a,
                                      size_t args, const char* what) {
  AICC_RT_CHECK(a.size() == args && a[0].isBuffer, "call @{}: expects {}", k, what);
  const int64_t count = ival(k, a, 1);
  AICC_RT_CHECK(count >= 0 && count <= a[0].bytes / int64_t(sizeof(T)),
                "call @{}: {} values but the buffer has {} bytes", k, count, a[0].bytes);
  return {static_cast<const T*>(a[0].ptr), count};
}

// @check_targets_i64 / _i32(targets, count, classes, hasIgnore, ignore): the losses' targets
// within [0, classes) unless ignored, else the reference's error.
template <class T> void callCheckTargets(const std::string& k, std::vector<KernelArg>& a) {
  const auto [x, count] = integers<T>(k, a, 5, "(targets, count, classes, hasIgnore, ignore)");
  const int64_t classes = ival(k, a, 2), ignore = ival(k, a, 4);
  const bool hasIgnore = ival(k, a, 3) != 0;
  for (int64_t i = 0; i < count; ++i)
    AICC_RT_CHECK((hasIgnore && int64_t(x[i]) == ignore) || (x[i] >= 0 && x[i] < classes),
                  "value {} at index {} is out of range [0, {})", int64_t(x[i]), i, classes);
}

// @check_indices_i64 / _i32(indices, count, dim): every index within [-dim, dim), else the
// interpreter's error (the gathers that follow clamp, so they never read outside their input).
template <class T> void callCheckIndices(const std::string& k, std::vector<KernelArg>& a) {
  const auto [x, count] = integers<T>(k, a, 3, "(indices, count, dim)");
  const int64_t dim = ival(k, a, 2);
  for (int64_t i = 0; i < count; ++i)
    AICC_RT_CHECK(x[i] >= -dim && x[i] < dim, "index {} is out of range for a dimension of size {}",
                  int64_t(x[i]), dim);
}

// @check_reduce_axes(axes, count, rank, reduced, ones, flags): a reduction whose axes come at run
// time was compiled for the dims of `reduced` (a bit mask; `ones` marks the input's size-1 dims,
// whose reduction changes nothing); the axes given must name exactly those dims (plus any size-1
// ones), each once and within [-rank, rank); a negative `reduced`, any dims. An empty list means
// every dim, or none with flags bit 0 (noop_with_empty_axes). flags bit 1 (keepdims 0): also
// exactly `removed` (flags >> 2) dims, which the declared output shape dropped.
void callCheckReduceAxes(const std::string& k, std::vector<KernelArg>& a) {
  const auto [x, count] = integers<int64_t>(k, a, 6, "(axes, count, rank, reduced, ones, flags)");
  const int64_t rank = ival(k, a, 2), reduced = ival(k, a, 3), ones = ival(k, a, 4),
                flags = ival(k, a, 5);
  int64_t mask = 0;
  for (int64_t i = 0; i < count; ++i) {
    AICC_RT_CHECK(x[i] >= -rank && x[i] < rank, "axis {} is out of range for rank {}", x[i], rank);
    const int64_t bit = int64_t(1) << (x[i] < 0 ? x[i] + rank : x[i]);
    AICC_RT_CHECK(!(mask & bit), "axis {} is given twice", x[i]);
    mask |= bit;
  }
  if (count == 0) mask = flags & 1 ? 0 : (int64_t(1) << rank) - 1;
  AICC_RT_CHECK((reduced < 0 || (mask & ~ones) == reduced) &&
                    (!(flags & 2) || __builtin_popcountll(uint64_t(mask)) == (flags >> 2)),
                "the axes given at run time do not give the output shape this model declares "
                "(compiled for the dims of mask {:#x})",
                reduced);
}

// @check_values_i64(values, count, v0, ..., v{count-1}): a shape-like input given at run time is
// the one the model's declared shapes were compiled for (CenterCropPad's target shape).
void callCheckValues(const std::string& k, std::vector<KernelArg>& a) {
  AICC_RT_CHECK(a.size() >= 2, "call @{}: expects (values, count, expected...)", k);
  const auto [x, count] = integers<int64_t>(k, a, 2 + size_t(std::max<int64_t>(ival(k, a, 1), 0)),
                                            "(values, count, expected...)");
  for (int64_t i = 0; i < count; ++i) {
    const int64_t want = ival(k, a, size_t(2 + i));
    AICC_RT_CHECK(x[i] == want,
                  "value {} at index {} differs from the {} this model's declared shapes need",
                  x[i], i, want);
  }
}

void callGemm(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
              kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 10, "call @{}: expects 10 arguments, got {}", k, a.size());
  int64_t M = ival(k, a, 3), N = ival(k, a, 4), K = ival(k, a, 5), lda = ival(k, a, 6),
          ldb = ival(k, a, 7), ldc = ival(k, a, 8), tb = ival(k, a, 9);
  AICC_RT_CHECK(M >= 0 && N >= 0 && K >= 0 && lda >= K && ldc >= N && ldb >= (tb ? K : N),
                "call @{}: bad sizes", k);
  if (M == 0 || N == 0) return;
  const float* A = span(k, a, 0, M == 0 ? 0 : (M - 1) * lda + K, "A");
  const float* B = span(k, a, 1, tb ? (N - 1) * ldb + K : (K == 0 ? 0 : (K - 1) * ldb + N), "B");
  float* C = span(k, a, 2, (M - 1) * ldc + N, "C");
  if (K == 0) {
    for (int64_t m = 0; m < M; ++m) std::memset(C + m * ldc, 0, sizeof(float) * N);
    return;
  }
  auto packed = kernels::packB(d, B, K, N, ldb, tb != 0);
  kernels::gemm(packed, M, A, lda, C, ldc, {}, pool);
}

void toNhwc(const float* x, int64_t C, int64_t HW, std::vector<float>& out) {
  out.resize(C * HW);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t p = 0; p < HW; ++p) out[p * C + c] = x[c * HW + p];
}
void fromNhwc(const std::vector<float>& x, int64_t C, int64_t HW, float* out) {
  for (int64_t c = 0; c < C; ++c)
    for (int64_t p = 0; p < HW; ++p) out[c * HW + p] = x[p * C + c];
}

float* optionalSpan(const std::string& k, std::vector<KernelArg>& a, size_t i, int64_t n,
                    const char* what) {
  if (i < a.size() && !a[i].isBuffer) return nullptr;
  return span(k, a, i, n, what);
}

const float* optionalBias(const std::string& k, std::vector<KernelArg>& a, size_t i, int64_t n) {
  return optionalSpan(k, a, i, n, "bias");
}

void callConv(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
              kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 18, "call @{}: expects 18 arguments, got {}", k, a.size());
  kernels::Conv2dShape s;
  s.N = 1;
  s.Cin = ival(k, a, 4), s.H = ival(k, a, 5), s.W = ival(k, a, 6), s.Cout = ival(k, a, 7);
  s.KH = ival(k, a, 8), s.KW = ival(k, a, 9), s.strideH = ival(k, a, 10);
  s.strideW = ival(k, a, 11), s.padTop = ival(k, a, 12), s.padLeft = ival(k, a, 13);
  s.padBottom = ival(k, a, 14), s.padRight = ival(k, a, 15), s.dilH = ival(k, a, 16);
  s.dilW = ival(k, a, 17);
  AICC_RT_CHECK(s.Cin > 0 && s.Cout > 0 && s.H > 0 && s.W > 0 && s.KH > 0 && s.KW > 0 &&
                    s.strideH > 0 && s.strideW > 0 && s.dilH > 0 && s.dilW > 0 && s.OH() > 0 &&
                    s.OW() > 0,
                "call @{}: bad convolution shape", k);
  const float* x = span(k, a, 0, s.Cin * s.H * s.W, "x");
  const float* w = span(k, a, 1, s.Cout * s.Cin * s.KH * s.KW, "w");
  const float* bias = optionalBias(k, a, 2, s.Cout);
  float* y = span(k, a, 3, s.Cout * s.OH() * s.OW(), "y");
  auto wt = kernels::packConv2d(d, s, w, bias);
  std::vector<float> xin, yout(s.Cout * s.OH() * s.OW());
  toNhwc(x, s.Cin, s.H * s.W, xin);
  kernels::conv2dNhwc(wt, xin.data(), yout.data(), {}, pool);
  fromNhwc(yout, s.Cout, s.OH() * s.OW(), y);
}

void callDw(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
            kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 8, "call @{}: expects 8 arguments, got {}", k, a.size());
  int64_t C = ival(k, a, 4), H = ival(k, a, 5), W = ival(k, a, 6), st = ival(k, a, 7);
  AICC_RT_CHECK(C > 0 && H > 0 && W > 0 && (st == 1 || st == 2), "call @{}: bad shape", k);
  int64_t OH = kernels::dwOutSize(H, st), OW = kernels::dwOutSize(W, st);
  const float* x = span(k, a, 0, C * H * W, "x");
  const float* w = span(k, a, 1, C * 9, "w");
  const float* bias = optionalBias(k, a, 2, C);
  float* y = span(k, a, 3, C * OH * OW, "y");
  auto wt = kernels::packDepthwise3x3(d, w, bias, C);
  std::vector<float> xin, yout(C * OH * OW);
  toNhwc(x, C, H * W, xin);
  kernels::depthwiseConv3x3Nhwc(wt, 1, H, W, st, xin.data(), yout.data(), {}, pool);
  fromNhwc(yout, C, OH * OW, y);
}

kernels::Epilogue clampOf(const std::string& k, const std::vector<KernelArg>& a, size_t i,
                          const float* bias) {
  AICC_RT_CHECK(i + 2 < a.size() && a[i + 1].isFloat && a[i + 2].isFloat,
                "call @{}: bad clamp arguments", k);
  int64_t flags = ival(k, a, i);
  kernels::Epilogue ep;
  ep.bias = bias;
  float lo = flags & 1 ? float(a[i + 1].f) : -std::numeric_limits<float>::infinity();
  float hi = flags & 2 ? float(a[i + 2].f) : std::numeric_limits<float>::infinity();
  ep.act = kernels::Activation::Clip;
  ep.clipMin = lo, ep.clipMax = hi;
  ep.post = unsigned(flags >> 2);
  AICC_RT_CHECK(ep.post <= kernels::kActGelu, "call @{}: bad activation code {}", k, ep.post);
  return ep;
}

void callAttention(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                   kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 24 && a[18].isFloat && a[19].isFloat,
                "call @{}: expects 24 arguments, got {}", k, a.size());
  kernels::AttentionShape s;
  s.B = ival(k, a, 5), s.Hq = ival(k, a, 6), s.Hkv = ival(k, a, 7), s.Sq = ival(k, a, 8);
  s.Skv = ival(k, a, 9), s.D = ival(k, a, 10), s.Dv = ival(k, a, 11);
  const int64_t maskKind = ival(k, a, 12);
  for (int i = 0; i < 4; ++i) s.maskStride[i] = ival(k, a, size_t(13 + i));
  s.causal = ival(k, a, 17) != 0;
  s.scale = float(a[18].f);
  s.softcap = float(a[19].f);
  s.causalOffset = ival(k, a, 20);
  const int64_t layout = ival(k, a, 21);
  for (int i = 0; i < 4; ++i) s.seqMajor[i] = (layout >> i) & 1;
  s.qkMode = int(ival(k, a, 23));
  AICC_RT_CHECK(s.causalOffset >= 0 && layout >= 0 && layout < 16 && s.qkMode >= 0 && s.qkMode <= 3,
                "call @{}: bad causal offset, layout or scores mode", k);
  if (a[22].isBuffer) s.qk = span(k, a, 22, s.B * s.Hq * s.Sq * s.Skv, "qk");
  AICC_RT_CHECK(s.B > 0 && s.Hq > 0 && s.Hkv > 0 && s.Hq % s.Hkv == 0 && s.Sq > 0 && s.Skv > 0 &&
                    s.D > 0 && s.Dv > 0 && maskKind >= 0 && maskKind <= 2,
                "call @{}: bad attention shape", k);
  const float* Q = span(k, a, 0, s.B * s.Hq * s.Sq * s.D, "Q");
  const float* K = span(k, a, 1, s.B * s.Hkv * s.Skv * s.D, "K");
  const float* V = span(k, a, 2, s.B * s.Hkv * s.Skv * s.Dv, "V");
  float* Y = span(k, a, 4, s.B * s.Hq * s.Sq * s.Dv, "Y");
  if (maskKind) {
    AICC_RT_CHECK(a[3].isBuffer, "call @{}: the mask must be a buffer", k);
    int64_t last = 0;
    const int64_t ext[4] = {s.B, s.Hq, s.Sq, s.Skv};
    for (int i = 0; i < 4; ++i) last += (ext[i] - 1) * s.maskStride[i];
    // Bool masks are bytes (the buffer may be an unbounded f32 view: its byte size bounds them).
    if (maskKind == 1) {
      s.maskF = span(k, a, 3, last + 1, "mask");
    } else {
      AICC_RT_CHECK(last + 1 <= a[3].bytes, "call @{}: the mask needs {} bytes, the buffer has {}",
                    k, last + 1, a[3].bytes);
      s.maskB = static_cast<const uint8_t*>(a[3].ptr);
    }
  }
  kernels::attentionF32(d, s, Q, K, V, Y, pool);
}

// A convolution shape (kernels::DwShape or kernels::Conv2dShape) with the 12 geometry arguments
// from index 6 on: H, W, KH, KW, strides (h, w), pads (top, left, bottom, right), dilations.
template <class Shape> Shape geometryAt(const std::string& k, const std::vector<KernelArg>& a) {
  Shape s;
  int64_t* f[] = {&s.H,      &s.W,       &s.KH,        &s.KW,       &s.strideH, &s.strideW,
                  &s.padTop, &s.padLeft, &s.padBottom, &s.padRight, &s.dilH,    &s.dilW};
  for (size_t j = 0; j < 12; ++j) *f[j] = ival(k, a, 6 + j);
  AICC_RT_CHECK(s.H > 0 && s.W > 0 && s.KH > 0 && s.KW > 0 && s.KH <= 64 && s.strideH > 0 &&
                    s.strideW > 0 && s.dilH > 0 && s.dilW > 0 && s.padTop >= 0 && s.padLeft >= 0 &&
                    s.padBottom >= 0 && s.padRight >= 0,
                "call @{}: bad convolution geometry", k);
  return s;
}

void callDwNchw(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 21, "call @{}: expects 21 arguments, got {}", k, a.size());
  auto s = geometryAt<kernels::DwShape>(k, a);
  s.C = ival(k, a, 4), s.mult = ival(k, a, 5);
  AICC_RT_CHECK(s.C > 0 && s.mult > 0 && s.OH() > 0 && s.OW() > 0, "call @{}: bad depthwise shape",
                k);
  const int64_t Cout = s.C * s.mult;
  const float* x = span(k, a, 0, s.C * s.H * s.W, "x");
  const float* w = span(k, a, 1, Cout * s.KH * s.KW, "w");
  const float* bias = optionalBias(k, a, 2, Cout);
  float* y = span(k, a, 3, Cout * s.OH() * s.OW(), "y");
  kernels::depthwiseConvNchw(d, s, w, x, y, clampOf(k, a, 18, bias), pool);
}

// @maxpool_nchw_ (20 arguments) and @avgpool_nchw_ (21: countIncludePad last); the same on
// NCHW16c (@maxpool_nchw16c_, @avgpool_nchw16c_: C counts the blocks' lanes).
template <bool kMax>
void callPool(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
              kernels::ThreadPool* pool) {
  const size_t args = kMax ? 20 : 21;
  AICC_RT_CHECK(a.size() == args, "call @{}: expects {} arguments, got {}", k, args, a.size());
  auto s = geometryAt<kernels::DwShape>(k, a);
  s.C = ival(k, a, 2), s.outH = ival(k, a, 18), s.outW = ival(k, a, 19);
  AICC_RT_CHECK(s.C > 0 && s.outH > 0 && s.outW > 0, "call @{}: bad pooling shape", k);
  const float* x = span(k, a, 0, s.C * s.H * s.W, "x");
  float* y = span(k, a, 1, s.C * s.outH * s.outW, "y");
  const bool blocked = d.op == kernels::KernelOp::ConvNchw16c;
  AICC_RT_CHECK(!blocked || s.C % kernels::kNchwcBlock == 0,
                "call @{}: {} lanes are not whole channel blocks", k, s.C);
  if (blocked)
    kernels::poolNchw16c(d, s, kMax, !kMax && ival(k, a, 20) != 0, x, y, pool);
  else if (kMax)
    kernels::maxPoolNchw(d, s, x, y, pool);
  else
    kernels::avgPoolNchw(d, s, ival(k, a, 20) != 0, x, y, pool);
}

void callGlobalAvgPool(const kernels::KernelDesc& d, const std::string& k,
                       std::vector<KernelArg>& a, kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 4, "call @{}: expects 4 arguments, got {}", k, a.size());
  const int64_t rows = ival(k, a, 2), len = ival(k, a, 3);
  AICC_RT_CHECK(rows >= 1 && len >= 1, "call @{}: bad pooling shape", k);
  const float* x = span(k, a, 0, rows * len, "x");
  float* y = span(k, a, 1, rows, "y");
  kernels::globalAveragePool(d.isa, x, y, rows, len, pool);
}

// A buffer of n activations, f32 or (bf16) bf16 bits, as the convolution driver takes it.
float* activations(const std::string& k, std::vector<KernelArg>& a, size_t i, int64_t n, bool bf16,
                   const char* what) {
  if (!bf16) return span(k, a, i, n, what);
  AICC_RT_CHECK(i < a.size() && a[i].isBuffer, "call @{}: argument {} ({}) must be a buffer", k, i,
                what);
  AICC_RT_CHECK(!a[i].dtype || std::string_view(a[i].dtype) == "bf16", "call @{}: {} must be bf16",
                k, what);
  AICC_RT_CHECK(n >= 0 && n <= a[i].bytes / 2,
                "call @{}: {} needs {} elements but the buffer has "
                "{} bytes",
                k, what, n, a[i].bytes);
  return static_cast<float*>(a[i].ptr);
}

void callConvPacked(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                    kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 22 || a.size() == 23, "call @{}: expects 22 or 23 arguments, got {}", k,
                a.size());
  auto s = geometryAt<kernels::Conv2dShape>(k, a);
  s.Cin = ival(k, a, 4), s.Cout = ival(k, a, 5);
  AICC_RT_CHECK(s.Cin > 0 && s.Cout > 0 && s.OH() > 0 && s.OW() > 0,
                "call @{}: bad convolution shape", k);
  // Argument 22: which activations are stored as bf16 (kernels::kBf16*; bf16 kernels only) and
  // the GEMM form the weights were packed for (kernels::kConv*Rows; absent: convRowsFor).
  const int64_t flags = a.size() == 23 ? ival(k, a, 22) : 0, io = flags & 7;
  const int64_t form = flags & ~int64_t(7);
  AICC_RT_CHECK((io == 0 || d.op == kernels::KernelOp::GemmBf16) &&
                    (form == 0 || form == kernels::kConvChannelRows ||
                     (form == kernels::kConvPixelRows && d.op == kernels::KernelOp::Gemm)),
                "call @{}: bad storage / form flags {}", k, flags);
  const kernels::ConvRows rows = form == kernels::kConvPixelRows     ? kernels::ConvRows::Pixels
                                 : form == kernels::kConvChannelRows ? kernels::ConvRows::Channels
                                                                     : kernels::convRowsFor(d, s);
  const float* x = activations(k, a, 0, s.Cin * s.H * s.W, io & kernels::kBf16Input, "x");
  const float* wp = span(k, a, 1, kernels::convPackedWeightFloats(d, s, rows), "packed weights");
  const float* bias = optionalBias(k, a, 2, s.Cout);
  const int64_t n = s.Cout * s.OH() * s.OW();
  float* y = activations(k, a, 3, n, io & kernels::kBf16Output, "y");
  kernels::Epilogue ep = clampOf(k, a, 18, bias);
  if (a[21].isBuffer)
    ep.residual = activations(k, a, 21, n, io & kernels::kBf16Residual, "residual");
  ep.bf16 = unsigned(io);
  kernels::conv2dNchwPacked(d, s, rows, wp, x, y, ep, pool);
}

// The convolutions to NCHW16c, dense (@conv2d_nchw16c_), depthwise (@dwconv_nchw16c_, Cin ==
// Cout) or a stem on NCHW planes (@conv2d_nchw_nchw16c_): @conv2d_nchw_packed_'s arguments.
void callConvNchwc(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                   kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 22, "call @{}: expects 22 arguments, got {}", k, a.size());
  const bool dw = k.rfind("dwconv_", 0) == 0, plane = k.rfind("conv2d_nchw_nchw16c_", 0) == 0;
  auto s = geometryAt<kernels::Conv2dShape>(k, a);
  s.Cin = ival(k, a, 4), s.Cout = ival(k, a, 5);
  AICC_RT_CHECK(s.Cin > 0 && s.Cout > 0 && (!dw || s.Cin == s.Cout) && s.OH() > 0 &&
                    kernels::nchwcConvApplies(s),
                "call @{}: bad convolution shape", k);
  const int64_t outFloats = kernels::nchwcBlocks(s.Cout) * s.OH() * s.OW() * kernels::kNchwcBlock;
  const int64_t inFloats =
      plane ? s.Cin * s.H * s.W : kernels::nchwcBlocks(s.Cin) * s.H * s.W * kernels::kNchwcBlock;
  const float* x = span(k, a, 0, inFloats, "x");
  const float* wp = span(k, a, 1,
                         dw      ? kernels::nchwcDepthwiseWeightFloats(s)
                         : plane ? kernels::nchwcPlanePackedWeightFloats(s)
                                 : kernels::nchwcPackedWeightFloats(s),
                         "packed weights");
  const float* bias = optionalBias(k, a, 2, s.Cout);
  float* y = span(k, a, 3, outFloats, "y");
  kernels::Epilogue ep = clampOf(k, a, 18, bias);
  ep.residual = optionalSpan(k, a, 21, outFloats, "residual");
  (dw      ? kernels::depthwiseNchw16c
   : plane ? kernels::conv2dNchwToNchw16c
           : kernels::conv2dNchw16c)(d, s, wp, x, y, ep, pool);
}

void callMeanNchwc(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                   kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 4, "call @{}: expects 4 arguments, got {}", k, a.size());
  const int64_t blocks = ival(k, a, 2), HW = ival(k, a, 3);
  AICC_RT_CHECK(blocks >= 1 && HW >= 1, "call @{}: bad shape", k);
  const float* x = span(k, a, 0, blocks * HW * kernels::kNchwcBlock, "x");
  float* y = span(k, a, 1, blocks * kernels::kNchwcBlock, "y");
  kernels::meanNchw16c(d, x, blocks, HW, y, pool);
}

void callReorderNchwc(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                      kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 5, "call @{}: expects 5 arguments, got {}", k, a.size());
  const int64_t C = ival(k, a, 2), HW = ival(k, a, 3), toBlocked = ival(k, a, 4);
  AICC_RT_CHECK(C >= 1 && HW >= 1, "call @{}: bad shape", k);
  const int64_t blocked = kernels::nchwcBlocks(C) * HW * kernels::kNchwcBlock;
  const float* x = span(k, a, 0, toBlocked ? C * HW : blocked, "x");
  float* y = span(k, a, 1, toBlocked ? blocked : C * HW, "y");
  if (toBlocked)
    kernels::reorderToNchw16c(d, x, C, HW, y, pool);
  else
    kernels::reorderFromNchw16c(d, x, C, HW, y, pool);
}

void callGemmPacked(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                    kernels::ThreadPool* pool) {
  AICC_RT_CHECK(a.size() == 13, "call @{}: expects 13 arguments, got {}", k, a.size());
  int64_t M = ival(k, a, 3), N = ival(k, a, 4), K = ival(k, a, 5), lda = ival(k, a, 6),
          ldc = ival(k, a, 7);
  AICC_RT_CHECK(M >= 0 && N >= 0 && K >= 0 && lda >= K && ldc >= N, "call @{}: bad sizes", k);
  if (M == 0 || N == 0) return;
  const float* A = span(k, a, 0, (M - 1) * lda + K, "A");
  const float* B = span(k, a, 1, kernels::packedBFloats(d, K, N), "packed B");
  float* C = span(k, a, 2, (M - 1) * ldc + N, "C");
  const float* bias = optionalBias(k, a, 8, N);
  kernels::Epilogue ep = clampOf(k, a, 9, bias);
  ep.residual = optionalSpan(k, a, 12, (M - 1) * ldc + N, "residual");
  kernels::gemmPackedB(d, B, K, N, M, A, lda, C, ldc, ep, pool);
}

// The activations of a call: `acts` holds 2 bits per activation, those of direction 0 then those
// of direction 1, in the order of `slots` (each slot an array over the directions).
void rnnActivations(const std::string& k, int64_t acts,
                    std::initializer_list<kernels::RnnActivation*> slots) {
  int64_t shift = 0;
  for (int d = 0; d < 2; ++d)
    for (kernels::RnnActivation* slot : slots) {
      const int64_t code = (acts >> shift) & 3;
      AICC_RT_CHECK(code <= 2, "call @{}: bad activation code {}", k, code);
      slot[d] = static_cast<kernels::RnnActivation>(code);
      shift += 2;
    }
}

// What @gru_ and @lstm_ share: X, W, R, B, lens, h0 (arguments 0-5) and T, batch, I, H, dirs,
// flags, clip from argument `at` on (flags bit 0 reverse, bit 2 clip). Returns the flags; `lens`
// holds the lengths b.lens points to.
int64_t rnnArgs(const std::string& k, std::vector<KernelArg>& a, size_t at, int64_t gates,
                kernels::RnnShape& s, kernels::RnnBuffers& b, std::vector<int64_t>& lens) {
  AICC_RT_CHECK((a.size() == at + 8 || a.size() == at + 9) && a[at + 6].isFloat,
                "call @{}: expects {} arguments (and W and R packed, or 0)", k, at + 8);
  s.T = ival(k, a, at), s.batch = ival(k, a, at + 1), s.I = ival(k, a, at + 2);
  s.H = ival(k, a, at + 3), s.dirs = ival(k, a, at + 4);
  const int64_t flags = ival(k, a, at + 5);
  s.reverse = flags & 1, s.hasClip = flags & 4;
  s.clip = static_cast<float>(a[at + 6].f);
  AICC_RT_CHECK(s.T >= 0 && s.batch >= 0 && s.I > 0 && s.H > 0 && (s.dirs == 1 || s.dirs == 2),
                "call @{}: bad RNN shape", k);
  const int64_t G = gates * s.H;
  b.X = span(k, a, 0, s.T * s.batch * s.I, "X");
  b.W = span(k, a, 1, s.dirs * G * s.I, "W");
  b.R = span(k, a, 2, s.dirs * G * s.H, "R");
  b.B = optionalSpan(k, a, 3, s.dirs * 2 * G, "B");
  if (const float* l = optionalSpan(k, a, 4, s.batch, "sequence_lens")) {
    for (int64_t i = 0; i < s.batch; ++i) lens.push_back(static_cast<int64_t>(l[i]));
    b.lens = lens.data();
  }
  b.h0 = optionalSpan(k, a, 5, s.dirs * s.batch * s.H, "initial_h");
  return flags;
}

void callGru(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
             kernels::ThreadPool* pool) {
  kernels::GruShape s;
  kernels::GruBuffers b;
  std::vector<int64_t> lens;
  s.linearBeforeReset = rnnArgs(k, a, 8, 3, s, b, lens) & 2;
  rnnActivations(k, ival(k, a, 15), {s.f, s.g});
  if (a.size() > 16)
    b.packed = optionalSpan(k, a, 16, kernels::rnnPackedFloats(d, s, 3, s.linearBeforeReset),
                            "packed W and R");
  const int64_t state = s.dirs * s.batch * s.H;
  b.Y = optionalSpan(k, a, 6, s.T * state, "Y");
  b.Yh = optionalSpan(k, a, 7, state, "Y_h");
  kernels::gru(d, s, b, pool);
}

void callLstm(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
              kernels::ThreadPool* pool) {
  kernels::LstmShape s;
  kernels::LstmBuffers b;
  std::vector<int64_t> lens;
  s.inputForget = rnnArgs(k, a, 11, 4, s, b, lens) & 2;
  rnnActivations(k, ival(k, a, 18), {s.f, s.g, s.h});
  if (a.size() > 19)
    b.packed = optionalSpan(k, a, 19, kernels::rnnPackedFloats(d, s, 4, false), "packed W and R");
  const int64_t state = s.dirs * s.batch * s.H;
  b.c0 = optionalSpan(k, a, 6, state, "initial_c");
  b.P = optionalSpan(k, a, 7, s.dirs * 3 * s.H, "P");
  b.Y = optionalSpan(k, a, 8, s.T * state, "Y");
  b.Yh = optionalSpan(k, a, 9, state, "Y_h");
  b.Yc = optionalSpan(k, a, 10, state, "Y_c");
  kernels::lstm(d, s, b, pool);
}

} // namespace

// The int8 convolutions (rt/callees_quant.cpp).
void callQConv(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
               kernels::ThreadPool* pool);
void callQDwConv(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                 kernels::ThreadPool* pool);
void callQDw3x3(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                kernels::ThreadPool* pool);
void callQMatMul(const std::string& k, std::vector<KernelArg>& a, kernels::ThreadPool* pool);
void callLut8(const std::string& k, std::vector<KernelArg>& a, kernels::ThreadPool* pool);
void callDqGemm(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                kernels::ThreadPool* pool);
void callQMatMulTiles(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                      kernels::ThreadPool* pool);
void callQMatMulPairs(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                      kernels::ThreadPool* pool);
void callQConvRows(const kernels::KernelDesc& d, const std::string& k, std::vector<KernelArg>& a,
                   kernels::ThreadPool* pool);

std::optional<KernelFn> builtinKernel(const std::string& name, kernels::ThreadPool* pool) {
  using kernels::KernelOp;
  if (name == "check_indices_i64")
    return KernelFn([name](std::vector<KernelArg>& a) { callCheckIndices<int64_t>(name, a); });
  if (name == "check_indices_i32")
    return KernelFn([name](std::vector<KernelArg>& a) { callCheckIndices<int32_t>(name, a); });
  if (name == "check_values_i64")
    return KernelFn([name](std::vector<KernelArg>& a) { callCheckValues(name, a); });
  if (name == "check_reduce_axes")
    return KernelFn([name](std::vector<KernelArg>& a) { callCheckReduceAxes(name, a); });
  if (name == "qmatmul_u8s8")
    return KernelFn([name, pool](std::vector<KernelArg>& a) { callQMatMul(name, a, pool); });
  if (name == "lut8")
    return KernelFn([name, pool](std::vector<KernelArg>& a) { callLut8(name, a, pool); });
  if (name == "check_targets_i64")
    return KernelFn([name](std::vector<KernelArg>& a) { callCheckTargets<int64_t>(name, a); });
  if (name == "check_targets_i32")
    return KernelFn([name](std::vector<KernelArg>& a) { callCheckTargets<int32_t>(name, a); });
  using Call = void (*)(const kernels::KernelDesc&, const std::string&, std::vector<KernelArg>&,
                        kernels::ThreadPool*);
  // Callee prefix + the descriptor's op -> the contract implementing it (longest prefixes first).
  struct Entry {
    const char* prefix;
    KernelOp op;
    Call call;
  };
  static const Entry table[] = {
      {"conv2d_nchw_packed_", KernelOp::Gemm, callConvPacked},
      {"conv2d_nchw_packed_", KernelOp::GemmBf16, callConvPacked},
      {"conv2d_nchw16c_", KernelOp::ConvNchw16c, callConvNchwc},
      {"dwconv_nchw16c_", KernelOp::ConvNchw16c, callConvNchwc},
      {"conv2d_nchw_nchw16c_", KernelOp::ConvNchw16c, callConvNchwc},
      {"reorder_nchw16c_", KernelOp::ConvNchw16c, callReorderNchwc},
      {"mean_nchw16c_", KernelOp::ConvNchw16c, callMeanNchwc},
      {"qconv2d_nchw_", KernelOp::QConvGemm, callQConv},
      {"qdwconv_nchw_", KernelOp::DepthwiseConvNchw, callQDwConv},
      {"qdwconv_nchw_", KernelOp::QDepthwise3x3, callQDw3x3},
      {"dqgemm_", KernelOp::DqGemm, callDqGemm},
      {"qmatmul_tiles_", KernelOp::DqGemm, callQMatMulTiles},
      {"qmatmul_pairs_", KernelOp::DqGemm, callQMatMulPairs},
      {"qconv_rows_", KernelOp::DqGemm, callQConvRows},
      {"gemm_packed_", KernelOp::Gemm, callGemmPacked},
      {"gemm_packed_", KernelOp::GemmBf16, callGemmPacked},
      {"attention_", KernelOp::Gemm, callAttention},
      {"attention_", KernelOp::GemmBf16, callAttention},
      {"gru_", KernelOp::Gemm, callGru},
      {"lstm_", KernelOp::Gemm, callLstm},
      {"dwconv_nchw_", KernelOp::DepthwiseConvNchw, callDwNchw},
      {"maxpool_nchw_", KernelOp::DepthwiseConvNchw, callPool<true>},
      {"avgpool_nchw_", KernelOp::DepthwiseConvNchw, callPool<false>},
      {"maxpool_nchw16c_", KernelOp::ConvNchw16c, callPool<true>},
      {"avgpool_nchw16c_", KernelOp::ConvNchw16c, callPool<false>},
      {"global_avgpool_", KernelOp::DepthwiseConvNchw, callGlobalAvgPool},
      {"dwconv_nchw_", KernelOp::DepthwiseConv3x3, callDw},
      {"conv2d_nchw_", KernelOp::Gemm, callConv},
      {"", KernelOp::Gemm, callGemm},
  };
  for (const Entry& e : table) {
    if (name.rfind(e.prefix, 0) != 0) continue;
    const auto* d = kernels::findKernel(std::string_view(name).substr(std::strlen(e.prefix)));
    if (!d || d->op != e.op || !kernels::cpuSupports(d->isa)) continue;
    Call call = e.call;
    return KernelFn([d, name, pool, call](std::vector<KernelArg>& a) { call(*d, name, a, pool); });
  }
  return std::nullopt;
}

} // namespace aicc::rt
