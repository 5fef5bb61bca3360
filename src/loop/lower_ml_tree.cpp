// The tree ensembles of ai.onnx.ml (TreeEnsemble, TreeEnsembleRegressor, TreeEnsembleClassifier)
// as the reference computes them (ops/ml_tree.cpp, ops/ml_tree_legacy.cpp): one forest lowering,
// the ops' aggregation and finishing around it.
#include "loop/lower_ml.h"
#include "ops/op_def.h"

#include <limits>
#include <set>

namespace aicc::loop::detail {

namespace {

// How a forest's leaf weights become its result (TreeEnsemble's attributes, or the legacy ops').
struct ForestSpec {
  int64_t aggregate = 1;                    // 0 average, 1 sum, 2 min, 3 max
  PostTransform post = PostTransform::None; // (Probit: the reference's)
  bool averageAfter = false; // legacy: the sum divided by the trees after (else each weight)
  bool noPostForOne = false; // legacy: no post transform for a single target (finishScores)
  std::vector<double> base;  // added to the targets' scores before the post transform
  // Instead of base, post transform and store (TreeEnsembleClassifier): the rest of row r from
  // the aggregated scores `acc` (f64) and the targets' hit flags `hit` (i64).
  std::function<Block(FuncBuilder& b, const std::string& acc, const std::string& hit,
                      const ExprPtr& r)>
      finish;
};

// A forest (ops/ml.h) as constant tables; per row and tree a walk from the root (at most as many
// steps as nodes: a forest with a cycle is refused here, as the reference refuses it at run time)
// comparing the row's feature with the node's split by its mode (a NaN feature goes true where the
// node tracks missing values that way; a membership node looks through its set), the leaf's
// weights aggregated into their targets in double, then the post transform (none, logistic,
// softmax, softmax_zero; probit stays on the reference).
std::optional<LoweredNode> lowerForest(const Node& n, const std::string& name,
                                       const LowerOptions& o, const Forest& f,
                                       const ForestSpec& spec) {
  const Value* xv = n.inputs.at(0);
  const DType t = xv->type.dtype, yt = n.outputs.at(0)->type.dtype;
  if (!isMlNumeric(t)) no("a tree ensemble of f32 / f64 / int32 / int64");
  if (!spec.finish && yt != DType::F32 && yt != DType::F64) no("a result other than f32 / f64");
  const Dims xd = staticDims(xv, "X");
  if (xd.size() != 2) no("an X of rank other than 2");
  const int64_t agg = spec.aggregate;
  const PostTransform pt = spec.post;
  if (agg < 0 || agg > 3 || pt == PostTransform::Probit)
    no("post_transform PROBIT or invalid attributes");
  const int64_t rows = xd[0], F = xd[1], nt = f.nTargets, N = int64_t(f.modes.size()),
                R = int64_t(f.roots.size());
  for (int64_t k = 0; k < N; ++k)
    if (f.features[size_t(k)] >= F) no("a node reads a feature past X's");
  // Every tree's walk ends: no node reached twice from its root.
  for (int64_t root : f.roots) {
    std::vector<bool> seen(size_t(N), false);
    std::vector<int64_t> stack = {root};
    while (!stack.empty()) {
      const size_t i = size_t(stack.back());
      stack.pop_back();
      if (seen[i]) no("a tree with a cycle or a shared node");
      seen[i] = true;
      if (!f.trueLeaf[i]) stack.push_back(f.trueIds[i]);
      if (!f.falseLeaf[i] && !(f.falseIds[i] == f.trueIds[i] && !f.trueLeaf[i]))
        stack.push_back(f.falseIds[i]);
    }
  }
  auto ints = [](const std::vector<int64_t>& v) {
    Tensor x(DType::I64, {std::max<int64_t>(1, int64_t(v.size()))});
    for (size_t k = 0; k < v.size(); ++k) x.setI64(int64_t(k), v[k]);
    return x;
  };
  auto reals = [](const std::vector<double>& v) {
    Tensor x(DType::F64, {std::max<int64_t>(1, int64_t(v.size()))});
    for (size_t k = 0; k < v.size(); ++k) x.setF64(int64_t(k), v[k]);
    return x;
  };
  std::vector<int64_t> mode, flags, memberBegin, memberEnd;
  std::vector<double> members;
  for (int64_t k = 0; k < N; ++k) {
    const size_t i = size_t(k);
    mode.push_back(int64_t(f.modes[i]));
    flags.push_back(int64_t(f.trueLeaf[i]) | int64_t(f.falseLeaf[i]) << 1 |
                    int64_t(f.missingTrue[i]) << 2);
    memberBegin.push_back(int64_t(members.size()));
    members.insert(members.end(), f.members[i].begin(), f.members[i].end());
    memberEnd.push_back(int64_t(members.size()));
  }
  const std::vector<int64_t> leafBegin(f.leafBegin.begin(), f.leafBegin.end());
  FuncBuilder b(n, name, "data");
  const std::string x = b.input(xv);
  auto table = [&](const char* what, Tensor v) { return b.constant(what, std::move(v), what); };
  const std::string modeB = table("node_mode", ints(mode)),
                    splitB = table("node_split", reals(f.splits)),
                    featB = table("node_feature", ints(f.features)),
                    trueB = table("node_true", ints(f.trueIds)),
                    falseB = table("node_false", ints(f.falseIds)),
                    flagB = table("node_flags", ints(flags)),
                    mbB = table("member_begin", ints(memberBegin)),
                    meB = table("member_end", ints(memberEnd)),
                    memB = table("members", reals(members)),
                    beginB = table("leaf_begin", ints(leafBegin)),
                    targetB = table("weight_target", ints(f.targets)),
                    weightB = table("weight", reals(f.weights)),
                    rootB = table("roots", ints(f.roots));
  const std::string acc = b.temp("scores", DType::F64, {std::max<int64_t>(nt, 1)}),
                    hit = b.temp("hit", DType::I64, {std::max<int64_t>(nt, 1)}),
                    walk = b.temp("walk", DType::I64, {3}); // [node, leaf, member found]
  const std::string rv = b.fresh("r"), qv = b.fresh("q"), sv = b.fresh("step"), jv = b.fresh("j"),
                    mv = b.fresh("m"), xvv = b.fresh("x"), tv = b.fresh("t"), kv = b.fresh("k");
  auto i64 = [](int64_t v) { return intImm(v); };
  auto f64 = [](double v) { return floatImm(v, DType::F64); };
  auto ld = [&](const std::string& buf, const ExprPtr& at) { return load(buf, at, DType::I64); };
  auto ldf = [&](const std::string& buf, const ExprPtr& at) { return load(buf, at, DType::F64); };
  const ExprPtr cur = ld(walk, i64(0)), leaf = ld(walk, i64(1)), r = var(rv);
  const ExprPtr flag = ld(flagB, cur);
  auto bit = [&](int k) { return cmp(Op::Ne, binary(Op::BitAnd, flag, i64(1 << k)), i64(0)); };
  const ExprPtr xval = var(xvv, DType::F64), s = ldf(splitB, cur), md = ld(modeB, cur);
  auto is = [&](TreeMode m) { return cmp(Op::Eq, md, i64(int64_t(m))); };
  const ExprPtr test =
      select(is(TreeMode::LEQ), cmp(Op::Le, xval, s),
             select(is(TreeMode::LT), cmp(Op::Lt, xval, s),
                    select(is(TreeMode::GTE), cmp(Op::Ge, xval, s),
                           select(is(TreeMode::GT), cmp(Op::Gt, xval, s),
                                  select(is(TreeMode::EQ), cmp(Op::Eq, xval, s),
                                         select(is(TreeMode::NEQ), cmp(Op::Ne, xval, s),
                                                cmp(Op::Ne, ld(walk, i64(2)), i64(0))))))));
  const ExprPtr truth = binary(Op::Or, binary(Op::And, cmp(Op::Ne, xval, xval), bit(2)), test);
  Block step = {Stmt::let(xvv, cast(DType::F64, load(x, add(mul(r, i64(F)), ld(featB, cur)), t))),
                Stmt::store(walk, i64(2), i64(0)),
                Stmt::ifThen(is(TreeMode::MEMBER),
                             {Stmt::forLoop(mv, ld(mbB, cur), ld(meB, cur),
                                            {Stmt::ifThen(cmp(Op::Eq, ldf(memB, var(mv)), xval),
                                                          {Stmt::store(walk, i64(2), i64(1))})})}),
                Stmt::let(tv, truth),
                Stmt::ifThen(var(tv, DType::Bool),
                             {Stmt::ifThen(bit(0), {Stmt::store(walk, i64(1), ld(trueB, cur))},
                                           {Stmt::store(walk, i64(0), ld(trueB, cur))})},
                             {Stmt::ifThen(bit(1), {Stmt::store(walk, i64(1), ld(falseB, cur))},
                                           {Stmt::store(walk, i64(0), ld(falseB, cur))})})};
  const ExprPtr root = ld(rootB, var(qv));
  Block tree = {Stmt::store(walk, i64(0), root), Stmt::store(walk, i64(1), i64(-1))};
  // A root whose branches both lead to the same leaf is that leaf.
  {
    const ExprPtr rf = ld(flagB, root);
    const ExprPtr both = binary(Op::And, cmp(Op::Eq, binary(Op::BitAnd, rf, i64(3)), i64(3)),
                                cmp(Op::Eq, ld(trueB, root), ld(falseB, root)));
    tree.push_back(Stmt::ifThen(both, {Stmt::store(walk, i64(1), ld(trueB, root))}));
  }
  tree.push_back(Stmt::forLoop(sv, i64(0), i64(N + 1),
                               {Stmt::ifThen(cmp(Op::Lt, leaf, i64(0)), std::move(step))}));
  // The leaf's weights (one each for TreeEnsemble; any number for the legacy ops).
  const ExprPtr lf = max(leaf, i64(0)), k = var(kv), tg = ld(targetB, k), w = ldf(weightB, k);
  const ExprPtr a = ldf(acc, tg), h = cmp(Op::Ne, ld(hit, tg), i64(0));
  const ExprPtr next = agg == 1   ? add(a, w) // SUM
                       : agg == 0 ? (spec.averageAfter ? add(a, w) : add(a, div(w, f64(double(R)))))
                       : agg == 2 ? select(h, min(a, w), w)  // MIN
                                  : select(h, max(a, w), w); // MAX
  tree.push_back(Stmt::forLoop(kv, ld(beginB, lf), ld(beginB, add(lf, i64(1))),
                               {Stmt::store(acc, tg, next), Stmt::store(hit, tg, i64(1))}));
  Block row = {Stmt::forLoop(
      jv, i64(0), i64(nt), {Stmt::store(acc, var(jv), f64(0)), Stmt::store(hit, var(jv), i64(0))})};
  row.push_back(Stmt::forLoop(qv, i64(0), i64(R), std::move(tree)));
  if (agg == 0 && spec.averageAfter)
    row.push_back(Stmt::forLoop(
        jv, i64(0), i64(nt), {Stmt::store(acc, var(jv), div(ldf(acc, var(jv)), f64(double(R))))}));
  if (spec.finish) {
    for (auto& st : spec.finish(b, acc, hit, r)) row.push_back(std::move(st));
    return b.finish(nest({rv}, {rows}, std::move(row), false), {}, o);
  }
  const std::string y = b.output(0);
  for (size_t j = 0; j < spec.base.size() && int64_t(j) < nt; ++j)
    row.push_back(
        Stmt::store(acc, i64(int64_t(j)), add(ldf(acc, i64(int64_t(j))), f64(spec.base[j]))));
  // The post transform (ops/ml.cpp postTransform).
  const ExprPtr v = ldf(acc, var(jv));
  if (!(spec.noPostForOne && nt == 1))
    for (auto& st : postTransformRow(b, acc, nt, pt)) row.push_back(std::move(st));
  row.push_back(Stmt::forLoop(jv, i64(0), i64(nt),
                              {Stmt::store(y, add(mul(r, i64(nt)), var(jv)), cast(yt, v))}));
  return b.finish(nest({rv}, {rows}, std::move(row), false), {}, o);
}

std::optional<LoweredNode> lowerTreeEnsemble(const Node& n, const std::string& name,
                                             const LowerOptions& o) {
  Forest f;
  try {
    f = parseTreeEnsemble(n);
  } catch (const Error& e) {
    no(e.what()); // (the reference kernel reports it at run time)
  }
  ForestSpec spec;
  spec.aggregate = n.attrInt("aggregate_function");
  const int64_t pt = n.attrInt("post_transform"); // (the enum's order, as the reference reads it)
  if (pt < 0 || pt > 4) no("an invalid post_transform (the reference kernel reports it)");
  spec.post = static_cast<PostTransform>(pt);
  return lowerForest(n, name, o, f, spec);
}

// TreeEnsembleRegressor (sklearn's tree and forest regressors, gradient boosting): its forest
// parsed as the reference does, base values added, averaged after the sum.
std::optional<LoweredNode> lowerTreeRegressor(const Node& n, const std::string& name,
                                              const LowerOptions& o) {
  Forest f;
  ForestSpec spec;
  try {
    f = parseLegacyForest(n, "target", n.attrInt("n_targets"));
    spec.base = floatsOrTensor(n, "base_values", false);
    spec.post = postTransformAttr(n);
  } catch (const Error& e) {
    no(e.what());
  }
  const std::string agg = n.attrString("aggregate_function");
  spec.aggregate = agg == "AVERAGE" ? 0
                   : agg == "SUM"   ? 1
                   : agg == "MIN"   ? 2
                   : agg == "MAX"   ? 3
                                    : -1;
  spec.averageAfter = spec.noPostForOne = true;
  if (!spec.base.empty() && int64_t(spec.base.size()) != f.nTargets)
    no("base_values of another size");
  return lowerForest(n, name, o, f, spec);
}

// TreeEnsembleClassifier (sklearn's tree, forest and boosting classifiers, integer labels): the
// class weights summed by the forest lowering, then the reference's finishing
// (ops/ml_tree_legacy.cpp): more than two classes: base values added, the first largest class
// reached, every score post-transformed; two: ONNX Runtime's rules for base values, the label
// (the literal 0 / 1 outside the binary case) and the second score column. Declined: string
// labels, PROBIT, a leaf without a class weight (a row could reach no class: the reference's
// error).
std::optional<LoweredNode> lowerTreeClassifier(const Node& n, const std::string& name,
                                               const LowerOptions& o) {
  Forest f;
  ClassLabels labels;
  std::vector<double> base;
  PostTransform p;
  try {
    labels = classLabels(n, "classlabels_int64s");
    f = parseLegacyForest(n, "class", int64_t(labels.size()));
    base = floatsOrTensor(n, "base_values", false);
    p = postTransformAttr(n);
  } catch (const Error& e) {
    no(e.what());
  }
  const int64_t K = int64_t(labels.size());
  if (labels.isString()) no("string labels (strings are not compiled)");
  if (p == PostTransform::Probit) no("post_transform PROBIT");
  if (K < 2 || int64_t(base.size()) > K) no("fewer than two classes, or more base values");
  if (f.roots.empty()) no("no tree");
  for (size_t l = 0; l + 1 < f.leafBegin.size(); ++l)
    if (f.leafBegin[l + 1] == f.leafBegin[l]) no("a leaf without a class weight");
  const std::set<int64_t> used(f.targets.begin(), f.targets.end());
  bool allPositive = true;
  for (double w : f.weights) allPositive = allPositive && w >= 0;
  const bool binaryCase = K == 2 && used.size() == 1;
  ForestSpec spec;
  spec.finish = [&](FuncBuilder& b, const std::string& acc, const std::string& hit,
                    const ExprPtr& r) {
    auto f64 = [](double v) { return floatImm(v, DType::F64); };
    auto s = [&](int64_t k) { return load(acc, intImm(k), DType::F64); };
    auto h = [&](int64_t k) { return cmp(Op::Ne, load(hit, intImm(k), DType::I64), intImm(0)); };
    auto set = [&](int64_t k, ExprPtr v) { return Stmt::store(acc, intImm(k), std::move(v)); };
    const std::string label = b.output(0), z = b.output(1), best = b.temp("best", DType::I64, {1});
    const ExprPtr bi = load(best, intImm(0), DType::I64);
    auto zAt = [&](int64_t k) { return add(mul(r, intImm(K)), intImm(k)); };
    Block row;
    bool literal = false;
    if (K > 2) {
      for (size_t k = 0; k < base.size(); ++k) {
        row.push_back(set(int64_t(k), add(s(int64_t(k)), f64(base[k]))));
        row.push_back(Stmt::store(hit, intImm(int64_t(k)), intImm(1)));
      }
      const std::string kv = b.fresh("k");
      const ExprPtr k = var(kv), sk = load(acc, k, DType::F64);
      row.push_back(Stmt::store(best, intImm(0), intImm(-1)));
      row.push_back(Stmt::forLoop(
          kv, intImm(0), intImm(K),
          {Stmt::ifThen(binary(Op::And, cmp(Op::Ne, load(hit, k, DType::I64), intImm(0)),
                               binary(Op::Or, cmp(Op::Lt, bi, intImm(0)),
                                      cmp(Op::Gt, sk, load(acc, max(bi, intImm(0)), DType::F64)))),
                        {Stmt::store(best, intImm(0), k)})}));
      for (auto& st : postTransformRow(b, acc, K, p)) row.push_back(std::move(st));
      for (int64_t c = 0; c < K; ++c) row.push_back(Stmt::store(z, zAt(c), cast(DType::F32, s(c))));
    } else {
      // Two scores, or one (the second class never reached and no pair of base values).
      ExprPtr two = intImm(1, DType::Bool);
      if (base.size() == 2) {
        row.push_back(
            Stmt::ifThen(h(1), {set(1, add(f64(base[1]), s(0))), set(0, neg(s(1)))},
                         {set(1, add(s(1), f64(base[1]))), set(0, add(s(0), f64(base[0])))}));
      } else {
        if (base.size() == 1) row.push_back(set(0, add(s(0), f64(base[0]))));
        two = h(1);
      }
      const ExprPtr pos = select(binary(Op::And, two, h(1)), s(1), select(h(0), s(0), f64(0)));
      literal = !binaryCase;
      const double cut = binaryCase && allPositive ? 0.5 : 0.0;
      row.push_back(
          Stmt::store(best, intImm(0), select(cmp(Op::Gt, pos, f64(cut)), intImm(1), intImm(0))));
      // One score: [1 - v, v] (binary, all weights positive), [-v, v] (logistic of each under
      // LOGISTIC; binary otherwise, or no base values), else [v, 0].
      const ExprPtr v = s(0);
      std::pair<ExprPtr, ExprPtr> one = {v, f64(0)};
      if (binaryCase && allPositive)
        one = {sub(f64(1), v), v};
      else if (binaryCase || base.empty())
        one = p == PostTransform::Logistic ? std::pair{logisticOf(neg(v)), logisticOf(v)}
                                           : std::pair{neg(v), v};
      Block both = postTransformRow(b, acc, 2, p);
      both.push_back(Stmt::store(z, zAt(0), cast(DType::F32, s(0))));
      both.push_back(Stmt::store(z, zAt(1), cast(DType::F32, s(1))));
      row.push_back(Stmt::ifThen(two, std::move(both),
                                 {Stmt::store(z, zAt(0), cast(DType::F32, one.first)),
                                  Stmt::store(z, zAt(1), cast(DType::F32, one.second))}));
    }
    row.push_back(
        storeLabel(b, literal ? literalBinaryLabels(false).ints : labels.ints, label, r, bi));
    return row;
  };
  return lowerForest(n, name, o, f, spec);
}

} // namespace

std::optional<LoweredNode> lowerMlTreeFamily(const Node& n, const std::string& name,
                                             const LowerOptions& o) {
  if (n.op == "TreeEnsemble") return lowerTreeEnsemble(n, name, o);
  if (n.op == "TreeEnsembleRegressor") return lowerTreeRegressor(n, name, o);
  if (n.op == "TreeEnsembleClassifier") return lowerTreeClassifier(n, name, o);
  return std::nullopt;
}

} // namespace aicc::loop::detail
