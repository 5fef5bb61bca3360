// Byte table lookups: y = table[x ^ flip] for 8-bit x (flip 0x80 maps int8 -128..127 to indices
// 0..255), one table per channel. The compiled form of an elementwise region whose only operand is
// an 8-bit tensor and whose result is 8-bit (a QDQ model's DequantizeLinear -> Sigmoid ->
// QuantizeLinear, or a BatchNormalization between DQ and Q with its per-channel constants): a
// function of 256 values per channel, tabulated at compile time by the reference kernels
// (loop/lower.cpp). With AVX512-VBMI, 64 lookups per two vpermi2b and a blend; otherwise one load
// a byte.
#pragma once

#include <cstdint>

namespace aicc::kernels {

class ThreadPool;

// Whether this CPU runs the vector form (AVX512-VBMI and the OS's AVX-512 state).
bool lut8HasVector();
// x and y are [outer, channels, inner] bytes (they may be the same buffer), tables [channels][256]:
// y[o, c, i] = tables[c][x[o, c, i] ^ flip]. `vector` false forces the portable loop (tests).
// Split over `pool` when large.
void lut8(const uint8_t* x, const uint8_t* tables, uint8_t* y, int64_t outer, int64_t channels,
          int64_t inner, uint8_t flip, ThreadPool* pool, bool vector = true);

} // namespace aicc::kernels
