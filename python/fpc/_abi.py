#===- python/fpc/_abi.py - The model library's C ABI in ctypes -----------===#
#
# The structs and functions of runtime/include/fp/Runtime/ModelABI.h, field
# for field, for ABI version 6. A library checks each struct's struct_size,
# and tests/test_abi_layout.py compares every field's offset with the
# header's as a C compiler lays it out.
#
#===------------------------------------------------------------------------===#

import ctypes
from ctypes import (POINTER, c_char_p, c_double, c_float, c_int, c_int32,
                    c_int64, c_size_t, c_uint32, c_uint64, c_void_p)

ABI_VERSION = 6

# fp_target, fp_dtype and fp_status are C enums: int-sized.
TARGET_CPU = 0
TARGET_CUDA = 1
TARGET_NAMES = {"cpu": TARGET_CPU, "cuda": TARGET_CUDA}

DTYPE_F32 = 0
DTYPE_F64 = 1
DTYPE_BF16 = 2
DTYPE_NAMES = {"f32": DTYPE_F32, "f64": DTYPE_F64, "bf16": DTYPE_BF16}

STATUS_NAMES = {
    0: "FP_OK",
    1: "FP_ERROR_INVALID_ARGUMENT",
    2: "FP_ERROR_UNSUPPORTED",
    3: "FP_ERROR_WORKSPACE",
    4: "FP_ERROR_DEVICE",
}


class SolverOverrides(ctypes.Structure):
    _fields_ = [
        ("max_iter", c_int32),
        ("fixed_iters", c_int32),
        ("tolerance", c_double),
        ("quantile", c_double),
    ]


class SolverStats(ctypes.Structure):
    _fields_ = [
        ("iterations", POINTER(c_int32)),
        ("residuals", POINTER(c_float)),
        ("steps", c_int32),
        ("backward_steps", c_int32),
        ("host_waits", c_int32),
    ]


class DeviceStats(ctypes.Structure):
    _fields_ = [
        ("iterations", POINTER(c_int64)),
        ("residuals", POINTER(c_float)),
        ("steps", POINTER(c_int64)),
    ]


class ForwardArgs(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("target", c_int),
        ("dtype", c_int),
        ("allow_tf32", c_int32),
        ("stream", c_void_p),
        ("batch", c_int64),
        ("seq_len", c_int64),
        ("training", c_int32),
        ("num_params", c_int32),
        ("params", POINTER(c_void_p)),
        ("input", c_void_p),
        ("output", c_void_p),
        ("saved", c_void_p),
        ("workspace", c_void_p),
        ("workspace_bytes", c_size_t),
        ("solver", POINTER(SolverOverrides)),
        ("stats", POINTER(SolverStats)),
        ("device_stats", POINTER(DeviceStats)),
    ]


class BackwardArgs(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("target", c_int),
        ("dtype", c_int),
        ("allow_tf32", c_int32),
        ("stream", c_void_p),
        ("batch", c_int64),
        ("seq_len", c_int64),
        ("num_params", c_int32),
        ("params", POINTER(c_void_p)),
        ("input", c_void_p),
        ("saved", c_void_p),
        ("grad_output", c_void_p),
        ("grad_input", c_void_p),
        ("grad_params", POINTER(c_void_p)),
        ("workspace", c_void_p),
        ("workspace_bytes", c_size_t),
        ("stats", POINTER(SolverStats)),
    ]


class ChunkArgs(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("target", c_int),
        ("dtype", c_int),
        ("allow_tf32", c_int32),
        ("stream", c_void_p),
        ("batch", c_int64),
        ("seq_len", c_int64),
        ("training", c_int32),
        ("num_params", c_int32),
        ("params", POINTER(c_void_p)),
        ("input", c_void_p),
        ("output", c_void_p),
        ("num_states", c_int32),
        ("state_in", POINTER(c_void_p)),
        ("state_out", POINTER(c_void_p)),
        ("workspace", c_void_p),
        ("workspace_bytes", c_size_t),
        ("solver", POINTER(SolverOverrides)),
        ("stats", POINTER(SolverStats)),
        ("device_stats", POINTER(DeviceStats)),
    ]


class BufferSizes(ctypes.Structure):
    _fields_ = [
        ("forward_workspace_bytes", c_size_t),
        ("saved_bytes", c_size_t),
        ("backward_workspace_bytes", c_size_t),
        ("chunk_workspace_bytes", c_size_t),
    ]


# The ABI's structs by their C names, for the layout test.
STRUCTS = {
    "fp_solver_overrides": SolverOverrides,
    "fp_solver_stats": SolverStats,
    "fp_device_stats": DeviceStats,
    "fp_forward_args": ForwardArgs,
    "fp_backward_args": BackwardArgs,
    "fp_chunk_args": ChunkArgs,
    "fp_buffer_sizes": BufferSizes,
}

# Function types (restype first).
ABI_VERSION_FN = ctypes.CFUNCTYPE(c_uint32)
MANIFEST_FN = ctypes.CFUNCTYPE(c_char_p)
CHECKSUM_FN = ctypes.CFUNCTYPE(c_uint64)
LAST_ERROR_FN = ctypes.CFUNCTYPE(c_char_p)
BUFFER_SIZES_FN = ctypes.CFUNCTYPE(c_int, c_int, c_int, c_int64, c_int64,
                                   POINTER(BufferSizes))
FORWARD_FN = ctypes.CFUNCTYPE(c_int, POINTER(ForwardArgs))
BACKWARD_FN = ctypes.CFUNCTYPE(c_int, POINTER(BackwardArgs))
FORWARD_CHUNK_FN = ctypes.CFUNCTYPE(c_int, POINTER(ChunkArgs))
SCHEDULE_FN = ctypes.CFUNCTYPE(c_char_p, c_int, c_int, c_int64, c_int64)


def manifest_checksum(text: bytes) -> int:
    """FNV-1a (64 bits) of the manifest's bytes, as fp_manifest_checksum."""
    value = 14695981039346656037
    for byte in text:
        value ^= byte
        value = (value * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return value
