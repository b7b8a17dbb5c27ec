/* graphi's plain C API (C99), a thin layer over the C++ API (graphi.hpp) in libgraphi.so.
 *
 * Errors: every function that can fail returns a graphi_status (GRAPHI_OK = 0; the codes equal
 * graphi::StatusCode of graphi/types.h). After a failure, graphi_last_error() returns the
 * message (naming the file, input or node) of the last failed call on the calling thread.
 * Null pointers, wrong sizes and unknown names give GRAPHI_INVALID_ARGUMENT, never a crash.
 *
 * Ownership:
 *   - graphi_session: created by graphi_session_open, freed by graphi_session_free (NULL is a
 *     no-op). Strings and shape arrays returned by graphi_session_input/output and
 *     graphi_session_config_summary belong to the session and stay valid until it is freed.
 *   - Input buffers (graphi_tensor.data, .shape, .name) belong to the caller and are only read,
 *     during the call.
 *   - graphi_session_run returns the outputs in a library-owned graphi_outputs; the tensors it
 *     describes (names, shapes, data) stay valid until graphi_outputs_free.
 *   - graphi_session_run_into copies the outputs into caller-owned buffers instead. It checks
 *     every buffer before writing any: on error, no buffer has been written.
 *
 * Threads: graphi_session_run / _run_into may be called on one session from several threads at
 * once; the runs are serialized. graphi_last_error is per thread.
 *
 * Freeing a session while other threads are inside graphi_session_run / _run_into is allowed:
 * the run in progress is cancelled (the ops already started finish, no further op starts) and
 * returns GRAPHI_INVALID_ARGUMENT, graphi_last_error() containing "run cancelled: the Session is
 * being destroyed" (a run that had already finished its last op succeeds normally); every call
 * waiting for its turn returns the same error without running; _run_into then writes no buffer.
 * graphi_session_free blocks until all those calls have returned and the engine's threads are
 * joined. A call that starts after graphi_session_free has begun, or races with its start, uses
 * freed memory, and so does any other function on a session being freed (the accessors, whose
 * strings die with the session): stop issuing new calls first. */
#ifndef GRAPHI_H
#define GRAPHI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define GRAPHI_C_API
#else
#define GRAPHI_C_API __attribute__((visibility("default")))
#endif

typedef int32_t graphi_status;
#define GRAPHI_OK 0
#define GRAPHI_INVALID_ARGUMENT 1 /* caller passed something wrong: shape, dtype, name, size */
#define GRAPHI_INVALID_GRAPH 2    /* the model file is malformed */
#define GRAPHI_UNSUPPORTED 3      /* well formed but not supported (unknown op, ...) */
#define GRAPHI_IO_ERROR 4         /* a file could not be read */
#define GRAPHI_OUT_OF_MEMORY 5
#define GRAPHI_INTERNAL 6 /* a bug in graphi */

typedef int32_t graphi_dtype;
#define GRAPHI_F32 1
#define GRAPHI_I32 2
#define GRAPHI_I64 3

typedef struct graphi_session graphi_session; /* opaque */
typedef struct graphi_outputs graphi_outputs; /* opaque */

/* Session options. Fill with graphi_options_init, then change fields. A batch of N > 1
 * samples may run as N one-sample slices where the model keeps its samples apart and that
 * measured faster (docs/CNN.md, "Batches in slices"); the environment's GRAPHI_BATCH_SPLIT
 * (auto, the default; off; on) decides, as for the other front ends. */
typedef struct graphi_options {
  /* n executors x k threads each. 0 x 0 (the default) = the plan's split: the plan `graphi
   * profile` cached for this model and machine, else a quick choice from the graph and the
   * topology (all allowed cores; see graphi_session_open_with_plan). Setting either chooses the
   * split yourself (the other then defaults to 1); 1 x 1 is the sequential reference executor. */
  int32_t executors;
  int32_t threads;
  /* "sequential", "cpf", "fifo", "shared-queue"; NULL (default) = cpf with several executors,
   * else sequential. */
  const char* scheduler;
  int32_t ring_capacity; /* default 1 */
  int32_t pin;           /* nonzero: pin threads to cores (default 1) */
  const char* cpuset;    /* e.g. "0-3,8"; NULL or "" = the process's allowed cores */
  int32_t optimize;      /* nonzero: apply the default graph passes (default 1) */
  /* Values of symbolic dims of an .onnx file: num_dims pairs (dim_names[i], dim_values[i]). */
  const char* const* dim_names;
  const int64_t* dim_values;
  size_t num_dims;
  /* Storage precision of the fused LSTM/GRU/RNN weights: NULL or "fp32" (default), "bf16" (bf16
   * weights, fp32 accumulation), "int8" (s8 weights, u8 activations, int32 accumulation; see
   * docs/RNN_KERNELS.md). Set to NULL by graphi_options_init. */
  const char* rnn_weights;
  /* Memory budget in bytes: a model whose file, weights or planned memory exceed it is refused
   * with GRAPHI_OUT_OF_MEMORY (a message naming the file and the amounts) before allocating.
   * 0 (default): the memory the machine has available at load time. */
  uint64_t max_memory;
  /* Inputs of an .onnx file that are also initializers (keep_initializers_as_inputs=True
   * exports) which you want to feed: num_override_initializers names. Unnamed ones stay
   * constants (feeding one is an error); a named one is an input of the session, and
   * graphi_session_run uses the initializer when it is not given. Added after max_memory. */
  const char* const* override_initializers;
  size_t num_override_initializers;
} graphi_options;

/* A tensor: name, dtype, shape (rank entries), dense row-major data of `bytes` bytes. */
typedef struct graphi_tensor {
  const char* name;
  graphi_dtype dtype;
  int32_t rank;
  const int64_t* shape;
  const void* data;
  size_t bytes;
} graphi_tensor;

/* A caller-owned output buffer for graphi_session_run_into. */
typedef struct graphi_buffer {
  void* data;
  size_t capacity;      /* bytes available at data */
  size_t bytes_written; /* set by graphi_session_run_into */
} graphi_buffer;

/* The message of the last failed call on this thread ("" if none). Valid until the next
 * graphi call on this thread. */
GRAPHI_C_API const char* graphi_last_error(void);
/* "float32", "int32", "int64", or "unknown". */
GRAPHI_C_API const char* graphi_dtype_name(graphi_dtype dtype);
/* Bytes per element (0 for an unknown dtype). */
GRAPHI_C_API size_t graphi_dtype_size(graphi_dtype dtype);

GRAPHI_C_API void graphi_options_init(graphi_options* options); /* NULL: no-op */

/* Loads a .graphi or .onnx model and compiles it. options may be NULL (defaults). On success
 * *out is a new session; on failure *out is set to NULL (when out is not NULL). The split
 * follows plan "auto" (see graphi_session_open_with_plan) unless options give one. */
GRAPHI_C_API graphi_status graphi_session_open(const char* path, const graphi_options* options,
                                               graphi_session** out);
/* graphi_session_open with a choice of plan for a split the options leave at 0 x 0:
 *   NULL or "auto"  the cached plan of `graphi profile` for this model on this machine, else a
 *                   quick analytical choice (what graphi_session_open does), which for a model
 *                   running <= 50 ms is timed once at open against its contender, the faster
 *                   kept and remembered (GRAPHI_SPLIT_CHECK=off skips it; docs/PROFILER.md);
 *   "none"          1 x 1 sequential (the default before plans existed);
 *   a file path     a plan written by `graphi profile --plan-out` (GRAPHI_INVALID_ARGUMENT naming
 *                   the file and field if it was made for another graph, machine or version).
 * The choice is printed on stderr (once per distinct line and process) and returned by
 * graphi_session_plan_summary. (Added in 0.1.0 with plans; graphi_options is unchanged.) */
GRAPHI_C_API graphi_status graphi_session_open_with_plan(const char* path,
                                                         const graphi_options* options,
                                                         const char* plan, graphi_session** out);
GRAPHI_C_API void graphi_session_free(graphi_session* session);

/* Graph inputs and outputs, in declaration order. info->data is NULL and info->bytes is the
 * byte size a tensor of that input/output has. */
GRAPHI_C_API size_t graphi_session_num_inputs(const graphi_session* session);  /* 0 for NULL */
GRAPHI_C_API size_t graphi_session_num_outputs(const graphi_session* session); /* 0 for NULL */
GRAPHI_C_API graphi_status graphi_session_input(const graphi_session* session, size_t index,
                                                graphi_tensor* info);
GRAPHI_C_API graphi_status graphi_session_output(const graphi_session* session, size_t index,
                                                 graphi_tensor* info);
/* How many graphi_session_run / _run_into calls are inside the session now: the one running plus
 * those waiting for their turn (a queue depth; an owner that frees the session under load can wait
 * until its callers are inside). 0 for NULL. */
GRAPHI_C_API int32_t graphi_session_run_calls(const graphi_session* session);
/* The executor configuration, e.g. "2x1 cpf on cores {0} {1}; ..." ("" for NULL). */
GRAPHI_C_API const char* graphi_session_config_summary(const graphi_session* session);
/* What the graph passes did at open ("" with optimize = 0, or for NULL). */
GRAPHI_C_API const char* graphi_session_passes_summary(const graphi_session* session);
/* How the split was chosen, e.g. "graphi: plan from cache FILE: 2x1 cpf" ("" when the options
 * gave the split, with plan "none", or for NULL). */
GRAPHI_C_API const char* graphi_session_plan_summary(const graphi_session* session);

/* Runs the model once. inputs: num_inputs tensors, one per graph input, by name, any order;
 * each input's bytes must equal its shape's size. On success *outputs is a new graphi_outputs
 * holding the graph outputs in output order; on failure it is set to NULL. */
GRAPHI_C_API graphi_status graphi_session_run(graphi_session* session, const graphi_tensor* inputs,
                                              size_t num_inputs, graphi_outputs** outputs);
GRAPHI_C_API size_t graphi_outputs_count(const graphi_outputs* outputs); /* 0 for NULL */
/* Describes output `index`; the pointers in *tensor stay valid until graphi_outputs_free. */
GRAPHI_C_API graphi_status graphi_outputs_get(const graphi_outputs* outputs, size_t index,
                                              graphi_tensor* tensor);
GRAPHI_C_API void graphi_outputs_free(graphi_outputs* outputs); /* NULL: no-op */

/* Runs the model once and copies output i into buffers[i] (graph output order); num_buffers
 * must equal graphi_session_num_outputs. A buffer whose capacity is smaller than its output
 * is GRAPHI_INVALID_ARGUMENT naming the output and the bytes needed, and nothing is written. */
GRAPHI_C_API graphi_status graphi_session_run_into(graphi_session* session,
                                                   const graphi_tensor* inputs, size_t num_inputs,
                                                   graphi_buffer* buffers, size_t num_buffers);

/* Tracing (docs/TRACING.md). graphi_session_set_tracing(s, 1) records every following run op
 * by op (off by default; takes effect between runs, waiting for a run in flight);
 * graphi_session_write_trace writes the last traced run as Chrome Trace Event JSON (opens in
 * Perfetto and chrome://tracing). GRAPHI_INVALID_ARGUMENT when no run was traced yet,
 * GRAPHI_IO_ERROR naming the file when it cannot be written. */
GRAPHI_C_API graphi_status graphi_session_set_tracing(graphi_session* session, int32_t on);
GRAPHI_C_API graphi_status graphi_session_write_trace(graphi_session* session, const char* path);
/* ---- Training (docs/TRAINING.md): one step = forward, loss, gradients and the optimizer's
 * in-place weight update, run as one graph. The model is used as stored (no graph passes;
 * graphi_options.optimize is ignored). Added after graphi_session_*: the ABI above is unchanged. */
typedef struct graphi_trainer graphi_trainer; /* opaque */

typedef struct graphi_train_options {
  const char* loss; /* "ce" (default: softmax cross-entropy, int64 labels [N]), "mse", "value" */
  const char* label_input; /* name of the label / target input the step adds (default "labels") */
  const char* prediction;  /* the value the loss reads; NULL or "" = the model's first output */
  const char* optimizer;   /* "sgd" (default) or "adam" */
  double lr;               /* default 0.1 */
  double momentum;         /* sgd, default 0 */
  double weight_decay;     /* default 0 */
  double beta1, beta2, epsilon; /* adam: 0.9, 0.999, 1e-8 */
} graphi_train_options;

GRAPHI_C_API void graphi_train_options_init(graphi_train_options* options); /* NULL: no-op */
/* Loads `path` and builds its training step. options / train may be NULL (defaults). On
 * failure *out is NULL; a node without a gradient rule is GRAPHI_UNSUPPORTED naming it. */
GRAPHI_C_API graphi_status graphi_trainer_open(const char* path, const graphi_options* options,
                                               const graphi_train_options* train,
                                               graphi_trainer** out);
GRAPHI_C_API void graphi_trainer_free(graphi_trainer* trainer); /* NULL: no-op */
/* One step on a batch: one tensor per model input plus the label input, by name. *loss gets
 * the loss computed before this step's update. One step at a time per trainer. */
GRAPHI_C_API graphi_status graphi_trainer_step(graphi_trainer* trainer, const graphi_tensor* inputs,
                                               size_t num_inputs, float* loss);
GRAPHI_C_API size_t graphi_trainer_num_weights(const graphi_trainer* trainer); /* 0 for NULL */
/* Weight `index` as of now: *weight describes a copy owned by the trainer, valid until the next
 * graphi_trainer_step or graphi_trainer_free. */
GRAPHI_C_API graphi_status graphi_trainer_weight(graphi_trainer* trainer, size_t index,
                                                 graphi_tensor* weight);
/* Writes the model with the current weights as a .graphi file. */
GRAPHI_C_API graphi_status graphi_trainer_save(const graphi_trainer* trainer, const char* path);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GRAPHI_H */
