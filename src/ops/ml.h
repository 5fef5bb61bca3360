// The ai.onnx.ml op family, split over several files:
//   ml.cpp              LabelEncoder, ArrayFeatureExtractor, Binarizer (and registerMlOps, which
//                       calls the others); the classifier score helpers shared by the others
//   ml_transform.cpp    Scaler, Normalizer, Imputer, FeatureVectorizer
//   ml_encode.cpp       OneHotEncoder, CategoryMapper
//   ml_linear.cpp       LinearClassifier, LinearRegressor
//   ml_svm.cpp          SVMClassifier, SVMRegressor
//   ml_map.cpp          ZipMap, DictVectorizer (map values)
//   ml_tree.cpp         TreeEnsemble (ai.onnx.ml opset 5) and the forest walk shared with
//   ml_tree_legacy.cpp  TreeEnsembleClassifier, TreeEnsembleRegressor (opsets 1 and 3)
#pragma once

#include "ops/helpers.h"

namespace aicc {

void registerMlTreeOps(OpRegistry& r);
void registerMlTreeLegacyOps(OpRegistry& r);
void registerMlTransformOps(OpRegistry& r);
void registerMlEncodeOps(OpRegistry& r);
void registerMlLinearOps(OpRegistry& r);
void registerMlSvmOps(OpRegistry& r);
void registerMlMapOps(OpRegistry& r);

// OpDef::perSample of the ops that compute each row of X [N, F] (N the batch) alone: X of rank 2
// or more (a 1-D X is one row).
bool perRow(const Node& n);

// ---- Scores of the classifiers and regressors ---------------------------------------------------

// The order of TreeEnsemble's integer post_transform attribute.
enum class PostTransform { None, Softmax, Logistic, SoftmaxZero, Probit };
// The string post_transform attribute of the older ops ("NONE", "SOFTMAX", ...).
PostTransform postTransformAttr(const Node& n);
// Applies the transform to one row of scores in place.
void postTransform(PostTransform p, double* v, int64_t n);
double logistic(double v);

// How a classifier with a single score per row turns it into two columns (as ONNX Runtime does):
// Complement: [1 - s, s] (s used as is, whatever the transform); Negate: [-s, s], or
// [logistic(-s), logistic(s)] under LOGISTIC.
enum class SecondClass { None, Complement, Negate };
// Post-transforms one row of scores: two or more scores get the transform; a single score gets
// PROBIT, or else becomes two columns as `second` says.
std::vector<double> finishScores(std::vector<double> s, PostTransform p, SecondClass second);

// The class labels of a classifier: classlabels_strings, else the integer attribute `intsName`
// (classlabels_ints or classlabels_int64s).
struct ClassLabels {
  std::vector<std::string> strings;
  std::vector<int64_t> ints;
  bool isString() const { return !strings.empty(); }
  size_t size() const { return isString() ? strings.size() : ints.size(); }
};
ClassLabels classLabels(const Node& n, const std::string& intsName);
// A label tensor [rows] holding the labels of the given class indices.
Tensor labelTensor(const ClassLabels& labels, const std::vector<int64_t>& classIndex);
// The labels "0" / "1" (or 0 / 1) a binary classifier gives when it has not two class labels.
ClassLabels literalBinaryLabels(bool strings);
// ---- LinearClassifier / LinearRegressor (ml_linear.cpp), shared with their lowering

// The coefficient rows (classes or targets) of a linear model over `features` inputs.
struct Linear {
  std::vector<double> coef, intercepts;
  int64_t rows = 0;
};
Linear linearModel(const Node& n, int64_t features, int64_t rowsHint);
// A LinearClassifier's coefficient rows, and its score columns (one row with two labels: two).
int64_t classifierRows(const Node& n, const ClassLabels& labels);
int64_t classifierColumns(int64_t rows, const ClassLabels& labels, PostTransform p);

// ---- SVMClassifier / SVMRegressor (ml_svm.cpp), shared with their lowering

struct SvmKernel {
  enum Type { Linear, Poly, Rbf, Sigmoid };
  Type type = Linear;
  float gamma = 0, coef0 = 0, degree = 0;
  // k(x, v) for x and v of `n` features, in float as ONNX Runtime.
  float operator()(const float* x, const float* v, int64_t n) const;
};
SvmKernel svmKernel(const Node& n);

struct SvmClassifier {
  ClassLabels labels;
  SvmKernel kernel;
  std::vector<float> coef, rho, probA, probB, vectors;
  std::vector<int64_t> perClass, start;
  int64_t classes = 0, nVectors = 0, features = 0;
  bool svc = false, allPositive = true;
  PostTransform post = PostTransform::None;

  int64_t pairs() const { return classes * (classes - 1) / 2; }
  bool proba() const { return !probA.empty(); }
  // Columns of the score output.
  int64_t columns() const {
    if (!svc || proba()) return classes;
    return classes > 2 ? pairs() : 2;
  }
};

SvmClassifier parseSvmClassifier(const Node& n);

struct SvmRegressor {
  SvmKernel kernel;
  std::vector<float> coef, rho, vectors;
  int64_t nSupports = 0, features = 0;
  bool oneClass = false;
  PostTransform post = PostTransform::None;
};
SvmRegressor parseSvmRegressor(const Node& n);

// Floats attribute `name`, else `name`_as_tensor (opset 3 of the tree ensembles), else `dflt`
// when given; throws when required and absent.
std::vector<double> floatsOrTensor(const Node& n, const std::string& name, bool required = true);

// A floating-point input's rows: X as [N, F] (a 1-D X is one row).
struct Rows {
  int64_t n = 0, features = 0;
};
Rows rowsOf(const Tensor& x);
// N of input X's shape (1 for a 1-D X), for inference.
Dim rowsDimOf(InferCtx& c);

// ---- The forest shared by TreeEnsemble and TreeEnsembleClassifier/Regressor
// ----------------------

enum class TreeMode { LEQ, LT, GTE, GT, EQ, NEQ, MEMBER };

// Branch nodes by index; a branch leads to another node or to a leaf. Leaf `l` adds
// weights[leafBegin[l] .. leafBegin[l+1]) to targets[...] (TreeEnsemble: one weight per leaf;
// the older ops: one per class or target the leaf names).
struct Forest {
  std::vector<TreeMode> modes;
  std::vector<double> splits;
  std::vector<int64_t> features, trueIds, falseIds;
  std::vector<bool> trueLeaf, falseLeaf, missingTrue;
  std::vector<std::vector<double>> members; // per node, the set of a MEMBER node
  std::vector<size_t> leafBegin;            // one more entry than there are leaves
  std::vector<double> weights;
  std::vector<int64_t> targets, roots;
  int64_t nTargets = 0;
  size_t numLeaves() const { return leafBegin.empty() ? 0 : leafBegin.size() - 1; }
};

// TreeEnsemble's (opset 5) forest from its attributes, checked; shared by its reference kernel and
// its lowering (loop/lower_ml.cpp).
Forest parseTreeEnsemble(const Node& n);
// The forest of a legacy tree ensemble (TreeEnsembleRegressor / Classifier); `prefix` is "class"
// or "target", the kind of leaf outputs, `nTargets` the number of classes or targets.
Forest parseLegacyForest(const Node& n, const std::string& prefix, int64_t nTargets);
// Checks branch targets, feature ids, roots and leaf targets (messages name the attribute).
void checkForest(const Forest& f);
// The leaf a row of x ([N, nFeatures]) reaches from `root`.
size_t findLeaf(const Forest& f, size_t root, const Tensor& x, int64_t row, int64_t nFeatures);

} // namespace aicc
