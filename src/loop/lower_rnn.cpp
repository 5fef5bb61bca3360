// GRU (ai.onnx, f32, layout 0) as one call of the GRU micro-kernel (kernels/rnn.h; the call
// contract @gru_<gemm desc> is documented in loop/lower_kernels.cpp). Supported: every direction,
// linear_before_reset 0/1, optional B / sequence_lens / initial_h, clip, optional outputs, and
// the activations Sigmoid, Tanh and Relu. Anything else declines with a reason (the node falls
// back to the reference kernel) rather than computing something different.
//
// JIT only: the lowering runs under LowerOptions::runtimeKernels, which only the JIT sets. The C
// bundle (codegen/c) maps micro-kernel callees to portable C stand-ins and has none for @gru_*,
// so it must not see the call; there the GRU stays "not lowerable", as before.
#include "kernels/registry.h"
#include "loop/lower_ops.h"

#include <cctype>

namespace aicc::loop::detail {

namespace {

struct GruDims {
  int64_t T = 0, batch = 0, I = 0, H = 0, dirs = 1;
};

int64_t numDirections(const Node& n) {
  std::string d = n.attrString("direction");
  if (d == "forward" || d == "reverse") return 1;
  if (d == "bidirectional") return 2;
  no("GRU direction '" + d + "'");
}

// The micro-kernel's code of an ONNX activation name (0 Sigmoid, 1 Tanh, 2 Relu).
int64_t activationCode(const std::string& name) {
  std::string l;
  for (char c : name) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "sigmoid") return 0;
  if (l == "tanh") return 1;
  if (l == "relu") return 2;
  no("GRU activation '" + name + "' (only Sigmoid, Tanh and Relu are lowered)");
}

// The `acts` argument: (f, g) of each direction, 2 bits each, f0 | g0 << 2 | f1 << 4 | g1 << 6.
// Sigmoid, Tanh and Relu take no alpha/beta, so activation_alpha/beta do not matter.
int64_t activationArg(const Node& n, int64_t dirs) {
  std::vector<std::string> names = {"Sigmoid", "Tanh"};
  if (const Attribute* a = n.attr("activations"))
    if (const auto& v = std::get<std::vector<std::string>>(a->v); !v.empty()) names = v;
  if (names.size() == 2 && dirs == 2) names = {names[0], names[1], names[0], names[1]};
  if (names.size() != static_cast<size_t>(2 * dirs))
    no(fmt::format("GRU has {} activations for {} direction(s)", names.size(), dirs));
  int64_t acts = 0;
  for (size_t k = 0; k < names.size(); ++k) acts |= activationCode(names[k]) << (2 * k);
  return dirs == 1 ? acts | acts << 4 : acts;
}

// Static f32 dims of an input, checked against `want`.
void expectDims(const Node& n, size_t i, const Dims& want, const char* what) {
  Dims d = staticDims(n.inputs[i], what);
  if (n.inputs[i]->type.dtype != DType::F32) no(fmt::format("GRU {} is not f32", what));
  if (d != want)
    no(fmt::format("GRU {} has shape {}, expected {}", what, formatDims(d), formatDims(want)));
}

GruDims gruDims(const Node& n, int64_t dirs) {
  Dims xd = staticDims(n.inputs.at(0), "X"), rd = staticDims(n.inputs.at(2), "R");
  if (xd.size() != 3 || rd.size() != 3) no("GRU X and R must have rank 3");
  GruDims g;
  g.T = xd[0], g.batch = xd[1], g.I = xd[2], g.dirs = dirs;
  g.H = n.attrInt("hidden_size", rd[2]);
  if (g.I < 1 || g.H < 1) no("GRU with an empty input or hidden size");
  expectDims(n, 0, {g.T, g.batch, g.I}, "X");
  expectDims(n, 1, {dirs, 3 * g.H, g.I}, "W");
  expectDims(n, 2, {dirs, 3 * g.H, g.H}, "R");
  if (n.hasInput(3)) expectDims(n, 3, {dirs, 6 * g.H}, "B");
  if (n.hasInput(5)) expectDims(n, 5, {dirs, g.batch, g.H}, "initial_h");
  return g;
}

// Bit 0 reverse, bit 1 linear_before_reset, bit 2 clip (see the @gru_ contract).
int64_t flagsArg(const Node& n) {
  if (n.attrInt("layout", 0) != 0) no("GRU layout 1");
  return (n.attrString("direction") == "reverse" ? 1 : 0) |
         (n.attrInt("linear_before_reset", 0) != 0 ? 2 : 0) | (n.attr("clip") ? 4 : 0);
}

CallArg none() { return CallArg{"", nullptr, intImm(0)}; }
CallArg buffer(const std::string& p) { return CallArg{p, nullptr, nullptr}; }
CallArg value(int64_t v) { return CallArg{"", nullptr, intImm(v)}; }

// sequence_lens (int32/int64 [batch]) copied into an f32 temp: the call passes f32 buffers only.
CallArg lensArg(FuncBuilder& b, const Node& n, int64_t batch) {
  if (!n.hasInput(4)) return none();
  const Value* v = n.inputs[4];
  DType t = v->type.dtype;
  if (t != DType::I32 && t != DType::I64) no("GRU sequence_lens must be int32/int64");
  if (staticDims(v, "sequence_lens") != Dims{batch}) no("GRU sequence_lens is not [batch]");
  std::string in = b.input(v), tmp = b.temp("lens_f32", DType::F32, {batch});
  std::string i = b.fresh("b");
  for (auto& s :
       nest({i}, {batch}, {Stmt::store(tmp, var(i), cast(DType::F32, load(in, var(i), t)))}, false))
    b.prologue.push_back(std::move(s));
  return buffer(tmp);
}

// Output k (Y or Y_h) with its expected shape, or 0 when the node omits it.
CallArg outputArg(FuncBuilder& b, const Node& n, size_t k, const Dims& want) {
  if (k >= n.outputs.size() || !n.outputs[k]) return none();
  Dims d = staticDims(n.outputs[k], "output");
  if (d != want || n.outputs[k]->type.dtype != DType::F32)
    no(fmt::format("GRU output {} is {} {}, expected f32 {}", k,
                   dtypeName(n.outputs[k]->type.dtype), formatDims(d), formatDims(want)));
  return buffer(b.output(k));
}

std::optional<LoweredNode> lowerGru(const Node& n, const std::string& name, const LowerOptions& o) {
  if (!o.runtimeKernels) no("GRU lowers to a JIT-only micro-kernel (no C stand-in)");
  const int64_t dirs = numDirections(n);
  const int64_t flags = flagsArg(n), acts = activationArg(n, dirs);
  const GruDims g = gruDims(n, dirs);
  const auto* clip = n.attr("clip");
  const double clipValue = clip ? std::get<float>(clip->v) : 0.0;
  FuncBuilder b(n, name, "rnn");
  const auto& kd = kernels::defaultKernel(kernels::KernelOp::Gemm);
  auto in = [&](size_t i) { return n.hasInput(i) ? buffer(b.input(n.inputs[i])) : none(); };
  std::vector<CallArg> args = {in(0), in(1), in(2), in(3), lensArg(b, n, g.batch), in(5)};
  args.push_back(outputArg(b, n, 0, {g.T, dirs, g.batch, g.H}));
  args.push_back(outputArg(b, n, 1, {dirs, g.batch, g.H}));
  for (int64_t v : {g.T, g.batch, g.I, g.H, dirs, flags}) args.push_back(value(v));
  args.push_back(CallArg{"", nullptr, floatImm(clipValue, DType::F32)});
  args.push_back(value(acts));
  Schedule sched;
  sched["micro_kernel"] = std::string(kd.name);
  sched["direction"] = n.attrString("direction");
  sched["linear_before_reset"] = int64_t((flags & 2) != 0);
  sched["packing"] = std::string("W and R packed at call");
  return b.finish({Stmt::callKernel(std::string("gru_") + kd.name, std::move(args))},
                  std::move(sched), o);
}

} // namespace

std::optional<LoweredNode> lowerRnnFamily(const Node& n, const std::string& name,
                                          const LowerOptions& o) {
  if (!n.domain.empty() || n.op != "GRU") return std::nullopt;
  return lowerGru(n, name, o);
}

} // namespace aicc::loop::detail
