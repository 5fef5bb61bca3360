// Control-flow family, shared pieces: sequence and optional ops (registered from
// control_flow_seq.cpp) and the tensor/type helpers If, Loop, Scan and the sequence ops share.
#pragma once

#include "ops/op_def.h"

namespace aicc {

// Sequence ops (SequenceConstruct/Empty/At/Insert/Erase/Length, ConcatFromSequence,
// SplitToSequence, SequenceMap) and optional ops (Optional, OptionalHasElement,
// OptionalGetElement). Called by registerControlFlowOps.
void registerSequenceOps(OpRegistry& r);

// The least precise type covering both `a` and `b` (the type of a value that is either): dims that
// differ become unknown, different ranks drop the shape, different kinds give Unknown.
Type unionType(const Type& a, const Type& b);

// Sets the declared type of subgraph input `v` to `t`, merged with what the model declared.
void setSubgraphInputType(Value* v, const Type& t);

// Concatenates tensors of one dtype along `axis` (all other dims equal).
Tensor concatTensors(const std::vector<Tensor>& parts, int64_t axis);
// Stacks tensors of one dtype and shape along a new axis `axis` (in [0, rank]).
Tensor stackTensors(const std::vector<Tensor>& parts, int64_t axis);
// The slice x[..., index, ...] along `axis`, with that axis removed.
Tensor sliceAlong(const Tensor& x, int64_t axis, int64_t index);

// The scalar truth value of a bool (or numeric) tensor with exactly one element.
bool scalarTruth(const Tensor& t, const char* what);

} // namespace aicc
