// TfIdfVectorizer: counts the n-grams of a pool (with skips) in each row of the input and turns
// the counts into TF, IDF or TF-IDF scores.
#include "ops/text.h"

#include <map>

namespace aicc {
namespace {

int64_t tfidfOutputSize(const Node& n) {
  std::vector<int64_t> idx = n.attrInts("ngram_indexes");
  AICC_CHECK(!idx.empty(), "attribute 'ngram_indexes' must not be empty");
  int64_t mx = 0;
  for (int64_t v : idx) {
    AICC_CHECK(v >= 0, "attribute 'ngram_indexes' has negative entry {}", v);
    mx = std::max(mx, v);
  }
  return mx + 1;
}

// The pool's n-grams of the lengths the node counts, each mapped to its output column.
template <typename K> struct NgramPool { std::map<std::vector<K>, int64_t> column; };

template <typename K>
NgramPool<K> buildPool(const Node& n, const std::vector<K>& pool, int64_t minN, int64_t maxN) {
  const std::vector<int64_t> counts = n.attrInts("ngram_counts");
  const std::vector<int64_t> indexes = n.attrInts("ngram_indexes");
  const int64_t total = static_cast<int64_t>(pool.size());
  NgramPool<K> out;
  size_t gram = 0; // index of the n-gram in the pool, over all lengths
  for (size_t i = 0; i < counts.size(); ++i) {
    const int64_t len = static_cast<int64_t>(i) + 1;
    const int64_t begin = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : total;
    AICC_CHECK(begin >= 0 && begin <= end && end <= total,
               "attribute 'ngram_counts' {} does not split a pool of {} items", formatDims(counts),
               total);
    AICC_CHECK((end - begin) % len == 0,
               "the pool holds {} items for {}-grams, not a multiple of {}", end - begin, len, len);
    for (int64_t at = begin; at < end; at += len, ++gram) {
      AICC_CHECK(gram < indexes.size(), "attribute 'ngram_indexes' has {} entries, the pool more",
                 indexes.size());
      if (len < minN || len > maxN) continue;
      std::vector<K> key(pool.begin() + at, pool.begin() + at + len);
      out.column[key] = indexes[gram]; // a repeated n-gram: the last one wins
    }
  }
  return out;
}

// Counts into freq[row * outSize + column] for rows of `cols` items read by item(row, k).
template <typename K, typename ItemFn>
void countNgrams(const NgramPool<K>& pool, int64_t rows, int64_t cols, int64_t minN, int64_t maxN,
                 int64_t maxSkip, int64_t outSize, ItemFn item, std::vector<int64_t>& freq) {
  std::vector<K> key;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t skip = 0; skip <= maxSkip; ++skip) {
      // Unigrams do not depend on the skip: they are counted once, with skip 0.
      const int64_t first = skip == 0 ? minN : std::max<int64_t>(minN, 2);
      for (int64_t start = 0; start < cols; ++start) {
        key.clear();
        for (int64_t len = 1; len <= maxN; ++len) {
          const int64_t at = start + (len - 1) * (skip + 1);
          if (at >= cols) break;
          key.push_back(item(r, at));
          if (len < first) continue;
          auto it = pool.column.find(key);
          if (it != pool.column.end()) ++freq[static_cast<size_t>(r * outSize + it->second)];
        }
      }
    }
}

std::vector<RValue> tfidfKernel(KernelCtx& c) {
  const Node& n = c.node;
  const Tensor& x = c.in(0);
  requireDType(c, 0, {DType::String, DType::I32, DType::I64});
  AICC_CHECK(x.rank() <= 2, "input must have shape [C] or [N, C], got {}", formatDims(x.shape()));
  const int64_t minN = n.attrInt("min_gram_length"), maxN = n.attrInt("max_gram_length");
  const int64_t maxSkip = n.attrInt("max_skip_count");
  AICC_CHECK(minN >= 1 && minN <= maxN,
             "min_gram_length ({}) and max_gram_length ({}) must satisfy 1 <= min <= max", minN,
             maxN);
  AICC_CHECK(maxSkip >= 0, "max_skip_count must be >= 0, got {}", maxSkip);
  const std::string mode = n.attrString("mode");
  AICC_CHECK(mode == "TF" || mode == "IDF" || mode == "TFIDF",
             "mode must be TF, IDF or TFIDF, got '{}'", mode);
  const int64_t outSize = tfidfOutputSize(n);
  const bool batched = x.rank() == 2;
  const int64_t rows = batched ? x.dim(0) : 1;
  const int64_t cols = batched ? x.dim(1) : x.numel();
  std::vector<int64_t> freq(static_cast<size_t>(rows * outSize), 0);

  const Attribute* pi = n.attr("pool_int64s");
  const Attribute* ps = n.attr("pool_strings");
  AICC_CHECK((pi != nullptr) != (ps != nullptr),
             "exactly one of 'pool_int64s' and 'pool_strings' must be given");
  if (x.dtype() == DType::String) {
    AICC_CHECK(ps, "a string input needs 'pool_strings'");
    auto pool = buildPool(n, std::get<std::vector<std::string>>(ps->v), minN, maxN);
    auto item = [&](int64_t r, int64_t k) { return x.strings()[r * cols + k]; };
    countNgrams(pool, rows, cols, minN, maxN, maxSkip, outSize, item, freq);
  } else {
    AICC_CHECK(pi, "an integer input needs 'pool_int64s'");
    auto pool = buildPool(n, std::get<std::vector<int64_t>>(pi->v), minN, maxN);
    auto item = [&](int64_t r, int64_t k) { return x.getI64(r * cols + k); };
    countNgrams(pool, rows, cols, minN, maxN, maxSkip, outSize, item, freq);
  }

  const std::vector<double> colWeight = tfidfColumnWeights(n);
  Tensor y(DType::F32, batched ? Dims{rows, outSize} : Dims{outSize});
  float* yp = y.data<float>();
  for (int64_t i = 0; i < rows * outSize; ++i) {
    const double f = static_cast<double>(freq[static_cast<size_t>(i)]);
    const double wi = colWeight[static_cast<size_t>(i % outSize)];
    double v = f;
    if (mode == "IDF")
      v = f > 0 ? wi : 0.0;
    else if (mode == "TFIDF")
      v = f * wi;
    yp[i] = static_cast<float>(v);
  }
  return {RValue::of(y)};
}

void inferTfidf(InferCtx& c) {
  DType t = c.inDType(0);
  AICC_CHECK(t == DType::Undefined || t == DType::String || t == DType::I32 || t == DType::I64,
             "input must be string, int32 or int64, got {}", dtypeName(t));
  const int64_t outSize = tfidfOutputSize(c.node);
  const auto& s = c.inShape(0);
  if (!s) return c.setTensor(0, DType::F32, std::nullopt);
  AICC_CHECK(s->size() <= 2, "input must have shape [C] or [N, C], got {}", formatShape(*s));
  if (s->size() == 2) return c.setTensor(0, DType::F32, Shape{(*s)[0], Dim::known(outSize)});
  c.setTensor(0, DType::F32, Shape{Dim::known(outSize)});
}

} // namespace

int64_t tfidfColumns(const Node& n) { return tfidfOutputSize(n); }

std::map<std::vector<int64_t>, int64_t> tfidfIntPool(const Node& n) {
  const Attribute* pi = n.attr("pool_int64s");
  AICC_CHECK(pi, "an integer input needs 'pool_int64s'");
  return buildPool(n, std::get<std::vector<int64_t>>(pi->v), n.attrInt("min_gram_length"),
                   n.attrInt("max_gram_length"))
      .column;
}

std::vector<double> tfidfColumnWeights(const Node& n) {
  // weights[j] belongs to the j-th n-gram of the pool, so to output column ngram_indexes[j].
  std::vector<double> colWeight(static_cast<size_t>(tfidfOutputSize(n)), 1.0);
  if (const Attribute* wa = n.attr("weights")) {
    const auto& w = std::get<std::vector<float>>(wa->v);
    const std::vector<int64_t> indexes = n.attrInts("ngram_indexes");
    AICC_CHECK(w.size() == indexes.size(), "attribute 'weights' has {} entries, ngram_indexes {}",
               w.size(), indexes.size());
    for (size_t j = 0; j < w.size(); ++j) colWeight[static_cast<size_t>(indexes[j])] = w[j];
  }
  return colWeight;
}

void registerTextTfIdfOps(OpRegistry& r) {
  r.op("TfIdfVectorizer")
      .since(9)
      .inputs(1, 1)
      .attr("max_gram_length", Attribute::Kind::Int, true)
      .attr("max_skip_count", Attribute::Kind::Int, true)
      .attr("min_gram_length", Attribute::Kind::Int, true)
      .attr("mode", Attribute::Kind::String, true)
      .attr("ngram_counts", Attribute::Kind::Ints, true)
      .attr("ngram_indexes", Attribute::Kind::Ints, true)
      .attr("pool_int64s", Attribute::Kind::Ints)
      .attr("pool_strings", Attribute::Kind::Strings)
      .attr("weights", Attribute::Kind::Floats)
      .infer(inferTfidf)
      .kernel(tfidfKernel);
}

} // namespace aicc
