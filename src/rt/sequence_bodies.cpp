// The seq tasks that run a body (rt/sequence_bodies.h): SequenceMap per item, Loop per
// iteration, and the check of a body against the task that runs it.
#include "rt/sequence_bodies.h"

#include "rt/error.h"

#include <cstring>
#include <limits>

namespace aicc::rt {

std::string bodyProblem(const SeqTask& t, const Artifact& body) {
  // What the body takes and gives, per param: a tensor of a dtype (dynamic "") or a dynamic value
  // of an IR type's kind and element type.
  struct Want {
    std::string dynamic;
    DType dtype;
  };
  std::vector<Want> ins, outs;
  auto asIs = [&](size_t i) { return Want{t.descs[i].dynamic, t.descs[i].dtype}; };
  const size_t n = t.descs.size(), r = size_t(t.attrs[1]);
  if (t.op == SeqOp::Map) { // items (as tensors) and shared tensors, then outer values
    for (size_t i = r; i < n; ++i) {
      const TensorDesc& d = t.descs[i];
      const bool item = i < r + size_t(t.attrs[2]) && !d.dynamic.empty();
      ins.push_back(item ? Want{"", seqTypeOf(d.dynamic)->dtype} : asIs(i));
    }
    for (size_t k = 0; k < r; ++k) outs.push_back({"", seqTypeOf(t.descs[k].dynamic)->dtype});
  } else { // iteration, condition, carried values, outer values; condition, carried values
    const size_t first = r + size_t(t.attrs[2] ? 1 : 0) + size_t(t.attrs[3] ? 1 : 0);
    ins = {{"", DType::I64}, {"", DType::Bool}};
    outs = {{"", DType::Bool}};
    for (size_t i = first; i < n; ++i) ins.push_back(asIs(i));
    for (size_t k = 0; k < r; ++k) outs.push_back(asIs(k));
  }
  if (body.inputs().size() != ins.size() || body.outputs().size() != outs.size())
    return format("its body takes {} inputs and gives {} results, the task binds {} and {}",
                  body.inputs().size(), body.outputs().size(), ins.size(), outs.size());
  auto same = [](const TensorDesc& d, const Want& w) {
    const auto a = seqTypeOf(d.dynamic), b = seqTypeOf(w.dynamic);
    return w.dynamic.empty()
               ? d.dynamic.empty() && d.dtype == w.dtype
               : a && b && a->dtype == b->dtype &&
                     (a->kind == SeqKind::OptionalTensor) == (b->kind == SeqKind::OptionalTensor);
  };
  for (size_t i = 0; i < ins.size(); ++i)
    if (!same(body.inputs()[i], ins[i])) return format("its body's input {} is of another type", i);
  for (size_t k = 0; k < outs.size(); ++k)
    if (!same(body.outputs()[k], outs[k]))
      return format("its body's result {} is of another type", k);
  return "";
}

namespace {

// Param i (a tensor at its dims over the symbols, or a dynamic value) as the body's input k.
void setBodyInput(Artifact& body, size_t k, const TensorDesc& d, std::byte* p,
                  const std::vector<int64_t>& symbols, std::vector<int64_t>& dims) {
  if (!d.dynamic.empty()) {
    body.setSequenceInput(k, std::static_pointer_cast<const Sequence>(
                                 *reinterpret_cast<const std::shared_ptr<void>*>(p)));
    return;
  }
  dims = d.dimsFor(symbols);
  body.setInput(k, p, d.bytes(symbols), &dims);
}

} // namespace

void runMap(const SeqTask& t, const std::string& node, const std::vector<std::byte*>& bound,
            const std::vector<int64_t>& symbols, Artifact& body) {
  const size_t outs = size_t(t.attrs[1]), ins = size_t(t.attrs[2]);
  int64_t n = -1;
  for (size_t i = 0; i < ins; ++i)
    if (!t.descs[outs + i].dynamic.empty()) {
      const int64_t len = int64_t(seqAt(bound[outs + i], node).items.size());
      AICC_RT_CHECK(n < 0 || len == n, "{}: its sequences have {} and {} tensors", node, n, len);
      n = len;
    }
  std::vector<Sequence> out(outs);
  for (size_t k = 0; k < outs; ++k) out[k].dtype = body.outputs()[k].dtype;
  std::vector<std::vector<int64_t>> dims(bound.size());
  for (int64_t j = 0; j < n; ++j) {
    try {
      for (size_t i = outs; i < bound.size(); ++i) {
        const TensorDesc& d = t.descs[i];
        if (d.dynamic.empty() || i >= outs + ins) {
          setBodyInput(body, i - outs, d, bound[i], symbols, dims[i]);
          continue;
        }
        const SeqItem& item = seqAt(bound[i], node).items[size_t(j)];
        body.setInput(i - outs, item.data.get(), item.bytes, &item.dims);
      }
      body.run();
    } catch (const Error& e) {
      raise(format("{}: item {}: {}", node, j, e.what()));
    }
    for (size_t k = 0; k < outs; ++k)
      out[k].items.push_back(makeItem(out[k].dtype, body.outputDims(k), body.output(k), node));
  }
  for (size_t k = 0; k < outs; ++k) setSeq(bound[k], std::move(out[k]));
}

void runLoop(const SeqTask& t, const std::string& node, const std::vector<std::byte*>& bound,
             const std::vector<int64_t>& symbols, Artifact& body) {
  const size_t c = size_t(t.attrs[1]), m = t.attrs[2] ? 1 : 0, k = t.attrs[3] ? 1 : 0;
  const size_t first = c + m + k; // the initial values
  int64_t trip = std::numeric_limits<int64_t>::max();
  if (m) std::memcpy(&trip, bound[c], 8);
  bool cond = true;
  if (k) std::memcpy(&cond, bound[c + m], 1);
  // The carried values: dynamic ones as their std::shared_ptr<void>, tensors as bytes and dims.
  std::vector<std::shared_ptr<void>> seqs(c);
  std::vector<std::vector<std::byte>> bytes(c);
  std::vector<std::vector<int64_t>> dims(bound.size());
  for (size_t i = 0; i < c; ++i) {
    const TensorDesc& d = t.descs[first + i];
    if (!d.dynamic.empty()) {
      seqs[i] = *reinterpret_cast<const std::shared_ptr<void>*>(bound[first + i]);
      continue;
    }
    dims[i] = d.dimsFor(symbols);
    bytes[i].assign(bound[first + i], bound[first + i] + d.bytes(symbols));
  }
  std::vector<int64_t> none;
  for (int64_t i = 0; i < trip && cond; ++i) {
    try {
      body.setInput(0, &i, 8, &none);
      body.setInput(1, &cond, 1, &none);
      for (size_t j = 0; j < c; ++j)
        if (seqs[j])
          body.setSequenceInput(2 + j, std::static_pointer_cast<const Sequence>(seqs[j]));
        else
          body.setInput(2 + j, bytes[j].data(), int64_t(bytes[j].size()), &dims[j]);
      for (size_t j = first + c; j < bound.size(); ++j)
        setBodyInput(body, 2 + c + (j - first - c), t.descs[j], bound[j], symbols, dims[j]);
      body.run();
    } catch (const Error& e) {
      raise(format("{}: iteration {}: {}", node, i, e.what()));
    }
    std::memcpy(&cond, body.output(0), 1);
    for (size_t j = 0; j < c; ++j) {
      if (seqs[j]) {
        seqs[j] = std::const_pointer_cast<Sequence>(body.sequenceOutput(1 + j));
        continue;
      }
      dims[j] = body.outputDims(1 + j);
      const auto* p = static_cast<const std::byte*>(body.output(1 + j));
      bytes[j].assign(p, p + body.outputBytes(1 + j));
    }
  }
  for (size_t j = 0; j < c; ++j) { // the finals: of the compiled results' dims
    if (seqs[j]) {
      *reinterpret_cast<std::shared_ptr<void>*>(bound[j]) = seqs[j];
      continue;
    }
    const std::vector<int64_t> want = t.descs[j].dimsFor(symbols);
    AICC_RT_CHECK(want == dims[j], "{}: carried value {} has dims {}, the compiled result {}", node,
                  j, dimsText(dims[j]), dimsText(want));
    if (!bytes[j].empty()) std::memcpy(bound[j], bytes[j].data(), bytes[j].size());
  }
}

} // namespace aicc::rt
