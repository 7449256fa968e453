/*===- abi_layout.c - The ABI structs' layout as a C compiler sees it -----===*\
|*                                                                            *|
|* Prints every field of the structs of ModelABI.h as "struct field offset",  *|
|* and each struct's size as "struct sizeof size", for test_abi_layout.py to  *|
|* compare with the fpc package's ctypes declarations.                        *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "fp/Runtime/ModelABI.h"

#include <stddef.h>
#include <stdio.h>

#define FIELD(s, f) printf("%s %s %zu\n", #s, #f, offsetof(s, f))
#define SIZE(s) printf("%s sizeof %zu\n", #s, sizeof(s))

int main(void) {
  SIZE(fp_solver_overrides);
  FIELD(fp_solver_overrides, max_iter);
  FIELD(fp_solver_overrides, fixed_iters);
  FIELD(fp_solver_overrides, tolerance);
  FIELD(fp_solver_overrides, quantile);

  SIZE(fp_solver_stats);
  FIELD(fp_solver_stats, iterations);
  FIELD(fp_solver_stats, residuals);
  FIELD(fp_solver_stats, steps);
  FIELD(fp_solver_stats, backward_steps);
  FIELD(fp_solver_stats, host_waits);

  SIZE(fp_device_stats);
  FIELD(fp_device_stats, iterations);
  FIELD(fp_device_stats, residuals);
  FIELD(fp_device_stats, steps);

  SIZE(fp_forward_args);
  FIELD(fp_forward_args, struct_size);
  FIELD(fp_forward_args, target);
  FIELD(fp_forward_args, dtype);
  FIELD(fp_forward_args, allow_tf32);
  FIELD(fp_forward_args, stream);
  FIELD(fp_forward_args, batch);
  FIELD(fp_forward_args, seq_len);
  FIELD(fp_forward_args, training);
  FIELD(fp_forward_args, num_params);
  FIELD(fp_forward_args, params);
  FIELD(fp_forward_args, input);
  FIELD(fp_forward_args, output);
  FIELD(fp_forward_args, saved);
  FIELD(fp_forward_args, workspace);
  FIELD(fp_forward_args, workspace_bytes);
  FIELD(fp_forward_args, solver);
  FIELD(fp_forward_args, stats);
  FIELD(fp_forward_args, device_stats);

  SIZE(fp_backward_args);
  FIELD(fp_backward_args, struct_size);
  FIELD(fp_backward_args, target);
  FIELD(fp_backward_args, dtype);
  FIELD(fp_backward_args, allow_tf32);
  FIELD(fp_backward_args, stream);
  FIELD(fp_backward_args, batch);
  FIELD(fp_backward_args, seq_len);
  FIELD(fp_backward_args, num_params);
  FIELD(fp_backward_args, params);
  FIELD(fp_backward_args, input);
  FIELD(fp_backward_args, saved);
  FIELD(fp_backward_args, grad_output);
  FIELD(fp_backward_args, grad_input);
  FIELD(fp_backward_args, grad_params);
  FIELD(fp_backward_args, workspace);
  FIELD(fp_backward_args, workspace_bytes);
  FIELD(fp_backward_args, stats);

  SIZE(fp_chunk_args);
  FIELD(fp_chunk_args, struct_size);
  FIELD(fp_chunk_args, target);
  FIELD(fp_chunk_args, dtype);
  FIELD(fp_chunk_args, allow_tf32);
  FIELD(fp_chunk_args, stream);
  FIELD(fp_chunk_args, batch);
  FIELD(fp_chunk_args, seq_len);
  FIELD(fp_chunk_args, training);
  FIELD(fp_chunk_args, num_params);
  FIELD(fp_chunk_args, params);
  FIELD(fp_chunk_args, input);
  FIELD(fp_chunk_args, output);
  FIELD(fp_chunk_args, num_states);
  FIELD(fp_chunk_args, state_in);
  FIELD(fp_chunk_args, state_out);
  FIELD(fp_chunk_args, workspace);
  FIELD(fp_chunk_args, workspace_bytes);
  FIELD(fp_chunk_args, solver);
  FIELD(fp_chunk_args, stats);
  FIELD(fp_chunk_args, device_stats);

  SIZE(fp_buffer_sizes);
  FIELD(fp_buffer_sizes, forward_workspace_bytes);
  FIELD(fp_buffer_sizes, saved_bytes);
  FIELD(fp_buffer_sizes, backward_workspace_bytes);
  FIELD(fp_buffer_sizes, chunk_workspace_bytes);

  printf("abi version %u\n", (unsigned)FP_MODEL_ABI_VERSION);
  return 0;
}
