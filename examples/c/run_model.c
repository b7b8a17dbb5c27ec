/* A complete C program on graphi's C API (include/graphi/graphi.h): opens a model, fills every
 * input with 0.5 (float32) or 1 (integer ids), runs it once and prints each output's shape and
 * first values.
 *
 *   cc -std=c99 run_model.c -I"$P/include" -L"$P/lib" -lgraphi -Wl,-rpath,"$P/lib" -o run_model
 *   ./run_model model.onnx [NAME=VALUE ...]      (NAME=VALUE: symbolic ONNX dims)
 *
 * or with CMake: examples/c/CMakeLists.txt (find_package(graphi)). Exit code 1 on any error,
 * with graphi's message on stderr. */
#include <graphi/graphi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TENSORS 64
#define MAX_DIMS 16

static int fail(const char* what) {
  fprintf(stderr, "run_model: %s: %s\n", what, graphi_last_error());
  return 1;
}

int main(int argc, char** argv) {
  const char* dim_names[MAX_DIMS];
  int64_t dim_values[MAX_DIMS];
  graphi_options options;
  graphi_session* session = NULL;
  graphi_tensor inputs[MAX_TENSORS];
  void* buffers[MAX_TENSORS];
  graphi_outputs* outputs = NULL;
  size_t n_in, i;
  int d, rc = 0;

  if (argc < 2 || argc - 2 > MAX_DIMS) {
    fprintf(stderr, "usage: run_model MODEL [NAME=VALUE ...]\n");
    return 2;
  }
  graphi_options_init(&options);
  for (d = 2; d < argc; ++d) {
    char* eq = strchr(argv[d], '=');
    if (!eq) {
      fprintf(stderr, "run_model: '%s' is not NAME=VALUE\n", argv[d]);
      return 2;
    }
    *eq = '\0';
    dim_names[d - 2] = argv[d];
    dim_values[d - 2] = strtoll(eq + 1, NULL, 10);
  }
  options.dim_names = dim_names;
  options.dim_values = dim_values;
  options.num_dims = (size_t)(argc - 2);
  if (graphi_session_open(argv[1], &options, &session) != GRAPHI_OK) return fail(argv[1]);
  printf("%s: %s\n", argv[1], graphi_session_config_summary(session));

  n_in = graphi_session_num_inputs(session);
  if (n_in > MAX_TENSORS) n_in = MAX_TENSORS;
  for (i = 0; i < n_in; ++i) {
    size_t e, n;
    if (graphi_session_input(session, i, &inputs[i]) != GRAPHI_OK) return fail("input");
    buffers[i] = malloc(inputs[i].bytes ? inputs[i].bytes : 1);
    if (!buffers[i]) return fail("malloc");
    n = inputs[i].bytes / graphi_dtype_size(inputs[i].dtype);
    for (e = 0; e < n; ++e) {
      if (inputs[i].dtype == GRAPHI_F32) ((float*)buffers[i])[e] = 0.5f;
      if (inputs[i].dtype == GRAPHI_I32) ((int32_t*)buffers[i])[e] = 1;
      if (inputs[i].dtype == GRAPHI_I64) ((int64_t*)buffers[i])[e] = 1;
    }
    inputs[i].data = buffers[i];
  }

  if (graphi_session_run(session, inputs, n_in, &outputs) != GRAPHI_OK) {
    rc = fail("run");
  } else {
    for (i = 0; i < graphi_outputs_count(outputs); ++i) {
      graphi_tensor t;
      int32_t r;
      graphi_outputs_get(outputs, i, &t);
      printf("%s %s[", t.name, graphi_dtype_name(t.dtype));
      for (r = 0; r < t.rank; ++r) printf("%s%lld", r ? ", " : "", (long long)t.shape[r]);
      printf("]");
      if (t.dtype == GRAPHI_F32 && t.bytes >= sizeof(float)) {
        size_t e, n = t.bytes / sizeof(float);
        for (e = 0; e < n && e < 4; ++e) printf(" %.5f", ((const float*)t.data)[e]);
      }
      printf("\n");
    }
  }
  graphi_outputs_free(outputs);
  graphi_session_free(session);
  for (i = 0; i < n_in; ++i) free(buffers[i]);
  return rc;
}
