// The IR text printer. Grammar: docs/ir.md. Everything printed here parses back exactly
// (ir/parser.cpp), including float bits: floats use the shortest round-trip form (std::to_chars),
// NaNs with a payload and reduced floats that do not survive a float round trip use hex bits.
#include "ir/printer.h"

#include "support/error.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

namespace aicc {
namespace {

using text::isBareName;
using text::isBareSymbol;

std::string hexBits(uint64_t bits) { return fmt::format("0x{:x}", bits); }

// Shortest round-trip decimal for a finite float/double; "inf"/"-inf"; "nan"/"-nan" for the
// canonical quiet NaN. Returns "" for a NaN with another payload (the caller prints bits).
template <typename F> std::string floatText(F v) {
  using Bits = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;
  if (std::isnan(v)) {
    Bits b = std::bit_cast<Bits>(v);
    Bits sign = Bits{1} << (sizeof(F) * 8 - 1);
    if ((b & ~sign) == std::bit_cast<Bits>(std::numeric_limits<F>::quiet_NaN()))
      return (b & sign) ? "-nan" : "nan";
    return "";
  }
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

template <typename F> std::string floatData(F v) {
  std::string s = floatText(v);
  if (s.empty()) {
    using Bits = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;
    return hexBits(std::bit_cast<Bits>(v));
  }
  return s;
}

// A float attribute: always recognizable as a float (has '.', 'e', "inf" or "nan").
std::string floatAttr(float v) {
  std::string s = floatText(v);
  if (s.empty()) return fmt::format("nan({})", hexBits(std::bit_cast<uint32_t>(v)));
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// A reduced float element: its float value when that converts back to the same bits, else bits.
std::string reducedData(DType dt, uint32_t bits) {
  float f = reducedToFloat(dt, bits);
  std::string s = floatText(f);
  if (!s.empty()) {
    // What the parser will compute from `s`: the value, or the canonical NaN with f's sign.
    float back = std::isnan(f) ? std::copysign(std::numeric_limits<float>::quiet_NaN(), f) : f;
    if (floatToReduced(dt, back, false) == bits) return s;
  }
  return hexBits(bits);
}

std::string elementText(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
  case DType::F32:
    return floatData(t.data<float>()[i]);
  case DType::F64:
    return floatData(t.data<double>()[i]);
  case DType::I8:
  case DType::I4:
  case DType::I2:
    return std::to_string(t.data<int8_t>()[i]);
  case DType::U8:
  case DType::U4:
  case DType::U2:
    return std::to_string(t.data<uint8_t>()[i]);
  case DType::I16:
    return std::to_string(t.data<int16_t>()[i]);
  case DType::U16:
    return std::to_string(t.data<uint16_t>()[i]);
  case DType::I32:
    return std::to_string(t.data<int32_t>()[i]);
  case DType::U32:
    return std::to_string(t.data<uint32_t>()[i]);
  case DType::I64:
    return std::to_string(t.data<int64_t>()[i]);
  case DType::U64:
    return std::to_string(t.data<uint64_t>()[i]);
  case DType::Bool:
    return t.data<uint8_t>()[i] ? "true" : "false";
  case DType::String:
    return quoteString(t.strings()[i]);
  case DType::F16:
  case DType::BF16:
    return reducedData(t.dtype(), t.data<uint16_t>()[i]);
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F4E2M1:
  case DType::F8E8M0:
    return reducedData(t.dtype(), t.data<uint8_t>()[i]);
  case DType::C64:
    return fmt::format("({}, {})", floatData(t.data<float>()[2 * i]),
                       floatData(t.data<float>()[2 * i + 1]));
  case DType::C128:
    return fmt::format("({}, {})", floatData(t.data<double>()[2 * i]),
                       floatData(t.data<double>()[2 * i + 1]));
  case DType::Undefined:
    break;
  }
  return "?";
}

std::string attrName(const std::string& n) { return isBareSymbol(n) ? n : quoteString(n); }

std::string graphName(const std::string& n) { return "@" + (isBareName(n) ? n : quoteString(n)); }

std::string refName(const Value* v) { return v ? printValueName(v->name) : "_"; }

class Printer {
public:
  Printer(const PrintOptions& o) : opts_(o) {}

  void graph(const Graph& g, int indent) {
    out_ += "graph " + graphName(g.name) + "(";
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      if (i) out_ += ", ";
      const Value* v = g.inputs[i];
      out_ += v ? printValueName(v->name) + ": " + printType(v->type) : "_";
    }
    out_ += ") {\n";
    std::string pad(static_cast<size_t>(indent + 2), ' ');
    for (const Value* c : g.constants) {
      if (!c) continue;
      out_ += pad + printValueName(c->name) + " = const ";
      const Tensor* t = c->constant ? &*c->constant : nullptr;
      if (t && t->defined()) {
        bool full = opts_.printConstants || t->numel() <= opts_.maxConstantElems;
        out_ += full ? printTensorLiteral(*t)
                     : printType(Type::tensor(t->dtype(), staticShape(t->shape()))) + " <elided>";
      } else {
        out_ += printType(c->type) + " <elided>";
      }
      out_ += "\n";
    }
    for (const auto& n : g.nodes) node(*n, indent + 2);
    out_ += pad + "return";
    for (size_t i = 0; i < g.outputs.size(); ++i) out_ += (i ? ", " : " ") + refName(g.outputs[i]);
    out_ += "\n" + std::string(static_cast<size_t>(indent), ' ') + "}";
  }

  std::string take() { return std::move(out_); }

private:
  void node(const Node& n, int indent) {
    std::string pad(static_cast<size_t>(indent), ' ');
    out_ += pad;
    for (size_t i = 0; i < n.outputs.size(); ++i) out_ += (i ? ", " : "") + refName(n.outputs[i]);
    if (!n.outputs.empty()) out_ += " = ";
    out_ += n.domain.empty() ? n.op : n.domain + "." + n.op;
    out_ += "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) out_ += (i ? ", " : "") + refName(n.inputs[i]);
    out_ += ")";
    if (!n.attrs.empty()) {
      bool multiline = false;
      for (const auto& [_, a] : n.attrs)
        multiline |= a.kind() == Attribute::Kind::Graph || a.kind() == Attribute::Kind::Graphs;
      out_ += " {";
      bool first = true;
      for (const auto& [name, a] : n.attrs) {
        if (!first) out_ += ",";
        out_ += multiline ? "\n" + pad + "  " : (first ? "" : " ");
        first = false;
        out_ += attrName(name) + " = ";
        attr(a, indent + 2);
      }
      out_ += multiline ? "\n" + pad + "}" : "}";
    }
    bool firstType = true;
    for (const Value* o : n.outputs) {
      if (!o) continue;
      out_ += (firstType ? " : " : ", ") + printType(o->type);
      firstType = false;
    }
    if (!n.name.empty()) out_ += " loc(" + quoteString(n.name) + ")";
    out_ += "\n";
  }

  void subgraph(const GraphPtr& g, int indent) {
    if (g)
      graph(*g, indent);
    else
      out_ += "graph <null>"; // not parseable; the verifier rejects null subgraphs
  }

  template <typename T, typename F>
  void list(const std::vector<T>& v, std::string_view kind, F&& each) {
    if (v.empty()) {
      out_ += std::string(kind) + "[]";
      return;
    }
    out_ += "[";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out_ += ", ";
      each(v[i]);
    }
    out_ += "]";
  }

  void attr(const Attribute& a, int indent) {
    switch (a.kind()) {
    case Attribute::Kind::Float:
      out_ += floatAttr(std::get<float>(a.v));
      return;
    case Attribute::Kind::Int:
      out_ += std::to_string(std::get<int64_t>(a.v));
      return;
    case Attribute::Kind::String:
      out_ += quoteString(std::get<std::string>(a.v));
      return;
    case Attribute::Kind::Tensor:
      out_ += "tensor " + printTensorLiteral(std::get<Tensor>(a.v));
      return;
    case Attribute::Kind::Graph:
      subgraph(std::get<GraphPtr>(a.v), indent);
      return;
    case Attribute::Kind::Floats:
      list(std::get<std::vector<float>>(a.v), "floats", [&](float f) { out_ += floatAttr(f); });
      return;
    case Attribute::Kind::Ints:
      list(std::get<std::vector<int64_t>>(a.v), "ints",
           [&](int64_t i) { out_ += std::to_string(i); });
      return;
    case Attribute::Kind::Strings:
      list(std::get<std::vector<std::string>>(a.v), "strings",
           [&](const std::string& s) { out_ += quoteString(s); });
      return;
    case Attribute::Kind::Tensors:
      list(std::get<std::vector<Tensor>>(a.v), "tensors",
           [&](const Tensor& t) { out_ += "tensor " + printTensorLiteral(t); });
      return;
    case Attribute::Kind::Graphs:
      list(std::get<std::vector<GraphPtr>>(a.v), "graphs",
           [&](const GraphPtr& g) { subgraph(g, indent); });
      return;
    case Attribute::Kind::Type:
      out_ += "type " + printType(std::get<Type>(a.v));
      return;
    }
  }

  const PrintOptions& opts_;
  std::string out_;
};

} // namespace

namespace text {
static bool nameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}
bool isBareName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!nameChar(c)) return false;
  return true;
}
bool isBareSymbol(std::string_view s) {
  return isBareName(s) && !(s[0] >= '0' && s[0] <= '9') && s[0] != '.';
}
} // namespace text

std::string quoteString(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (c < 0x20 || c == 0x7f)
        out += fmt::format("\\x{:02x}", c);
      else
        out += ch; // bytes >= 0x80 (UTF-8) are kept as they are
    }
  }
  return out + "\"";
}

std::string printValueName(std::string_view s) {
  return "%" + (isBareName(s) ? std::string(s) : quoteString(s));
}

std::string printType(const Type& t) {
  switch (t.kind) {
  case Type::Kind::Unknown:
    return "?";
  case Type::Kind::Tensor: {
    std::string s(t.dtype == DType::Undefined ? "?" : dtypeName(t.dtype));
    if (!t.shape) return s + "[*]";
    s += "[";
    for (size_t i = 0; i < t.shape->size(); ++i) {
      const Dim& d = (*t.shape)[i];
      if (i) s += ",";
      if (d.isStatic())
        s += std::to_string(d.value);
      else if (d.symbol.empty())
        s += "?";
      else if (d.derived) // an expression's own text (ir/dim_expr.h)
        s += d.symbol;
      else
        s += isBareSymbol(d.symbol) ? d.symbol : quoteString(d.symbol);
    }
    return s + "]";
  }
  case Type::Kind::Sequence:
    return "seq<" + (t.elem ? printType(*t.elem) : "?") + ">";
  case Type::Kind::Optional:
    return "opt<" + (t.elem ? printType(*t.elem) : "?") + ">";
  case Type::Kind::Map:
    return "map<" + std::string(dtypeName(t.dtype)) + "," + (t.elem ? printType(*t.elem) : "?") +
           ">";
  }
  return "?";
}

std::string printTensorLiteral(const Tensor& t) {
  if (!t.defined()) return "undefined";
  std::string s = printType(Type::tensor(t.dtype(), staticShape(t.shape()))) + " [";
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (i) s += ", ";
    s += elementText(t, i);
  }
  return s + "]";
}

std::string printGraph(const Graph& g, const PrintOptions& opts) {
  Printer p(opts);
  p.graph(g, 0);
  return p.take() + "\n";
}

std::string printModel(const Model& m, const PrintOptions& opts) {
  std::string s = fmt::format("model ir_version={}", m.irVersion);
  if (!m.producerName.empty()) s += " producer=" + quoteString(m.producerName);
  if (!m.producerVersion.empty()) s += " producer_version=" + quoteString(m.producerVersion);
  s += " opsets={";
  bool first = true;
  for (const auto& [d, v] : m.opsets) {
    s += fmt::format("{}{}: {}", first ? "" : ", ", quoteString(d), v);
    first = false;
  }
  s += "} {\n";
  AICC_CHECK(m.graph, "printModel: the model has no graph");
  Printer p(opts);
  p.graph(*m.graph, 0);
  return s + p.take() + "\n}\n";
}

} // namespace aicc
