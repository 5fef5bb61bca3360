// Ops whose every output element is one input element (or a constant) found by index arithmetic:
// Tile, DepthToSpace, SpaceToDepth and EyeLike, each one gather nest. A shape input given at run
// time (Tile's repeats) is checked against the compiled shape by the runtime (@check_values_i64).
#include "loop/lower_ops.h"

namespace aicc::loop::detail {

namespace {

// The run-time int64 input `input` must hold `want` (what the static output shape implies): a
// constant is compared now, anything else by the runtime before the nest.
Block checkShapeInput(FuncBuilder& b, const Node& n, size_t input, const std::vector<int64_t>& want,
                      const LowerOptions& o) {
  const Value* v = n.inputs.at(input);
  if (auto c = constInts(n, input)) {
    if (*c != want) no("input " + std::to_string(input) + " disagrees with the output shape");
    return {};
  }
  if (v->type.dtype != DType::I64) no("a run-time shape input that is not int64");
  if (!o.runtimeKernels) no("a shape input given at run time (checked by the runtime only)");
  std::vector<CallArg> args = {bufferArg(b.input(v)), intArg(int64_t(want.size()))};
  for (int64_t w : want) args.push_back(intArg(w));
  return {Stmt::callKernel("check_values_i64", std::move(args))};
}

// Tile: out[v] = in[v mod input dims]; repeats = output dims / input dims.
std::optional<LoweredNode> lowerTile(const Node& n, const std::string& name,
                                     const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output"), id = staticDims(n.inputs.at(0), "input");
  if (od.size() != id.size()) no("output rank differs from the input's");
  std::vector<int64_t> repeats;
  for (size_t k = 0; k < od.size(); ++k) {
    if (id[k] == 0 ? od[k] != 0 : od[k] % id[k] != 0) no("output dims are not input multiples");
    repeats.push_back(id[k] == 0 ? 0 : od[k] / id[k]);
  }
  if (numel(od) == 0) no("an empty output");
  Block check = checkShapeInput(b, n, 1, repeats, o);
  std::string in = b.input(n.inputs[0]);
  DType t = n.outputs[0]->type.dtype;
  Schedule s;
  s["repeats"] = repeats;
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        std::vector<ExprPtr> idx;
        for (size_t k = 0; k < v.size(); ++k)
          idx.push_back(id[k] == od[k] ? v[k] : binary(Op::Mod, v[k], intImm(id[k])));
        return load(in, linearIndex(idx, strides(id)), t);
      },
      o, std::move(s), std::move(check));
}

// DepthToSpace (DCR: channel (i * b + j) * C' + c; CRD: c * b * b + i * b + j, for output pixel
// (h * b + i, w * b + j)) and SpaceToDepth (output channel (i * b + j) * C + c from input pixel
// (y * b + i, x * b + j)), as the reference's reshape-transpose-reshape.
std::optional<LoweredNode> lowerBlocks(const Node& n, const std::string& name,
                                       const LowerOptions& o, bool toSpace) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output"), id = staticDims(n.inputs.at(0), "input");
  const int64_t bs = n.attrInt("blocksize");
  if (od.size() != 4 || id.size() != 4 || bs < 1) no("a 4-D input and a positive blocksize");
  const bool crd = toSpace && n.attrString("mode") == "CRD";
  if (toSpace && !crd && n.attrString("mode") != "DCR") no("an unknown mode");
  std::string in = b.input(n.inputs[0]);
  DType t = n.outputs[0]->type.dtype;
  auto c = [](int64_t v) { return intImm(v); };
  Schedule s;
  s["blocksize"] = bs;
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        ExprPtr ch, y, x;
        if (toSpace) {
          const int64_t C = od[1];
          ExprPtr i = binary(Op::Mod, v[2], c(bs)), j = binary(Op::Mod, v[3], c(bs));
          ExprPtr ij = add(mul(i, c(bs)), j);
          ch = crd ? add(mul(v[1], c(bs * bs)), ij) : add(mul(ij, c(C)), v[1]);
          y = div(v[2], c(bs)), x = div(v[3], c(bs));
        } else {
          const int64_t C = id[1];
          ExprPtr ij = div(v[1], c(C)); // i * b + j
          ch = binary(Op::Mod, v[1], c(C));
          y = add(mul(v[2], c(bs)), div(ij, c(bs)));
          x = add(mul(v[3], c(bs)), binary(Op::Mod, ij, c(bs)));
        }
        return load(in, linearIndex({v[0], ch, y, x}, strides(id)), t);
      },
      o, std::move(s));
}

// EyeLike: ones where column - row == k, zeros elsewhere, in the output's type.
std::optional<LoweredNode> lowerEyeLike(const Node& n, const std::string& name,
                                        const LowerOptions& o) {
  FuncBuilder b(n, name, "data");
  std::string out = b.output(0);
  Dims od = staticDims(n.outputs[0], "output");
  if (od.size() != 2) no("a 2-D input");
  const int64_t k = n.attrInt("k");
  DType t = n.outputs[0]->type.dtype;
  return gatherNest(
      b, out, od,
      [&](const std::vector<ExprPtr>& v) {
        return select(cmp(Op::Eq, sub(v[1], v[0]), intImm(k)), constant(t, 1), constant(t, 0));
      },
      o);
}

} // namespace

std::optional<LoweredNode> lowerRearrange(const Node& n, const std::string& name,
                                          const LowerOptions& o) {
  if (n.op == "Tile") return lowerTile(n, name, o);
  if (n.op == "DepthToSpace") return lowerBlocks(n, name, o, true);
  if (n.op == "SpaceToDepth") return lowerBlocks(n, name, o, false);
  if (n.op == "EyeLike") return lowerEyeLike(n, name, o);
  return std::nullopt;
}

} // namespace aicc::loop::detail
