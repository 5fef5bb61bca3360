// TreeEnsemble (ai.onnx.ml opset 5): a forest of binary decision trees whose leaves add weights
// to targets; the per-tree results are aggregated (sum, average, min, max) and post-transformed.
#include "ops/ml.h"

#include <cmath>
#include <limits>

namespace aicc {
namespace {

enum class Aggregate { Average, Sum, Min, Max };

std::vector<double> tensorValues(const Node& n, const std::string& name) {
  const Attribute* a = n.attr(name);
  AICC_CHECK(a, "attribute '{}' is required", name);
  return std::get<Tensor>(a->v).toF64Vector();
}

} // namespace

Forest parseTreeEnsemble(const Node& n) {
  Forest f;
  const std::vector<double> modes = tensorValues(n, "nodes_modes");
  const size_t count = modes.size();
  f.splits = tensorValues(n, "nodes_splits");
  f.features = n.attrInts("nodes_featureids");
  f.trueIds = n.attrInts("nodes_truenodeids");
  f.falseIds = n.attrInts("nodes_falsenodeids");
  const std::vector<int64_t> tl = n.attrInts("nodes_trueleafs"),
                             fl = n.attrInts("nodes_falseleafs");
  const std::vector<int64_t> mt = n.attrInts("nodes_missing_value_tracks_true", {});
  using Entry = std::pair<const char*, size_t>;
  for (auto [name, size] :
       {Entry{"nodes_splits", f.splits.size()}, Entry{"nodes_featureids", f.features.size()},
        Entry{"nodes_truenodeids", f.trueIds.size()},
        Entry{"nodes_falsenodeids", f.falseIds.size()}, Entry{"nodes_trueleafs", tl.size()},
        Entry{"nodes_falseleafs", fl.size()}})
    AICC_CHECK(size == count, "attribute '{}' has {} entries, nodes_modes {}", name, size, count);
  AICC_CHECK(mt.empty() || mt.size() == count,
             "attribute 'nodes_missing_value_tracks_true' has {} entries, nodes_modes {}",
             mt.size(), count);
  f.weights = tensorValues(n, "leaf_weights");
  f.targets = n.attrInts("leaf_targetids");
  AICC_CHECK(f.weights.size() == f.targets.size(), "leaf_weights has {} entries, leaf_targetids {}",
             f.weights.size(), f.targets.size());
  for (size_t l = 0; l <= f.weights.size(); ++l) f.leafBegin.push_back(l); // one weight a leaf
  int64_t maxTarget = -1;
  for (int64_t t : f.targets) maxTarget = std::max(maxTarget, t);
  f.nTargets = n.attrInt("n_targets", maxTarget + 1);
  f.roots = n.attrInts("tree_roots");

  // Membership sets are listed in node order, each terminated by NaN.
  std::vector<double> mv;
  if (n.attr("membership_values")) mv = tensorValues(n, "membership_values");
  size_t pos = 0;
  f.members.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const double m = modes[i];
    AICC_CHECK(m >= 0 && m <= 6 && m == std::floor(m), "node {} has invalid mode {}", i, m);
    f.modes.push_back(static_cast<TreeMode>(static_cast<int>(m)));
    f.trueLeaf.push_back(tl[i] != 0);
    f.falseLeaf.push_back(fl[i] != 0);
    f.missingTrue.push_back(!mt.empty() && mt[i] != 0);
    if (f.modes.back() != TreeMode::MEMBER) continue;
    AICC_CHECK(pos < mv.size(), "membership_values has no set for BRANCH_MEMBER node {}", i);
    while (pos < mv.size() && !std::isnan(mv[pos])) f.members[i].push_back(mv[pos++]);
    ++pos; // the NaN
  }
  checkForest(f);
  return f;
}

void checkForest(const Forest& f) {
  const size_t count = f.modes.size(), leaves = f.numLeaves();
  for (size_t i = 0; i < count; ++i) {
    AICC_CHECK(f.trueIds[i] >= 0 &&
                   static_cast<size_t>(f.trueIds[i]) < (f.trueLeaf[i] ? leaves : count),
               "node {}: true branch {} is out of range", i, f.trueIds[i]);
    AICC_CHECK(f.falseIds[i] >= 0 &&
                   static_cast<size_t>(f.falseIds[i]) < (f.falseLeaf[i] ? leaves : count),
               "node {}: false branch {} is out of range", i, f.falseIds[i]);
    AICC_CHECK(f.features[i] >= 0, "node {}: negative feature id {}", i, f.features[i]);
  }
  for (int64_t t : f.targets)
    AICC_CHECK(t >= 0 && t < f.nTargets, "leaf target id {} is out of range [0, {})", t,
               f.nTargets);
  for (int64_t r : f.roots)
    AICC_CHECK(r >= 0 && static_cast<size_t>(r) < count, "tree root {} is not a node index", r);
}

namespace {

bool branchTrue(const Forest& f, size_t i, double x) {
  if (std::isnan(x) && f.missingTrue[i]) return true;
  const double s = f.splits[i];
  switch (f.modes[i]) {
  case TreeMode::LEQ:
    return x <= s;
  case TreeMode::LT:
    return x < s;
  case TreeMode::GTE:
    return x >= s;
  case TreeMode::GT:
    return x > s;
  case TreeMode::EQ:
    return x == s;
  case TreeMode::NEQ:
    return x != s;
  case TreeMode::MEMBER:
    return std::find(f.members[i].begin(), f.members[i].end(), x) != f.members[i].end();
  }
  return false;
}

std::vector<RValue> treeEnsembleKernel(KernelCtx& c) {
  const Tensor& x = c.in(0);
  requireDType(c, 0, {DType::F32, DType::F64, DType::F16});
  AICC_CHECK(x.rank() == 2, "input X must have shape [N, F], got {}", formatDims(x.shape()));
  const Forest f = parseTreeEnsemble(c.node);
  const int64_t agg = c.node.attrInt("aggregate_function"), pt = c.node.attrInt("post_transform");
  AICC_CHECK(agg >= 0 && agg <= 3, "aggregate_function must be in [0, 3], got {}", agg);
  AICC_CHECK(pt >= 0 && pt <= 4, "post_transform must be in [0, 4], got {}", pt);
  const auto aggregate = static_cast<Aggregate>(agg);
  const int64_t rows = x.dim(0), nFeatures = x.dim(1), nt = f.nTargets;
  Tensor y(x.dtype(), {rows, nt});
  std::vector<double> acc(static_cast<size_t>(nt));
  std::vector<bool> hit(static_cast<size_t>(nt));
  for (int64_t r = 0; r < rows; ++r) {
    // A target no leaf contributes to scores 0 (as in onnxruntime; the spec does not say).
    std::fill(acc.begin(), acc.end(), 0.0);
    std::fill(hit.begin(), hit.end(), false);
    for (int64_t root : f.roots) {
      const size_t leaf = findLeaf(f, static_cast<size_t>(root), x, r, nFeatures);
      const size_t t = static_cast<size_t>(f.targets[leaf]);
      const double w = f.weights[leaf];
      double& a = acc[t];
      switch (aggregate) {
      case Aggregate::Sum:
        a += w;
        break;
      case Aggregate::Average:
        a += w / static_cast<double>(f.roots.size());
        break;
      case Aggregate::Min:
        a = hit[t] ? std::min(a, w) : w;
        break;
      case Aggregate::Max:
        a = hit[t] ? std::max(a, w) : w;
        break;
      }
      hit[t] = true;
    }
    postTransform(static_cast<PostTransform>(pt), acc.data(), nt);
    for (int64_t t = 0; t < nt; ++t) y.setF64(r * nt + t, acc[static_cast<size_t>(t)]);
  }
  return {RValue::of(y)};
}

void inferTreeEnsemble(InferCtx& c) {
  DType t = c.inDType(0);
  AICC_CHECK(t == DType::Undefined || t == DType::F32 || t == DType::F64 || t == DType::F16,
             "input X must be float, double or float16, got {}", dtypeName(t));
  int64_t maxTarget = -1;
  for (int64_t id : c.node.attrInts("leaf_targetids")) maxTarget = std::max(maxTarget, id);
  const Dim nt = Dim::known(c.node.attrInt("n_targets", maxTarget + 1));
  const auto& s = c.inShape(0);
  if (!s) return c.setTensor(0, t, Shape{Dim{}, nt});
  AICC_CHECK(s->size() == 2, "input X must have shape [N, F], got {}", formatShape(*s));
  c.setTensor(0, t, Shape{(*s)[0], nt});
}

} // namespace

size_t findLeaf(const Forest& f, size_t root, const Tensor& x, int64_t row, int64_t nFeatures) {
  // A root whose branches both lead to the same leaf is that leaf (a one-leaf tree).
  if (f.trueLeaf[root] && f.falseLeaf[root] && f.trueIds[root] == f.falseIds[root])
    return static_cast<size_t>(f.trueIds[root]);
  size_t i = root;
  for (size_t steps = 0; steps <= f.modes.size(); ++steps) {
    AICC_CHECK(f.features[i] < nFeatures, "node {} reads feature {} of {}", i, f.features[i],
               nFeatures);
    const bool t = branchTrue(f, i, x.getF64(row * nFeatures + f.features[i]));
    const size_t next = static_cast<size_t>(t ? f.trueIds[i] : f.falseIds[i]);
    if (t ? f.trueLeaf[i] : f.falseLeaf[i]) return next;
    i = next;
  }
  fail("the tree rooted at node {} has a cycle", root);
}

void registerMlTreeOps(OpRegistry& r) {
  r.op("TreeEnsemble", kMlDomain)
      .perSample(perRow)
      .since(5)
      .inputs(1, 1)
      .attrInt("aggregate_function", 1)
      .attrInt("post_transform", 0)
      .attr("tree_roots", Attribute::Kind::Ints, true)
      .attr("nodes_modes", Attribute::Kind::Tensor, true)
      .attr("nodes_splits", Attribute::Kind::Tensor, true)
      .attr("nodes_featureids", Attribute::Kind::Ints, true)
      .attr("nodes_truenodeids", Attribute::Kind::Ints, true)
      .attr("nodes_falsenodeids", Attribute::Kind::Ints, true)
      .attr("nodes_trueleafs", Attribute::Kind::Ints, true)
      .attr("nodes_falseleafs", Attribute::Kind::Ints, true)
      .attr("nodes_hitrates", Attribute::Kind::Tensor)
      .attr("nodes_missing_value_tracks_true", Attribute::Kind::Ints)
      .attr("membership_values", Attribute::Kind::Tensor)
      .attr("leaf_targetids", Attribute::Kind::Ints, true)
      .attr("leaf_weights", Attribute::Kind::Tensor, true)
      .attr("n_targets", Attribute::Kind::Int)
      .infer(inferTreeEnsemble)
      .kernel(treeEnsembleKernel);
}

} // namespace aicc
