// DFT as a constant linear map. Every form of ONNX DFT (forward, inverse, one-sided, truncated or
// zero-padded to dft_length, the inverse real transform's Hermitian mirror) is linear in the
// input lane's n * comp values, so the compiler runs the reference kernel (src/ops/signal.cpp)
// on each unit lane, in f64, and stores the columns as a matrix M [outLen * outComp, n * comp]:
//   y[k, c] = sum over (j, c') of M[(k, c), (j, c')] * x[j, c']    (summed in f64, then rounded)
// the same map as the reference's f64 FFT up to the order of its f64 sums. The direct sum costs
// outLen * n multiply-adds per lane, so transforms longer than kMaxLength (an audio frame of
// 512 and up) keep the reference's FFT.
#include "interp/interpreter.h"
#include "loop/lower_ops.h"

#include <map>

namespace aicc::loop::detail {

namespace {

constexpr int64_t kMaxLength = 256;

// A scalar integer input that is a constant, or nullopt when absent.
std::optional<int64_t> constScalar(const Node& n, size_t i, const char* what) {
  if (!n.hasInput(i)) return std::nullopt;
  const Value* v = n.inputs[i];
  if (!v->constant || v->constant->numel() != 1)
    no(std::string(what) + " is not a constant scalar");
  return v->constant->getI64(0);
}

// The linear map n's reference kernel computes on input xv as an f64 matrix [rows, cols]:
// column q its output on the unit input e_q of shape `lane` (cols elements, f64), the other
// inputs from `others`. nullopt, saying why, when the reference fails or gives another number
// of values; all zeros when only probing (o.probe).
std::optional<Tensor> referenceMatrix(const Node& n, const Value* xv, const Dims& lane,
                                      int64_t rows, const OuterLookup& others,
                                      const LowerOptions& o, std::string& why) {
  const int64_t cols = numel(lane);
  Tensor M(DType::F64, {rows, cols});
  for (int64_t q = 0; q < cols && !o.probe; ++q) {
    Tensor e(DType::F64, lane);
    e.data<double>()[q] = 1.0;
    const RValue in = RValue::of(std::move(e));
    std::vector<RValue> out;
    try {
      out = runReferenceKernel(n, [&](const Value* v) { return v == xv ? &in : others(v); });
    } catch (const std::exception& ex) {
      why = ex.what();
      return std::nullopt;
    }
    const Tensor& r = out.at(0).tensor;
    if (r.numel() != rows) {
      why = "unexpected reference output";
      return std::nullopt;
    }
    for (int64_t k = 0; k < rows; ++k) M.data<double>()[k * cols + q] = r.getF64(k);
  }
  return M;
}

} // namespace

namespace {

// The DFT along `axis` of x [.., len, .., comp] into y [.., outLen, .., outComp]: M's columns are
// the reference on each unit lane [1.., len, ..1, comp] in f64 (`axisValue` the axis input's value
// where it is given at run time), then a direct sum per lane. nullopt when the reference's lane
// does not have y's length there (another axis's shapes).
std::optional<Block> dftAlong(const Node& n, FuncBuilder& b, const LowerOptions& o, const Dims& xd,
                              const Dims& yd, int64_t axis, std::optional<int64_t> axisValue) {
  const Value* xv = n.inputs.at(0);
  const DType t = xv->type.dtype;
  const int64_t rank = int64_t(xd.size());
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis && xd[size_t(d)] != yd[size_t(d)]) return std::nullopt;
  const int64_t len = xd[size_t(axis)], comp = xd.back(), outLen = yd[size_t(axis)],
                outComp = yd.back();
  if (std::max(len, outLen) > kMaxLength)
    no("a DFT longer than " + std::to_string(kMaxLength) +
       " keeps the reference FFT (the direct sum grows as the square)");
  Dims lane(xd.size(), 1);
  lane[size_t(axis)] = len, lane.back() = comp;
  const int64_t cols = len * comp, rows = outLen * outComp;
  std::map<const Value*, RValue> consts; // dft_length, axis
  for (const Value* v : n.inputs)
    if (v && v->constant) consts[v] = RValue::of(*v->constant);
  if (axisValue) {
    Tensor a(n.inputs[2]->type.dtype, {});
    a.setI64(0, *axisValue);
    consts[n.inputs[2]] = RValue::of(std::move(a));
  }
  std::string why;
  std::optional<Tensor> M = referenceMatrix(
      n, xv, lane, rows,
      [&](const Value* v) -> const RValue* {
        auto it = consts.find(v);
        return it == consts.end() ? nullptr : &it->second;
      },
      o, why);
  if (!M) {
    if (axisValue) return std::nullopt;
    no(why);
  }
  const std::string Y = b.output(0), X = b.input(xv);
  const std::string MB = b.constant("dft_matrix", std::move(*M), "f64 [outLen*outComp, len*comp]");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xd[size_t(d)];
  for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= xd[size_t(d)];
  const std::string ov = b.loopVar("o"), iv = b.loopVar("i"), rv = b.loopVar("r"),
                    qv = b.loopVar("q"), acc = b.temp("acc", DType::F64, {outer, inner, rows});
  const ExprPtr o_ = var(ov), i_ = var(iv), r_ = var(rv), q_ = var(qv);
  const ExprPtr at = add(mul(add(mul(o_, intImm(inner)), i_), intImm(rows)), r_);
  // x[o, j, i, c'] for q = j * comp + c'; y[o, k, i, c] for r = k * outComp + c.
  const ExprPtr xIdx =
      add(mul(add(mul(add(mul(o_, intImm(len)), div(q_, intImm(comp))), intImm(inner)), i_),
              intImm(comp)),
          mod(q_, intImm(comp)));
  const ExprPtr yIdx =
      add(mul(add(mul(add(mul(o_, intImm(outLen)), div(r_, intImm(outComp))), intImm(inner)), i_),
              intImm(outComp)),
          mod(r_, intImm(outComp)));
  Block lanes = {Stmt::store(acc, at, constant(DType::F64, 0))};
  for (auto& s : nest({qv}, {cols},
                      {Stmt::store(acc, at,
                                   add(load(acc, at, DType::F64),
                                       mul(load(MB, add(mul(r_, intImm(cols)), q_), DType::F64),
                                           cast(DType::F64, load(X, xIdx, t)))))},
                      false))
    lanes.push_back(std::move(s));
  lanes.push_back(Stmt::store(Y, yIdx, cast(t, load(acc, at, DType::F64))));
  // (inside the run-time axis's choice the outer loop is not parallel: one region per task)
  return nest({ov, iv, rv}, {outer, inner, rows}, std::move(lanes), !axisValue);
}

} // namespace

std::optional<LoweredNode> lowerDft(const Node& n, const std::string& name, const LowerOptions& o) {
  const Value *xv = n.inputs.at(0), *yv = n.outputs.at(0);
  const DType t = xv->type.dtype;
  if (t != DType::F32 && t != DType::F64) no("DFT is lowered for f32/f64");
  const Dims xd = staticDims(xv, "input"), yd = staticDims(yv, "output");
  const int64_t rank = int64_t(xd.size());
  if (rank < 2 || (xd.back() != 1 && xd.back() != 2)) no("DFT is lowered for an input [..., 1|2]");
  if (yd.size() != xd.size()) no("output rank differs from the input's");
  constScalar(n, 1, "dft_length"); // (a constant: the output shape is static)
  FuncBuilder b(n, name, "signal");
  Schedule sched;
  sched["layout"] = std::string("direct sum over a constant f64 matrix");
  const Value* av = n.hasInput(2) ? n.inputs[2] : nullptr;
  if (!av || av->constant) {
    int64_t axis = constScalar(n, 2, "axis").value_or(-2);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank - 2) no("axis out of range");
    sched["axis"] = axis;
    return b.finish(*dftAlong(n, b, o, xd, yd, axis, std::nullopt), std::move(sched), o);
  }
  // The axis given at run time: a transform for each axis the shapes allow, chosen by its value
  // (negative ones counted from the end); any other fails the runtime's check against the first.
  if (av->type.dtype != DType::I64 || !av->type.shape || !av->type.shape->empty())
    no("a run-time axis that is not an int64 scalar");
  if (!o.runtimeKernels) no("a run-time axis (checked by the runtime only)");
  const ExprPtr given = load(b.input(av), intImm(0), DType::I64);
  std::vector<std::pair<int64_t, Block>> choices;
  for (int64_t a = 0; a <= rank - 2; ++a)
    if (auto body = dftAlong(n, b, o, xd, yd, a, a)) choices.emplace_back(a, std::move(*body));
  if (choices.empty()) no("no axis gives the output shape");
  Block chain = {checkValuesI64(b.input(av), std::vector<int64_t>{choices[0].first})};
  for (size_t c = choices.size(); c-- > 0;) {
    const int64_t a = choices[c].first;
    chain = {Stmt::ifThen(
        binary(Op::Or, cmp(Op::Eq, given, intImm(a)), cmp(Op::Eq, given, intImm(a - rank))),
        std::move(choices[c].second), std::move(chain))};
  }
  sched["axis"] = std::string("given at run time");
  return b.finish(std::move(chain), std::move(sched), o);
}

} // namespace aicc::loop::detail

namespace aicc::loop::detail {

// MelWeightMatrix of run-time inputs, as the reference computes it (ops/signal_window.cpp, f64):
// the num_mel_bins + 2 mel points' spectrogram bins floor((dft_length + 1) * hz / sample_rate) into
// an i64 temp (each in [0, bins), else the run's error), then each filter's triangle. The result
// shape fixes num_mel_bins and dft_length / 2 + 1 (checked at run time).
std::optional<LoweredNode> lowerMelWeightMatrix(const Node& n, const std::string& name,
                                                const LowerOptions& o) {
  const Dims yd = staticDims(n.outputs.at(0), "output");
  if (yd.size() != 2) no("a result that is not 2-D");
  const DType t = n.outputs[0]->type.dtype;
  if (!isFloat(t)) no("a result that is not floating point");
  for (size_t i = 0; i < 5; ++i)
    if (numel(staticDims(n.inputs.at(i), "input")) != 1) no("inputs that are not scalars");
  if (!o.runtimeKernels) no("inputs given at run time (checked by the runtime only)");
  const int64_t bins = yd[0], mels = yd[1];
  FuncBuilder b(n, name, "signal");
  const std::string y = b.output(0);
  auto f64 = [&](size_t i) {
    return cast(DType::F64, load(b.input(n.inputs[i]), intImm(0), n.inputs[i]->type.dtype));
  };
  auto c = [](double v) { return constant(DType::F64, v); }; // (f64: the reference's)
  // num_mel_bins, dft_length / 2, and 1 when sample_rate > 0 and 0 <= lower <= upper edge (the
  // bins below divide by a rate of at least 1, so that their check does not report it instead).
  const std::string given = b.temp("given", DType::I64, {3});
  const ExprPtr valid =
      binary(Op::And, cmp(Op::Gt, loadI64(b, n.inputs[2], 0), intImm(0)),
             binary(Op::And, cmp(Op::Ge, f64(3), c(0.0)), cmp(Op::Le, f64(3), f64(4))));
  Block body = {Stmt::store(given, intImm(0), loadI64(b, n.inputs[0], 0)),
                Stmt::store(given, intImm(1), div(loadI64(b, n.inputs[1], 0), intImm(2))),
                Stmt::store(given, intImm(2), select(valid, intImm(1), intImm(0)))};
  body.push_back(checkValuesI64(given, std::vector<int64_t>{mels, bins - 1, 1}));
  // (the reference's hzToMel / melToHz)
  const double ln10 = std::log(10.0);
  auto toMel = [&](ExprPtr hz) {
    return div(mul(c(2595.0), call("log1p", {div(hz, c(700.0))})), c(ln10));
  };
  const std::string lo = b.fresh("low_mel"), step = b.fresh("mel_step"), k = b.loopVar("k");
  body.push_back(Stmt::let(lo, toMel(f64(3))));
  body.push_back(
      Stmt::let(step, div(sub(toMel(f64(4)), var(lo, DType::F64)), c(double(mels + 2)))));
  const ExprPtr hz =
      mul(c(700.0), call("expm1", {mul(div(add(mul(cast(DType::F64, var(k)), var(step, DType::F64)),
                                               var(lo, DType::F64)),
                                           c(2595.0)),
                                       c(ln10))}));
  const ExprPtr bin =
      cast(DType::I64, call("floor", {div(mul(add(f64(1), c(1.0)), hz), max(f64(2), c(1.0)))}));
  const std::string pts = b.temp("bins", DType::I64, {mels + 2});
  for (auto& st : nest({k}, {mels + 2}, {Stmt::store(pts, var(k), bin)}, false))
    body.push_back(std::move(st));
  for (auto& st : checkValuesBelow(pts, DType::I64, mels + 2, bins, o))
    body.push_back(std::move(st));
  // y[j, i]: rising from bins[i] to bins[i + 1] (a 1 there when they are equal), falling to bins[i
  // + 2].
  const std::string j = b.loopVar("j"), i = b.loopVar("i");
  auto pt = [&](int64_t d) { return load(pts, add(var(i), intImm(d)), DType::I64); };
  const ExprPtr jv = var(j), l = pt(0), m = pt(1), h = pt(2);
  auto f = [&](const ExprPtr& e) { return cast(DType::F64, e); };
  const ExprPtr rise = select(cmp(Op::Eq, m, l), select(cmp(Op::Eq, jv, m), c(1.0), c(0.0)),
                              select(binary(Op::And, cmp(Op::Ge, jv, l), cmp(Op::Le, jv, m)),
                                     div(f(sub(jv, l)), f(max(sub(m, l), intImm(1)))), c(0.0)));
  const ExprPtr fall = select(binary(Op::And, cmp(Op::Ge, jv, m), cmp(Op::Lt, jv, h)),
                              div(f(sub(h, jv)), f(max(sub(h, m), intImm(1)))), c(0.0));
  // (the reference writes the rise, then the fall over it from bins[i + 1] on)
  const ExprPtr v = select(binary(Op::And, cmp(Op::Gt, h, m), cmp(Op::Ge, jv, m)), fall, rise);
  for (auto& st : nest({j, i}, {bins, mels},
                       {Stmt::store(y, add(mul(var(j), intImm(mels)), var(i)), cast(t, v))}, false))
    body.push_back(std::move(st));
  return b.finish(std::move(body), {}, o);
}

// HannWindow / HammingWindow / BlackmanWindow: the result depends on the size input alone, and the
// (static) result shape fixes it: the reference's window at that size is a constant, copied out
// after the runtime checks that the size given is that one.
std::optional<LoweredNode> lowerWindowFunction(const Node& n, const std::string& name,
                                               const LowerOptions& o) {
  const Value *xv = n.inputs.at(0), *yv = n.outputs.at(0);
  const Dims yd = staticDims(yv, "output");
  if (yd.size() != 1 || !isInteger(xv->type.dtype)) no("a window of a non-integer size");
  Tensor size(xv->type.dtype, {});
  size.setI64(0, yd[0]);
  const RValue given = RValue::of(std::move(size));
  Tensor table;
  try {
    table = runReferenceKernel(n, [&](const Value* v) { return v == xv ? &given : nullptr; })
                .at(0)
                .tensor;
  } catch (const std::exception& ex) {
    no(ex.what());
  }
  if (table.shape() != yd || table.dtype() != yv->type.dtype) no("unexpected reference output");
  FuncBuilder b(n, name, "signal");
  const std::string y = b.output(0),
                    w = b.constant("window", table, "the reference's window at the result's size");
  const std::string iv = b.loopVar("i");
  Block body = checkFixedValues(b, xv, {0}, {yd[0]}, o);
  for (auto& st :
       nest({iv}, {yd[0]}, {Stmt::store(y, var(iv), load(w, var(iv), yv->type.dtype))}, false))
    body.push_back(std::move(st));
  return b.finish(std::move(body), {}, o);
}

} // namespace aicc::loop::detail

namespace aicc::loop::detail {

// STFT: frames of frame_length samples every frame_step, each multiplied by the window and
// transformed by a forward DFT. The DFT is a constant f64 matrix as DFT's (the reference STFT run
// on one-frame unit signals), the window a run-time input multiplied into each sample in f64 (the
// reference's order). frame_step and frame_length given at run time are compiled where the
// declared result shape leaves one pair (checked by the runtime).
std::optional<LoweredNode> lowerStft(const Node& n, const std::string& name,
                                     const LowerOptions& o) {
  const Value *xv = n.inputs.at(0), *sv = n.inputs.at(1), *yv = n.outputs.at(0);
  const Value* wv = n.hasInput(2) ? n.inputs[2] : nullptr;
  const Value* lv = n.hasInput(3) ? n.inputs[3] : nullptr;
  const DType t = xv->type.dtype;
  if (t != DType::F32 && t != DType::F64) no("STFT is lowered for f32/f64");
  const Dims xd = staticDims(xv, "signal"), yd = staticDims(yv, "output");
  if (xd.size() != 3 || (xd[2] != 1 && xd[2] != 2) || yd.size() != 4 || yd[3] != 2 ||
      yd[0] != xd[0])
    no("STFT is lowered for a signal [batch, length, 1|2]");
  if (!isInteger(sv->type.dtype) || (lv && !isInteger(lv->type.dtype)))
    no("frame_step / frame_length are not integers");
  const int64_t len = xd[1], comp = xd[2], frames = yd[1], bins = yd[2];
  const bool onesided = n.attrInt("onesided") != 0;
  // The frame lengths the inputs allow, then the (length, step) pairs giving the result's shape.
  std::vector<int64_t> lens;
  if (wv) {
    const Dims wd = staticDims(wv, "window");
    if (wd.size() != 1 || wv->type.dtype != t) no("a window that is not 1-D of the signal's type");
    lens = {wd[0]};
  } else if (lv && lv->constant) {
    lens = {lv->constant->getI64(0)};
  } else if (!lv) {
    lens = {len};
  } else if (onesided) {
    lens = {2 * (bins - 1), 2 * (bins - 1) + 1};
  } else {
    lens = {bins};
  }
  std::vector<std::pair<int64_t, int64_t>> fits;
  for (int64_t L : lens) {
    if (L <= 0 || L > len || (onesided ? L / 2 + 1 : L) != bins) continue;
    for (int64_t s = 1; s <= std::max<int64_t>(1, len - L); ++s)
      if ((!sv->constant || sv->constant->getI64(0) == s) && 1 + (len - L) / s == frames)
        fits.emplace_back(L, s);
  }
  if (fits.size() != 1)
    no(fits.empty() ? "no frame_step / frame_length gives the result's shape"
                    : "frame_step / frame_length given at run time, not fixed by the shapes");
  const auto [L, S] = fits[0];
  if (L > kMaxLength)
    no("a frame longer than " + std::to_string(kMaxLength) + " keeps the reference FFT");
  FuncBuilder b(n, name, "signal");
  Block body;
  if (!sv->constant)
    for (auto& s : checkFixedValues(b, sv, {0}, {S}, o)) body.push_back(std::move(s));
  if (lv && !lv->constant)
    for (auto& s : checkFixedValues(b, lv, {0}, {L}, o)) body.push_back(std::move(s));
  // M [bins * 2, L * comp]: the reference on each unit one-frame signal [1, L, comp], f64.
  const int64_t rows = bins * 2, cols = L * comp;
  auto scalar = [](DType dt, int64_t v) {
    Tensor s(dt, {});
    s.setI64(0, v);
    return RValue::of(std::move(s));
  };
  const RValue step = scalar(sv->type.dtype, 1), flen = scalar(lv ? lv->type.dtype : DType::I64, L);
  Tensor ones(DType::F64, {L});
  for (int64_t j = 0; j < L; ++j) ones.data<double>()[j] = 1.0;
  const RValue window = RValue::of(std::move(ones));
  std::string why;
  std::optional<Tensor> M = referenceMatrix(
      n, xv, {1, L, comp}, rows,
      [&](const Value* v) -> const RValue* {
        if (v == sv) return &step;
        if (v == wv) return &window;
        return v == lv ? &flen : nullptr;
      },
      o, why);
  if (!M) no(why);
  const std::string Y = b.output(0), X = b.input(xv), W = wv ? b.input(wv) : "";
  const std::string MB = b.constant("dft_matrix", std::move(*M), "f64 [bins*2, frame_length*comp]");
  const std::string bv = b.loopVar("b"), fv = b.loopVar("f"), rv = b.loopVar("r"),
                    qv = b.loopVar("q"), acc = b.temp("acc", DType::F64, {1});
  const ExprPtr b_ = var(bv), f_ = var(fv), r_ = var(rv), q_ = var(qv), j_ = div(q_, intImm(comp));
  // x[b, f * S + j, c'] (times w[j]) for q = j * comp + c'; y[b, f, k, c] for r = k * 2 + c.
  ExprPtr sample = cast(DType::F64,
                        load(X,
                             add(mul(add(add(mul(b_, intImm(len)), mul(f_, intImm(S))), j_),
                                     intImm(comp)),
                                 mod(q_, intImm(comp))),
                             t));
  if (wv) sample = mul(sample, cast(DType::F64, load(W, j_, t)));
  Block lane = {Stmt::store(acc, intImm(0), constant(DType::F64, 0))};
  for (auto& s : nest({qv}, {cols},
                      {Stmt::store(acc, intImm(0),
                                   add(load(acc, intImm(0), DType::F64),
                                       mul(load(MB, add(mul(r_, intImm(cols)), q_), DType::F64),
                                           sample)))},
                      false))
    lane.push_back(std::move(s));
  lane.push_back(Stmt::store(Y, add(mul(add(mul(b_, intImm(frames)), f_), intImm(rows)), r_),
                             cast(t, load(acc, intImm(0), DType::F64))));
  for (auto& s : nest({bv, fv, rv}, {xd[0], frames, rows}, std::move(lane), false))
    body.push_back(std::move(s));
  Schedule sched;
  sched["layout"] = std::string("direct sum over a constant f64 matrix");
  sched["frame"] = fmt::format("{} every {}", L, S);
  return b.finish(std::move(body), std::move(sched), o);
}

} // namespace aicc::loop::detail
