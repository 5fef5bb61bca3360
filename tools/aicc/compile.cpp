// aicc compile MODEL -o OUTDIR --emit c [--dim N=V] [-O0..-O3]: runs the graph pipeline, plans
// memory, lowers every node to loop IR and writes the portable C99 bundle (model.c, model.h,
// model.weights; docs/codegen-c.md).
#include "commands.h"

#include "backend/memory_plan.h"
#include "codegen/c/bundle.h"

#include <iostream>

namespace aicc::cli {

int compileCommand(const CompileArgs& a) {
  AICC_CHECK(a.emit == "c", "compile: --emit {} is not supported (supported: c)", a.emit);
  ImportedModel im = loadModel(a.model, parseDims(a.dims));
  OptArgs opt;
  opt.optLevel = a.optLevel;
  optimize(im.model, opt);
  const Graph& g = *im.model.graph;
  MemoryPlan plan = planMemory(g);
  codegen::CBundleOptions co;
  co.prefix = a.prefix;
  codegen::CBundle b = codegen::emitCBundle(g, plan, co);
  codegen::writeCBundle(b, a.outputDir);
  std::cout << fmt::format("wrote {0}/{1}.c ({2} bytes, {3} kernels, {4} no-op views), {0}/{1}.h, "
                           "{0}/{1}.weights ({5} bytes); arena {6} bytes\n",
                           a.outputDir, b.prefix, b.source.size(), b.kernels, b.noOps,
                           b.weights.size(), b.arenaBytes);
  return 0;
}

} // namespace aicc::cli
