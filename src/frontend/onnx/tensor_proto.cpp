#include "frontend/onnx/tensor_proto.h"

#include "support/file.h"
#include "support/parse.h"

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace aicc {
namespace {

std::string tensorLabel(const onnx::TensorProto& p) {
  return p.name().empty() ? std::string("unnamed tensor") : fmt::format("tensor '{}'", p.name());
}

// The bytes of n elements of dt as stored (sub-byte types packed).
size_t storedBytes(int64_t n, DType dt) {
  int bits = dtypeBits(dt);
  return bits < 8 ? static_cast<size_t>((n * bits + 7) / 8)
                  : static_cast<size_t>(n) * dtypeSize(dt);
}

// Checks before allocating: a shape claiming more than the data holds is an error, not a huge
// allocation.
void checkPacked(size_t srcBytes, int64_t n, DType dt, const std::string& what) {
  size_t need = storedBytes(n, dt);
  AICC_CHECK(srcBytes == need, "{}: has {} bytes of data, expected {} for {} {} elements", what,
             srcBytes, need, n, dtypeName(dt));
}

// Unpacks sub-byte elements (int4/uint4/float4e2m1/int2/uint2), low bits first, sign-extending
// the signed integer types.
void unpackBits(const uint8_t* src, size_t srcBytes, Tensor& t, const std::string& what) {
  int bits = dtypeBits(t.dtype());
  int64_t n = t.numel();
  checkPacked(srcBytes, n, t.dtype(), what);
  auto* out = t.data<uint8_t>();
  int per = 8 / bits;
  uint8_t mask = static_cast<uint8_t>((1 << bits) - 1);
  bool sign = t.dtype() == DType::I4 || t.dtype() == DType::I2;
  for (int64_t i = 0; i < n; ++i) {
    uint8_t v = static_cast<uint8_t>((src[i / per] >> ((i % per) * bits)) & mask);
    if (sign && (v & (1 << (bits - 1)))) v = static_cast<uint8_t>(v | ~mask);
    out[i] = v;
  }
}

std::string packBits(const Tensor& t) {
  int bits = dtypeBits(t.dtype());
  int per = 8 / bits;
  uint8_t mask = static_cast<uint8_t>((1 << bits) - 1);
  std::string out(static_cast<size_t>((t.numel() * bits + 7) / 8), '\0');
  for (int64_t i = 0; i < t.numel(); ++i)
    out[static_cast<size_t>(i / per)] = static_cast<char>(
        static_cast<uint8_t>(out[static_cast<size_t>(i / per)]) |
        ((t.data<uint8_t>()[i] & mask) << ((i % per) * bits)));
  return out;
}

bool isSubByte(DType t) { return dtypeBits(t) < 8 && dtypeBits(t) > 0; }

// Memory-maps `path` once (cached in ext).
std::pair<const std::byte*, size_t> mapFile(ExternalData& ext, const std::string& path, const std::string& what,
                                            std::shared_ptr<const void>& owner) {
  auto it = ext.mapped.find(path);
  if (it == ext.mapped.end()) {
    int fd = ::open(path.c_str(), O_RDONLY);
    AICC_CHECK(fd >= 0, "{}: cannot open external data file '{}'", what, path);
    struct stat st {};
    ::fstat(fd, &st);
    size_t size = static_cast<size_t>(st.st_size);
    void* p = size ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
    ::close(fd);
    AICC_CHECK(size == 0 || p != MAP_FAILED, "{}: cannot map external data file '{}'", what, path);
    std::shared_ptr<const void> m(p, [size](const void* q) {
      if (q) ::munmap(const_cast<void*>(q), size);
    });
    it = ext.mapped.emplace(path, m).first;
    ext.sizes[path] = size;
  }
  owner = it->second;
  return {static_cast<const std::byte*>(it->second.get()), ext.sizes[path]};
}

Tensor fromExternal(const onnx::TensorProto& p, DType dt, const Dims& shape, ExternalData* ext,
                    const std::string& what) {
  AICC_CHECK(ext, "{}: external data is not available here", what);
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset")
      offset = parseInt(kv.value(), what + ": external data offset", 0);
    else if (kv.key() == "length")
      length = parseInt(kv.value(), what + ": external data length", 0);
  }
  AICC_CHECK(!location.empty(), "{}: external data without a location", what);
  AICC_CHECK(location[0] != '/' && location.find("..") == std::string::npos,
             "{}: external data location '{}' must be a relative path inside the model's folder", what,
             location);
  std::string path = ext->baseDir.empty() ? location : ext->baseDir + "/" + location;
  std::shared_ptr<const void> owner;
  auto [base, size] = mapFile(*ext, path, what, owner);
  size_t need = storedBytes(checkedNumel(shape, what), dt);
  if (length < 0) length = static_cast<int64_t>(need);
  AICC_CHECK(offset >= 0 && static_cast<size_t>(offset) + static_cast<size_t>(length) <= size,
             "{}: external data [{}, +{}) is beyond the end of '{}' ({} bytes)", what, offset, length,
             path, size);
  AICC_CHECK(static_cast<size_t>(length) == need, "{}: external data has {} bytes, expected {}", what,
             length, need);
  Tensor t(dt, shape);
  const std::byte* src = base + offset;
  if (isSubByte(dt)) {
    unpackBits(reinterpret_cast<const uint8_t*>(src), need, t, what);
    return t;
  }
  if (dt == DType::Bool) { // normalize to 0/1
    for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = src[i] != std::byte{0};
    return t;
  }
  if (reinterpret_cast<uintptr_t>(src) % 8 == 0) return Tensor::view(dt, shape, owner, src);
  std::memcpy(t.raw(), src, need);
  return t;
}

template <typename Field> void checkCount(const Field& f, int64_t expect, const std::string& what, const char* field) {
  AICC_CHECK(static_cast<int64_t>(f.size()) == expect, "{}: {} has {} values, expected {}", what, field,
             f.size(), expect);
}

} // namespace

Tensor tensorFromProto(const onnx::TensorProto& p, const std::shared_ptr<const void>& owner,
                       ExternalData* ext) {
  std::string what = tensorLabel(p);
  auto dtOpt = dtypeFromOnnx(p.data_type());
  AICC_CHECK(dtOpt, "{}: unsupported element type code {}", what, p.data_type());
  DType dt = *dtOpt;
  Dims shape(p.dims().begin(), p.dims().end());
  int64_t n = checkedNumel(shape, what);
  AICC_CHECK(!p.has_segment(), "{}: segmented tensors are not supported", what);

  if (p.data_location() == onnx::TensorProto::EXTERNAL) return fromExternal(p, dt, shape, ext, what);

  if (dt == DType::String) {
    checkCount(p.string_data(), n, what, "string_data");
    Tensor t(dt, shape);
    for (int64_t i = 0; i < n; ++i) t.strings()[i] = p.string_data(static_cast<int>(i));
    return t;
  }
  if (p.has_raw_data()) {
    const std::string& raw = p.raw_data();
    if (isSubByte(dt)) {
      checkPacked(raw.size(), n, dt, what);
      Tensor t(dt, shape);
      unpackBits(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), t, what);
      return t;
    }
    size_t need = static_cast<size_t>(n) * dtypeSize(dt);
    AICC_CHECK(raw.size() == need, "{}: raw_data has {} bytes, expected {} for shape {} ({})", what,
               raw.size(), need, formatDims(shape), dtypeName(dt));
    if (dt != DType::Bool && owner && reinterpret_cast<uintptr_t>(raw.data()) % 8 == 0)
      return Tensor::view(dt, shape, owner, raw.data());
    Tensor t(dt, shape);
    std::memcpy(t.raw(), raw.data(), need);
    if (dt == DType::Bool)
      for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = t.data<uint8_t>()[i] != 0;
    return t;
  }

  // Every typed field holds at least one value per four elements (int2 packed into int32_data):
  // a shape claiming more elements than that is an error before the tensor is allocated.
  const int64_t values = int64_t{p.float_data_size()} + p.double_data_size() + p.int32_data_size() +
                         p.int64_data_size() + p.uint64_data_size();
  AICC_CHECK(n <= 4 * values, "{}: holds {} data values, too few for its {} {} elements", what,
             values, n, dtypeName(dt));
  Tensor t(dt, shape);
  switch (dt) {
  case DType::F32:
    checkCount(p.float_data(), n, what, "float_data");
    std::copy(p.float_data().begin(), p.float_data().end(), t.data<float>());
    break;
  case DType::C64:
    checkCount(p.float_data(), 2 * n, what, "float_data");
    std::copy(p.float_data().begin(), p.float_data().end(), t.data<float>());
    break;
  case DType::F64:
    checkCount(p.double_data(), n, what, "double_data");
    std::copy(p.double_data().begin(), p.double_data().end(), t.data<double>());
    break;
  case DType::C128:
    checkCount(p.double_data(), 2 * n, what, "double_data");
    std::copy(p.double_data().begin(), p.double_data().end(), t.data<double>());
    break;
  case DType::I64:
    checkCount(p.int64_data(), n, what, "int64_data");
    std::copy(p.int64_data().begin(), p.int64_data().end(), t.data<int64_t>());
    break;
  case DType::U32: case DType::U64:
    checkCount(p.uint64_data(), n, what, "uint64_data");
    for (int64_t i = 0; i < n; ++i) t.setI64(i, static_cast<int64_t>(p.uint64_data(static_cast<int>(i))));
    break;
  case DType::F16: case DType::BF16:
    checkCount(p.int32_data(), n, what, "int32_data");
    for (int64_t i = 0; i < n; ++i) t.data<uint16_t>()[i] = static_cast<uint16_t>(p.int32_data(static_cast<int>(i)));
    break;
  case DType::F8E4M3FN: case DType::F8E4M3FNUZ: case DType::F8E5M2: case DType::F8E5M2FNUZ:
  case DType::F8E8M0:
    checkCount(p.int32_data(), n, what, "int32_data");
    for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(p.int32_data(static_cast<int>(i)));
    break;
  case DType::U4: case DType::I4: case DType::F4E2M1: case DType::U2: case DType::I2: {
    if (p.int32_data_size() == n) { // one element per value
      for (int64_t i = 0; i < n; ++i) t.setI64(i, p.int32_data(static_cast<int>(i)));
      if (dt == DType::F4E2M1)
        for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(p.int32_data(static_cast<int>(i)) & 0xf);
    } else { // packed bytes, one per int32
      std::string bytes;
      for (int32_t v : p.int32_data()) bytes.push_back(static_cast<char>(v & 0xff));
      unpackBits(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), t, what);
    }
    break;
  }
  default: // int32, int16, int8, uint16, uint8, bool
    checkCount(p.int32_data(), n, what, "int32_data");
    for (int64_t i = 0; i < n; ++i) t.setI64(i, p.int32_data(static_cast<int>(i)));
    break;
  }
  return t;
}

void tensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto& p) {
  p.Clear();
  p.set_name(name);
  p.set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) p.add_dims(d);
  if (t.dtype() == DType::String) {
    for (int64_t i = 0; i < t.numel(); ++i) p.add_string_data(t.strings()[i]);
  } else if (isSubByte(t.dtype())) {
    p.set_raw_data(packBits(t));
  } else {
    p.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
  }
}

// ---- value files ------------------------------------------------------------------------------

namespace {

RValue readNpy(const std::string& path, const std::string& bytes) {
  AICC_CHECK(bytes.size() >= 10 && bytes.compare(0, 6, "\x93NUMPY") == 0, "'{}' is not a .npy file", path);
  int major = static_cast<uint8_t>(bytes[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    hstart = 10;
  } else {
    AICC_CHECK(bytes.size() >= 12, "'{}': truncated .npy header", path);
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    hstart = 12;
  }
  AICC_CHECK(hstart + hlen <= bytes.size(), "'{}': truncated .npy header", path);
  std::string h = bytes.substr(hstart, hlen);
  auto field = [&](const std::string& key) {
    auto k = h.find("'" + key + "'");
    AICC_CHECK(k != std::string::npos, "'{}': .npy header lacks '{}'", path, key);
    return h.substr(h.find(':', k) + 1);
  };
  std::string descr = field("descr");
  descr = descr.substr(descr.find('\'') + 1);
  descr = descr.substr(0, descr.find('\''));
  AICC_CHECK(field("fortran_order").find("False") < 3, "'{}': Fortran-ordered .npy is not supported", path);
  // 'shape': (d0, d1, ...) with an optional trailing comma; () is a scalar.
  std::string shp = field("shape");
  const size_t open = shp.find_first_not_of(' '), close = shp.find(')');
  AICC_CHECK(open != std::string::npos && shp[open] == '(' && close != std::string::npos &&
                 shp.find_first_of("(){}", open + 1) == close,
             "'{}': malformed .npy shape in header '{}'", path,
             h.substr(0, h.find_last_not_of(" \n") + 1));
  shp = shp.substr(open + 1, close - open - 1);
  Dims shape;
  std::stringstream ss(shp);
  for (std::string tok; std::getline(ss, tok, ',');) {
    if (tok.find_first_not_of(' ') == std::string::npos && ss.eof()) break; // trailing comma
    shape.push_back(parseInt(tok, fmt::format("'{}': .npy shape", path), 0));
  }
  static const std::map<std::string, DType> kTypes = {
      {"<f4", DType::F32}, {"<f8", DType::F64}, {"<f2", DType::F16}, {"|i1", DType::I8},
      {"|u1", DType::U8},  {"<i2", DType::I16}, {"<u2", DType::U16}, {"<i4", DType::I32},
      {"<u4", DType::U32}, {"<i8", DType::I64}, {"<u8", DType::U64}, {"|b1", DType::Bool}};
  auto it = kTypes.find(descr);
  AICC_CHECK(it != kTypes.end(), "'{}': unsupported .npy dtype '{}'", path, descr);
  // The size the shape claims, checked against the data before allocating (no overflow).
  const size_t off = hstart + hlen, have = bytes.size() - off, elem = dtypeSize(it->second);
  size_t want = std::count(shape.begin(), shape.end(), 0) ? 0 : elem;
  for (int64_t d : shape) {
    AICC_CHECK(d == 0 || want <= have / size_t(d),
               "'{}': .npy shape ({}) needs more than the {} data bytes it holds", path,
               fmt::join(shape, ", "), have);
    want *= size_t(d);
  }
  AICC_CHECK(have == want, "'{}': .npy holds {} data bytes, expected {}", path, have, want);
  Tensor t(it->second, shape);
  if (want) std::memcpy(t.raw(), bytes.data() + off, want);
  return RValue::of(std::move(t));
}

// A MapProto as {keys, values}: its values are one scalar tensor per key (or one 1-D tensor
// holding them all).
RValue fromMapProto(const onnx::MapProto& m, const std::string& path) {
  auto kt = dtypeFromOnnx(m.key_type());
  AICC_CHECK(kt, "'{}': unsupported map key type code {}", path, m.key_type());
  const bool strings = *kt == DType::String;
  const int64_t n = strings ? m.string_keys_size() : m.keys_size();
  Tensor keys(*kt, {n});
  for (int64_t i = 0; i < n; ++i) {
    if (strings)
      keys.strings()[i] = m.string_keys(static_cast<int>(i));
    else
      keys.setI64(i, m.keys(static_cast<int>(i)));
  }
  std::vector<Tensor> parts;
  for (const auto& tp : m.values().tensor_values())
    parts.push_back(tensorFromProto(tp, nullptr, nullptr));
  AICC_CHECK(!parts.empty() || n == 0, "'{}': a map of {} keys has no values", path, n);
  Tensor values(parts.empty() ? DType::F32 : parts[0].dtype(), {n});
  int64_t at = 0;
  for (const Tensor& t : parts)
    for (int64_t i = 0; i < t.numel() && at < n; ++i, ++at) {
      AICC_CHECK(t.dtype() == values.dtype(), "'{}': map values of different types", path);
      if (t.dtype() == DType::String)
        values.strings()[at] = t.strings()[i];
      else
        values.setF64(at, t.getF64(i));
    }
  AICC_CHECK(at == n, "'{}': a map of {} keys has {} values", path, n, at);
  return RValue::ofMap(std::move(keys), std::move(values));
}

void mapToProto(const RValue& v, onnx::MapProto& m) {
  const Tensor &keys = v.seq[0], &values = v.seq[1];
  m.set_key_type(static_cast<int32_t>(keys.dtype()));
  for (int64_t i = 0; i < keys.numel(); ++i) {
    if (keys.dtype() == DType::String)
      m.add_string_keys(keys.strings()[i]);
    else
      m.add_keys(keys.getI64(i));
  }
  auto* s = m.mutable_values();
  s->set_elem_type(onnx::SequenceProto::TENSOR);
  for (int64_t i = 0; i < values.numel(); ++i) {
    Tensor one(values.dtype(), {});
    if (values.dtype() == DType::String)
      one.strings()[0] = values.strings()[i];
    else
      one.setF64(0, values.getF64(i));
    tensorToProto(one, "", *s->add_tensor_values());
  }
}

RValue fromSequenceProto(const onnx::SequenceProto& s, const std::string& path) {
  if (s.elem_type() == onnx::SequenceProto::MAP) {
    std::vector<RValue> maps;
    for (const auto& m : s.map_values()) maps.push_back(fromMapProto(m, path));
    return RValue::ofMapSeq(std::move(maps));
  }
  AICC_CHECK(s.elem_type() == onnx::SequenceProto::TENSOR || s.tensor_values_size() == 0,
             "'{}': only sequences of tensors or maps are supported", path);
  std::vector<Tensor> seq;
  for (const auto& tp : s.tensor_values()) seq.push_back(tensorFromProto(tp, nullptr, nullptr));
  return RValue::ofSeq(std::move(seq));
}

} // namespace

RValue readValueFile(const std::string& path, const Type& expected) {
  return readValueBytes(readFile(path), path, expected);
}

// A message parsed from bytes of another kind mostly parses (protobuf skips what it does not
// know): a TensorProto read as a SequenceProto gave an empty sequence. Fields it does not know
// mean the file is not this message.
template <class M>
void parseExactly(M& m, const std::string& bytes, const std::string& path, const char* what) {
  AICC_CHECK(m.ParseFromString(bytes) && m.unknown_fields().empty(),
             "'{}' is not a valid serialized {} (the model's input is of that kind)", path, what);
}

RValue readValueBytes(const std::string& bytes, const std::string& path, const Type& expected) {
  if (path.size() > 4 && path.substr(path.size() - 4) == ".npy") return readNpy(path, bytes);
  const Type* t = &expected;
  if (t->kind == Type::Kind::Optional) {
    onnx::OptionalProto o;
    parseExactly(o, bytes, path, "OptionalProto");
    if (o.has_tensor_value()) return RValue::of(tensorFromProto(o.tensor_value(), nullptr, nullptr));
    if (o.has_sequence_value()) return fromSequenceProto(o.sequence_value(), path);
    return RValue::none();
  }
  if (t->kind == Type::Kind::Map) {
    onnx::MapProto m;
    parseExactly(m, bytes, path, "MapProto");
    return fromMapProto(m, path);
  }
  if (t->kind == Type::Kind::Sequence) {
    onnx::SequenceProto s;
    parseExactly(s, bytes, path, "SequenceProto");
    return fromSequenceProto(s, path);
  }
  onnx::TensorProto p;
  AICC_CHECK(p.ParseFromString(bytes), "'{}' is not a valid serialized TensorProto", path);
  try {
    return RValue::of(tensorFromProto(p, nullptr, nullptr));
  } catch (const Error& e) {
    throw Error(fmt::format("'{}': {}", path, e.what()));
  }
}

void writeValueFile(const std::string& path, const RValue& v, const Type& declared, const std::string& name) {
  std::string bytes;
  auto seqProto = [&](onnx::SequenceProto& s) {
    s.set_name(name);
    if (v.isMapSeq()) {
      s.set_elem_type(onnx::SequenceProto::MAP);
      for (const RValue& m : v.maps) mapToProto(m, *s.add_map_values());
      return;
    }
    s.set_elem_type(onnx::SequenceProto::TENSOR);
    for (const Tensor& t : v.seq) tensorToProto(t, "", *s.add_tensor_values());
  };
  if (declared.kind == Type::Kind::Optional) {
    onnx::OptionalProto o;
    o.set_name(name);
    if (v.kind == RValue::Kind::Tensor) {
      o.set_elem_type(onnx::OptionalProto::TENSOR);
      tensorToProto(v.tensor, "", *o.mutable_tensor_value());
    } else if (v.kind == RValue::Kind::Sequence) {
      o.set_elem_type(onnx::OptionalProto::SEQUENCE);
      seqProto(*o.mutable_sequence_value());
    }
    bytes = o.SerializeAsString();
  } else if (v.kind == RValue::Kind::Sequence) {
    onnx::SequenceProto s;
    seqProto(s);
    bytes = s.SerializeAsString();
  } else if (v.kind == RValue::Kind::Map) {
    onnx::MapProto m;
    mapToProto(v, m);
    m.set_name(name);
    bytes = m.SerializeAsString();
  } else {
    AICC_CHECK(v.kind == RValue::Kind::Tensor, "output '{}' has no value", name);
    onnx::TensorProto p;
    tensorToProto(v.tensor, name, p);
    bytes = p.SerializeAsString();
  }
  std::ofstream f(path, std::ios::binary);
  AICC_CHECK(f.good(), "cannot write '{}'", path);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  AICC_CHECK(f.good(), "error writing '{}'", path);
}

} // namespace aicc
