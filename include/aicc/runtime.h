/* aicc runtime C API: load a model compiled with `aicc compile MODEL -o DIR --emit so`, bind its
 * inputs, run it and read its outputs. Plain C, no allocation during a run (the arena is
 * allocated at load). Every function that can fail returns a status (0 = success) or NULL, and
 * aicc_last_error() then holds a one-line message naming the input, file or node and the reason
 * (per thread, valid until the next failing call on that thread).
 *
 *   aicc_model* m = aicc_model_load("resnet50.aicc");
 *   if (!m) { fprintf(stderr, "%s\n", aicc_last_error()); return 1; }
 *   aicc_model_set_input(m, 0, image, sizeof(image));
 *   if (aicc_model_run(m) != 0) ...
 *   const float* logits = (const float*)aicc_model_output(m, 0, &bytes);
 *   aicc_model_free(m);
 *
 * Element types are named as in the IR ("f32", "i64", ...).
 *
 * Threads: any number of instances may run at once from any threads (they share aicc's worker
 * pool: aicc_set_num_threads, before the first run). One instance belongs to one thread at a
 * time: set_input or run on an instance that another thread is running fails with "in use by
 * another thread" (a clear error, never a data race); load one instance per thread. Outputs are
 * bit-identical across runs and thread counts (tests/models/check_engines.sh checks it). */
#ifndef AICC_RUNTIME_H
#define AICC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aicc_model aicc_model;

const char* aicc_last_error(void);

aicc_model* aicc_model_load(const char* dir);
/* The model linked into this program or library by `aicc compile --static-runtime` (its model.so
 * or model.a): weights_file is its model.weights, or NULL when it was compiled with
 * --embed-weights. Fails (NULL) where no model is linked in, as in libaicc_rt itself. */
aicc_model* aicc_model_load_linked(const char* weights_file);
void aicc_model_free(aicc_model* m);

int aicc_model_num_inputs(const aicc_model* m);
int aicc_model_num_outputs(const aicc_model* m);
/* Name, element type, rank and dims (up to max_rank written) of input / output i; NULL or -1 on
 * a bad index. A symbolic input dim (a batch compiled to run any size up to its bound) reads -1,
 * and aicc_model_input_bytes is then the size at the bounds; an output's dims are the last run's
 * (before a run: at the symbols' bounds). An output of run-time
 * size (a data-dependent shape: NonZero, NonMaxSuppression,
 * ...) has the element type and dims of the last run's value (NULL / -1 before a run). A
 * sequence or optional of tensors has its tensors' element type (and rank -1; see below). */
const char* aicc_model_input_name(const aicc_model* m, int i);
const char* aicc_model_input_dtype(const aicc_model* m, int i);
int aicc_model_input_dims(const aicc_model* m, int i, int64_t* dims, int max_rank);
size_t aicc_model_input_bytes(const aicc_model* m, int i);
/* The symbol of input / output i's dim k ("N"), with the range a run may give it, or NULL for a
 * static dim (or a bad index). */
const char* aicc_model_input_dim_symbol(const aicc_model* m, int i, int k, int64_t* lo,
                                        int64_t* hi);
const char* aicc_model_output_dim_symbol(const aicc_model* m, int i, int k, int64_t* lo,
                                         int64_t* hi);
const char* aicc_model_output_name(const aicc_model* m, int i);
const char* aicc_model_output_dtype(const aicc_model* m, int i);
int aicc_model_output_dims(const aicc_model* m, int i, int64_t* dims, int max_rank);

/* The data is read during aicc_model_run (not copied); `bytes` must equal the input's size. An
 * input with one symbolic dim takes its value from `bytes`; aicc_model_set_input_dims gives the
 * dims (checked against the declaration: rank, static dims; at run: each symbol's range and one
 * value per symbol across the inputs). */
int aicc_model_set_input(aicc_model* m, int i, const void* data, size_t bytes);
int aicc_model_set_input_dims(aicc_model* m, int i, const void* data, size_t bytes,
                              const int64_t* dims, int rank);
int aicc_model_run(aicc_model* m);
/* Points into the model's arena (an output of run-time size: into the last run's value); valid
 * until the next run or aicc_model_free. */
const void* aicc_model_output(const aicc_model* m, int i, size_t* bytes);

/* Sequences and optionals (an input or output whose type is seq<...> or opt<...>). Its type as
 * text ("seq<f32[N]>", "opt<i64[4]>", "opt<seq<f32[?]>>"), NULL for a tensor. */
const char* aicc_model_input_type(const aicc_model* m, int i);
const char* aicc_model_output_type(const aicc_model* m, int i);
/* Input i as `count` tensors: data[k] with ranks[k] dims dims[k] (copied; an optional tensor
 * takes one). count -1: an optional without its element. Checked against the declaration
 * (element type, each tensor's rank and static dims). */
int aicc_model_set_input_sequence(aicc_model* m, int i, int count, const void* const* data,
                                  const int64_t* const* dims, const int* ranks);
/* Output i of the last run: *count its tensors (-1: an optional without its element); tensor k's
 * data and bytes, and its rank (the return value, -1 on error) with up to max_rank dims. Valid
 * until the next run or aicc_model_free. */
int aicc_model_output_sequence(const aicc_model* m, int i, int* count);
int aicc_model_output_item(const aicc_model* m, int i, int k, const void** data, size_t* bytes,
                           int64_t* dims, int max_rank);

/* Threads for the kernels (counting the caller); applies to every loaded model. */
void aicc_set_num_threads(int n);
/* A memory budget in bytes for what aicc allocates (arenas, scratch, weights, tensors; 0 = none,
 * the default): loading a model that would exceed it fails with a message naming the sizes. */
void aicc_set_max_memory(size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* AICC_RUNTIME_H */
