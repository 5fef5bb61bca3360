// String ops: StringNormalizer, StringSplit, StringConcat; UTF-8 and case-mapping helpers.
#include "ops/text.h"

#include <set>

namespace aicc {

// ---- UTF-8 and case mapping --------------------------------------------------------------------

char32_t decodeUtf8(const std::string& s, size_t& i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (len == 1) return s[i++] & 0x7F;
  bool ok = len > 0 && i + static_cast<size_t>(len) <= s.size();
  for (int k = 1; ok && k < len; ++k) ok = (b(i + static_cast<size_t>(k)) >> 6) == 2;
  if (!ok) return 0xDC00 + b(i++);
  char32_t cp = c & (0x7F >> len);
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (b(i + static_cast<size_t>(k)) & 0x3F);
  i += static_cast<size_t>(len);
  return cp;
}

char32_t toUpperCp(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 0x20;
  if (c == 0xFF) return 0x178;
  if (c == 0x131) return 'I';
  if (c == 0x17F) return 'S';
  if (c >= 0x100 && c <= 0x177 && c != 0x130 && c != 0x138) {
    bool lowerIsOdd = c < 0x138 || c >= 0x14A; // 0x139..0x148 pair the other way round
    if ((c % 2 == 1) == lowerIsOdd) return c - 1;
    return c;
  }
  if (c >= 0x17A && c <= 0x17E && c % 2 == 0) return c - 1;
  if (c >= 0x3B1 && c <= 0x3C9) return c == 0x3C2 ? 0x3A3 : c - 0x20;
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 0x25;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 0x3F;
  if (c >= 0x430 && c <= 0x44F) return c - 0x20;
  if (c >= 0x450 && c <= 0x45F) return c - 0x50;
  return c;
}

char32_t toLowerCp(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 0x20;
  if (c == 0x178) return 0xFF;
  if (c == 0x130) return 'i';
  if (c >= 0x100 && c <= 0x177 && c != 0x131 && c != 0x138 && c != 0x149) {
    bool upperIsEven = c < 0x138 || c >= 0x14A;
    if ((c % 2 == 0) == upperIsEven) return c + 1;
    return c;
  }
  if (c >= 0x179 && c <= 0x17D && c % 2 == 1) return c + 1;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 0x20;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 0x25;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 0x3F;
  if (c >= 0x410 && c <= 0x42F) return c + 0x20;
  if (c >= 0x400 && c <= 0x40F) return c + 0x50;
  return c;
}

void appendUtf8(std::string& out, char32_t cp) {
  if (cp >= 0xDC80 && cp <= 0xDCFF) { // an undecodable byte kept as is
    out += static_cast<char>(cp - 0xDC00);
  } else if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

namespace {

std::string changeCase(const std::string& s, bool upper) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t cp = decodeUtf8(s, i);
    appendUtf8(out, upper ? toUpperCp(cp) : toLowerCp(cp));
  }
  return out;
}

void requireString(const KernelCtx& c, size_t i) { requireDType(c, i, {DType::String}); }

void inferRequireString(InferCtx& c, size_t i) {
  DType t = c.inDType(i);
  AICC_CHECK(t == DType::Undefined || t == DType::String,
             "input {} must be a string tensor, got {}", i, dtypeName(t));
}

// ---- StringNormalizer --------------------------------------------------------------------------

std::vector<RValue> stringNormalizerKernel(KernelCtx& c) {
  requireString(c, 0);
  const Tensor& x = c.in(0);
  AICC_CHECK(x.rank() == 1 || (x.rank() == 2 && x.dim(0) == 1),
             "input must have shape [C] or [1, C], got {}", formatDims(x.shape()));
  const std::string action = c.node.attrString("case_change_action");
  AICC_CHECK(action == "NONE" || action == "LOWER" || action == "UPPER",
             "case_change_action must be NONE, LOWER or UPPER, got '{}'", action);
  const bool caseSensitive = c.node.attrInt("is_case_sensitive") != 0;
  if (const Attribute* loc = c.node.attr("locale")) {
    // Case mapping is the same in every locale but the Turkic and Lithuanian ones.
    const std::string& l = std::get<std::string>(loc->v);
    for (const char* special : {"tr", "az", "lt"})
      AICC_CHECK(l.rfind(special, 0) != 0,
                 "locale '{}' has special case rules that are not supported", l);
  }
  std::set<std::string> stops;
  if (const Attribute* sw = c.node.attr("stopwords"))
    for (const auto& w : std::get<std::vector<std::string>>(sw->v))
      stops.insert(caseSensitive ? w : changeCase(w, false));
  std::vector<std::string> kept;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const std::string& s = x.strings()[i];
    if (stops.count(caseSensitive ? s : changeCase(s, false))) continue;
    kept.push_back(action == "NONE" ? s : changeCase(s, action == "UPPER"));
  }
  if (kept.empty()) kept.emplace_back(); // all filtered out: one empty string
  const int64_t k = static_cast<int64_t>(kept.size());
  Tensor y(DType::String, x.rank() == 1 ? Dims{k} : Dims{1, k});
  for (int64_t i = 0; i < k; ++i) y.strings()[i] = std::move(kept[static_cast<size_t>(i)]);
  return {RValue::of(y)};
}

void inferStringNormalizer(InferCtx& c) {
  inferRequireString(c, 0);
  const auto& s = c.inShape(0);
  if (!s) return c.setTensor(0, DType::String, std::nullopt);
  AICC_CHECK(s->size() == 1 || s->size() == 2, "input must have shape [C] or [1, C], got {}",
             formatShape(*s));
  AICC_CHECK(s->size() == 1 || !(*s)[0].isStatic() || (*s)[0].value == 1,
             "input must have shape [C] or [1, C], got {}", formatShape(*s));
  // Without stopwords nothing is removed (but an empty input gives one empty string).
  Dim n;
  const Dim& in = s->back();
  if (!c.node.attr("stopwords") && in.isStatic() && in.value > 0) n = in;
  c.setTensor(0, DType::String, s->size() == 1 ? Shape{n} : Shape{Dim::known(1), n});
}

// ---- StringSplit -------------------------------------------------------------------------------

bool isSpace(char ch) {
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r' ||
         (ch >= 0x1C && ch <= 0x1F);
}

// Splitting on whitespace: runs of whitespace separate, leading and trailing whitespace is
// removed (as the spec says; unlike Python's str.split, also from the last piece when maxsplit
// stops the splitting early, which then holds the rest from the next word on).
std::vector<std::string> splitWhitespace(const std::string& s, int64_t maxsplit) {
  std::vector<std::string> out;
  size_t i = 0, n = s.size();
  while (n > 0 && isSpace(s[n - 1])) --n;
  int64_t splits = 0;
  while (true) {
    while (i < n && isSpace(s[i])) ++i;
    if (i >= n) break;
    if (maxsplit >= 0 && splits == maxsplit) {
      out.push_back(s.substr(i, n - i));
      break;
    }
    size_t j = i;
    while (j < n && !isSpace(s[j])) ++j;
    out.push_back(s.substr(i, j - i));
    ++splits;
    i = j;
  }
  return out;
}

// Python's str.split(sep, maxsplit): every occurrence separates (empty pieces kept), so an
// empty string gives one empty piece.
std::vector<std::string> splitBy(const std::string& s, const std::string& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  size_t i = 0;
  int64_t splits = 0;
  while (maxsplit < 0 || splits < maxsplit) {
    size_t j = s.find(sep, i);
    if (j == std::string::npos) break;
    out.push_back(s.substr(i, j - i));
    i = j + sep.size();
    ++splits;
  }
  out.push_back(s.substr(i));
  return out;
}

std::vector<RValue> stringSplitKernel(KernelCtx& c) {
  requireString(c, 0);
  const Tensor& x = c.in(0);
  const Attribute* d = c.node.attr("delimiter");
  const std::string delim = d ? std::get<std::string>(d->v) : std::string();
  const int64_t maxsplit = c.node.attrInt("maxsplit", -1); // negative: no limit
  std::vector<std::vector<std::string>> parts(static_cast<size_t>(x.numel()));
  int64_t width = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto& p = parts[static_cast<size_t>(i)];
    p = delim.empty() ? splitWhitespace(x.strings()[i], maxsplit)
                      : splitBy(x.strings()[i], delim, maxsplit);
    width = std::max(width, static_cast<int64_t>(p.size()));
  }
  Dims ys = x.shape();
  ys.push_back(width);
  Tensor y(DType::String, ys), z(DType::I64, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto& p = parts[static_cast<size_t>(i)];
    z.data<int64_t>()[i] = static_cast<int64_t>(p.size());
    for (size_t k = 0; k < p.size(); ++k) y.strings()[i * width + static_cast<int64_t>(k)] = p[k];
  }
  return {RValue::of(y), RValue::of(z)};
}

void inferStringSplit(InferCtx& c) {
  inferRequireString(c, 0);
  const auto& s = c.inShape(0);
  std::optional<Shape> ys;
  if (s) {
    ys = *s;
    ys->push_back(Dim{}); // the longest split: data dependent
  }
  c.setTensor(0, DType::String, ys);
  c.setTensor(1, DType::I64, s);
}

// ---- StringConcat ------------------------------------------------------------------------------

std::vector<RValue> stringConcatKernel(KernelCtx& c) {
  requireString(c, 0);
  requireString(c, 1);
  const Tensor &a = c.in(0), &b = c.in(1);
  Dims out = broadcastDims(a.shape(), b.shape());
  BroadcastIndexer ia(a.shape(), out), ib(b.shape(), out);
  Tensor z(DType::String, out);
  for (int64_t i = 0; i < z.numel(); ++i) z.strings()[i] = a.strings()[ia(i)] + b.strings()[ib(i)];
  return {RValue::of(z)};
}

void inferStringConcat(InferCtx& c) {
  inferRequireString(c, 0);
  inferRequireString(c, 1);
  inferBroadcast(c, DType::String);
}

} // namespace

void registerTextOps(OpRegistry& r) {
  r.op("StringNormalizer")
      .since(10)
      .inputs(1, 1)
      .attrString("case_change_action", "NONE")
      .attrInt("is_case_sensitive", 0)
      .attr("locale", Attribute::Kind::String)
      .attr("stopwords", Attribute::Kind::Strings)
      .infer(inferStringNormalizer)
      .kernel(stringNormalizerKernel);
  r.op("StringSplit")
      .since(20)
      .inputs(1, 1)
      .outputs(2, 2)
      .attr("delimiter", Attribute::Kind::String)
      .attr("maxsplit", Attribute::Kind::Int)
      .infer(inferStringSplit)
      .kernel(stringSplitKernel);
  r.op("StringConcat")
      .since(20)
      .inputs(2, 2)
      .props(kElementwise)
      .infer(inferStringConcat)
      .kernel(stringConcatKernel);
  registerTextRegexOps(r);
  registerTextTfIdfOps(r);
  registerTextTokenizerOps(r);
}

} // namespace aicc
