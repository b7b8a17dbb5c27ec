/* Pure C99 program over include/graphi/graphi.h (proves the header is valid C and the library
 * links from C): runs tests/data/onnx/mlp.onnx on the committed input and compares the output
 * with PyTorch's (mlp.out0.npy). Usage: c_api_smoke DIR (the tests/data/onnx directory).
 * Exit 0 on success, 1 with a message otherwise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphi/graphi.h"

/* Reads the float32 payload of a version 1 .npy file (header: magic, version, u16 length). */
static float* read_npy_f32(const char* path, size_t expect_count) {
  FILE* f = fopen(path, "rb");
  unsigned char head[10];
  float* data = NULL;
  if (f == NULL) return NULL;
  if (fread(head, 1, 10, f) == 10 && memcmp(head, "\x93NUMPY\x01", 7) == 0) {
    long hlen = head[8] | (head[9] << 8);
    if (fseek(f, 10 + hlen, SEEK_SET) == 0) {
      data = (float*)malloc(expect_count * sizeof(float));
      if (data != NULL && fread(data, sizeof(float), expect_count, f) != expect_count) {
        free(data);
        data = NULL;
      }
    }
  }
  fclose(f);
  return data;
}

static int fail(const char* what) {
  fprintf(stderr, "c_api_smoke: %s: %s\n", what, graphi_last_error());
  return 1;
}

int main(int argc, char** argv) {
  char path[4096];
  graphi_options options;
  graphi_session* session = NULL;
  graphi_outputs* outputs = NULL;
  graphi_tensor info, y;
  graphi_tensor input;
  static const int64_t shape[2] = {4, 16};
  float *x, *want;
  float got[40];
  graphi_buffer buffer;
  double max_err = 0;
  size_t i;

  if (argc != 2) {
    fprintf(stderr, "usage: c_api_smoke DIR\n");
    return 2;
  }
  snprintf(path, sizeof path, "%s/mlp.in0.npy", argv[1]);
  x = read_npy_f32(path, 64);
  snprintf(path, sizeof path, "%s/mlp.out0.npy", argv[1]);
  want = read_npy_f32(path, 40);
  if (x == NULL || want == NULL) {
    fprintf(stderr, "c_api_smoke: cannot read the mlp .npy files in %s\n", argv[1]);
    return 1;
  }

  /* Errors are codes. */
  if (graphi_session_open(NULL, NULL, &session) != GRAPHI_INVALID_ARGUMENT || session != NULL)
    return fail("NULL path accepted");
  if (graphi_session_open("/nonexistent.onnx", NULL, &session) != GRAPHI_IO_ERROR)
    return fail("missing file not reported");

  graphi_options_init(&options);
  options.pin = 0;
  snprintf(path, sizeof path, "%s/mlp.onnx", argv[1]);
  if (graphi_session_open(path, &options, &session) != GRAPHI_OK) return fail("open");
  if (graphi_session_num_inputs(session) != 1 ||
      graphi_session_input(session, 0, &info) != GRAPHI_OK)
    return fail("input info");
  printf("input %s %s rank %d bytes %zu; %s\n", info.name, graphi_dtype_name(info.dtype),
         (int)info.rank, info.bytes, graphi_session_config_summary(session));

  input.name = "x";
  input.dtype = GRAPHI_F32;
  input.rank = 2;
  input.shape = shape;
  input.data = x;
  input.bytes = 64 * sizeof(float);
  if (graphi_session_run(session, &input, 1, &outputs) != GRAPHI_OK) return fail("run");
  if (graphi_outputs_get(outputs, 0, &y) != GRAPHI_OK || y.bytes != sizeof got)
    return fail("outputs_get");
  for (i = 0; i < 40; ++i) {
    double e = fabs(((const float*)y.data)[i] - want[i]);
    if (e > max_err) max_err = e;
  }
  graphi_outputs_free(outputs);

  buffer.data = got;
  buffer.capacity = sizeof got - 1;
  if (graphi_session_run_into(session, &input, 1, &buffer, 1) != GRAPHI_INVALID_ARGUMENT)
    return fail("a too small buffer was accepted");
  buffer.capacity = sizeof got;
  if (graphi_session_run_into(session, &input, 1, &buffer, 1) != GRAPHI_OK) return fail("run_into");
  for (i = 0; i < 40; ++i) {
    double e = fabs(got[i] - want[i]);
    if (e > max_err) max_err = e;
  }
  graphi_session_free(session);
  free(x);
  free(want);
  printf("max abs error vs PyTorch: %.3g\n", max_err);
  if (max_err > 1e-5) {
    fprintf(stderr, "c_api_smoke: output differs from PyTorch's\n");
    return 1;
  }
  return 0;
}
