/*===- ModelABI.h - The model.so C ABI shared by fpc and runtime --*- C -*-===*\
|*                                                                            *|
|* A compiled model library (model.so) exports the functions declared here.   *|
|* fpc's code generator emits them; the runtime's loader dlopen()s the        *|
|* library, checks fp_model_abi_version() against FP_MODEL_ABI_VERSION,       *|
|* checks the manifest against its checksum, parses it and resolves the       *|
|* per-layer entry points whose names the manifest lists.                     *|
|*                                                                            *|
|* The header is plain C (C99/C++17), depends on nothing but <stddef.h> and   *|
|* <stdint.h>, and is the only file both subtrees include. Any change to a    *|
|* struct layout or a signature bumps FP_MODEL_ABI_VERSION.                   *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef FP_RUNTIME_MODELABI_H
#define FP_RUNTIME_MODELABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The ABI version this header describes.
#define FP_MODEL_ABI_VERSION 6u

/// Library-level symbols every model.so exports.
#define FP_SYMBOL_ABI_VERSION "fp_model_abi_version"
#define FP_SYMBOL_MANIFEST "fp_model_manifest"
#define FP_SYMBOL_LAST_ERROR "fp_model_last_error"
#define FP_SYMBOL_MANIFEST_CHECKSUM "fp_model_manifest_checksum"

/// The manifest's checksum: FNV-1a (64 bits) of its bytes up to the NUL.
/// fpc compiles it into the library beside the manifest, and the loader
/// recomputes it, so that a manifest edited in the file (a parameter's
/// shape, d_model) is refused rather than trusted by code compiled for
/// another one. It detects accidents, not deliberate forgery.
static inline uint64_t fp_manifest_checksum(const char *text) {
  uint64_t hash = 14695981039346656037ull;
  for (; *text; ++text) {
    hash ^= (uint64_t)(unsigned char)*text;
    hash *= 1099511628211ull;
  }
  return hash;
}

/// Where a call runs.
typedef enum fp_target {
  FP_TARGET_CPU = 0,
  FP_TARGET_CUDA = 1,
} fp_target;

/// Element type of every floating-point buffer of a call.
typedef enum fp_dtype {
  FP_DTYPE_F32 = 0,
  FP_DTYPE_F64 = 1,
  FP_DTYPE_BF16 = 2, /* storage only; accumulation in f32 */
} fp_dtype;

/// Status codes returned by entry points. On failure the library keeps a
/// message for the calling thread, readable with fp_model_last_error().
typedef enum fp_status {
  FP_OK = 0,
  FP_ERROR_INVALID_ARGUMENT = 1,
  FP_ERROR_UNSUPPORTED = 2, /* target or dtype not compiled in */
  FP_ERROR_WORKSPACE = 3,   /* workspace missing or too small */
  FP_ERROR_DEVICE = 4,      /* a CUDA or BLAS call failed */
} fp_status;

/// Per-call overrides of the solver settings compiled into a layer
/// (docs/spec.md §3). A field holding its "keep" value (negative, or NaN for
/// reals) leaves the compiled default in place.
typedef struct fp_solver_overrides {
  int32_t max_iter;    /* iteration cap; < 0: keep (train or eval default) */
  int32_t fixed_iters; /* > 0: run exactly this many steps (benchmarks) */
  double tolerance;    /* NaN: keep */
  double quantile;     /* NaN: keep */
} fp_solver_overrides;

/// Statistics a call reports. Arrays are caller-owned host memory of length
/// `batch`, or NULL when not wanted.
typedef struct fp_solver_stats {
  int32_t *iterations;    /* per sample: steps + 1 (docs/spec.md §3.6) */
  float *residuals;       /* per sample: best relative residual reached */
  int32_t steps;          /* solver steps taken by the whole batch */
  int32_t backward_steps; /* steps of an iterative backward (implicit mode) */
  int32_t host_waits;     /* set to 0 by the caller; the library adds the
                             times the host loop of the forward's solves
                             waited for the device to publish its progress
                             (CUDA only), not counting CUDA synchronisation
                             calls */
} fp_solver_stats;

/// The forward's solver statistics left in device memory (CUDA calls only):
/// each pointer is memory of the call's device, or NULL when not wanted. The
/// call queues their writes on its stream and returns without waiting for the
/// device, so a caller that reads them later, or never, does not block the
/// host at the end of every call (fp_solver_stats' arrays and `steps` cost a
/// stream synchronisation). They hold their values once the stream's work
/// queued by the call has completed.
typedef struct fp_device_stats {
  int64_t *iterations; /* per sample: solver steps + 1, as fp_solver_stats */
  float *residuals;    /* per sample: best relative residual reached */
  int64_t *steps;      /* one value: solver steps taken by the whole batch */
} fp_device_stats;

/// Arguments of one layer forward. Buffers live on the call's target, are
/// dense row-major and of the call's dtype; `params` follows the order of the
/// layer's parameter list in the manifest.
typedef struct fp_forward_args {
  uint32_t struct_size; /* sizeof(fp_forward_args), checked by the library */
  fp_target target;
  fp_dtype dtype;
  int32_t allow_tf32; /* nonzero: on FP_TARGET_CUDA in f32, the call's
                         GEMMs (cuBLAS: linear maps, weight gradients) may
                         run on TF32 tensor cores (inputs rounded to 10-bit
                         mantissas, sums in f32), as PyTorch's
                         torch.backends.cuda.matmul.allow_tf32; other
                         targets and dtypes ignore it */
  void *stream;       /* cudaStream_t on FP_TARGET_CUDA, else NULL */
  int64_t batch;      /* B */
  int64_t seq_len;    /* T */
  int32_t training;   /* nonzero: training-mode solver rule and caps */
  int32_t num_params;
  const void *const *params;
  const void *input; /* B x T x D */
  void *output;      /* B x T x D */
  void *saved;       /* saved-for-backward buffer, or NULL (inference) */
  void *workspace;
  size_t workspace_bytes;
  const fp_solver_overrides *solver; /* may be NULL */
  fp_solver_stats *stats;            /* may be NULL */
  /* May be NULL; not NULL only on FP_TARGET_CUDA. Where set, the call writes
     the statistics there and, of `stats`, only host_waits: it leaves
     iterations, residuals and steps unwritten and never waits for the
     device to report them. */
  fp_device_stats *device_stats;
} fp_forward_args;

/// Arguments of one layer backward, after a forward with `saved` set.
typedef struct fp_backward_args {
  uint32_t struct_size; /* sizeof(fp_backward_args) */
  fp_target target;
  fp_dtype dtype;
  int32_t allow_tf32; /* as in fp_forward_args */
  void *stream;
  int64_t batch;
  int64_t seq_len;
  int32_t num_params;
  const void *const *params;
  const void *input;        /* the forward's input */
  const void *saved;        /* as filled by the forward */
  const void *grad_output;  /* B x T x D */
  void *grad_input;         /* B x T x D, overwritten */
  void *const *grad_params; /* one per parameter, accumulated into (+=) */
  void *workspace;
  size_t workspace_bytes;
  fp_solver_stats *stats; /* may be NULL */
} fp_backward_args;

/// Arguments of one chunked layer forward (docs/streaming.md): the forward
/// of the next `seq_len` tokens of each of `batch` sequences, given the
/// state the tokens before them left, writing the state they leave. The
/// states are listed in the manifest (`layers[i].chunk.states`, each of
/// `batch` times its per-sample shape) and are buffers of the call's target
/// and dtype; zeros are the state before a sequence's first token.
/// `state_out[i]` may be `state_in[i]`: the call reads every state before
/// it writes any. Fields shared with fp_forward_args mean what they mean
/// there; a chunked call saves nothing for a backward.
typedef struct fp_chunk_args {
  uint32_t struct_size; /* sizeof(fp_chunk_args), checked by the library */
  fp_target target;
  fp_dtype dtype;
  int32_t allow_tf32; /* as in fp_forward_args */
  void *stream;       /* cudaStream_t on FP_TARGET_CUDA, else NULL */
  int64_t batch;      /* B */
  int64_t seq_len;    /* T: tokens in the chunk, >= 1 */
  int32_t training;   /* nonzero: training-mode solver rule and caps */
  int32_t num_params;
  const void *const *params;
  const void *input; /* B x T x D */
  void *output;      /* B x T x D */
  int32_t num_states;
  const void *const *state_in; /* one per state, in manifest order */
  void *const *state_out;      /* one per state, in manifest order */
  void *workspace;
  size_t workspace_bytes;
  const fp_solver_overrides *solver; /* may be NULL */
  fp_solver_stats *stats;            /* may be NULL */
  fp_device_stats *device_stats;     /* as in fp_forward_args */
} fp_chunk_args;

/// Sizes a caller must allocate for a call shape.
typedef struct fp_buffer_sizes {
  size_t forward_workspace_bytes;
  size_t saved_bytes;
  size_t backward_workspace_bytes;
  size_t chunk_workspace_bytes; /* a chunked forward of seq_len tokens; 0
                                   where the library has no chunked call */
} fp_buffer_sizes;

/// Library-level entry points.
typedef uint32_t (*fp_abi_version_fn)(void);
typedef const char *(*fp_manifest_fn)(void);
typedef uint64_t (*fp_manifest_checksum_fn)(void);
typedef const char *(*fp_last_error_fn)(void);

/// Per-layer entry points; their symbol names are listed in the manifest
/// (`layers[i].entry_points.{buffer_sizes,forward,backward,schedule,
/// forward_chunk}`).
typedef fp_status (*fp_buffer_sizes_fn)(fp_target target, fp_dtype dtype,
                                        int64_t batch, int64_t seq_len,
                                        fp_buffer_sizes *sizes);
typedef fp_status (*fp_forward_fn)(const fp_forward_args *args);
typedef fp_status (*fp_backward_fn)(const fp_backward_args *args);
/// Optional: listed as `layers[i].entry_points.forward_chunk` where the
/// library has it (fpc without --no-chunked, for a layer whose ops couple
/// tokens; a layer whose ops do not runs any chunk with `forward`).
typedef fp_status (*fp_forward_chunk_fn)(const fp_chunk_args *args);
/// The schedule a call of this shape runs ("fused", "split" or "unfused";
/// a CUDA library may hold two), or NULL with the error recorded. Optional:
/// listed as `layers[i].entry_points.schedule` where the library has it.
typedef const char *(*fp_schedule_fn)(fp_target target, fp_dtype dtype,
                                      int64_t batch, int64_t seq_len);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FP_RUNTIME_MODELABI_H */
