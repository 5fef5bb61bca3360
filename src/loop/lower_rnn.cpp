// GRU and LSTM (ai.onnx, f32; layout 1 through transposed temps) as one call of the GRU / LSTM
// micro-kernel (kernels/rnn.h; the call contracts @gru_<gemm desc> and @lstm_<gemm desc> are
// documented in rt/callees.cpp). Supported: every direction, optional B / sequence_lens /
// initial_h, clip, any subset of the outputs and the activations Sigmoid, Tanh and Relu; GRU also
// linear_before_reset 0/1, LSTM also initial_c, peepholes P and input_forget. Anything else
// declines with a reason (the node falls back to the reference kernel) rather than computing
// something different.
//
// JIT only: the lowering runs under LowerOptions::runtimeKernels, which only the JIT sets. The C
// bundle (codegen/c) maps micro-kernel callees to portable C stand-ins and has none for @gru_* or
// @lstm_*, so it must not see the call; there the node stays "not lowerable", as before.
#include "kernels/registry.h"
#include "kernels/rnn.h"
#include "loop/lower_ops.h"

#include <cctype>

namespace aicc::loop::detail {

namespace {

// What differs between the two cells at the call.
struct Cell {
  const char* callee;                   // "gru_" / "lstm_" + the GEMM descriptor
  int64_t gates;                        // 3 (z, r, h) / 4 (i, o, f, c)
  std::vector<std::string> activations; // the ONNX defaults, one per activation of a direction
  const char* flag;                     // the 0/1 attribute of flags bit 1
  size_t outputs;                       // Y, Y_h (, Y_c)
};

const Cell kGru{"gru_", 3, {"Sigmoid", "Tanh"}, "linear_before_reset", 2};
const Cell kLstm{"lstm_", 4, {"Sigmoid", "Tanh", "Tanh"}, "input_forget", 3};
const Cell kRnn{"", 1, {"Tanh"}, "", 2}; // (a loop nest: lowerSimpleRnn)

struct RnnDims {
  int64_t T = 0, batch = 0, I = 0, H = 0, dirs = 1;
};

int64_t numDirections(const Node& n) {
  std::string d = n.attrString("direction");
  if (d == "forward" || d == "reverse") return 1;
  if (d == "bidirectional") return 2;
  no(n.op + " direction '" + d + "'");
}

// The micro-kernel's code of an ONNX activation name (0 Sigmoid, 1 Tanh, 2 Relu).
int64_t activationCode(const Node& n, const std::string& name) {
  std::string l;
  for (char c : name) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "sigmoid") return 0;
  if (l == "tanh") return 1;
  if (l == "relu") return 2;
  no(n.op + " activation '" + name + "' (only Sigmoid, Tanh and Relu are lowered)");
}

// The `acts` argument: 2 bits per activation, direction 0's (f, g[, h]) then direction 1's (see
// the call contracts). Sigmoid, Tanh and Relu take no alpha/beta, so activation_alpha/beta do not
// matter.
int64_t activationArg(const Node& n, const Cell& cell, int64_t dirs) {
  std::vector<std::string> names = cell.activations;
  if (const Attribute* a = n.attr("activations"))
    if (const auto& v = std::get<std::vector<std::string>>(a->v); !v.empty()) names = v;
  const size_t per = cell.activations.size();
  if (names.size() == per && dirs == 2) {
    const std::vector<std::string> once = names;
    names.insert(names.end(), once.begin(), once.end());
  }
  if (names.size() != per * static_cast<size_t>(dirs))
    no(fmt::format("{} has {} activations for {} direction(s)", n.op, names.size(), dirs));
  int64_t acts = 0;
  for (size_t k = 0; k < names.size(); ++k) acts |= activationCode(n, names[k]) << (2 * k);
  return dirs == 1 ? acts | acts << (2 * per) : acts;
}

// Static f32 dims of an input, checked against `want`.
void expectDims(const Node& n, size_t i, const Dims& want, const char* what) {
  Dims d = staticDims(n.inputs[i], what);
  if (n.inputs[i]->type.dtype != DType::F32) no(fmt::format("{} {} is not f32", n.op, what));
  if (d != want)
    no(fmt::format("{} {} has shape {}, expected {}", n.op, what, formatDims(d), formatDims(want)));
}

RnnDims rnnDims(const Node& n, const Cell& cell, int64_t dirs) {
  Dims xd = staticDims(n.inputs.at(0), "X"), rd = staticDims(n.inputs.at(2), "R");
  if (xd.size() != 3 || rd.size() != 3) no(n.op + " X and R must have rank 3");
  RnnDims g;
  const bool layout1 = n.attrInt("layout", 0) != 0; // X [batch, T, I]
  g.T = xd[layout1 ? 1 : 0], g.batch = xd[layout1 ? 0 : 1], g.I = xd[2], g.dirs = dirs;
  g.H = n.attrInt("hidden_size", rd[2]);
  if (g.I < 1 || g.H < 1) no(n.op + " with an empty input or hidden size");
  const int64_t G = cell.gates * g.H;
  expectDims(n, 0, layout1 ? Dims{g.batch, g.T, g.I} : Dims{g.T, g.batch, g.I}, "X");
  expectDims(n, 1, {dirs, G, g.I}, "W");
  expectDims(n, 2, {dirs, G, g.H}, "R");
  if (n.hasInput(3)) expectDims(n, 3, {dirs, 2 * G}, "B");
  const Dims state = layout1 ? Dims{g.batch, dirs, g.H} : Dims{dirs, g.batch, g.H};
  if (n.hasInput(5)) expectDims(n, 5, state, "initial_h");
  if (n.hasInput(6)) expectDims(n, 6, state, "initial_c");
  if (n.hasInput(7)) expectDims(n, 7, {dirs, 3 * g.H}, "P");
  return g;
}

// Bit 0 reverse, bit 1 the cell's flag attribute, bit 2 clip (see the call contracts).
int64_t flagsArg(const Node& n, const Cell& cell) {
  return (n.attrString("direction") == "reverse" ? 1 : 0) | (n.attrInt(cell.flag, 0) != 0 ? 2 : 0) |
         (n.attr("clip") ? 4 : 0);
}

CallArg none() { return CallArg{"", nullptr, intImm(0)}; }
CallArg buffer(const std::string& p) { return CallArg{p, nullptr, nullptr}; }
CallArg value(int64_t v) { return CallArg{"", nullptr, intImm(v)}; }

// sequence_lens (int32/int64 [batch]) copied into an f32 temp: the call passes f32 buffers only.
CallArg lensArg(FuncBuilder& b, const Node& n, int64_t batch) {
  if (!n.hasInput(4)) return none();
  const Value* v = n.inputs[4];
  DType t = v->type.dtype;
  if (t != DType::I32 && t != DType::I64) no(n.op + " sequence_lens must be int32/int64");
  if (staticDims(v, "sequence_lens") != Dims{batch}) no(n.op + " sequence_lens is not [batch]");
  std::string in = b.input(v), tmp = b.temp("lens_f32", DType::F32, {batch});
  std::string i = b.fresh("b");
  for (auto& s :
       nest({i}, {batch}, {Stmt::store(tmp, var(i), cast(DType::F32, load(in, var(i), t)))}, false))
    b.prologue.push_back(std::move(s));
  return buffer(tmp);
}

// Output k (Y, Y_h or Y_c) with its expected shape, or 0 when the node omits it.
CallArg outputArg(FuncBuilder& b, const Node& n, size_t k, const Dims& want) {
  if (k >= n.outputs.size() || !n.outputs[k]) return none();
  Dims d = staticDims(n.outputs[k], "output");
  if (d != want || n.outputs[k]->type.dtype != DType::F32)
    no(fmt::format("{} output {} is {} {}, expected f32 {}", n.op, k,
                   dtypeName(n.outputs[k]->type.dtype), formatDims(d), formatDims(want)));
  return buffer(b.output(k));
}

std::optional<LoweredNode> lowerCell(const Node& n, const Cell& cell, const std::string& name,
                                     const LowerOptions& o) {
  if (!o.runtimeKernels) no(n.op + " lowers to a JIT-only micro-kernel (no C stand-in)");
  const int64_t dirs = numDirections(n);
  const int64_t flags = flagsArg(n, cell), acts = activationArg(n, cell, dirs);
  const RnnDims g = rnnDims(n, cell, dirs);
  const auto* clip = n.attr("clip");
  const double clipValue = clip ? std::get<float>(clip->v) : 0.0;
  FuncBuilder b(n, name, "rnn");
  const auto& kd = kernels::defaultKernel(kernels::KernelOp::Gemm, o.kernelIsa);
  // Symbolic sizes (loop/per_sample.h): the kernel takes the run's T and batch, X's; every value
  // has the same ones (the types say so, and the runtime checks the inputs), so their run's dims
  // are read for the record only.
  const std::vector<ExprPtr> xr = runDims(o, n.inputs[0], {g.T, g.batch, g.I});
  for (const auto* list : {&n.inputs, &n.outputs})
    for (const Value* v : *list)
      if (v && v->type.isTensor() && v->type.shape && toDims(*v->type.shape))
        runDims(o, v, *toDims(*v->type.shape));
  if (n.hasInput(4) && !isImm(xr[1])) no(n.op + " sequence_lens with a symbolic batch");
  // layout 1 (batch first): X and the initial states transposed into temps in the kernel's layout
  // before the call, the results out of temps after it (dst[j, i, r] = src[i, j, r]).
  const bool layout1 = n.attrInt("layout", 0) != 0;
  if (layout1 && (!isImm(xr[0]) || !isImm(xr[1]))) no(n.op + " layout 1 with symbolic sizes");
  Block after;
  auto swap01 = [&](const std::string& dst, const std::string& src, int64_t d0, int64_t d1,
                    int64_t inner) {
    const std::string iv = b.fresh("i"), jv = b.fresh("j"), rv = b.fresh("r");
    return nest(
        {jv, iv, rv}, {d1, d0, inner},
        {Stmt::store(dst, add(mul(add(mul(var(jv), intImm(d0)), var(iv)), intImm(inner)), var(rv)),
                     load(src,
                          add(mul(add(mul(var(iv), intImm(d1)), var(jv)), intImm(inner)), var(rv)),
                          DType::F32))},
        false);
  };
  auto in = [&](size_t i) {
    if (!n.hasInput(i)) return none();
    const std::string src = b.input(n.inputs[i]);
    if (!layout1 || (i != 0 && i != 5 && i != 6)) return buffer(src);
    const int64_t d0 = g.batch, d1 = i == 0 ? g.T : dirs, inner = i == 0 ? g.I : g.H;
    const std::string t =
        b.temp(i == 0 ? "x_time_major" : "state_dir_major", DType::F32, {d1, d0, inner});
    for (auto& st : swap01(t, src, d0, d1, inner)) b.prologue.push_back(std::move(st));
    return buffer(t);
  };
  auto out = [&](size_t k, const Dims& want) {
    if (!layout1) return outputArg(b, n, k, want);
    // The output as the model declares it (batch first), the kernel's into a temp.
    const Dims batchFirst = k == 0 ? Dims{g.batch, g.T, dirs, g.H} : Dims{g.batch, dirs, g.H};
    const CallArg o = outputArg(b, n, k, batchFirst);
    if (o.buffer.empty()) return o;
    const std::string t = b.temp(k == 0 ? "y_time_major" : "state_dir_major", DType::F32, want);
    const int64_t d0 = k == 0 ? g.T * dirs : dirs;
    for (auto& st : swap01(o.buffer, t, d0, g.batch, g.H)) after.push_back(std::move(st));
    return buffer(t);
  };
  std::vector<CallArg> args = {in(0), in(1), in(2), in(3), lensArg(b, n, g.batch), in(5)};
  if (&cell == &kLstm) args.insert(args.end(), {in(6), in(7)}); // initial_c, P
  args.push_back(out(0, {g.T, dirs, g.batch, g.H}));
  for (size_t k = 1; k < cell.outputs; ++k) args.push_back(out(k, {dirs, g.batch, g.H}));
  args.push_back(CallArg{"", nullptr, layout1 ? intImm(g.T) : xr[0]});
  args.push_back(CallArg{"", nullptr, layout1 ? intImm(g.batch) : xr[1]});
  for (int64_t v : {g.I, g.H, dirs, flags}) args.push_back(value(v));
  args.push_back(CallArg{"", nullptr, floatImm(clipValue, DType::F32)});
  args.push_back(value(acts));
  // Constant W and R: packed for the GEMM kernel here (a weight of the artifact), not per call.
  const Value *wv = n.inputs[1], *rv = n.inputs[2];
  const bool packNow = wv->constant && rv->constant;
  if (packNow) {
    kernels::RnnShape rs;
    rs.I = g.I, rs.H = g.H, rs.dirs = dirs;
    const bool lbr = &cell == &kGru && (flags & 2);
    Tensor packed(DType::F32, {o.probe ? 0 : kernels::rnnPackedFloats(kd, rs, cell.gates, lbr)});
    if (!o.probe)
      kernels::packRnnWeights(kd, rs, cell.gates, lbr, wv->constant->data<float>(),
                              rv->constant->data<float>(), packed.data<float>());
    args.push_back(buffer(b.constant(b.input(wv) + "_packed", std::move(packed),
                                     std::string("packed_rnn:") + kd.name)));
  }
  Schedule sched;
  markKernel(sched, kd.name);
  sched["direction"] = n.attrString("direction");
  sched[cell.flag] = int64_t((flags & 2) != 0);
  sched["packing"] =
      std::string(packNow ? "W and R packed at compile time" : "W and R packed at call");
  Block body = {Stmt::callKernel(cell.callee + std::string(kd.name), std::move(args))};
  for (auto& st : after) body.push_back(std::move(st));
  return b.finish(std::move(body), std::move(sched), o);
}

// RNN (ai.onnx, layout 0 or 1) as a loop nest in double, as the reference computes it: per
// direction and batch row the hidden state h (double) through the steps,
//   h = f(clip(Wb + W x_t + Rb + R h)),  Y[t] = h rounded to f32,
// the two products summed separately in order (the reference's a and q). Activations Tanh,
// Sigmoid, Relu; sequence_lens absent or constant (a length out of range is the compile's
// error there, as the run's would be).
std::optional<LoweredNode> lowerSimpleRnn(const Node& n, const std::string& name,
                                          const LowerOptions& o) {
  FuncBuilder b(n, name, "rnn");
  const int64_t dirs = numDirections(n);
  const bool reverseOnly = n.attrString("direction") == "reverse";
  const bool layout1 = n.attrInt("layout", 0) != 0;
  const Dims xd = staticDims(n.inputs.at(0), "X"), wd = staticDims(n.inputs.at(1), "W"),
             rd = staticDims(n.inputs.at(2), "R");
  for (const Value* v : n.inputs)
    if (v && v != (n.hasInput(4) ? n.inputs[4] : nullptr) && v->type.dtype != DType::F32)
      no("RNN is lowered for f32");
  if (xd.size() != 3 || wd.size() != 3 || rd.size() != 3) no("RNN X, W and R must have rank 3");
  const int64_t T = xd[layout1 ? 1 : 0], B = xd[layout1 ? 0 : 1], I = xd[2];
  const int64_t H = n.attrInt("hidden_size", rd[2]);
  if (wd != Dims{dirs, H, I} || rd != Dims{dirs, H, H}) no("RNN W or R of another shape");
  std::vector<int64_t> lens(size_t(B), T);
  if (n.hasInput(4)) {
    auto c = constInts(n, 4);
    if (!c || int64_t(c->size()) != B) no("RNN sequence_lens given at run time");
    lens = *c;
    for (int64_t l : lens)
      if (l < 0 || l > T) no("RNN sequence_lens out of range");
  }
  const int64_t acts = activationArg(n, kRnn, dirs); // 2 bits per direction
  const Attribute* clipAttr = n.attr("clip");
  const double clip = clipAttr ? std::get<float>(clipAttr->v) : 0.0;
  const std::string x = b.input(n.inputs[0]), w = b.input(n.inputs[1]), r = b.input(n.inputs[2]);
  const std::string bias = n.hasInput(3) ? b.input(n.inputs[3]) : "",
                    h0 = n.hasInput(5) ? b.input(n.inputs[5]) : "";
  const bool yOut = !n.outputs.empty() && n.outputs[0],
             yhOut = n.outputs.size() > 1 && n.outputs[1];
  const std::string h = b.temp("h", DType::F64, {H}), hn = b.temp("h_next", DType::F64, {H}),
                    acc = b.temp("acc", DType::F64, {2});
  const std::string sv = b.fresh("s"), gv = b.fresh("g"), kv = b.fresh("k");
  const ExprPtr g = var(gv), k = var(kv);
  const ExprPtr a0 = load(acc, intImm(0), DType::F64), a1 = load(acc, intImm(1), DType::F64);
  auto f64 = [](ExprPtr e) { return cast(DType::F64, std::move(e)); };
  auto state = [&](int64_t d, int64_t row, const ExprPtr& j) { // [dirs, B, H] or [B, dirs, H]
    return add(intImm(((layout1 ? row * dirs + d : d * B + row)) * H), j);
  };
  Block body;
  for (int64_t d = 0; d < dirs; ++d) {
    const bool rev = reverseOnly || d == 1;
    const int64_t act = acts >> (2 * d) & 3; // activationCode: 0 Sigmoid, 1 Tanh, 2 Relu
    auto apply = [&](ExprPtr v) -> ExprPtr {
      if (clipAttr) v = max(min(v, floatImm(clip, DType::F64)), floatImm(-clip, DType::F64));
      if (act == 1) return call("tanh", {v});
      if (act == 2) return max(v, floatImm(0, DType::F64));
      return div(floatImm(1, DType::F64), add(floatImm(1, DType::F64), call("exp", {neg(v)})));
    };
    for (int64_t row = 0; row < B; ++row) {
      body.push_back(
          Stmt::forLoop(gv, intImm(0), intImm(H),
                        {Stmt::store(h, g,
                                     h0.empty() ? floatImm(0, DType::F64)
                                                : f64(load(h0, state(d, row, g), DType::F32)))}));
      const int64_t len = lens[size_t(row)];
      // Step s: time t (backwards for the reverse direction).
      const ExprPtr t = rev ? sub(intImm(len - 1), var(sv)) : var(sv);
      const ExprPtr xt = add(
          mul(layout1 ? add(mul(intImm(row), intImm(T)), t) : add(mul(t, intImm(B)), intImm(row)),
              intImm(I)),
          k);
      Block gate = {
          Stmt::store(acc, intImm(0),
                      bias.empty() ? floatImm(0, DType::F64)
                                   : f64(load(bias, add(intImm(d * 2 * H), g), DType::F32))),
          Stmt::store(acc, intImm(1),
                      bias.empty() ? floatImm(0, DType::F64)
                                   : f64(load(bias, add(intImm(d * 2 * H + H), g), DType::F32))),
          Stmt::forLoop(
              kv, intImm(0), intImm(I),
              {Stmt::store(acc, intImm(0),
                           add(a0, mul(f64(load(w, add(mul(add(intImm(d * H), g), intImm(I)), k),
                                                DType::F32)),
                                       f64(load(x, xt, DType::F32)))))}),
          Stmt::forLoop(
              kv, intImm(0), intImm(H),
              {Stmt::store(acc, intImm(1),
                           add(a1, mul(f64(load(r, add(mul(add(intImm(d * H), g), intImm(H)), k),
                                                DType::F32)),
                                       load(h, k, DType::F64))))}),
          Stmt::store(hn, g, apply(add(a0, a1)))};
      Block step = {
          Stmt::forLoop(gv, intImm(0), intImm(H), std::move(gate)),
          Stmt::forLoop(gv, intImm(0), intImm(H), {Stmt::store(h, g, load(hn, g, DType::F64))})};
      if (yOut) {
        const ExprPtr yi = add(
            mul(layout1 ? add(mul(add(mul(intImm(row), intImm(T)), t), intImm(dirs)), intImm(d))
                        : add(mul(add(mul(t, intImm(dirs)), intImm(d)), intImm(B)), intImm(row)),
                intImm(H)),
            g);
        step.push_back(Stmt::forLoop(
            gv, intImm(0), intImm(H),
            {Stmt::store(b.output(0), yi, cast(DType::F32, load(h, g, DType::F64)))}));
      }
      body.push_back(Stmt::forLoop(sv, intImm(0), intImm(len), std::move(step)));
      if (yhOut)
        body.push_back(Stmt::forLoop(gv, intImm(0), intImm(H),
                                     {Stmt::store(b.output(1), state(d, row, g),
                                                  cast(DType::F32, load(h, g, DType::F64)))}));
    }
  }
  if (yOut) { // rows past their length are zeros
    const std::string iv = b.fresh("i");
    Block zero = {Stmt::forLoop(iv, intImm(0), intImm(T * dirs * B * H),
                                {Stmt::store(b.output(0), var(iv), floatImm(0))})};
    body.insert(body.begin(), zero.begin(), zero.end());
  }
  Schedule sch;
  sch["direction"] = n.attrString("direction");
  return b.finish(std::move(body), std::move(sch), o);
}

} // namespace

std::optional<LoweredNode> lowerRnnFamily(const Node& n, const std::string& name,
                                          const LowerOptions& o) {
  if (!n.domain.empty()) return std::nullopt;
  if (n.op == "GRU") return lowerCell(n, kGru, name, o);
  if (n.op == "LSTM") return lowerCell(n, kLstm, name, o);
  if (n.op == "RNN") return lowerSimpleRnn(n, name, o);
  return std::nullopt;
}

} // namespace aicc::loop::detail
