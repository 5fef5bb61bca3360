// Shared helpers of the non-elementwise lowerings (see loop/lower_ops.h).
#include "loop/lower_ops.h"

#include "kernels/registry.h"
#include "loop/simplify.h"
#include "support/error.h"

#include <algorithm>
#include <functional>

namespace aicc::loop::detail {

void no(std::string reason) { throw NotLowerable{std::move(reason)}; }

std::string sanitizeName(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v" + out;
  return out;
}

int64_t numel(const Dims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

bool isComputeFloat(DType t) { return t == DType::F32 || t == DType::F64; }

static bool movableDType(DType t) {
  return isComputeFloat(t) || t == DType::F16 || t == DType::BF16 || isByteFloat(t) ||
         t == DType::F8E8M0 || t == DType::Bool || isInteger(t);
}

Dims staticDims(const Value* v, const char* what) {
  if (!v) no(fmt::format("{} is omitted", what));
  if (!v->type.isTensor() || !v->type.shape)
    no(fmt::format("{} '{}' has no known shape", what, v->name));
  auto d = toDims(*v->type.shape);
  if (!d)
    no(fmt::format("{} '{}' has a dynamic shape {}", what, v->name, formatShape(*v->type.shape)));
  if (!movableDType(v->type.dtype))
    no(fmt::format("{} '{}' has element type {}, not lowered yet", what, v->name,
                   dtypeName(v->type.dtype)));
  return *d;
}

FuncBuilder::FuncBuilder(const Node& n, const std::string& funcName, const std::string& kind)
    : node(n), kind_(kind) {
  ln.func.name = funcName;
}

std::string FuncBuilder::fresh(const std::string& base) {
  std::string b = sanitizeName(base), n = b;
  for (int k = 0; used_.count(n); ++k) n = b + "_" + std::to_string(k);
  used_.insert(n);
  return n;
}

std::string FuncBuilder::input(const Value* v) {
  if (auto it = inParams_.find(v); it != inParams_.end()) return it->second;
  if (auto it = bind_.find(v); it != bind_.end()) v = it->second;
  if (auto it = inParams_.find(v); it != inParams_.end()) return it->second;
  Dims d = staticDims(v, "input");
  std::string p = fresh(v->name);
  ln.func.params.push_back({p, v->type.dtype, d, "", Role::In});
  ln.inputs.push_back({p, v});
  inParams_[v] = p;
  return p;
}

std::string FuncBuilder::constant(const std::string& base, Tensor data, std::string layout) {
  std::string p = fresh(base);
  ln.func.params.push_back({p, data.dtype(), data.shape(), std::move(layout), Role::In});
  ln.constants.push_back({p, std::move(data)});
  return p;
}

std::string FuncBuilder::output(size_t k) {
  AICC_CHECK(k < node.outputs.size(), "{}: no output {}", node.describe(), k);
  const Value* v = node.outputs[k];
  if (!v) no("an omitted output");
  for (const auto& [p, o] : ln.outputs)
    if (o == v) return p;
  Dims d = staticDims(v, "output");
  std::string p = fresh(v->name);
  ln.func.params.push_back({p, v->type.dtype, d, "", Role::Out});
  ln.outputs.push_back({p, v});
  return p;
}

std::string FuncBuilder::temp(const std::string& base, DType t, const Dims& shape) {
  std::string p = fresh(base);
  ln.func.params.push_back({p, t, shape, "", Role::Temp});
  return p;
}

namespace {

// Buffers a block reads or writes (loads, stores, call arguments).
void usedBuffers(const Block& b, std::set<std::string>& out) {
  std::function<void(const ExprPtr&)> expr = [&](const ExprPtr& e) {
    if (!e) return;
    if (e->op == Op::Load) out.insert(e->name);
    for (const auto& a : e->args) expr(a);
  };
  for (const Stmt& s : b) {
    if (s.kind == StmtKind::Store) out.insert(s.name);
    for (const CallArg& a : s.args) {
      if (!a.buffer.empty()) out.insert(a.buffer);
      expr(a.offset), expr(a.value);
    }
    expr(s.lo), expr(s.hi), expr(s.index), expr(s.value);
    usedBuffers(s.body, out), usedBuffers(s.orelse, out);
  }
}

} // namespace

LoweredNode FuncBuilder::finish(Block body, Schedule sched, const LowerOptions& opts) {
  for (auto& s : body) prologue.push_back(std::move(s));
  ln.func.body = std::move(prologue);
  // Inputs the code never reads (e.g. a weight used only through its packed form) are dropped,
  // so nothing binds or stores them; the sizes alone (LowerOptions::sizesOnly) drop every
  // parameter they do not use, results and temps too (a result's buffer is sized by them).
  std::set<std::string> used;
  usedBuffers(ln.func.body, used);
  auto unused = [&](const auto& x) { return !used.count(x.first); };
  std::erase_if(ln.func.params, [&](const Buffer& p) {
    return (p.role == Role::In || opts.sizesOnly) && !used.count(p.name);
  });
  std::erase_if(ln.inputs, unused);
  std::erase_if(ln.constants, unused);
  if (opts.sizesOnly) std::erase_if(ln.outputs, unused);
  sched["kind"] = kind_;
  sched["op"] = node.domain.empty() ? node.op : node.domain + "." + node.op;
  ln.func.schedule = std::move(sched);
  if (opts.simplify) simplifyFunc(ln.func);
  return std::move(ln);
}

std::vector<int64_t> strides(const Dims& d) {
  std::vector<int64_t> s(d.size());
  int64_t x = 1;
  for (size_t k = d.size(); k-- > 0;) {
    s[k] = x;
    x *= d[k];
  }
  return s;
}

ExprPtr linearIndex(const std::vector<ExprPtr>& idx, const std::vector<int64_t>& stride) {
  ExprPtr e = intImm(0);
  for (size_t k = 0; k < idx.size() && k < stride.size(); ++k)
    if (idx[k] && stride[k] != 0) e = add(e, mul(idx[k], intImm(stride[k])));
  return e;
}

Block nest(const std::vector<std::string>& vs, const Dims& ext, Block body, bool parallelOuter,
           int64_t vectorWidth) {
  std::vector<ExprPtr> e;
  for (int64_t x : ext) {
    if (x == 0) return {};
    e.push_back(intImm(x));
  }
  return runNest(vs, e, std::move(body), parallelOuter, vectorWidth);
}

std::vector<ExprPtr> runDims(const LowerOptions& o, const Value* v, const Dims& d) {
  std::vector<ExprPtr> out;
  for (size_t k = 0; k < d.size(); ++k) {
    ExprPtr e = o.runDim ? o.runDim(v, k) : nullptr;
    out.push_back(e ? e : intImm(d[k]));
  }
  return out;
}

namespace {
// a * b, folded when both are immediates or one is 1.
ExprPtr mulFolded(const ExprPtr& a, const ExprPtr& b) {
  const auto x = asInt(a), y = asInt(b);
  if (x && y) return intImm(*x * *y);
  if (x == 1) return b;
  if (y == 1) return a;
  return mul(a, b);
}
} // namespace

std::vector<ExprPtr> stridesOf(const std::vector<ExprPtr>& dims) {
  std::vector<ExprPtr> s(dims.size());
  ExprPtr acc = intImm(1);
  for (size_t k = dims.size(); k-- > 0;) {
    s[k] = acc;
    acc = mulFolded(acc, dims[k]);
  }
  return s;
}

ExprPtr product(const std::vector<ExprPtr>& dims, size_t from, size_t to) {
  ExprPtr p = intImm(1);
  for (size_t k = from; k < std::min(to, dims.size()); ++k) p = mulFolded(p, dims[k]);
  return p;
}

ExprPtr runIndex(const std::vector<ExprPtr>& idx, const std::vector<ExprPtr>& stride) {
  ExprPtr e = intImm(0);
  for (size_t k = 0; k < idx.size() && k < stride.size(); ++k)
    if (idx[k] && asInt(stride[k]) != 0) e = add(e, mul(idx[k], stride[k]));
  return e;
}

Block runNest(const std::vector<std::string>& vs, const std::vector<ExprPtr>& ext, Block body,
              bool parallelOuter, int64_t vectorWidth) {
  for (size_t k = vs.size(); k-- > 0;) {
    const bool vec = k + 1 == vs.size() && vectorWidth > 1;
    const LoopKind kind = vec                       ? LoopKind::Vectorize
                          : k == 0 && parallelOuter ? LoopKind::Parallel
                                                    : LoopKind::Serial;
    Block b;
    b.push_back(
        Stmt::forLoop(vs[k], intImm(0), ext[k], std::move(body), kind, vec ? vectorWidth : 1));
    body = std::move(b);
  }
  return body;
}

Block inLanes(FuncBuilder& b, int64_t len, int64_t L,
              const std::function<Block(const ExprPtr& lane, const ExprPtr& k)>& step) {
  const int64_t full = len / L;
  const std::string lv = b.fresh("l"), cv = b.fresh("c"), tv = b.fresh("t");
  Block out =
      nest({cv, lv}, {full, L}, step(var(lv), add(mul(var(cv), intImm(L)), var(lv))), false, L);
  for (auto& st :
       nest({tv}, {len - full * L}, step(intImm(0), add(intImm(full * L), var(tv))), false))
    out.push_back(std::move(st));
  return out;
}

std::vector<ExprPtr> vars(const std::vector<std::string>& names) {
  std::vector<ExprPtr> v;
  for (const auto& n : names) v.push_back(var(n));
  return v;
}

int64_t vectorWidthFor(const LowerOptions& o, DType t, int64_t extent) {
  int64_t lanes = std::max<int64_t>(1, o.vectorBytes / std::max<int64_t>(1, dtypeSize(t)));
  int64_t w = 1;
  while (w * 2 <= lanes && w * 2 <= extent) w *= 2;
  return w;
}

int64_t normAxis(int64_t a, size_t rank, const Node& n) {
  int64_t r = static_cast<int64_t>(rank);
  if (a < -r || a >= std::max<int64_t>(r, 1))
    no(fmt::format("{}: axis {} is out of range for rank {}", n.describe(), a, r));
  return a < 0 ? a + r : a;
}

ExprPtr clampIndex(ExprPtr i, int64_t dim) { return max(intImm(0), min(i, intImm(dim - 1))); }

ExprPtr greaterNanFirst(DType t, ExprPtr a, ExprPtr c) {
  if (!isFloat(t)) return cmp(Op::Gt, a, c);
  ExprPtr aNan = cmp(Op::Ne, a, a), cNan = cmp(Op::Ne, c, c);
  return select(aNan, logicalNot(cNan), binary(Op::And, logicalNot(cNan), cmp(Op::Gt, a, c)));
}

std::optional<std::vector<int64_t>> constInts(const Node& n, size_t input) {
  if (!n.hasInput(input) || !n.inputs[input]->constant) return std::nullopt;
  const Tensor& t = *n.inputs[input]->constant;
  if (!isInteger(t.dtype())) return std::nullopt;
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.getI64(i));
  return v;
}

std::string ukernelCandidate(const std::string& desc) { return "ukernel:" + desc; }

} // namespace aicc::loop::detail

namespace aicc::loop::detail {

ExprPtr zeroPointAt(FuncBuilder& b, const Value* v, const ExprPtr& at, DType t) {
  if (!v) return constant(t, 0);
  const bool one = numel(staticDims(v, "zero point")) == 1;
  return cast(t, load(b.input(v), one ? intImm(0) : at, v->type.dtype));
}

void markKernel(Schedule& sched, const char* kernel, const FusedClamp* clamp) {
  sched["candidate"] = ukernelCandidate(kernel);
  sched["micro_kernel"] = std::string(kernel);
  if (const auto* d = kernels::findKernel(kernel); d && d->op == kernels::KernelOp::GemmBf16)
    sched["precision"] = std::string("bf16 operands, f32 accumulation");
  if (clamp && clamp->consumed && (clamp->hasLo || clamp->hasHi)) sched["fused_clamp"] = int64_t(1);
  static const char* acts[] = {"none", "HardSwish", "Swish", "Sigmoid", "Gelu"};
  if (clamp && clamp->consumed && clamp->act > 0 && clamp->act < 5)
    sched["fused_activation"] = std::string(acts[clamp->act]);
  if (clamp && clamp->consumed && !clamp->residual.empty())
    sched["fused_residual"] = clamp->residual;
  if (clamp && clamp->consumed && clamp->bias) sched["fused_bias"] = clamp->bias->name;
}

CallArg residualArg(const FusedClamp* clamp, ExprPtr offset) {
  if (clamp && clamp->consumed && !clamp->residual.empty())
    return CallArg{clamp->residual, std::move(offset), nullptr};
  return CallArg{"", nullptr, intImm(0)};
}

namespace {

// Batch strides of an operand [..batch.., r, c] broadcast to `batch`.
std::vector<int64_t> batchStrides(const Dims& d, size_t inner, const Dims& batch) {
  std::vector<int64_t> s(batch.size(), 0);
  int64_t st = 1;
  for (size_t k = d.size(); k-- > 0;) {
    if (k + inner >= d.size()) {
      st *= d[k];
      continue;
    }
    size_t ob = batch.size() - (d.size() - inner - k);
    if (d[k] != 1) s[ob] = st;
    st *= d[k];
  }
  return s;
}

} // namespace

MatMulShape matmulShape(const Dims& ad, const Dims& bd) {
  if (ad.empty() || bd.empty()) no("MatMul of a scalar");
  MatMulShape m;
  m.M = ad.size() == 1 ? 1 : ad[ad.size() - 2], m.K = ad.back();
  m.N = bd.size() == 1 ? 1 : bd.back();
  const int64_t kb = bd.size() == 1 ? bd[0] : bd[bd.size() - 2];
  if (kb != m.K) no("MatMul inner dimensions differ");
  const size_t ar = ad.size() >= 2 ? ad.size() - 2 : 0, br = bd.size() >= 2 ? bd.size() - 2 : 0;
  const size_t rank = std::max(ar, br);
  m.batch.assign(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t x = k + ar >= rank ? ad[k + ar - rank] : 1;
    const int64_t y = k + br >= rank ? bd[k + br - rank] : 1;
    if (x != y && x != 1 && y != 1) no("MatMul batch dimensions do not broadcast");
    m.batch[k] = std::max(x, y);
  }
  m.aBatch = batchStrides(ad, ad.size() >= 2 ? 2 : 1, m.batch);
  m.bBatch = batchStrides(bd, bd.size() >= 2 ? 2 : 1, m.batch);
  return m;
}

std::vector<CallArg> clampArgs(FusedClamp* clamp, bool takesResidual) {
  int64_t flags = 0;
  double lo = 0, hi = 0;
  if (clamp && !clamp->residual.empty() && !takesResidual) clamp = nullptr;
  if (clamp && (clamp->hasLo || clamp->hasHi || clamp->act || !clamp->residual.empty())) {
    flags = (clamp->hasLo ? 1 : 0) | (clamp->hasHi ? 2 : 0) | int64_t(clamp->act) << 2;
    lo = clamp->lo, hi = clamp->hi;
    clamp->consumed = true;
  }
  return {CallArg{"", nullptr, intImm(flags)}, CallArg{"", nullptr, floatImm(lo, DType::F32)},
          CallArg{"", nullptr, floatImm(hi, DType::F32)}};
}

} // namespace aicc::loop::detail

namespace aicc::loop::detail {

namespace {
constexpr int64_t kParallelElements = 1 << 14; // fewer elements: one thread beats the dispatch
constexpr int64_t kMaxBlock = 8192, kMinBlock = 512;

// Whether an operand of shape `shape` (right-aligned to `out`) varies along out's dim d.
bool fullAt(const Dims& out, const Dims& shape, size_t d) {
  size_t off = out.size() - shape.size();
  return d >= off && shape[d - off] != 1;
}
} // namespace

Dims FlatSpace::extents() const {
  Dims e;
  for (const Loop& l : loops) e.push_back(l.extent);
  return e;
}

std::vector<int64_t> FlatSpace::strideOf(const Dims& shape) const {
  // The operand's own row-major strides, placed on out's dims.
  std::vector<int64_t> st(out.size(), 0);
  int64_t s = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    size_t d = out.size() - shape.size() + k;
    if (shape[k] != 1) st[d] = s;
    s *= shape[k];
  }
  std::vector<int64_t> r;
  for (const Loop& l : loops) {
    auto [d0, d1] = groups[l.group];
    int64_t g = 0; // the stride of the group's innermost non-unit dim
    for (size_t d = d1; d-- > d0;)
      if (out[d] != 1) {
        g = fullAt(out, shape, d) ? st[d] : 0;
        break;
      }
    r.push_back(g * l.mult);
  }
  return r;
}

std::vector<ExprPtr> FlatSpace::runExtents() const {
  std::vector<ExprPtr> e;
  for (const Loop& l : loops) {
    if (runOut.empty() || l.mult != 1 || loops.size() != groups.size()) {
      e.push_back(intImm(l.extent));
      continue;
    }
    e.push_back(product(runOut, groups[l.group].first, groups[l.group].second));
  }
  return e;
}

std::vector<ExprPtr> FlatSpace::runStrideOf(const Dims& shape,
                                            const std::vector<ExprPtr>& run) const {
  if (runOut.empty()) {
    std::vector<ExprPtr> r;
    for (int64_t st : strideOf(shape)) r.push_back(intImm(st));
    return r;
  }
  std::vector<ExprPtr> st(out.size(), intImm(0));
  const std::vector<ExprPtr> own = stridesOf(run); // the operand's, placed on out's dims
  for (size_t k = 0; k < shape.size(); ++k)
    if (shape[k] != 1) st[out.size() - shape.size() + k] = own[k];
  std::vector<ExprPtr> r;
  for (const Loop& l : loops) {
    auto [d0, d1] = groups[l.group];
    ExprPtr g = intImm(0); // the stride of the group's innermost non-unit dim
    for (size_t d = d1; d-- > d0;)
      if (out[d] != 1) {
        if (fullAt(out, shape, d)) g = st[d];
        break;
      }
    r.push_back(g);
  }
  return r;
}

bool sameRunDims(const Dims& shape, const std::vector<ExprPtr>& run,
                 const std::vector<ExprPtr>& out) {
  for (size_t k = 0; k < shape.size(); ++k)
    if (shape[k] != 1 && !equal(run[k], out[out.size() - shape.size() + k])) return false;
  return true;
}

ExprPtr floatOf(DType t, const ExprPtr& size) {
  const auto v = asInt(size);
  return v ? constant(t, double(*v)) : cast(t, size);
}

bool equalDims(const std::vector<ExprPtr>& a, const std::vector<ExprPtr>& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(),
                    [](const ExprPtr& x, const ExprPtr& y) { return equal(x, y); });
}

std::pair<ExprPtr, ExprPtr> samePads(const std::string& autoPad, const ExprPtr& in,
                                     const ExprPtr& out, int64_t k, int64_t stride,
                                     int64_t dilation) {
  const ExprPtr total =
      max(intImm(0),
          sub(add(mul(sub(out, intImm(1)), intImm(stride)), intImm((k - 1) * dilation + 1)), in));
  const ExprPtr half = div(total, intImm(2));
  const ExprPtr begin = autoPad == "SAME_UPPER" ? half : sub(total, half);
  return {begin, sub(total, begin)};
}

FlatSpace flatSpace(const Dims& out, const std::vector<Dims>& operands, int64_t lanes,
                    const std::vector<ExprPtr>& runOut) {
  FlatSpace fs;
  fs.out = out;
  for (const ExprPtr& e : runOut)
    if (!isImm(e)) fs.runOut = runOut;
  std::vector<std::vector<bool>> patterns;
  std::vector<int64_t> ext;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    std::vector<bool> p;
    for (const Dims& o : operands) p.push_back(fullAt(out, o, d));
    if (!patterns.empty() && patterns.back() == p) {
      fs.groups.back().second = d + 1;
      ext.back() *= out[d];
    } else {
      fs.groups.push_back({d, d + 1});
      ext.push_back(out[d]);
      patterns.push_back(p);
    }
  }
  for (size_t g = 0; g < ext.size(); ++g) fs.loops.push_back({g, ext[g], 1});
  const int64_t total = numel(out);
  fs.parallel = total >= kParallelElements;
  // One loop: split off a block (a divisor, a multiple of the vector width) for the threads.
  if (fs.parallel && fs.loops.size() == 1 && fs.runOut.empty()) {
    const int64_t e = fs.loops[0].extent, step = std::max<int64_t>(lanes, 1);
    for (int64_t b = std::min(kMaxBlock, e / 4) / step * step; b >= kMinBlock; b -= step)
      if (e % b == 0) {
        fs.loops = {{0, e / b, b}, {0, b, 1}};
        break;
      }
  }
  // Symbolic sizes give no divisor: the one group splits at a dim instead, after its first
  // static dim but the last (the blocked layout's channel blocks, NCHW's channels), else before
  // its last (a transformer's tokens over its features), so the outer loop runs over the threads
  // (one loop over everything ran on one: ppocrv4-rec's blocked epilogues at 2 threads).
  if (fs.parallel && fs.loops.size() == 1 && !fs.runOut.empty()) {
    const auto [g0, g1] = fs.groups[0];
    size_t at = g1 - 1;
    for (size_t k = g0; k + 1 < g1; ++k)
      if (isImm(fs.runOut[k]) && out[k] > 1) {
        at = k + 1;
        break;
      }
    const int64_t outer = numel(Dims(out.begin() + g0, out.begin() + at)),
                  inner = numel(Dims(out.begin() + at, out.begin() + g1));
    if (outer > 1 && inner > 1) {
      fs.groups = {{g0, at}, {at, g1}};
      fs.loops = {{0, outer, 1}, {1, inner, 1}};
    }
  }
  return fs;
}

// A copy of every element of the output from an input index expression (after `prefix`).
Block copyLoops(FuncBuilder& b, const std::string& out, const std::vector<ExprPtr>& oe, int64_t w,
                const std::function<ExprPtr(const std::vector<ExprPtr>&)>& value) {
  std::vector<std::string> vs;
  for (size_t d = 0; d < oe.size(); ++d) vs.push_back(b.fresh("i" + std::to_string(d)));
  auto vv = vars(vs);
  Block store = {Stmt::store(out, runIndex(vv, stridesOf(oe)), value(vv))};
  if (oe.size() < 3) return runNest(vs, oe, std::move(store), true, w);
  // The first two dims as one parallel loop (an image's batch of 1 left one thread working),
  // their indices recovered once per row of the rest.
  const std::string f = b.fresh("i01");
  Block inner = {Stmt::let(vs[0], div(var(f), oe[1])), Stmt::let(vs[1], mod(var(f), oe[1]))};
  for (auto& s :
       runNest({vs.begin() + 2, vs.end()}, {oe.begin() + 2, oe.end()}, std::move(store), false, w))
    inner.push_back(std::move(s));
  return runNest({f}, {mul(oe[0], oe[1])}, std::move(inner), true);
}

LoweredNode gatherNest(FuncBuilder& b, const std::string& out, const Dims& od,
                       const std::function<ExprPtr(const std::vector<ExprPtr>&)>& value,
                       const LowerOptions& o, Schedule sched, Block prefix) {
  DType t = b.node.outputs[0]->type.dtype;
  int64_t w = od.empty() ? 1 : vectorWidthFor(o, t, od.back());
  Block body = std::move(prefix);
  // Symbolic sizes: the output's run extents (value() reads the inputs at the run's strides).
  if (!o.sizesOnly) // (the prefix computes the sizes)
    for (auto& s : copyLoops(b, out, runDims(o, b.node.outputs[0], od), w, value))
      body.push_back(std::move(s));
  sched["vector_width"] = w;
  return b.finish(std::move(body), std::move(sched), o);
}

Split3 split3(const Dims& d, size_t a0, size_t a1) {
  Split3 s;
  for (size_t k = 0; k < d.size(); ++k) (k < a0 ? s.outer : k < a1 ? s.len : s.inner) *= d[k];
  return s;
}

Block checkIndices(const std::string& ind, DType it, int64_t count, int64_t dim,
                   const LowerOptions& o) {
  return checkIndices(ind, it, intImm(count), intImm(dim), o);
}

Block checkIndices(const std::string& ind, DType it, ExprPtr count, ExprPtr dim,
                   const LowerOptions& o) {
  if (asInt(dim) == 0 && asInt(count).value_or(1) > 0) no("indices into an empty dimension");
  if (!o.runtimeKernels) return {};
  return {Stmt::callKernel(it == DType::I64 ? "check_indices_i64" : "check_indices_i32",
                           {CallArg{ind, nullptr, nullptr}, CallArg{"", nullptr, std::move(count)},
                            CallArg{"", nullptr, std::move(dim)}})};
}

Block checkValuesBelow(const std::string& buf, DType t, int64_t count, int64_t hi,
                       const LowerOptions& o, std::optional<int64_t> ignore) {
  return checkValuesBelow(buf, t, intImm(count), intImm(hi), o, ignore);
}

Block checkValuesBelow(const std::string& buf, DType t, ExprPtr count, ExprPtr hi,
                       const LowerOptions& o, std::optional<int64_t> ignore) {
  if (!o.runtimeKernels || asInt(count) == 0) return {};
  if (t != DType::I64 && t != DType::I32) no("integer values of a type other than int32/int64");
  return {Stmt::callKernel(t == DType::I64 ? "check_targets_i64" : "check_targets_i32",
                           {CallArg{buf, nullptr, nullptr}, CallArg{"", nullptr, std::move(count)},
                            CallArg{"", nullptr, std::move(hi)},
                            CallArg{"", nullptr, intImm(ignore.has_value())},
                            CallArg{"", nullptr, intImm(ignore.value_or(0))}})};
}

Block checkIndexTuples(FuncBuilder& b, const std::string& ind, DType it, int64_t tuples,
                       const Dims& dims, const LowerOptions& o) {
  const int64_t K = int64_t(dims.size());
  Block check;
  if (!o.runtimeKernels || tuples == 0 || K == 0) return check;
  if (K == 1) return checkIndices(ind, it, tuples, dims[0], o);
  const std::string comp = b.temp("component", it, {tuples}), i = b.fresh("i");
  for (int64_t k = 0; k < K; ++k) {
    for (auto& st :
         nest({i}, {tuples},
              {Stmt::store(comp, var(i), load(ind, add(mul(var(i), intImm(K)), intImm(k)), it))},
              false))
      check.push_back(std::move(st));
    for (auto& st : checkIndices(comp, it, tuples, dims[size_t(k)], o))
      check.push_back(std::move(st));
  }
  return check;
}

ExprPtr clampIndex(ExprPtr i, ExprPtr dim) {
  if (auto d = asInt(dim)) return clampIndex(std::move(i), *d);
  // (a run's dim may be 0, which the runtime's index checks report: still in bounds here)
  return max(min(std::move(i), sub(std::move(dim), intImm(1))), intImm(0));
}

ExprPtr clampedIndex(ExprPtr k, DType it, int64_t dim) {
  return clampedIndex(std::move(k), it, intImm(dim));
}

ExprPtr clampedIndex(ExprPtr k, DType it, ExprPtr dim) {
  if (it != DType::I64) k = cast(DType::I64, k);
  return clampIndex(select(cmp(Op::Lt, k, intImm(0)), add(k, dim), k), dim);
}

Block setOrCheckDims(const LowerOptions& o, const Value* v, const std::string& dims,
                     const Dims& planned) {
  Block out;
  for (size_t d = 0; d < planned.size() && o.setDataDim; ++d)
    if (auto set = o.setDataDim(v, d, max(load(dims, intImm(int64_t(d)), DType::I64), intImm(0))))
      out.push_back(std::move(*set));
  if (!planned.empty()) out.push_back(checkValuesI64(dims, runDims(o, v, planned)));
  return out;
}

Block checkFixedValues(FuncBuilder& b, const Value* v, const std::vector<int64_t>& at,
                       const std::vector<int64_t>& want, const LowerOptions& o) {
  if (!isInteger(v->type.dtype)) no(fmt::format("'{}' is not an integer input", v->name));
  if (v->constant) {
    for (size_t k = 0; k < at.size(); ++k)
      if (v->constant->getI64(at[k]) != want[k])
        no(fmt::format("'{}' disagrees with the result's shape", v->name));
    return {};
  }
  if (!o.runtimeKernels)
    no(fmt::format("'{}' given at run time (checked by the runtime only)", v->name));
  const std::string t =
      b.temp(v->name + "_given", DType::I64, {std::max<int64_t>(1, int64_t(at.size()))});
  Block out;
  for (size_t k = 0; k < at.size(); ++k)
    out.push_back(Stmt::store(t, intImm(int64_t(k)), loadI64(b, v, at[k])));
  out.push_back(checkValuesI64(t, want));
  return out;
}

} // namespace aicc::loop::detail
