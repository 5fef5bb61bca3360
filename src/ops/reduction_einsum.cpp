// Einsum: any equation, explicit ("ij,jk->ik") or implicit ("ij,jk": the output is the ellipsis
// dims, then the labels used exactly once, in ASCII order), with ellipsis ("...") and repeated
// labels (diagonals). The reference kernel walks every combination of label values once
// (O(product of all label sizes)), multiplying operand elements and accumulating into the
// output: floats in double, integers exactly (64-bit wrap-around); f16/bf16 through float.
// Dims of size 1 broadcast against the other operands' dims of the same label.
#include "ops/reduction.h"

#include "ops/einsum.h"
#include "ops/helpers.h"

#include <algorithm>
#include <type_traits>

namespace aicc {

namespace {

// Splits a term into label ids, with -1 standing for "...".
std::vector<int> parseTerm(const std::string& term, const std::string& eq) {
  std::vector<int> v;
  bool seenEllipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    char ch = term[i];
    if (ch == '.') {
      AICC_CHECK(term.compare(i, 3, "...") == 0 && !seenEllipsis,
                 "equation '{}': malformed ellipsis in term '{}'", eq, term);
      seenEllipsis = true;
      v.push_back(-1);
      i += 2;
    } else if (ch >= 'A' && ch <= 'Z') {
      v.push_back(ch - 'A');
    } else if (ch >= 'a' && ch <= 'z') {
      v.push_back(26 + (ch - 'a'));
    } else {
      fail("equation '{}': invalid character '{}'", eq, ch);
    }
  }
  return v;
}

// Expands "..." into `count` ellipsis labels, right-aligned to `maxEll`.
std::vector<int> expand(const std::vector<int>& t, int64_t count, int64_t maxEll) {
  std::vector<int> v;
  for (int l : t) {
    if (l >= 0) {
      v.push_back(l);
      continue;
    }
    for (int64_t k = 0; k < count; ++k)
      v.push_back(kEinsumEllipsis + static_cast<int>(maxEll - count + k));
  }
  return v;
}

} // namespace

EinsumSpec parseEinsum(std::string eq, const std::vector<int64_t>& ranks) {
  std::string orig = eq;
  eq.erase(std::remove_if(eq.begin(), eq.end(), [](char ch) { return ch == ' '; }), eq.end());
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::vector<int>> terms;
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    terms.push_back(
        parseTerm(lhs.substr(start, comma == std::string::npos ? comma : comma - start), orig));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  AICC_CHECK(terms.size() == ranks.size(),
             "equation '{}' has {} operands but the node has {} inputs", orig, terms.size(),
             ranks.size());
  EinsumSpec spec;
  int64_t maxEll = 0;
  std::vector<int64_t> ell(terms.size(), 0);
  bool anyEllipsis = false;
  for (size_t i = 0; i < terms.size(); ++i) {
    int64_t letters = std::count_if(terms[i].begin(), terms[i].end(), [](int l) { return l >= 0; });
    bool hasEll = static_cast<int64_t>(terms[i].size()) != letters;
    anyEllipsis |= hasEll;
    AICC_CHECK(hasEll ? ranks[i] >= letters : ranks[i] == letters,
               "equation '{}': operand {} has rank {} but its term has {} labels", orig, i,
               ranks[i], letters);
    ell[i] = ranks[i] - letters;
    AICC_CHECK(ell[i] <= 64, "equation '{}': too many ellipsis dims", orig);
    maxEll = std::max(maxEll, ell[i]);
  }
  for (size_t i = 0; i < terms.size(); ++i) spec.in.push_back(expand(terms[i], ell[i], maxEll));
  std::vector<int> uses(kEinsumEllipsis, 0);
  for (const auto& t : terms)
    for (int l : t)
      if (l >= 0) ++uses[static_cast<size_t>(l)];
  if (arrow != std::string::npos) {
    std::vector<int> t = parseTerm(eq.substr(arrow + 2), orig);
    spec.out = expand(t, maxEll, maxEll);
    for (size_t a = 0; a < t.size(); ++a) {
      if (t[a] < 0) continue;
      AICC_CHECK(uses[static_cast<size_t>(t[a])] > 0,
                 "equation '{}': output label not used by any input", orig);
      AICC_CHECK(std::count(t.begin(), t.end(), t[a]) == 1, "equation '{}': repeated output label",
                 orig);
    }
  } else {
    if (anyEllipsis) spec.out = expand({-1}, maxEll, maxEll);
    for (int l = 0; l < kEinsumEllipsis; ++l)
      if (uses[static_cast<size_t>(l)] == 1) spec.out.push_back(l);
  }
  return spec;
}

namespace {

template <typename T> Tensor einsumTyped(const EinsumSpec& spec, const std::vector<Tensor>& xs) {
  // Label sizes (size-1 dims broadcast).
  std::vector<int64_t> size(kEinsumEllipsis + 64, -1);
  for (size_t i = 0; i < xs.size(); ++i)
    for (size_t d = 0; d < spec.in[i].size(); ++d) {
      int64_t& s = size[static_cast<size_t>(spec.in[i][d])];
      int64_t v = xs[i].dim(static_cast<int64_t>(d));
      AICC_CHECK(s < 0 || s == v || s == 1 || v == 1,
                 "Einsum: label size mismatch ({} vs {}) on operand {}", s, v, i);
      if (s < 0 || s == 1) s = v;
    }
  // Loop order: output labels, then the summed ones.
  std::vector<int> labels = spec.out;
  for (const auto& t : spec.in)
    for (int l : t)
      if (std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
  const size_t nl = labels.size(), nx = xs.size();
  std::vector<int64_t> dims(nl), outStride(nl, 0);
  std::vector<std::vector<int64_t>> stride(nx, std::vector<int64_t>(nl, 0));
  Dims outShape;
  for (size_t k = 0; k < nl; ++k) dims[k] = size[static_cast<size_t>(labels[k])];
  for (size_t k = 0; k < spec.out.size(); ++k) outShape.push_back(dims[k]);
  Dims os = stridesOf(outShape);
  for (size_t k = 0; k < spec.out.size(); ++k) outStride[k] = os[k];
  for (size_t i = 0; i < nx; ++i) {
    Dims st = stridesOf(xs[i].shape());
    for (size_t d = 0; d < spec.in[i].size(); ++d) {
      if (xs[i].dim(static_cast<int64_t>(d)) == 1) continue; // broadcast
      size_t k = static_cast<size_t>(std::find(labels.begin(), labels.end(), spec.in[i][d]) -
                                     labels.begin());
      stride[i][k] += st[d];
    }
  }
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
  auto acc = [](T v) {
    if constexpr (std::is_floating_point_v<T>)
      return static_cast<double>(v);
    else if constexpr (std::is_signed_v<T>)
      return static_cast<uint64_t>(static_cast<int64_t>(v));
    else
      return static_cast<uint64_t>(v);
  };
  Tensor out(xs[0].dtype(), outShape);
  std::vector<Acc> sum(static_cast<size_t>(out.numel()), Acc{0});
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<const T*> ptr(nx);
  for (size_t i = 0; i < nx; ++i) ptr[i] = xs[i].data<T>();
  std::vector<int64_t> idx(nl, 0), off(nx, 0);
  int64_t o = 0;
  for (int64_t it = 0; it < total; ++it) {
    Acc p = acc(ptr[0][off[0]]);
    for (size_t i = 1; i < nx; ++i) p *= acc(ptr[i][off[i]]);
    sum[static_cast<size_t>(o)] += p;
    for (size_t k = nl; k-- > 0;) {
      if (++idx[k] < dims[k]) {
        o += outStride[k];
        for (size_t i = 0; i < nx; ++i) off[i] += stride[i][k];
        break;
      }
      o -= outStride[k] * (dims[k] - 1);
      for (size_t i = 0; i < nx; ++i) off[i] -= stride[i][k] * (dims[k] - 1);
      idx[k] = 0;
    }
  }
  T* op = out.data<T>();
  for (size_t j = 0; j < sum.size(); ++j) op[j] = static_cast<T>(sum[j]);
  return out;
}

std::vector<RValue> einsumKernel(KernelCtx& c) {
  std::vector<Tensor> xs;
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    xs.push_back(c.in(i));
    ranks.push_back(xs.back().rank());
    AICC_CHECK(xs.back().dtype() == xs[0].dtype(), "input {} is {} but input 0 is {}", i,
               dtypeName(xs.back().dtype()), dtypeName(xs[0].dtype()));
  }
  EinsumSpec spec = parseEinsum(c.node.attrString("equation"), ranks);
  const DType dt = xs[0].dtype();
  if (isReducedFloat(dt))
    for (auto& x : xs) x = x.castTo(DType::F32);
  Tensor out;
  bool ok = xs[0].dtype() != DType::Bool && visitNative(xs[0].dtype(), [&](auto tag) {
              out = einsumTyped<decltype(tag)>(spec, xs);
            });
  AICC_CHECK(ok, "input 0 has unsupported element type {}", dtypeName(dt));
  if (out.dtype() != dt) out = out.castTo(dt);
  return {RValue::of(out)};
}

// Merges what two operands say about one label's size (size 1 broadcasts).
Dim mergeLabelDim(const std::optional<Dim>& a, const Dim& b) {
  if (!a) return b;
  if (a->isStatic() && b.isStatic()) {
    AICC_CHECK(a->value == b.value || a->value == 1 || b.value == 1,
               "Einsum: label size mismatch ({} vs {})", a->value, b.value);
    return a->value == 1 ? b : *a;
  }
  if (a->isStatic() && a->value != 1) return *a;
  if (b.isStatic() && b.value != 1) return b;
  if (*a == b) return b;
  return Dim{};
}

void inferEinsum(InferCtx& c) {
  DType dt = c.inDType(0);
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    const auto& s = c.inShape(i);
    if (!s) {
      c.setTensor(0, dt, std::nullopt);
      return;
    }
    ranks.push_back(static_cast<int64_t>(s->size()));
  }
  EinsumSpec spec = parseEinsum(c.node.attrString("equation"), ranks);
  std::vector<std::optional<Dim>> size(kEinsumEllipsis + 64);
  for (size_t i = 0; i < ranks.size(); ++i)
    for (size_t d = 0; d < spec.in[i].size(); ++d) {
      auto& s = size[static_cast<size_t>(spec.in[i][d])];
      s = mergeLabelDim(s, (*c.inShape(i))[d]);
    }
  Shape out;
  for (int l : spec.out) out.push_back(size[static_cast<size_t>(l)].value_or(Dim{}));
  c.setTensor(0, dt, out);
}

} // namespace

void registerEinsumOp(OpRegistry& r) {
  if (r.find("", "Einsum")) return; // may be provided by the linalg family instead
  r.op("Einsum")
      .since(12)
      .inputs(1, 1 << 20)
      .attr("equation", Attribute::Kind::String, true)
      .infer(inferEinsum)
      .kernel(einsumKernel);
}

} // namespace aicc
