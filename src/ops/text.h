// The text (string) op family, split over several files:
//   text.cpp        StringNormalizer, StringSplit, StringConcat (and registerTextOps, which
//                   calls the others); UTF-8 and case-mapping helpers
//   text_regex.cpp  RegexFullMatch, with a small RE2-syntax matcher (Thompson NFA, linear time)
//   text_tfidf.cpp  TfIdfVectorizer
#pragma once

#include "ops/helpers.h"

namespace aicc {

void registerTextTfIdfOps(OpRegistry& r);
void registerTextRegexOps(OpRegistry& r);

// Decodes the UTF-8 code point at s[i] and advances i. A byte that does not start a valid
// sequence comes back as 0xDC00 + byte (like Python's surrogateescape).
char32_t decodeUtf8(const std::string& s, size_t& i);
// Simple (one-to-one) case mapping as in the en_US.UTF-8 locale, for ASCII, Latin-1, Latin
// Extended-A, Greek and Cyrillic; other code points are returned unchanged.
char32_t toUpperCp(char32_t c);
char32_t toLowerCp(char32_t c);

} // namespace aicc
