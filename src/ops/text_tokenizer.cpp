// com.microsoft Tokenizer: splits each string of a [C] or [N, C] tensor into tokens, by a token
// expression (tokenexp: the matches are the tokens), by separator expressions (separators: the
// text between matches), or into characters (separators = [""]). Tokens shorter than mincharnum
// characters are dropped; rows are padded with pad_value to the longest; mark adds the markers
// 0x02 / 0x03 around each row. As ONNX Runtime's contrib op (which skl2onnx writes for
// scikit-learn's CountVectorizer and TfidfVectorizer).
#include "ops/text.h"

namespace aicc {
namespace {

using Token = std::u32string;

std::vector<Token> tokensByExpression(const CompiledRegex& re, const Token& s, size_t minChars) {
  std::vector<Token> out;
  if (s.size() < minChars) return out;
  size_t from = 0;
  while (from <= s.size()) {
    const auto m = re.find(s, from);
    if (!m) break;
    const auto [pos, len] = *m;
    if (len >= minChars && len > 0) {
      out.push_back(s.substr(pos, len));
      from = pos + len;
    } else {
      from = pos + 1; // too short (or empty): move on one character
    }
  }
  return out;
}

// Each separator in turn splits the tokens the previous ones left.
std::vector<Token> tokensBySeparators(const std::vector<CompiledRegex>& seps, const Token& s,
                                      size_t minChars) {
  std::vector<Token> row{s}, next;
  for (const CompiledRegex& sep : seps) {
    next.clear();
    for (const Token& text : row) {
      size_t start = 0;
      while (true) {
        const auto m = sep.find(text, start);
        const size_t end = m ? m->first : text.size();
        if (end - start >= minChars) next.push_back(text.substr(start, end - start));
        if (!m) break;
        start = m->first + std::max<size_t>(m->second, 1);
        if (start > text.size()) break;
      }
    }
    row.swap(next);
    if (row.empty()) break;
  }
  return row;
}

std::vector<RValue> tokenizerKernel(KernelCtx& c) {
  requireDType(c, 0, {DType::String});
  const Tensor& x = c.in(0);
  AICC_CHECK(x.rank() == 1 || x.rank() == 2, "input must have shape [C] or [N, C], got {}",
             formatDims(x.shape()));
  const Node& n = c.node;
  const bool mark = n.attrInt("mark") != 0;
  const std::string pad = n.attrString("pad_value");
  const int64_t minChars = n.attrInt("mincharnum");
  AICC_CHECK(minChars >= 0, "mincharnum must not be negative, got {}", minChars);
  const std::string tokenexp = n.attrString("tokenexp");
  std::vector<std::string> separators;
  if (const Attribute* a = n.attr("separators"))
    separators = std::get<std::vector<std::string>>(a->v);
  AICC_CHECK(!tokenexp.empty() || !separators.empty(),
             "one of the attributes 'tokenexp' and 'separators' is required");
  AICC_CHECK(tokenexp.empty() || separators.empty(),
             "only one of the attributes 'tokenexp' and 'separators' may be given");
  const bool chars = separators.size() == 1 && separators[0].empty();
  AICC_CHECK(!chars || minChars < 2, "mincharnum {} is too big for character tokenization",
             minChars);
  std::vector<CompiledRegex> seps;
  if (!chars)
    for (const std::string& s : separators) {
      AICC_CHECK(!s.empty(), "separators must not be empty strings (except a single \"\")");
      seps.emplace_back(s);
    }
  const std::optional<CompiledRegex> re =
      tokenexp.empty() ? std::nullopt : std::optional<CompiledRegex>(CompiledRegex(tokenexp));

  std::vector<std::vector<Token>> rows;
  size_t longest = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const Token s = toCodePoints(x.strings()[i]);
    std::vector<Token> row;
    if (chars)
      for (char32_t ch : s) row.push_back(Token(1, ch));
    else if (re)
      row = tokensByExpression(*re, s, static_cast<size_t>(minChars));
    else
      row = tokensBySeparators(seps, s, static_cast<size_t>(minChars));
    longest = std::max(longest, row.size());
    rows.push_back(std::move(row));
  }
  Dims ys = x.shape();
  const size_t width = longest == 0 ? 0 : longest + (mark ? 2 : 0);
  ys.push_back(static_cast<int64_t>(width));
  Tensor y(DType::String, ys);
  for (size_t r = 0; r < rows.size() && width > 0; ++r) {
    std::string* out = y.strings() + r * width;
    size_t k = 0;
    if (mark) out[k++] = std::string(1, '\x02');
    for (const Token& t : rows[r]) {
      for (char32_t ch : t) appendUtf8(out[k], ch);
      ++k;
    }
    if (mark) out[k++] = std::string(1, '\x03');
    while (k < width) out[k++] = pad;
  }
  return {RValue::of(y)};
}

void inferTokenizer(InferCtx& c) {
  const DType t = c.inDType(0);
  AICC_CHECK(t == DType::Undefined || t == DType::String, "input must be a string tensor, got {}",
             dtypeName(t));
  std::optional<Shape> s = c.inShape(0);
  if (s) s->push_back(Dim{}); // the token count depends on the data
  c.setTensor(0, DType::String, s);
}

} // namespace

void registerTextTokenizerOps(OpRegistry& r) {
  r.op("Tokenizer", kMsDomain)
      .since(1)
      .inputs(1, 1)
      .attrInt("mark", 0)
      .attrString("pad_value", "#")
      .attrInt("mincharnum", 1)
      .attr("separators", Attribute::Kind::Strings)
      .attrString("tokenexp", "")
      .infer(inferTokenizer)
      .kernel(tokenizerKernel);
}

} // namespace aicc
