// The per-iteration copies of a compiled Scan or Loop (runtime/artifact_build.cpp emits the body
// as a `repeat` region of the task sequence): slice i of a scan input into the body's input
// buffer, and the body's slice into row i of a scan output, along an axis, forward or reversed.
#pragma once

#include "loop/ir.h"

namespace aicc::loop {

// A task function with params (full: dims `full`, slice: `full` without `axis`, index: i64[1],
// length: i64[1]): copies the slice at the index along `axis` (at length-1-index when `reverse`)
// out of `full` into `slice` (`toSlice`), or from `slice` into it. `full` is dense at the run's
// length along `axis` (a symbolic sequence length: `full` holds its bound, the dims given); the
// length and index are clamped into it.
Func sliceCopyFunc(const std::string& name, DType t, const Dims& full, size_t axis, bool reverse,
                   bool toSlice);

} // namespace aicc::loop
