// The per-iteration copies of a compiled Scan or Loop, and the check of a Loop's run-time trip
// count against its scan outputs' rows (runtime/artifact_build.cpp emits the body
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

// A task function with params (count: i64[1], [cond: bool[1]], given: an i64[1] temp): the
// runtime's check (@check_values_i64) that a Loop whose body passes its condition on unchanged
// runs `rows` iterations: its trip count, or none when the first condition is false.
Func tripCountCheckFunc(int64_t rows, bool withCond);

} // namespace aicc::loop
