// ImageDecoder: encoded bytes (uint8 1-D) -> HWC uint8 image in RGB, BGR or Grayscale.
// JPEG is decoded with libjpeg(-turbo) (ISLOW DCT, fancy upsampling: the spec's reference
// behavior), PNG with libpng; BMP, PNM (P1-P6) and baseline TIFF (uncompressed or PackBits) are
// decoded here, WebP with libwebp and JPEG 2000 with openjpeg (image_codecs.cpp). As the spec
// says, a stream that cannot be decoded (corrupt, or not an image at all) gives an empty image
// [0, 0, C]. Grayscale follows ITU-R 601-2 luma with the rounding Pillow uses (the reference).
#include "ops/image_decode.h"
#include "ops/misc.h"

#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <optional>

#include <jpeglib.h>
#include <png.h>

namespace aicc {
namespace {

using image::Image;
using image::sizeOk;
using image::tooLarge;
using CorruptImage = image::Corrupt;

enum class ReadResult { Ok, Corrupt, TooLarge, Cmyk };

// ---- JPEG (libjpeg) ----------------------------------------------------------------------------

struct JpegErr {
  jpeg_error_mgr mgr;
  std::jmp_buf jb;
};

void jpegErrorExit(j_common_ptr ci) { std::longjmp(reinterpret_cast<JpegErr*>(ci->err)->jb, 1); }
void jpegQuiet(j_common_ptr) {}

// Decodes with libjpeg; its errors longjmp back here (nothing with a destructor lives in the
// frames they skip).
ReadResult jpegRead(jpeg_decompress_struct* ci, JpegErr* err, const uint8_t* data, size_t n,
                    Image* img) {
  ci->err = jpeg_std_error(&err->mgr);
  err->mgr.error_exit = jpegErrorExit;
  err->mgr.output_message = jpegQuiet;
  if (setjmp(err->jb)) {
    jpeg_destroy_decompress(ci);
    return ReadResult::Corrupt;
  }
  jpeg_create_decompress(ci);
  jpeg_mem_src(ci, data, static_cast<unsigned long>(n));
  jpeg_read_header(ci, TRUE);
  if (ci->jpeg_color_space == JCS_CMYK || ci->jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(ci);
    return ReadResult::Cmyk;
  }
  ci->out_color_space = ci->num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  ci->dct_method = JDCT_ISLOW;
  ci->do_fancy_upsampling = TRUE;
  jpeg_start_decompress(ci);
  if (ci->output_width == 0 || ci->output_height == 0 ||
      !sizeOk(ci->output_height, ci->output_width)) {
    jpeg_destroy_decompress(ci);
    return ci->output_width == 0 || ci->output_height == 0 ? ReadResult::Corrupt
                                                           : ReadResult::TooLarge;
  }
  img->alloc(ci->output_height, ci->output_width, ci->output_components);
  while (ci->output_scanline < ci->output_height) {
    JSAMPROW row = img->px.data() +
                   static_cast<size_t>(ci->output_scanline) * static_cast<size_t>(img->w * img->c);
    jpeg_read_scanlines(ci, &row, 1);
  }
  jpeg_finish_decompress(ci);
  jpeg_destroy_decompress(ci);
  return ReadResult::Ok;
}

// The result of a library decoder as the op reports it.
std::optional<Image> finish(ReadResult r, Image img) {
  if (r == ReadResult::TooLarge) tooLarge();
  AICC_CHECK(r != ReadResult::Cmyk, "CMYK/YCCK JPEG images are not supported");
  if (r != ReadResult::Ok) return std::nullopt;
  return img;
}

std::optional<Image> decodeJpeg(const uint8_t* data, size_t n) {
  jpeg_decompress_struct ci{};
  JpegErr err{};
  Image img;
  ReadResult r = jpegRead(&ci, &err, data, n, &img);
  return finish(r, std::move(img));
}

// ---- PNG (libpng) ------------------------------------------------------------------------------

struct PngSrc {
  const uint8_t* data;
  size_t n, at;
};

void pngRead(png_structp png, png_bytep out, size_t len) {
  auto* s = static_cast<PngSrc*>(png_get_io_ptr(png));
  if (len > s->n - s->at) png_error(png, "truncated PNG stream");
  std::memcpy(out, s->data + s->at, len);
  s->at += len;
}
void pngError(png_structp png, png_const_charp) { png_longjmp(png, 1); }
void pngWarning(png_structp, png_const_charp) {}

ReadResult pngReadAll(png_structp png, png_infop info, PngSrc* src, Image* img,
                      std::vector<png_bytep>* rows) {
  if (setjmp(png_jmpbuf(png))) return ReadResult::Corrupt;
  png_set_read_fn(png, src, pngRead);
  png_read_info(png, info);
  const int colorType = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  if (colorType == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (colorType == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_strip_16(png);
  if (colorType & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  const int ch = png_get_channels(png, info);
  if (w == 0 || h == 0 || (ch != 1 && ch != 3) ||
      png_get_rowbytes(png, info) != static_cast<size_t>(w) * static_cast<size_t>(ch))
    return ReadResult::Corrupt;
  if (!sizeOk(h, w)) return ReadResult::TooLarge;
  img->alloc(h, w, ch);
  rows->resize(h);
  for (png_uint_32 y = 0; y < h; ++y)
    (*rows)[y] = img->px.data() + static_cast<size_t>(y) * w * static_cast<size_t>(ch);
  png_read_image(png, rows->data());
  png_read_end(png, nullptr);
  return ReadResult::Ok;
}

std::optional<Image> decodePng(const uint8_t* data, size_t n) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, pngError, pngWarning);
  AICC_CHECK(png, "libpng: out of memory");
  png_infop info = png_create_info_struct(png);
  PngSrc src{data, n, 0};
  Image img;
  std::vector<png_bytep> rows;
  ReadResult r = info ? pngReadAll(png, info, &src, &img, &rows) : ReadResult::Corrupt;
  png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
  return finish(r, std::move(img));
}

// ---- Byte reader for the formats decoded here
// ----------------------------------------------------

struct Bytes {
  const uint8_t* p;
  size_t n;
  bool bigEndian = false;
  uint8_t u8(size_t at) const {
    if (at >= n) throw CorruptImage{};
    return p[at];
  }
  uint32_t u16(size_t at) const {
    uint32_t a = u8(at), b = u8(at + 1);
    return bigEndian ? (a << 8 | b) : (b << 8 | a);
  }
  uint32_t u32(size_t at) const {
    uint32_t a = u16(at), b = u16(at + 2);
    return bigEndian ? (a << 16 | b) : (b << 16 | a);
  }
};

// ---- BMP ---------------------------------------------------------------------------------------

// Scales a `bits`-wide channel value to 8 bits.
uint8_t scaleTo8(uint32_t v, int bits) {
  if (bits <= 0) return 0;
  if (bits >= 8) return static_cast<uint8_t>(v >> (bits - 8));
  uint32_t mx = (1u << bits) - 1;
  return static_cast<uint8_t>((v * 255 + mx / 2) / mx);
}

struct Field {
  uint32_t mask;
  int shift = 0, bits = 0;
  explicit Field(uint32_t m) : mask(m) {
    if (!m) return;
    while (!((m >> shift) & 1u)) ++shift;
    while (shift + bits < 32 && ((m >> (shift + bits)) & 1u)) ++bits;
  }
  uint8_t get(uint32_t px) const { return scaleTo8((px & mask) >> shift, bits); }
};

Image decodeBmp(const Bytes& b) {
  const uint32_t dataOff = b.u32(10), hdr = b.u32(14);
  int64_t w, h;
  uint32_t bpp, comp = 0, colors = 0;
  size_t palOff = 14 + hdr, palEntry = 4;
  if (hdr == 12) { // OS/2 BITMAPCOREHEADER
    w = b.u16(18), h = static_cast<int16_t>(b.u16(20)), bpp = b.u16(24);
    palEntry = 3;
  } else {
    if (hdr < 40) throw CorruptImage{};
    w = static_cast<int32_t>(b.u32(18)), h = static_cast<int32_t>(b.u32(22));
    bpp = b.u16(28), comp = b.u32(30), colors = b.u32(46);
  }
  AICC_CHECK(comp == 0 || comp == 3,
             "BMP compression {} (RLE / embedded JPEG or PNG) is not "
             "supported",
             comp);
  uint32_t masks[3] = {0x7c00, 0x3e0, 0x1f};
  if (bpp == 32 || bpp == 24) masks[0] = 0xff0000, masks[1] = 0xff00, masks[2] = 0xff;
  if (comp == 3) {
    // File offset 54: right after a 40-byte header, or inside a v2..v5 header.
    for (int i = 0; i < 3; ++i) masks[i] = b.u32(54 + 4 * static_cast<size_t>(i));
    if (hdr == 40) palOff += 12;
  }
  const bool topDown = h < 0;
  if (h < 0) h = -h;
  if (w <= 0 || h <= 0) throw CorruptImage{};
  Image img;
  img.alloc(h, w, 3);
  std::vector<uint8_t> pal;
  if (bpp <= 8) {
    AICC_CHECK(bpp == 1 || bpp == 4 || bpp == 8, "BMP with {} bits per pixel", bpp);
    size_t nc = colors ? colors : (size_t{1} << bpp);
    if (nc > 256) throw CorruptImage{};
    for (size_t i = 0; i < nc; ++i) // stored B, G, R
      for (int k = 2; k >= 0; --k)
        pal.push_back(b.u8(palOff + i * palEntry + static_cast<size_t>(k)));
  } else {
    AICC_CHECK(bpp == 16 || bpp == 24 || bpp == 32, "BMP with {} bits per pixel", bpp);
  }
  const Field fr(masks[0]), fg(masks[1]), fb(masks[2]);
  const size_t stride = (static_cast<size_t>(w) * bpp + 31) / 32 * 4;
  for (int64_t y = 0; y < h; ++y) {
    const size_t row = dataOff + static_cast<size_t>(topDown ? y : h - 1 - y) * stride;
    uint8_t* out = img.px.data() + static_cast<size_t>(y * w * 3);
    for (int64_t x = 0; x < w; ++x, out += 3) {
      const auto ux = static_cast<size_t>(x);
      if (bpp <= 8) {
        const size_t bit = ux * bpp;
        uint32_t idx = (b.u8(row + bit / 8) >> (8 - bpp - bit % 8)) & ((1u << bpp) - 1);
        if (idx * 3 + 2 >= pal.size()) throw CorruptImage{};
        std::memcpy(out, pal.data() + idx * 3, 3);
        continue;
      }
      uint32_t px =
          bpp == 16 ? b.u16(row + ux * 2)
          : bpp == 24
              ? (b.u8(row + ux * 3 + 2) << 16 | b.u8(row + ux * 3 + 1) << 8 | b.u8(row + ux * 3))
              : b.u32(row + ux * 4);
      out[0] = fr.get(px), out[1] = fg.get(px), out[2] = fb.get(px);
    }
  }
  return img;
}

// ---- PNM (P1..P6) ------------------------------------------------------------------------------

Image decodePnm(const Bytes& b) {
  const int kind = b.u8(1) - '0';
  size_t at = 2;
  auto skipSpace = [&] {
    for (;;) {
      uint8_t ch = b.u8(at);
      if (ch == '#')
        while (b.u8(at) != '\n' && b.u8(at) != '\r') ++at;
      else if (std::isspace(ch))
        ++at;
      else
        return;
    }
  };
  auto number = [&] {
    skipSpace();
    uint64_t v = 0;
    if (!std::isdigit(b.u8(at))) throw CorruptImage{};
    while (at < b.n && std::isdigit(b.p[at])) {
      v = v * 10 + (b.p[at++] - '0');
      if (v > (1u << 20)) throw CorruptImage{};
    }
    return static_cast<uint32_t>(v);
  };
  const bool bitmap = kind == 1 || kind == 4, ascii = kind <= 3;
  const int64_t w = number(), h = number();
  const uint32_t maxval = bitmap ? 1 : number();
  if (maxval == 0 || maxval > 65535) throw CorruptImage{};
  const int64_t ch = (kind == 3 || kind == 6) ? 3 : 1;
  Image img;
  img.alloc(h, w, ch);
  if (!ascii) ++at; // exactly one whitespace byte before the raster
  const size_t n = img.px.size();
  if (kind == 4) { // packed bits, rows padded to bytes, 1 = black
    const size_t rowBytes = (static_cast<size_t>(w) + 7) / 8;
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        uint8_t byte = b.u8(at + static_cast<size_t>(y) * rowBytes + static_cast<size_t>(x / 8));
        img.px[static_cast<size_t>(y * w + x)] = ((byte >> (7 - x % 8)) & 1) ? 0 : 255;
      }
    return img;
  }
  for (size_t i = 0; i < n; ++i) {
    uint32_t v;
    if (kind == 1) {
      skipSpace(); // samples may be unseparated single digits
      uint8_t d = b.u8(at++);
      if (d != '0' && d != '1') throw CorruptImage{};
      img.px[i] = d == '1' ? 0 : 255;
      continue;
    }
    if (ascii)
      v = number();
    else if (maxval < 256)
      v = b.u8(at + i);
    else
      v = static_cast<uint32_t>(b.u8(at + 2 * i)) << 8 | b.u8(at + 2 * i + 1);
    v = std::min(v, maxval);
    img.px[i] = maxval == 255 ? static_cast<uint8_t>(v)
                              : static_cast<uint8_t>((v * 255 + maxval / 2) / maxval);
  }
  return img;
}

// ---- TIFF (baseline: uncompressed or PackBits, chunky 8-bit RGB / gray / palette, bilevel) ----

Image decodeTiff(Bytes b) {
  b.bigEndian = b.u8(0) == 'M';
  const size_t ifd = b.u32(4);
  const uint32_t count = b.u16(ifd);
  // tag -> (type, count, offset of the value field)
  std::map<uint32_t, std::tuple<uint32_t, uint32_t, size_t>> tags;
  for (uint32_t i = 0; i < count; ++i) {
    size_t e = ifd + 2 + 12 * static_cast<size_t>(i);
    tags[b.u16(e)] = {b.u16(e + 2), b.u32(e + 4), e + 8};
  }
  auto typeSize = [](uint32_t t) -> size_t { return t == 3 ? 2 : t == 4 ? 4 : t == 1 ? 1 : 0; };
  auto values = [&](uint32_t tag) {
    std::vector<uint32_t> v;
    auto it = tags.find(tag);
    if (it == tags.end()) return v;
    auto [type, cnt, field] = it->second;
    size_t sz = typeSize(type);
    if (sz == 0 || cnt > (1u << 20)) throw CorruptImage{};
    size_t at = sz * cnt <= 4 ? field : b.u32(field);
    for (uint32_t i = 0; i < cnt; ++i) {
      size_t a = at + i * sz;
      v.push_back(sz == 1 ? b.u8(a) : sz == 2 ? b.u16(a) : b.u32(a));
    }
    return v;
  };
  auto one = [&](uint32_t tag, uint32_t dflt) {
    auto v = values(tag);
    return v.empty() ? dflt : v[0];
  };
  const int64_t w = one(256, 0), h = one(257, 0);
  const uint32_t spp = one(277, 1), comp = one(259, 1), photo = one(262, 1);
  std::vector<uint32_t> bps = values(258);
  if (bps.empty()) bps.push_back(1);
  AICC_CHECK(comp == 1 || comp == 32773,
             "TIFF compression {} is not supported (only none and PackBits)", comp);
  AICC_CHECK(one(284, 1) == 1, "planar TIFF images are not supported");
  const uint32_t depth = bps[0];
  for (uint32_t d : bps) AICC_CHECK(d == depth, "TIFF with mixed bits per sample");
  AICC_CHECK((depth == 8 && (photo <= 3)) || (depth == 1 && photo <= 1),
             "TIFF with {} bits per sample and photometric interpretation {} is not supported",
             depth, photo);
  const bool rgb = photo == 2;
  if ((rgb && spp < 3) || (!rgb && spp < 1)) throw CorruptImage{};
  const std::vector<uint32_t> offsets = values(273), counts = values(279);
  if (offsets.empty() || offsets.size() != counts.size()) throw CorruptImage{};
  // Decompress all strips into one raster.
  const size_t rowBytes = (static_cast<size_t>(w) * spp * depth + 7) / 8;
  std::vector<uint8_t> raster;
  for (size_t s = 0; s < offsets.size(); ++s) {
    size_t at = offsets[s], end = at + counts[s];
    if (end > b.n || end < at) throw CorruptImage{};
    if (comp == 1) {
      raster.insert(raster.end(), b.p + at, b.p + end);
      continue;
    }
    while (at < end) { // PackBits
      auto hdr = static_cast<int8_t>(b.u8(at++));
      if (hdr >= 0)
        for (int i = 0; i <= hdr; ++i) raster.push_back(b.u8(at++));
      else if (hdr != -128) {
        uint8_t v = b.u8(at++);
        raster.insert(raster.end(), static_cast<size_t>(1 - hdr), v);
      }
    }
  }
  if (raster.size() < rowBytes * static_cast<size_t>(h)) throw CorruptImage{};
  std::vector<uint32_t> cmap = photo == 3 ? values(320) : std::vector<uint32_t>{};
  if (photo == 3 && cmap.size() != 3 * 256) throw CorruptImage{};
  Image img;
  img.alloc(h, w, rgb || photo == 3 ? 3 : 1);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const uint8_t* row = raster.data() + static_cast<size_t>(y) * rowBytes;
      uint8_t* out = img.px.data() + static_cast<size_t>((y * w + x) * img.c);
      const auto ux = static_cast<size_t>(x);
      if (depth == 1) {
        bool bit = (row[ux / 8] >> (7 - ux % 8)) & 1;
        out[0] = (bit != (photo == 0)) ? 255 : 0;
      } else if (rgb) {
        std::memcpy(out, row + ux * spp, 3);
      } else if (photo == 3) {
        uint8_t idx = row[ux * spp];
        for (size_t k = 0; k < 3; ++k) out[k] = static_cast<uint8_t>(cmap[k * 256 + idx] >> 8);
      } else {
        uint8_t v = row[ux * spp];
        out[0] = photo == 0 ? static_cast<uint8_t>(255 - v) : v;
      }
    }
  return img;
}

// ---- The op ------------------------------------------------------------------------------------

bool startsWith(const Bytes& b, std::string_view magic, size_t at = 0) {
  if (b.n < at + magic.size()) return false;
  return std::memcmp(b.p + at, magic.data(), magic.size()) == 0;
}

std::optional<Image> decodeAny(const Bytes& b) {
  try {
    if (startsWith(b, "\xff\xd8\xff")) return decodeJpeg(b.p, b.n);
    if (startsWith(b, "\x89PNG\r\n\x1a\n")) return decodePng(b.p, b.n);
    if (startsWith(b, "BM")) return decodeBmp(b);
    if (b.n >= 2 && b.p[0] == 'P' && b.p[1] >= '1' && b.p[1] <= '6') return decodePnm(b);
    if (startsWith(b, std::string_view("II*\0", 4)) || startsWith(b, std::string_view("MM\0*", 4)))
      return decodeTiff(b);
    if (startsWith(b, "RIFF") && startsWith(b, "WEBP", 8)) return image::decodeWebp(b.p, b.n);
    if (startsWith(b, std::string_view("\0\0\0\x0cjP  ", 8)) || startsWith(b, "\xff\x4f\xff\x51"))
      return image::decodeJpeg2000(b.p, b.n);
  } catch (const CorruptImage&) {
    return std::nullopt;
  }
  return std::nullopt; // not a known image format
}

std::vector<RValue> imageDecoderKernel(KernelCtx& c) {
  const Tensor& x = c.in(0);
  requireDType(c, 0, {DType::U8});
  AICC_CHECK(x.rank() == 1, "encoded_stream must be 1-D, got {}", formatDims(x.shape()));
  const std::string fmt = c.node.attrString("pixel_format");
  AICC_CHECK(fmt == "RGB" || fmt == "BGR" || fmt == "Grayscale",
             "pixel_format '{}' is not RGB, BGR or Grayscale", fmt);
  const int64_t outC = fmt == "Grayscale" ? 1 : 3;
  std::optional<Image> img =
      decodeAny(Bytes{x.data<uint8_t>(), static_cast<size_t>(x.numel()), false});
  if (!img) return {RValue::of(Tensor(DType::U8, {0, 0, outC}))};
  Tensor y(DType::U8, {img->h, img->w, outC});
  uint8_t* out = y.data<uint8_t>();
  const uint8_t* in = img->px.data();
  for (int64_t i = 0; i < img->h * img->w; ++i, in += img->c, out += outC) {
    if (outC == 1)
      out[0] = img->c == 1 ? in[0]
                           : static_cast<uint8_t>(
                                 (in[0] * 19595u + in[1] * 38470u + in[2] * 7471u + 0x8000u) >> 16);
    else if (img->c == 1)
      out[0] = out[1] = out[2] = in[0];
    else if (fmt == "BGR")
      out[0] = in[2], out[1] = in[1], out[2] = in[0];
    else
      out[0] = in[0], out[1] = in[1], out[2] = in[2];
  }
  return {RValue::of(y)};
}

void inferImageDecoder(InferCtx& c) {
  const std::string fmt = c.node.attrString("pixel_format");
  AICC_CHECK(fmt == "RGB" || fmt == "BGR" || fmt == "Grayscale",
             "pixel_format '{}' is not RGB, BGR or Grayscale", fmt);
  c.setTensor(0, DType::U8, Shape{Dim{}, Dim{}, Dim::known(fmt == "Grayscale" ? 1 : 3)});
}

} // namespace

void registerMiscImageOps(OpRegistry& r) {
  r.op("ImageDecoder")
      .since(20)
      .inputs(1, 1)
      .attrString("pixel_format", "RGB")
      .infer(inferImageDecoder)
      .kernel(imageDecoderKernel);
}

} // namespace aicc
