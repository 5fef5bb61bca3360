// Shared by the fuzz targets: an input is accepted when the code under test returns or throws
// aicc::Error; anything else (another exception type, a signal, a sanitizer report) is a bug and
// escapes to libFuzzer (or the standalone driver), which reports it as a crash.
#pragma once

#include "frontend/onnx/onnx_importer.h"
#include "ops/op_def.h"
#include "support/error.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace aicc::fuzz {

// AICC_FUZZ_VERBOSE=1: print the message of every rejected input (why was it rejected?).
inline void rejected(const aicc::Error& e) {
  static const bool verbose = std::getenv("AICC_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "fuzz: rejected: %s\n", e.what());
}

template <typename F> int guarded(F&& f) {
  try {
    f();
  } catch (const aicc::Error& e) {
    rejected(e);
  }
  return 0;
}

// A property the target checks failed: report it and abort (a crash for libFuzzer).
[[noreturn]] inline void bug(const std::string& what) {
  std::fprintf(stderr, "fuzz: BUG: %s\n", what.c_str());
  std::abort();
}

inline std::string_view text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Imports the bytes as an ONNX model, or nothing when the importer rejects them. External data is
// looked up in a folder that does not exist.
inline std::optional<ImportedModel> importModel(const uint8_t* data, size_t size) {
  try {
    return importOnnxBytes(std::string(text(data, size)), "/nonexistent/aicc-fuzz");
  } catch (const aicc::Error& e) {
    rejected(e);
    return std::nullopt;
  }
}

// Reads every byte (and string) of a value, so that a tensor viewing memory it does not own, or
// claiming more elements than it holds, is caught by the sanitizers.
inline uint64_t touch(const Tensor& t) {
  uint64_t h = 0;
  if (t.dtype() == DType::String) {
    for (int64_t i = 0; i < t.numel(); ++i) h += t.strings()[i].size();
    return h;
  }
  const auto* p = static_cast<const uint8_t*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); ++i) h = h * 31 + p[i];
  return h;
}

inline uint64_t touch(const RValue& v) {
  uint64_t h = touch(v.tensor);
  for (const Tensor& t : v.seq) h += touch(t);
  return h;
}

// Keeps a computed value alive (the reads above must not be optimized away).
inline void keep(uint64_t h) {
  static volatile uint64_t sink;
  sink = sink + h;
}

} // namespace aicc::fuzz
