#include "codegen/llvm/emit_llvm.h"

#include "codegen/llvm/emit_narrow.h"
#include "codegen/llvm/vector_math.h"
#include <cmath>

#include "support/error.h"

#include <llvm/Support/TargetSelect.h>

#include <mutex>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <map>
#include <vector>

namespace aicc::codegen {

using namespace aicc::loop;

bool supportedDType(DType t) {
  switch (t) {
  case DType::F32:
  case DType::F64:
  case DType::F16:
  case DType::BF16:
  case DType::I4:
  case DType::U4:
  case DType::I2:
  case DType::U2:
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F4E2M1:
  case DType::F8E8M0:
  case DType::Bool:
  case DType::I8:
  case DType::U8:
  case DType::I16:
  case DType::U16:
  case DType::I32:
  case DType::U32:
  case DType::I64:
  case DType::U64:
    return true;
  default:
    return false;
  }
}

namespace {

bool isUnsignedInt(DType t) {
  return t == DType::Bool || t == DType::U8 || t == DType::U16 || t == DType::U32 ||
         t == DType::U64 || t == DType::U4 || t == DType::U2;
}

class FuncEmitter {
public:
  FuncEmitter(const Func& f, llvm::Module& mod, const EmitOptions& opts)
      : f_(f), mod_(mod), ctx_(mod.getContext()), b_(ctx_), opts_(opts) {}

  void emitEntry() {
    for (const Buffer& p : f_.params)
      AICC_CHECK(supportedDType(p.dtype), "@{}: buffer %{} has element type {}, which the LLVM "
                 "emitter does not support yet", f_.name, p.name, dtypeName(p.dtype));
    auto* fnTy = llvm::FunctionType::get(b_.getInt32Ty(), {ptrPtrTy()}, false);
    llvm::Function* fn =
        llvm::Function::Create(fnTy, llvm::Function::ExternalLinkage, f_.name, mod_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->getArg(0)->setName("buffers");
    begin(fn, fn->getArg(0));
    emitBlock(f_.body);
    finish();
  }

private:
  llvm::Type* i8PtrTy() { return llvm::Type::getInt8PtrTy(ctx_); }
  llvm::Type* ptrPtrTy() { return i8PtrTy()->getPointerTo(); }

  llvm::Type* regTy(DType t) {
    switch (t) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::F8E4M3FN:
    case DType::F8E4M3FNUZ:
    case DType::F8E5M2:
    case DType::F8E5M2FNUZ:
    case DType::F4E2M1:
    case DType::F8E8M0:
      return b_.getFloatTy();
    case DType::F64:
      return b_.getDoubleTy();
    case DType::Bool:
      return b_.getInt1Ty();
    case DType::I8:
    case DType::U8:
    case DType::I4:
    case DType::U4:
    case DType::I2:
    case DType::U2:
      return b_.getInt8Ty();
    case DType::I16:
    case DType::U16:
      return b_.getInt16Ty();
    case DType::I32:
    case DType::U32:
      return b_.getInt32Ty();
    case DType::I64:
    case DType::U64:
      return b_.getInt64Ty();
    default:
      fail("@{}: element type {} is not supported by the LLVM emitter yet", f_.name,
           dtypeName(t));
    }
  }
  llvm::Type* memTy(DType t) {
    if (isByteFloat(t) || t == DType::F8E8M0) return b_.getInt8Ty();
    return t == DType::Bool ? b_.getInt8Ty() : isReduced(t) ? b_.getInt16Ty() : regTy(t);
  }

  llvm::Value* widen(DType t, llvm::Value* bits) { return widenNarrow(b_, mod_, t, bits); }
  llvm::Value* narrow(DType t, llvm::Value* f, bool saturate = true) {
    return narrowFloat(b_, mod_, t, f, saturate);
  }
  // An f32 value rounded to what type t holds (f16 / bf16 / float8 / float4), kept as f32;
  // saturate = false: float8 past its range to inf or NaN (narrowFloat).
  llvm::Value* roundTo(DType t, llvm::Value* f, bool saturate = true) {
    return isReduced(t) ? widen(t, narrow(t, f, saturate)) : f;
  }

  // Starts emitting into `fn`: entry block with the error flag and the typed buffer pointers.
  void begin(llvm::Function* fn, llvm::Value* buffers) {
    fn_ = fn;
    entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn);
    b_.SetInsertPoint(entry_);
    err_ = b_.CreateAlloca(b_.getInt32Ty(), nullptr, "err");
    b_.CreateStore(b_.getInt32(0), err_);
    bufs_.clear();
    for (size_t i = 0; i < f_.params.size(); ++i) {
      const Buffer& p = f_.params[i];
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(i8PtrTy(), buffers, i);
      llvm::Value* raw = b_.CreateLoad(i8PtrTy(), slot, p.name + ".raw");
      bufs_[p.name] = {b_.CreatePointerCast(raw, memTy(p.dtype)->getPointerTo(), p.name),
                       p.dtype};
    }
    buffersArg_ = buffers;
  }

  void finish() { b_.CreateRet(b_.CreateLoad(b_.getInt32Ty(), err_)); }

  void emitBlock(const Block& blk) {
    auto saved = env_;
    for (const Stmt& s : blk) emitStmt(s);
    env_ = std::move(saved);
  }

  void tagAccess(llvm::Instruction* inst) {
    if (!groups_.empty()) inst->setMetadata(llvm::LLVMContext::MD_access_group, groups_.back());
  }

  llvm::Value* elemPtr(const std::string& buf, const ExprPtr& index) {
    auto it = bufs_.find(buf);
    AICC_CHECK(it != bufs_.end(), "@{}: unknown buffer %{}", f_.name, buf);
    llvm::Value* idx = index ? emit(index) : b_.getInt64(0);
    return b_.CreateGEP(memTy(it->second.second), it->second.first, idx);
  }

  void emitStmt(const Stmt& s) {
    switch (s.kind) {
    case StmtKind::For:
      if (s.loop == LoopKind::Parallel && opts_.parallel && !outlined_)
        emitParallelFor(s);
      else
        emitFor(s);
      return;
    case StmtKind::Store: {
      DType t = bufs_.at(s.name).second;
      llvm::Value* v = emit(s.value);
      if (t == DType::Bool) v = b_.CreateZExt(v, b_.getInt8Ty());
      // Exact: the value is already rounded to t (not saturating, so an inf a saturate = 0
      // cast made stays inf).
      if (isReduced(t)) v = narrow(t, v, false);
      tagAccess(b_.CreateStore(v, elemPtr(s.name, s.index)));
      return;
    }
    case StmtKind::Let:
      env_[s.name] = emit(s.value);
      return;
    case StmtKind::If: {
      llvm::Value* c = emit(s.value);
      auto* thenBB = llvm::BasicBlock::Create(ctx_, "then", fn_);
      auto* elseBB = llvm::BasicBlock::Create(ctx_, "else", fn_);
      auto* joinBB = llvm::BasicBlock::Create(ctx_, "endif", fn_);
      b_.CreateCondBr(c, thenBB, elseBB);
      b_.SetInsertPoint(thenBB);
      emitBlock(s.body);
      b_.CreateBr(joinBB);
      b_.SetInsertPoint(elseBB);
      emitBlock(s.orelse);
      b_.CreateBr(joinBB);
      b_.SetInsertPoint(joinBB);
      return;
    }
    case StmtKind::Call:
      emitKernelCall(s);
      return;
    }
  }

  // for v in [lo, hi): header with a phi, body, latch carrying the loop metadata.
  void emitForRange(const Stmt& s, llvm::Value* lo, llvm::Value* hi) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, s.name + ".header", fn_);
    auto* body = llvm::BasicBlock::Create(ctx_, s.name + ".body", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, s.name + ".exit", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, s.name);
    iv->addIncoming(lo, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, hi), body, exit);
    b_.SetInsertPoint(body);
    llvm::MDNode* group = nullptr;
    if (s.loop == LoopKind::Vectorize) {
      group = llvm::MDNode::getDistinct(ctx_, {});
      groups_.push_back(group);
    }
    auto saved = env_;
    env_[s.name] = iv;
    emitBlock(s.body);
    env_ = std::move(saved);
    if (group) groups_.pop_back();
    llvm::Value* next = b_.CreateAdd(iv, b_.getInt64(1), s.name + ".next");
    llvm::BranchInst* latch = b_.CreateBr(header);
    iv->addIncoming(next, b_.GetInsertBlock());
    if (llvm::MDNode* md = loopMetadata(s, group)) latch->setMetadata("llvm.loop", md);
    b_.SetInsertPoint(exit);
  }

  void emitFor(const Stmt& s) { emitForRange(s, emit(s.lo), emit(s.hi)); }

  llvm::MDNode* loopMetadata(const Stmt& s, llvm::MDNode* group) {
    std::vector<llvm::Metadata*> ops{nullptr};
    auto flag = [&](const char* name, llvm::Constant* v) {
      ops.push_back(llvm::MDNode::get(
          ctx_, {llvm::MDString::get(ctx_, name), llvm::ConstantAsMetadata::get(v)}));
    };
    // Loops are unrolled only where the schedule says so: LLVM's own full and runtime
    // unrolling of these nests (constant trip counts everywhere) made straight-line blocks of
    // thousands of instructions, whose scheduling dominated compile time (0.2 s for a copy).
    auto noUnroll = [&] {
      ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")}));
    };
    if (s.loop == LoopKind::Vectorize) {
      flag("llvm.loop.vectorize.enable", b_.getTrue());
      flag("llvm.loop.vectorize.width", b_.getInt32(static_cast<uint32_t>(s.factor)));
      ops.push_back(llvm::MDNode::get(
          ctx_, {llvm::MDString::get(ctx_, "llvm.loop.parallel_accesses"), group}));
      noUnroll();
    } else if (s.loop == LoopKind::Unroll) {
      flag("llvm.loop.unroll.count", b_.getInt32(static_cast<uint32_t>(s.factor)));
    } else {
      noUnroll();
    }
    llvm::MDNode* md = llvm::MDNode::getDistinct(ctx_, ops);
    md->replaceOperandWith(0, md);
    return md;
  }

  // Outlines the loop body into NAME.par<k>(buffers, captures, begin, end) and calls
  // aicc_rt_parallel_for(body, buffers, captures, lo, hi).
  void emitParallelFor(const Stmt& s) {
    llvm::Value* lo = emit(s.lo);
    llvm::Value* hi = emit(s.hi);
    std::vector<std::pair<std::string, llvm::Value*>> caps(env_.begin(), env_.end());
    auto* i64 = b_.getInt64Ty();
    auto* bodyTy = llvm::FunctionType::get(
        b_.getInt32Ty(), {ptrPtrTy(), i64->getPointerTo(), i64, i64}, false);
    auto* body = llvm::Function::Create(bodyTy, llvm::Function::InternalLinkage,
                                        f_.name + ".par" + std::to_string(parCount_++), mod_);
    body->addFnAttr(llvm::Attribute::NoUnwind);
    // Caller side: spill the captured scalars into an i64 array (allocated in the entry block).
    llvm::IRBuilder<> eb(entry_, entry_->begin());
    llvm::Value* capArr =
        eb.CreateAlloca(i64, b_.getInt64(std::max<size_t>(caps.size(), 1)), "caps");
    for (size_t i = 0; i < caps.size(); ++i)
      b_.CreateStore(toSlot(caps[i].second), b_.CreateConstGEP1_64(i64, capArr, i));
    llvm::Function* tramp = runtimeFn();
    llvm::Value* rc = b_.CreateCall(
        tramp, {b_.CreatePointerCast(body, tramp->getFunctionType()->getParamType(0)),
                buffersArg_, capArr, lo, hi});
    b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt32Ty(), err_), rc), err_);
    // Body side: a fresh emitter state.
    auto savedBlock = b_.GetInsertBlock();
    auto savedFn = fn_;
    auto savedEntry = entry_;
    auto savedErr = err_;
    auto savedBufs = bufs_;
    auto savedEnv = env_;
    auto savedBuffersArg = buffersArg_;
    begin(body, body->getArg(0));
    env_.clear();
    for (size_t i = 0; i < caps.size(); ++i) {
      llvm::Value* slot =
          b_.CreateLoad(i64, b_.CreateConstGEP1_64(i64, body->getArg(1), i), caps[i].first);
      env_[caps[i].first] = fromSlot(slot, caps[i].second->getType());
    }
    outlined_ = true;
    Stmt serial = s;
    serial.loop = LoopKind::Serial;
    emitForRange(serial, body->getArg(2), body->getArg(3));
    outlined_ = false;
    finish();
    fn_ = savedFn;
    entry_ = savedEntry;
    err_ = savedErr;
    bufs_ = std::move(savedBufs);
    env_ = std::move(savedEnv);
    buffersArg_ = savedBuffersArg;
    b_.SetInsertPoint(savedBlock);
  }

  llvm::Value* toSlot(llvm::Value* v) {
    llvm::Type* t = v->getType();
    if (t->isFloatTy()) return b_.CreateZExt(b_.CreateBitCast(v, b_.getInt32Ty()), b_.getInt64Ty());
    if (t->isDoubleTy()) return b_.CreateBitCast(v, b_.getInt64Ty());
    return b_.CreateZExtOrBitCast(v, b_.getInt64Ty());
  }
  llvm::Value* fromSlot(llvm::Value* v, llvm::Type* t) {
    if (t->isFloatTy()) return b_.CreateBitCast(b_.CreateTrunc(v, b_.getInt32Ty()), t);
    if (t->isDoubleTy()) return b_.CreateBitCast(v, t);
    return b_.CreateTruncOrBitCast(v, t);
  }

  llvm::Function* runtimeFn() {
    auto* i64 = b_.getInt64Ty();
    auto* bodyPtr = llvm::FunctionType::get(b_.getInt32Ty(),
                                            {ptrPtrTy(), i64->getPointerTo(), i64, i64}, false)
                        ->getPointerTo();
    auto* ty = llvm::FunctionType::get(b_.getInt32Ty(),
                                       {bodyPtr, ptrPtrTy(), i64->getPointerTo(), i64, i64}, false);
    auto callee = mod_.getOrInsertFunction("aicc_rt_parallel_for", ty);
    return llvm::cast<llvm::Function>(callee.getCallee());
  }

  // call @k(args) -> aicc_rt_call_kernel("k", n, slots, kinds): each argument in one i64 slot
  // (buffer: element address, kind 0; integer: value, kind 1; float: double bits, kind 2).
  void emitKernelCall(const Stmt& s) {
    auto* i64 = b_.getInt64Ty();
    size_t n = s.args.size();
    llvm::IRBuilder<> eb(entry_, entry_->begin());
    llvm::Value* slots = eb.CreateAlloca(i64, b_.getInt64(std::max<size_t>(n, 1)), "kargs");
    llvm::Value* kinds = eb.CreateAlloca(b_.getInt32Ty(), b_.getInt64(std::max<size_t>(n, 1)),
                                         "kkinds");
    for (size_t i = 0; i < n; ++i) {
      const CallArg& a = s.args[i];
      llvm::Value* v;
      int kind;
      if (!a.buffer.empty()) {
        v = b_.CreatePtrToInt(elemPtr(a.buffer, a.offset), i64);
        kind = 0;
      } else if (isFloat(a.value->type)) {
        v = b_.CreateBitCast(b_.CreateFPCast(emit(a.value), b_.getDoubleTy()), i64);
        kind = 2;
      } else {
        v = emit(a.value);
        v = isUnsignedInt(a.value->type) ? b_.CreateZExt(v, i64) : b_.CreateSExtOrBitCast(v, i64);
        kind = 1;
      }
      b_.CreateStore(v, b_.CreateConstGEP1_64(i64, slots, i));
      b_.CreateStore(b_.getInt32(kind), b_.CreateConstGEP1_64(b_.getInt32Ty(), kinds, i));
    }
    auto* ty = llvm::FunctionType::get(
        b_.getInt32Ty(), {i8PtrTy(), i64, i64->getPointerTo(), b_.getInt32Ty()->getPointerTo()},
        false);
    auto callee = mod_.getOrInsertFunction("aicc_rt_call_kernel", ty);
    llvm::Value* name = b_.CreateGlobalStringPtr(s.name, "kname." + s.name);
    llvm::Value* rc = b_.CreateCall(callee, {name, b_.getInt64(n), slots, kinds});
    b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt32Ty(), err_), rc), err_);
  }

  llvm::Value* intrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Type*> tys,
                         std::vector<llvm::Value*> args) {
    return b_.CreateCall(llvm::Intrinsic::getDeclaration(&mod_, id, tys), args);
  }

  llvm::Value* libm(const char* name, std::vector<llvm::Value*> args) {
    std::vector<llvm::Type*> tys(args.size(), b_.getDoubleTy());
    auto callee =
        mod_.getOrInsertFunction(name, llvm::FunctionType::get(b_.getDoubleTy(), tys, false));
    auto* call = b_.CreateCall(callee, args);
    call->setDoesNotThrow();
    return call;
  }

  llvm::Value* emitMath(const std::string& fn, DType t, std::vector<llvm::Value*> args) {
    llvm::Type* ty = regTy(t);
    // Exact in the argument's own type.
    if (fn == "abs") return intrinsic(llvm::Intrinsic::fabs, {ty}, args);
    if (fn == "floor") return intrinsic(llvm::Intrinsic::floor, {ty}, args);
    if (fn == "ceil") return intrinsic(llvm::Intrinsic::ceil, {ty}, args);
    // Half to even as nearbyint in the default rounding mode (which nothing here changes):
    // LLVM 14's loop vectorizer widens nearbyint but not roundeven, which left every loop
    // with a round (QuantizeLinear, QLinearAdd, ...) scalar.
    if (fn == "round") return intrinsic(llvm::Intrinsic::nearbyint, {ty}, args);
    if (fn == "sqrt") return intrinsic(llvm::Intrinsic::sqrt, {ty}, args); // correctly rounded
    // f32: vectorizable inline approximations (a few ulp, codegen/llvm/vector_math.h).
    if (t == DType::F32 && args.size() == 1) {
      if (fn == "exp") return emitExpF32(b_, args[0]);
      if (fn == "sigmoid") return emitSigmoidF32(b_, args[0]);
      if (fn == "tanh") return emitTanhF32(b_, args[0]);
      if (fn == "erf") return emitErfF32(b_, args[0]);
    }
    // Computed in double through libm and rounded, as the reference executor does.
    for (auto& a : args) a = b_.CreateFPExt(a, b_.getDoubleTy());
    llvm::Value* r;
    if (fn == "sigmoid") {
      llvm::Value* x = args[0];
      llvm::Value* one = llvm::ConstantFP::get(b_.getDoubleTy(), 1.0);
      llvm::Value* e = libm("exp", {b_.CreateSelect(
                                       b_.CreateFCmpOGE(x, llvm::ConstantFP::get(x->getType(), 0)),
                                       b_.CreateFNeg(x), x)});
      llvm::Value* pos = b_.CreateFDiv(one, b_.CreateFAdd(one, e));
      llvm::Value* negv = b_.CreateFDiv(e, b_.CreateFAdd(one, e));
      r = b_.CreateSelect(b_.CreateFCmpOGE(x, llvm::ConstantFP::get(x->getType(), 0)), pos, negv);
    } else {
      auto it = loop::mathFunctions().find(fn);
      AICC_CHECK(it != loop::mathFunctions().end() && it->second.libm,
                 "@{}: math function '{}' is not supported by the LLVM emitter", f_.name, fn);
      r = libm(it->second.libm, args);
    }
    return b_.CreateFPCast(r, ty);
  }

  llvm::Value* emitCast(DType to, DType from, llvm::Value* v, bool saturate = true) {
    llvm::Type* toTy = regTy(to);
    if (to == from) return v;
    // Through f32 as the reference does (f64 -> f32 -> f16 rounds twice there too); a reduced
    // value in a register is an exact f32.
    if (isReduced(to)) return roundTo(to, emitCast(DType::F32, from, v), saturate);
    if (isReduced(from)) return emitCast(to, DType::F32, v);
    // 4/2-bit integers: one value per byte (as ir/tensor.h stores them); casts into them wrap to
    // their width as the reference's Cast does (elementwise_cast.cpp's storeInt).
    if (isSubByteInt(from)) return emitCast(to, isUnsignedInt(from) ? DType::U8 : DType::I8, v);
    if (isSubByteInt(to)) { // through i64 (floats truncate, NaN -> 0), then wrapped to the width
      const int64_t bits = to == DType::I4 || to == DType::U4 ? 4 : 2, mask = (1 << bits) - 1;
      llvm::Value* w = b_.CreateAnd(emitCast(DType::I64, from, v), b_.getInt64(mask));
      if (!isUnsignedInt(to)) { // sign-extend the low bits: ((w ^ sign) - sign)
        const int64_t sign = int64_t(1) << (bits - 1);
        w = b_.CreateSub(b_.CreateXor(w, b_.getInt64(sign)), b_.getInt64(sign));
      }
      return b_.CreateTrunc(w, toTy);
    }
    if (to == DType::Bool)
      return isFloat(from) ? b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0))
                           : b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    if (isFloat(to)) {
      if (isFloat(from)) return b_.CreateFPCast(v, toTy);
      // Through double like the executor (exact for <= 32-bit integers; 64-bit rounds twice).
      llvm::Type* mid = dtypeSize(from) == 8 ? b_.getDoubleTy() : toTy;
      llvm::Value* d =
          isUnsignedInt(from) ? b_.CreateUIToFP(v, mid) : b_.CreateSIToFP(v, mid);
      return b_.CreateFPCast(d, toTy);
    }
    if (isFloat(from) && dtypeSize(to) <= 2) {
      // Saturating to a narrow integer as select / clamp / convert, the same values as
      // llvm.fpto[su]i.sat (NaN -> 0; the bounds are exact in any float type), which LLVM 14's
      // loop vectorizer does not widen: every loop storing u8/i8 (QuantizeLinear, QLinearAdd)
      // stayed scalar.
      const bool u = isUnsignedInt(to);
      const double lo = u ? 0.0 : -std::ldexp(1.0, 8 * int(dtypeSize(to)) - 1);
      const double hi = u ? std::ldexp(1.0, 8 * int(dtypeSize(to))) - 1 : -lo - 1;
      llvm::Type* ft = v->getType();
      llvm::Value* z = b_.CreateSelect(b_.CreateFCmpUNO(v, v), llvm::ConstantFP::get(ft, 0.0), v);
      z = intrinsic(llvm::Intrinsic::maxnum, {ft}, {z, llvm::ConstantFP::get(ft, lo)});
      z = intrinsic(llvm::Intrinsic::minnum, {ft}, {z, llvm::ConstantFP::get(ft, hi)});
      return u ? b_.CreateFPToUI(z, toTy) : b_.CreateFPToSI(z, toTy);
    }
    if (isFloat(from))
      return intrinsic(isUnsignedInt(to) ? llvm::Intrinsic::fptoui_sat
                                         : llvm::Intrinsic::fptosi_sat,
                       {toTy, v->getType()}, {v});
    return isUnsignedInt(from) ? b_.CreateZExtOrTrunc(v, toTy) : b_.CreateSExtOrTrunc(v, toTy);
  }

  llvm::Value* emitIntDiv(Op op, DType t, llvm::Value* a, llvm::Value* d) {
    llvm::Type* ty = a->getType();
    llvm::Value* zero = llvm::ConstantInt::get(ty, 0);
    llvm::Value* one = llvm::ConstantInt::get(ty, 1);
    llvm::Value* isZero = b_.CreateICmpEQ(d, zero);
    b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt32Ty(), err_),
                               b_.CreateZExt(isZero, b_.getInt32Ty())),
                   err_);
    if (isUnsignedInt(t)) {
      llvm::Value* safe = b_.CreateSelect(isZero, one, d);
      return op == Op::Div ? b_.CreateUDiv(a, safe) : b_.CreateURem(a, safe);
    }
    llvm::Value* isM1 = b_.CreateICmpEQ(d, llvm::ConstantInt::get(ty, -1, true));
    llvm::Value* safe = b_.CreateSelect(b_.CreateOr(isZero, isM1), one, d);
    llvm::Value* q = op == Op::Div ? b_.CreateSDiv(a, safe) : b_.CreateSRem(a, safe);
    return b_.CreateSelect(isM1, op == Op::Div ? b_.CreateSub(zero, a) : zero, q);
  }

  llvm::Value* emitBinary(Op op, DType t, llvm::Value* a, llvm::Value* c) {
    if (isFloat(t)) {
      switch (op) {
      case Op::Add: return b_.CreateFAdd(a, c);
      case Op::Sub: return b_.CreateFSub(a, c);
      case Op::Mul: return b_.CreateFMul(a, c);
      case Op::Div: return b_.CreateFDiv(a, c);
      case Op::Mod: return b_.CreateFRem(a, c);
      case Op::Min: return intrinsic(llvm::Intrinsic::minnum, {a->getType()}, {a, c});
      case Op::Max: return intrinsic(llvm::Intrinsic::maxnum, {a->getType()}, {a, c});
      case Op::Lt: return b_.CreateFCmpOLT(a, c);
      case Op::Le: return b_.CreateFCmpOLE(a, c);
      case Op::Gt: return b_.CreateFCmpOGT(a, c);
      case Op::Ge: return b_.CreateFCmpOGE(a, c);
      case Op::Eq: return b_.CreateFCmpOEQ(a, c);
      case Op::Ne: return b_.CreateFCmpUNE(a, c);
      default: break;
      }
      fail("@{}: operator {} is not defined on {}", f_.name, opName(op), dtypeName(t));
    }
    bool u = isUnsignedInt(t);
    switch (op) {
    case Op::Add: return b_.CreateAdd(a, c);
    case Op::Sub: return b_.CreateSub(a, c);
    case Op::Mul: return b_.CreateMul(a, c);
    case Op::Div:
    case Op::Mod: return emitIntDiv(op, t, a, c);
    case Op::Min: return b_.CreateSelect(u ? b_.CreateICmpULE(a, c) : b_.CreateICmpSLE(a, c), a, c);
    case Op::Max: return b_.CreateSelect(u ? b_.CreateICmpUGE(a, c) : b_.CreateICmpSGE(a, c), a, c);
    case Op::Lt: return u ? b_.CreateICmpULT(a, c) : b_.CreateICmpSLT(a, c);
    case Op::Le: return u ? b_.CreateICmpULE(a, c) : b_.CreateICmpSLE(a, c);
    case Op::Gt: return u ? b_.CreateICmpUGT(a, c) : b_.CreateICmpSGT(a, c);
    case Op::Ge: return u ? b_.CreateICmpUGE(a, c) : b_.CreateICmpSGE(a, c);
    case Op::Eq: return b_.CreateICmpEQ(a, c);
    case Op::Ne: return b_.CreateICmpNE(a, c);
    case Op::And:
    case Op::BitAnd:
      return b_.CreateAnd(a, c);
    case Op::Or:
    case Op::BitOr:
      return b_.CreateOr(a, c);
    case Op::BitXor:
      return b_.CreateXor(a, c);
    case Op::Shl:
    case Op::Shr: { // LLVM's shifts by the width or more are poison: guarded
      const unsigned w = a->getType()->getIntegerBitWidth();
      auto k = [&](uint64_t v) { return llvm::ConstantInt::get(a->getType(), v); };
      llvm::Value* big = b_.CreateICmpUGE(c, k(w));
      if (op == Op::Shr && !u) return b_.CreateAShr(a, b_.CreateSelect(big, k(w - 1), c));
      llvm::Value* s = b_.CreateSelect(big, k(0), c);
      return b_.CreateSelect(big, k(0), op == Op::Shl ? b_.CreateShl(a, s) : b_.CreateLShr(a, s));
    }
    default: break;
    }
    fail("@{}: operator {} is not defined on {}", f_.name, opName(op), dtypeName(t));
  }

  // An expression's value; f16 / bf16 results rounded to their type (loads, variables, selects
  // and negations of rounded values are exact; casts round themselves).
  llvm::Value* emit(const ExprPtr& e) {
    llvm::Value* v = emitRaw(e);
    const bool exact = e->op == Op::Load || e->op == Op::Var || e->op == Op::Select ||
                       e->op == Op::Cast || e->op == Op::Neg;
    return isReduced(e->type) && !exact ? roundTo(e->type, v) : v;
  }

  llvm::Value* emitRaw(const ExprPtr& e) {
    switch (e->op) {
    case Op::IntImm:
      return llvm::ConstantInt::get(regTy(e->type), static_cast<uint64_t>(e->i), true);
    case Op::FloatImm:
      return llvm::ConstantFP::get(regTy(e->type), e->f);
    case Op::Var: {
      auto it = env_.find(e->name);
      AICC_CHECK(it != env_.end(), "@{}: unbound variable %{}", f_.name, e->name);
      return it->second;
    }
    case Op::Load: {
      DType t = e->type;
      auto* ld = b_.CreateLoad(memTy(t), elemPtr(e->name, e->args[0]));
      tagAccess(ld);
      if (isReduced(t)) return widen(t, ld);
      return t == DType::Bool ? b_.CreateICmpNE(ld, b_.getInt8(0)) : ld;
    }
    case Op::Not:
      return b_.CreateXor(emit(e->args[0]), b_.getTrue());
    case Op::Neg: {
      llvm::Value* a = emit(e->args[0]);
      return isFloat(e->type) ? b_.CreateFNeg(a) : b_.CreateNeg(a);
    }
    case Op::Select:
      return b_.CreateSelect(emit(e->args[0]), emit(e->args[1]), emit(e->args[2]));
    case Op::Cast:
      return emitCast(e->type, e->args[0]->type, emit(e->args[0]), e->i == 0);
    case Op::Bitcast: { // a bool is its byte in memory: 0 or 1 either way
      llvm::Value* a = emit(e->args[0]);
      if (e->args[0]->type == DType::Bool) return b_.CreateZExt(a, regTy(e->type));
      if (e->type == DType::Bool)
        return b_.CreateICmpNE(a, llvm::ConstantInt::get(a->getType(), 0));
      return b_.CreateBitCast(a, regTy(e->type));
    }
    case Op::Call: {
      std::vector<llvm::Value*> args;
      for (const auto& a : e->args) args.push_back(emit(a));
      return emitMath(e->name, e->type, std::move(args));
    }
    default:
      break;
    }
    AICC_CHECK(isBinary(e->op), "@{}: unexpected expression {}", f_.name, opName(e->op));
    DType t = e->args[0]->type;
    return emitBinary(e->op, t, emit(e->args[0]), emit(e->args[1]));
  }

  const Func& f_;
  llvm::Module& mod_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  EmitOptions opts_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::Value* err_ = nullptr;
  llvm::Value* buffersArg_ = nullptr;
  std::map<std::string, std::pair<llvm::Value*, DType>> bufs_;
  std::map<std::string, llvm::Value*> env_;
  std::vector<llvm::MDNode*> groups_;
  bool outlined_ = false;
  int parCount_ = 0;
};

} // namespace

void emitFunc(const Func& f, llvm::Module& mod, const EmitOptions& opts) {
  AICC_CHECK(!mod.getFunction(f.name), "function @{} is emitted twice", f.name);
  FuncEmitter(f, mod, opts).emitEntry();
}

std::unique_ptr<llvm::Module> emitModule(const Module& m, llvm::LLVMContext& ctx,
                                         const EmitOptions& opts) {
  auto mod = std::make_unique<llvm::Module>("aicc_loops", ctx);
  for (const Func& f : m.funcs) emitFunc(f, *mod, opts);
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (llvm::verifyModule(*mod, &os)) fail("LLVM emitter produced an invalid module: {}", os.str());
  return mod;
}

std::string printModule(const llvm::Module& mod) {
  std::string s;
  llvm::raw_string_ostream os(s);
  mod.print(os, nullptr);
  return os.str();
}

void initNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

} // namespace aicc::codegen
