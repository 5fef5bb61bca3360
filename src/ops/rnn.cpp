// Recurrent ops: RNN, GRU, LSTM (all directions, optional inputs and outputs, custom activations,
// clip, layout 0/1, sequence_lens). The kernels compute in double, one (direction, batch) row at
// a time, and store back in X's element type.
#include "ops/helpers.h"

#include <algorithm>
#include <cmath>

namespace aicc {
namespace {

enum class Cell { Rnn, Gru, Lstm };

int gatesOf(Cell c) { return c == Cell::Rnn ? 1 : c == Cell::Gru ? 3 : 4; }
int numActs(Cell c) { return c == Cell::Rnn ? 1 : c == Cell::Gru ? 2 : 3; }

int64_t numDirections(const Node& n) {
  std::string d = n.attrString("direction");
  if (d == "forward" || d == "reverse") return 1;
  if (d == "bidirectional") return 2;
  fail("attribute 'direction' must be forward, reverse or bidirectional, got '{}'", d);
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

struct Activation {
  std::string name; // lower case
  double alpha = 0, beta = 0;

  double operator()(double x) const {
    if (name == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
    if (name == "tanh") return std::tanh(x);
    if (name == "relu") return std::max(x, 0.0);
    if (name == "affine") return alpha * x + beta;
    if (name == "leakyrelu") return x >= 0 ? x : alpha * x;
    if (name == "thresholdedrelu") return x > alpha ? x : 0.0;
    if (name == "scaledtanh") return alpha * std::tanh(beta * x);
    if (name == "hardsigmoid") return std::clamp(alpha * x + beta, 0.0, 1.0);
    if (name == "elu") return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
    if (name == "softsign") return x / (1.0 + std::abs(x));
    if (name == "softplus") return std::log1p(std::exp(x));
    fail("unsupported activation function '{}'", name);
  }
};

// The activations of each direction, consuming activation_alpha/beta in order for the functions
// that take them (spec defaults when the lists run out).
std::vector<std::vector<Activation>> activations(const Node& n, Cell cell, int64_t dirs) {
  static const std::vector<std::string> defaults[] = {
      {"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
  size_t per = static_cast<size_t>(numActs(cell));
  std::vector<std::string> names;
  if (const Attribute* a = n.attr("activations")) names = std::get<std::vector<std::string>>(a->v);
  if (names.empty()) names = defaults[static_cast<int>(cell)];
  if (names.size() == per && dirs == 2) {
    std::vector<std::string> once = names;
    names.insert(names.end(), once.begin(), once.end());
  }
  AICC_CHECK(names.size() == per * static_cast<size_t>(dirs),
             "attribute 'activations' has {} entries, expected {}", names.size(),
             per * static_cast<size_t>(dirs));
  std::vector<float> alphas, betas;
  if (const Attribute* a = n.attr("activation_alpha")) alphas = std::get<std::vector<float>>(a->v);
  if (const Attribute* a = n.attr("activation_beta")) betas = std::get<std::vector<float>>(a->v);
  size_t ai = 0, bi = 0;
  std::vector<std::vector<Activation>> out(static_cast<size_t>(dirs));
  for (size_t k = 0; k < names.size(); ++k) {
    Activation act{lower(names[k])};
    double da = 0, db = 0;
    bool hasA = true, hasB = false;
    if (act.name == "leakyrelu")
      da = 0.01;
    else if (act.name == "thresholdedrelu" || act.name == "elu")
      da = 1.0;
    else if (act.name == "hardsigmoid")
      da = 0.2, db = 0.5, hasB = true;
    else if (act.name == "affine" || act.name == "scaledtanh")
      da = 1.0, db = 0.0, hasB = true;
    else
      hasA = false;
    if (hasA) act.alpha = ai < alphas.size() ? alphas[ai++] : da;
    if (hasB) act.beta = bi < betas.size() ? betas[bi++] : db;
    act(0.0); // validates the name
    out[k / per].push_back(act);
  }
  return out;
}

void inferRnn(InferCtx& c, Cell cell) {
  int64_t dirs = numDirections(c.node);
  bool layout1 = c.node.attrInt("layout") != 0;
  DType dt = c.inDType(0);
  Dim seq, batch, hidden;
  if (const auto& x = c.inShape(0)) {
    AICC_CHECK(x->size() == 3, "X must have rank 3, got {}", formatShape(*x));
    seq = (*x)[layout1 ? 1 : 0];
    batch = (*x)[layout1 ? 0 : 1];
  }
  if (const Attribute* a = c.node.attr("hidden_size"))
    hidden = Dim::known(std::get<int64_t>(a->v));
  else if (const auto& r = c.inShape(2); r && r->size() == 3)
    hidden = (*r)[2];
  if (const auto& w = c.inShape(1); w && w->size() == 3) {
    const Dim& d0 = (*w)[0];
    AICC_CHECK(!d0.isStatic() || d0.value == dirs,
               "W has {} directions, attribute 'direction' says {}", d0.value, dirs);
    if (hidden.isStatic() && (*w)[1].isStatic())
      AICC_CHECK((*w)[1].value == gatesOf(cell) * hidden.value,
                 "W has {} rows, expected {} x hidden_size {}", (*w)[1].value, gatesOf(cell),
                 hidden.value);
  }
  // initial_h's batch is X's: a static one decides; two different symbols leave it unknown (the
  // types cannot say they are equal; an input whose dims are unnamed may have them so).
  if (const auto& h = c.inShape(5); h && h->size() == 3) {
    const Dim& hb = (*h)[layout1 ? 0 : 1];
    if (batch.isStatic() && hb.isStatic())
      AICC_CHECK(batch.value == hb.value, "initial_h has batch {}, X has {}", hb.value,
                 batch.value);
    else if (hb.isStatic() || (batch != hb && !batch.isStatic() && !batch.symbol.empty()))
      batch = hb.isStatic() ? hb : Dim{};
  }
  Dim nd = Dim::known(dirs);
  c.setTensor(0, dt, layout1 ? Shape{batch, seq, nd, hidden} : Shape{seq, nd, batch, hidden});
  Shape st = layout1 ? Shape{batch, nd, hidden} : Shape{nd, batch, hidden};
  c.setTensor(1, dt, st);
  if (cell == Cell::Lstm) c.setTensor(2, dt, st);
}

std::vector<RValue> runRnn(KernelCtx& c, Cell cell) {
  const Node& n = c.node;
  int64_t dirs = numDirections(n);
  bool reverseOnly = n.attrString("direction") == "reverse";
  bool layout1 = n.attrInt("layout") != 0;
  const Tensor& X = c.in(0);
  const Tensor& W = c.in(1);
  const Tensor& R = c.in(2);
  requireDType(c, 0, {DType::F32, DType::F64, DType::F16, DType::BF16});
  AICC_CHECK(X.rank() == 3 && W.rank() == 3 && R.rank() == 3, "X, W and R must have rank 3");
  int64_t G = gatesOf(cell);
  int64_t T = X.dim(layout1 ? 1 : 0), B = X.dim(layout1 ? 0 : 1), I = X.dim(2);
  int64_t H = n.attrInt("hidden_size", R.dim(2));
  AICC_CHECK(W.shape() == (Dims{dirs, G * H, I}), "W has shape {}, expected {}",
             formatDims(W.shape()), formatDims({dirs, G * H, I}));
  AICC_CHECK(R.shape() == (Dims{dirs, G * H, H}), "R has shape {}, expected {}",
             formatDims(R.shape()), formatDims({dirs, G * H, H}));
  auto vec = [&](size_t i, const Dims& shape, const char* what) {
    if (!c.has(i)) return std::vector<double>(static_cast<size_t>(checkedNumel(shape)), 0.0);
    AICC_CHECK(c.in(i).shape() == shape, "{} has shape {}, expected {}", what,
               formatDims(c.in(i).shape()), formatDims(shape));
    return c.in(i).toF64Vector();
  };
  std::vector<double> x = X.toF64Vector(), w = W.toF64Vector(), r = R.toF64Vector();
  std::vector<double> bias = vec(3, {dirs, 2 * G * H}, "B");
  Dims stShape = layout1 ? Dims{B, dirs, H} : Dims{dirs, B, H};
  std::vector<double> h0 = vec(5, stShape, "initial_h");
  std::vector<double> c0 =
      cell == Cell::Lstm ? vec(6, stShape, "initial_c") : std::vector<double>{};
  std::vector<double> peep =
      cell == Cell::Lstm ? vec(7, {dirs, 3 * H}, "P") : std::vector<double>{};
  std::vector<int64_t> lens(static_cast<size_t>(B), T);
  if (c.has(4)) {
    AICC_CHECK(c.in(4).numel() == B, "sequence_lens has {} entries, batch size is {}",
               c.in(4).numel(), B);
    lens = c.in(4).toI64Vector();
    for (int64_t l : lens)
      AICC_CHECK(l >= 0 && l <= T, "sequence_lens entry {} is out of range [0, {}]", l, T);
  }
  const Attribute* clipAttr = n.attr("clip");
  double clip = clipAttr ? std::get<float>(clipAttr->v) : 0.0;
  auto clipv = [&](double v) { return clipAttr ? std::clamp(v, -clip, clip) : v; };
  bool lbr = cell == Cell::Gru && n.attrInt("linear_before_reset") != 0;
  bool inputForget = cell == Cell::Lstm && n.attrInt("input_forget") != 0;
  auto acts = activations(n, cell, dirs);

  DType dt = X.dtype();
  Tensor Y(dt, layout1 ? Dims{B, T, dirs, H} : Dims{T, dirs, B, H});
  Tensor Yh(dt, stShape), Yc(dt, stShape);
  auto stIdx = [&](int64_t d, int64_t b, int64_t j) {
    return (layout1 ? (b * dirs + d) : (d * B + b)) * H + j;
  };
  auto yIdx = [&](int64_t t, int64_t d, int64_t b, int64_t j) {
    return (layout1 ? ((b * T + t) * dirs + d) : ((t * dirs + d) * B + b)) * H + j;
  };
  std::vector<double> h(static_cast<size_t>(H)), cs(static_cast<size_t>(H)),
      xw(static_cast<size_t>(G * H)), hr(static_cast<size_t>(G * H)), tmp(static_cast<size_t>(H));
  for (int64_t d = 0; d < dirs; ++d) {
    bool rev = reverseOnly || d == 1;
    const double* Wd = w.data() + d * G * H * I;
    const double* Rd = r.data() + d * G * H * H;
    const double* Wb = bias.data() + d * 2 * G * H;
    const double* Rb = Wb + G * H;
    const auto& f = acts[static_cast<size_t>(d)];
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        h[static_cast<size_t>(j)] = h0[static_cast<size_t>(stIdx(d, b, j))];
        if (cell == Cell::Lstm)
          cs[static_cast<size_t>(j)] = c0[static_cast<size_t>(stIdx(d, b, j))];
      }
      int64_t len = lens[static_cast<size_t>(b)];
      for (int64_t s = 0; s < len; ++s) {
        int64_t t = rev ? len - 1 - s : s;
        const double* xt = x.data() + (layout1 ? (b * T + t) : (t * B + b)) * I;
        for (int64_t g = 0; g < G * H; ++g) {
          double a = Wb[g], q = Rb[g];
          for (int64_t i = 0; i < I; ++i) a += Wd[g * I + i] * xt[i];
          for (int64_t k = 0; k < H; ++k) q += Rd[g * H + k] * h[static_cast<size_t>(k)];
          xw[static_cast<size_t>(g)] = a;
          hr[static_cast<size_t>(g)] = q;
        }
        auto at = [](std::vector<double>& v, int64_t gate, int64_t H_, int64_t j) -> double& {
          return v[static_cast<size_t>(gate * H_ + j)];
        };
        if (cell == Cell::Rnn) {
          for (int64_t j = 0; j < H; ++j)
            h[static_cast<size_t>(j)] = f[0](clipv(at(xw, 0, H, j) + at(hr, 0, H, j)));
        } else if (cell == Cell::Gru) { // gates z, r, h
          std::vector<double> z(static_cast<size_t>(H)), rg(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) {
            z[static_cast<size_t>(j)] = f[0](clipv(at(xw, 0, H, j) + at(hr, 0, H, j)));
            rg[static_cast<size_t>(j)] = f[0](clipv(at(xw, 1, H, j) + at(hr, 1, H, j)));
          }
          for (int64_t j = 0; j < H; ++j) {
            double hh;
            if (lbr)
              hh = at(xw, 2, H, j) + rg[static_cast<size_t>(j)] * at(hr, 2, H, j);
            else {
              hh = at(xw, 2, H, j) + Rb[2 * H + j];
              for (int64_t k = 0; k < H; ++k)
                hh += Rd[(2 * H + j) * H + k] * rg[static_cast<size_t>(k)] *
                      h[static_cast<size_t>(k)];
            }
            tmp[static_cast<size_t>(j)] = f[1](clipv(hh));
          }
          for (int64_t j = 0; j < H; ++j) {
            double zj = z[static_cast<size_t>(j)];
            h[static_cast<size_t>(j)] =
                (1 - zj) * tmp[static_cast<size_t>(j)] + zj * h[static_cast<size_t>(j)];
          }
        } else { // gates i, o, f, c; peepholes i, o, f
          const double* P = peep.data() + d * 3 * H;
          for (int64_t j = 0; j < H; ++j) {
            double cPrev = cs[static_cast<size_t>(j)];
            double ig = f[0](clipv(at(xw, 0, H, j) + at(hr, 0, H, j) + P[j] * cPrev));
            double fg = inputForget
                            ? 1 - ig
                            : f[0](clipv(at(xw, 2, H, j) + at(hr, 2, H, j) + P[2 * H + j] * cPrev));
            double cg = f[1](clipv(at(xw, 3, H, j) + at(hr, 3, H, j)));
            double cNew = fg * cPrev + ig * cg;
            double og = f[0](clipv(at(xw, 1, H, j) + at(hr, 1, H, j) + P[H + j] * cNew));
            cs[static_cast<size_t>(j)] = cNew;
            h[static_cast<size_t>(j)] = og * f[2](cNew);
          }
        }
        for (int64_t j = 0; j < H; ++j) Y.setF64(yIdx(t, d, b, j), h[static_cast<size_t>(j)]);
      }
      for (int64_t j = 0; j < H; ++j) {
        Yh.setF64(stIdx(d, b, j), h[static_cast<size_t>(j)]);
        if (cell == Cell::Lstm) Yc.setF64(stIdx(d, b, j), cs[static_cast<size_t>(j)]);
      }
    }
  }
  std::vector<RValue> out{RValue::of(Y), RValue::of(Yh)};
  if (cell == Cell::Lstm) out.push_back(RValue::of(Yc));
  return out;
}

// Common schema of the three ops; opsets before 7 had an `output_sequence` attribute (Y is an
// optional output now), dropped at import.
OpBuilder rnnOp(OpRegistry& r, const char* name, Cell cell) {
  OpBuilder b = r.op(name);
  b.since(1)
      .inputs(3, cell == Cell::Lstm ? 8 : 6)
      .outputs(0, cell == Cell::Lstm ? 3 : 2)
      .attr("activation_alpha", Attribute::Kind::Floats)
      .attr("activation_beta", Attribute::Kind::Floats)
      .attr("activations", Attribute::Kind::Strings)
      .attr("clip", Attribute::Kind::Float)
      .attrString("direction", "forward")
      .attr("hidden_size", Attribute::Kind::Int)
      .attrInt("layout", 0)
      .upgrade(1, 6, [](ImportCtx& c) { c.node.attrs.erase("output_sequence"); },
               {{"output_sequence", Attribute::Kind::Int, Attribute{int64_t{0}}, false}})
      .infer([cell](InferCtx& c) { inferRnn(c, cell); })
      .kernel([cell](KernelCtx& c) { return runRnn(c, cell); });
  return b;
}

} // namespace

void registerRnnOps(OpRegistry& r) {
  rnnOp(r, "RNN", Cell::Rnn);
  rnnOp(r, "GRU", Cell::Gru).attrInt("linear_before_reset", 0);
  rnnOp(r, "LSTM", Cell::Lstm).attrInt("input_forget", 0);
}

} // namespace aicc
