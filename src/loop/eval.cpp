#include "loop/eval.h"

#include "loop/printer.h"
#include "loop/scalar.h"
#include "support/error.h"

namespace aicc::loop {

namespace {

class Evaluator {
public:
  Evaluator(const Func& f, std::map<std::string, Tensor>& bufs, const EvalOptions& o)
      : f_(f), bufs_(bufs), opts_(o) {}

  void run() {
    for (const auto& b : f_.params) {
      auto it = bufs_.find(b.name);
      if (it == bufs_.end()) {
        AICC_CHECK(b.role != Role::In, "@{}: input buffer {} is not bound", f_.name,
                   varName(b.name));
        it = bufs_.emplace(b.name, Tensor(b.dtype, b.shape)).first;
      }
      const Tensor& t = it->second;
      AICC_CHECK(t.dtype() == b.dtype && t.numel() == b.numel(),
                 "@{}: buffer {} is declared {}{} but bound to a {}{} tensor", f_.name,
                 varName(b.name), dtypeName(b.dtype), formatDims(b.shape), dtypeName(t.dtype()),
                 formatDims(t.shape()));
      tensors_[b.name] = &it->second;
    }
    block(f_.body);
  }

private:
  Tensor& tensor(const std::string& n) {
    auto it = tensors_.find(n);
    AICC_CHECK(it != tensors_.end(), "@{}: unknown buffer {}", f_.name, varName(n));
    return *it->second;
  }

  int64_t checkedIndex(const Tensor& t, const std::string& buf, int64_t i, const char* what) {
    if (i < 0 || i >= t.numel())
      fail("@{}: {} {}[{}] is out of range (the buffer has {} elements)", f_.name, what,
           varName(buf), i, t.numel());
    return i;
  }

  Scalar read(const Tensor& t, int64_t i) {
    Scalar v;
    if (isFloat(t.dtype()))
      v.f = t.getF64(i);
    else
      v.i = t.getI64(i);
    return v;
  }

  void write(Tensor& t, int64_t i, Scalar v) {
    if (isFloat(t.dtype()))
      t.setF64(i, v.f);
    else
      t.setI64(i, v.i);
  }

  Scalar lookup(const std::string& n) {
    for (auto it = env_.rbegin(); it != env_.rend(); ++it)
      if (it->first == n) return it->second;
    fail("@{}: variable {} is not bound", f_.name, varName(n));
  }

  Scalar eval(const ExprPtr& e) {
    switch (e->op) {
    case Op::IntImm: {
      Scalar v;
      v.i = e->i;
      return v;
    }
    case Op::FloatImm: {
      Scalar v;
      v.f = e->f;
      return v;
    }
    case Op::Var:
      return lookup(e->name);
    case Op::Load: {
      Tensor& t = tensor(e->name);
      int64_t i = eval(e->args[0]).i;
      return read(t, checkedIndex(t, e->name, i, "load"));
    }
    case Op::Not:
    case Op::Neg:
      return applyUnary(e->op, e->type, eval(e->args[0]));
    case Op::Select: {
      // Both arms are evaluated (the IR's select is eager, like a vector blend).
      Scalar c = eval(e->args[0]), a = eval(e->args[1]), b = eval(e->args[2]);
      return c.i ? a : b;
    }
    case Op::Cast:
      return applyCast(e->type, e->args[0]->type, eval(e->args[0]), e->i == 0);
    case Op::Bitcast:
      return applyBitcast(e->type, e->args[0]->type, eval(e->args[0]));
    case Op::Call: {
      std::vector<Scalar> args;
      for (const auto& a : e->args) args.push_back(eval(a));
      return applyCall(e->name, e->type, args);
    }
    default:
      break;
    }
    Scalar a = eval(e->args[0]), b = eval(e->args[1]);
    auto r = applyBinary(e->op, e->args[0]->type, a, b);
    if (!r) fail("@{}: division by zero in {}", f_.name, printExpr(e));
    return *r;
  }

  void block(const Block& b) {
    size_t mark = env_.size();
    for (const auto& s : b) stmt(s);
    env_.resize(mark);
  }

  void stmt(const Stmt& s) {
    switch (s.kind) {
    case StmtKind::For: {
      int64_t lo = eval(s.lo).i, hi = eval(s.hi).i;
      env_.push_back({s.name, Scalar{}});
      size_t slot = env_.size() - 1;
      for (int64_t i = lo; i < hi; ++i) {
        env_[slot].second.i = i;
        block(s.body);
      }
      env_.pop_back();
      return;
    }
    case StmtKind::Store: {
      Tensor& t = tensor(s.name);
      int64_t i = checkedIndex(t, s.name, eval(s.index).i, "store");
      write(t, i, eval(s.value));
      return;
    }
    case StmtKind::Let:
      env_.push_back({s.name, eval(s.value)});
      return;
    case StmtKind::If:
      block(eval(s.value).i ? s.body : s.orelse);
      return;
    case StmtKind::Call: {
      auto it = opts_.kernels.find(s.name);
      std::optional<ExternKernel> builtin;
      if (it == opts_.kernels.end()) builtin = rt::builtinKernel(s.name);
      AICC_CHECK(it != opts_.kernels.end() || builtin, "@{}: call to unknown micro-kernel @{}",
                 f_.name, s.name);
      std::vector<KernelArg> args;
      for (const auto& a : s.args) {
        KernelArg k;
        if (!a.buffer.empty()) {
          Tensor& t = tensor(a.buffer);
          const int64_t offset = a.offset ? eval(a.offset).i : 0;
          AICC_CHECK(offset >= 0 && offset <= t.numel(), "@{}: call @{}: offset {} is outside {}",
                     f_.name, s.name, offset, varName(a.buffer));
          const int64_t at = offset * int64_t(dtypeSize(t.dtype()));
          k.isBuffer = true;
          k.ptr = static_cast<std::byte*>(t.raw()) + at;
          k.bytes = int64_t(t.nbytes()) - at;
          k.dtype = dtypeName(t.dtype()).data();
        } else {
          Scalar v = eval(a.value);
          k.isFloat = isFloat(a.value->type);
          k.i = v.i;
          k.f = k.isFloat ? v.f : static_cast<double>(v.i);
        }
        args.push_back(k);
      }
      if (builtin)
        (*builtin)(args);
      else
        it->second(args);
      return;
    }
    }
  }

  const Func& f_;
  std::map<std::string, Tensor>& bufs_;
  const EvalOptions& opts_;
  std::map<std::string, Tensor*> tensors_;
  std::vector<std::pair<std::string, Scalar>> env_;
};

} // namespace

void evaluate(const Func& f, std::map<std::string, Tensor>& buffers, const EvalOptions& opts) {
  Evaluator(f, buffers, opts).run();
}

} // namespace aicc::loop
