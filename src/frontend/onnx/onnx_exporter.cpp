#include "frontend/onnx/onnx_exporter.h"

#include "frontend/onnx/tensor_proto.h"
#include "ops/op_def.h"

#include <onnx/onnx_pb.h>

#include <fstream>

namespace aicc {
namespace {

void typeToProto(const Type& t, onnx::TypeProto& p) {
  switch (t.kind) {
  case Type::Kind::Unknown: return;
  case Type::Kind::Tensor: {
    auto* tt = p.mutable_tensor_type();
    tt->set_elem_type(static_cast<int32_t>(t.dtype));
    if (!t.shape) return;
    auto* shape = tt->mutable_shape();
    for (const Dim& d : *t.shape) {
      auto* dim = shape->add_dim();
      if (d.isStatic()) dim->set_dim_value(d.value);
      else if (!d.symbol.empty()) dim->set_dim_param(d.symbol);
    }
    return;
  }
  case Type::Kind::Sequence: typeToProto(*t.elem, *p.mutable_sequence_type()->mutable_elem_type()); return;
  case Type::Kind::Optional: typeToProto(*t.elem, *p.mutable_optional_type()->mutable_elem_type()); return;
  case Type::Kind::Map:
    p.mutable_map_type()->set_key_type(static_cast<int32_t>(t.dtype));
    typeToProto(*t.elem, *p.mutable_map_type()->mutable_value_type());
    return;
  }
}

void valueInfo(const Value& v, onnx::ValueInfoProto& p) {
  p.set_name(v.name);
  if (v.type.kind != Type::Kind::Unknown) typeToProto(v.type, *p.mutable_type());
}

void graphToProto(const Graph& g, onnx::GraphProto& p);

void attrToProto(const std::string& name, const Attribute& a, onnx::AttributeProto& p) {
  using AP = onnx::AttributeProto;
  p.set_name(name);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, float>) { p.set_type(AP::FLOAT); p.set_f(v); }
        else if constexpr (std::is_same_v<T, int64_t>) { p.set_type(AP::INT); p.set_i(v); }
        else if constexpr (std::is_same_v<T, std::string>) { p.set_type(AP::STRING); p.set_s(v); }
        else if constexpr (std::is_same_v<T, Tensor>) { p.set_type(AP::TENSOR); tensorToProto(v, "", *p.mutable_t()); }
        else if constexpr (std::is_same_v<T, GraphPtr>) { p.set_type(AP::GRAPH); graphToProto(*v, *p.mutable_g()); }
        else if constexpr (std::is_same_v<T, std::vector<float>>) {
          p.set_type(AP::FLOATS);
          for (float f : v) p.add_floats(f);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          p.set_type(AP::INTS);
          for (int64_t i : v) p.add_ints(i);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          p.set_type(AP::STRINGS);
          for (const auto& s : v) p.add_strings(s);
        } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
          p.set_type(AP::TENSORS);
          for (const auto& t : v) tensorToProto(t, "", *p.add_tensors());
        } else if constexpr (std::is_same_v<T, std::vector<GraphPtr>>) {
          p.set_type(AP::GRAPHS);
          for (const auto& sg : v) graphToProto(*sg, *p.add_graphs());
        } else {
          p.set_type(AP::TYPE_PROTO);
          typeToProto(v, *p.mutable_tp());
        }
      },
      a.v);
}

void graphToProto(const Graph& g, onnx::GraphProto& p) {
  p.set_name(g.name);
  for (const Value* v : g.inputs) valueInfo(*v, *p.add_input());
  for (const Value* c : g.constants) {
    AICC_CHECK(c->constant && c->constant->defined(),
               "constant '{}' has no data (elided in the text IR); it cannot be written to ONNX", c->name);
    tensorToProto(*c->constant, c->name, *p.add_initializer());
  }
  for (const auto& n : g.nodes) {
    auto* np = p.add_node();
    np->set_op_type(n->op);
    if (!n->domain.empty()) np->set_domain(n->domain);
    if (!n->name.empty()) np->set_name(n->name);
    for (const Value* v : n->inputs) np->add_input(v ? v->name : "");
    for (const Value* v : n->outputs) np->add_output(v ? v->name : "");
    for (const auto& [name, a] : n->attrs) attrToProto(name, a, *np->add_attribute());
    for (const Value* o : n->outputs)
      if (o && o->type.kind != Type::Kind::Unknown &&
          std::find(g.outputs.begin(), g.outputs.end(), o) == g.outputs.end())
        valueInfo(*o, *p.add_value_info());
  }
  for (const Value* v : g.outputs) valueInfo(*v, *p.add_output());
}

// The IR holds every op in its latest semantics (the importer upgrades older forms), so the model
// is written at an opset where those forms exist: at least the one imported, at least 21 (Reduce
// axes as inputs, Split num_outputs, Pad axes, ...) and at least each op's own since-version.
void collectDomains(const Graph& g, std::map<std::string, int64_t>& opsets) {
  for (const auto& n : g.nodes) {
    if (n->domain == "aicc" && !opsets.count("aicc")) opsets["aicc"] = 1;
    if (n->def) opsets[n->domain] = std::max<int64_t>(opsets[n->domain], n->def->sinceVersion);
    for (const auto& [_, a] : n->attrs) {
      if (auto* sg = std::get_if<GraphPtr>(&a.v)) collectDomains(**sg, opsets);
      if (auto* sgs = std::get_if<std::vector<GraphPtr>>(&a.v))
        for (const auto& s : *sgs) collectDomains(*s, opsets);
    }
  }
}

} // namespace

std::string exportOnnxBytes(const Model& m) {
  onnx::ModelProto p;
  p.set_ir_version(m.irVersion ? m.irVersion : 8);
  p.set_producer_name(m.producerName.empty() ? "aicc" : m.producerName);
  if (!m.producerVersion.empty()) p.set_producer_version(m.producerVersion);
  std::map<std::string, int64_t> opsets = m.opsets;
  opsets[""] = std::max<int64_t>(opsets[""], 21);
  collectDomains(*m.graph, opsets);
  for (const auto& [d, v] : opsets) {
    auto* os = p.add_opset_import();
    if (!d.empty()) os->set_domain(d);
    os->set_version(v);
  }
  graphToProto(*m.graph, *p.mutable_graph());
  AICC_CHECK(p.ByteSizeLong() < (size_t{2} << 30) - 1, "the model is over protobuf's 2 GiB limit");
  return p.SerializeAsString();
}

void exportOnnxFile(const Model& m, const std::string& path) {
  std::string bytes = exportOnnxBytes(m);
  std::ofstream f(path, std::ios::binary);
  AICC_CHECK(f.good(), "cannot write '{}'", path);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  AICC_CHECK(f.good(), "error writing '{}'", path);
}

} // namespace aicc
