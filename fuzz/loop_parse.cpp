// Loop IR text parser (loop/parser.h), verifier and printer: any text parses or throws
// aicc::Error; a module that parses and verifies prints to text that parses and verifies again.
#include "fuzz_util.h"
#include "loop/parser.h"
#include "loop/printer.h"
#include "loop/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aicc;
  std::string printed;
  fuzz::guarded([&] {
    loop::Module m = loop::parseModule(fuzz::text(data, size));
    loop::verify(m);
    printed = loop::printModule(m);
  });
  if (printed.empty()) return 0;
  try {
    loop::verify(loop::parseModule(printed));
  } catch (const Error& e) {
    fuzz::bug(std::string("the printed form of a valid module does not parse back: ") + e.what());
  }
  return 0;
}
