// ImageDecoder's WebP (libwebp) and JPEG 2000 (openjpeg: JP2 files and raw J2K codestreams)
// decoders, with the defaults of Pillow, the spec's reference: WebP with fancy upsampling, alpha
// dropped; JPEG 2000 at full resolution, components of more than 8 bits scaled down to 8.
#include "ops/image_decode.h"

#include <cstring>

#include <openjpeg.h>
#include <webp/decode.h>

namespace aicc::image {

std::optional<Image> decodeWebp(const uint8_t* data, size_t n) {
  int w = 0, h = 0;
  if (!WebPGetInfo(data, n, &w, &h)) return std::nullopt;
  Image img;
  img.alloc(h, w, 3);
  if (!WebPDecodeRGBInto(data, n, img.px.data(), img.px.size(), w * 3)) return std::nullopt;
  return img;
}

namespace {

struct Source {
  const uint8_t* p;
  size_t n, at = 0;
};

OPJ_SIZE_T readFn(void* out, OPJ_SIZE_T len, void* user) {
  auto* s = static_cast<Source*>(user);
  if (s->at >= s->n) return OPJ_SIZE_T(-1); // end of stream
  const size_t k = std::min(len, s->n - s->at);
  std::memcpy(out, s->p + s->at, k);
  s->at += k;
  return k;
}
OPJ_OFF_T skipFn(OPJ_OFF_T len, void* user) {
  auto* s = static_cast<Source*>(user);
  if (len < 0 || size_t(len) > s->n - s->at) return -1;
  s->at += size_t(len);
  return len;
}
OPJ_BOOL seekFn(OPJ_OFF_T to, void* user) {
  auto* s = static_cast<Source*>(user);
  if (to < 0 || size_t(to) > s->n) return OPJ_FALSE;
  s->at = size_t(to);
  return OPJ_TRUE;
}
void quiet(const char*, void*) {}

// Owns openjpeg's objects.
struct Decoder {
  opj_stream_t* stream = nullptr;
  opj_codec_t* codec = nullptr;
  opj_image_t* image = nullptr;
  ~Decoder() {
    if (image) opj_image_destroy(image);
    if (codec) opj_destroy_codec(codec);
    if (stream) opj_stream_destroy(stream);
  }
};

} // namespace

std::optional<Image> decodeJpeg2000(const uint8_t* data, size_t n) {
  const bool jp2 = n >= 12 && std::memcmp(data, "\0\0\0\x0cjP  ", 8) == 0;
  Source src{data, n};
  Decoder d;
  d.stream = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
  d.codec = opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
  AICC_CHECK(d.stream && d.codec, "openjpeg: out of memory");
  opj_stream_set_user_data(d.stream, &src, nullptr);
  opj_stream_set_user_data_length(d.stream, n);
  opj_stream_set_read_function(d.stream, readFn);
  opj_stream_set_skip_function(d.stream, skipFn);
  opj_stream_set_seek_function(d.stream, seekFn);
  opj_set_error_handler(d.codec, quiet, nullptr);
  opj_set_warning_handler(d.codec, quiet, nullptr);
  opj_set_info_handler(d.codec, quiet, nullptr);
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  if (!opj_setup_decoder(d.codec, &params) || !opj_read_header(d.stream, d.codec, &d.image))
    return std::nullopt;
  const opj_image_t& im = *d.image;
  const int64_t w = int64_t(im.x1) - im.x0, h = int64_t(im.y1) - im.y0;
  if (w <= 0 || h <= 0) return std::nullopt;
  if (!sizeOk(h, w)) tooLarge(); // before decoding the pixels
  if (!opj_decode(d.codec, d.stream, d.image) || !opj_end_decompress(d.codec, d.stream))
    return std::nullopt;
  // Gray (+ alpha) or RGB (+ alpha), every component at full resolution.
  const uint32_t comps = im.numcomps;
  if (comps == 0 || comps > 4) return std::nullopt;
  const int64_t c = comps <= 2 ? 1 : 3;
  for (uint32_t k = 0; k < c; ++k)
    if (!im.comps[k].data || im.comps[k].w != uint32_t(w) || im.comps[k].h != uint32_t(h) ||
        im.comps[k].prec == 0 || im.comps[k].prec > 16)
      return std::nullopt;
  Image img;
  img.alloc(h, w, c);
  for (int64_t k = 0; k < c; ++k) {
    const opj_image_comp_t& comp = im.comps[k];
    const int shift = comp.prec > 8 ? int(comp.prec) - 8 : 0;
    const int32_t offset = comp.sgnd ? 1 << (comp.prec - 1) : 0;
    for (int64_t i = 0; i < h * w; ++i) {
      int32_t v = ((comp.data[i] + offset) >> shift) << (comp.prec < 8 ? 8 - comp.prec : 0);
      img.px[size_t(i * c + k)] = uint8_t(std::clamp(v, 0, 255));
    }
  }
  return img;
}

} // namespace aicc::image
