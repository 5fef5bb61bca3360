// The text (string) op family, split over several files:
//   text.cpp        StringNormalizer, StringSplit, StringConcat, RegexFullMatch (and
//                   registerTextOps, which calls the others)
//   text_tfidf.cpp  TfIdfVectorizer
#pragma once

#include "ops/helpers.h"

namespace aicc {

void registerTextTfIdfOps(OpRegistry& r);

} // namespace aicc
