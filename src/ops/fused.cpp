// aicc.Fused: a group of ops fused by the graph passes into one node. The group is kept as a
// subgraph (attribute `body`) whose inputs are the node's inputs and whose outputs are the node's
// outputs, so the reference meaning is simply "run the body". `kind` says what was fused
// ("elementwise", "epilogue", "reduction"); the backend uses it to pick a lowering.
#include "ops/helpers.h"
#include "passes/shape_inference.h"

namespace aicc {

static void inferFused(InferCtx& c) {
  const Node& n = c.node;
  GraphPtr body = std::get<GraphPtr>(n.attr("body")->v);
  AICC_CHECK(body->inputs.size() == n.inputs.size(), "body takes {} inputs, the node has {}",
             body->inputs.size(), n.inputs.size());
  AICC_CHECK(body->outputs.size() == n.outputs.size(), "body returns {} outputs, the node has {}",
             body->outputs.size(), n.outputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i]) body->inputs[i]->type = mergeTypes(body->inputs[i]->type, c.inType(i), "fused body input");
  inferShapes(*body, c.shapeValues());
  for (size_t i = 0; i < n.outputs.size(); ++i) c.setOutput(i, body->outputs[i]->type);
}

static std::vector<RValue> runFused(KernelCtx& c) {
  GraphPtr body = std::get<GraphPtr>(c.node.attr("body")->v);
  std::vector<RValue> ins;
  for (size_t i = 0; i < c.numInputs(); ++i) ins.push_back(c.has(i) ? c.value(i) : RValue::none());
  return c.runSubgraph(*body, ins);
}

void registerFusedOps(OpRegistry& r) {
  r.op("Fused", kAiccDomain)
      .perSampleDims([](const Node& n, size_t dims) { // when every node of the body is
        const Attribute* b = n.attr("body");
        const GraphPtr* g = b ? std::get_if<GraphPtr>(&b->v) : nullptr;
        if (!g || !*g) return false;
        for (const auto& inner : (*g)->nodes)
          if (!computesPerSample(*inner, dims)) return false;
        return true;
      })
      .inputs(0, 1 << 30)
      .outputs(1, 1 << 30)
      .attr("body", Attribute::Kind::Graph, /*required=*/true)
      .attrString("kind", "elementwise")
      .infer(inferFused)
      .kernel(runFused);
}

} // namespace aicc
