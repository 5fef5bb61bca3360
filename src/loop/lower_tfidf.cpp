// TfIdfVectorizer on int32/int64 input as a loop nest: the pool's n-grams (ops/text.h
// tfidfIntPool: each distinct one of a counted length with its column) become constant tables
// (length, items padded to the longest, column); per row, skip and start position each n-gram is
// compared item by item with the row's items at start, start + skip + 1, ... and counted in its
// column where all match (unigrams once, with skip 0, as the reference counts them); then each
// count becomes TF (the count), IDF (the column's weight where counted) or TF-IDF (their product).
// String inputs stay on the reference kernel (strings are not compiled).
#include "loop/lower_ops.h"
#include "ops/text.h"

namespace aicc::loop::detail {

std::optional<LoweredNode> lowerTfIdf(const Node& n, const std::string& name,
                                      const LowerOptions& o) {
  const Value* xv = n.inputs.at(0);
  const DType xt = xv->type.dtype;
  if (xt != DType::I32 && xt != DType::I64) no("TfIdfVectorizer of strings");
  const Dims xd = staticDims(xv, "input");
  if (xd.size() > 2) no("an input of rank > 2");
  const int64_t rows = xd.size() == 2 ? xd[0] : 1, cols = xd.empty() ? 1 : xd.back();
  const int64_t minN = n.attrInt("min_gram_length"), maxN = n.attrInt("max_gram_length"),
                maxSkip = n.attrInt("max_skip_count");
  const std::string mode = n.attrString("mode");
  if (minN < 1 || minN > maxN || maxSkip < 0 || (mode != "TF" && mode != "IDF" && mode != "TFIDF"))
    no("invalid attributes (the reference kernel reports them)");
  const int64_t C = tfidfColumns(n);
  const std::map<std::vector<int64_t>, int64_t> pool = tfidfIntPool(n);
  const std::vector<double> weight = tfidfColumnWeights(n);
  const int64_t G = std::max<int64_t>(1, int64_t(pool.size()));
  Tensor len(DType::I64, {G}), items(DType::I64, {G, maxN}), column(DType::I64, {G}),
      w(DType::F32, {C});
  int64_t g = 0;
  for (const auto& [key, col] : pool) {
    len.setI64(g, int64_t(key.size()));
    for (int64_t k = 0; k < maxN; ++k)
      items.setI64(g * maxN + k, k < int64_t(key.size()) ? key[size_t(k)] : 0);
    column.setI64(g++, col);
  }
  for (int64_t c = 0; c < C; ++c) w.setF64(c, weight[size_t(c)]);
  FuncBuilder b(n, name, "data");
  const std::string x = b.input(xv), y = b.output(0);
  const std::string lenB = b.constant("gram_length", std::move(len), "i64 [grams]"),
                    itemB = b.constant("gram_items", std::move(items), "i64 [grams, max_gram]"),
                    colB = b.constant("gram_column", std::move(column), "i64 [grams]"),
                    wB = b.constant("column_weight", std::move(w), "f32 [columns]"),
                    freq = b.temp("counts", DType::I64, {rows, C}),
                    ok = b.temp("match", DType::I64, {1});
  const std::string rv = b.loopVar("r"), sv = b.loopVar("skip"), pv = b.loopVar("start"),
                    gv = b.loopVar("g"), kv = b.loopVar("k"), jv = b.loopVar("j");
  auto i64 = [](int64_t v) { return intImm(v); };
  const ExprPtr r = var(rv), skip = var(sv), start = var(pv), gi = var(gv), k = var(kv);
  const ExprPtr glen = load(lenB, gi, DType::I64);
  // Unigrams do not depend on the skip: counted once, with skip 0.
  const ExprPtr first =
      select(cmp(Op::Eq, skip, i64(0)), i64(minN), i64(std::max<int64_t>(minN, 2)));
  const ExprPtr last = add(start, mul(sub(glen, i64(1)), add(skip, i64(1))));
  const ExprPtr at = add(start, mul(k, add(skip, i64(1))));
  const ExprPtr item =
      cast(DType::I64, load(x, add(mul(r, i64(cols)), min(at, i64(cols - 1))), xt));
  const ExprPtr differs =
      binary(Op::And, cmp(Op::Lt, k, glen),
             cmp(Op::Ne, item, load(itemB, add(mul(gi, i64(maxN)), k), DType::I64)));
  const ExprPtr cell = add(mul(r, i64(C)), load(colB, gi, DType::I64));
  Block gram = {Stmt::store(ok, i64(0), i64(1)),
                Stmt::forLoop(kv, i64(0), i64(maxN),
                              {Stmt::ifThen(differs, {Stmt::store(ok, i64(0), i64(0))})}),
                Stmt::ifThen(cmp(Op::Ne, load(ok, i64(0), DType::I64), i64(0)),
                             {Stmt::store(freq, cell, add(load(freq, cell, DType::I64), i64(1)))})};
  Block body;
  for (auto& s : nest({jv}, {rows * C}, {Stmt::store(freq, var(jv), i64(0))}, false))
    body.push_back(std::move(s));
  if (!pool.empty())
    for (auto& s :
         nest({rv, sv, pv, gv}, {rows, maxSkip + 1, cols, G},
              {Stmt::ifThen(binary(Op::And, cmp(Op::Ge, glen, first), cmp(Op::Lt, last, i64(cols))),
                            std::move(gram))},
              false))
      body.push_back(std::move(s));
  const ExprPtr f = cast(DType::F64, load(freq, var(jv), DType::I64));
  const ExprPtr wi = cast(DType::F64, load(wB, mod(var(jv), i64(C)), DType::F32));
  const ExprPtr v =
      mode == "TF"    ? f
      : mode == "IDF" ? select(cmp(Op::Gt, f, floatImm(0, DType::F64)), wi, floatImm(0, DType::F64))
                      : mul(f, wi);
  for (auto& s : nest({jv}, {rows * C}, {Stmt::store(y, var(jv), cast(DType::F32, v))}, false))
    body.push_back(std::move(s));
  return b.finish(std::move(body), {}, o);
}

} // namespace aicc::loop::detail
