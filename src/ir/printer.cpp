#include "ir/printer.h"
#include "support/error.h"
namespace aicc {
// TEMPORARY: replaced by the real printer.
std::string printModel(const Model&, const PrintOptions&) { fail("printer not implemented yet"); }
std::string printGraph(const Graph&, const PrintOptions&) { fail("printer not implemented yet"); }
} // namespace aicc
