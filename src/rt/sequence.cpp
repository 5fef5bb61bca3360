#include "rt/sequence.h"

#include "rt/sequence_bodies.h"

#include "rt/error.h"
#include "rt/memory.h"

#include <cstring>

namespace aicc::rt {

namespace {

using Ptr = std::shared_ptr<void>;

int64_t elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// The dims of a tensor type's text after its element type: "[3,N]" (symbolic: -1), "[*]" none.
std::optional<std::vector<int64_t>> parseDims(std::string_view s) {
  if (s.size() < 2 || s.front() != '[' || s.back() != ']' || s == "[*]") return std::nullopt;
  std::vector<int64_t> dims;
  s = s.substr(1, s.size() - 2);
  if (s.empty()) return dims;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && (s[i] == '(' || s[i] == ')')) depth += s[i] == '(' ? 1 : -1;
    if (i < s.size() && (s[i] != ',' || depth)) continue;
    const std::string_view w = s.substr(start, i - start);
    const bool digits = !w.empty() && w.find_first_not_of("0123456789") == std::string_view::npos;
    dims.push_back(digits && w.size() < 15 ? std::stoll(std::string(w)) : -1);
    start = i + 1;
  }
  return dims;
}

} // namespace

const Sequence& seqAt(std::byte* p, const std::string& node) {
  const Ptr& v = *reinterpret_cast<const Ptr*>(p);
  AICC_RT_CHECK(v, "{}: a sequence input has no value", node);
  return *static_cast<const Sequence*>(v.get());
}
void setSeq(std::byte* p, Sequence s) {
  *reinterpret_cast<Ptr*>(p) = std::make_shared<Sequence>(std::move(s));
}

namespace {

// Element i of an index tensor (i32 or i64: seqTaskProblem checks) at p.
int64_t indexAt(const TensorDesc& d, const std::byte* p, int64_t i) {
  if (d.dtype == DType::I32) {
    int32_t x;
    std::memcpy(&x, p + 4 * i, 4);
    return x;
  }
  int64_t x;
  std::memcpy(&x, p + 8 * i, 8);
  return x;
}

// A position input (i32 or i64 scalar) in [-n, hi], made non-negative.
int64_t position(const TensorDesc& d, const std::byte* p, int64_t n, int64_t hi,
                 const std::string& node) {
  const int64_t pos = indexAt(d, p, 0);
  AICC_RT_CHECK(pos >= -n && pos <= hi,
                "{}: position {} is out of range for a sequence of {} tensors", node, pos, n);
  return pos < 0 ? pos + n : pos;
}

// Copies item into the result bound at p, whose dims (over the symbols) must be the item's: its
// data symbols not set yet in this run take the item's dims first (a growable buffer's, then
// grown to them: p is its HeapBuffer).
void copyOut(const SeqItem& item, const TensorDesc& d, std::byte* p, bool heap,
             std::vector<int64_t>& symbols, int64_t* block, const Plan& plan,
             const std::string& node) {
  for (size_t k = 0; k < d.dims.size() && k < item.dims.size(); ++k)
    if (const int32_t s = d.symbolAt(k);
        s >= 0 && symbols[size_t(s)] < 0 && plan.symbols[size_t(s)].data) {
      AICC_RT_CHECK(item.dims[k] <= plan.symbols[size_t(s)].hi,
                    "{}: the tensor's dim {} is {}, more than the {} the plan holds", node, k,
                    item.dims[k], plan.symbols[size_t(s)].hi);
      symbols[size_t(s)] = block[s] = item.dims[k];
    }
  const std::vector<int64_t> want = d.dimsFor(symbols);
  AICC_RT_CHECK(want == item.dims, "{}: the tensor has dims {}, the compiled result {}", node,
                dimsText(item.dims), dimsText(want));
  if (heap) p = reinterpret_cast<HeapBuffer*>(p)->reserve(item.bytes, node);
  if (item.bytes) std::memcpy(p, item.data.get(), size_t(item.bytes));
}

// SplitToSequence: t (dims over the symbols) along axis, in chunks of 1 (squeezed unless
// keepdims), of a scalar split's size (the last one shorter) or of a 1-D split's lengths.
void split(const SeqTask& t, const std::vector<std::byte*>& bound, const std::vector<int64_t>& syms,
           const std::string& node, Sequence& out) {
  const TensorDesc& d = t.descs[1];
  const std::vector<int64_t> dims = d.dimsFor(syms);
  const int64_t rank = int64_t(dims.size());
  int64_t axis = t.attrs.at(0);
  AICC_RT_CHECK(axis >= -rank && axis < rank, "{}: axis {} is out of range for rank {}", node, axis,
                rank);
  if (axis < 0) axis += rank;
  const int64_t len = dims[size_t(axis)];
  std::vector<int64_t> lengths;
  bool squeeze = false;
  if (bound.size() < 3) {
    lengths.assign(size_t(len), 1);
    squeeze = t.attrs.at(1) == 0;
  } else {
    const TensorDesc& sd = t.descs[2];
    const int64_t n = elements(sd.dimsFor(syms));
    auto at = [&](int64_t i) { return indexAt(sd, bound[2], i); };
    if (sd.dims.empty()) { // a scalar: chunks of that size
      const int64_t s = at(0);
      AICC_RT_CHECK(s > 0, "{}: split {} is not positive", node, s);
      for (int64_t k = 0; k < len; k += s) lengths.push_back(std::min(s, len - k));
    } else {
      int64_t sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        lengths.push_back(at(i));
        AICC_RT_CHECK(lengths.back() >= 0 && lengths.back() <= len,
                      "{}: split length {} is out of range for a dim of {}", node, lengths.back(),
                      len);
        sum += lengths.back();
      }
      AICC_RT_CHECK(sum == len, "{}: the split lengths add up to {}, not to the dim's {}", node,
                    sum, len);
    }
  }
  const int64_t esize = int64_t(dtypeSize(d.dtype));
  int64_t outer = 1, inner = esize;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= i == axis ? 1 : dims[size_t(i)];
  int64_t start = 0;
  std::vector<std::byte> chunk;
  for (int64_t l : lengths) {
    std::vector<int64_t> cd = dims;
    cd[size_t(axis)] = l;
    if (squeeze) cd.erase(cd.begin() + axis);
    chunk.resize(size_t(outer * l * inner));
    for (int64_t o = 0; o < outer && l * inner != 0; ++o)
      std::memcpy(chunk.data() + o * l * inner, bound[1] + (o * len + start) * inner,
                  size_t(l * inner));
    out.items.push_back(makeItem(d.dtype, std::move(cd), chunk.data(), node));
    start += l;
  }
}

constexpr const char* kOpNames[] = {"construct", "empty",    "insert", "erase", "at",  "length",
                                    "split",     "optional", "has",    "get",   "map", "loop"};

} // namespace

const char* seqOpName(SeqOp op) { return kOpNames[size_t(op)]; }

std::optional<SeqOp> seqOpFromName(const std::string& name) {
  for (size_t i = 0; i < std::size(kOpNames); ++i)
    if (name == kOpNames[i]) return SeqOp(i);
  return std::nullopt;
}

std::string seqTaskProblem(const SeqTask& t, const std::vector<bool>& dynamic) {
  const size_t n = dynamic.size();
  if (t.descs.size() != n) return "a type per binding";
  std::vector<std::optional<SeqType>> types;
  for (size_t i = 0; i < n; ++i) {
    types.push_back(dynamic[i] ? seqTypeOf(t.descs[i].dynamic) : std::nullopt);
    if (dynamic[i] != !t.descs[i].dynamic.empty() || (dynamic[i] && !types[i]))
      return format("binding {}: its type and its region disagree", i);
  }
  // Param i: a sequence (or optional: opt) / a tensor of element type dt (Undefined: any) whose
  // rank is at most maxRank.
  auto seq = [&](size_t i, bool opt = false) {
    return i < n && types[i] && (types[i]->kind != SeqKind::Sequence) == opt;
  };
  auto tensor = [&](size_t i, DType dt = DType::Undefined, size_t maxRank = 64) {
    return i < n && !dynamic[i] && (dt == DType::Undefined || t.descs[i].dtype == dt) &&
           t.descs[i].dims.size() <= maxRank;
  };
  auto index = [&](size_t i) { return tensor(i, DType::I64, 1) || tensor(i, DType::I32, 1); };
  auto elemOf = [&](size_t i) { return types[i]->dtype; };
  bool ok = false;
  switch (t.op) {
  case SeqOp::Construct:
  case SeqOp::Empty:
    ok = seq(0) && (t.op == SeqOp::Empty) == (n == 1);
    for (size_t i = 1; ok && i < n; ++i) ok = tensor(i, elemOf(0));
    break;
  case SeqOp::Insert:
    ok = (n == 3 || n == 4) && seq(0) && seq(1) && tensor(2, elemOf(0)) && (n == 3 || index(3));
    break;
  case SeqOp::Erase:
    ok = (n == 2 || n == 3) && seq(0) && seq(1) && (n == 2 || index(2));
    break;
  case SeqOp::At:
    ok = n == 3 && seq(1) && tensor(0, elemOf(1)) && index(2);
    break;
  case SeqOp::Length:
    ok = n == 2 && tensor(0, DType::I64, 0) && seq(1);
    break;
  case SeqOp::Split:
    ok = (n == 2 || n == 3) && seq(0) && tensor(1, elemOf(0)) && (n == 2 || index(2)) &&
         t.attrs.size() == 2;
    break;
  case SeqOp::Optional:
    ok = (n == 1 || n == 2) && seq(0, true) &&
         (n == 1 || (types[0]->kind == SeqKind::OptionalTensor ? tensor(1, elemOf(0)) : seq(1)));
    break;
  case SeqOp::Has:
    ok = (n == 1 || n == 2) && tensor(0, DType::Bool, 0) && (n == 1 || seq(1, true));
    break;
  case SeqOp::Get:
    ok = n == 2 && seq(1, true) &&
         (types[1]->kind == SeqKind::OptionalTensor ? tensor(0, elemOf(1)) : seq(0));
    break;
  case SeqOp::Map: { // (the body's inputs and results: bodyProblem, at load)
    ok = t.attrs.size() == 3 && t.attrs[0] >= 0 && t.attrs[1] >= 1 && t.attrs[2] >= 1 &&
         size_t(t.attrs[1] + t.attrs[2]) <= n;
    bool anySeq = false;
    for (size_t i = 0; ok && i < n; ++i) {
      ok = i < size_t(t.attrs[1]) ? seq(i) : (seq(i) || tensor(i));
      anySeq = anySeq || (i >= size_t(t.attrs[1]) && i < size_t(t.attrs[1] + t.attrs[2]) && seq(i));
    }
    ok = ok && anySeq;
    break;
  }
  case SeqOp::Loop: {
    ok = t.attrs.size() == 4 && t.attrs[0] >= 0 && t.attrs[1] >= 0;
    const size_t c = ok ? size_t(t.attrs[1]) : 0, m = ok && t.attrs[2] ? 1 : 0,
                 k = ok && t.attrs[3] ? 1 : 0;
    ok = ok && 2 * c + m + k <= n && (!m || tensor(c, DType::I64, 0)) &&
         (!k || tensor(c + m, DType::Bool, 0));
    for (size_t i = 0; ok && i < c; ++i) { // a carried value: its result's element type (a
      const size_t j = c + m + k + i;      // sequence may become an optional one and back)
      ok = dynamic[i] == dynamic[j] &&
           (dynamic[i] ? types[i]->dtype == types[j]->dtype
                       : tensor(i) && t.descs[i].dtype == t.descs[j].dtype);
    }
    for (size_t i = 2 * c + m + k; ok && i < n; ++i) ok = dynamic[i] ? types[i].has_value() : true;
    break;
  }
  }
  return ok ? "" : format("not a {} of its bindings' types", seqOpName(t.op));
}

std::optional<SeqType> seqTypeOf(const std::string& irType) {
  std::string_view s = irType;
  SeqType t;
  auto strip = [&](std::string_view prefix) {
    if (s.substr(0, prefix.size()) != prefix || s.back() != '>') return false;
    s = s.substr(prefix.size(), s.size() - prefix.size() - 1);
    return true;
  };
  if (strip("opt<"))
    t.kind = strip("seq<") ? SeqKind::OptionalSequence : SeqKind::OptionalTensor;
  else if (strip("seq<"))
    t.kind = SeqKind::Sequence;
  else
    return std::nullopt;
  const size_t open = s.find('[');
  if (open == std::string_view::npos) return std::nullopt;
  const auto dtype = dtypeFromName(s.substr(0, open));
  if (!dtype || dtypeSize(*dtype) == 0) return std::nullopt; // (strings, maps, unknown)
  t.dtype = *dtype;
  t.dims = parseDims(s.substr(open));
  return t;
}

void checkSequence(const Sequence& s, const SeqType& t, const std::string& what) {
  const bool optional = t.kind != SeqKind::Sequence;
  // (an optional sequence takes a sequence: present)
  AICC_RT_CHECK(s.kind == t.kind || (s.none && optional && s.kind != SeqKind::Sequence) ||
                    (t.kind == SeqKind::OptionalSequence && s.kind == SeqKind::Sequence),
                "{}: expected {}, got {}", what,
                t.kind == SeqKind::Sequence ? "a sequence" : "an optional",
                s.kind == SeqKind::Sequence ? "a sequence" : "an optional");
  AICC_RT_CHECK(!s.none || optional, "{}: a sequence cannot be none", what);
  AICC_RT_CHECK(s.kind != SeqKind::OptionalTensor || s.items.size() == (s.none ? 0u : 1u),
                "{}: an optional tensor holds {} tensors", what, s.items.size());
  AICC_RT_CHECK(s.dtype == t.dtype, "{}: expected element type {}, got {}", what,
                dtypeName(t.dtype), dtypeName(s.dtype));
  for (size_t k = 0; k < s.items.size(); ++k) {
    const SeqItem& item = s.items[k];
    AICC_RT_CHECK(item.bytes == elements(item.dims) * int64_t(dtypeSize(s.dtype)),
                  "{}: tensor {} has {} bytes for dims {}", what, k, item.bytes,
                  dimsText(item.dims));
    checkItemDims(item.dims, t, what, k);
  }
}

void checkItemDims(const std::vector<int64_t>& dims, const SeqType& t, const std::string& what,
                   size_t k) {
  if (!t.dims) return;
  bool ok = dims.size() == t.dims->size();
  for (size_t i = 0; ok && i < dims.size(); ++i) ok = (*t.dims)[i] < 0 || (*t.dims)[i] == dims[i];
  AICC_RT_CHECK(ok, "{}: tensor {} has dims {}, not those declared", what, k, dimsText(dims));
}

SeqItem makeItem(DType dtype, std::vector<int64_t> dims, const void* data,
                 const std::string& what) {
  SeqItem item;
  item.bytes = elements(dims) * int64_t(dtypeSize(dtype));
  item.dims = std::move(dims);
  if (!item.bytes) return item;
  reserveMemory(item.bytes, what);
  auto* p = new (std::nothrow) std::byte[size_t(item.bytes)];
  if (!p) {
    releaseMemory(item.bytes);
    raise(format("{}: out of memory for a tensor of {} bytes", what, item.bytes));
  }
  std::memcpy(p, data, size_t(item.bytes));
  item.data = std::shared_ptr<const std::byte>(p, [n = item.bytes](const std::byte* q) {
    delete[] q;
    releaseMemory(n);
  });
  return item;
}

void runSeqTask(const SeqTask& t, const std::string& node, const std::vector<std::byte*>& bound,
                int64_t* block, const Plan& plan, bool heap) {
  std::vector<int64_t> symbols(block, block + plan.symbols.size());
  if (t.op == SeqOp::Map) return runMap(t, node, bound, symbols, *plan.bodies[size_t(t.attrs[0])]);
  if (t.op == SeqOp::Loop)
    return runLoop(t, node, bound, symbols, *plan.bodies[size_t(t.attrs[0])]);
  auto tensor = [&](size_t i) {
    return makeItem(t.descs[i].dtype, t.descs[i].dimsFor(symbols), bound[i], node);
  };
  auto typeOf = [&](size_t i) { return *seqTypeOf(t.descs[i].dynamic); }; // (checked at load)
  Sequence out;
  switch (t.op) {
  case SeqOp::Construct:
  case SeqOp::Empty:
    out.dtype = typeOf(0).dtype;
    for (size_t i = 1; i < bound.size(); ++i) out.items.push_back(tensor(i));
    break;
  case SeqOp::Insert: {
    out = seqAt(bound[1], node);
    const int64_t n = int64_t(out.items.size());
    const int64_t pos = bound.size() > 3 ? position(t.descs[3], bound[3], n, n, node) : n;
    out.items.insert(out.items.begin() + pos, tensor(2));
    break;
  }
  case SeqOp::Erase: {
    out = seqAt(bound[1], node);
    const int64_t n = int64_t(out.items.size());
    AICC_RT_CHECK(n > 0, "{}: erasing from an empty sequence", node);
    const int64_t pos = bound.size() > 2 ? position(t.descs[2], bound[2], n, n - 1, node) : n - 1;
    out.items.erase(out.items.begin() + pos);
    break;
  }
  case SeqOp::At: {
    const Sequence& s = seqAt(bound[1], node);
    const int64_t n = int64_t(s.items.size());
    copyOut(s.items[size_t(position(t.descs[2], bound[2], n, n - 1, node))], t.descs[0], bound[0],
            heap, symbols, block, plan, node);
    return;
  }
  case SeqOp::Length: {
    const int64_t n = int64_t(seqAt(bound[1], node).items.size());
    std::memcpy(bound[0], &n, 8);
    return;
  }
  case SeqOp::Split:
    out.dtype = t.descs[1].dtype;
    split(t, bound, symbols, node, out);
    break;
  case SeqOp::Optional: {
    const SeqType type = typeOf(0);
    out.kind = type.kind;
    out.dtype = type.dtype;
    out.none = bound.size() < 2;
    if (out.none) break;
    if (type.kind == SeqKind::OptionalTensor)
      out.items.push_back(tensor(1));
    else
      out.items = seqAt(bound[1], node).items;
    break;
  }
  case SeqOp::Has: {
    const bool has = bound.size() > 1 && !seqAt(bound[1], node).none;
    std::memcpy(bound[0], &has, 1);
    return;
  }
  case SeqOp::Map: // (above)
  case SeqOp::Loop:
    return;
  case SeqOp::Get: {
    const Sequence& s = seqAt(bound[1], node);
    AICC_RT_CHECK(!s.none, "{}: the optional is empty", node);
    if (t.descs[0].dynamic.empty()) { // the optional's tensor
      AICC_RT_CHECK(s.kind == SeqKind::OptionalTensor && s.items.size() == 1,
                    "{}: the optional holds no tensor", node);
      copyOut(s.items[0], t.descs[0], bound[0], heap, symbols, block, plan, node);
      return;
    }
    out.dtype = s.dtype;
    out.items = s.items; // (the sequence's tensors, shared)
    break;
  }
  }
  setSeq(bound[0], std::move(out));
}

} // namespace aicc::rt
