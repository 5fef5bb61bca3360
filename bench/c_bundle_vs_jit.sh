#!/usr/bin/env bash
# The portable C bundle's speed against the JIT on one model, alternating (docs/codegen-c.md):
#   bench/c_bundle_vs_jit.sh AICC MODEL.onnx [ROUNDS] [ITERS]
# Builds the bundle with `cc -std=c99 $CFLAGS` (default `-O2 -march=native`: the host's vectors
# for the bundle's GCC vector extensions and its generated loops), runs it and `aicc bench MODEL
# --threads 1` in turns, and prints each round's median and minimum ms and the ratios (1 thread
# both). To compare as on an AVX2-only machine: CFLAGS="-O2 -march=haswell" AICC_KERNEL_ISA=avx2.
set -euo pipefail
aicc="$1"; model="$2"; rounds="${3:-3}"; iters="${4:-10}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
"$aicc" compile "$model" -o "$tmp/b" --emit c >/dev/null
cat > "$tmp/b/main.c" <<'C'
#define _POSIX_C_SOURCE 199309L
#include "model.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
int main(int argc, char** argv) {
  void* in[64];
  void* out[64];
  int i, r, n = argc > 1 ? atoi(argv[1]) : 10;
  double* ms = malloc(sizeof(double) * (size_t)n);
  if (model_init("model.weights")) { fprintf(stderr, "%s\n", model_last_error()); return 1; }
  for (i = 0; i < MODEL_NUM_INPUTS; ++i) in[i] = calloc(1, (size_t)model_input_bytes[i]);
  for (i = 0; i < MODEL_NUM_OUTPUTS; ++i) out[i] = malloc((size_t)model_output_bytes[i]);
  for (r = -2; r < n; ++r) { /* two warm-up runs */
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (model_run((const void* const*)in, out)) { fprintf(stderr, "%s\n", model_last_error()); return 1; }
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (r >= 0) ms[r] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
  }
  qsort(ms, (size_t)n, sizeof *ms, cmp);
  printf("%.3f %.3f\n", ms[n / 2], ms[0]);
  return 0;
}
C
cflags="${CFLAGS:--O2 -march=native}"
(cd "$tmp/b" && cc -std=c99 $cflags -c model.c && cc -O2 main.c model.o -o run -lm)
c=(); j=(); cmin=(); jmin=()
for r in $(seq "$rounds"); do
  read -r cm cn < <(cd "$tmp/b" && ./run "$iters")
  line="$("$aicc" bench "$model" --threads 1 --iters "$iters" --warmup 2 2>&1 | head -1)"
  jm="$(grep -o 'median [0-9.]*' <<<"$line" | cut -d' ' -f2)"
  jn="$(grep -o 'min [0-9.]*' <<<"$line" | cut -d' ' -f2)"
  c+=("$cm"); cmin+=("$cn"); j+=("$jm"); jmin+=("$jn")
  echo "round $r: C bundle median $cm ms (min $cn), JIT median $jm ms (min $jn)"
done
python3 - "${c[*]}" "${j[*]}" "${cmin[*]}" "${jmin[*]}" <<'PY'
import statistics, sys
c, j, cn, jn = ([float(x) for x in a.split()] for a in sys.argv[1:5])
print(f"median of the rounds' medians: C bundle {statistics.median(c):.2f} ms, "
      f"JIT {statistics.median(j):.2f} ms, C/JIT {statistics.median(c) / statistics.median(j):.2f}")
print(f"best run: C bundle {min(cn):.2f} ms, JIT {min(jn):.2f} ms, C/JIT {min(cn) / min(jn):.2f}")
PY
