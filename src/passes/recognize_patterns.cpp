// The "recognize" pass: replaces the spelled-out forms exporters produce by one op each. The
// families live in recognize_*.cpp; each is one sweep over a graph. The order matters only where
// one recognized op is part of another pattern: HardSigmoid before HardSwish (x * HardSigmoid(x)),
// and the opset<13 Softmax spelling (Flatten/Softmax/Reshape) before attention.
#include "passes/recognize_patterns.h"

#include "ir/rewrite.h"
#include "passes/recognize_internal.h"
#include "passes/shape_inference.h"

namespace aicc {

bool recognizePatterns(Model& m) {
  using namespace recognize;
  int64_t total = 0;
  forEachGraph(*m.graph, [&](Graph& g) {
    Ctx c(g);
    total += recognizeSoftmaxLegacy(c);
    total += recognizeLayerNorm(c);
    total += recognizeGelu(c);
    total += recognizeHardSigmoid(c);
    total += recognizeHardSwish(c);
    total += recognizeSwish(c);
    total += recognizeAttention(c);
  });
  if (total > 0) inferShapes(*m.graph);
  return total > 0;
}

} // namespace aicc
