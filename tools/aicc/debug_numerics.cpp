// aicc debug-numerics MODEL [--inputs-dir D | --input NAME=FILE] [--dim N=V] [-O N] [--rtol R]
// [--atol A]: where does the compiled model first differ from the reference interpreter?
//
// The graph is optimized as `aicc run --engine jit` would (-O2 by default), then every node's
// results are made graph outputs and the graph runs twice on the same inputs: through the JIT
// (the compiled kernels) and through the interpreter (the definition of every op; a fused group
// runs its body node by node). Results are compared node by node in execution order (floats at
// the tensor's scale: max |difference| <= atol + rtol * max |expected|). The first
// node whose results differ is the culprit (its inputs, earlier results, matched): it is named
// with its op and kernel choice and the command fails; later differences are counted as
// downstream. --inject-fault NODE corrupts that node's compiled result, to test this tool.
#include "commands.h"

#include "interp/compare.h"
#include "interp/interpreter.h"
#include "runtime/jit_executor.h"

#include <cmath>
#include <iostream>
#include <set>

namespace aicc::cli {

namespace {

// Float tensors are compared at the tensor's scale: max |got - want| <= atol + rtol * max |want|
// (a 1e-5 difference in an element near zero after a long reduction is rounding, not a wrong
// kernel); anything else exactly as the backend tests compare. nullopt when they match.
std::optional<std::string> differs(const RValue& want, const RValue& got, double rtol,
                                   double atol) {
  const bool floats = want.kind == RValue::Kind::Tensor && got.kind == RValue::Kind::Tensor &&
                      isFloat(want.tensor.dtype()) && want.tensor.dtype() == got.tensor.dtype() &&
                      want.tensor.shape() == got.tensor.shape();
  if (!floats) return compareValues(want, got, Tolerance{rtol, atol});
  double err = 0, scale = 0;
  int64_t worst = -1;
  for (int64_t i = 0; i < want.tensor.numel(); ++i) {
    const double w = want.tensor.getF64(i), g = got.tensor.getF64(i);
    if (std::isnan(w) != std::isnan(g))
      return fmt::format("element {}: {} expected, got {}", i, w, g);
    if (std::isnan(w) || (std::isinf(w) && w == g)) continue;
    scale = std::max(scale, std::abs(w));
    if (const double e = std::abs(g - w); e > err || std::isnan(e)) err = e, worst = i;
  }
  if (err <= atol + rtol * scale) return std::nullopt;
  return fmt::format("max |difference| {:.4g} at element {} ({} expected, got {}), tensor scale "
                     "{:.4g}",
                     err, worst, want.tensor.getF64(worst), got.tensor.getF64(worst), scale);
}

} // namespace

int debugNumericsCommand(const DebugNumericsArgs& a) {
  ImportedModel m = loadModel(a.model, parseDims(a.dims));
  std::vector<RValue> inputs = bindInputs(m, a.inputs);
  specializeToInputs(m, inputs);
  OptArgs opt;
  opt.optLevel = a.optLevel;
  optimize(m.model, opt);
  Graph& g = *m.model.graph;
  if (!a.injectFault.empty()) {
    bool found = false;
    for (const auto& n : g.nodes) found = found || n->name == a.injectFault;
    AICC_CHECK(found, "--inject-fault {}: no node of that name in the optimized graph",
               a.injectFault);
  }
  // Every top-level tensor result becomes a graph output (each once).
  std::set<const Value*> seen(g.outputs.begin(), g.outputs.end());
  for (const auto& n : g.nodes)
    for (Value* v : n->outputs)
      if (v && v->type.kind == Type::Kind::Tensor && seen.insert(v).second) g.outputs.push_back(v);
  std::map<const Value*, size_t> index;
  for (size_t i = 0; i < g.outputs.size(); ++i) index.emplace(g.outputs[i], i);

  runtime::JitRunOptions jo;
  jo.injectFaultAt = a.injectFault;
  runtime::JitExecutable exe(g, jo);
  const std::vector<RValue> got = exe.run(inputs);
  const std::vector<RValue> want = interpret(g, inputs);
  std::map<std::string, const runtime::TaskInfo*> taskOf; // by Node::describe()
  for (const auto& t : exe.tasks()) taskOf[t.node] = &t;

  const Node* first = nullptr;
  std::string firstWhat;
  int64_t compared = 0, differing = 0;
  for (const auto& n : g.nodes) {
    std::optional<std::string> bad;
    for (const Value* v : n->outputs) {
      auto it = v ? index.find(v) : index.end();
      if (it == index.end()) continue;
      if (auto d = differs(want[it->second], got[it->second], a.rtol, a.atol); d && !bad)
        bad = fmt::format("result '{}': {}", v->name, *d);
    }
    ++compared;
    if (!bad) continue;
    ++differing;
    if (!first) first = n.get(), firstWhat = *bad;
  }
  std::cout << fmt::format("debug-numerics: {} nodes of {} (-O{}, {} compiled, {} fallback) "
                           "compared with the interpreter (rtol {}, atol {})\n",
                           compared, a.model, a.optLevel, exe.stats().lowered, exe.stats().fallback,
                           a.rtol, a.atol);
  if (!first) {
    std::cout << "every node's results match\n";
    return 0;
  }
  const std::string desc = first->describe();
  auto t = taskOf.find(desc);
  std::cout << fmt::format("first difference: {}\n  {}\n", desc, firstWhat);
  if (t != taskOf.end())
    std::cout << fmt::format("  op {} on {}: {}\n", t->second->op, t->second->engine,
                             t->second->schedule.empty() ? t->second->why : t->second->schedule);
  std::cout << fmt::format("  its inputs matched; {} later node(s) differ too (downstream)\n",
                           differing - 1);
  fail("the compiled model differs from the interpreter, first at node '{}'", first->name);
}

} // namespace aicc::cli
