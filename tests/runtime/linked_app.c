/* An application with a model linked in (`aicc compile --static-runtime`): loads it with
 * aicc_model_load_linked, runs it on raw input files on one thread, writes out<i>.bin.
 *   linked_app WEIGHTS|- IN0.bin [IN1.bin ...]     ("-": the weights are linked in) */
#include "aicc_runtime.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  aicc_model* m;
  int i;
  if (argc < 2) {
    fprintf(stderr, "usage: linked_app WEIGHTS|- IN0.bin ...\n");
    return 2;
  }
  aicc_set_num_threads(1);
  m = aicc_model_load_linked(argv[1][0] == '-' ? NULL : argv[1]);
  if (!m) {
    fprintf(stderr, "%s\n", aicc_last_error());
    return 1;
  }
  if (argc - 2 != aicc_model_num_inputs(m)) {
    fprintf(stderr, "the model takes %d inputs, got %d files\n", aicc_model_num_inputs(m), argc - 2);
    return 1;
  }
  for (i = 0; i < aicc_model_num_inputs(m); ++i) {
    const size_t bytes = aicc_model_input_bytes(m, i);
    void* data = malloc(bytes);
    FILE* f = fopen(argv[2 + i], "rb");
    if (!data || !f || fread(data, 1, bytes, f) != bytes) {
      fprintf(stderr, "cannot read %zu bytes from %s\n", bytes, argv[2 + i]);
      return 1;
    }
    fclose(f);
    if (aicc_model_set_input(m, i, data, bytes)) {
      fprintf(stderr, "%s\n", aicc_last_error());
      return 1;
    }
  }
  if (aicc_model_run(m)) {
    fprintf(stderr, "%s\n", aicc_last_error());
    return 1;
  }
  for (i = 0; i < aicc_model_num_outputs(m); ++i) {
    size_t bytes = 0;
    const void* out = aicc_model_output(m, i, &bytes);
    char name[32];
    FILE* f;
    sprintf(name, "out%d.bin", i);
    f = fopen(name, "wb");
    if (!f || fwrite(out, 1, bytes, f) != bytes) {
      fprintf(stderr, "cannot write %s\n", name);
      return 1;
    }
    fclose(f);
  }
  aicc_model_free(m);
  return 0;
}
