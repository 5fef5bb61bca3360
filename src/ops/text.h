// The text (string) op family, split over several files:
//   text.cpp        StringNormalizer, StringSplit, StringConcat (and registerTextOps, which
//                   calls the others); UTF-8 and case-mapping helpers
//   text_regex.cpp  RegexFullMatch, with a small RE2-syntax matcher (Thompson NFA, linear time)
//   text_tfidf.cpp  TfIdfVectorizer
//   text_tokenizer.cpp  com.microsoft Tokenizer (scikit-learn's TfidfVectorizer via skl2onnx)
#pragma once

#include "ops/helpers.h"

#include <map>
#include <vector>

namespace aicc {

void registerTextTfIdfOps(OpRegistry& r);

// TfIdfVectorizer's knowledge, shared by its reference kernel and its lowering (loop/lower_tfidf):
// the output's columns; the integer pool's n-grams of the counted lengths (min..max_gram_length),
// each with its column (a repeated one: the last); each column's weight (1 without `weights`).
int64_t tfidfColumns(const Node& n);
std::map<std::vector<int64_t>, int64_t> tfidfIntPool(const Node& n);
std::vector<double> tfidfColumnWeights(const Node& n);
void registerTextRegexOps(OpRegistry& r);
void registerTextTokenizerOps(OpRegistry& r);

// Decodes the UTF-8 code point at s[i] and advances i. A byte that does not start a valid
// sequence comes back as 0xDC00 + byte (like Python's surrogateescape).
char32_t decodeUtf8(const std::string& s, size_t& i);
// Simple (one-to-one) case mapping as in the en_US.UTF-8 locale, for ASCII, Latin-1, Latin
// Extended-A, Greek and Cyrillic; other code points are returned unchanged.
char32_t toUpperCp(char32_t c);
char32_t toLowerCp(char32_t c);

// Appends code point cp as UTF-8 (a 0xDC80..0xDCFF escape from decodeUtf8 as its raw byte).
void appendUtf8(std::string& out, char32_t cp);
std::u32string toCodePoints(const std::string& s);

// A pattern in RE2 syntax, compiled once (text_regex.cpp; linear-time NFA simulation).
class CompiledRegex {
public:
  explicit CompiledRegex(const std::string& pattern);
  bool fullMatch(const std::u32string& s) const;
  // The first position >= from where the pattern matches and the length of the longest match
  // there (leftmost-longest: RE2's leftmost-first differs only for alternations and lazy
  // repetitions whose shorter alternative matches first); nullopt when there is none.
  std::optional<std::pair<size_t, size_t>> find(const std::u32string& s, size_t from) const;

private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

} // namespace aicc
