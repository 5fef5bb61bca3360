#include "loop/executor.h"

#include "interp/interpreter.h"
#include "loop/eval.h"
#include "loop/verifier.h"

namespace aicc::loop {


std::vector<RValue> runLowered(const Graph& g, const std::vector<RValue>& inputs,
                               const LowerOptions& opts, LoopRunStats* stats) {
  AICC_CHECK(inputs.size() == g.inputs.size(), "graph '{}' takes {} inputs, got {}", g.name,
             g.inputs.size(), inputs.size());
  std::map<const Value*, RValue> env;
  for (size_t i = 0; i < inputs.size(); ++i) env[g.inputs[i]] = inputs[i];
  auto fetch = [&](const Value* v) -> const RValue* {
    if (auto it = env.find(v); it != env.end()) return &it->second;
    if (v->constant) return &env.emplace(v, RValue::of(*v->constant)).first->second;
    return nullptr;
  };
  int64_t index = 0;
  for (const auto& np : g.nodes) {
    const Node& n = *np;
    std::string why;
    auto ln = lowerNode(n, "node" + std::to_string(index++), &why, opts);
    if (ln) {
      auto msgs = verifyMessages(ln->func);
      AICC_CHECK(msgs.empty(), "{}: lowering produced invalid loop IR: {}", n.describe(), msgs[0]);
      std::map<std::string, Tensor> bufs;
      for (const auto& [param, v] : ln->inputs) {
        const RValue* r = fetch(v);
        AICC_CHECK(r && r->kind == RValue::Kind::Tensor, "{}: input '{}' has no tensor value",
                   n.describe(), v->name);
        bufs[param] = r->tensor;
      }
      for (const auto& [param, data] : ln->constants) bufs[param] = data; // packed weights
      try {
        evaluate(ln->func, bufs);
      } catch (const Error& e) {
        throw Error(fmt::format("{} (lowered): {}", n.describe(), e.what()));
      }
      for (const auto& [param, v] : ln->outputs) env[v] = RValue::of(bufs.at(param));
      if (stats) ++stats->lowered;
      continue;
    }
    if (stats) {
      ++stats->fallback;
      stats->fallbackReasons.push_back(n.describe() + ": " + why);
    }
    // A fallback: the reference kernel; subgraphs read this graph's values as their outer scope.
    std::vector<RValue> outs = runReferenceKernel(n, fetch);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] && i < outs.size()) env[n.outputs[i]] = std::move(outs[i]);
  }
  std::vector<RValue> results;
  for (const Value* o : g.outputs) {
    const RValue* r = fetch(o);
    AICC_CHECK(r, "graph '{}': output '{}' was never computed", g.name, o->name);
    results.push_back(*r);
  }
  return results;
}

} // namespace aicc::loop
