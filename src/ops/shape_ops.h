// The shape / data-movement op family, split over several files:
//   shape_ops.cpp     Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Shape, Size, Identity,
//                     Constant, ConstantOfShape, Expand, Tile, Range
//   shape_slice.cpp   Concat, Split, Slice, Gather, GatherElements, GatherND, ScatterND,
//                     ScatterElements (Scatter), Compress, NonZero
//   shape_misc.cpp    Pad, CenterCropPad, OneHot, Unique, Trilu, ReverseSequence, DepthToSpace,
//                     SpaceToDepth, EyeLike
//   shape_resize.cpp  Resize (Upsample upgraded to Resize)
//   shape_grid.cpp    GridSample, Col2Im
//   shape_util.cpp    the helpers below
// Data propagation of small integer tensors (Shape -> Gather -> Concat -> Reshape) is handled by
// these ops' inference rules through InferCtx::shapeValue / setShapeValue.
#pragma once

#include "ops/helpers.h"

#include <optional>

namespace aicc {

void registerShapeSliceOps(OpRegistry& r);
void registerShapeMiscOps(OpRegistry& r);
void registerShapeResizeOps(OpRegistry& r);
void registerShapeGridOps(OpRegistry& r);

// ---- Kernel helpers --------------------------------------------------------------------------

// Copies `n` consecutive elements src[srcOff..] -> dst[dstOff..] (same element type, any type
// including strings). Offsets are trusted: callers validate them.
void copyElems(const Tensor& src, int64_t srcOff, Tensor& dst, int64_t dstOff, int64_t n);
// out[i_0..i_k] = in[base + sum_d i_d * strides[d]] over every index of `outShape` (strides may be
// 0 or negative). Checks that every access stays inside `in`. Contiguous runs are memcpy'd.
Tensor stridedCopy(const Tensor& in, int64_t base, const Dims& outShape, const Dims& strides);
// Normalizes an index into [0, dim) (negative wraps once); throws naming `what` otherwise.
int64_t wrapIndex(int64_t idx, int64_t dim, const char* what);
// The node's "axis" attribute normalized for a tensor of rank `rank` (which must be >= 1).
size_t axisAttr(const Node& n, int64_t rank);
// Product of dims[from, to).
int64_t prodDims(const Dims& d, size_t from, size_t to);
// The dims [first, last) of a rank-`rank` tensor a Shape node `n` returns (its start and end,
// negative from the end, clamped).
std::pair<int64_t, int64_t> shapeRange(const Node& n, int64_t rank);

// The value of a Constant node (from whichever value_* attribute it has).
Tensor constantValue(const Node& n);

// ---- Inference helpers -----------------------------------------------------------------------

// The integer contents of input i when known: a constant, or a data-propagated value with every
// entry known. (A propagated entry that is Dim{} is unknown: it may also be a literal -1.)
std::optional<std::vector<int64_t>> knownInts(InferCtx& c, size_t i);
// a * b over symbolic dims: static products, x*1 = x, unknown otherwise.
Dim mulDim(const Dim& a, const Dim& b);
// The rank of input i when its shape is known.
std::optional<int64_t> inRank(InferCtx& c, size_t i);
// The number of elements of a 1-D input when statically known (e.g. the length of a shape input).
std::optional<int64_t> inLength1D(InferCtx& c, size_t i);

} // namespace aicc
