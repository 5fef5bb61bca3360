// Einsum as one loop nest over the output's labels, each output element summing over the other
// labels (ops/einsum.h parses the equation: explicit or implicit output, ellipsis, repeated labels
// as diagonals; a dim of size 1 broadcasts against the same label's other dims). The reference
// accumulates floats in double; the nest accumulates in the output's float type, as the MatMul
// kernels do. Integer and 16-bit float operands stay on the reference kernel.
#include "loop/lower_ops.h"
#include "ops/einsum.h"

#include <algorithm>
#include <map>

namespace aicc::loop::detail {

std::optional<LoweredNode> lowerEinsum(const Node& n, FuncBuilder& b, const LowerOptions& o) {
  b.setKind("reduce");
  const DType t = n.outputs.at(0)->type.dtype;
  if (t != DType::F32 && t != DType::F64) no("Einsum is lowered for f32 and f64");
  std::vector<Dims> in;
  std::vector<int64_t> ranks;
  for (const Value* v : n.inputs) {
    if (!v || v->type.dtype != t) no("operands of another element type");
    in.push_back(staticDims(v, "input"));
    ranks.push_back(int64_t(in.back().size()));
  }
  const EinsumSpec spec = parseEinsum(n.attrString("equation"), ranks);
  // Each label's size: the largest of its dims (the others are equal or 1, as shape inference
  // checked). Symbolic sizes: the run's, every dim of a label not 1 being the same expression.
  std::map<int, int64_t> size;
  std::map<int, ExprPtr> runSize;
  std::vector<std::vector<ExprPtr>> runs;
  std::vector<int> order = spec.out; // loop labels: the output's, then the summed ones
  for (size_t i = 0; i < in.size(); ++i) {
    runs.push_back(runDims(o, n.inputs[i], in[i]));
    for (size_t d = 0; d < in[i].size(); ++d) {
      const int l = spec.in[i][d];
      size[l] = std::max(size[l], in[i][d]);
      if (std::find(order.begin(), order.end(), l) == order.end()) order.push_back(l);
      const ExprPtr& e = runs[i][d];
      if (asInt(e) == 1) continue;
      if (runSize.count(l) && !equal(runSize[l], e))
        no("a label whose dims are different symbolic sizes");
      runSize[l] = e;
    }
  }
  const size_t outRank = spec.out.size();
  std::vector<std::string> names;
  std::map<int, ExprPtr> label;
  std::vector<ExprPtr> ext;
  for (int l : order) {
    names.push_back(b.fresh("l"));
    label[l] = var(names.back());
    // (an output label nobody uses: parseEinsum refuses)
    ext.push_back(runSize.count(l) ? runSize[l] : intImm(1));
  }
  const std::vector<ExprPtr> outExt(ext.begin(), ext.begin() + std::ptrdiff_t(outRank));
  if (!sameRunDims(staticDims(n.outputs[0], "output"),
                   runDims(o, n.outputs[0], staticDims(n.outputs[0], "output")), outExt))
    no("a result whose dims are not its labels' sizes");
  // Operand i at the current labels: a broadcast dim (size 1 under a larger label) reads index 0.
  ExprPtr prod;
  for (size_t i = 0; i < in.size(); ++i) {
    std::vector<ExprPtr> idx;
    for (size_t d = 0; d < in[i].size(); ++d)
      idx.push_back(in[i][d] == 1 && size[spec.in[i][d]] != 1 ? nullptr : label[spec.in[i][d]]);
    ExprPtr x = load(b.input(n.inputs[i]), runIndex(idx, stridesOf(runs[i])), t);
    prod = prod ? mul(prod, x) : x;
  }
  const std::string out = b.output(0);
  std::vector<ExprPtr> oidx;
  for (size_t k = 0; k < outRank; ++k) oidx.push_back(label[spec.out[k]]);
  const ExprPtr at = outRank ? runIndex(oidx, stridesOf(outExt)) : intImm(0);
  const std::vector<std::string> outer(names.begin(), names.begin() + std::ptrdiff_t(outRank)),
      summed(names.begin() + std::ptrdiff_t(outRank), names.end());
  Block body;
  if (summed.empty()) {
    body = {Stmt::store(out, at, prod)};
  } else {
    body = {Stmt::store(out, at, constant(t, 0))};
    for (auto& st :
         runNest(summed, std::vector<ExprPtr>(ext.begin() + std::ptrdiff_t(outRank), ext.end()),
                 {Stmt::store(out, at, add(load(out, at, t), prod))}, false))
      body.push_back(std::move(st));
  }
  if (!outer.empty()) body = runNest(outer, outExt, std::move(body));
  Schedule s;
  s["labels"] = int64_t(order.size());
  return b.finish(std::move(body), std::move(s), o);
}

} // namespace aicc::loop::detail
