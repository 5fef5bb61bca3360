#include "codegen/llvm/jit.h"

#include "rt/parallel.h"
#include "support/error.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>

#include <chrono>
#include <mutex>

namespace aicc::codegen {

namespace {


template <typename T> T unwrap(llvm::Expected<T> v, const char* what) {
  if (!v) fail("LLVM JIT: {}: {}", what, llvm::toString(v.takeError()));
  return std::move(*v);
}

void check(llvm::Error e, const char* what) {
  if (e) fail("LLVM JIT: {}: {}", what, llvm::toString(std::move(e)));
}

std::string hostFeatures() {
  llvm::StringMap<bool> feats;
  std::string s;
  if (llvm::sys::getHostCPUFeatures(feats))
    for (const auto& f : feats) {
      if (!s.empty()) s += ",";
      s += (f.getValue() ? "+" : "-") + f.getKey().str();
    }
  return s;
}

llvm::orc::JITTargetMachineBuilder hostBuilder(int optLevel) {
  auto jtmb = unwrap(llvm::orc::JITTargetMachineBuilder::detectHost(), "detecting the host");
  jtmb.setCPU(llvm::sys::getHostCPUName().str());
  jtmb.getFeatures() = llvm::SubtargetFeatures(hostFeatures());
  jtmb.setCodeGenOptLevel(optLevel == 0   ? llvm::CodeGenOpt::None
                          : optLevel >= 3 ? llvm::CodeGenOpt::Aggressive
                                          : llvm::CodeGenOpt::Default);
  return jtmb;
}

} // namespace

void optimizeModule(llvm::Module& mod, llvm::TargetMachine& tm, int optLevel) {
  mod.setDataLayout(tm.createDataLayout());
  mod.setTargetTriple(tm.getTargetTriple().str());
  for (llvm::Function& f : mod) {
    if (f.isDeclaration()) continue;
    f.addFnAttr("target-cpu", tm.getTargetCPU());
    f.addFnAttr("target-features", tm.getTargetFeatureString());
  }
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = optLevel >= 2;
  pto.SLPVectorization = optLevel >= 2;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  if (optLevel <= 0) {
    mpm = pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
  } else {
    auto level = optLevel == 1   ? llvm::OptimizationLevel::O1
                 : optLevel == 2 ? llvm::OptimizationLevel::O2
                                 : llvm::OptimizationLevel::O3;
    mpm = pb.buildPerModuleDefaultPipeline(level);
  }
  mpm.run(mod, mam);
}

struct JitEngine::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::unique_ptr<llvm::TargetMachine> tm;
};

JitEngine::JitEngine(JitOptions opts) : impl_(std::make_unique<Impl>()), opts_(std::move(opts)) {
  initNativeTarget();
  auto jtmb = hostBuilder(opts_.optLevel);
  impl_->tm = unwrap(jtmb.createTargetMachine(), "creating the target machine");
  impl_->jit = unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(jtmb).create(),
                      "creating the JIT");
  auto& jd = impl_->jit->getMainJITDylib();
  char prefix = impl_->jit->getDataLayout().getGlobalPrefix();
  jd.addGenerator(unwrap(
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix), "process symbols"));
  std::map<std::string, void*> syms = opts_.symbols;
  syms["aicc_rt_parallel_for"] = reinterpret_cast<void*>(&aicc_rt_parallel_for);
  syms["aicc_rt_call_kernel"] = reinterpret_cast<void*>(&aicc_rt_call_kernel);
  llvm::orc::SymbolMap map;
  for (const auto& [name, addr] : syms)
    map[impl_->jit->mangleAndIntern(name)] = llvm::JITEvaluatedSymbol(
        llvm::pointerToJITTargetAddress(addr), llvm::JITSymbolFlags::Exported);
  check(jd.define(llvm::orc::absoluteSymbols(std::move(map))), "defining runtime symbols");
}

JitEngine::~JitEngine() = default;

std::string JitEngine::hostCpu() const { return impl_->tm->getTargetCPU().str(); }

void JitEngine::addModule(const loop::Module& m) {
  auto t0 = std::chrono::steady_clock::now();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  // Optimization remarks/warnings (e.g. "loop not vectorized" for libm calls) are not errors.
  ctx->setDiagnosticHandlerCallBack([](const llvm::DiagnosticInfo&, void*) {});
  std::unique_ptr<llvm::Module> mod = emitModule(m, *ctx, opts_.emit);
  optimizeModule(*mod, *impl_->tm, opts_.optLevel);
  if (opts_.keepIR) ir_ += printModule(*mod);
  check(impl_->jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(mod), std::move(ctx))),
        "adding a module");
  // Compile now (lookups trigger materialization) so compile time is measured here.
  for (const loop::Func& f : m.funcs) (void)lookup(f.name);
  compileSec_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

LoopFnPtr JitEngine::lookup(const std::string& name) {
  auto sym = unwrap(impl_->jit->lookup(name), "looking up a function");
  return reinterpret_cast<LoopFnPtr>(sym.getAddress());
}

} // namespace aicc::codegen
