// Gradient rule of Einsum: the gradient of operand k is itself an einsum, of dy and the other
// operands, producing operand k's subscripts: "out,others->sk". Labels that only operand k has
// (summed away by the forward) come back through an extra all-ones operand of their sizes.
// Unsupported (clear error): repeated labels within the differentiated operand (diagonals), and
// broadcasting (a size-1 dim or a shorter ellipsis against a larger one) in that operand.
#include "ops/elementwise_grad.h"

#include <algorithm>
#include <set>

namespace aicc::grad {

namespace {

// Labels of one term; "..." is kept as the character '.' (one entry).
std::string labelsOf(const std::string& term) {
  std::string s;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term[i] == '.') {
      s += '.';
      i += 2;
    } else {
      s += term[i];
    }
  }
  return s;
}

std::string termOf(const std::string& labels) {
  std::string t;
  for (char ch : labels) t += ch == '.' ? std::string("...") : std::string(1, ch);
  return t;
}

struct Equation {
  std::vector<std::string> in; // labels per operand ('.' = ellipsis)
  std::string out;
};

Equation parseEquation(const std::string& eqIn) {
  std::string eq;
  for (char ch : eqIn)
    if (ch != ' ') eq += ch;
  Equation e;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    e.in.push_back(labelsOf(
        lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    e.out = labelsOf(eq.substr(arrow + 2));
  } else { // implicit: the ellipsis, then the labels used exactly once, in ASCII order
    std::map<char, int> count;
    bool ellipsis = false;
    for (const auto& t : e.in)
      for (char ch : t) {
        if (ch == '.')
          ellipsis = true;
        else
          ++count[ch];
      }
    if (ellipsis) e.out += '.';
    for (auto [ch, n] : count)
      if (n == 1) e.out += ch;
  }
  return e;
}

// The dims of v (static ones; unknown = -1), aligned with `labels` ('.' = several dims).
std::vector<std::pair<char, int64_t>> labeledDims(GradCtx& c, Value* v, const std::string& labels) {
  int64_t rank = c.rankOf(v);
  int64_t explicitCount = static_cast<int64_t>(
      std::count_if(labels.begin(), labels.end(), [](char ch) { return ch != '.'; }));
  int64_t ell = rank - explicitCount;
  AICC_CHECK(ell >= 0 && (ell == 0 || labels.find('.') != std::string::npos),
             "Einsum: operand '{}' of rank {} does not match its subscripts", v->name, rank);
  std::vector<std::pair<char, int64_t>> dims;
  size_t d = 0;
  for (char ch : labels) {
    int64_t n = ch == '.' ? ell : 1;
    for (int64_t k = 0; k < n; ++k, ++d) {
      const Dim& dim = (*v->type.shape)[d];
      dims.push_back({ch, dim.isStatic() ? dim.value : -1});
    }
  }
  return dims;
}

} // namespace

void registerEinsumGrad(OpRegistry& r) {
  OpBuilder(r.at("Einsum")).grad([](GradCtx& c) {
    B b{c};
    Equation eq = parseEquation(c.node.attrString("equation"));
    size_t n = c.node.inputs.size();
    AICC_CHECK(eq.in.size() == n, "Einsum: the equation has {} operands but the node has {} inputs",
               eq.in.size(), n);
    // The ellipsis dims of the output (right-aligned) and the size of every explicit label.
    auto outDims = labeledDims(c, c.out(0), eq.out);
    std::vector<int64_t> outEll;
    std::map<char, int64_t> size;
    for (auto [ch, d] : outDims) {
      if (ch == '.')
        outEll.push_back(d);
      else
        size[ch] = d;
    }
    for (size_t i = 0; i < n; ++i)
      for (auto [ch, d] : labeledDims(c, c.in(i), eq.in[i]))
        if (ch != '.' && d != 1 && (!size.count(ch) || size[ch] == 1 || size[ch] == -1))
          size[ch] = d;

    Value* dy = c.doutOrZeros(0);
    for (size_t k = 0; k < n; ++k) {
      if (!c.needs(k)) continue;
      const std::string& sk = eq.in[k];
      std::set<char> seen;
      for (char ch : sk)
        AICC_CHECK(ch == '.' || seen.insert(ch).second,
                   "Einsum: no gradient for operand {} with a repeated subscript '{}' (a diagonal) "
                   "in '{}'",
                   k, ch, c.node.attrString("equation"));
      // Broadcasting in operand k would need a reduction the einsum cannot express.
      auto dims = labeledDims(c, c.in(k), sk);
      std::vector<int64_t> ell;
      for (auto [ch, d] : dims) {
        if (ch == '.') {
          ell.push_back(d);
          continue;
        }
        AICC_CHECK(
            d != 1 || size[ch] == 1,
            "Einsum: no gradient for operand {}: its dim '{}' of size 1 broadcasts (size {})", k,
            ch, size[ch]);
      }
      bool ellOk = ell.size() == outEll.size() || sk.find('.') == std::string::npos;
      for (size_t e = 0; ellOk && e < ell.size(); ++e) ellOk = !(ell[e] == 1 && outEll[e] != 1);
      AICC_CHECK(ellOk, "Einsum: no gradient for operand {}: its ellipsis dims broadcast", k);

      // dy, the other operands, and ones for the labels only operand k has.
      std::set<char> available(eq.out.begin(), eq.out.end());
      std::vector<Value*> ins{dy};
      std::string lhs = termOf(eq.out);
      for (size_t i = 0; i < n; ++i) {
        if (i == k) continue;
        ins.push_back(c.in(i));
        lhs += "," + termOf(eq.in[i]);
        available.insert(eq.in[i].begin(), eq.in[i].end());
      }
      std::string missing;
      std::vector<int64_t> missingAxes;
      for (size_t d = 0; d < dims.size(); ++d)
        if (dims[d].first != '.' && !available.count(dims[d].first)) {
          missing += dims[d].first;
          missingAxes.push_back(static_cast<int64_t>(d));
        }
      AICC_CHECK(sk.find('.') == std::string::npos || available.count('.'),
                 "Einsum: no gradient for operand {}: its ellipsis dims are summed away", k);
      if (!missing.empty()) {
        Tensor one(c.in(k)->type.dtype, {1});
        one.setF64(0, 1.0);
        Value* shape = b.op("Gather", {b.shape(c.in(k)), b.ints(missingAxes)});
        ins.push_back(b.op("ConstantOfShape", {shape}, {{"value", Attribute{one}}}));
        lhs += "," + missing;
      }
      std::string equation = lhs + "->" + termOf(sk);
      c.give(k, b.op("Einsum", ins, {{"equation", Attribute{equation}}}));
    }
  });
}

} // namespace aicc::grad
