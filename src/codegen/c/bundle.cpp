#include "codegen/c/bundle.h"

#include "codegen/c/emit_c.h"
#include "loop/verifier.h"
#include "support/error.h"
#include "support/file.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>

namespace aicc::codegen {

namespace {

std::string cString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      out += std::string("\\") + static_cast<char>(c);
    else if (c < 32 || c > 126)
      out += fmt::format("\\{:03o}", c);
    else
      out += static_cast<char>(c);
  }
  return out + "\"";
}


std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

class BundleWriter {
public:
  BundleWriter(const Graph& g, const MemoryPlan& plan, const CBundleOptions& o)
      : g_(g), plan_(plan), o_(o) {}

  CBundle run() {
    CBundle b;
    b.prefix = o_.prefix;
    std::string tasks;
    std::vector<std::string> failures;
    int64_t index = 0;
    for (const auto& np : g_.nodes) {
      const Node& n = *np;
      size_t nodeIndex = static_cast<size_t>(index++);
      if (producesInPlace(plan_, n)) {
        tasks += fmt::format("  /* node {}: {} '{}': in place (a view or a Concat of slices), no "
                             "code */\n",
                             nodeIndex, n.op, n.name);
        ++b.noOps;
        continue;
      }
      std::string fname = fmt::format("n{}_{}", nodeIndex, n.op);
      std::string why;
      std::optional<loop::LoweredNode> ln;
      try {
        ln = loop::lowerNode(n, fname, &why, o_.lower);
      } catch (const Error& e) {
        why = e.what();
      }
      if (!ln && isCopyView(n) && failures.empty()) {
        // A view op the plan could not alias (e.g. over a graph input it must not share):
        // a plain copy.
        const Value* o = n.outputs[0];
        tasks += fmt::format("  /* node {}: {} '{}': copy */\n  memcpy({}, {}, {});\n", nodeIndex,
                             n.op, n.name, bytesOf(o), bytesOf(n.inputs[0]),
                             ios({const_cast<Value*>(o)})[0].bytes);
        ++b.noOps;
        continue;
      }
      if (!ln) {
        failures.push_back(fmt::format("{} ({}): {}", n.name.empty() ? fname : n.name,
                                       n.domain.empty() ? n.op : n.domain + "." + n.op, why));
        continue;
      }
      if (!failures.empty()) continue; // keep collecting the failures only
      auto msgs = loop::verifyMessages(ln->func);
      AICC_CHECK(msgs.empty(), "C codegen: {}: lowering produced invalid loop IR: {}", n.describe(),
                 msgs[0]);
      std::string cName = "k_" + cIdentifier(fname);
      try {
        em_.addFunction(ln->func, cName);
      } catch (const Error& e) {
        throw Error(fmt::format("{}: {}", n.describe(), e.what()));
      }
      ++b.kernels;
      ++kernels_;
      tasks += fmt::format("  /* node {}: {} '{}' */\n  {}({});\n", nodeIndex, n.op, n.name, cName,
                           callArgs(*ln, n));
    }
    if (!failures.empty()) {
      std::string list;
      for (const auto& f : failures) list += "\n  " + f;
      fail("C codegen: graph '{}': {} of {} nodes cannot be lowered to loop IR:{}", g_.name,
           failures.size(), g_.nodes.size(), list);
    }
    b.arenaBytes = plan_.arenaBytes;
    b.scratchBytes = scratchBytes_;
    b.microKernels.assign(em_.microKernels().begin(), em_.microKernels().end());
    b.header = header();
    b.source = source(tasks);
    if (o_.embedWeights)
      b.weightsSource = weightsSource();
    else
      b.weights = weights();
    return b;
  }

private:
  const Graph& g_;
  const MemoryPlan& plan_;
  const CBundleOptions& o_;
  CEmitter em_;
  int64_t scratchBytes_ = 0;
  int64_t kernels_ = 0;

  static bool isCopyView(const Node& n) {
    static const char* kViews[] = {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity"};
    return n.domain.empty() && n.outputs.size() == 1 && n.outputs[0] && n.hasInput(0) &&
           std::any_of(std::begin(kViews), std::end(kViews),
                       [&](const char* v) { return n.op == v; });
  }

  // A C expression of type `unsigned char*` (or const) where v's bytes are.
  std::string bytesOf(const Value* v) const {
    ValueHome h;
    try {
      h = homeOf(g_, plan_, v);
    } catch (const Error& e) {
      fail("C codegen: {}", e.what());
    }
    switch (h.storage) {
    case MemStorage::Arena:
      return fmt::format("(A + {})", h.offset);
    case MemStorage::Weight:
      return fmt::format("(W + {})", h.offset);
    case MemStorage::Input:
      return fmt::format("((const unsigned char*)inputs[{}])", h.input);
    case MemStorage::Dynamic:
    case MemStorage::Heap:
      fail("C codegen: '{}' has no static size ({}); the C bundle takes static graphs", v->name,
           formatType(v->type));
    }
    fail("C codegen: internal: bad storage");
  }

  std::string callArgs(const loop::LoweredNode& ln, const Node& n) {
    std::string args;
    int64_t scratch = 0;
    for (const auto& p : ln.func.params) {
      std::string ct = cTypeName(p.dtype), ptr;
      if (p.role == loop::Role::Temp) {
        ptr = fmt::format("({}*)(S + {})", ct, scratch);
        scratch = alignUp(scratch + p.numel() * static_cast<int64_t>(dtypeSize(p.dtype)),
                          kArenaAlignment);
      } else {
        const Value* v = ln.valueOf(p.name);
        AICC_CHECK(v, "C codegen: {}: buffer %{} is bound to no value", n.describe(), p.name);
        AICC_CHECK(v->type.dtype == p.dtype, "C codegen: {}: buffer %{} is {} but value '{}' is {}",
                   n.describe(), p.name, dtypeName(p.dtype), v->name, dtypeName(v->type.dtype));
        ptr = fmt::format("({}{}*){}", p.role == loop::Role::In ? "const " : "", ct, bytesOf(v));
      }
      args += (args.empty() ? "" : ", ") + ptr;
    }
    scratchBytes_ = std::max(scratchBytes_, scratch);
    return args;
  }

  struct Io {
    std::string name, dtype, shape;
    int64_t rank = 0, bytes = 0;
  };
  std::vector<Io> ios(const std::vector<Value*>& vs) const {
    std::vector<Io> r;
    for (const Value* v : vs) {
      AICC_CHECK(v->type.isTensor() && v->type.shape, "C codegen: '{}' has no known shape",
                 v->name);
      auto d = toDims(*v->type.shape);
      AICC_CHECK(d, "C codegen: '{}' has the dynamic shape {} (fix it with --dim NAME=VALUE)",
                 v->name, formatShape(*v->type.shape));
      cTypeName(v->type.dtype);
      Io io;
      io.name = v->name;
      io.dtype = std::string(dtypeName(v->type.dtype));
      io.rank = static_cast<int64_t>(d->size());
      int64_t numel = 1;
      for (int64_t x : *d) {
        io.shape += (io.shape.empty() ? "" : ", ") + std::to_string(x);
        numel *= x;
      }
      io.bytes = numel * static_cast<int64_t>(dtypeSize(v->type.dtype));
      r.push_back(io);
    }
    return r;
  }

  std::string header() const {
    const std::string& p = o_.prefix;
    std::string P = upper(p);
    auto in = ios(g_.inputs), out = ios(g_.outputs);
    std::string h = fmt::format(
        "/* {0}.h: C API of the model '{1}', generated by aicc (portable C99; needs libc and "
        "libm).\n"
        "   Usage: {7} once, then {0}_run(inputs, outputs) any number of\n"
        "   times (not reentrant: one static arena). inputs[i] / outputs[i] point to dense "
        "row-major\n"
        "   buffers of {2}_INPUT_BYTES[i] / {2}_OUTPUT_BYTES[i] bytes, element types as in\n"
        "   {0}_input_dtypes / {0}_output_dtypes (\"f32\" = float, \"i64\" = int64_t, ...).\n"
        "   Functions return 0 on success, -1 on failure ({0}_last_error() says why). */\n"
        "#ifndef {2}_H_\n#define {2}_H_\n\n#include <stdint.h>\n\n#ifdef __cplusplus\nextern "
        "\"C\" {{\n#endif\n\n"
        "#define {2}_NUM_INPUTS {3}\n#define {2}_NUM_OUTPUTS {4}\n"
        "#define {2}_ARENA_BYTES {5}\n#define {2}_WEIGHTS_BYTES {6}\n\n",
        p, g_.name, P, in.size(), out.size(), plan_.arenaBytes, plan_.weightBytes,
        o_.embedWeights ? p + "_init(NULL) (the weights are linked in from " + p + "_weights.c)"
                        : p + "_init(\"" + p + ".weights\")");
    for (const char* kind : {"input", "output"}) {
      h += fmt::format("extern const char* const {0}_{1}_names[];\n"
                       "extern const char* const {0}_{1}_dtypes[];\n"
                       "extern const int {0}_{1}_ranks[];\n"
                       "extern const int64_t* const {0}_{1}_shapes[];\n"
                       "extern const int64_t {0}_{1}_bytes[];\n",
                       p, kind);
    }
    h += fmt::format("\nint {0}_init(const char* weights_path);\n"
                     "int {0}_run(const void* const* inputs, void* const* outputs);\n"
                     "const char* {0}_last_error(void);\n\n"
                     "#ifdef __cplusplus\n}}\n#endif\n\n#endif /* {1}_H_ */\n",
                     p, P);
    return h;
  }

  std::string ioTables(const char* kind, const std::vector<Io>& v) const {
    const std::string& p = o_.prefix;
    std::string names, dtypes, ranks, shapes, bytes, out;
    for (size_t k = 0; k < v.size(); ++k) {
      std::string sep = k ? ", " : "";
      names += sep + cString(v[k].name);
      dtypes += sep + cString(v[k].dtype);
      ranks += sep + std::to_string(v[k].rank);
      bytes += sep + std::to_string(v[k].bytes);
      out += fmt::format("static const int64_t {}_{}_shape{}[] = {{{}}};\n", p, kind, k,
                         v[k].shape.empty() ? "0" : v[k].shape);
      shapes += fmt::format("{}{}_{}_shape{}", sep, p, kind, k);
    }
    if (v.empty()) names = dtypes = ranks = shapes = bytes = "0";
    out += fmt::format("const char* const {0}_{1}_names[] = {{{2}}};\n"
                       "const char* const {0}_{1}_dtypes[] = {{{3}}};\n"
                       "const int {0}_{1}_ranks[] = {{{4}}};\n"
                       "const int64_t* const {0}_{1}_shapes[] = {{{5}}};\n"
                       "const int64_t {0}_{1}_bytes[] = {{{6}}};\n",
                       p, kind, names, dtypes, ranks, shapes, bytes);
    return out;
  }

  std::string source(const std::string& tasks) const {
    const std::string& p = o_.prefix;
    auto in = ios(g_.inputs), out = ios(g_.outputs);
    auto words = [](int64_t bytes) { return std::max<int64_t>(1, (bytes + 7) / 8); };
    const bool embed = o_.embedWeights;
    std::string s = fmt::format(
        "/* {0}.c: the model '{1}' compiled by aicc to portable C99 (libc + libm only).\n"
        "   {2} kernels; arena {3} bytes (static), weights {4} bytes ({9}), scratch {5} bytes.\n"
        "   Compile without -ffast-math (exact float semantics). */\n"
        "#include \"{0}.h\"\n\n#include <math.h>\n#include <stdint.h>\n{10}"
        "#include <string.h>\n\n"
        "#if defined(__GNUC__)\n#define AICC_ALIGNED __attribute__((aligned(64)))\n#else\n"
        "#define AICC_ALIGNED\n#endif\n\n"
        "static double {0}_arena_[{6}] AICC_ALIGNED;\n{7}"
        "static double {0}_scratch_[{8}] AICC_ALIGNED;\n"
        "static int {0}_ready_ = 0;\n{11}\n",
        p, g_.name, kernels_, plan_.arenaBytes, plan_.weightBytes, scratchBytes_,
        words(plan_.arenaBytes),
        embed ? weightsDecl() + fmt::format("extern const {0}_weights_t {0}_weights_data;\n", p)
              : fmt::format("static double {}_weights_[{}] AICC_ALIGNED;\n", p,
                            words(plan_.weightBytes)),
        words(scratchBytes_),
        embed ? fmt::format("const in {}_weights.c", p)
              : fmt::format("read from {}.weights by {}_init", p, p),
        embed ? "" : "#include <stdio.h>\n",
        embed ? fmt::format("static const char* {}_error_ = 0;\n", p)
              : fmt::format("static char {}_error_[512] = \"\";\n", p));
    s += ioTables("input", in) + ioTables("output", out) + "\n";
    s += "/* ---- helpers ---- */\n" + em_.helpers() + "\n/* ---- kernels ---- */\n" +
         em_.functions();
    s += embed ? fmt::format("const char* {0}_last_error(void) {{ return {0}_error_ ? {0}_error_ : "
                             "\"\"; }}\n\n",
                             p)
               : fmt::format("const char* {0}_last_error(void) {{ return {0}_error_; }}\n\n", p);
    if (embed)
      s += fmt::format("int {0}_init(const char* weights_path) {{ /* the weights are linked in */\n"
                       "  (void)weights_path;\n  {0}_ready_ = 1;\n  return 0;\n}}\n\n",
                       p);
    else
      s += fmt::format(
          "int {0}_init(const char* weights_path) {{\n"
          "  FILE* f;\n  size_t got;\n  {0}_ready_ = 0;\n"
          "  if ({1} == 0) {{\n    {0}_ready_ = 1;\n    return 0;\n  }}\n"
          "  if (!weights_path) {{\n"
          "    snprintf({0}_error_, sizeof {0}_error_, \"{0}_init: no weights path\");\n"
          "    return -1;\n  }}\n"
          "  f = fopen(weights_path, \"rb\");\n"
          "  if (!f) {{\n"
          "    snprintf({0}_error_, sizeof {0}_error_, \"{0}_init: cannot open '%s'\", "
          "weights_path);\n    return -1;\n  }}\n"
          "  got = fread({0}_weights_, 1, (size_t){1}, f);\n"
          "  if (got != (size_t){1} || fgetc(f) != EOF) {{\n"
          "    fclose(f);\n"
          "    snprintf({0}_error_, sizeof {0}_error_,\n"
          "             \"{0}_init: '%s' is not the weight file of this model (expected %ld "
          "bytes)\",\n             weights_path, (long){1});\n"
          "    return -1;\n  }}\n  fclose(f);\n  {0}_ready_ = 1;\n  return 0;\n}}\n\n",
          p, plan_.weightBytes);
    s += fmt::format(
        "int {0}_run(const void* const* inputs, void* const* outputs) {{\n"
        "  unsigned char* A = (unsigned char*){0}_arena_;\n"
        "  const unsigned char* W = (const unsigned char*){1};\n"
        "  unsigned char* S = (unsigned char*){0}_scratch_;\n"
        "  (void)A;\n  (void)W;\n  (void)S;\n  (void)inputs;\n"
        "  if (!{0}_ready_) {{\n"
        "    {2};\n"
        "    return -1;\n  }}\n",
        p, embed ? "&" + p + "_weights_data" : p + "_weights_",
        embed ? fmt::format("{0}_error_ = \"{0}_run: call {0}_init first\"", p)
              : fmt::format("snprintf({0}_error_, sizeof {0}_error_, \"{0}_run: call {0}_init "
                            "first\")",
                            p));
    s += tasks;
    for (size_t k = 0; k < g_.outputs.size(); ++k)
      s += fmt::format("  memcpy(outputs[{}], {}, {}); /* output '{}' */\n", k,
                       bytesOf(g_.outputs[k]), out[k].bytes, g_.outputs[k]->name);
    s += "  return 0;\n}\n";
    return s;
  }

  // The embedded blob's type: a union, so the bytes get a double's alignment in C99.
  std::string weightsDecl() const {
    return fmt::format("typedef union {{\n  unsigned char bytes[{1}];\n  double align;\n}} "
                       "{0}_weights_t;\n",
                       o_.prefix, std::max<int64_t>(1, plan_.weightBytes));
  }

  std::string weightsSource() const {
    const std::string blob = weights();
    std::string s = fmt::format("/* {0}_weights.c: the weights of '{1}' ({2} bytes) as a const "
                                "array, generated by aicc. */\n{3}\nconst {0}_weights_t "
                                "{0}_weights_data = {{{{\n",
                                o_.prefix, g_.name, blob.size(), weightsDecl());
    s.reserve(s.size() + blob.size() * 5 + blob.size() / 4);
    static const char* hex = "0123456789abcdef";
    for (size_t i = 0; i < blob.size(); ++i) {
      const auto c = static_cast<unsigned char>(blob[i]);
      s += "0x";
      s += hex[c >> 4];
      s += hex[c & 15];
      s += (i % 16 == 15 || i + 1 == blob.size()) ? ",\n" : ",";
    }
    if (blob.empty()) s += "0\n";
    return s + "}};\n";
  }

  std::string weights() const {
    std::string blob(static_cast<size_t>(plan_.weightBytes), '\0');
    for (const WeightSlot& w : plan_.weights) {
      if (w.offset < 0 || w.bytes == 0 || !w.value->constant) continue;
      AICC_CHECK(w.offset + w.bytes <= plan_.weightBytes,
                 "C codegen: weight '{}' is outside the blob", w.value->name);
      std::memcpy(blob.data() + w.offset, w.value->constant->raw(), static_cast<size_t>(w.bytes));
    }
    return blob;
  }
};

} // namespace

CBundle emitCBundle(const Graph& g, const MemoryPlan& plan, const CBundleOptions& opts) {
  AICC_CHECK(!opts.prefix.empty() && cIdentifier(opts.prefix) == opts.prefix,
             "C codegen: prefix '{}' is not a C identifier", opts.prefix);
  return BundleWriter(g, plan, opts).run();
}

void writeCBundle(const CBundle& b, const std::string& dir) {
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& data) {
    writeFile((std::filesystem::path(dir) / name).string(), data);
  };
  write(b.prefix + ".c", b.source);
  write(b.prefix + ".h", b.header);
  if (!b.weightsSource.empty())
    write(b.prefix + "_weights.c", b.weightsSource);
  else
    write(b.prefix + ".weights", b.weights);
}

} // namespace aicc::codegen
