#!/usr/bin/env python3
"""Trains small scikit-learn pipelines on sklearn's bundled data sets, converts them with skl2onnx
and writes each as an ONNX backend-test folder with ONNX Runtime's outputs:

    tests/ml/models/<name>/model.onnx
    tests/ml/models/<name>/test_data_set_0/input_<i>.pb, output_<i>.pb

The folders are checked in, so the ctest (check_ml_models.py) needs neither scikit-learn nor
skl2onnx. Regenerate with (versions pinned in tests/ml/requirements.txt):

    .venv/bin/python tests/ml/make_sklearn_models.py [--out tests/ml/models]
"""
import argparse
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from skl2onnx import to_onnx
from skl2onnx.common.data_types import (DictionaryType, FloatTensorType, Int64TensorType,
                                        StringTensorType)
from sklearn import datasets
from sklearn.decomposition import PCA
from sklearn.feature_extraction import DictVectorizer
from sklearn.ensemble import (GradientBoostingClassifier, GradientBoostingRegressor,
                              RandomForestClassifier, RandomForestRegressor)
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (Binarizer, MinMaxScaler, Normalizer, OneHotEncoder,
                                   OrdinalEncoder, StandardScaler)
from sklearn.svm import SVC, SVR, LinearSVC

ROWS = 16  # rows per test input: enough to exercise every class, small on disk
TARGET_OPSET = {"": 17, "ai.onnx.ml": 3}


def f32(x):
    return np.asarray(x, dtype=np.float32)


def sample(x, rows=ROWS, seed=0):
    idx = np.random.RandomState(seed).permutation(len(x))[:rows]
    return x[idx]


def convert(model, inputs, zipmap=False, options=None):
    """inputs: list of (name, array). Returns the ONNX ModelProto."""
    types = []
    for name, a in inputs:
        shape = [None, a.shape[1]]
        if a.dtype == np.float32:
            types.append((name, FloatTensorType(shape)))
        elif a.dtype == np.int64:
            types.append((name, Int64TensorType(shape)))
        else:
            types.append((name, StringTensorType(shape)))
    final = model.steps[-1][1] if hasattr(model, "steps") else model
    def attempt(extra):
        opts = {**(options or {}), **extra}
        return to_onnx(model, initial_types=types, target_opset=TARGET_OPSET, options=opts or None)

    if zipmap:
        return attempt({})
    try:
        return attempt({id(final): {"zipmap": False}})
    except NameError:  # an estimator without a zipmap option (regressor, transformer, LinearSVC)
        return attempt({})


def map_proto(m, mp):
    """A dict as an ONNX MapProto: the keys, and one scalar tensor per value."""
    keys = list(m.keys())
    if keys and isinstance(keys[0], str):
        mp.key_type = onnx.TensorProto.STRING
        mp.string_keys.extend(k.encode() for k in keys)
    else:
        mp.key_type = onnx.TensorProto.INT64
        mp.keys.extend(int(k) for k in keys)
    mp.values.elem_type = onnx.SequenceProto.TENSOR
    for k in keys:
        mp.values.tensor_values.append(numpy_helper.from_array(np.array(m[k], np.float32)))


def write_case(out, name, proto, inputs):
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds)
    proto.producer_name = "skl2onnx (tests/ml/make_sklearn_models.py)"
    onnx.save(proto, os.path.join(d, "model.onnx"))
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {n: a for n, a in inputs}
    for i, (n, a) in enumerate(inputs):
        with open(os.path.join(ds, f"input_{i}.pb"), "wb") as f:
            if isinstance(a, dict):
                mp = onnx.MapProto(name=n)
                map_proto(a, mp)
                f.write(mp.SerializeToString())
            else:
                f.write(numpy_helper.from_array(a, n).SerializeToString())
    results = sess.run(None, feeds)
    for i, (o, r) in enumerate(zip(sess.get_outputs(), results)):
        if isinstance(r, list):  # ZipMap: a sequence of maps
            seq = onnx.SequenceProto(name=o.name, elem_type=onnx.SequenceProto.MAP)
            for m in r:
                map_proto(m, seq.map_values.add())
            data = seq.SerializeToString()
        else:
            data = numpy_helper.from_array(np.asarray(r), o.name).SerializeToString()
        with open(os.path.join(ds, f"output_{i}.pb"), "wb") as f:
            f.write(data)
    ops = sorted({(n.domain or "ai.onnx") + "." + n.op_type for n in proto.graph.node})
    print(f"{name:32s} {os.path.getsize(os.path.join(d, 'model.onnx')):8d} B  {' '.join(ops)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "models"))
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)

    iris_x, iris_y = datasets.load_iris(return_X_y=True)
    iris_x = f32(iris_x)
    diab_x, diab_y = datasets.load_diabetes(return_X_y=True)
    diab_x = f32(diab_x)
    bc_x, bc_y = datasets.load_breast_cancer(return_X_y=True)
    bc_x = f32(bc_x)
    wine_x, wine_y = datasets.load_wine(return_X_y=True)
    wine_x = f32(wine_x)
    dig_x, dig_y = datasets.load_digits(return_X_y=True)
    dig_x = f32(dig_x)

    def case(name, model, x, fit_x, fit_y=None, zipmap=False, options=None):
        model.fit(fit_x, fit_y) if fit_y is not None else model.fit(fit_x)
        inputs = [("X", x)] if not isinstance(x, list) else x
        write_case(out, name, convert(model, inputs, zipmap, options), inputs)

    # Scalers followed by a model.
    case("standard_scaler_logreg_iris", make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
         sample(iris_x), iris_x, iris_y)
    case("minmax_scaler_ridge_diabetes", make_pipeline(MinMaxScaler(), Ridge(alpha=0.5)),
         sample(diab_x), diab_x, diab_y)
    case("pca_logreg_digits", make_pipeline(PCA(n_components=8), LogisticRegression(max_iter=1000)),
         sample(dig_x), dig_x, dig_y)
    case("linear_regression_diabetes", LinearRegression(), sample(diab_x), diab_x, diab_y)
    case("logreg_binary_breast_cancer",
         make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
         sample(bc_x), bc_x, bc_y)
    # ZipMap kept (the default): probabilities as a sequence of maps.
    case("logreg_multiclass_wine_zipmap",
         make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
         sample(wine_x), wine_x, wine_y, zipmap=True)
    case("linear_svc_wine", LinearSVC(), sample(wine_x), wine_x, wine_y)
    case("linear_svc_binary_breast_cancer", LinearSVC(),
         sample(bc_x), bc_x, bc_y)
    case("svc_rbf_proba_iris", SVC(kernel="rbf", probability=True, random_state=0),
         sample(iris_x), iris_x, iris_y)
    case("svc_poly_wine", make_pipeline(StandardScaler(), SVC(kernel="poly", degree=2)),
         sample(wine_x), wine_x, wine_y)
    case("svr_rbf_diabetes", SVR(kernel="rbf", C=50.0), sample(diab_x), diab_x, diab_y)
    case("random_forest_classifier_iris",
         RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0),
         sample(iris_x), iris_x, iris_y)
    case("random_forest_binary_breast_cancer",
         RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0),
         sample(bc_x), bc_x, bc_y)
    case("random_forest_regressor_diabetes",
         RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0),
         sample(diab_x), diab_x, diab_y)
    case("gradient_boosting_classifier_wine",
         GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0),
         sample(wine_x), wine_x, wine_y)
    case("gradient_boosting_binary_breast_cancer",
         GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0),
         sample(bc_x), bc_x, bc_y)
    case("gradient_boosting_regressor_diabetes",
         GradientBoostingRegressor(n_estimators=5, max_depth=3, random_state=0),
         sample(diab_x), diab_x, diab_y)
    case("normalizer_l2_linreg_diabetes", make_pipeline(Normalizer(norm="l2"), LinearRegression()),
         sample(diab_x), diab_x, diab_y)
    case("normalizer_l1_iris", Normalizer(norm="l1"), sample(iris_x), iris_x)
    case("normalizer_max_iris", Normalizer(norm="max"), sample(iris_x), iris_x)
    case("binarizer_breast_cancer", Binarizer(threshold=10.0), sample(bc_x), bc_x)

    # Missing values, imputed with the column means.
    miss = diab_x.copy()
    rs = np.random.RandomState(1)
    miss[rs.rand(*miss.shape) < 0.1] = np.nan
    case("simple_imputer_linreg_diabetes", make_pipeline(SimpleImputer(), LinearRegression()),
         sample(miss), miss, diab_y)

    # Categorical features: strings one-hot encoded, int64 ordinal-encoded, then a classifier.
    rs = np.random.RandomState(2)
    n = 200
    colors = np.array(["red", "green", "blue", "black"])[rs.randint(0, 4, n)]
    sizes = rs.randint(0, 5, n).astype(np.int64)
    cat_y = ((colors == "red") | (sizes > 2)).astype(np.int64)
    cat_s = colors.reshape(-1, 1).astype(object)
    cat_i = sizes.reshape(-1, 1)
    pipe = make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression())
    pipe.fit(cat_s, cat_y)
    xs = sample(cat_s).copy()
    xs[0, 0] = "purple"  # an unknown category: all zeros
    write_case(out, "onehot_strings_logreg", convert(pipe, [("X", xs)]), [("X", xs)])
    pipe = make_pipeline(OneHotEncoder(), LogisticRegression())
    pipe.fit(cat_i, cat_y)
    write_case(out, "onehot_int64_logreg", convert(pipe, [("X", sample(cat_i))]), [("X", sample(cat_i))])
    enc = OrdinalEncoder()
    enc.fit(cat_s)
    write_case(out, "ordinal_encoder_strings", convert(enc, [("X", xs)]), [("X", xs)])

    # String labels: the classifier's label output is a string tensor (ZipMap keys are strings).
    names = np.array(["setosa", "versicolor", "virginica"])[iris_y]
    case("decision_forest_string_labels_iris_zipmap",
         RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0),
         sample(iris_x), iris_x, names, zipmap=True)

    # DictVectorizer: one map<string, float> (a row of named features) to a dense row.
    dv = DictVectorizer(sparse=False)
    dv.fit([{"age": 31.0, "height": 1.8}, {"weight": 70.0, "age": 22.0}, {"city_paris": 1.0}])
    proto = to_onnx(dv, initial_types=[("X", DictionaryType(StringTensorType([]), FloatTensorType([])))],
                    target_opset=TARGET_OPSET)
    write_case(out, "dict_vectorizer", proto,
               [("X", {"age": 40.0, "city_paris": 1.0, "unknown": 5.0, "height": 1.6})])

    # Text: TF-IDF over word tokens (com.microsoft Tokenizer + TfIdfVectorizer), then a classifier.
    corpus = np.array([
        "The cat sat on the mat.", "Dogs and cats are friends!", "A quick brown fox jumps.",
        "The dog barked at the cat", "Foxes are quick and brown", "My cat likes the warm mat",
        "Dogs chase foxes in the field", "The brown dog sleeps",
    ])
    labels = np.array([0, 1, 2, 1, 2, 0, 1, 1])
    # lowercase=False: skl2onnx would add a StringNormalizer with locale en_US.UTF-8, which ONNX
    # Runtime cannot construct where that locale is not installed.
    tf = make_pipeline(TfidfVectorizer(lowercase=False), LogisticRegression(max_iter=500))
    tf.fit(corpus, labels)
    tx = corpus.reshape(-1, 1).astype(object)
    proto = to_onnx(tf, initial_types=[("X", StringTensorType([None, 1]))],
                    target_opset=TARGET_OPSET, options={id(tf.steps[-1][1]): {"zipmap": False}})
    write_case(out, "tfidf_logreg_text", proto, [("X", tx)])


if __name__ == "__main__":
    main()
