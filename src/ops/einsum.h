// Einsum's equation, parsed (ops/reduction_einsum.cpp): what the reference kernel and the loop
// lowering (loop/lower_einsum.cpp) both walk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aicc {

// Label ids: 0..51 the letters (A-Z, a-z), kEinsumEllipsis + k the k-th ellipsis dim
// (right-aligned across the operands).
constexpr int kEinsumEllipsis = 52;

struct EinsumSpec {
  std::vector<std::vector<int>> in; // label ids of each operand dim
  std::vector<int> out;             // label ids of the output dims
};

// The explicit ("ij,jk->ik") or implicit ("ij,jk": the ellipsis dims, then the labels used
// exactly once, in ASCII order) equation for operands of these ranks. Throws aicc::Error naming
// the equation when it is malformed or does not fit the ranks.
EinsumSpec parseEinsum(std::string eq, const std::vector<int64_t>& ranks);

} // namespace aicc
