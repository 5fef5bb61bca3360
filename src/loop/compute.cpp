#include "loop/compute.h"

#include "loop/lower.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace aicc::loop {

namespace {

const std::map<std::string, std::string>& floatMath() {
  static const std::map<std::string, std::string> k = {
      {"Exp", "exp"},     {"Log", "log"},     {"Sqrt", "sqrt"},       {"Tanh", "tanh"},
      {"Erf", "erf"},     {"Floor", "floor"}, {"Ceil", "ceil"},       {"Round", "round"},
      {"Sin", "sin"},     {"Cos", "cos"},     {"Sigmoid", "sigmoid"}, {"Atan", "atan"},
      {"Acos", "acos"},   {"Asin", "asin"},   {"Acosh", "acosh"},     {"Asinh", "asinh"},
      {"Atanh", "atanh"}, {"Cosh", "cosh"},   {"Sinh", "sinh"},       {"Tan", "tan"},
  };
  return k;
}

const std::map<std::string, Op>& binaryOps() {
  static const std::map<std::string, Op> k = {
      {"Add", Op::Add},           {"Sub", Op::Sub}, {"Mul", Op::Mul},        {"Div", Op::Div},
      {"Equal", Op::Eq},          {"Less", Op::Lt}, {"LessOrEqual", Op::Le}, {"Greater", Op::Gt},
      {"GreaterOrEqual", Op::Ge}, {"And", Op::And}, {"Or", Op::Or},          {"Xor", Op::Ne},
  };
  return k;
}

// A float into float8e8m0 as the reference (ops/elementwise_cast.cpp toE8m0): f32's exponent field,
// one up per round_mode ("up": any mantissa bit; "nearest": the guard bit and a round, sticky or
// odd exponent bit; "down": never) unless saturating at the largest; NaN and infinities to NaN
// (0xff). Computed as the value the code stands for (a power of two, 2^-127 for code 0, or NaN),
// which the emitter's store takes exactly (codegen/llvm/emit_narrow.cpp).
ExprPtr castToE8m0(const Node& n, const ExprPtr& x) {
  const std::string mode = n.attr("round_mode") ? n.attrString("round_mode") : "up";
  const bool saturate = n.attrInt("saturate", 1) != 0;
  auto i = [](int64_t v) { return intImm(v, DType::I32); };
  const ExprPtr bits = bitcast(DType::I32, cast(DType::F32, x));
  const ExprPtr exp = binary(Op::BitAnd, binary(Op::Shr, bits, i(23)), i(0xff));
  auto set = [&](int64_t mask) { return cmp(Op::Ne, binary(Op::BitAnd, bits, i(mask)), i(0)); };
  ExprPtr up = mode == "up" ? set(0x7fffff)
               : mode == "nearest"
                   ? binary(Op::And, set(0x400000),
                            binary(Op::Or, binary(Op::Or, set(0x200000), set(0x1fffff)),
                                   cmp(Op::Gt, exp, i(0))))
                   : intImm(0, DType::Bool);
  if (saturate) up = binary(Op::And, up, cmp(Op::Ne, exp, i(0xfe)));
  const ExprPtr code = select(cmp(Op::Eq, exp, i(0xff)), i(0xff), select(up, add(exp, i(1)), exp));
  const ExprPtr value =
      select(cmp(Op::Eq, code, i(0xff)), floatImm(std::numeric_limits<float>::quiet_NaN()),
             select(cmp(Op::Eq, code, i(0)), floatImm(std::ldexp(1.0, -127)),
                    bitcast(DType::F32, binary(Op::Shl, code, i(23)))));
  return cast(DType::F8E8M0, value);
}

} // namespace

const std::vector<std::string>& elementwiseComputeOps() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> v = {
        "Neg",       "Abs",        "Relu",       "Reciprocal",  "Clip",   "Where",    "Max",
        "Min",       "Sum",        "LeakyRelu",  "Pow",         "Not",    "Cast",     "CastLike",
        "Identity",  "Sign",       "Elu",        "HardSigmoid", "PRelu",  "Softsign", "Expand",
        "Mod",       "Dropout",    "IsNaN",      "IsInf",       "Mean",   "Shrink",   "BitwiseAnd",
        "BitwiseOr", "BitwiseXor", "BitwiseNot", "BitShift",    "BitCast"};
    // Per-tensor 8-bit, inside fuse-elementwise's regions only (computeElementwise).
    v.insert(v.end(), {"QuantizeLinear", "DequantizeLinear"});
    for (const auto& [k, _] : floatMath()) v.push_back(k);
    for (const auto& [k, _] : binaryOps()) v.push_back(k);
    std::sort(v.begin(), v.end());
    return v;
  }();
  return ops;
}

bool hasComputeDefinition(const std::string& op) {
  const auto& v = elementwiseComputeOps();
  return std::binary_search(v.begin(), v.end(), op);
}

ExprPtr computeElementwise(const Node& n, const std::vector<ExprPtr>& in, DType out,
                           std::string* why) {
  auto no = [&](const std::string& r) -> ExprPtr {
    if (why) *why = r;
    return nullptr;
  };
  if (in.empty() || !in[0]) return no("input 0 is missing");
  // Per-tensor 8-bit QuantizeLinear / DequantizeLinear inside elementwise regions (fuse-elementwise
  // takes only those, passes/fuse_elementwise.cpp), with the reference's arithmetic as
  // lower_quant.cpp: y = sat(round(f32(x / scale)) + zp), y = (f32(x) - f32(zp)) * scale.
  if (n.op == "QuantizeLinear" || n.op == "DequantizeLinear") {
    const bool q = n.op == "QuantizeLinear";
    if (in.size() < 2 || !in[1] || in[1]->type != DType::F32 ||
        (q ? in[0]->type != DType::F32 || (out != DType::U8 && out != DType::I8)
           : (in[0]->type != DType::U8 && in[0]->type != DType::I8) || out != DType::F32))
      return no("per-tensor 8-bit quantization of f32 only");
    const ExprPtr zp = in.size() > 2 && in[2] ? cast(DType::F32, in[2]) : constant(DType::F32, 0.0);
    if (q) return cast(out, add(call("round", {div(in[0], in[1])}), zp));
    return mul(sub(cast(DType::F32, in[0]), zp), in[1]);
  }
  for (size_t k = 1; k < in.size(); ++k)
    if (in[k] && in[k]->type != in[0]->type && n.op != "Where" && n.op != "Pow")
      return no("inputs of different element types");
  const ExprPtr& x = in[0];
  DType t = x->type;
  bool fl = isFloat(t), num = fl || isInteger(t);
  auto c = [&](double v) { return constant(t, v); };
  const std::string& op = n.op;

  if (auto it = binaryOps().find(op); it != binaryOps().end()) {
    if (in.size() != 2 || !in[1]) return no("needs two inputs");
    Op o = it->second;
    bool logical = op == "And" || op == "Or" || op == "Xor";
    if (logical != (t == DType::Bool)) return no("unsupported element type");
    if (!logical && !num) return no("unsupported element type");
    return binary(o, x, in[1]);
  }
  if (auto it = floatMath().find(op); it != floatMath().end()) {
    if (!fl) return no("needs a float input");
    return call(it->second, {x});
  }
  if (op == "Identity" || op == "Expand") return x; // Expand: x broadcast to the output shape
  if (op == "Dropout") { // without training (or at ratio 0): y = x, the mask all true
    auto constIs = [&](size_t i, double v) {
      const Value* c = n.hasInput(i) ? n.inputs[i] : nullptr;
      return c && c->constant && c->constant->numel() == 1 && c->constant->getF64(0) == v;
    };
    if (n.hasInput(2) && !constIs(2, 0) && !constIs(1, 0))
      return no("Dropout in training mode (random draws)");
    return out == DType::Bool ? constant(DType::Bool, 1) : x;
  }
  if (op == "Not") return t == DType::Bool ? logicalNot(x) : no("needs a bool input");
  if ((op == "Cast" || op == "CastLike") && out == DType::F8E8M0 && t != DType::F8E8M0)
    return castToE8m0(n, x);
  if (op == "Cast" || op == "CastLike") // CastLike: `out` is like's type
    return cast(out, x, !isByteFloat(out) || n.attrInt("saturate") != 0);
  if (op == "BitCast") {
    if (!bitcastable(t) || !bitcastable(out) || dtypeBits(t) != dtypeBits(out))
      return no("a BitCast between types the loop IR does not reinterpret (f16, bf16, float8, "
                "4-bit)");
    return bitcast(out, x);
  }
  if (op == "Where") {
    if (in.size() != 3 || !in[1] || !in[2]) return no("needs three inputs");
    if (t != DType::Bool || in[1]->type != in[2]->type)
      return no("condition must be bool, branches of one type");
    return select(x, in[1], in[2]);
  }
  if (!num) return no("unsupported element type");
  if (op == "Mod") { // integers: the remainder with the divisor's sign (fmod = 0) or C's
    if (in.size() != 2 || !in[1]) return no("needs two inputs");
    if (fl) return call("fmod", {x, in[1]}); // ONNX requires fmod = 1 for floats; exact
    ExprPtr r = binary(Op::Mod, x, in[1]); // truncated; by zero: the run's error
    if (n.attrInt("fmod") != 0 || !isSigned(t)) return r;
    ExprPtr flip = binary(Op::And, cmp(Op::Ne, r, c(0)),
                          cmp(Op::Ne, cmp(Op::Lt, r, c(0)), cmp(Op::Lt, in[1], c(0))));
    return select(flip, add(r, in[1]), r);
  }
  if (op == "BitwiseAnd" || op == "BitwiseOr" || op == "BitwiseXor" || op == "BitShift") {
    if (fl) return no("needs integer inputs");
    if (in.size() != 2 || !in[1]) return no("needs two inputs");
    Op o = op == "BitwiseAnd" ? Op::BitAnd : op == "BitwiseOr" ? Op::BitOr : Op::BitXor;
    if (op == "BitShift") {
      const std::string dir = n.attrString("direction");
      if (dir != "LEFT" && dir != "RIGHT") return no("direction must be LEFT or RIGHT");
      if (isSigned(t)) return no("BitShift takes unsigned integers");
      o = dir == "LEFT" ? Op::Shl : Op::Shr;
    }
    return binary(o, x, in[1]);
  }
  if (op == "BitwiseNot") // x ^ all ones
    return fl ? no("needs an integer input") : binary(Op::BitXor, x, intImm(-1, t));
  if (op == "Neg") return neg(x);
  if (op == "Abs") return fl ? call("abs", {x}) : select(cmp(Op::Lt, x, c(0)), neg(x), x);
  if (op == "Relu") return max(x, c(0));
  if (op == "Sign")
    return select(cmp(Op::Gt, x, c(0)), c(1), select(cmp(Op::Lt, x, c(0)), c(-1), c(0)));
  if (op == "Shrink") { // x < -lambd: x + bias; x > lambd: x - bias; else 0
    if (!fl) return no("needs a float input");
    const double lambd = n.attrFloat("lambd"), bias = n.attrFloat("bias");
    return select(cmp(Op::Lt, x, c(-lambd)), add(x, c(bias)),
                  select(cmp(Op::Gt, x, c(lambd)), sub(x, c(bias)), c(0)));
  }
  const bool ieee = t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
  if (op == "IsNaN") return ieee ? cmp(Op::Ne, x, x) : no("needs an f16/bf16/f32/f64 input");
  if (op == "IsInf") { // beyond the largest finite value of the type
    if (!ieee) return no("needs an f16/bf16/f32/f64 input");
    const double big = t == DType::F64    ? 1.7976931348623157e308
                       : t == DType::F16  ? 65504.0
                       : t == DType::BF16 ? 3.3895313892515355e38
                                          : 3.4028234663852886e38; // f32
    const bool pos = n.attrInt("detect_positive") != 0,
               negative = n.attrInt("detect_negative") != 0;
    ExprPtr p = cmp(Op::Gt, x, c(big)), q = cmp(Op::Lt, x, c(-big));
    if (pos && negative) return binary(Op::Or, p, q);
    if (pos || negative) return pos ? p : q;
    return constant(DType::Bool, 0);
  }
  if (op == "Mean") { // summed in f64, then divided: one rounding, as the reference
    if (!fl) return no("needs a float input");
    ExprPtr acc = cast(DType::F64, x);
    for (size_t k = 1; k < in.size(); ++k) {
      if (!in[k]) return no("an omitted input");
      acc = add(acc, cast(DType::F64, in[k]));
    }
    return cast(t, div(acc, constant(DType::F64, double(in.size()))));
  }
  if (op == "Max" || op == "Min" || op == "Sum") {
    ExprPtr acc = x;
    for (size_t k = 1; k < in.size(); ++k) {
      if (!in[k]) return no("an omitted input");
      if (op == "Sum")
        acc = add(acc, in[k]);
      else
        acc = op == "Max" ? max(acc, in[k]) : min(acc, in[k]);
    }
    return acc;
  }
  if (op == "Clip") {
    ExprPtr v = x;
    if (in.size() > 1 && in[1]) v = select(cmp(Op::Lt, v, in[1]), in[1], v);
    if (in.size() > 2 && in[2]) v = select(cmp(Op::Gt, v, in[2]), in[2], v);
    return v;
  }
  if (op == "Pow") {
    if (in.size() != 2 || !in[1]) return no("needs two inputs");
    const DType et = in[1]->type;
    if (fl && et == t) return call("pow", {x, in[1]});
    if (!fl && !isFloat(et)) return no("integer Pow (exact wrapping powers) is not lowered yet");
    // Mixed types: in f64, as the reference's pow, cast to the base's type.
    return cast(t, call("pow", {cast(DType::F64, x), cast(DType::F64, in[1])}));
  }
  if (!fl) return no("needs a float input");
  if (op == "Reciprocal") return div(c(1), x);
  if (op == "Softsign") return div(x, add(c(1), call("abs", {x})));
  if (op == "LeakyRelu") return select(cmp(Op::Lt, x, c(0)), mul(c(n.attrFloat("alpha")), x), x);
  if (op == "PRelu") {
    if (in.size() != 2 || !in[1]) return no("needs two inputs");
    return select(cmp(Op::Lt, x, c(0)), mul(in[1], x), x);
  }
  if (op == "Elu")
    return select(cmp(Op::Lt, x, c(0)), mul(c(n.attrFloat("alpha")), sub(call("exp", {x}), c(1))),
                  x);
  if (op == "HardSigmoid")
    return max(c(0), min(c(1), add(mul(c(n.attrFloat("alpha")), x), c(n.attrFloat("beta")))));
  return no("no compute definition for " + op);
}

} // namespace aicc::loop
