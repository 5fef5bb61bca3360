// Self-contained artifacts (`aicc compile --static-runtime [--embed-weights]`): the model's code,
// its plan and (optionally) its weights linked together with the runtime (libaicc_rt.a) into
//
//   model.so         a shared library whose only dependencies are libc and libm, exporting the C
//                    API of include/aicc/runtime.h and `aicc_linked_model`
//   model.a          the same for static linking into an application (link with a C++ driver, or
//                    add -lstdc++: the runtime is C++)
//   aicc_runtime.h   the C API (include/aicc/runtime.h)
//   model.weights    unless the weights are embedded (.rodata, 64-byte aligned)
//
// An application calls aicc_model_load_linked(NULL or "model.weights"); `aicc run DIR`, aicc-run
// and aicc_model_load(DIR) load the folder too (rt::Artifact finds the plan in model.so). The plan
// and the weights are bytes in the binary (`.incbin`); the task functions are found through a
// generated table (rt/linked_model.h). One such model per program: the runtime's symbols are
// global in model.a (model.so keeps them local).
#pragma once

#include "backend/target.h"

#include <cstdint>
#include <string>
#include <vector>

namespace aicc::runtime {

struct StaticLinkInput {
  std::string dir;    // the artifact folder
  std::string object; // the model's code (model.o bytes)
  std::string plan;   // the plan text
  const std::vector<std::byte>* weights = nullptr;
  std::vector<std::string> taskFns; // every task function the plan calls
  bool embedWeights = false;
};

struct StaticLinkOutput {
  int64_t sharedBytes = 0, archiveBytes = 0;
};

// Writes the self-contained files into in.dir for `target`, linking with the C/C++ compiler
// drivers (the target triple's for a cross target) and the runtime archive runtimeArchive(target).
StaticLinkOutput linkStaticArtifact(const StaticLinkInput& in, const Target& target);

// The libaicc_rt.a built for target: $AICC_RUNTIME_LIB, else next to the aicc executable (or in
// ../lib), for a cross target in ../build-rt-<arch>/ (scripts/build-runtime.sh). Throws
// aicc::Error naming the places looked at.
std::string runtimeArchive(const Target& target);

} // namespace aicc::runtime
