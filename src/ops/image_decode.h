// Shared by the ImageDecoder's decoders (misc_image.cpp: JPEG, PNG, BMP, PNM, TIFF;
// image_codecs.cpp: WebP, JPEG 2000): the decoded image and the size limit.
#pragma once

#include "support/error.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace aicc::image {

struct Corrupt {}; // thrown by the decoders (never across a C library)

// Images larger than this are refused with an error (not decoded to an empty image).
constexpr int64_t kMaxSide = 1 << 16, kMaxPixels = int64_t{1} << 28;
inline bool sizeOk(int64_t h, int64_t w) {
  return h <= kMaxSide && w <= kMaxSide && h * w <= kMaxPixels;
}
[[noreturn]] inline void tooLarge() {
  fail("the image is larger than {} pixels or {} pixels a side", kMaxPixels, kMaxSide);
}

// A decoded image with its native channel count (1 = gray, 3 = RGB), rows top to bottom.
struct Image {
  int64_t h = 0, w = 0, c = 0;
  std::vector<uint8_t> px;
  void alloc(int64_t height, int64_t width, int64_t channels) {
    if (height <= 0 || width <= 0) throw Corrupt{};
    if (!sizeOk(height, width)) tooLarge();
    h = height, w = width, c = channels;
    px.assign(static_cast<size_t>(h * w * c), 0);
  }
};

// nullopt: the stream cannot be decoded (the op then gives an empty image).
std::optional<Image> decodeWebp(const uint8_t* data, size_t n);     // libwebp
std::optional<Image> decodeJpeg2000(const uint8_t* data, size_t n); // openjpeg (JP2 or J2K)

} // namespace aicc::image
