// The IR verifier: a valid graph passes; each numbered invariant of ir/verifier.h, when broken,
// is reported by number with the graph / node / value it concerns.
#include "ir/verifier.h"
#include "ops/op_def.h"

#include <gtest/gtest.h>

using namespace aicc;

namespace {

const OpRegistry& reg() {
  static const OpRegistry r = [] {
    OpRegistry x;
    x.op("Relu").inputs(1, 1);
    x.op("Add").inputs(2, 2);
    x.op("Conv")
        .inputs(2, 3)
        .attrInts("pads", {})
        .attr("group_required", Attribute::Kind::Int, true);
    x.op("If")
        .inputs(1, 1)
        .outputs(1, 1 << 30)
        .attr("then_branch", Attribute::Kind::Graph, true)
        .attr("else_branch", Attribute::Kind::Graph, true);
    return x;
  }();
  return r;
}

struct Fixture {
  Model m;
  Graph* g;
  Value *x, *c, *w;
  Node *relu, *add, *iff;
  GraphPtr thenG, elseG;
};

Node* addNode(Graph& g, const char* op, std::vector<Value*> ins, std::vector<std::string> outs) {
  Node* n = g.addNode(op, std::move(ins), outs);
  n->def = reg().find("", op);
  for (Value* o : n->outputs) o->type = Type::tensor(DType::F32, Shape{Dim::known(2)});
  return n;
}

// main(x: f32[2], c: bool[]) { w = const; r = Relu(x); a = Add(r, w); i = If(c) {then: a+x, else:
// w} }
std::unique_ptr<Fixture> valid() {
  auto f = std::make_unique<Fixture>();
  f->m.graph = std::make_shared<Graph>();
  f->g = f->m.graph.get();
  Graph& g = *f->g;
  g.name = "main";
  f->x = g.addInput("x", Type::tensor(DType::F32, Shape{Dim::known(2)}));
  f->c = g.addInput("c", Type::tensor(DType::Bool, Shape{}));
  f->w = g.addConstant("w", Tensor::fromF32({1, 2}));
  f->relu = addNode(g, "Relu", {f->x}, {"r"});
  f->relu->name = "relu1";
  f->add = addNode(g, "Add", {f->relu->outputs[0], f->w}, {"a"});
  f->thenG = std::make_shared<Graph>();
  f->thenG->name = "then";
  f->thenG->parent = &g;
  Node* inner = addNode(*f->thenG, "Add", {f->add->outputs[0], f->x}, {"t"});
  f->thenG->outputs = {inner->outputs[0]};
  f->elseG = std::make_shared<Graph>();
  f->elseG->name = "else";
  f->elseG->parent = &g;
  f->elseG->outputs = {f->w};
  f->iff = addNode(g, "If", {f->c}, {"i"});
  f->iff->attrs["then_branch"] = Attribute{f->thenG};
  f->iff->attrs["else_branch"] = Attribute{f->elseG};
  g.outputs = {f->iff->outputs[0], f->add->outputs[0]};
  return f;
}

void verify(const Fixture& f) {
  VerifyOptions o;
  o.registry = &reg();
  verifyModel(f.m, o);
}

// Expects verification to fail with a message containing every string in `parts`.
void expectViolation(const Fixture& f, std::vector<std::string> parts) {
  try {
    verify(f);
    ADD_FAILURE() << "no violation reported; expected: " << parts[0];
  } catch (const Error& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "missing '" << p << "' in: " << e.what();
  }
}

} // namespace

TEST(Verifier, ValidGraphPasses) {
  auto f = valid();
  EXPECT_NO_THROW(verify(*f));
}

TEST(Verifier, Inv1EmptyName) {
  auto f = valid();
  f->relu->outputs[0]->name = "";
  expectViolation(*f,
                  {"invariant 1 violated", "graph 'main'", "node 'relu1' (Relu)", "empty name"});
}

TEST(Verifier, Inv1DuplicateName) {
  auto f = valid();
  f->add->outputs[0]->name = "r";
  expectViolation(*f, {"invariant 1 violated", "graph 'main'", "two values are named %r"});
}

TEST(Verifier, Inv2DefinedTwice) {
  auto f = valid();
  f->g->constants.push_back(f->x); // an input listed as a constant as well
  expectViolation(*f, {"invariant 2 violated", "value %x (constant) is defined more than once"});
}

TEST(Verifier, Inv2WrongProducer) {
  auto f = valid();
  f->add->outputs[0]->producer = f->relu;
  expectViolation(*f, {"invariant 2 violated", "node producing 'a' (Add)", "Value::producer"});
}

TEST(Verifier, Inv2WrongOwner) {
  auto f = valid();
  f->x->owner = f->thenG.get();
  expectViolation(*f, {"invariant 2 violated", "value %x (graph input) has Value::owner"});
}

TEST(Verifier, Inv2NotOwnedByGraph) {
  auto f = valid();
  Graph other;
  Value* stray = other.addInput("stray", Type::tensor(DType::F32, Shape{}));
  stray->owner = f->g;
  f->g->inputs.push_back(stray);
  expectViolation(*f,
                  {"invariant 2 violated", "value %stray (graph input) is not owned by the graph"});
}

TEST(Verifier, Inv2NonConstantWithTensor) {
  auto f = valid();
  f->x->constant = Tensor::fromF32({1, 2});
  expectViolation(*f, {"invariant 2 violated", "value %x (graph input) carries a constant tensor"});
}

TEST(Verifier, Inv3NotTopological) {
  auto f = valid();
  std::swap(f->g->nodes[0], f->g->nodes[1]); // Add before the Relu that defines its input
  expectViolation(*f, {"invariant 3 violated", "graph 'main'", "node producing 'a' (Add)",
                       "input 0 %r is used before its definition"});
}

TEST(Verifier, Inv3UndefinedInput) {
  auto f = valid();
  Graph other;
  f->relu->inputs[0] = other.addInput("ghost", Type{});
  expectViolation(*f,
                  {"invariant 3 violated", "node 'relu1' (Relu)", "input 0 %ghost is not defined"});
}

TEST(Verifier, Inv3SubgraphSeesOnlyEarlierValues) {
  auto f = valid();
  // The then-branch refers to the If's own output: not defined before the If.
  f->thenG->nodes[0]->inputs[1] = f->iff->outputs[0];
  expectViolation(*f, {"invariant 3 violated", "graph 'main'", "attribute 'then_branch'",
                       "graph 'then'", "input 1 %i is used before its definition"});
}

TEST(Verifier, Inv4UnregisteredOp) {
  auto f = valid();
  f->relu->op = "NoSuchOp";
  expectViolation(*f, {"invariant 4 violated", "node 'relu1' (NoSuchOp)",
                       "op 'NoSuchOp' of domain 'ai.onnx' is not registered"});
}

TEST(Verifier, Inv4DefMismatch) {
  auto f = valid();
  f->relu->def = reg().find("", "Add");
  expectViolation(*f, {"invariant 4 violated", "Node::def is not the registered definition"});
}

TEST(Verifier, Inv4InputCount) {
  auto f = valid();
  f->relu->inputs.push_back(f->x);
  expectViolation(
      *f, {"invariant 4 violated", "node 'relu1' (Relu)", "has 2 inputs, the op takes 1 to 1"});
}

TEST(Verifier, Inv4OutputCount) {
  auto f = valid();
  f->relu->outputs.push_back(nullptr);
  expectViolation(*f, {"invariant 4 violated", "has 2 outputs, the op produces 1 to 1"});
}

TEST(Verifier, Inv4UnknownAttribute) {
  auto f = valid();
  f->relu->attrs["alpha"] = Attribute{1.0f};
  expectViolation(*f, {"invariant 4 violated", "attribute 'alpha' is not declared by the op"});
}

TEST(Verifier, Inv4AttributeKind) {
  auto f = valid();
  f->iff->attrs["then_branch"] = Attribute{int64_t{1}};
  expectViolation(*f, {"invariant 4 violated", "node producing 'i' (If)",
                       "attribute 'then_branch' is int, the op declares graph"});
}

TEST(Verifier, Inv4RequiredAttribute) {
  auto f = valid();
  f->iff->attrs.erase("else_branch");
  expectViolation(*f, {"invariant 4 violated", "required attribute 'else_branch' is missing"});
}

TEST(Verifier, Inv4UnregisteredAllowedOnRequest) {
  auto f = valid();
  f->relu->op = "NoSuchOp";
  f->relu->def = nullptr;
  VerifyOptions o;
  o.registry = &reg();
  o.allowUnregistered = true;
  EXPECT_NO_THROW(verifyModel(f->m, o));
}

TEST(Verifier, Inv5ConstantTypeMismatch) {
  auto f = valid();
  f->w->type = Type::tensor(DType::F32, Shape{Dim::known(3)});
  expectViolation(*f, {"invariant 5 violated",
                       "constant %w has type f32[3] but holds a tensor of type f32[2]"});
}

TEST(Verifier, Inv5ElidedConstantIsFine) {
  auto f = valid();
  f->w->constant = Tensor();
  EXPECT_NO_THROW(verify(*f));
  f->w->type = Type{};
  expectViolation(*f, {"invariant 5 violated", "elided constant %w is not a tensor type"});
}

TEST(Verifier, Inv6OutputNotVisible) {
  auto f = valid();
  f->g->outputs.push_back(f->thenG->nodes[0]->outputs[0]); // a value local to the then-branch
  expectViolation(*f, {"invariant 6 violated", "graph 'main'",
                       "graph output #2 %t is not defined in this graph"});
}

TEST(Verifier, Inv6NullOutput) {
  auto f = valid();
  f->g->outputs.push_back(nullptr);
  expectViolation(*f, {"invariant 6 violated", "graph output #2 is null"});
}

TEST(Verifier, Inv7SubgraphParent) {
  auto f = valid();
  f->elseG->parent = nullptr;
  expectViolation(*f,
                  {"invariant 7 violated", "attribute 'else_branch'", "graph 'else'", "parent"});
}

TEST(Verifier, Inv7NullSubgraph) {
  auto f = valid();
  f->iff->attrs["else_branch"] = Attribute{GraphPtr{}};
  expectViolation(*f, {"invariant 7 violated", "attribute 'else_branch' holds a null graph"});
}

TEST(Verifier, Inv7NodeOwner) {
  auto f = valid();
  f->relu->owner = f->thenG.get();
  expectViolation(*f, {"invariant 7 violated", "node 'relu1' (Relu)", "Node::owner"});
}

TEST(Verifier, Inv8StaticDimWithSymbol) {
  auto f = valid();
  f->relu->outputs[0]->type = Type::tensor(DType::F32, Shape{Dim{2, "N"}});
  expectViolation(*f, {"invariant 8 violated", "value %r", "static dim with a symbol 'N'"});
}

TEST(Verifier, Inv8BadUnknownDim) {
  auto f = valid();
  f->x->type = Type::tensor(DType::F32, Shape{Dim{-7, ""}});
  expectViolation(*f, {"invariant 8 violated", "value %x", "dim of value -7"});
}

TEST(Verifier, Inv8SequenceWithoutElement) {
  auto f = valid();
  f->relu->outputs[0]->type = Type{Type::Kind::Sequence, DType::Undefined, std::nullopt, nullptr};
  expectViolation(*f, {"invariant 8 violated", "value %r", "without an element type"});
}

TEST(Verifier, Inv9ShadowedReference) {
  auto f = valid();
  // The then-branch gets an input named "x" but its node still refers to the outer %x.
  f->thenG->addInput("x", Type::tensor(DType::F32, Shape{Dim::known(2)}));
  expectViolation(*f, {"invariant 9 violated", "graph 'then'", "input 1 %x is shadowed"});
}
