// The aicc subcommands. Each returns the process exit code; errors are thrown as aicc::Error and
// reported by main() as one line on stderr.
#pragma once

#include "common.h"

#include "passes/pipelines.h"

namespace aicc::runtime {
struct JitRunOptions;
}

namespace aicc::cli {

struct RunArgs {
  std::string model;
  InputSpec inputs;
  std::string outputDir;
  std::vector<std::string> dims;
  bool checkTypes = false;
  int optLevel = 2;
  std::string engine = "interp"; // interp | jit (LLVM JIT, src/runtime/jit_executor.h)
  bool engineStats = false;      // jit: print lowered/fallback counts and timings to stderr
  std::string precision = "f32"; // jit: "bf16" (applyPrecision)
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
  std::vector<std::string> expectFailures; // exit non-zero unless exactly the listed tests fail
  std::string tolerances;     // per-test tolerance overrides: "name rtol=X atol=Y # reason"
  int jobs = 1;
  int optLevel = 0; // graph passes before interpreting (the suite checks -O3 == -O0)
  std::string engine = "interp"; // interp | jit
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

struct AutodiffArgs {
  std::string model, loss, output;
  std::vector<std::string> wrt, dims;
  bool keepOutputs = false;
};
int autodiffCommand(const AutodiffArgs& a);

struct QuantizeArgs {
  std::string model, output, method = "minmax";
  std::vector<std::string> calibration, dims;
  double percentile = 99.999, minSqnr = 0;
  bool perTensor = false;
};
int quantizeCommand(const QuantizeArgs& a);
// --precision of compile / bench / run: "f32" leaves the model; "int8" quantizes it in place
// (post-training, min-max, on the input sets of `calibration`; tools/aicc/quantize.cpp); "bf16"
// leaves the graph f32 and returns true: the backend then runs constant-weight MatMul/Gemm/Conv
// on the bf16 GEMM kernels (loop::LowerOptions::bf16; docs/backend.md "bf16").
bool applyPrecision(ImportedModel& im, const std::string& precision,
                    const std::vector<std::string>& calibration);
// The JIT's options for applyPrecision's result (bf16: the bf16 candidates on this CPU; an
// aicc::Error when it lacks AVX512-BF16).
void setJitPrecision(bool bf16, runtime::JitRunOptions& o);
// The blocked layout the JIT's lowering (native target, f32) takes (backend::layoutBlockFor).
int64_t jitLayoutBlock();
// --precision bf16: prints, per output, how the bf16 engine agrees with the f32 one (the JIT of
// im's graph, as optimized) on the input sets of `dirs` (as --calibration reads them) or on
// `sets` (bound to the graph's inputs by position): the largest error relative to the largest
// f32 magnitude, the SQNR, and the top-1 agreement of classifier outputs.
void reportBf16Agreement(ImportedModel& im, const std::vector<std::string>& dirs);
void reportBf16Agreement(const ImportedModel& im, const std::vector<std::vector<RValue>>& sets);

struct LoopOptArgs {
  std::string file; // .loop text, or a model to lower
  std::string passes; // comma-separated loop passes (default: simplify)
  bool printAfterAll = false, printAfterChange = false, timePasses = false, verifyEach = true;
  int64_t stopAfter = -1;
  std::string reproducer;
};
int loopOptCommand(const LoopOptArgs& a);

struct TrainArgs { // tools/aicc/train.cpp
  std::string model, loss, output, exportStep, accuracy;
  std::vector<std::string> data, testData, params, dims;
  std::string optimizer = "adam";
  double lr = 1e-3, momentum = 0.9, weightDecay = 0;
  int64_t batch = 32;
  int epochs = 10, evalEvery = 1;
  uint32_t seed = 0;
  bool remat = false;
};
int trainCommand(const TrainArgs& a);

struct OptArgs {
  std::string input; // .onnx or IR text
  std::string output; // "" or "-": stdout (text); *.onnx: ONNX; else text
  int optLevel = 2;
  std::string passes; // comma-separated pass names (overrides -O)
  std::string statsJson;
  std::vector<std::string> dims, shapes;
  std::vector<SizeRange> sizeRanges; // GraphPassOptions::sizeRanges and sizeSplit
  std::shared_ptr<std::optional<SizeSplit>> sizeSplit;
  bool printAfterAll = false, printAfterChange = false, timePasses = false, printConstants = false;
  bool verifyEach = true;
  std::vector<std::string> printBefore, printAfter;
  int64_t stopAfter = -1;
  std::string reproducer;
  int64_t layoutBlock = 0; // GraphPassOptions::layoutBlock: the lowering target's (jitLayoutBlock)
};
int optCommand(const OptArgs& a);
// Runs the -O pipeline (or a.passes) on m with a's instrumentation; returns the pass records.
std::vector<PassRecord> optimize(Model& m, const OptArgs& a);

struct CompileArgs { // tools/aicc/compile.cpp
  std::string model, outputDir, emit = "so", prefix = "model", target = "native", tuningCache;
  std::vector<std::string> dims, shapes, selects;
  // --specialize INPUT=D0,D1,...: a fixed-size variant (rt::Plan::variants) per value; in the
  // variant's own compile, the value it was made for (every input must then be static).
  std::vector<std::string> specializes;
  std::string variantOf;
  std::string precision = "f32";        // "int8": quantize first (aicc quantize, min-max)
  std::vector<std::string> calibration; // with int8: the calibration folders
  int optLevel = 2;
  bool quiet = false; // no "wrote ..." line (the Python module)
  bool embedWeights = false; // --emit c: weights as a const array (model_weights.c); --emit so
                             // --static-runtime: in model.so / model.a
  bool staticRuntime = false; // --emit so: model.so and model.a carry the runtime and the plan
  std::string reportHtml; // also write the HTML report here
  // A size class's own compile (compile_variants.cpp): where a condition on the sizes that still
  // changes inside its ranges goes, instead of compiling.
  std::optional<SizeSplit>* furtherSplit = nullptr;
};
int compileCommand(const CompileArgs& a);
// The variants of a compile into a.outputDir (compile_variants.cpp): each --specialize value,
// then the size classes of `split` (the first condition on the sizes that changes over the
// ranges, passes/size_predicates.h); their folders, in the order the runtime tries them.
std::vector<std::string> compileVariants(const CompileArgs& a,
                                         const std::optional<SizeSplit>& split);

struct DebugNumericsArgs { // tools/aicc/debug_numerics.cpp
  std::string model, injectFault;
  InputSpec inputs;
  std::vector<std::string> dims;
  int optLevel = 2;
  double rtol = 1e-3, atol = 1e-5;
};
int debugNumericsCommand(const DebugNumericsArgs& a);

struct ReportArgs { // tools/aicc/report_html.cpp
  std::string dir, output;
};
int reportCommand(const ReportArgs& a);
// The HTML page of the compile report in `dir` (report.json) written to `out`; `profile`: "" or
// a JSON object {threads, runs, median_ms, peak_gflops, peak_gbs, tasks: {node: ms per run}}.
void writeReportHtml(const std::string& dir, const std::string& out, const std::string& profile);

struct TuneArgs { // tools/aicc/tune.cpp
  std::string model, output;
  std::vector<std::string> dims, shapes;
  int optLevel = 2, reps = 5;
  double budgetSeconds = 20;
};
int tuneCommand(const TuneArgs& a);

struct BenchArgs { // tools/aicc/bench.cpp
  std::string model, engine = "jit", json, trace, reportHtml;
  InputSpec inputs;
  std::vector<std::string> dims;
  std::string precision = "f32";        // "int8": quantize first (aicc quantize, min-max)
  std::vector<std::string> calibration; // with int8: the calibration folders
  int optLevel = 2, threads = 1, iters = 20, warmup = 3, top = 15;
  bool profile = false, pinThreads = false;
};
int benchCommand(const BenchArgs& a);

} // namespace aicc::cli
