// Graph IR text parser (ir/parser.h), the verifier and the printer: any text parses or throws
// aicc::Error; a model that parses and verifies prints to text that parses and verifies again.
#include "fuzz_util.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aicc;
  std::string printed;
  fuzz::guarded([&] {
    Model m = parseModel(fuzz::text(data, size));
    verifyModel(m);
    printed = printModel(m);
  });
  if (printed.empty()) return 0;
  try {
    verifyModel(parseModel(printed));
  } catch (const Error& e) {
    fuzz::bug(std::string("the printed form of a valid model does not parse back: ") + e.what());
  }
  return 0;
}
