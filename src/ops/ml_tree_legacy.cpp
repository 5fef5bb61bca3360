// TreeEnsembleClassifier and TreeEnsembleRegressor (ai.onnx.ml opsets 1 and 3): trees given node
// by node as (tree id, node id) with string modes, their leaves' weights listed per
// (tree, node, class or target). They are parsed into the Forest of ml_tree.cpp and walked with
// its findLeaf; aggregation and the binary-classifier details follow ONNX Runtime.
#include "ops/ml.h"

#include <algorithm>
#include <map>
#include <set>

namespace aicc {
namespace {

std::vector<int64_t> intsOf(const Node& n, const std::string& name) { return n.attrInts(name, {}); }

} // namespace

Forest parseLegacyForest(const Node& n, const std::string& prefix, int64_t nTargets) {
  const std::vector<int64_t> treeIds = intsOf(n, "nodes_treeids"),
                             nodeIds = intsOf(n, "nodes_nodeids"),
                             features = intsOf(n, "nodes_featureids"),
                             trueIds = intsOf(n, "nodes_truenodeids"),
                             falseIds = intsOf(n, "nodes_falsenodeids"),
                             missing = intsOf(n, "nodes_missing_value_tracks_true");
  const Attribute* modesAttr = n.attr("nodes_modes");
  AICC_CHECK(modesAttr, "attribute 'nodes_modes' is required");
  const auto& modes = std::get<std::vector<std::string>>(modesAttr->v);
  const std::vector<double> values = floatsOrTensor(n, "nodes_values", false);
  const size_t count = treeIds.size();
  using Entry = std::pair<const char*, size_t>;
  for (auto [name, size] :
       {Entry{"nodes_nodeids", nodeIds.size()}, Entry{"nodes_featureids", features.size()},
        Entry{"nodes_modes", modes.size()}, Entry{"nodes_values", values.size()},
        Entry{"nodes_truenodeids", trueIds.size()}, Entry{"nodes_falsenodeids", falseIds.size()}})
    AICC_CHECK(size == count, "attribute '{}' has {} entries, nodes_treeids {}", name, size, count);
  AICC_CHECK(missing.empty() || missing.size() == count,
             "attribute 'nodes_missing_value_tracks_true' has {} entries, nodes_treeids {}",
             missing.size(), count);

  static const std::pair<const char*, TreeMode> modeNames[] = {
      {"BRANCH_LEQ", TreeMode::LEQ}, {"BRANCH_LT", TreeMode::LT}, {"BRANCH_GTE", TreeMode::GTE},
      {"BRANCH_GT", TreeMode::GT},   {"BRANCH_EQ", TreeMode::EQ}, {"BRANCH_NEQ", TreeMode::NEQ}};
  // Position of each (tree, node); branches and leaves numbered separately.
  std::map<std::pair<int64_t, int64_t>, size_t> pos;
  std::vector<int64_t> index(count);
  std::vector<bool> isLeaf(count);
  int64_t branches = 0, leaves = 0;
  for (size_t i = 0; i < count; ++i) {
    AICC_CHECK(pos.emplace(std::pair{treeIds[i], nodeIds[i]}, i).second,
               "node (tree {}, id {}) is listed twice", treeIds[i], nodeIds[i]);
    isLeaf[i] = modes[i] == "LEAF";
    index[i] = isLeaf[i] ? leaves++ : branches++;
  }
  auto find = [&](int64_t tree, int64_t id, size_t from) {
    auto it = pos.find({tree, id});
    AICC_CHECK(it != pos.end(), "node (tree {}, id {}) refers to node id {}, which tree {} lacks",
               tree, nodeIds[from], id, tree);
    return it->second;
  };

  Forest f;
  f.nTargets = nTargets;
  std::vector<bool> isChild(count);
  for (size_t i = 0; i < count; ++i) {
    if (isLeaf[i]) continue;
    TreeMode mode = TreeMode::LEQ;
    bool known = false;
    for (auto [name, m] : modeNames)
      if (modes[i] == name) mode = m, known = true;
    AICC_CHECK(known, "node (tree {}, id {}) has unknown mode '{}'", treeIds[i], nodeIds[i],
               modes[i]);
    const size_t t = find(treeIds[i], trueIds[i], i), e = find(treeIds[i], falseIds[i], i);
    isChild[t] = isChild[e] = true;
    f.modes.push_back(mode);
    f.splits.push_back(values[i]);
    f.features.push_back(features[i]);
    f.trueIds.push_back(index[t]);
    f.falseIds.push_back(index[e]);
    f.trueLeaf.push_back(isLeaf[t]);
    f.falseLeaf.push_back(isLeaf[e]);
    f.missingTrue.push_back(!missing.empty() && missing[i] != 0);
  }
  f.members.resize(f.modes.size());

  // Leaf outputs, grouped per leaf in leaf order.
  const std::vector<int64_t> outTrees = intsOf(n, prefix + "_treeids"),
                             outNodes = intsOf(n, prefix + "_nodeids"),
                             outIds = intsOf(n, prefix + "_ids");
  const std::vector<double> outWeights = floatsOrTensor(n, prefix + "_weights", false);
  for (auto [name, size] : {Entry{"_nodeids", outNodes.size()}, Entry{"_ids", outIds.size()},
                            Entry{"_weights", outWeights.size()}})
    AICC_CHECK(size == outTrees.size(), "attribute '{}{}' has {} entries, {}_treeids {}", prefix,
               name, size, prefix, outTrees.size());
  std::vector<std::vector<size_t>> perLeaf(static_cast<size_t>(leaves));
  for (size_t k = 0; k < outTrees.size(); ++k) {
    auto it = pos.find({outTrees[k], outNodes[k]});
    AICC_CHECK(it != pos.end() && isLeaf[it->second],
               "{} weight {} names (tree {}, id {}), which is not a leaf", prefix, k, outTrees[k],
               outNodes[k]);
    perLeaf[static_cast<size_t>(index[it->second])].push_back(k);
  }
  f.leafBegin.push_back(0);
  for (const auto& entries : perLeaf) {
    for (size_t k : entries) {
      f.targets.push_back(outIds[k]);
      f.weights.push_back(outWeights[k]);
    }
    f.leafBegin.push_back(f.weights.size());
  }

  // One root per tree, in the order the trees first appear; a tree that is one leaf gets a
  // branch whose two sides are that leaf.
  std::vector<int64_t> treeOrder;
  std::map<int64_t, size_t> roots;
  for (size_t i = 0; i < count; ++i) {
    if (!roots.count(treeIds[i]) &&
        std::find(treeOrder.begin(), treeOrder.end(), treeIds[i]) == treeOrder.end())
      treeOrder.push_back(treeIds[i]);
    if (isChild[i]) continue;
    AICC_CHECK(roots.emplace(treeIds[i], i).second, "tree {} has two roots (ids {} and {})",
               treeIds[i], nodeIds[roots[treeIds[i]]], nodeIds[i]);
  }
  for (int64_t tree : treeOrder) {
    AICC_CHECK(roots.count(tree), "tree {} has no root (its nodes form a cycle)", tree);
    const size_t r = roots[tree];
    if (!isLeaf[r]) {
      f.roots.push_back(index[r]);
      continue;
    }
    f.roots.push_back(static_cast<int64_t>(f.modes.size()));
    f.modes.push_back(TreeMode::LEQ);
    f.splits.push_back(0);
    f.features.push_back(0);
    f.trueIds.push_back(index[r]);
    f.falseIds.push_back(index[r]);
    f.trueLeaf.push_back(true);
    f.falseLeaf.push_back(true);
    f.missingTrue.push_back(false);
    f.members.emplace_back();
  }
  checkForest(f);
  return f;
}

namespace {

enum class Aggregate { Sum, Average, Min, Max };

// Per row: the aggregated leaf weights of each target, and whether any leaf reached it.
struct TreeScores {
  std::vector<double> score;
  std::vector<bool> hit;
};

TreeScores walkForest(const Forest& f, Aggregate agg, const Tensor& x, int64_t row,
                      int64_t nFeatures) {
  TreeScores s{std::vector<double>(static_cast<size_t>(f.nTargets)),
               std::vector<bool>(static_cast<size_t>(f.nTargets))};
  for (int64_t root : f.roots) {
    const size_t leaf = findLeaf(f, static_cast<size_t>(root), x, row, nFeatures);
    for (size_t k = f.leafBegin[leaf]; k < f.leafBegin[leaf + 1]; ++k) {
      const size_t t = static_cast<size_t>(f.targets[k]);
      const double w = f.weights[k];
      double& a = s.score[t];
      if (agg == Aggregate::Min)
        a = s.hit[t] ? std::min(a, w) : w;
      else if (agg == Aggregate::Max)
        a = s.hit[t] ? std::max(a, w) : w;
      else
        a += w;
      s.hit[t] = true;
    }
  }
  if (agg == Aggregate::Average)
    for (double& a : s.score) a /= static_cast<double>(f.roots.size());
  return s;
}

const Tensor& treeInput(const KernelCtx& c) {
  requireDType(c, 0, {DType::F32, DType::F64, DType::I64, DType::I32});
  const Tensor& x = c.in(0);
  AICC_CHECK(x.rank() == 2, "input X must have shape [N, F], got {}", formatDims(x.shape()));
  return x;
}

// ---- TreeEnsembleRegressor ----------------------------------------------------------------------

std::vector<RValue> treeRegressorKernel(KernelCtx& c) {
  const Tensor& x = treeInput(c);
  const Node& n = c.node;
  const int64_t nt = n.attrInt("n_targets");
  AICC_CHECK(nt >= 1, "n_targets must be positive, got {}", nt);
  const Forest f = parseLegacyForest(n, "target", nt);
  static const std::pair<const char*, Aggregate> aggNames[] = {{"SUM", Aggregate::Sum},
                                                               {"AVERAGE", Aggregate::Average},
                                                               {"MIN", Aggregate::Min},
                                                               {"MAX", Aggregate::Max}};
  const std::string aggName = n.attrString("aggregate_function");
  const auto agg = std::find_if(std::begin(aggNames), std::end(aggNames),
                                [&](const auto& e) { return aggName == e.first; });
  AICC_CHECK(agg != std::end(aggNames),
             "aggregate_function must be SUM, AVERAGE, MIN or MAX, got '{}'", aggName);
  const std::vector<double> base = floatsOrTensor(n, "base_values", false);
  AICC_CHECK(base.empty() || static_cast<int64_t>(base.size()) == nt,
             "base_values has {} entries for {} targets", base.size(), nt);
  const PostTransform p = postTransformAttr(n);
  Tensor y(DType::F32, {x.dim(0), nt});
  for (int64_t r = 0; r < x.dim(0); ++r) {
    TreeScores s = walkForest(f, agg->second, x, r, x.dim(1));
    for (size_t t = 0; t < base.size(); ++t) s.score[t] += base[t];
    const std::vector<double> out = finishScores(s.score, p, SecondClass::None);
    for (int64_t t = 0; t < nt; ++t) y.setF64(r * nt + t, out[static_cast<size_t>(t)]);
  }
  return {RValue::of(y)};
}

void inferTreeRegressor(InferCtx& c) {
  const auto& s = c.inShape(0);
  c.setTensor(
      0, DType::F32,
      Shape{s && s->size() == 2 ? (*s)[0] : Dim{}, Dim::known(c.node.attrInt("n_targets"))});
}

// ---- TreeEnsembleClassifier ---------------------------------------------------------------------

// Two classes: ONNX Runtime's rules for base values, the label and the second score column.
// Returns the class index (or, for integer labels outside the binary case, the label 1 or 0
// itself, marked by `literal`).
int64_t finishBinary(TreeScores& s, const std::vector<double>& base, bool binaryCase,
                     bool allPositive, SecondClass& second, bool& literal) {
  int mode = -1; // ONNX Runtime's write_additional_scores
  if (base.size() == 2) {
    if (s.hit[1]) { // base_values[0] is not used
      s.score[1] = base[1] + s.score[0];
      s.score[0] = -s.score[1];
    } else {
      s.score[1] += base[1];
      s.score[0] += base[0];
    }
  } else {
    if (base.size() == 1) s.score[0] += base[0];
    if (base.empty()) mode = 3;
    if (!s.hit[1]) s.score.pop_back();
  }
  const double pos = s.score.size() == 2 && s.hit[1] ? s.score[1] : (s.hit[0] ? s.score[0] : 0);
  int64_t cls;
  literal = !binaryCase;
  if (!binaryCase)
    cls = pos > 0 ? 1 : 0;
  else if (allPositive)
    cls = pos > 0.5 ? 1 : 0, mode = cls ? 0 : 1;
  else
    cls = pos > 0 ? 1 : 0, mode = cls ? 2 : 3;
  second =
      mode < 0 ? SecondClass::None : (mode <= 1 ? SecondClass::Complement : SecondClass::Negate);
  return cls;
}

std::vector<RValue> treeClassifierKernel(KernelCtx& c) {
  const Tensor& x = treeInput(c);
  const Node& n = c.node;
  const ClassLabels labels = classLabels(n, "classlabels_int64s");
  const int64_t K = static_cast<int64_t>(labels.size());
  const Forest f = parseLegacyForest(n, "class", K);
  const std::vector<double> base = floatsOrTensor(n, "base_values", false);
  AICC_CHECK(base.size() <= static_cast<size_t>(K), "base_values has {} entries for {} classes",
             base.size(), K);
  const PostTransform p = postTransformAttr(n);
  std::set<int64_t> used(f.targets.begin(), f.targets.end());
  bool allPositive = true;
  for (double w : f.weights) allPositive = allPositive && w >= 0;
  const bool binaryCase = K == 2 && used.size() == 1;
  Tensor z(DType::F32, {x.dim(0), K});
  std::vector<int64_t> best(static_cast<size_t>(x.dim(0)));
  bool literal = false;
  for (int64_t r = 0; r < x.dim(0); ++r) {
    TreeScores s = walkForest(f, Aggregate::Sum, x, r, x.dim(1));
    SecondClass second = SecondClass::None;
    int64_t cls = -1;
    if (K > 2) {
      for (size_t k = 0; k < base.size(); ++k) s.score[k] += base[k], s.hit[k] = true;
      for (int64_t k = 0; k < K; ++k)
        if (s.hit[static_cast<size_t>(k)] &&
            (cls < 0 || s.score[static_cast<size_t>(k)] > s.score[static_cast<size_t>(cls)]))
          cls = k;
      AICC_CHECK(cls >= 0, "row {} reaches no leaf with a class weight", r);
    } else {
      AICC_CHECK(K == 2, "a tree classifier needs two classes or more, got {}", K);
      cls = finishBinary(s, base, binaryCase, allPositive, second, literal);
    }
    best[static_cast<size_t>(r)] = cls;
    const std::vector<double> out = finishScores(s.score, p, second);
    for (int64_t k = 0; k < K; ++k)
      z.setF64(r * K + k, k < static_cast<int64_t>(out.size()) ? out[static_cast<size_t>(k)] : 0);
  }
  const bool literalInts = literal && !labels.isString();
  return {RValue::of(labelTensor(literalInts ? literalBinaryLabels(false) : labels, best)),
          RValue::of(z)};
}

void inferTreeClassifier(InferCtx& c) {
  const ClassLabels labels = classLabels(c.node, "classlabels_int64s");
  const auto& s = c.inShape(0);
  const Dim n = s && s->size() == 2 ? (*s)[0] : Dim{};
  c.setTensor(0, labels.isString() ? DType::String : DType::I64, Shape{n});
  c.setTensor(1, DType::F32, Shape{n, Dim::known(static_cast<int64_t>(labels.size()))});
}

// The node attributes both ops share.
void treeNodeAttrs(OpBuilder& b) {
  static const char* ints[] = {"nodes_treeids",      "nodes_nodeids",
                               "nodes_featureids",   "nodes_truenodeids",
                               "nodes_falsenodeids", "nodes_missing_value_tracks_true"};
  for (const char* a : ints) b.attr(a, Attribute::Kind::Ints);
  b.attr("nodes_modes", Attribute::Kind::Strings)
      .attr("nodes_values", Attribute::Kind::Floats)
      .attr("nodes_values_as_tensor", Attribute::Kind::Tensor)
      .attr("nodes_hitrates", Attribute::Kind::Floats)
      .attr("nodes_hitrates_as_tensor", Attribute::Kind::Tensor)
      .attr("base_values", Attribute::Kind::Floats)
      .attr("base_values_as_tensor", Attribute::Kind::Tensor)
      .attrString("post_transform", "NONE");
}

} // namespace

void registerMlTreeLegacyOps(OpRegistry& r) {
  OpBuilder cls = r.op("TreeEnsembleClassifier", kMlDomain);
  treeNodeAttrs(cls);
  cls.since(1)
      .perSample(perRow)
      .inputs(1, 1)
      .outputs(2, 2)
      .attr("class_treeids", Attribute::Kind::Ints)
      .attr("class_nodeids", Attribute::Kind::Ints)
      .attr("class_ids", Attribute::Kind::Ints)
      .attr("class_weights", Attribute::Kind::Floats)
      .attr("class_weights_as_tensor", Attribute::Kind::Tensor)
      .attr("classlabels_int64s", Attribute::Kind::Ints)
      .attr("classlabels_strings", Attribute::Kind::Strings)
      .infer(inferTreeClassifier)
      .kernel(treeClassifierKernel);
  OpBuilder reg = r.op("TreeEnsembleRegressor", kMlDomain);
  treeNodeAttrs(reg);
  reg.since(1)
      .perSample(perRow)
      .inputs(1, 1)
      .attrString("aggregate_function", "SUM")
      .attrInt("n_targets", 1)
      .attr("target_treeids", Attribute::Kind::Ints)
      .attr("target_nodeids", Attribute::Kind::Ints)
      .attr("target_ids", Attribute::Kind::Ints)
      .attr("target_weights", Attribute::Kind::Floats)
      .attr("target_weights_as_tensor", Attribute::Kind::Tensor)
      .infer(inferTreeRegressor)
      .kernel(treeRegressorKernel);
}

} // namespace aicc
