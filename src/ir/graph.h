// The high-level graph IR: a typed SSA tensor graph.
//
//  - A Value is defined exactly once: as a graph input, a constant (weights, kept out of the node
//    list), or a node output. Nodes refer to values by pointer; subgraph nodes may refer to values
//    of enclosing graphs (outer scope).
//  - A Node is an op (domain + type, with latest-opset semantics: the importer upgrades older
//    opset forms), its named attributes, inputs (nullptr = omitted optional input) and outputs
//    (nullptr = omitted optional output).
//  - Nodes are kept in a topological order. Graph attributes (If/Loop/Scan bodies) are Graphs whose
//    `parent` is the graph holding the node.
// Invariants are listed and checked in ir/verifier.h.
#pragma once

#include "ir/dim_expr.h"
#include "ir/tensor.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace aicc {

struct OpDef;
class Graph;
class Node;

// One dimension: a static size (value >= 0), a named symbol, an expression of symbols that shape
// inference derived (`derived`: `symbol` holds its normal-form text, ir/dim_expr.h, so equal
// expressions compare equal as symbols do), or unknown (value < 0, empty symbol).
struct Dim {
  int64_t value = -1;
  std::string symbol;
  bool derived = false;

  static Dim known(int64_t v) { return {v, {}, false}; }
  static Dim sym(std::string s) { return {-1, std::move(s), false}; }
  bool isStatic() const { return value >= 0; }
  bool operator==(const Dim&) const = default;
};

// A dim as an expression (nullopt when unknown), and back: static when constant, a plain symbol
// when one symbol, else derived (or unknown when it could be negative: a constant below 0).
std::optional<DimExpr> dimExpr(const Dim& d);
Dim dimOf(const DimExpr& e);
// Dim arithmetic for shape inference: static when both are, an expression when both are known,
// else unknown (also when an expression would overflow int64).
Dim dimAdd(const Dim& a, const Dim& b);
Dim dimSub(const Dim& a, const Dim& b);
Dim dimMul(const Dim& a, const Dim& b);
Dim dimFloorDiv(const Dim& a, int64_t d);
Dim dimCeilDiv(const Dim& a, int64_t d);

using Shape = std::vector<Dim>;
// s with the given symbols' values: their dims (symbols and expressions of them alone) static.
Shape withSymbols(const Shape& s, const std::map<std::string, int64_t>& values);

std::string formatShape(const Shape& s); // "[1,N,?]"
Shape staticShape(const Dims& d);
// Dims when every dim is static.
std::optional<Dims> toDims(const Shape& s);

// The type of a value: a tensor (element type + optional shape), a sequence, an optional, or a
// map (ai.onnx.ml's ZipMap output and DictVectorizer input: scalar keys to scalar values).
struct Type {
  enum class Kind { Unknown, Tensor, Sequence, Optional, Map };
  Kind kind = Kind::Unknown;
  DType dtype = DType::Undefined;    // Tensor: the element type; Map: the key type
  std::optional<Shape> shape;        // Tensor only; nullopt = rank not known
  std::shared_ptr<const Type> elem;  // Sequence / Optional: the element; Map: the value type

  static Type tensor(DType t, std::optional<Shape> s = std::nullopt) {
    return {Kind::Tensor, t, std::move(s), nullptr};
  }
  static Type sequence(Type e) { return {Kind::Sequence, DType::Undefined, std::nullopt, std::make_shared<Type>(std::move(e))}; }
  static Type map(DType key, Type value) {
    return {Kind::Map, key, std::nullopt, std::make_shared<Type>(std::move(value))};
  }
  static Type optional(Type e) { return {Kind::Optional, DType::Undefined, std::nullopt, std::make_shared<Type>(std::move(e))}; }
  bool isTensor() const { return kind == Kind::Tensor; }
  bool operator==(const Type& o) const;
};

std::string
formatType(const Type& t); // "f32[1,3,N]", "seq<f32[?]>", "opt<i64[]>", "map<str,f32[]>", "?"

// numel * element size of a tensor type with static dims; nullopt otherwise (unknown dims,
// strings, sequences, optionals, maps, sizes past int64_t / 4).
std::optional<int64_t> staticBytes(const Type& t);

using GraphPtr = std::shared_ptr<Graph>;

// A node attribute. The alternatives' order is Attribute::Kind.
struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Graph, Floats, Ints, Strings, Tensors, Graphs, Type };
  std::variant<float, int64_t, std::string, aicc::Tensor, GraphPtr, std::vector<float>,
               std::vector<int64_t>, std::vector<std::string>, std::vector<aicc::Tensor>,
               std::vector<GraphPtr>, aicc::Type>
      v;

  Kind kind() const { return static_cast<Kind>(v.index()); }
};

std::string_view attrKindName(Attribute::Kind k);

class Value {
public:
  std::string name;
  Type type;
  Node* producer = nullptr; // node defining this value; nullptr for inputs and constants
  Graph* owner = nullptr;   // graph in whose scope the value is defined
  std::optional<Tensor> constant; // set for constants (initializers)

  bool isConstant() const { return constant.has_value(); }
};

class Node {
public:
  std::string op;     // op type, e.g. "Conv"
  std::string domain; // "" is ai.onnx
  std::string name;   // may be empty
  std::vector<Value*> inputs;  // nullptr = omitted optional input
  std::vector<Value*> outputs; // nullptr = omitted optional output
  std::map<std::string, Attribute> attrs;
  const OpDef* def = nullptr; // the registered op definition (set by the importer / parser)
  Graph* owner = nullptr;

  bool hasInput(size_t i) const { return i < inputs.size() && inputs[i]; }
  const Attribute* attr(const std::string& n) const;
  // Attribute getters: the node's value, else the op's default; throws naming the node if neither.
  int64_t attrInt(const std::string& n) const;
  float attrFloat(const std::string& n) const;
  std::string attrString(const std::string& n) const;
  std::vector<int64_t> attrInts(const std::string& n) const;
  std::vector<float> attrFloats(const std::string& n) const;
  // Getters with an explicit fallback for attributes that are optional with no spec default.
  int64_t attrInt(const std::string& n, int64_t dflt) const;
  std::vector<int64_t> attrInts(const std::string& n, std::vector<int64_t> dflt) const;
  // "node 'conv1' (Conv)" or "node #12 (Conv)" for error messages.
  std::string describe() const;
};

class Graph {
public:
  std::string name;
  std::vector<Value*> inputs;
  std::vector<Value*> outputs;
  std::vector<Value*> constants;
  std::vector<std::unique_ptr<Node>> nodes; // topological order
  Graph* parent = nullptr;                  // enclosing graph for subgraphs

  Value* addValue(std::string name, Type type = {});
  Value* addInput(std::string name, Type type);
  Value* addConstant(std::string name, Tensor t);
  // Appends a node (op from `domain`), creating its outputs; `outputNames` entries that are
  // empty become omitted outputs (nullptr).
  Node* addNode(std::string op, std::vector<Value*> inputs, const std::vector<std::string>& outputNames,
                std::string domain = "");

  // Value named `name` visible from this graph (own scope first, then enclosing graphs).
  Value* lookup(const std::string& name) const;
  Value* lookupLocal(const std::string& name) const;
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  // A name not used in this graph's scope chain, derived from `base`.
  std::string uniqueName(const std::string& base);

  // Removes values that nothing refers to any more (after nodes were erased).
  void eraseUnusedValues();
  // Renames a value of this graph (the new name must be free in this graph).
  void renameValue(Value* v, const std::string& newName);
  // Moves value v of graph `from` into this graph under `newName` (free in this graph): the
  // pointer stays valid, so every reference to it (nodes, nested subgraphs) still holds. A
  // constant stays a constant (`from` keeps any mention of v in its inputs/outputs lists).
  void adoptValue(Graph& from, Value* v, const std::string& newName);

private:
  std::vector<std::unique_ptr<Value>> values_;
  std::map<std::string, Value*> byName_;
  int64_t nameCounter_ = 0;
};

// Every value of g and of the subgraphs of its nodes (graph and graph-list attributes),
// recursively.
void forEachValue(const Graph& g, const std::function<void(Value&)>& f);

struct Model {
  GraphPtr graph;
  std::map<std::string, int64_t> opsets; // domain ("" = ai.onnx) -> version
  int64_t irVersion = 0;
  std::string producerName, producerVersion;
};

} // namespace aicc
