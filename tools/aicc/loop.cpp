// aicc loop-opt: runs loop IR passes on a .loop file (or on the loop IR lowered from a model:
// any other file is loaded as ONNX / graph IR text and its lowerable nodes are lowered) with the
// pass manager's instrumentation, and prints the result.
#include "commands.h"

#include "loop/lower.h"
#include "loop/parser.h"
#include "loop/passes.h"
#include "loop/printer.h"

#include <fstream>
#include <iostream>
#include <sstream>

namespace aicc::cli {

int loopOptCommand(const LoopOptArgs& a) {
  loop::Module m;
  bool isLoopText = a.file.size() > 5 && a.file.substr(a.file.size() - 5) == ".loop";
  if (isLoopText) {
    std::ifstream f(a.file);
    AICC_CHECK(f.good(), "cannot read '{}'", a.file);
    std::stringstream ss;
    ss << f.rdbuf();
    try {
      m = loop::parseModule(ss.str());
    } catch (const Error& e) {
      throw Error(fmt::format("{}:{}", a.file, e.what()));
    }
  } else {
    ImportedModel im = loadModel(a.file);
    std::vector<std::string> skipped;
    m = loop::lowerGraph(*im.model.graph, {}, &skipped);
    for (const auto& s : skipped) std::cerr << "// not lowered: " << s << "\n";
  }
  PassInstrumentation inst;
  inst.printAfterAll = a.printAfterAll;
  inst.printAfterChange = a.printAfterChange;
  inst.timing = a.timePasses;
  inst.stopAfter = a.stopAfter;
  inst.verifyEach = a.verifyEach;
  inst.reproducerPath = a.reproducer;
  PassManager<loop::Module> pm(inst);
  if (a.passes.empty()) {
    for (auto& p : loop::defaultLoopPipeline()) pm.add(std::move(p));
  } else {
    std::stringstream ss(a.passes);
    for (std::string n; std::getline(ss, n, ',');)
      if (!n.empty()) pm.add(loop::makeLoopPass(n));
  }
  pm.run(m);
  std::cout << loop::printModule(m);
  return 0;
}

} // namespace aicc::cli
