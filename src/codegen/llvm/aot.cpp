#include "codegen/llvm/aot.h"

#include "codegen/llvm/emit_llvm.h"
#include "support/error.h"

#include <llvm/ADT/Triple.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <mutex>

namespace aicc::codegen {

namespace {


// Turns each declaration of a runtime entry point into an internal thunk calling through a
// pointer slot, and adds aicc_artifact_bind to fill the slots.
void bindRuntimeThroughTable(llvm::Module& mod) {
  llvm::LLVMContext& ctx = mod.getContext();
  const char* names[] = {"aicc_rt_call_kernel", "aicc_rt_parallel_for"};
  llvm::Type* i8p = llvm::Type::getInt8PtrTy(ctx);
  std::vector<llvm::GlobalVariable*> slots;
  for (const char* name : names) {
    auto* slot = new llvm::GlobalVariable(mod, i8p, false, llvm::GlobalValue::InternalLinkage,
                                          llvm::ConstantPointerNull::get(
                                              llvm::cast<llvm::PointerType>(i8p)),
                                          std::string(name) + ".slot");
    slots.push_back(slot);
    llvm::Function* f = mod.getFunction(name);
    if (!f || !f->isDeclaration()) continue;
    f->setLinkage(llvm::GlobalValue::InternalLinkage);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
    llvm::Value* target =
        b.CreateBitCast(b.CreateLoad(i8p, slot), f->getFunctionType()->getPointerTo());
    std::vector<llvm::Value*> args;
    for (llvm::Argument& a : f->args()) args.push_back(&a);
    b.CreateRet(b.CreateCall(f->getFunctionType(), target, args));
  }
  auto* bindTy = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {i8p->getPointerTo()}, false);
  auto* bind = llvm::Function::Create(bindTy, llvm::GlobalValue::ExternalLinkage,
                                      "aicc_artifact_bind", mod);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", bind));
  llvm::Value* table = bind->getArg(0);
  for (size_t i = 0; i < slots.size(); ++i)
    b.CreateStore(b.CreateLoad(i8p, b.CreateConstGEP1_64(i8p, table, i)), slots[i]);
  b.CreateRetVoid();
}

// Exports the parameter sizes of every task function as the string
// `aicc_artifact_signature`: one line "name bytes0/elem0 bytes1/elem1 ..." per Func (byte size and
// element size, the alignment a binding's offset needs). The loader checks each
// plan task's bindings against it, so a plan that does not belong to this library (or lost or
// shrank a binding) is refused instead of passing a kernel a buffer it overruns.
void addSignature(llvm::Module& mod, const loop::Module& m) {
  std::string sig;
  for (const loop::Func& f : m.funcs) {
    sig += f.name;
    for (const loop::Buffer& b : f.params)
      sig += fmt::format(" {}/{}", b.numel() * int64_t(dtypeSize(b.dtype)),
                         std::max<size_t>(1, dtypeSize(b.dtype)));
    sig += "\n";
  }
  llvm::Constant* init = llvm::ConstantDataArray::getString(mod.getContext(), sig, true);
  new llvm::GlobalVariable(mod, init->getType(), true, llvm::GlobalValue::ExternalLinkage, init,
                           "aicc_artifact_signature");
}

} // namespace

std::pair<std::string, std::string> llvmCpuFor(const Target& t) {
  if (t.arch == "aarch64") return {"generic", "+neon"};
  if (t.arch == "riscv64") return {"generic-rv64", "+m,+a,+f,+d,+c"}; // rv64gc
  // Every feature aicc knows, on or off as the target says (a native target's name is the host
  // CPU's, so scheduling models match; modifiers such as native,-avx512f still turn features off).
  std::string s;
  for (uint32_t i = 0; i < static_cast<uint32_t>(CpuFeature::Count); ++i) {
    std::string_view n = cpuFeatureName(static_cast<CpuFeature>(i));
    s += (s.empty() ? "" : ",") + std::string(t.features >> i & 1 ? "+" : "-") + std::string(n);
  }
  bool native = t.name.rfind("native", 0) == 0;
  return {native ? llvm::sys::getHostCPUName().str() : std::string("x86-64"), s};
}

std::string emitObject(const loop::Module& m, const Target& target, const AotOptions& o) {
  initNativeTarget();
  std::string triple = llvm::sys::getDefaultTargetTriple(), err;
  if (!target.triple.empty()) { // a cross target: every backend of libLLVM, once
    static std::once_flag once;
    std::call_once(once, [] {
      llvm::InitializeAllTargetInfos();
      llvm::InitializeAllTargets();
      llvm::InitializeAllTargetMCs();
      llvm::InitializeAllAsmPrinters();
    });
    triple = llvm::Triple::normalize(target.triple);
  }
  const llvm::Target* lt = llvm::TargetRegistry::lookupTarget(triple, err);
  AICC_CHECK(lt, "AOT: no LLVM target for {}: {}", triple, err);
  auto [cpu, features] = llvmCpuFor(target);
  llvm::TargetOptions to;
  if (target.arch == "riscv64") to.MCOptions.ABIName = "lp64d"; // Debian's riscv64 ABI
  std::unique_ptr<llvm::TargetMachine> tm(lt->createTargetMachine(
      triple, cpu, features, to, llvm::Reloc::PIC_, llvm::None,
      o.optLevel == 0 ? llvm::CodeGenOpt::None : llvm::CodeGenOpt::Default));
  AICC_CHECK(tm, "AOT: cannot create a target machine for {} ({})", triple, cpu);
  llvm::LLVMContext ctx;
  // Optimization remarks (e.g. "loop not vectorized" for libm calls) are not errors.
  ctx.setDiagnosticHandlerCallBack([](const llvm::DiagnosticInfo&, void*) {});
  EmitOptions eo;
  eo.parallel = o.parallel;
  std::unique_ptr<llvm::Module> mod = emitModule(m, ctx, eo);
  bindRuntimeThroughTable(*mod);
  addSignature(*mod, m);
  optimizeModule(*mod, *tm, o.optLevel);
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  AICC_CHECK(!tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile),
             "AOT: the target cannot emit object files");
  pm.run(*mod);
  return std::string(buf.begin(), buf.end());
}

} // namespace aicc::codegen
