// The aicc subcommands. Each returns the process exit code; errors are thrown as aicc::Error and
// reported by main() as one line on stderr.
#pragma once

#include "common.h"

namespace aicc::cli {

struct RunArgs {
  std::string model;
  InputSpec inputs;
  std::string outputDir;
  std::vector<std::string> dims;
  bool checkTypes = false;
};
int runCommand(const RunArgs& a);

struct InspectArgs {
  std::string model;
  bool ir = false;
  bool printConstants = false;
};
int inspectCommand(const InspectArgs& a);

struct TestOnnxArgs {
  std::vector<std::string> dirs;
  std::string json;
  std::string expectFailures; // exit non-zero unless exactly the listed tests fail
  int jobs = 1;
  double timeoutSec = 120;
  bool verbose = false;
};
int testOnnxCommand(const TestOnnxArgs& a);

struct IrArgs {
  std::string file; // .onnx, or the IR text form
  bool verify = false;
  bool printConstants = false;
  bool allowUnregistered = false;
};
int irCommand(const IrArgs& a);

} // namespace aicc::cli
