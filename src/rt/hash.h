// A fast non-cryptographic 64-bit content hash (four independent multiply-rotate lanes over 8-byte
// words, then a final avalanche), for detecting damaged or mismatched files: a compiled artifact's
// plan records the hash of its model.so and model.weights, and the loader compares before it maps
// or uses either. Not a defence against a deliberate forgery (a forged model.so runs its own code
// anyway); its job is to turn truncation, bit rot and mixed-up folders into an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace aicc {

inline uint64_t hashBytes(const void* data, size_t n) {
  constexpr uint64_t k1 = 0x9E3779B185EBCA87ull, k2 = 0xC2B2AE3D27D4EB4Full;
  auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  auto round = [&](uint64_t acc, uint64_t w) { return rotl(acc + w * k2, 31) * k1; };
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t lane[4] = {k1 + k2, k2, 0, 0 - k1};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int l = 0; l < 4; ++l) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * l, 8);
      lane[l] = round(lane[l], w);
    }
  uint64_t h = rotl(lane[0], 1) + rotl(lane[1], 7) + rotl(lane[2], 12) + rotl(lane[3], 18) + n;
  for (; i < n; ++i) h = rotl(h ^ (p[i] * k1), 11) * k2;
  h ^= h >> 33;
  h *= k2;
  h ^= h >> 29;
  h *= k1;
  return h ^ (h >> 32);
}

// The hash as 16 lowercase hex digits, as artifact plans record it.
inline std::string hashHex(const void* data, size_t n) {
  static const char digits[] = "0123456789abcdef";
  uint64_t h = hashBytes(data, n);
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) s[size_t(i)] = digits[h & 15];
  return s;
}

} // namespace aicc
