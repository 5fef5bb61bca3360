#include "runtime/static_link.h"

#include "support/error.h"
#include "support/file.h"

#include <cstdlib>
#include <filesystem>

#include <unistd.h>

namespace aicc::runtime {

// The texts of src/rt/linked_model.h, include/aicc/runtime.h and src/rt/exports.map, embedded at
// build time (CMakeLists.txt: embedded_headers.cpp), so there is one definition of each.
extern const char* const kLinkedModelHeader;
extern const char* const kRuntimeHeader;
extern const char* const kExportsMap;

namespace {

namespace fs = std::filesystem;

// Runs cmd in dir; throws with its output when it fails.
void run(const fs::path& dir, const std::string& cmd, const std::string& what) {
  const std::string full = fmt::format("cd '{}' && {} > tool.log 2>&1", dir.string(), cmd);
  const int rc = std::system(full.c_str());
  AICC_CHECK(rc == 0, "--static-runtime: {} failed (`{}` exited with {}):\n{}", what, cmd, rc,
             readFile((dir / "tool.log").string()));
}

bool isSymbolName(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// The C file that describes the model to the runtime linked with it (rt/linked_model.h).
std::string linkedModelSource(const StaticLinkInput& in) {
  std::string s = "/* aicc compile --static-runtime: the model, for the runtime linked with it "
                  "(linked_model.h). */\n#include \"linked_model.h\"\n\n"
                  "extern void aicc_artifact_bind(void* const* table);\n"
                  "extern const char aicc_artifact_signature[];\n"
                  "extern const char aicc_linked_plan[];\n";
  if (in.embedWeights) s += "extern const unsigned char aicc_linked_weights[];\n";
  for (const std::string& f : in.taskFns) {
    AICC_CHECK(isSymbolName(f), "--static-runtime: task function '{}' is not a C identifier", f);
    s += fmt::format("extern int32_t {}(void** args);\n", f);
  }
  s += "\nstatic const struct aicc_linked_fn fns[] = {\n";
  for (const std::string& f : in.taskFns) s += fmt::format("    {{\"{0}\", {0}}},\n", f);
  s += "    {0, 0}};\n\n";
  s += fmt::format("const struct aicc_linked_model_desc aicc_linked_model = {{\n"
                   "    AICC_LINKED_MODEL_VERSION, aicc_linked_plan, {}, {}u, aicc_artifact_bind,\n"
                   "    aicc_artifact_signature, fns, {}u}};\n",
                   in.embedWeights ? "aicc_linked_weights" : "0",
                   in.embedWeights ? in.weights->size() : 0, in.taskFns.size());
  return s;
}

// The plan (NUL-terminated) and the weights as read-only data, 64-byte aligned.
std::string dataAssembly(bool embedWeights) {
  std::string s = "  .section .rodata.aicc_linked,\"a\"\n"
                  "  .balign 64\n  .globl aicc_linked_plan\n  .hidden aicc_linked_plan\n"
                  "aicc_linked_plan:\n  .incbin \"model.plan\"\n  .byte 0\n";
  if (embedWeights)
    s += "  .balign 64\n  .globl aicc_linked_weights\n  .hidden aicc_linked_weights\n"
         "aicc_linked_weights:\n  .incbin \"model.weights\"\n";
  return s + "  .section .note.GNU-stack,\"\",%progbits\n";
}

// src/rt/exports.map with aicc_linked_model added to what is global.
std::string exportsMap() {
  std::string m = kExportsMap;
  const size_t at = m.find("global:");
  AICC_CHECK(at != std::string::npos, "internal: exports.map has no 'global:'");
  return m.insert(at + 7, "\n    aicc_linked_model;");
}

// The names exportsMap() keeps global, for objcopy (model.a): the C API's functions and
// aicc_linked_model.
std::string exportedNames() {
  std::string names = "aicc_linked_model\n";
  const std::string h = kRuntimeHeader;
  for (size_t at = 0; (at = h.find("aicc_", at)) != std::string::npos;) {
    size_t end = at;
    while (end < h.size() && (std::isalnum(static_cast<unsigned char>(h[end])) || h[end] == '_'))
      ++end;
    if (end < h.size() && h[end] == '(') names += h.substr(at, end - at) + "\n";
    at = end;
  }
  return names;
}

std::string exeDir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  return fs::path(std::string(buf, size_t(n))).parent_path().string();
}

} // namespace

std::string runtimeArchive(const Target& target) {
  if (const char* env = std::getenv("AICC_RUNTIME_LIB"); env && *env) {
    AICC_CHECK(fs::is_regular_file(env), "AICC_RUNTIME_LIB='{}' is not a file", env);
    return env;
  }
  const fs::path exe = exeDir();
  std::vector<fs::path> places;
  if (target.triple.empty()) {
    places = {exe / "libaicc_rt.a", exe / ".." / "lib" / "libaicc_rt.a"};
  } else {
    places = {exe / ".." / ("build-rt-" + target.arch) / "libaicc_rt.a"};
  }
  std::string looked;
  for (const fs::path& p : places) {
    if (fs::is_regular_file(p)) return fs::weakly_canonical(p).string();
    looked += (looked.empty() ? "" : ", ") + fs::weakly_canonical(p).string();
  }
  fail("--static-runtime needs the runtime archive libaicc_rt.a for {}: not found at {}{} (or "
       "set AICC_RUNTIME_LIB)",
       target.triple.empty() ? "this machine" : target.triple, looked,
       target.triple.empty()
           ? ""
           : fmt::format("; build it with scripts/build-runtime.sh --target {}", target.triple));
}

StaticLinkOutput linkStaticArtifact(const StaticLinkInput& in, const Target& target) {
  const std::string archive = runtimeArchive(target);
  const std::string prefix = target.triple.empty() ? "" : target.triple + "-";
  const std::string cc = prefix + "gcc", cxx = prefix + "g++";
  const std::string ld = prefix + "ld", objcopy = prefix + "objcopy", ar = prefix + "ar";
  const std::string nm = prefix + "nm";
  const fs::path dir = fs::absolute(in.dir);
  const fs::path tmp = dir / ".static-link";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  writeFile((tmp / "model.o").string(), in.object);
  writeFile((tmp / "model.plan").string(), in.plan);
  const fs::path weights = in.embedWeights ? tmp / "model.weights" : dir / "model.weights";
  writeFile(weights.string(), std::string_view(reinterpret_cast<const char*>(in.weights->data()),
                                               in.weights->size()));
  writeFile((tmp / "linked_model.h").string(), kLinkedModelHeader);
  writeFile((tmp / "model_linked.c").string(), linkedModelSource(in));
  writeFile((tmp / "model_data.s").string(), dataAssembly(in.embedWeights));
  writeFile((tmp / "exports.map").string(), exportsMap());
  writeFile((tmp / "exported.txt").string(), exportedNames());
  writeFile((dir / "aicc_runtime.h").string(), kRuntimeHeader);
  run(tmp, cc + " -std=c99 -O2 -fPIC -c model_linked.c model_data.s", "compiling the model table");
  const std::string libs =
      std::string(" -lm -lpthread -ldl") + (target.arch == "riscv64" ? " -latomic" : "");
  // model.so: the runtime whole (its C API is what the library is for; sections nothing reaches
  // from it are dropped), C++ runtime included, only the API and the model descriptor exported,
  // bound to its own definitions.
  run(tmp,
      fmt::format("{} -shared -o ../model.so model.o model_linked.o model_data.o "
                  "-Wl,--whole-archive '{}' -Wl,--no-whole-archive "
                  "-Wl,--version-script=exports.map -Wl,-Bsymbolic -Wl,--gc-sections "
                  "-static-libstdc++ "
                  "-static-libgcc{}",
                  cxx, archive, libs),
      "linking model.so");
  // model.a: one relocatable object (any use of the API brings the whole model), every symbol it
  // defines but the API's and the descriptor local (what it needs from libc and libstdc++ stays
  // undefined).
  run(tmp,
      fmt::format("{0} -r -o model_rt.o model.o model_linked.o model_data.o --whole-archive '{1}' "
                  "--no-whole-archive && {2} -g --defined-only model_rt.o | awk '{{print $3}}' | "
                  "grep -vxF -f exported.txt > local.txt; {3} --localize-symbols=local.txt "
                  "model_rt.o && rm -f ../model.a && {4} rcs ../model.a model_rt.o",
                  ld, archive, nm, objcopy, ar),
      "building model.a");
  StaticLinkOutput out;
  out.sharedBytes = int64_t(fs::file_size(dir / "model.so"));
  out.archiveBytes = int64_t(fs::file_size(dir / "model.a"));
  fs::remove_all(tmp);
  return out;
}

} // namespace aicc::runtime
