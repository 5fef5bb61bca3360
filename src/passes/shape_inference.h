// Shape and type inference: runs every op's inference rule in topological order, with data
// propagation of small integer tensors (Shape -> Gather -> Concat -> Reshape chains keep their
// symbolic dims). Inferred types are merged with declared ones (value_info, graph outputs): the
// more precise wins; two different static dims are an error naming the value.
#pragma once

#include "ir/graph.h"

#include <map>

namespace aicc {

using ShapeValues = std::map<const Value*, std::vector<Dim>>;

// Infers the types of every node output of `g` (and of its subgraphs, through the control-flow
// ops' rules). `shapeValues` carries data-propagated contents across nested graphs.
void inferShapes(Graph& g, ShapeValues& shapeValues);
void inferShapes(Graph& g);

// The "infer-shapes" pass: re-runs inference over the main graph; returns whether some value's
// type changed (became more precise).
bool refreshShapes(Model& m);

// Merge of a declared and an inferred type (see above); `what` names the value in errors.
Type mergeTypes(const Type& declared, const Type& inferred, const std::string& what);
// Whether two shapes cannot be one: other ranks, or another static size at some dim (what
// mergeTypes refuses).
bool shapesContradict(const Shape& declared, const Shape& inferred);

} // namespace aicc
