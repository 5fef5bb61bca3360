#include "ir/parser.h"
#include "support/error.h"
namespace aicc {
// TEMPORARY: replaced by the real parser.
Model parseModel(std::string_view) { fail("parser not implemented yet"); }
} // namespace aicc
