#include "loop/per_sample.h"

#include "loop/lower_ops.h"
#include "ops/op_def.h"

#include <set>

namespace aicc::loop {

TypeSwap::~TypeSwap() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) it->first->type = it->second;
}

void TypeSwap::set(Value* v, Type t) {
  saved_.emplace_back(v, v->type);
  v->type = std::move(t);
}

const Type& PerSampleContext::typeOf(const Value* v) const {
  if (types)
    if (auto it = types->find(v); it != types->end()) return it->second;
  return v->type;
}

namespace {

// LowerOptions::samples and runDim's variables while lowering (renamed after, clear of the
// Func's names).
constexpr const char* kSamplesVar = "samples_of_run";
constexpr const char* kDimVar = "dim_of_run_";
constexpr const char* kBlockVar = "shape_block_of_run"; // (setDataDim's stores, renamed after)

// The tensors n reads and writes and those of its bodies (graph attributes), without constants.
void valuesOf(const Node& n, std::vector<Value*>& out) {
  for (const auto* vs : {&n.inputs, &n.outputs})
    for (Value* v : *vs)
      if (v && !v->constant) out.push_back(v);
  for (const auto& [_, a] : n.attrs)
    if (auto* g = std::get_if<GraphPtr>(&a.v); g && *g) {
      for (Value* v : (*g)->inputs) out.push_back(v);
      for (const auto& inner : (*g)->nodes) valuesOf(*inner, out);
    }
}

bool symbolic(const Type& t) {
  if (!t.isTensor() || !t.shape) return false;
  for (const Dim& d : *t.shape)
    if (!d.isStatic()) return true;
  return false;
}

// The leading symbolic dims of a type (rule 1: its dims before the last symbolic one are
// symbols, expressions of them, or 1s, the others static) and their positions, else nullopt and
// *why set.
std::optional<std::vector<std::pair<Dim, size_t>>> leadingSymbols(const Value* v, const Type& t,
                                                                  std::string* why) {
  const Shape& s = *t.shape;
  std::vector<std::pair<Dim, size_t>> out;
  size_t k = 0;
  for (; k < s.size() && (s[k] == Dim::known(1) || !s[k].isStatic()); ++k) {
    if (s[k].isStatic()) continue;
    if (s[k].symbol.empty()) break;
    out.emplace_back(s[k], k);
  }
  bool ok = !out.empty();
  for (; ok && k < s.size(); ++k) ok = s[k].isStatic();
  if (ok) return out;
  *why =
      fmt::format("'{}' is {}: a symbolic dim other than a leading symbol", v->name, formatType(t));
  return std::nullopt;
}

// Offsets every access to the buffers of `shift` by their expression: loads (mapExprs), then
// stores and call arguments.
void shiftAccesses(Block& b, const std::map<std::string, ExprPtr>& shift) {
  std::function<ExprPtr(const ExprPtr&)> loads = [&](const ExprPtr& e) -> ExprPtr {
    if (e->args.empty()) return e;
    auto c = std::make_shared<Expr>(*e);
    for (ExprPtr& a : c->args) a = loads(a);
    if (auto it = shift.find(c->name); c->op == Op::Load && it != shift.end())
      c->args[0] = add(c->args[0], it->second);
    return c;
  };
  mapExprs(b, loads);
  std::function<void(Block&)> writes = [&](Block& blk) {
    for (Stmt& st : blk) {
      if (auto it = shift.find(st.name); st.kind == StmtKind::Store && it != shift.end())
        st.index = add(st.index, it->second);
      for (CallArg& a : st.args)
        if (auto it = shift.find(a.buffer); !a.buffer.empty() && it != shift.end())
          a.offset = a.offset ? add(a.offset, it->second) : it->second;
      writes(st.body);
      writes(st.orelse);
    }
  };
  writes(b);
}

// The shape block as ln's parameter `block` (written when ln sets data symbols).
void addShapeBlock(LoweredNode& ln, const std::string& block, const PerSampleContext& ctx) {
  int64_t slots = 0; // (a stepped symbol's "S/step" reads S's slot)
  for (const auto& [_, s] : ctx.symbols) slots = std::max(slots, s.slot + 1);
  ln.func.params.push_back(
      {block, DType::I64, Dims{slots}, "", ln.dataSymbols.empty() ? Role::In : Role::Out});
  ln.symbolsParam = block;
}

// The data symbols n produces: those of its results that none of its inputs has. Of those with
// no bound, only the ones not sized yet when its sizes alone are lowered (LowerOptions::
// sizesOnly), and none otherwise (they are set before its task runs).
std::set<std::string> producedSymbols(const Node& n, const PerSampleContext& ctx,
                                      bool sizesOnly = false) {
  std::set<std::string> produced, inputSyms;
  for (const Value* v : n.inputs)
    if (v && ctx.typeOf(v).shape)
      for (const Dim& d : *ctx.typeOf(v).shape) inputSyms.insert(d.symbol);
  for (const Value* v : n.outputs)
    if (v && ctx.typeOf(v).shape)
      for (const Dim& d : *ctx.typeOf(v).shape)
        if (auto s = ctx.symbols.find(d.symbol);
            !d.derived && s != ctx.symbols.end() && s->second.data && !inputSyms.count(d.symbol) &&
            s->second.runSized == sizesOnly &&
            !(sizesOnly && ctx.sized && ctx.sized->count(d.symbol)))
          produced.insert(d.symbol);
  return produced;
}

// Renames buffer `from` to `to` in the stores of b (the shape block's name while lowering).
void renameStores(Block& b, const std::string& from, const std::string& to) {
  for (Stmt& st : b) {
    if (st.kind == StmtKind::Store && st.name == from) st.name = to;
    renameStores(st.body, from, to);
    renameStores(st.orelse, from, to);
  }
}

} // namespace

// (per_sample.h) A symbol's value in the run: the shape block's element, clamped into the range the
// runtime checked (so the verifier sees the real bounds).
ExprPtr symbolValue(const std::string& block, const SymbolSlot& slot) {
  ExprPtr v = load(block, intImm(slot.slot), DType::I64);
  if (slot.divisor > 1) v = div(v, intImm(slot.divisor));
  return min(max(v, intImm(slot.lo)), intImm(slot.bound));
}

ExprPtr loopExprOf(const DimExpr& e, const std::function<ExprPtr(const std::string&)>& symbol) {
  DimAlgebra<ExprPtr> f;
  f.constant = [](int64_t c) { return intImm(c); };
  f.symbol = symbol;
  f.add = [](const ExprPtr& a, const ExprPtr& b) { return add(a, b); };
  f.mul = [](const ExprPtr& a, const ExprPtr& b) { return mul(a, b); };
  f.floorDiv = [](const ExprPtr& a, int64_t d) { return div(a, intImm(d)); };
  return e.fold(f);
}

bool sizedAtRunTime(const Type& t, const PerSampleContext& ctx) {
  if (!t.isTensor() || !t.shape) return false;
  for (const Dim& d : *t.shape)
    if (auto e = d.isStatic() ? std::nullopt : dimExpr(d)) {
      std::vector<std::string> syms;
      e->symbols(syms);
      for (const std::string& x : syms)
        if (auto s = ctx.symbols.find(x); s != ctx.symbols.end() && s->second.runSized) return true;
    }
  return false;
}

// Whether some value of n is sized at run time.
bool runSizedValues(const Node& n, const PerSampleContext& ctx) {
  std::vector<Value*> vs;
  valuesOf(n, vs);
  return std::any_of(vs.begin(), vs.end(),
                     [&](const Value* v) { return sizedAtRunTime(ctx.typeOf(v), ctx); });
}

bool hasSymbolicValues(const Node& n, const PerSampleContext& ctx) {
  std::vector<Value*> vs;
  valuesOf(n, vs);
  for (const Value* v : vs)
    if (symbolic(ctx.typeOf(v))) return true;
  return false;
}

namespace {

// Shape and Size of a value with symbols: its dims from the shape block.
std::optional<LoweredNode> lowerShapeOf(const Node& n, const std::string& funcName,
                                        const LowerOptions& o, const PerSampleContext& ctx,
                                        std::string* whyNot) {
  const Type& t = ctx.typeOf(n.inputs[0]);
  detail::FuncBuilder b(n, funcName, "shape");
  const std::string out = b.output(0), block = b.fresh("symbols");
  std::vector<ExprPtr> dims;
  for (const Dim& d : *t.shape) {
    if (d.isStatic()) {
      dims.push_back(intImm(d.value));
      continue;
    }
    std::vector<std::string> syms;
    const auto e = dimExpr(d);
    if (e) e->symbols(syms);
    if (!e || syms.empty() || std::any_of(syms.begin(), syms.end(), [&](const std::string& x) {
          return !ctx.symbols.count(x);
        })) {
      if (whyNot)
        *whyNot = fmt::format("'{}' is {}: its shape holds a dim that is not an expression of "
                              "input symbols",
                              n.inputs[0]->name, formatType(t));
      return std::nullopt;
    }
    dims.push_back(loopExprOf(
        *e, [&](const std::string& x) { return symbolValue(block, ctx.symbols.at(x)); }));
  }
  Block body;
  if (n.op == "Size") {
    ExprPtr p = intImm(1);
    for (const ExprPtr& d : dims) p = mul(p, d);
    body.push_back(Stmt::store(out, intImm(0), p));
  } else {
    const int64_t r = int64_t(dims.size());
    auto clampAxis = [r](int64_t a) { return std::clamp(a < 0 ? a + r : a, int64_t(0), r); };
    const int64_t start = clampAxis(n.attrInt("start", 0)), end = clampAxis(n.attrInt("end", r));
    for (int64_t k = start; k < end; ++k)
      body.push_back(Stmt::store(out, intImm(k - start), dims[size_t(k)]));
  }
  LoweredNode ln = b.finish(std::move(body), {}, o);
  addShapeBlock(ln, block, ctx);
  return ln;
}

// Lowered with the run's sizes (LowerOptions::runDim), when the node's symbolic dims are
// expressions of input symbols and its lowering read the run's size of every symbolic dim of
// its inputs and results (a lowering that does not know runDim reads none: refused).
std::optional<LoweredNode> lowerSymbolic(const Node& n, const std::string& funcName,
                                         const LowerOptions& o, const PerSampleContext& ctx,
                                         std::string* whyNot) {
  auto no = [&](std::string reason) -> std::optional<LoweredNode> {
    if (whyNot) *whyNot = std::move(reason);
    return std::nullopt;
  };
  std::vector<Value*> vs;
  valuesOf(n, vs);
  std::map<std::string, std::string> placeholder; // symbol -> its variable while lowering
  for (const Value* v : vs) {
    const Type& t = ctx.typeOf(v);
    if (!t.shape) return no(fmt::format("'{}' has no known rank", v->name));
    for (const Dim& d : *t.shape) {
      if (d.isStatic()) continue;
      std::vector<std::string> syms; // a symbol, or an expression of symbols
      if (auto e = dimExpr(d)) e->symbols(syms);
      if (syms.empty())
        return no(fmt::format("'{}' is {}: an unknown dim", v->name, formatType(t)));
      for (const std::string& x : syms) {
        auto slot = ctx.symbols.find(x);
        if (slot == ctx.symbols.end())
          return no(
              fmt::format("'{}' is {}: '{}' is not an input symbol", v->name, formatType(t), x));
        placeholder.emplace(x, "");
      }
    }
  }
  for (int k = 0; auto& [x, ph] : placeholder) ph = kDimVar + std::to_string(k++);
  const std::set<std::string> produced = producedSymbols(n, ctx, o.sizesOnly);
  if (o.sizesOnly && produced.empty()) return no("it sizes nothing at run time");
  LowerOptions so = o;
  std::set<std::pair<const Value*, size_t>> read;
  std::map<std::string, ExprPtr> written; // data symbol -> the lowering's value of it
  so.runDim = [&](const Value* v, size_t k) -> ExprPtr {
    const Type& t = ctx.typeOf(v);
    if (!t.shape || k >= t.shape->size() || (*t.shape)[k].isStatic()) return nullptr;
    read.emplace(v, k);
    if (auto w = written.find((*t.shape)[k].symbol); w != written.end()) return w->second;
    return loopExprOf(*dimExpr((*t.shape)[k]),
                      [&](const std::string& x) { return var(placeholder.at(x)); });
  };
  so.setDataDim = [&](const Value* v, size_t k, const ExprPtr& value) -> std::optional<Stmt> {
    const Type& t = ctx.typeOf(v);
    if (!t.shape || k >= t.shape->size() || !produced.count((*t.shape)[k].symbol) ||
        std::find(n.outputs.begin(), n.outputs.end(), v) == n.outputs.end())
      return std::nullopt;
    const std::string& x = (*t.shape)[k].symbol;
    written[x] = value;
    return Stmt::store(kBlockVar, intImm(ctx.symbols.at(x).slot), value);
  };
  std::string why;
  auto ln = lowerNode(n, funcName, &why, so);
  if (!ln) return no(why);
  for (const std::string& x : produced) // (a lowering that knows nothing of them reads them)
    if (!written.count(x))
      return no(fmt::format("{} does not compute its data-dependent dim {} here", opLabel(n), x));
  for (const auto* list : {&n.inputs, &n.outputs})
    for (const Value* v : *list) {
      if (o.sizesOnly || !v || v->constant || !ctx.typeOf(v).shape) continue;
      const Shape& sh = *ctx.typeOf(v).shape;
      for (size_t k = 0; k < sh.size(); ++k)
        if (!sh[k].isStatic() && !read.count({v, k}) && !written.count(sh[k].symbol))
          return no(fmt::format("'{}' is {}: {} has no lowering for symbolic sizes there", v->name,
                                formatType(ctx.typeOf(v)), opLabel(n)));
    }
  if (o.sizesOnly && !ln->outputs.empty()) // (FuncBuilder::finish kept a result it writes)
    return no(fmt::format("{} computes its sizes with its result, not apart", opLabel(n)));
  // A value sized at run time has no planned size: its buffer is flat, laid out `run_sized` (the
  // runtime grows it to the run's dims before the task, rt::HeapBuffer; docs/loop-ir.md).
  for (Buffer& b : ln->func.params)
    if (const Value* v = ln->valueOf(b.name); v && sizedAtRunTime(ctx.typeOf(v), ctx))
      b.shape = Dims{1}, b.layout = kRunSizedLayout;
  for (const auto& [x, _] : written) ln->dataSymbols.push_back(x);
  Func& f = ln->func;
  NameGen fresh(f);
  const std::string block = fresh.fresh("symbols");
  Block body;
  std::vector<std::string> names;
  for (const auto& [sym, ph] : placeholder) {
    const SymbolSlot& slot = ctx.symbols.at(sym);
    const std::string name = fresh.fresh("dim" + std::to_string(slot.slot));
    substitute(f.body, ph, var(name));
    body.push_back(Stmt::let(name, symbolValue(block, slot)));
    names.push_back(sym);
  }
  for (Stmt& st : f.body) body.push_back(std::move(st));
  f.body = std::move(body);
  renameStores(f.body, kBlockVar, block);
  f.schedule["symbolic"] = names;
  addShapeBlock(*ln, block, ctx);
  return ln;
}

std::optional<LoweredNode> lowerSamples(const Node& n, const std::string& funcName,
                                        const LowerOptions& o, const PerSampleContext& ctx,
                                        std::string* whyNot) {
  std::string why;
  auto no = [&](std::string reason) -> std::optional<LoweredNode> {
    if (whyNot) *whyNot = std::move(reason);
    return std::nullopt;
  };
  if ((n.op == "Shape" || n.op == "Size") && n.domain.empty() && n.inputs.size() == 1 &&
      n.outputs.size() == 1 && n.outputs[0] && ctx.typeOf(n.inputs[0]).shape &&
      ctx.typeOf(n.outputs[0]).shape && toDims(*ctx.typeOf(n.outputs[0]).shape))
    return lowerShapeOf(n, funcName, o, ctx, whyNot);
  // Rule 1: the same leading symbols (a sample is one index of each: a batch, a batch and a
  // length).
  std::vector<Value*> vs;
  valuesOf(n, vs);
  std::vector<std::string> syms;
  std::vector<Dim> leading; // the leading dims (syms are their printed forms)
  std::map<const Value*, std::vector<size_t>> batched; // the values with them, and where
  for (const Value* v : vs) {
    const Type& t = ctx.typeOf(v);
    if (!symbolic(t)) continue;
    auto lead = leadingSymbols(v, t, &why);
    if (!lead) return no(why);
    std::vector<std::string> names;
    std::vector<size_t> where;
    for (const auto& [d, at] : *lead) names.push_back(d.symbol), where.push_back(at);
    if (syms.empty())
      for (const auto& [d, _] : *lead) leading.push_back(d);
    batched[v] = where; // (a value read twice is listed twice)
    if (!syms.empty() && names != syms)
      return no(fmt::format("it reads or writes different symbolic dims ({}; {})",
                            fmt::join(syms, ", "), fmt::join(names, ", ")));
    syms = names;
  }
  // Each leading dim's bound (its value at the symbols' upper bounds).
  std::map<std::string, int64_t> hi;
  for (const auto& [name, slot] : ctx.symbols) hi[name] = slot.bound;
  int64_t bound = 1;
  std::vector<int64_t> bounds;
  for (const Dim& d : leading) {
    const auto e = dimExpr(d);
    const auto b = e ? e->evaluate(hi) : std::nullopt;
    if (!b)
      return no(fmt::format("'{}' is not an expression of the model's input symbols", d.symbol));
    bounds.push_back(*b);
    bound *= *b;
  }
  const std::string sym = fmt::format("{}", fmt::join(syms, "*"));
  // Rule 2: from the inputs' samples to every output's.
  bool fromInput = false;
  for (const Value* v : n.inputs) fromInput = fromInput || batched.count(v);
  for (const Value* v : n.outputs)
    if (v && !batched.count(v))
      return no(fmt::format("its result '{}' ({}) does not have the batch dim {} of its inputs",
                            v->name, formatType(ctx.typeOf(v)), sym));
  if (!fromInput) return no(fmt::format("its results have the dim {} but no input has it", sym));
  // Rule 3: the op's knowledge, given how many leading dims the samples span (of input 0 when it
  // has them, else of the first result: a batch 1, a batch and a length 2).
  const Value* ref = n.inputs.empty() || !batched.count(n.inputs[0]) ? n.outputs[0] : n.inputs[0];
  if (!batched.count(ref)) ref = batched.begin()->first;
  const size_t dims = batched.at(ref).back() + 1;
  if (!computesPerSample(n, dims))
    return no(fmt::format("{} does not compute each sample of {} alone here", n.op, sym));

  std::optional<LoweredNode> ln;
  {
    TypeSwap one;
    for (const auto& [v, at] : batched) {
      const Type& t = ctx.typeOf(v);
      Shape unit = *t.shape;
      for (size_t a : at) unit[a] = Dim::known(1);
      one.set(const_cast<Value*>(v), Type::tensor(t.dtype, unit));
    }
    LowerOptions all = o;
    all.samples = var(kSamplesVar);
    ln = lowerNode(n, funcName, &why, all);
  }
  if (!ln) return no(why);
  const bool inCall = ln->func.schedule.count("samples") > 0; // the lowering took them all

  // The wrap: the shape block, the sample loop and the shifted accesses.
  Func& f = ln->func;
  NameGen fresh(f);
  const std::string block = fresh.fresh("symbols"), s = fresh.fresh("sample"),
                    count = fresh.fresh("samples");
  substitute(f.body, kSamplesVar, var(count));
  std::map<std::string, ExprPtr> shift;
  for (Buffer& b : f.params) {
    const Value* v = ln->valueOf(b.name);
    if (!v || !batched.count(v)) continue;
    shift[b.name] = mul(var(s), intImm(b.numel()));
    // At the bounds: the symbols' dims when the buffer has the value's dims, else flat.
    const std::vector<size_t>& at = batched.at(v);
    bool same = b.shape.size() == ctx.typeOf(v).shape->size();
    for (size_t a : at) same = same && b.shape[a] == 1;
    if (same)
      for (size_t i = 0; i < at.size(); ++i) b.shape[at[i]] = bounds[i];
    else
      b.shape = Dims{b.numel() * bound}, b.layout.clear();
  }
  if (!inCall) shiftAccesses(f.body, shift);
  ExprPtr samples = intImm(1);
  for (const Dim& d : leading)
    samples = mul(samples, loopExprOf(*dimExpr(d), [&](const std::string& x) {
                    return symbolValue(block, ctx.symbols.at(x));
                  }));
  Block body;
  body.push_back(Stmt::let(count, samples));
  if (inCall)
    for (Stmt& st : f.body) body.push_back(std::move(st));
  else
    body.push_back(Stmt::forLoop(s, intImm(0), var(count), std::move(f.body)));
  f.body = std::move(body);
  f.schedule["per_sample"] = sym;
  addShapeBlock(*ln, block, ctx);
  return ln;
}

} // namespace

std::optional<LoweredNode> lowerPerSample(const Node& n, const std::string& funcName,
                                          const LowerOptions& o, const PerSampleContext& ctx,
                                          std::string* whyNot) {
  // Refused by both: both reasons (the per-sample rules' account of the node's shapes, then why
  // the lowering with the run's sizes did not take it).
  std::string perSample, symbolic;
  if (!producedSymbols(n, ctx).empty()) // (the symbol is written, not a sample count)
    perSample = "it produces a data-dependent dim";
  else if ((o.sizesOnly || runSizedValues(n, ctx)) && n.op != "Shape" && n.op != "Size")
    // (no bound to plan samples at)
    perSample = "its sizes are set at run time";
  else if (auto ln = lowerSamples(n, funcName, o, ctx, &perSample))
    return ln;
  if (auto ln = lowerSymbolic(n, funcName, o, ctx, &symbolic)) return ln;
  if (whyNot) *whyNot = perSample + (symbolic.empty() ? "" : "; with the run's sizes: " + symbolic);
  return std::nullopt;
}

} // namespace aicc::loop
