// The loop-level IR: what one kernel does, as loops over flat buffers. A Module holds Funcs; a
// Func has buffer parameters (name, element type, static shape, layout, role), a schedule (an
// attribute dictionary: the decisions that produced the loop nest, kept as data) and a body of
// statements: loops, stores, ifs, lets and calls to micro-kernels. Expressions are immutable
// trees (shared, so passes may reuse subtrees freely).
//
// Semantics (docs/loop-ir.md has the full story):
//  - Buffers are dense arrays addressed by a flat element index (an i64 expression). The shape
//    and layout describe the data; indexing is explicit in the index arithmetic.
//  - Loops run `for %i in lo..hi` (hi exclusive, step 1). The loop kind (serial, parallel,
//    vectorize(W), unroll(U)) is an annotation for code generation: every kind has the meaning
//    of the serial loop. `parallel` and `vectorize` promise that iterations are independent.
//    Vectorized loops keep scalar semantics; codegen widens the body to W lanes and masks the
//    tail (docs/loop-ir.md, "Vectors").
//  - Integer arithmetic wraps (two's complement); `/` and `%` truncate toward zero (C, LLVM
//    sdiv/srem); a zero divisor is an error. Float arithmetic rounds to the expression's type
//    after every operation (no contraction). min/max on floats are fmin/fmax (a NaN operand
//    yields the other one). `select` evaluates both arms (so both must be safe to evaluate).
//  - Comparisons and logical ops produce bool.
#pragma once

#include "ir/dtype.h"
#include "ir/tensor.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

namespace aicc::loop {

enum class Op : uint8_t {
  IntImm,   // i (type: an integer type or bool)
  FloatImm, // f (type: a float type; the value is exact in that type)
  Var,      // name (loop variable or let)
  Load,     // name = buffer, args = {index}
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  Min,
  Max, // args = {a, b}, same type
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne, // args = {a, b}, same type; bool
  And,
  Or,     // bool x bool -> bool
  BitAnd, // integers of one type, bitwise
  BitOr,
  BitXor,
  Shl,     // integers; a shift by the type's width or more gives 0 (ONNX BitShift), or for Shr of
  Shr,     // a signed value its sign; Shr is logical on unsigned types, arithmetic on signed ones
  Not,     // bool -> bool
  Neg,     // -a
  Select,  // args = {cond, a, b}; both arms are evaluated
  Cast,    // args = {a}; to `type` (i = 1: into float8 without saturation)
  Bitcast, // args = {a}; a's bits as `type`, of the same width (bitcastable(); bool as its byte)
  Call,    // name = math function (see mathFunctions()), args
};

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Expr {
  Op op = Op::IntImm;
  DType type = DType::I64;
  int64_t i = 0;    // IntImm
  double f = 0;     // FloatImm
  std::string name; // Var, Load (buffer), Call (function)
  std::vector<ExprPtr> args;
};

// ---- Expression builders (they compute the result type; the verifier checks operand types) ----
ExprPtr intImm(int64_t v, DType t = DType::I64);
ExprPtr boolImm(bool v);
ExprPtr floatImm(double v, DType t = DType::F32); // rounds v to t
ExprPtr var(std::string name, DType t = DType::I64);
ExprPtr load(std::string buffer, ExprPtr index, DType t);
ExprPtr binary(Op op, ExprPtr a, ExprPtr b);
ExprPtr add(ExprPtr a, ExprPtr b);
ExprPtr sub(ExprPtr a, ExprPtr b);
ExprPtr mul(ExprPtr a, ExprPtr b);
ExprPtr div(ExprPtr a, ExprPtr b);
ExprPtr mod(ExprPtr a, ExprPtr b);
ExprPtr min(ExprPtr a, ExprPtr b);
ExprPtr max(ExprPtr a, ExprPtr b);
ExprPtr cmp(Op op, ExprPtr a, ExprPtr b);
ExprPtr logicalNot(ExprPtr a);
ExprPtr neg(ExprPtr a);
ExprPtr select(ExprPtr c, ExprPtr a, ExprPtr b);
// saturate = false (float8 targets only): out-of-range values become inf or NaN (ONNX Cast's
// saturate = 0), printed `cast<T, nosat>`; Expr::i holds 1 for it.
ExprPtr cast(DType t, ExprPtr a, bool saturate = true);
// a's bits as t (ONNX BitCast); both types bitcastable() and of one width.
ExprPtr bitcast(DType t, ExprPtr a);
// The types Op::Bitcast takes: bool and the 8/16/32/64-bit integers, f32 and f64.
bool bitcastable(DType t);
ExprPtr call(std::string fn, std::vector<ExprPtr> args); // type: the first argument's
// A constant of type t with value v (IntImm for integers/bool, FloatImm for floats).
ExprPtr constant(DType t, double v);

bool isBinary(Op op);  // Add..Or
bool isCompare(Op op); // Lt..Ne
bool isImm(const ExprPtr& e);
std::optional<int64_t> asInt(const ExprPtr& e); // IntImm value
std::string_view opName(Op op);                 // "add", "lt", ... (messages)

// Math functions callable in expressions, all taking and returning one float type: the one
// table the parser, verifier, interpreters and emitters read. `libm` names the C library function
// computing it in double (the emitters' general path and the portable C; null for sigmoid, which
// they build from exp); `unary` / `binary` compute it on the host (simplifier, scalar executor).
struct MathFunction {
  int arity;
  const char* libm;
  double (*unary)(double);
  double (*binary)(double, double);
};
const std::map<std::string, MathFunction>& mathFunctions();

// Structural equality (float immediates compared by bits).
bool equal(const ExprPtr& a, const ExprPtr& b);
// Replaces variables by expressions.
ExprPtr substitute(const ExprPtr& e, const std::map<std::string, ExprPtr>& m);
// Calls f on e and every subexpression (pre-order).
void walk(const ExprPtr& e, const std::function<void(const Expr&)>& f);

// ---- Statements ----
enum class StmtKind : uint8_t { For, Store, If, Let, Call };
enum class LoopKind : uint8_t { Serial, Parallel, Vectorize, Unroll };

struct Stmt;
using Block = std::vector<Stmt>;

// A micro-kernel call argument: a buffer (optionally at an element offset: `&%w[off]`) or a value.
struct CallArg {
  std::string buffer; // non-empty: a buffer argument
  ExprPtr offset;     // buffer arguments: element offset (nullptr = 0)
  ExprPtr value;      // value arguments
};

struct Stmt {
  StmtKind kind = StmtKind::Store;
  std::string name; // For/Let: variable; Store: buffer; Call: callee
  ExprPtr lo, hi;   // For: [lo, hi)
  LoopKind loop = LoopKind::Serial;
  int64_t factor = 1;        // For: vector width / unroll factor
  ExprPtr index, value;      // Store: index, value; Let: value; If: value = condition
  Block body, orelse;        // For/If: body; If: else branch
  std::vector<CallArg> args; // Call

  static Stmt forLoop(std::string v, ExprPtr lo, ExprPtr hi, Block body,
                      LoopKind k = LoopKind::Serial, int64_t factor = 1);
  static Stmt store(std::string buffer, ExprPtr index, ExprPtr value);
  static Stmt ifThen(ExprPtr cond, Block then, Block orelse = {});
  static Stmt let(std::string v, ExprPtr value);
  static Stmt callKernel(std::string callee, std::vector<CallArg> args);
};

// ---- Functions and modules ----
enum class Role : uint8_t { In, Out, Temp };
std::string_view roleName(Role r);

// The layout word of a buffer sized at run time (a growable buffer of the runtime): its shape is
// a placeholder ([1]) and the verifier does not bound its indices (L9).
inline constexpr const char* kRunSizedLayout = "run_sized";

struct Buffer {
  std::string name;
  DType dtype = DType::F32;
  Dims shape;
  std::string layout; // free-form ("nchw", "nchw16c"); "" = plain row-major of `shape`
  Role role = Role::In;
  int64_t numel() const;
};

// A schedule attribute: int, string, list of ints or list of strings.
using AttrValue =
    std::variant<int64_t, std::string, std::vector<int64_t>, std::vector<std::string>>;
using Schedule = std::map<std::string, AttrValue>;

struct Func {
  std::string name;
  std::vector<Buffer> params;
  Schedule schedule;
  Block body;

  const Buffer* findBuffer(const std::string& n) const;
};

struct Module {
  std::vector<Func> funcs;

  Func* find(const std::string& n);
  const Func* find(const std::string& n) const;
};

// Calls f on every expression held directly by statements (not subexpressions), recursively
// through nested blocks; f may replace the expression.
void mapExprs(Block& b, const std::function<ExprPtr(const ExprPtr&)>& f);
// Replaces variable `v` by `e` in every statement of b.
void substitute(Block& b, const std::string& v, const ExprPtr& e);

// Fresh names in a Func: not a parameter, nor a loop variable or let of its body (nor a name it
// handed out before): base, then base_0, base_1, ...
class NameGen {
public:
  explicit NameGen(const Func& f);
  std::string fresh(const std::string& base);

private:
  std::set<std::string> used_;
};

} // namespace aicc::loop
