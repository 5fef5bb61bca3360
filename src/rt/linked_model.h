/* The model a self-contained artifact carries (`aicc compile --static-runtime`): the plan, the
 * task functions by name, and optionally the weights, linked into model.so / model.a next to the
 * runtime. The artifact writer compiles a C file that defines `aicc_linked_model` with this
 * header's text (embedded into the compiler at build time, so there is one definition); the
 * runtime reads it through aicc_model_load_linked() (the model in the same binary) or, for a
 * folder without model.plan, through dlsym on its model.so (rt::Artifact(dir)). Plain C: it is
 * compiled by the C compiler that links the artifact. */
#ifndef AICC_RT_LINKED_MODEL_H
#define AICC_RT_LINKED_MODEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AICC_LINKED_MODEL_VERSION 1

struct aicc_linked_fn {
  const char* name;           /* a task function of the plan ("task0", ...) */
  int32_t (*fn)(void** args); /* 0 = success */
};

struct aicc_linked_model_desc {
  uint32_t version;                 /* AICC_LINKED_MODEL_VERSION */
  const char* plan;                 /* model.plan's text, NUL-terminated */
  const unsigned char* weights;     /* the weights blob (64-byte aligned), or NULL: read */
  uint64_t weight_bytes;            /*   model.weights at load instead */
  void (*bind)(void* const* table); /* aicc_artifact_bind: the runtime's entry points */
  const char* signature;            /* aicc_artifact_signature */
  const struct aicc_linked_fn* fns; /* every task function */
  uint32_t num_fns;
};

#ifdef __cplusplus
}
#endif

#endif /* AICC_RT_LINKED_MODEL_H */
