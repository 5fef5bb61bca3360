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

// The leading symbols of a type (rule 1: its dims before the last symbolic one are symbols or 1s,
// the others static) and their positions, else nullopt and *why set.
std::optional<std::vector<std::pair<std::string, size_t>>>
leadingSymbols(const Value* v, const Type& t, std::string* why) {
  const Shape& s = *t.shape;
  std::vector<std::pair<std::string, size_t>> out;
  size_t k = 0;
  for (; k < s.size() && (s[k] == Dim::known(1) || !s[k].isStatic()); ++k) {
    if (s[k].isStatic()) continue;
    if (s[k].derived || s[k].symbol.empty()) break;
    out.emplace_back(s[k].symbol, k);
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

// A symbol's value in the run: the shape block's element, clamped into the range the runtime
// checked (so the verifier sees the real bounds).
ExprPtr symbolValue(const std::string& block, const SymbolSlot& slot) {
  return min(max(load(block, intImm(slot.slot), DType::I64), intImm(slot.lo)), intImm(slot.bound));
}

// The shape block as ln's parameter `block`.
void addShapeBlock(LoweredNode& ln, const std::string& block, const PerSampleContext& ctx) {
  ln.func.params.push_back({block, DType::I64, Dims{int64_t(ctx.symbols.size())}, "", Role::In});
  ln.symbolsParam = block;
}

} // namespace

ExprPtr loopExprOf(const DimExpr& e, const std::function<ExprPtr(const std::string&)>& symbol) {
  DimAlgebra<ExprPtr> f;
  f.constant = [](int64_t c) { return intImm(c); };
  f.symbol = symbol;
  f.add = [](const ExprPtr& a, const ExprPtr& b) { return add(a, b); };
  f.mul = [](const ExprPtr& a, const ExprPtr& b) { return mul(a, b); };
  f.floorDiv = [](const ExprPtr& a, int64_t d) { return div(a, intImm(d)); };
  return e.fold(f);
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
    auto slot = ctx.symbols.find(d.symbol);
    if (!d.isStatic() && (d.derived || slot == ctx.symbols.end())) {
      if (whyNot)
        *whyNot = fmt::format("'{}' is {}: its shape holds a dim that is not an input symbol",
                              n.inputs[0]->name, formatType(t));
      return std::nullopt;
    }
    dims.push_back(d.isStatic() ? intImm(d.value) : symbolValue(block, slot->second));
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

// Lowered with the run's sizes (LowerOptions::runDim): the ops whose lowerings read them, when
// their symbolic dims are input symbols.
std::optional<LoweredNode> lowerSymbolic(const Node& n, const std::string& funcName,
                                         const LowerOptions& o, const PerSampleContext& ctx,
                                         std::string* whyNot) {
  auto no = [&](std::string reason) -> std::optional<LoweredNode> {
    if (whyNot) *whyNot = std::move(reason);
    return std::nullopt;
  };
  if (!n.domain.empty() || (n.op != "Transpose" && n.op != "Attention"))
    return no(n.op + " has no lowering for symbolic sizes");
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
        placeholder[x] = kDimVar + std::to_string(slot->second.slot);
      }
    }
  }
  LowerOptions so = o;
  so.runDim = [&](const Value* v, size_t k) -> ExprPtr {
    const Type& t = ctx.typeOf(v);
    if (!t.shape || k >= t.shape->size() || (*t.shape)[k].isStatic()) return nullptr;
    return loopExprOf(*dimExpr((*t.shape)[k]),
                      [&](const std::string& x) { return var(placeholder.at(x)); });
  };
  std::string why;
  auto ln = lowerNode(n, funcName, &why, so);
  if (!ln) return no(why);
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
  std::map<const Value*, std::vector<size_t>> batched; // the values with them, and where
  for (const Value* v : vs) {
    const Type& t = ctx.typeOf(v);
    if (!symbolic(t)) continue;
    auto lead = leadingSymbols(v, t, &why);
    if (!lead) return no(why);
    std::vector<std::string> names;
    std::vector<size_t> where;
    for (const auto& [name, at] : *lead) names.push_back(name), where.push_back(at);
    batched[v] = where; // (a value read twice is listed twice)
    if (!syms.empty() && names != syms)
      return no(fmt::format("it reads or writes different symbolic dims ({}; {})",
                            fmt::join(syms, ", "), fmt::join(names, ", ")));
    syms = names;
  }
  int64_t bound = 1;
  for (const std::string& x : syms) {
    auto slot = ctx.symbols.find(x);
    if (slot == ctx.symbols.end())
      return no(fmt::format("'{}' is not a symbol of the model's inputs", x));
    bound *= slot->second.bound;
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
  // Rule 3: the op's knowledge.
  if (!computesPerSample(n))
    return no(fmt::format("{} does not compute each sample of {} alone here", n.op, sym));

  std::optional<LoweredNode> ln;
  {
    TypeSwap one;
    std::map<std::string, int64_t> unit;
    for (const std::string& x : syms) unit[x] = 1;
    for (const auto& [v, _] : batched) {
      const Type& t = ctx.typeOf(v);
      one.set(const_cast<Value*>(v), Type::tensor(t.dtype, withSymbols(*t.shape, unit)));
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
      for (size_t i = 0; i < at.size(); ++i) b.shape[at[i]] = ctx.symbols.at(syms[i]).bound;
    else
      b.shape = Dims{b.numel() * bound}, b.layout.clear();
  }
  if (!inCall) shiftAccesses(f.body, shift);
  ExprPtr samples = intImm(1);
  for (const std::string& x : syms) samples = mul(samples, symbolValue(block, ctx.symbols.at(x)));
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
  // Refused by both: the per-sample reason (the rules' account of the node's shapes).
  std::string perSample;
  if (auto ln = lowerSamples(n, funcName, o, ctx, &perSample)) return ln;
  if (auto ln = lowerSymbolic(n, funcName, o, ctx, nullptr)) return ln;
  if (whyNot) *whyNot = perSample;
  return std::nullopt;
}

} // namespace aicc::loop
