#include "tensor_io.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace aicc_run {

namespace {

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw std::runtime_error("'" + path + "': " + why);
}

std::vector<unsigned char> readAll(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) bad(path, std::string("cannot open: ") + std::strerror(errno));
  std::vector<unsigned char> out;
  unsigned char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.insert(out.end(), buf, buf + n);
  const bool ok = !std::ferror(f);
  std::fclose(f);
  if (!ok) bad(path, "read error");
  return out;
}

// The protobuf wire format: a cursor over a message.
struct Reader {
  const unsigned char *p, *end;
  const std::string& path;
  bool done() const { return p >= end; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) bad(path, "truncated varint (not a TensorProto)");
      const unsigned char b = *p++;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    bad(path, "malformed varint (not a TensorProto)");
  }
  Reader bytes() { // a length-delimited field's contents
    const uint64_t n = varint();
    if (n > uint64_t(end - p)) bad(path, "a field runs past the end (not a TensorProto)");
    Reader r{p, p + n, path};
    p += n;
    return r;
  }
  void skip(int wire) {
    switch (wire) {
    case 0:
      varint();
      return;
    case 1:
      fixed(8);
      return;
    case 2:
      bytes();
      return;
    case 5:
      fixed(4);
      return;
    default:
      bad(path, "unknown wire type " + std::to_string(wire) + " (not a TensorProto)");
    }
  }
  const unsigned char* fixed(size_t n) {
    if (size_t(end - p) < n) bad(path, "truncated field (not a TensorProto)");
    const unsigned char* at = p;
    p += n;
    return at;
  }
};

void putVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += char((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += char(v);
}

void putTag(std::string& out, int field, int wire) { putVarint(out, uint64_t(field) << 3 | wire); }

// Appends a varint-coded element of `bytes` bytes (int32_data / int64_data / uint64_data hold
// the values of narrower types too).
void appendInt(std::vector<unsigned char>& data, uint64_t v, int64_t bytes) {
  for (int64_t i = 0; i < bytes; ++i) data.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

HostTensor readPb(const std::string& path) {
  const auto file = readAll(path);
  Reader r{file.data(), file.data() + file.size(), path};
  HostTensor t;
  std::vector<unsigned char> raw, typed;
  bool hasRaw = false;
  int64_t nTyped = 0;
  while (!r.done()) {
    const uint64_t key = r.varint();
    const int field = int(key >> 3), wire = int(key & 7);
    auto ints = [&](auto each) { // a repeated varint field, packed or not
      if (wire == 2) {
        Reader in = r.bytes();
        while (!in.done()) each(in.varint());
      } else if (wire == 0) {
        each(r.varint());
      } else {
        r.skip(wire);
      }
    };
    auto fixedVals = [&](size_t n, int elemWire) { // float_data / double_data
      if (wire == 2) {
        Reader in = r.bytes();
        while (!in.done()) {
          const unsigned char* b = in.fixed(n);
          typed.insert(typed.end(), b, b + n);
          ++nTyped;
        }
      } else if (wire == elemWire) {
        const unsigned char* b = r.fixed(n);
        typed.insert(typed.end(), b, b + n);
        ++nTyped;
      } else {
        r.skip(wire);
      }
    };
    switch (field) {
    case 1:
      ints([&](uint64_t v) { t.dims.push_back(int64_t(v)); });
      break;
    case 2:
      if (wire != 0) bad(path, "data_type is not a varint (not a TensorProto)");
      t.onnxType = int32_t(r.varint());
      break;
    case 4:
      fixedVals(4, 5);
      break;
    case 10:
      fixedVals(8, 1);
      break;
    case 5:
    case 7:
    case 11:
      // Their element size is the tensor's, known once data_type is read: keep the values.
      ints([&](uint64_t v) {
        appendInt(typed, v, 8);
        ++nTyped;
      });
      break;
    case 6:
      bad(path, "string tensors are not supported by aicc-run");
    case 8: {
      Reader s = r.bytes();
      t.name.assign(reinterpret_cast<const char*>(s.p), size_t(s.end - s.p));
      break;
    }
    case 9: {
      Reader s = r.bytes();
      raw.assign(s.p, s.end);
      hasRaw = true;
      break;
    }
    case 13:
      bad(path, "external data is not supported by aicc-run (inline the tensor)");
    default:
      r.skip(wire);
    }
  }
  const int64_t elem = elementBytes(t.onnxType);
  if (!elem)
    bad(path, "element type " + std::to_string(t.onnxType) + " is not supported by aicc-run");
  int64_t n = 1;
  for (int64_t d : t.dims) {
    if (d < 0 || (d && n > (int64_t(1) << 40) / d)) bad(path, "absurd dims");
    n *= d;
  }
  if (hasRaw) {
    t.data = std::move(raw);
  } else if (t.onnxType == 1 || t.onnxType == 11) { // float_data / double_data hold the bytes
    t.data = std::move(typed);
  } else { // varint fields: narrow each 8-byte value to the element size
    for (int64_t i = 0; i < nTyped; ++i) {
      uint64_t v = 0;
      std::memcpy(&v, typed.data() + 8 * i, 8);
      appendInt(t.data, v, elem);
    }
  }
  if (int64_t(t.data.size()) != n * elem)
    bad(path, "holds " + std::to_string(t.data.size()) + " bytes of data, its dims need " +
                  std::to_string(n * elem));
  return t;
}

HostTensor readNpy(const std::string& path) {
  const auto file = readAll(path);
  if (file.size() < 10 || std::memcmp(file.data(), "\x93NUMPY", 6) != 0)
    bad(path, "not a .npy file");
  const int major = file[6];
  size_t headerLen = 0, at = 0;
  if (major == 1) {
    headerLen = size_t(file[8]) | size_t(file[9]) << 8;
    at = 10;
  } else if (major == 2 || major == 3) {
    if (file.size() < 12) bad(path, "truncated .npy header");
    headerLen =
        size_t(file[8]) | size_t(file[9]) << 8 | size_t(file[10]) << 16 | size_t(file[11]) << 24;
    at = 12;
  } else {
    bad(path, "unknown .npy version " + std::to_string(major));
  }
  if (headerLen > file.size() - at) bad(path, "truncated .npy header");
  const std::string h(reinterpret_cast<const char*>(file.data() + at), headerLen);
  auto value = [&](const char* key) {
    const size_t k = h.find(key);
    if (k == std::string::npos) bad(path, std::string(".npy header lacks ") + key);
    size_t v = h.find(':', k);
    if (v == std::string::npos) bad(path, ".npy header is malformed");
    ++v;
    while (v < h.size() && h[v] == ' ') ++v;
    return v;
  };
  size_t d = value("'descr'");
  const size_t q = h.find('\'', d + 1);
  if (h[d] != '\'' || q == std::string::npos) bad(path, ".npy descr is malformed");
  const std::string descr = h.substr(d + 1, q - d - 1);
  static const struct {
    const char* descr;
    int32_t type;
  } kTypes[] = {{"<f4", 1}, {"|u1", 2}, {"|i1", 3},  {"<u2", 4},  {"<i2", 5},  {"<i4", 6},
                {"<i8", 7}, {"|b1", 9}, {"<f2", 10}, {"<f8", 11}, {"<u4", 12}, {"<u8", 13}};
  HostTensor t;
  for (const auto& k : kTypes)
    if (descr == k.descr) t.onnxType = k.type;
  if (!t.onnxType) bad(path, "element type '" + descr + "' is not supported by aicc-run");
  if (h.find("'fortran_order': True") != std::string::npos)
    bad(path, "Fortran order is not supported");
  size_t s = value("'shape'");
  if (h[s] != '(') bad(path, ".npy shape is malformed");
  const size_t close = h.find(')', s);
  if (close == std::string::npos) bad(path, ".npy shape is malformed");
  std::string dims = h.substr(s + 1, close - s - 1);
  for (size_t i = 0; i < dims.size();) {
    while (i < dims.size() && (dims[i] == ' ' || dims[i] == ',')) ++i;
    if (i >= dims.size()) break;
    char* end = nullptr;
    const long long v = std::strtoll(dims.c_str() + i, &end, 10);
    if (end == dims.c_str() + i || v < 0) bad(path, ".npy shape is malformed");
    t.dims.push_back(v);
    i = size_t(end - dims.c_str());
  }
  int64_t n = elementBytes(t.onnxType);
  for (int64_t x : t.dims) {
    if (x && n > (int64_t(1) << 40) / x) bad(path, "absurd shape");
    n *= x;
  }
  const size_t data = at + headerLen;
  if (int64_t(file.size() - data) != n)
    bad(path, "holds " + std::to_string(file.size() - data) + " data bytes, its shape needs " +
                  std::to_string(n));
  t.data.assign(file.begin() + std::ptrdiff_t(data), file.end());
  return t;
}

} // namespace

int64_t elementBytes(int32_t t) {
  switch (t) {
  case 2:
  case 3:
  case 9:
    return 1; // u8 i8 bool
  case 4:
  case 5:
  case 10:
  case 16:
    return 2; // u16 i16 f16 bf16
  case 1:
  case 6:
  case 12:
    return 4; // f32 i32 u32
  case 7:
  case 11:
  case 13:
    return 8; // i64 f64 u64
  default:
    return 0;
  }
}

int32_t onnxTypeOf(const char* n) {
  static const struct {
    const char* name;
    int32_t type;
  } kNames[] = {{"f32", 1},  {"u8", 2},   {"i8", 3},   {"u16", 4},  {"i16", 5},
                {"i32", 6},  {"i64", 7},  {"bool", 9}, {"f16", 10}, {"f64", 11},
                {"u32", 12}, {"u64", 13}, {"bf16", 16}};
  for (const auto& k : kNames)
    if (n && std::strcmp(n, k.name) == 0) return k.type;
  return 0;
}

HostTensor readTensorFile(const std::string& path) {
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0) return readNpy(path);
  return readPb(path);
}

void writeTensorPb(const std::string& path, const HostTensor& t) {
  std::string out;
  for (int64_t d : t.dims) {
    putTag(out, 1, 0);
    putVarint(out, uint64_t(d));
  }
  putTag(out, 2, 0);
  putVarint(out, uint64_t(t.onnxType));
  putTag(out, 8, 2);
  putVarint(out, t.name.size());
  out += t.name;
  putTag(out, 9, 2);
  putVarint(out, t.data.size());
  out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) bad(path, std::string("cannot write: ") + std::strerror(errno));
  const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  if (std::fclose(f) != 0 || !ok) bad(path, "write error");
}

} // namespace aicc_run
