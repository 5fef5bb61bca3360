#include "passes/shape_inference.h"

#include "ops/op_def.h"

namespace aicc {

bool shapesContradict(const Shape& declared, const Shape& inferred) {
  if (declared.size() != inferred.size()) return true;
  for (size_t i = 0; i < declared.size(); ++i)
    if (declared[i].isStatic() && inferred[i].isStatic() && declared[i].value != inferred[i].value)
      return true;
  return false;
}

Type mergeTypes(const Type& declared, const Type& inferred, const std::string& what) {
  if (declared.kind == Type::Kind::Unknown) return inferred;
  if (inferred.kind == Type::Kind::Unknown) return declared;
  AICC_CHECK(declared.kind == inferred.kind, "{}: declared as {} but inferred as {}", what,
             formatType(declared), formatType(inferred));
  if (declared.kind != Type::Kind::Tensor) {
    Type t = declared;
    t.elem = std::make_shared<Type>(mergeTypes(*declared.elem, *inferred.elem, what));
    return t;
  }
  Type t = inferred;
  if (t.dtype == DType::Undefined) t.dtype = declared.dtype;
  AICC_CHECK(declared.dtype == DType::Undefined || declared.dtype == t.dtype,
             "{}: declared element type {} but inferred {}", what, dtypeName(declared.dtype),
             dtypeName(t.dtype));
  if (!declared.shape) return t;
  if (!t.shape) {
    t.shape = declared.shape;
    return t;
  }
  AICC_CHECK(!shapesContradict(*declared.shape, *t.shape), "{}: declared shape {} but inferred {}",
             what, formatShape(*declared.shape), formatShape(*t.shape));
  for (size_t i = 0; i < t.shape->size(); ++i) {
    const Dim& d = (*declared.shape)[i];
    Dim& r = (*t.shape)[i];
    if (d.isStatic() && !r.isStatic())
      r = d;
    else if (!r.isStatic() && r.symbol.empty()) r = d; // keep the declared symbol name
  }
  return t;
}

void inferShapes(Graph& g, ShapeValues& shapeValues) {
  for (auto& np : g.nodes) {
    Node& n = *np;
    if (!n.def || !n.def->infer) continue;
    std::vector<Type> declared;
    for (Value* o : n.outputs) declared.push_back(o ? o->type : Type{});
    try {
      InferCtx ctx(n, shapeValues);
      n.def->infer(ctx);
      for (size_t i = 0; i < n.outputs.size(); ++i)
        if (Value* o = n.outputs[i])
          o->type = mergeTypes(declared[i], o->type, fmt::format("value '{}'", o->name));
    } catch (const Error& e) {
      throw Error(fmt::format("shape inference: {}: {}", n.describe(), e.what()));
    }
  }
}

bool refreshShapes(Model& m) {
  std::vector<std::pair<Value*, Type>> before;
  forEachValue(*m.graph, [&](Value& v) { before.push_back({&v, v.type}); });
  inferShapes(*m.graph);
  for (const auto& [v, t] : before)
    if (!(v->type == t)) return true;
  return false;
}

void inferShapes(Graph& g) {
  ShapeValues sv;
  inferShapes(g, sv);
}

} // namespace aicc
