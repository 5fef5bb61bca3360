// The builder's control flow (runtime/artifact_builder.h): an If with static results as jumps
// in the task sequence,
//
//   jumpz  cond -> ELSE
//   <then branch's tasks>, copy each then-result into the If's result
//   jump   -> END
//   ELSE: <else branch's tasks>, copy each else-result into the If's result
//   END:
//
// each branch planned on its own (planMemory of the branch graph; the enclosing graph's values it
// reads are external to it) and placed after the enclosing graph's arena part: only one branch
// runs and its values die with the If, so both branches, and the branches of every If of the
// same graph, share that region. Jumps only go forward, so every run ends. A Loop or Scan as a
// repeat region over its body's tasks (emitLoop below).
#include "runtime/artifact_builder.h"

#include "loop/scan_slices.h"
#include "loop/verifier.h"

#include <algorithm>
#include <limits>

namespace aicc::runtime::detail {

namespace {

// Whether a Loop body's condition result is its condition input (through Identity nodes) or a
// constant true: the loop runs its trip count, or nothing when the first condition is false.
bool conditionKept(const Graph& body) {
  const Value* c = body.outputs.at(0);
  for (int hops = 0; hops < 16; ++hops) {
    if (c == body.inputs.at(1)) return true;
    if (c->constant) return c->constant->numel() == 1 && c->constant->getI64(0) != 0;
    const Node* p = c->producer;
    if (!p || p->op != "Identity" || !p->domain.empty() || !p->hasInput(0)) return false;
    c = p->inputs[0];
  }
  return false;
}

} // namespace

// Returns the end of the arena region the branches use (from base).
int64_t Builder::emitIf(const Scope& s, const Node& n, int64_t base) {
  const Graph* br[2] = {branchOf(n, "then_branch"), branchOf(n, "else_branch")};
  bool ok = br[0] && br[1] && n.hasInput(0);
  for (const Value* o : n.outputs) // (or sequences: the branch's shared, rt/sequence.h)
    ok = ok && o &&
         ((o->type.isTensor() && o->type.shape && toDims(*o->type.shape)) ||
          (isDynamic(o) && isNumericSequence(o->type)));
  // (results sized at run time would be copied between growable buffers, which copy tasks do
  // not bind: the whole If through the interpreter, which sizes them)
  for (const Graph* b : br)
    for (const Value* r : b ? b->outputs : std::vector<Value*>{})
      ok = ok && !loop::sizedAtRunTime(ctx_.typeOf(r), ctx_);
  for (const Value* o : n.outputs) ok = ok && !(o && loop::sizedAtRunTime(ctx_.typeOf(o), ctx_));
  // A branch that does not resolve at the symbols' bounds may at a run's sizes: it runs as the
  // whole If at the run's sizes (emitBranch), or the whole If does when neither resolves.
  const bool symbolic = !ctx_.symbols.empty() && loop::hasSymbolicValues(n, ctx_);
  if (symbolic && br[0] && br[1] && unresolvedShape(*br[0], true) && unresolvedShape(*br[1], true))
    ok = false;
  if (!ok) { // the whole If through the interpreter
    const std::string why = "only an If with two input-less branches and results of static "
                            "size or sequences is compiled";
    if (const std::vector<const Value*> outer = outerReads(n); canFallBack(n, outer))
      emitFallback(s, n, outer, why);
    else
      missing.push_back(n.describe() + ": " + why);
    return base;
  }
  const size_t jz = spec_.tasks.size();
  push({ArtifactTask::Kind::JumpIfZero,
        "",
        n.describe(),
        {bind(s, n.inputs[0])},
        0,
        0,
        nullptr,
        {},
        {}},
       "If", "jumpz to else_branch");
  int64_t end = emitBranch(s, n, *br[0], "then_branch", base);
  const size_t j = spec_.tasks.size();
  push({ArtifactTask::Kind::Jump, "", n.describe(), {}, 0, 0, nullptr, {}, {}}, "If",
       "jump past else_branch");
  spec_.tasks[jz].target = int64_t(spec_.tasks.size());
  end = std::max(end, emitBranch(s, n, *br[1], "else_branch", base));
  spec_.tasks[j].target = int64_t(spec_.tasks.size());
  return end;
}

int64_t Builder::emitBranch(const Scope& s, const Node& n, const Graph& b, const char* which,
                            int64_t base) {
  const std::string where = n.describe() + " " + which;
  if (auto why = unresolvedShape(b, true)) {
    // With symbols it may resolve at a run's sizes: the If on its reference kernels there, where
    // the branch would run (the condition is the same there, so it takes this branch).
    if (!ctx_.symbols.empty() && loop::hasSymbolicValues(n, ctx_))
      if (const std::vector<const Value*> outer = outerReads(n); canFallBack(n, outer)) {
        emitFallback(s, n, outer,
                     std::string(which) + " resolves only at the run's sizes: " + *why);
        return base;
      }
    failBranches.push_back(where + ": " + *why);
    push({ArtifactTask::Kind::Fail, "", where + " cannot run: " + *why, {}, 0, 0, nullptr, {}, {}},
         "If", "fail (branch not compiled)");
    return base;
  }
  Scope bs{&b, planMemory(b, planOptions(ctx_)), base, &s, slots, {}};
  slots += bs.plan.dynamicValues;
  bs.heapBase = addHeaps(bs.plan);
  int64_t end = emit(bs);
  // The If's data symbols (a dim the branches give different sizes, passes/data_dims.h): this
  // branch's sizes, written into the shape block; its results fill a prefix of the If's.
  const auto produced = dataProducers_.find(&n);
  std::vector<std::pair<std::string, Dim>> sets; // symbol -> this branch's dim
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    Binding from = bind(bs, b.outputs[k]), to = bind(s, n.outputs[k]);
    if (isDynamic(n.outputs[k])) { // a sequence: shared (emitIf took only those)
      AICC_CHECK(isDynamic(b.outputs[k]) && isNumericSequence(b.outputs[k]->type),
                 "{}: result {} is {}, the If's {}", where, k, formatType(b.outputs[k]->type),
                 formatType(n.outputs[k]->type));
      push({ArtifactTask::Kind::Copy, "", where, {from, to}, 0, 0, nullptr, {}, {}}, "If",
           "share branch result");
      continue;
    }
    AICC_CHECK(from.region != Region::Dynamic, "{}: result {} has no static size ({})", where, k,
               formatType(b.outputs[k]->type));
    const Type& t = ctx_.typeOf(n.outputs[k]);
    for (size_t j = 0; produced != dataProducers_.end() && t.shape && j < t.shape->size(); ++j)
      if (produced->second.count((*t.shape)[j].symbol))
        sets.push_back({(*t.shape)[j].symbol, ctx_.typeOf(b.outputs[k]).shape->at(j)});
    AICC_CHECK(sets.empty() ? from.bytes == to.bytes : from.bytes <= to.bytes,
               "{}: result {} has {} bytes, the If's {}", where, k, from.bytes, to.bytes);
    to.bytes = from.bytes;
    push({ArtifactTask::Kind::Copy, "", where, {from, to}, 0, 0, nullptr, {}, {}}, "If",
         "copy branch result");
  }
  if (!sets.empty()) emitSetSymbols(where, sets);
  return end;
}

// A task storing `sets` (data symbol -> its size here: static, or an expression of symbols)
// into the shape block.
void Builder::emitSetSymbols(const std::string& where,
                             const std::vector<std::pair<std::string, Dim>>& sets) {
  loop::Func f;
  f.name = "task" + std::to_string(spec_.code.funcs.size());
  const std::string block = "symbols";
  int64_t slots = 0;
  for (const auto& [_, x] : ctx_.symbols) slots = std::max(slots, x.slot + 1);
  f.params.push_back({block, DType::I64, Dims{slots}, "", loop::Role::Out});
  for (const auto& [name, d] : sets) {
    const auto e = dimExpr(d);
    AICC_CHECK(e, "{}: the size of its {} is unknown", where, name);
    f.body.push_back(loop::Stmt::store(block, loop::intImm(ctx_.symbols.at(name).slot),
                                       loop::loopExprOf(*e, [&](const std::string& x) {
                                         return loop::symbolValue(block, ctx_.symbols.at(x));
                                       })));
  }
  auto msgs = loop::verifyMessages(f);
  AICC_CHECK(msgs.empty(), "{}: invalid loop IR setting its sizes: {}", where, msgs[0]);
  ArtifactTask t;
  t.fn = f.name;
  t.node = where;
  t.params.push_back({Region::Symbols, 0, slots * 8});
  std::string names;
  for (const auto& [name, d] : sets) names += (names.empty() ? "" : ", ") + name;
  push(std::move(t), "If", "set " + names);
  spec_.code.funcs.push_back(std::move(f));
}

// A Loop or Scan whose values all have static sizes (a Loop's scan outputs may have its
// iteration count as a data symbol) as a `repeat` region: the body planned like an If branch
// after its graph inputs' arena slots, from `base`. Returns the end of what it uses (any
// other Loop or Scan runs on its reference kernel, the reason in the report).
//   copy initial states (and a Loop's condition) into the body's input slots
//   repeat count, index[, condition][, iterations] @END
//     Scan: each scan input's slice i into its slot     (sliceCopyFunc)
//     <the body's tasks>
//     the new states (and condition) into the slots    (through staging where a result is
//                                                        another input's slot)
//     each scan result into row i of its output          (sliceCopyFunc)
//   END: copy the final states out
int64_t Builder::emitLoop(const Scope& s, const Node& n, int64_t base) {
  const bool scan = n.op == "Scan";
  auto refuse = [&](std::string why) {
    // A Loop of sequences or of sizes the run decides: its body an artifact of its own.
    std::string also;
    if (!scan && emitLoopTask(s, n, also)) return base;
    if (!also.empty()) why += "; as a body of its own: " + also;
    if (const std::vector<const Value*> outer = outerReads(n); canFallBack(n, outer))
      emitFallback(s, n, outer, why);
    else
      missing.push_back(n.describe() + ": " + why);
    return base;
  };
  const Attribute* a = n.attr("body");
  const GraphPtr* bp = a ? std::get_if<GraphPtr>(&a->v) : nullptr;
  const Graph* body = bp ? bp->get() : nullptr;
  const size_t N0 =
      scan ? n.inputs.size() - size_t(n.attrInt("num_scan_inputs")) : n.inputs.size() - 2;
  if (!body || body->inputs.size() != (scan ? n.inputs.size() : N0 + 2) ||
      body->outputs.size() != (scan ? n.outputs.size() : n.outputs.size() + 1))
    return refuse("a body that does not match its inputs and outputs");
  if (auto why = unresolvedShape(*body)) return refuse("its body: " + *why);
  if (const Value* m = !scan && n.hasInput(0) ? n.inputs[0] : nullptr;
      m && (m->type.dtype != DType::I64 || !m->type.shape || !toDims(*m->type.shape) ||
            detail::describe(m, "trip count").bytes() != 8))
    return refuse("a trip count that is not one int64");
  const size_t N = N0; // states
  auto bytesOf = [](const Value* v) { return describe(v, "value").bytes(); };
  // A Scan's length: static, or a symbol of the inputs (the run's, read from the shape block);
  // its axes and directions. A Loop's scan outputs: their rows, a data symbol written by the
  // repeat task, or the fixed trip count.
  int64_t count = 0, limit = 0; // a static trip count; the most iterations planned
  int64_t checkedRows = -1;     // a Loop's rows, which its run-time trip count must give
  std::string length;           // a Scan's symbolic length, or a Loop's rows (data symbol)
  std::vector<int64_t> axes, dirs, outAxes, outDirs;
  if (scan) {
    const size_t M = n.inputs.size() - N;
    axes = n.attrInts("scan_input_axes", std::vector<int64_t>(M, 0));
    dirs = n.attrInts("scan_input_directions", std::vector<int64_t>(M, 0));
    const size_t K = n.outputs.size() - N;
    outAxes = n.attrInts("scan_output_axes", std::vector<int64_t>(K, 0));
    outDirs = n.attrInts("scan_output_directions", std::vector<int64_t>(K, 0));
    if (M == 0 || axes.size() != M || dirs.size() != M || outAxes.size() != K ||
        outDirs.size() != K)
      return refuse("scan axes or directions that do not match its inputs and outputs");
    auto normalize = [](int64_t& a, const Value* v) {
      const int64_t r = v && v->type.shape ? int64_t(v->type.shape->size()) : 0;
      a = a < 0 ? a + r : a;
      return a >= 0 && a < r;
    };
    for (size_t m = 0; m < M; ++m) {
      if (!normalize(axes[m], n.inputs[N + m])) return refuse("a scan input axis out of range");
      const Dim& d = (*ctx_.typeOf(n.inputs[N + m]).shape)[size_t(axes[m])];
      const std::string len = d.isStatic() ? std::to_string(d.value) : d.symbol;
      if (d.derived || len.empty() ||
          (m && len != (length.empty() ? std::to_string(count) : length)))
        return refuse("scan inputs of different lengths, or a length that is no symbol");
      if (d.isStatic())
        count = d.value;
      else
        length = d.symbol;
    }
    for (size_t k = 0; k < K; ++k)
      if (!normalize(outAxes[k], n.outputs[N + k]))
        return refuse("a scan output axis out of range");
    if (length.empty() && count < 1) return refuse("no iteration");
    if (!length.empty() && !ctx_.symbols.count(length))
      return refuse(fmt::format("its length {} is no symbol of the inputs", length));
    limit = length.empty() ? count : ctx_.symbols.at(length).bound;
  } else {
    for (size_t k = N; k < n.outputs.size(); ++k)
      if (const Value* o = n.outputs[k];
          o && ctx_.typeOf(o).shape && !ctx_.typeOf(o).shape->empty())
        if (const Dim& d = ctx_.typeOf(o).shape->front(); !d.isStatic()) length = d.symbol;
  }
  // Static sizes only, but for that length: a Scan's inputs and results along their axes, a
  // Loop's scan outputs' rows.
  auto allowed = [&](const Value* v, size_t k, const Dim& d) {
    if (length.empty() || d.derived || d.symbol != length) return false;
    for (size_t i = N; scan && i < n.inputs.size(); ++i)
      if (n.inputs[i] == v && k == size_t(axes[i - N])) return true;
    for (size_t i = N; i < n.outputs.size(); ++i)
      if (n.outputs[i] == v && k == (scan ? size_t(outAxes[i - N]) : 0)) return true;
    return false;
  };
  std::vector<Value*> vals;
  definedValues(*body, vals);
  for (const auto* vs : {&n.inputs, &n.outputs})
    for (Value* v : *vs)
      if (v) vals.push_back(v);
  for (const Value* v : vals) {
    if (v->constant) continue;
    if (!v->type.isTensor() || !v->type.shape || !toDims(*v->type.shape) || isDynamic(v) ||
        v->type.dtype == DType::String)
      return refuse(fmt::format("'{}' is {}: a loop is compiled with values of static size",
                                v->name, formatType(v->type)));
    const Type& t = ctx_.typeOf(v);
    for (size_t k = 0; k < t.shape->size(); ++k)
      if (!(*t.shape)[k].isStatic() && !allowed(v, k, (*t.shape)[k]))
        return refuse(fmt::format("'{}' is {}: a loop is compiled with static sizes (but for "
                                  "its length)",
                                  v->name, formatType(t)));
  }
  if (!scan) {
    // (scan outputs: rows for the iterations planned, the output's dim 0 at its bound; the
    // rows a run writes must be its dim: a data symbol, or a fixed count run to the end)
    const Value* m = n.hasInput(0) ? n.inputs[0] : nullptr;
    const bool alwaysOn =
        !n.hasInput(1) || (n.inputs[1]->constant && n.inputs[1]->constant->getI64(0) != 0);
    limit = std::numeric_limits<int64_t>::max();
    // A run-time trip count with a condition the body passes on unchanged runs count iterations
    // (none when the condition is false): checked against the rows by the runtime.
    const bool kept = m && !m->constant && conditionKept(*body);
    for (size_t k = N; k < n.outputs.size(); ++k) {
      if (!n.outputs[k]) continue;
      const int64_t rows = toDims(*n.outputs[k]->type.shape)->front();
      if (length.empty() &&
          !(m && m->constant && m->constant->getI64(0) == rows && alwaysOn &&
            body->outputs[0]->constant && body->outputs[0]->constant->getI64(0) != 0) &&
          !(kept && (checkedRows < 0 || checkedRows == rows)))
        return refuse("scan outputs whose row count is neither a data-dependent dim nor the "
                      "fixed trip count");
      if (length.empty() && kept) checkedRows = rows;
      limit = std::min(limit, rows);
    }
  }
  // The body's input slots from `base`, then its plan (and what it nests after that, then the
  // staging of results that are inputs).
  int64_t end = aligned(base);
  auto slot = [&](int64_t bytes) {
    const Binding b{Region::Arena, end, bytes};
    end = aligned(end + std::max<int64_t>(bytes, 1));
    return b;
  };
  std::vector<Binding> inputSlots;
  for (const Value* in : body->inputs) inputSlots.push_back(slot(bytesOf(in)));
  const Binding index = scan ? slot(8) : inputSlots[0];
  Scope bs{body, planMemory(*body, planOptions(ctx_)), end, &s, slots, std::move(inputSlots)};
  slots += bs.plan.dynamicValues;
  bs.heapBase = addHeaps(bs.plan);
  end = aligned(bs.base + bs.plan.arenaBytes);
  std::vector<ArtifactTask> pre; // before the repeat
  auto copy = [&](std::vector<ArtifactTask>& to, Binding from, Binding into) {
    if (from.region != into.region || from.offset != into.offset)
      to.push_back(
          {ArtifactTask::Kind::Copy, "", n.describe(), {from, into}, 0, 0, nullptr, {}, {}});
  };
  const size_t first = scan ? 0 : 2; // the body's first state input
  for (size_t k = 0; k < N; ++k)
    copy(pre, bind(s, n.inputs[scan ? k : k + 2]), bs.inputs[first + k]);
  Binding countAt;
  std::vector<Binding> repeatParams;
  auto constantI64 = [&](int64_t v) {
    return Binding{Region::Weights, place(Tensor::fromI64({v})), 8};
  };
  if (scan) { // (the run's length: the shape block's value of its symbol)
    countAt = length.empty() ? constantI64(count)
                             : Binding{Region::Symbols, 8 * ctx_.symbols.at(length).slot, 8};
    repeatParams = {countAt, index};
  } else {
    countAt = n.hasInput(0) ? bind(s, n.inputs[0]) : constantI64(limit);
    Tensor on(DType::Bool, {});
    on.setI64(0, 1);
    copy(pre, n.hasInput(1) ? bind(s, n.inputs[1]) : Binding{Region::Weights, place(on), 1},
         bs.inputs[1]);
    repeatParams = {countAt, index, bs.inputs[1]};
    if (!length.empty()) // (the iterations run: the rows' data symbol)
      repeatParams.push_back({Region::Symbols, 8 * ctx_.symbols.at(length).slot, 8});
  }
  for (ArtifactTask& t : pre) push(std::move(t), n.op, "copy initial state");
  auto call = [&](loop::Func f, std::vector<Binding> params, const char* what) {
    const std::string fn = "task" + std::to_string(spec_.code.funcs.size());
    f.name = fn;
    auto msgs = loop::verifyMessages(f);
    AICC_CHECK(msgs.empty(), "{}: {} produced invalid loop IR: {}", n.describe(), what, msgs[0]);
    ArtifactTask t{ArtifactTask::Kind::Call, fn, n.describe(), std::move(params), 0, 0, &n, {}, {}};
    push(std::move(t), n.op, what);
    spec_.code.funcs.push_back(std::move(f));
  };
  if (checkedRows >= 0) {
    std::vector<Binding> params = {countAt};
    if (n.hasInput(1)) params.push_back(bind(s, n.inputs[1]));
    params.push_back(slot(8)); // (its temp)
    call(loop::tripCountCheckFunc(checkedRows, n.hasInput(1)), std::move(params),
         "check the trip count");
  }
  const size_t repeatAt = spec_.tasks.size();
  push({ArtifactTask::Kind::Repeat, "", n.describe(), repeatParams, 0, limit, nullptr, {}, {}},
       n.op,
       scan ? fmt::format("repeat {} times", length.empty() ? std::to_string(count) : length)
            : "repeat while the condition holds");
  if (scan)
    for (size_t m = 0; N + m < n.inputs.size(); ++m) {
      const Value* x = n.inputs[N + m];
      call(loop::sliceCopyFunc("", x->type.dtype, *toDims(*x->type.shape), size_t(axes[m]),
                               dirs[m] != 0, true),
           {bind(s, x), bs.inputs[N + m], index, countAt}, "scan slice in");
    }
  end = std::max(end, emit(bs));
  // The scan outputs' rows first: a body result may be a view of a state input (an Identity),
  // which the state copies below overwrite.
  const size_t K = n.outputs.size() - N;
  std::optional<Binding> rows; // the length the rows are written at (a Loop's: its limit)
  for (size_t k = 0; k < K; ++k) {
    const Value* y = n.outputs[N + k];
    if (!y) continue;
    if (!rows) rows = scan ? countAt : constantI64(limit);
    const Value* part = body->outputs[(scan ? N : N + 1) + k];
    call(loop::sliceCopyFunc("", y->type.dtype, *toDims(*y->type.shape),
                             scan ? size_t(outAxes[k]) : 0, scan && outDirs[k] != 0, false),
         {bind(s, y), bind(bs, part), index, *rows}, "scan slice out");
  }
  // The new states (a Loop's condition first): staged where a result is an input's slot.
  std::vector<std::pair<Binding, Binding>> updates; // from, into
  if (!scan) updates.push_back({bind(bs, body->outputs[0]), bs.inputs[1]});
  for (size_t k = 0; k < N; ++k)
    updates.push_back({bind(bs, body->outputs[scan ? k : k + 1]), bs.inputs[first + k]});
  std::vector<ArtifactTask> staged, direct, unstage;
  for (auto& [from, into] : updates) {
    const bool isInput = std::any_of(bs.inputs.begin(), bs.inputs.end(), [&](const Binding& b) {
      return b.region == from.region && b.offset == from.offset;
    });
    if (!isInput) {
      copy(direct, from, into);
    } else if (from.offset != into.offset || from.region != into.region) {
      const Binding tmp = slot(from.bytes);
      copy(staged, from, tmp);
      copy(unstage, tmp, into);
    }
  }
  for (auto* list : {&staged, &direct, &unstage})
    for (ArtifactTask& t : *list) push(std::move(t), n.op, "copy state");
  spec_.tasks[repeatAt].target = int64_t(spec_.tasks.size());
  for (size_t k = 0; k < N; ++k)
    if (n.outputs[k]) {
      std::vector<ArtifactTask> out;
      copy(out, bs.inputs[first + k], bind(s, n.outputs[k]));
      for (ArtifactTask& t : out) push(std::move(t), n.op, "copy final state");
    }
  return end;
}

} // namespace aicc::runtime::detail
