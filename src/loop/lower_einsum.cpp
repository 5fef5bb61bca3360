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
  // checked).
  std::map<int, int64_t> size;
  std::vector<int> order = spec.out; // loop labels: the output's, then the summed ones
  for (size_t i = 0; i < in.size(); ++i)
    for (size_t d = 0; d < in[i].size(); ++d) {
      const int l = spec.in[i][d];
      size[l] = std::max(size[l], in[i][d]);
      if (std::find(order.begin(), order.end(), l) == order.end()) order.push_back(l);
    }
  const size_t outRank = spec.out.size();
  std::vector<std::string> names;
  std::map<int, ExprPtr> label;
  Dims ext;
  for (int l : order) {
    names.push_back(b.fresh("l"));
    label[l] = var(names.back());
    ext.push_back(size.count(l) ? size[l] : 1); // an output label nobody uses: parseEinsum refuses
  }
  // Operand i at the current labels: a broadcast dim (size 1 under a larger label) reads index 0.
  ExprPtr prod;
  for (size_t i = 0; i < in.size(); ++i) {
    const std::vector<int64_t> st = strides(in[i]);
    std::vector<ExprPtr> idx;
    for (size_t d = 0; d < in[i].size(); ++d)
      idx.push_back(in[i][d] == 1 && size[spec.in[i][d]] != 1 ? nullptr : label[spec.in[i][d]]);
    ExprPtr x = load(b.input(n.inputs[i]), linearIndex(idx, st), t);
    prod = prod ? mul(prod, x) : x;
  }
  const std::string out = b.output(0);
  std::vector<ExprPtr> oidx;
  for (size_t k = 0; k < outRank; ++k) oidx.push_back(label[spec.out[k]]);
  const ExprPtr at =
      outRank ? linearIndex(oidx, strides(Dims(ext.begin(), ext.begin() + outRank))) : intImm(0);
  const std::vector<std::string> outer(names.begin(), names.begin() + outRank),
      summed(names.begin() + outRank, names.end());
  Block body;
  if (summed.empty()) {
    body = {Stmt::store(out, at, prod)};
  } else {
    body = {Stmt::store(out, at, constant(t, 0))};
    for (auto& st : nest(summed, Dims(ext.begin() + outRank, ext.end()),
                         {Stmt::store(out, at, add(load(out, at, t), prod))}, false))
      body.push_back(std::move(st));
  }
  if (!outer.empty()) body = nest(outer, Dims(ext.begin(), ext.begin() + outRank), std::move(body));
  Schedule s;
  s["labels"] = int64_t(order.size());
  return b.finish(std::move(body), std::move(s), o);
}

} // namespace aicc::loop::detail
