// Shared helpers of the nn / linalg families: GEMM inner loop and sliding-window geometry.
#include "ops/nn.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace aicc {

// ---- GEMM ---------------------------------------------------------------------------------------
// i-k-j loop over blocks of B (kKb rows x kNb columns stay in cache), four rows of B per pass so
// each row of C is loaded and stored once per four multiply-adds. The inner loop uses 16-byte
// vectors (GCC/Clang vector extension) so it vectorizes at -O2 on any x86-64 / AArch64.
template <typename T> void gemmAcc(int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C) {
  typedef T Vec __attribute__((vector_size(16)));
  constexpr int64_t kW = 16 / sizeof(T);
  constexpr int64_t kNb = 256, kKb = 128;
  auto load = [](const T* p) {
    Vec v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  for (int64_t j0 = 0; j0 < N; j0 += kNb) {
    const int64_t n = std::min(kNb, N - j0);
    for (int64_t k0 = 0; k0 < K; k0 += kKb) {
      const int64_t kEnd = std::min(K, k0 + kKb);
      for (int64_t i = 0; i < M; ++i) {
        T* c = C + i * N + j0;
        const T* a = A + i * K;
        int64_t k = k0;
        for (; k + 4 <= kEnd; k += 4) {
          const T a0 = a[k], a1 = a[k + 1], a2 = a[k + 2], a3 = a[k + 3];
          const T* b0 = B + k * N + j0;
          const T* b1 = b0 + N;
          const T* b2 = b1 + N;
          const T* b3 = b2 + N;
          int64_t j = 0;
          for (; j + kW <= n; j += kW) {
            Vec acc = load(c + j) + a0 * load(b0 + j) + a1 * load(b1 + j) + a2 * load(b2 + j) +
                      a3 * load(b3 + j);
            std::memcpy(c + j, &acc, sizeof acc);
          }
          for (; j < n; ++j) c[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
        }
        for (; k < kEnd; ++k) {
          const T a0 = a[k];
          const T* b0 = B + k * N + j0;
          for (int64_t j = 0; j < n; ++j) c[j] += a0 * b0[j];
        }
      }
    }
  }
}

// float: through double copies of the operands (see ops/nn.h).
template <>
void gemmAcc<float>(int64_t M, int64_t N, int64_t K, const float* A, const float* B, float* C) {
  std::vector<double> a(A, A + M * K), b(B, B + K * N), c(C, C + M * N);
  gemmAcc<double>(M, N, K, a.data(), b.data(), c.data());
  for (int64_t i = 0; i < M * N; ++i) C[i] = static_cast<float>(c[i]);
}
template void gemmAcc<double>(int64_t, int64_t, int64_t, const double*, const double*, double*);
template void gemmAcc<int64_t>(int64_t, int64_t, int64_t, const int64_t*, const int64_t*, int64_t*);

// ---- Sliding windows ----------------------------------------------------------------------------

WindowAttrs readWindowAttrs(const Node& n, size_t spatial) {
  WindowAttrs a;
  if (n.attr("auto_pad")) a.autoPad = n.attrString("auto_pad");
  AICC_CHECK(a.autoPad == "NOTSET" || a.autoPad == "VALID" || a.autoPad == "SAME_UPPER" ||
                 a.autoPad == "SAME_LOWER",
             "attribute 'auto_pad' has unknown value '{}'", a.autoPad);
  auto get = [&](const char* name, size_t len, int64_t dflt, int64_t minVal) {
    Dims v = n.attrInts(name, Dims(len, dflt));
    if (v.empty()) v.assign(len, dflt);
    AICC_CHECK(v.size() == len, "attribute '{}' has {} values, expected {} for {} spatial dims",
               name, v.size(), len, spatial);
    for (int64_t x : v) AICC_CHECK(x >= minVal, "attribute '{}' has invalid value {}", name, x);
    return v;
  };
  a.strides = get("strides", spatial, 1, 1);
  a.dilations = get("dilations", spatial, 1, 1);
  a.pads = get("pads", 2 * spatial, 0, 0);
  return a;
}

Window slideDim(const WindowAttrs& a, size_t i, int64_t in, int64_t kernel, bool ceilMode) {
  size_t sp = a.strides.size();
  Window w;
  w.in = in;
  w.kernel = kernel;
  w.stride = a.strides[i];
  w.dilation = a.dilations[i];
  AICC_CHECK(kernel >= 1, "kernel size {} in spatial dim {} is invalid", kernel, i);
  const int64_t ext = w.extent();
  if (a.autoPad == "SAME_UPPER" || a.autoPad == "SAME_LOWER") {
    w.out = ceilDiv(in, w.stride);
    int64_t total = std::max<int64_t>(0, (w.out - 1) * w.stride + ext - in);
    w.padBegin = a.autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
    w.padEnd = total - w.padBegin;
  } else {
    if (a.autoPad == "NOTSET") {
      w.padBegin = a.pads[i];
      w.padEnd = a.pads[i + sp];
    }
    int64_t span = in + w.padBegin + w.padEnd - ext;
    AICC_CHECK(span >= 0,
               "window of extent {} does not fit input size {} (pads {}+{}) in spatial dim {}", ext,
               in, w.padBegin, w.padEnd, i);
    w.out = (ceilMode ? ceilDiv(span, w.stride) : floorDiv(span, w.stride)) + 1;
    // With ceil_mode, a last window that would start in the end padding is dropped.
    if (ceilMode && (w.out - 1) * w.stride >= in + w.padBegin) --w.out;
  }
  return w;
}

Dim slideSymbolic(const WindowAttrs& a, size_t i, const Dim& in, int64_t kernel, bool ceilMode) {
  const int64_t stride = a.strides[i], ext = a.dilations[i] * (kernel - 1) + 1;
  if (a.autoPad == "SAME_UPPER" || a.autoPad == "SAME_LOWER") return dimCeilDiv(in, stride);
  const size_t sp = a.strides.size();
  const int64_t padEnd = a.autoPad == "NOTSET" ? a.pads[i + sp] : 0;
  const int64_t pads = a.autoPad == "NOTSET" ? a.pads[i] + padEnd : 0;
  // ceil_mode: ceil((in + pads - ext) / s) + 1, when no last window can start in the end padding
  // (its start (out - 1) s <= in + pads - ext + s - 1 stays below in + padBegin: s <= ext -
  // padEnd).
  if (ceilMode && stride > ext - padEnd) return Dim{};
  const int64_t up = ceilMode ? stride - 1 : 0;
  auto e = dimExpr(in);
  if (!e) return Dim{};
  try { // floor((in + pads - ext [+ s - 1]) / s) + 1 = floor((in + pads - ext [+ s - 1] + s) / s)
    return dimOf((*e + DimExpr::constant(pads - ext + stride + up)).floorDiv(stride));
  } catch (const std::exception&) {
    return Dim{};
  }
}

std::vector<Window> slideDims(const WindowAttrs& a, const Dims& inSpatial, const Dims& kernel,
                              bool ceilMode) {
  AICC_CHECK(inSpatial.size() == kernel.size(), "kernel has {} spatial dims, input has {}",
             kernel.size(), inSpatial.size());
  std::vector<Window> ws;
  for (size_t i = 0; i < inSpatial.size(); ++i)
    ws.push_back(slideDim(a, i, inSpatial[i], kernel[i], ceilMode));
  return ws;
}

std::array<Window, 3> windows3(const std::vector<Window>& ws) {
  AICC_CHECK(ws.size() <= 3, "unsupported: {} spatial dims (at most 3 are supported)", ws.size());
  std::array<Window, 3> out{};
  std::copy(ws.begin(), ws.end(), out.begin() + static_cast<std::ptrdiff_t>(3 - ws.size()));
  return out;
}

Dims kernelShapeOf(const Node& n, const Dims& fallback) {
  Dims k = n.attrInts("kernel_shape", fallback);
  return k.empty() ? fallback : k;
}

void inferSliding(InferCtx& c, Dim channels, const std::optional<Dims>& kernel, bool ceilMode,
                  DType dt) {
  const auto& xs = c.inShape(0);
  size_t rank = xs ? xs->size() : kernel ? kernel->size() + 2 : 0;
  if (rank == 0) return c.setTensor(0, dt, std::nullopt);
  AICC_CHECK(rank >= 3, "input X has rank {}, expected at least 3 (N, C, spatial...)", rank);
  size_t sp = rank - 2;
  AICC_CHECK(!kernel || kernel->size() == sp, "kernel has {} spatial dims, input X has {}",
             kernel ? kernel->size() : 0, sp);
  WindowAttrs a = readWindowAttrs(c.node, sp);
  Shape out{xs ? (*xs)[0] : Dim{}, channels};
  for (size_t i = 0; i < sp; ++i) {
    Dim d = xs ? (*xs)[i + 2] : Dim{};
    if (kernel && d.isStatic())
      out.push_back(Dim::known(slideDim(a, i, d.value, (*kernel)[i], ceilMode).out));
    else if (kernel)
      out.push_back(slideSymbolic(a, i, d, (*kernel)[i], ceilMode));
    else
      out.push_back(Dim{});
  }
  c.setTensor(0, dt, out);
}

void requireFloatInput(const KernelCtx& c, size_t i) {
  DType t = c.in(i).dtype();
  AICC_CHECK(isFloat(t), "input {} has element type {}, expected a floating-point type", i,
             dtypeName(t));
}

} // namespace aicc
