// aicc: the command-line driver. Subcommands live in one file each; this file only wires flags.
#include "commands.h"

#include "rt/parallel.h"
#include "support/memory.h"
#include "support/parse.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <new>

using namespace aicc::cli;

// A number >= 0 (CLI::NonNegativeNumber's message would print the whole of DBL_MAX).
const CLI::Validator kNonNegative(
    [](std::string& s) -> std::string {
      auto v = aicc::tryParseFloat(s);
      return v && *v >= 0 ? "" : "must be a number >= 0, got " + s;
    },
    "NUMBER>=0");

// --precision and --calibration, as compile and bench take them (tools/aicc/quantize.cpp).
static void addPrecisionOptions(CLI::App* cmd, std::string& precision,
                                std::vector<std::string>& calibration) {
  cmd->add_option("--precision", precision,
                  "f32 (default); bf16: constant-weight MatMul/Gemm/Conv on bf16 GEMM kernels, "
                  "f32 accumulation (AVX512-BF16); int8: quantize first (as aicc quantize, "
                  "min-max) on --calibration")
      ->check(CLI::IsMember({"f32", "bf16", "int8"}));
  cmd->add_option("--calibration", calibration,
                  "With --precision int8: folders of input sets to calibrate on; with bf16: input "
                  "sets to report the agreement with f32 on")
      ->expected(1, -1);
}

int main(int argc, char** argv) {
  CLI::App app{"aicc: an ahead-of-time compiler for ONNX models"};
  app.require_subcommand(1);
  app.fallthrough(); // global options may follow the subcommand
  std::string maxMemory;
  app.add_option("--max-memory", maxMemory,
                 "Memory budget for tensors, arenas and weights (e.g. 512M, 4G; default: "
                 "AICC_MAX_MEMORY, else none): exceeding it is an error naming the allocation");

  RunArgs run;
  auto* runCmd = app.add_subcommand("run", "Run a model with the reference interpreter");
  runCmd->add_option("model", run.model, "ONNX model file, or a folder written by `aicc compile --emit so`")->required();
  runCmd->add_option("--inputs-dir", run.inputs.inputsDir, "Folder with input_<i>.pb files (ONNX backend-test layout)");
  runCmd->add_option("--input", run.inputs.named, "NAME=FILE (.pb TensorProto or .npy); repeatable");
  runCmd->add_option("--output-dir", run.outputDir, "Write output_<i>.pb files here");
  runCmd->add_option("--dim", run.dims, "NAME=VALUE for a symbolic input dimension; repeatable");
  runCmd->add_flag("--check-types", run.checkTypes, "Check every node's result against shape inference");
  runCmd->add_option("-O", run.optLevel, "Graph optimization level 0-3 (default 2)")->check(CLI::Range(0, 3));
  runCmd->add_option("--engine", run.engine, "Execution engine: interp (reference interpreter, default) or jit (LLVM JIT)")->check(CLI::IsMember({"interp", "jit"}));
  runCmd
      ->add_option("--precision", run.precision,
                   "f32 (default) or bf16 (--engine jit: constant-weight MatMul/Gemm/Conv on bf16 "
                   "GEMM kernels, f32 accumulation; AVX512-BF16)")
      ->check(CLI::IsMember({"f32", "bf16"}));
  runCmd->add_flag("--engine-stats", run.engineStats, "jit: print lowered/fallback nodes and timings on stderr");

  InspectArgs inspect;
  auto* inspectCmd = app.add_subcommand("inspect", "Show a model's inputs, outputs, opsets and ops");
  inspectCmd->add_option("model", inspect.model, "ONNX model file")->required();
  inspectCmd->add_flag("--ir", inspect.ir, "Print the graph IR text");
  inspectCmd->add_flag("--print-constants", inspect.printConstants, "With --ir: print all constant data");

  TestOnnxArgs test;
  auto* testCmd = app.add_subcommand("test-onnx", "Run ONNX backend-test folders (model.onnx + test_data_set_*)");
  testCmd->add_option("dirs", test.dirs, "Test folders, or folders of test folders")->required();
  testCmd->add_option("--json", test.json, "Write a JSON report here");
  testCmd
      ->add_option("--expect-failures", test.expectFailures,
                   "File listing the tests known not to pass (name # reason); other failures, "
                   "and listed tests that pass, make the exit status non-zero (repeatable: "
                   "the lists add up)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  testCmd->add_option("--tolerances", test.tolerances,
                      "File of per-test tolerance overrides (name rtol=X atol=Y # reason)");
  testCmd->add_option("-j,--jobs", test.jobs, "Tests run in parallel (each in its own process)")->check(CLI::Range(1, 1024));
  testCmd->add_option("--timeout", test.timeoutSec, "Seconds before a test counts as hung")->check(CLI::PositiveNumber);
  testCmd->add_option("-O", test.optLevel, "Graph optimization level before interpreting (default 0)")
      ->check(CLI::Range(0, 3));
  testCmd
      ->add_option("--engine", test.engine,
                   "interp (default), jit (each test compiled with the LLVM JIT) or artifact (each "
                   "test compiled ahead of time as `aicc compile` does, then loaded and run as "
                   "`aicc run FOLDER`)")
      ->check(CLI::IsMember({"interp", "jit", "artifact"}));
  testCmd->add_flag("-v,--verbose", test.verbose, "Print the failure reason of each test");

  IrArgs ir;
  auto* irCmd = app.add_subcommand("ir", "Print the IR text of a model (.onnx or IR text)");
  irCmd->add_option("file", ir.file, "ONNX model or IR text file")->required();
  irCmd->add_flag("--verify", ir.verify, "Run the IR verifier");
  irCmd->add_flag("--print-constants", ir.printConstants, "Print all constant data");
  irCmd->add_flag("--allow-unregistered", ir.allowUnregistered, "Accept ops the registry does not know");

  OptArgs opt;
  auto* optCmd = app.add_subcommand("opt", "Run graph passes and print or write the optimized IR");
  optCmd->add_option("input", opt.input, "ONNX model or IR text file")->required();
  optCmd->add_option("-o", opt.output, "Output: IR text, or ONNX when the name ends in .onnx (default: stdout)");
  optCmd->add_option("-O", opt.optLevel, "Optimization level 0-3 (default 2)")->check(CLI::Range(0, 3));
  optCmd->add_option("--passes", opt.passes, "Comma-separated pass list, instead of -O");
  optCmd->add_option("--stats-json", opt.statsJson, "Write node counts, op histograms and pass timings here");
  optCmd->add_option("--dim", opt.dims,
                     "NAME=VALUE for a symbolic input dimension, or NAME=LO..HI: its range "
                     "(fold-size-predicates); repeatable");
  optCmd->add_option("--shape", opt.shapes, "NAME=D0,D1,... fixes input NAME's whole shape; repeatable");
  optCmd->add_flag("--print-ir-after-all", opt.printAfterAll, "Print the IR (stderr) after every pass");
  optCmd->add_flag("--print-ir-after-change", opt.printAfterChange, "Print the IR after passes that changed it");
  optCmd->add_option("--print-ir-before", opt.printBefore, "Print the IR before this pass; repeatable");
  optCmd->add_option("--print-ir-after", opt.printAfter, "Print the IR after this pass; repeatable");
  optCmd->add_flag("--time-passes", opt.timePasses, "Print each pass's time");
  optCmd->add_option("--stop-after", opt.stopAfter, "Stop after N pass runs (bisecting)")->check(kNonNegative);
  optCmd->add_flag("!--no-verify", opt.verifyEach, "Do not run the verifier after each pass");
  optCmd->add_option("--reproducer", opt.reproducer, "On a pass failure, write the IR before the pass here");
  optCmd->add_flag("--print-constants", opt.printConstants, "Print all constant data");
  optCmd->add_flag("--list-passes", [](int64_t) {
    for (const auto& p : aicc::graphPasses()) std::cout << fmt::format("{:<18} {}\n", p.name, p.summary);
    std::exit(0);
  }, "List the graph passes and exit");

  AutodiffArgs ad;
  auto* adCmd = app.add_subcommand("autodiff", "Append the gradient graph of a scalar loss; write it as ONNX");
  adCmd->add_option("model", ad.model, "ONNX model or IR text file")->required();
  adCmd->add_option("--loss", ad.loss, "Name of the scalar loss value")->required();
  adCmd->add_option("--wrt", ad.wrt, "Values to differentiate (graph inputs or weights), or all-weights")
      ->required()->expected(1, -1);
  adCmd->add_option("-o", ad.output, "Output ONNX file (outputs: loss, grad_<name>...)")->required();
  adCmd->add_option("--dim", ad.dims, "NAME=VALUE for a symbolic input dimension; repeatable");
  adCmd->add_flag("--keep-outputs", ad.keepOutputs, "Keep the model's other outputs after the gradients");

  QuantizeArgs qa;
  auto* qCmd = app.add_subcommand("quantize", "Post-training int8 quantization: calibrate on sample inputs, write the model in ONNX's QDQ form");
  qCmd->add_option("model", qa.model, "ONNX model (float)")->required();
  qCmd->add_option("--calibration", qa.calibration, "Folders of input_<i>.pb files, or of test_data_set_* folders of them")
      ->required()->expected(1, -1);
  qCmd->add_option("-o", qa.output, "Output ONNX file (QDQ)")->required();
  qCmd->add_option("--method", qa.method, "Activation ranges: minmax (default), percentile or entropy (KL)")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy"}));
  qCmd->add_option("--percentile", qa.percentile, "With --method percentile: the kept part of each side, in % (default 99.999)")
      ->check(CLI::Range(50.0, 100.0));
  qCmd->add_flag("--per-tensor", qa.perTensor, "One weight scale per tensor (default: per output channel)");
  qCmd->add_option("--min-sqnr", qa.minSqnr, "Mixed precision: keep the most sensitive ops float until every output's SQNR on the calibration sets reaches this (dB)")
      ->check(CLI::Range(0.0, 200.0));
  qCmd->add_option("--dim", qa.dims, "NAME=VALUE for a symbolic input dimension; repeatable");

  TrainArgs tr;
  auto* trainCmd = app.add_subcommand("train", "Train a model's weights with one training-step graph (interpreter)");
  trainCmd->add_option("model", tr.model, "ONNX model (or IR text) whose graph computes a scalar loss")->required();
  trainCmd->add_option("--loss", tr.loss, "Name of the scalar loss value")->required();
  trainCmd->add_option("--data", tr.data, "NAME=FILE.npy training data for each model input (axis 0: samples)");
  trainCmd->add_option("--test-data", tr.testData, "NAME=FILE.npy test data, evaluated after each epoch");
  trainCmd->add_option("--accuracy", tr.accuracy, "LOGITS:LABELS: report argmax accuracy of output LOGITS vs input LABELS");
  trainCmd->add_option("--params", tr.params, "Weights to train (default: float constants of 2+ elements)")
      ->expected(1, -1);
  trainCmd->add_option("--optimizer", tr.optimizer, "sgd, momentum, adam or adamw (default adam)");
  trainCmd->add_option("--lr", tr.lr, "Learning rate (default 1e-3)")->check(CLI::PositiveNumber);
  trainCmd->add_option("--momentum", tr.momentum, "Momentum for sgd/momentum (default 0.9; sgd 0 = plain SGD)")->check(CLI::Range(0.0, 1.0));
  trainCmd->add_option("--weight-decay", tr.weightDecay, "Weight decay (L2 for sgd/momentum/adam, decoupled for adamw)")->check(kNonNegative);
  trainCmd->add_option("--batch", tr.batch, "Batch size when the model's batch dim is symbolic (default 32)")->check(CLI::PositiveNumber);
  trainCmd->add_option("--epochs", tr.epochs, "Epochs (default 10)")->check(kNonNegative);
  trainCmd->add_option("--eval-every", tr.evalEvery, "Evaluate the test data every N epochs (default 1)")->check(CLI::PositiveNumber);
  trainCmd->add_option("--seed", tr.seed, "Shuffling seed (default 0)");
  trainCmd->add_flag("--remat", tr.remat, "Recompute cheap activations in the backward part (less memory)");
  trainCmd->add_option("--export-step", tr.exportStep, "Write the training-step graph as ONNX");
  trainCmd->add_option("-o", tr.output, "Write the trained model (forward graph, new weights) as ONNX");
  trainCmd->add_option("--dim", tr.dims, "NAME=VALUE for a symbolic input dimension; repeatable");

  LoopOptArgs lo;
  auto* loCmd = app.add_subcommand("loop-opt", "Run loop IR passes on a .loop file (or on a model's lowered nodes)");
  loCmd->add_option("file", lo.file, ".loop text file, or an ONNX model / graph IR text to lower")->required();
  loCmd->add_option("--passes", lo.passes, "Comma-separated loop passes (simplify, unroll, split=VAR:N)");
  loCmd->add_flag("--print-ir-after-all", lo.printAfterAll, "Print the IR (stderr) after every pass");
  loCmd->add_flag("--print-ir-after-change", lo.printAfterChange, "Print the IR after passes that changed it");
  loCmd->add_flag("--time-passes", lo.timePasses, "Print each pass's time");
  loCmd->add_option("--stop-after", lo.stopAfter, "Stop after N pass runs (bisecting)")->check(kNonNegative);
  loCmd->add_flag("!--no-verify", lo.verifyEach, "Do not run the verifier after each pass");
  loCmd->add_option("--reproducer", lo.reproducer, "On a pass failure, write the IR before the pass here");

  CompileArgs cc;
  auto* ccCmd = app.add_subcommand("compile", "Compile a model: a shared library + plan + weights (--emit so), or a portable C99 bundle (--emit c)");
  ccCmd->add_option("model", cc.model, "ONNX model or IR text file")->required();
  ccCmd->add_option("-o", cc.outputDir, "Output folder")->required();
  ccCmd->add_option("--emit", cc.emit, "so (default: model.so, model.o, model.weights, model.plan) or c (model.c, model.h, model.weights)")->check(CLI::IsMember({"so", "c"}));
  ccCmd->add_option("--target", cc.target, "native (default), x86-64-avx2, x86-64-avx512, generic, with modifiers (e.g. native,-avx512f); cross: aarch64-linux-gnu, riscv64-linux-gnu");
  ccCmd->add_flag("--embed-weights", cc.embedWeights, "The weights in the artifact: --emit c, a const array in model_weights.c (flash/rodata; no stdio, no file to read); --static-runtime, read-only data of model.so / model.a");
  ccCmd->add_flag("--static-runtime", cc.staticRuntime, "--emit so: self-contained model.so (needs only libc/libm) and model.a with the runtime and the plan linked in, plus aicc_runtime.h; load with aicc_model_load_linked (docs/runtime.md)");
  ccCmd->add_option("--prefix", cc.prefix, "API prefix and file names (default model)");
  ccCmd->add_option(
      "--dim", cc.dims,
      "NAME=VALUE fixes a symbolic input dimension, NAME=LO..HI gives the range the artifact runs "
      "(default 1..16 for a batch, 1..1024 for other sizes); repeatable");
  ccCmd->add_option("--shape", cc.shapes, "NAME=D0,D1,... fixes input NAME's whole shape; repeatable");
  ccCmd->add_option("--specialize", cc.specializes,
                    "NAME=D0,D1,... adds a fixed-size variant for input NAME's shape, run when a "
                    "run's inputs have exactly those sizes (variants/K in the folder); repeatable");
  ccCmd->add_option("--select", cc.selects,
                    "NODE=CANDIDATE pins a node's kernel (loop, ukernel:<kernel>) over the cost "
                    "model; repeatable");
  ccCmd->add_option("-O", cc.optLevel, "Graph optimization level 0-3 (default 2)")->check(CLI::Range(0, 3));
  ccCmd->add_option("--tuning-cache", cc.tuningCache, "A cache written by `aicc tune`: measured choices override the cost model");
  addPrecisionOptions(ccCmd, cc.precision, cc.calibration);
  ccCmd->add_option("--report-html", cc.reportHtml, "Also write the compile report as one self-contained HTML page here (tasks, kernels, arena)");

  DebugNumericsArgs dn;
  auto* dnCmd = app.add_subcommand("debug-numerics", "Find the first node whose compiled (JIT) results differ from the reference interpreter's");
  dnCmd->add_option("model", dn.model, "ONNX model or IR text file")->required();
  dnCmd->add_option("--inputs-dir", dn.inputs.inputsDir, "Folder with input_<i>.pb files");
  dnCmd->add_option("--input", dn.inputs.named, "NAME=FILE (.pb or .npy); default: generated inputs");
  dnCmd->add_option("--dim", dn.dims, "NAME=VALUE for a symbolic input dimension; repeatable");
  dnCmd->add_option("-O", dn.optLevel, "Graph optimization level 0-3 (default 2)")->check(CLI::Range(0, 3));
  dnCmd->add_option("--rtol", dn.rtol, "Relative tolerance (default 1e-3)")->check(kNonNegative);
  dnCmd->add_option("--atol", dn.atol, "Absolute tolerance (default 1e-5)")->check(kNonNegative);
  dnCmd->add_option("--inject-fault", dn.injectFault, "Corrupt this node's compiled result (to test the tool)");

  ReportArgs rpt;
  auto* rptCmd = app.add_subcommand("report", "Write the compile report of a folder from `aicc compile` as one HTML page");
  rptCmd->add_option("dir", rpt.dir, "A folder written by aicc compile (--emit so)")->required();
  rptCmd->add_option("-o", rpt.output, "The page to write (default DIR/report.html)");

  TuneArgs tune;
  auto* tuneCmd = app.add_subcommand("tune", "Time each node's candidate kernels on this machine and write a tuning cache for `aicc compile --tuning-cache`");
  tuneCmd->add_option("model", tune.model, "ONNX model or IR text file")->required();
  tuneCmd->add_option("-o", tune.output, "The tuning cache to write (records already in it are kept)")->required();
  tuneCmd->add_option("--budget-s", tune.budgetSeconds, "Time budget in seconds (default 20)")->check(CLI::PositiveNumber);
  tuneCmd->add_option("--reps", tune.reps, "Timed runs per candidate (median; default 5)")->check(CLI::PositiveNumber);
  tuneCmd->add_option("--dim", tune.dims, "NAME=VALUE for a symbolic input dimension; repeatable");
  tuneCmd->add_option("--shape", tune.shapes, "NAME=D0,D1,... fixes input NAME's whole shape; repeatable");
  tuneCmd->add_option("-O", tune.optLevel, "Graph optimization level 0-3 (default 2)")->check(CLI::Range(0, 3));

  BenchArgs bench;
  auto* benchCmd = app.add_subcommand("bench", "Time whole-model runs (median latency), optionally with a per-node profile");
  benchCmd->add_option("model", bench.model, "ONNX model file")->required();
  benchCmd->add_option("--engine", bench.engine, "jit (default) or interp")->check(CLI::IsMember({"interp", "jit"}));
  benchCmd->add_option("--threads", bench.threads, "Worker threads, counting the caller (default 1)")->check(CLI::Range(1, aicc::runtime::kMaxThreads));
  benchCmd->add_option("--iters", bench.iters, "Timed runs (default 20)")->check(CLI::PositiveNumber);
  benchCmd->add_option("--warmup", bench.warmup, "Untimed runs first (default 3)")->check(kNonNegative);
  benchCmd->add_flag("--pin-threads", bench.pinThreads,
                     "Bind the threads to CPUs, the caller to the first (as AICC_PIN_THREADS=1)");
  benchCmd->add_option("--input", bench.inputs.named, "NAME=FILE (.pb or .npy); default: generated inputs");
  benchCmd->add_option("--inputs-dir", bench.inputs.inputsDir, "Folder with input_<i>.pb files");
  benchCmd->add_option("--dim", bench.dims, "NAME=VALUE for a symbolic input dimension; repeatable");
  addPrecisionOptions(benchCmd, bench.precision, bench.calibration);
  benchCmd->add_option("-O", bench.optLevel, "Graph optimization level 0-3 (default 2)")->check(CLI::Range(0, 3));
  benchCmd->add_option("--json", bench.json, "Write times_ms, median_ms, compile_s and the task list here");
  benchCmd->add_flag("--profile", bench.profile, "Time every task; print time per op type and the slowest tasks");
  benchCmd->add_option("--trace", bench.trace, "Write a Chrome/Perfetto trace of the timed runs here (one event per task and pool chunk, per thread)");
  benchCmd->add_option("--report-html", bench.reportHtml, "With a compiled folder and --profile: the HTML report with measured time per task and a roofline");
  benchCmd->add_option("--top", bench.top, "With --profile: how many tasks to list (default 15)")->check(kNonNegative);

  // One error contract: every failure is one "aicc: error: ..." line and exit status 1; status 2
  // ("internal error") is left for bugs (an exception that is not an aicc::Error).
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "aicc: error: " << e.what() << " (see --help)\n";
    return 1;
  }
  try {
    aicc::runtime::checkThreadsEnv();
    if (const char* env = std::getenv("AICC_MAX_MEMORY"); env && maxMemory.empty()) maxMemory = env;
    if (!maxMemory.empty()) aicc::setMemoryBudget(aicc::parseByteSize(maxMemory, "--max-memory"));
    if (*runCmd) return runCommand(run);
    if (*inspectCmd) return inspectCommand(inspect);
    if (*testCmd) return testOnnxCommand(test);
    if (*irCmd) return irCommand(ir);
    if (*optCmd) return optCommand(opt);
    if (*adCmd) return autodiffCommand(ad);
    if (*qCmd) return quantizeCommand(qa);
    if (*loCmd) return loopOptCommand(lo);
    if (*trainCmd) return trainCommand(tr);
    if (*ccCmd) return compileCommand(cc);
    if (*tuneCmd) return tuneCommand(tune);
    if (*benchCmd) return benchCommand(bench);
    if (*rptCmd) return reportCommand(rpt);
    if (*dnCmd) return debugNumericsCommand(dn);
  } catch (const aicc::Error& e) {
    std::cerr << "aicc: error: " << e.what() << "\n";
    return 1;
  } catch (const std::filesystem::filesystem_error& e) { // e.g. -o in an unwritable place
    std::string what = e.what(); // "filesystem error: cannot create directories: ... [path]"
    if (what.rfind("filesystem error: ", 0) == 0) what = what.substr(18);
    std::cerr << "aicc: error: " << what << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "aicc: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "aicc: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
