// Gradient rules of RNN, GRU and LSTM (all directions, layouts, initial states, peepholes,
// linear_before_reset, input_forget, clip, every activation the reference kernel supports).
// Backpropagation through time, unrolled: the rule recomputes the forward recurrence with
// standard ops (one group of nodes per time step; the sequence length must be static), then
// walks the steps backwards. The input-side products are batched over time: dX = dXW * W,
// dW = dXW^T * X, dR = sum_t dHR_t^T * h_{t-1}. sequence_lens is supported when it is a constant
// equal to the sequence length everywhere (otherwise the rule reports it as unsupported).
#include "ops/helpers.h"
#include "ops/nn_grad.h"

#include <cctype>

namespace aicc::nngrad {
namespace {

enum class Cell { Rnn, Gru, Lstm };

struct Act {
  std::string name; // lower case
  double alpha = 0, beta = 0;
};

// The activations of each direction (the reference kernel's rules: spec defaults, one list
// shared by both directions, activation_alpha/beta consumed in order).
std::vector<std::vector<Act>> parseActs(const Node& n, Cell cell, int64_t dirs) {
  const size_t per = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 2 : 3;
  std::vector<std::string> names;
  if (const Attribute* a = n.attr("activations")) names = std::get<std::vector<std::string>>(a->v);
  if (names.empty())
    names = cell == Cell::Rnn   ? std::vector<std::string>{"Tanh"}
            : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  if (names.size() == per && dirs == 2) {
    auto once = names;
    names.insert(names.end(), once.begin(), once.end());
  }
  AICC_CHECK(names.size() == per * static_cast<size_t>(dirs),
             "attribute 'activations' has {} entries, expected {}", names.size(), per * dirs);
  std::vector<float> alphas, betas;
  if (const Attribute* a = n.attr("activation_alpha")) alphas = std::get<std::vector<float>>(a->v);
  if (const Attribute* a = n.attr("activation_beta")) betas = std::get<std::vector<float>>(a->v);
  size_t ai = 0, bi = 0;
  std::vector<std::vector<Act>> out(static_cast<size_t>(dirs));
  for (size_t k = 0; k < names.size(); ++k) {
    Act act;
    for (char ch : names[k])
      act.name += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const std::string& nm = act.name;
    double da = 0, db = 0;
    bool hasA = true, hasB = false;
    if (nm == "leakyrelu")
      da = 0.01;
    else if (nm == "thresholdedrelu" || nm == "elu")
      da = 1.0;
    else if (nm == "hardsigmoid")
      da = 0.2, db = 0.5, hasB = true;
    else if (nm == "affine" || nm == "scaledtanh")
      da = 1.0, db = 0.0, hasB = true;
    else if (nm == "sigmoid" || nm == "tanh" || nm == "relu" || nm == "softsign" ||
             nm == "softplus")
      hasA = false;
    else
      fail("unsupported activation function '{}'", names[k]);
    if (hasA) act.alpha = ai < alphas.size() ? alphas[ai++] : da;
    if (hasB) act.beta = bi < betas.size() ? betas[bi++] : db;
    out[k / per].push_back(act);
  }
  return out;
}

float f32(double v) { return static_cast<float>(v); }

Value* actFwd(E& e, const Act& a, Value* x) {
  const std::string& n = a.name;
  if (n == "sigmoid") return e.op("Sigmoid", {x});
  if (n == "tanh") return e.op("Tanh", {x});
  if (n == "relu") return e.op("Relu", {x});
  if (n == "affine") return e.add(e.mul(x, e.k(a.alpha, x)), e.k(a.beta, x));
  if (n == "leakyrelu") return e.op("LeakyRelu", {x}, {{"alpha", Attribute{f32(a.alpha)}}});
  if (n == "thresholdedrelu")
    return e.op("ThresholdedRelu", {x}, {{"alpha", Attribute{f32(a.alpha)}}});
  if (n == "scaledtanh") return e.mul(e.k(a.alpha, x), e.op("Tanh", {e.mul(x, e.k(a.beta, x))}));
  if (n == "hardsigmoid")
    return e.op("HardSigmoid", {x},
                {{"alpha", Attribute{f32(a.alpha)}}, {"beta", Attribute{f32(a.beta)}}});
  if (n == "elu") return e.op("Elu", {x}, {{"alpha", Attribute{f32(a.alpha)}}});
  if (n == "softsign") return e.op("Softsign", {x});
  if (n == "softplus") return e.op("Softplus", {x});
  fail("unsupported activation function '{}'", n);
}

// f'(x) given x and y = f(x).
Value* actDeriv(E& e, const Act& a, Value* x, Value* y) {
  const std::string& n = a.name;
  Value *one = e.k(1, x), *zero = e.k(0, x);
  auto ge0 = [&] { return e.op("GreaterOrEqual", {x, zero}); };
  if (n == "sigmoid") return e.mul(y, e.sub(one, y));
  if (n == "tanh") return e.sub(one, e.mul(y, y));
  if (n == "relu") return e.cast(e.op("Greater", {x, zero}), x->type.dtype);
  if (n == "affine") return e.k(a.alpha, x);
  if (n == "leakyrelu") return e.where(ge0(), one, e.k(a.alpha, x));
  if (n == "thresholdedrelu") return e.cast(e.op("Greater", {x, e.k(a.alpha, x)}), x->type.dtype);
  if (n == "scaledtanh") {
    Value* t = e.op("Tanh", {e.mul(x, e.k(a.beta, x))});
    return e.mul(e.k(a.alpha * a.beta, x), e.sub(one, e.mul(t, t)));
  }
  if (n == "hardsigmoid") {
    Value* v = e.add(e.mul(x, e.k(a.alpha, x)), e.k(a.beta, x));
    Value* inside = e.op("And", {e.op("Greater", {v, zero}), e.op("Less", {v, one})});
    return e.where(inside, e.k(a.alpha, x), zero);
  }
  if (n == "elu") return e.where(ge0(), one, e.mul(e.k(a.alpha, x), e.op("Exp", {x})));
  if (n == "softsign") {
    Value* d = e.add(one, e.op("Abs", {x}));
    return e.div(one, e.mul(d, d));
  }
  if (n == "softplus") return e.op("Sigmoid", {x});
  fail("unsupported activation function '{}'", n);
}

// One activated gate: pre-activation, its clipped value and the activation.
struct Gate {
  Value *pre = nullptr, *pc = nullptr, *y = nullptr;
};

struct Rnn {
  GradCtx& c;
  E e;
  Cell cell;
  int64_t T = 0, H = 0, G = 0, dirs = 1;
  bool clip = false;
  double clipVal = 0;
  bool lbr = false, inputForget = false;

  Gate gate(const Act& a, Value* pre) {
    Gate g;
    g.pre = pre;
    g.pc = clip ? e.op("Clip", {pre, e.k(-clipVal, pre), e.k(clipVal, pre)}) : pre;
    g.y = actFwd(e, a, g.pc);
    return g;
  }
  Value* back(const Act& a, const Gate& g, Value* dy) {
    Value* d = e.mul(dy, actDeriv(e, a, g.pc, g.y));
    if (clip)
      d = e.where(e.op("LessOrEqual", {e.op("Abs", {g.pre}), e.k(clipVal, g.pre)}), d,
                  e.k(0, g.pre));
    return d;
  }
  Value* sum(const std::vector<Value*>& vs) {
    return vs.size() == 1 ? vs[0] : c.emitN("Sum", vs, 1)[0];
  }
  // sum_t a_t^T b_t for stacked a [T, B, M], b [T, B, N]: [M, N].
  Value* contract(Value* a, Value* b, int64_t M, int64_t N) {
    return e.matmul(e.transpose(e.reshape(a, {-1, M}), {1, 0}), e.reshape(b, {-1, N}));
  }
};

void rnnGrad(GradCtx& c, Cell cell) {
  const Node& n = c.node;
  Rnn k{c, E{c}, cell};
  E& e = k.e;
  k.G = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
  const std::string direction = n.attrString("direction");
  k.dirs = direction == "bidirectional" ? 2 : 1;
  const bool layout1 = n.attrInt("layout") != 0;
  Value *X = c.in(0), *W = c.in(1), *R = c.in(2);
  Dims wd = staticDims(c, W, "weights W"), rd = staticDims(c, R, "recurrence weights R");
  AICC_CHECK(c.rankOf(X) == 3 && wd.size() == 3 && rd.size() == 3,
             "{}: X, W and R must have rank 3", n.describe());
  const Dim& seqDim = (*X->type.shape)[layout1 ? 1 : 0];
  AICC_CHECK(seqDim.isStatic(),
             "{}: unsupported: the unrolled gradient needs a static sequence "
             "length, X is {}",
             n.describe(), formatType(X->type));
  k.T = seqDim.value;
  k.H = rd[2];
  const int64_t I = wd[2], H = k.H, G = k.G, GH = G * H, T = k.T;
  AICC_CHECK(T >= 1, "{}: unsupported: gradient of an empty sequence", n.describe());
  AICC_CHECK(wd[1] == GH && rd[1] == GH, "{}: W {} and R {} do not match hidden size {}",
             n.describe(), formatDims(wd), formatDims(rd), H);
  if (n.hasInput(4)) {
    const Tensor* sl = constInput(c, 4);
    bool full = sl != nullptr;
    for (int64_t i = 0; full && i < sl->numel(); ++i) full = sl->getI64(i) == T;
    AICC_CHECK(full,
               "{}: unsupported: gradients with sequence_lens other than a constant equal to "
               "the sequence length {}",
               n.describe(), T);
  }
  if (const Attribute* a = n.attr("clip")) k.clip = true, k.clipVal = std::get<float>(a->v);
  k.lbr = cell == Cell::Gru && n.attrInt("linear_before_reset") != 0;
  k.inputForget = cell == Cell::Lstm && n.attrInt("input_forget") != 0;
  auto acts = parseActs(n, cell, k.dirs);
  auto has = [&](size_t i) { return n.hasInput(i); };
  auto toSeqMajor = [&](Value* v) { return layout1 ? e.transpose(v, {1, 0, 2}) : v; };

  Value* Xt = toSeqMajor(X); // [T, B, I]
  Value* dYt = c.dout(0) ? (layout1 ? e.transpose(c.dout(0), {1, 2, 0, 3}) : c.dout(0)) : nullptr;
  Value* dYh = c.dout(1) ? toSeqMajor(c.dout(1)) : nullptr; // [dirs, B, H]
  Value* dYc = cell == Cell::Lstm && c.dout(2) ? toSeqMajor(c.dout(2)) : nullptr;
  Value* h0 = has(5) ? toSeqMajor(c.in(5)) : nullptr;
  Value* c0 = cell == Cell::Lstm && has(6) ? toSeqMajor(c.in(6)) : nullptr;
  Tensor zero(X->type.dtype, {1});
  Value* zerosBH = e.op("ConstantOfShape", {e.concat({e.shape(Xt, 1, 2), e.ints({H})}, 0)},
                        {{"value", Attribute{zero}}});

  std::vector<Value*> dXs, dWs, dRs, dBs, dH0s, dC0s, dPs;
  for (int64_t d = 0; d < k.dirs; ++d) {
    const bool rev = direction == "reverse" || d == 1;
    const auto& f = acts[static_cast<size_t>(d)];
    Value* Wd = e.pick(W, d, 0); // [GH, I]
    Value* Rd = e.pick(R, d, 0); // [GH, H]
    Value* RdT = e.transpose(Rd, {1, 0});
    Value *Wb = nullptr, *Rb = nullptr;
    if (has(3)) {
      auto parts = e.split(e.pick(c.in(3), d, 0), 0, {GH, GH});
      Wb = parts[0], Rb = parts[1];
    }
    Value* XW = e.matmul(Xt, e.transpose(Wd, {1, 0}));
    if (Wb) XW = e.add(XW, Wb);
    Value *Pi = nullptr, *Po = nullptr, *Pf = nullptr;
    if (cell == Cell::Lstm && has(7)) {
      auto p = e.split(e.pick(c.in(7), d, 0), 0, {H, H, H});
      Pi = p[0], Po = p[1], Pf = p[2];
    }
    // GRU without linear_before_reset: the h gate's recurrence multiplies r * h by R_h.
    Value *RzrT = nullptr, *Rzr = nullptr, *Rh = nullptr, *RhT = nullptr, *Rbh = nullptr;
    if (cell == Cell::Gru && !k.lbr) {
      auto rp = e.split(Rd, 0, {2 * H, H});
      Rzr = rp[0], Rh = rp[1];
      RzrT = e.transpose(Rzr, {1, 0}), RhT = e.transpose(Rh, {1, 0});
      if (Rb) Rbh = e.slice(Rb, {2 * H}, {3 * H}, {0});
    }

    // ---- forward recurrence ----
    struct Step {
      int64_t t = 0;
      Value *hPrev = nullptr, *cPrev = nullptr, *hNew = nullptr, *cNew = nullptr;
      std::vector<Gate> g; // RNN: a; GRU: z, r, h; LSTM: i, o, f, c
      Value *hr = nullptr, *rh = nullptr, *hc = nullptr;
    };
    std::vector<Step> steps;
    Value* h = h0 ? e.pick(h0, d, 0) : zerosBH;
    Value* cs = c0 ? e.pick(c0, d, 0) : zerosBH;
    for (int64_t s = 0; s < T; ++s) {
      Step st;
      st.t = rev ? T - 1 - s : s;
      st.hPrev = h, st.cPrev = cs;
      Value* xw = e.pick(XW, st.t, 0); // [B, GH]
      if (cell == Cell::Rnn) {
        Value* hr = e.matmul(h, RdT);
        if (Rb) hr = e.add(hr, Rb);
        st.g.push_back(k.gate(f[0], e.add(xw, hr)));
        h = st.g[0].y;
      } else if (cell == Cell::Gru) {
        auto x3 = e.split(xw, 1, {H, H, H});
        Value* hr = e.matmul(h, k.lbr ? RdT : RzrT);
        if (Rb) hr = e.add(hr, k.lbr ? Rb : e.slice(Rb, {0}, {2 * H}, {0}));
        auto h3 =
            e.split(hr, 1, k.lbr ? std::vector<int64_t>{H, H, H} : std::vector<int64_t>{H, H});
        st.g.push_back(k.gate(f[0], e.add(x3[0], h3[0])));
        st.g.push_back(k.gate(f[0], e.add(x3[1], h3[1])));
        Value* r = st.g[1].y;
        Value* ph;
        if (k.lbr) {
          st.hr = h3[2];
          ph = e.add(x3[2], e.mul(r, h3[2]));
        } else {
          st.rh = e.mul(r, h);
          ph = e.add(x3[2], e.matmul(st.rh, RhT));
          if (Rbh) ph = e.add(ph, Rbh);
        }
        st.g.push_back(k.gate(f[1], ph));
        Value* ht = st.g[2].y;
        h = e.add(ht, e.mul(st.g[0].y, e.sub(h, ht)));
      } else {
        Value* hr = e.matmul(h, RdT);
        if (Rb) hr = e.add(hr, Rb);
        auto x4 = e.split(xw, 1, {H, H, H, H}), h4 = e.split(hr, 1, {H, H, H, H});
        Value* pi = e.add(x4[0], h4[0]);
        if (Pi) pi = e.add(pi, e.mul(Pi, cs));
        Gate gi = k.gate(f[0], pi), gf;
        Value* fg;
        if (k.inputForget) {
          fg = e.sub(e.k(1, X), gi.y);
        } else {
          Value* pf = e.add(x4[2], h4[2]);
          if (Pf) pf = e.add(pf, e.mul(Pf, cs));
          gf = k.gate(f[0], pf);
          fg = gf.y;
        }
        Gate gc = k.gate(f[1], e.add(x4[3], h4[3]));
        Value* cNew = e.add(e.mul(fg, cs), e.mul(gi.y, gc.y));
        Value* po = e.add(x4[1], h4[1]);
        if (Po) po = e.add(po, e.mul(Po, cNew));
        Gate go = k.gate(f[0], po);
        st.hc = actFwd(e, f[2], cNew);
        st.g = {gi, go, gf, gc};
        st.cNew = cs = cNew;
        h = e.mul(go.y, st.hc);
      }
      st.hNew = h;
      steps.push_back(st);
    }

    // ---- backward through time ----
    std::vector<Value*> dXW(static_cast<size_t>(T)), dHR, hIn, dHRh, rhIn, dPis, dPos, dPfs;
    Value* dh = dYh ? e.pick(dYh, d, 0) : zerosBH;
    Value* dc = dYc ? e.pick(dYc, d, 0) : zerosBH;
    Value* dYd = dYt ? e.pick(dYt, d, 1) : nullptr; // [T, B, H]
    for (int64_t s = T - 1; s >= 0; --s) {
      const Step& st = steps[static_cast<size_t>(s)];
      if (dYd) dh = e.add(dh, e.pick(dYd, st.t, 0));
      Value* dGates;
      if (cell == Cell::Rnn) {
        dGates = k.back(f[0], st.g[0], dh);
        dh = e.matmul(dGates, Rd);
        dHR.push_back(dGates);
      } else if (cell == Cell::Gru) {
        const Gate &gz = st.g[0], &gr = st.g[1], &gh = st.g[2];
        Value* dz = e.mul(dh, e.sub(st.hPrev, gh.y));
        Value* dph = k.back(f[1], gh, e.mul(dh, e.sub(e.k(1, X), gz.y)));
        Value* dhPrev = e.mul(dh, gz.y);
        Value *dr, *dhh = nullptr;
        if (k.lbr) {
          dr = e.mul(dph, st.hr);
          dhh = e.mul(dph, gr.y);
        } else {
          Value* drh = e.matmul(dph, Rh);
          dr = e.mul(drh, st.hPrev);
          dhPrev = e.add(dhPrev, e.mul(drh, gr.y));
        }
        Value* dpz = k.back(f[0], gz, dz);
        Value* dpr = k.back(f[0], gr, dr);
        dGates = e.concat({dpz, dpr, dph}, 1);
        if (k.lbr) {
          Value* dhr = e.concat({dpz, dpr, dhh}, 1);
          dHR.push_back(dhr);
          dh = e.add(dhPrev, e.matmul(dhr, Rd));
        } else {
          Value* dzr = e.concat({dpz, dpr}, 1);
          dHR.push_back(dzr);
          dHRh.push_back(dph);
          rhIn.push_back(st.rh);
          dh = e.add(dhPrev, e.matmul(dzr, Rzr));
        }
      } else {
        const Gate &gi = st.g[0], &go = st.g[1], &gf = st.g[2], &gc = st.g[3];
        Value* dpo = k.back(f[0], go, e.mul(dh, st.hc));
        Value* dcT = e.add(dc, e.mul(e.mul(dh, go.y), actDeriv(e, f[2], st.cNew, st.hc)));
        if (Po) {
          dcT = e.add(dcT, e.mul(dpo, Po));
          dPos.push_back(e.mul(dpo, st.cNew));
        }
        Value* di = e.mul(dcT, gc.y);
        Value* dcg = e.mul(dcT, gi.y);
        Value* dfg = e.mul(dcT, st.cPrev);
        Value* fg = k.inputForget ? e.sub(e.k(1, X), gi.y) : gf.y;
        Value* dcPrev = e.mul(dcT, fg);
        Value* dpf;
        if (k.inputForget) {
          di = e.sub(di, dfg);
          dpf = zerosBH;
        } else {
          dpf = k.back(f[0], gf, dfg);
          if (Pf) {
            dcPrev = e.add(dcPrev, e.mul(dpf, Pf));
            dPfs.push_back(e.mul(dpf, st.cPrev));
          }
        }
        Value* dpi = k.back(f[0], gi, di);
        if (Pi) {
          dcPrev = e.add(dcPrev, e.mul(dpi, Pi));
          dPis.push_back(e.mul(dpi, st.cPrev));
        }
        Value* dpc = k.back(f[1], gc, dcg);
        dGates = e.concat({dpi, dpo, dpf, dpc}, 1);
        dHR.push_back(dGates);
        dh = e.matmul(dGates, Rd);
        dc = dcPrev;
      }
      dXW[static_cast<size_t>(st.t)] = dGates;
      hIn.push_back(st.hPrev);
    }

    Value* dXWs = e.stack(dXW); // [T, B, GH], time order
    dXs.push_back(e.matmul(dXWs, Wd));
    dWs.push_back(k.contract(dXWs, Xt, GH, I));
    Value* dHRs = e.stack(dHR); // [T, B, GH or 2H], backward step order (like hIn)
    Value* hIns = e.stack(hIn);
    Value* dRd;
    Value* dRb;
    if (cell == Cell::Gru && !k.lbr) {
      Value* dHRhs = e.stack(dHRh);
      dRd = e.concat({k.contract(dHRs, hIns, 2 * H, H), k.contract(dHRhs, e.stack(rhIn), H, H)}, 0);
      dRb = e.concat({e.reduceSum(dHRs, {0, 1}, false), e.reduceSum(dHRhs, {0, 1}, false)}, 0);
    } else {
      dRd = k.contract(dHRs, hIns, GH, H);
      dRb = e.reduceSum(dHRs, {0, 1}, false);
    }
    dRs.push_back(dRd);
    dBs.push_back(e.concat({e.reduceSum(dXWs, {0, 1}, false), dRb}, 0));
    dH0s.push_back(dh);
    dC0s.push_back(dc);
    if (cell == Cell::Lstm) {
      auto peep = [&](const std::vector<Value*>& v) {
        return e.reduceSum(e.stack(v), {0, 1}, false);
      };
      Value* dPf = dPfs.empty()
                       ? e.op("ConstantOfShape", {e.ints({H})}, {{"value", Attribute{zero}}})
                       : peep(dPfs);
      if (Pi) dPs.push_back(e.concat({peep(dPis), peep(dPos), dPf}, 0));
    }
  }
  auto fromSeqMajor = [&](Value* v) { return layout1 ? e.transpose(v, {1, 0, 2}) : v; };
  if (c.needs(0)) c.give(0, fromSeqMajor(k.sum(dXs)));
  if (c.needs(1)) c.give(1, e.stack(dWs));
  if (c.needs(2)) c.give(2, e.stack(dRs));
  if (c.needs(3)) c.give(3, e.stack(dBs));
  if (c.needs(5)) c.give(5, fromSeqMajor(e.stack(dH0s)));
  if (c.needs(6)) c.give(6, fromSeqMajor(e.stack(dC0s)));
  if (c.needs(7)) c.give(7, e.stack(dPs));
}

} // namespace

void registerRnnGrads(OpRegistry& r) {
  r.at("RNN").grad = [](GradCtx& c) { rnnGrad(c, Cell::Rnn); };
  r.at("GRU").grad = [](GradCtx& c) { rnnGrad(c, Cell::Gru); };
  r.at("LSTM").grad = [](GradCtx& c) { rnnGrad(c, Cell::Lstm); };
}

} // namespace aicc::nngrad
