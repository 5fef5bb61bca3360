// Whole-file reads and writes for the compiler and its tools (the runtime, which has no fmt, reads
// its files with rt/artifact.cpp's own checks).
#pragma once

#include <string>
#include <string_view>

namespace aicc {

// The bytes of the file at path; throws aicc::Error naming it when it cannot be opened or read.
std::string readFile(const std::string& path);

// Writes bytes to path (created or truncated); throws aicc::Error naming it when that fails.
void writeFile(const std::string& path, std::string_view bytes);

} // namespace aicc
