#===- python/fpc/layer.py - A compiled layer as a torch.nn.Module --------===#
#
# CompiledLayer owns one layer's parameters, registered under the manifest's
# names (the dots becoming submodules, as in the C++ runtime), and calls the
# library's forward through the C ABI. A forward that autograd must
# differentiate runs as a torch.autograd.Function: the library's forward
# also fills the ABI's saved buffer, and the backward calls the library's
# derived backward for the input's and every parameter's gradient.
#
# On CUDA a call enqueues on PyTorch's current stream and leaves the
# solver's statistics on the device: the host does not wait for it. Its f32
# GEMMs use TF32 where torch.backends.cuda.matmul.allow_tf32 is set.
#
#===------------------------------------------------------------------------===#

import ctypes
import math
from typing import List, Optional, Sequence, Tuple, Union

import torch

from . import _abi
from .errors import FpcError
from .init import init_layer_params
from .library import Library

_ALIGNMENT = 256  # bytes; what the ABI promises its buffers
_ABI_DTYPES = {
    torch.float32: ("f32", _abi.DTYPE_F32),
    torch.float64: ("f64", _abi.DTYPE_F64),
    torch.bfloat16: ("bf16", _abi.DTYPE_BF16),
}


def _aligned(nbytes: int, device: torch.device):
    """(owner, address): at least `nbytes` bytes on `device` aligned to 256
    bytes; (None, None) for none."""
    if nbytes == 0:
        return None, None
    owner = torch.empty(nbytes + _ALIGNMENT - 1, dtype=torch.uint8,
                        device=device)
    address = (owner.data_ptr() + _ALIGNMENT - 1) & ~(_ALIGNMENT - 1)
    return owner, address


def _stream(device: torch.device):
    if device.type == "cuda":
        return torch.cuda.current_stream(device).cuda_stream
    return None


def _allow_tf32(device: torch.device) -> int:
    """A call's allow_tf32: PyTorch's own switch for f32 cuBLAS products,
    read at every call as PyTorch's matmuls read it."""
    return int(device.type == "cuda" and
               torch.backends.cuda.matmul.allow_tf32)


def _pointers(tensors: Sequence[torch.Tensor]):
    array = (ctypes.c_void_p * max(len(tensors), 1))()
    for i, tensor in enumerate(tensors):
        array[i] = tensor.data_ptr()
    return array


def open_library(library: Union[str, Library]) -> Library:
    return library if isinstance(library, Library) else Library(library)


class CompiledLayer(torch.nn.Module):
    """One instance of one layer of a model library.

    `layer` names it (it may be left out when the library has one layer).
    Parameters are drawn from `generator`, or a fresh one seeded with
    `seed`, by the manifest's initialisers, in `dtype` on the CPU; move the
    module with to(). Solver settings left None keep the compiled ones:
    `max_iter`, `tolerance`, `quantile` and `fixed_iters` apply to every
    call, `train_iteration_cap` and `eval_iteration_cap` in their mode
    (unless `max_iter` is set), `train_quantile` in training mode (unless
    `quantile` is). `compute_dtype` (e.g. torch.bfloat16 for f32 weights)
    casts the input and the parameters per call, differentiably, and
    returns the output in the input's dtype.
    """

    def __init__(self, library: Union[str, Library], layer: Optional[str] = None,
                 *, seed: int = 0, dtype: torch.dtype = torch.float32,
                 generator: Optional[torch.Generator] = None):
        super().__init__()
        library = open_library(library)
        layers = library.manifest.layers
        if layer is None:
            if len(layers) != 1:
                names = ", ".join(f"'{info.name}'" for info in layers)
                raise FpcError(f"'{library.path}' has {len(layers)} layers "
                               f"({names}); name the one to load")
            layer = layers[0].name
        try:
            info = library.manifest.layer(layer)
        except KeyError as error:
            raise FpcError(f"model library '{library.path}': "
                           f"{error.args[0]}") from None
        # Plain attributes: not submodules, not parameters.
        object.__setattr__(self, "library", library)
        object.__setattr__(self, "info", info)
        object.__setattr__(self, "_entry", library.entry_points(layer))
        self._where = f"layer '{info.name}' of '{library.path}'"
        if generator is None:
            generator = torch.Generator().manual_seed(seed)
        values = init_layer_params(info, generator, dtype)
        self._holders: List[Tuple[torch.nn.Module, str]] = []
        for param, value in zip(info.params, values):
            owner: torch.nn.Module = self
            *path, leaf = param.name.split(".")
            for part in path:
                child = owner._modules.get(part)
                if child is None:
                    child = torch.nn.Module()
                    owner.add_module(part, child)
                owner = child
            if param.frozen:
                owner.register_buffer(leaf, value)
            else:
                owner.register_parameter(leaf, torch.nn.Parameter(value))
            self._holders.append((owner, leaf))

        self.compute_dtype: Optional[torch.dtype] = None
        self.max_iter: Optional[int] = None
        self.fixed_iters: Optional[int] = None
        self.tolerance: Optional[float] = None
        self.quantile: Optional[float] = None
        self.train_iteration_cap: Optional[int] = None
        self.eval_iteration_cap: Optional[int] = None
        self.train_quantile: Optional[float] = None
        # Statistics of the last forward (and backward).
        self.last_iterations: Optional[torch.Tensor] = None
        self.last_residuals: Optional[torch.Tensor] = None
        self._last_steps: Optional[torch.Tensor] = None
        self.last_host_waits = 0
        self.last_backward_steps = 0

    def extra_repr(self) -> str:
        return f"'{self.info.name}' of '{self.library.path}'"

    def ordered_parameters(self) -> List[torch.Tensor]:
        """The parameters in manifest order (the ABI's `params`)."""
        return [getattr(owner, leaf) for owner, leaf in self._holders]

    def has_parameter(self, name: str) -> bool:
        return any(param.name == name for param in self.info.params)

    def parameter(self, name: str) -> torch.nn.Parameter:
        """The parameter with manifest name `name`."""
        for param, (owner, leaf) in zip(self.info.params, self._holders):
            if param.name == name:
                return getattr(owner, leaf)
        raise KeyError(f"{self._where} has no parameter '{name}'")

    @property
    def last_steps(self) -> int:
        """Solver steps the whole batch took in the last forward (after a
        CUDA call, this waits for the device)."""
        return 0 if self._last_steps is None else int(self._last_steps)

    def solver_overrides(self) -> _abi.SolverOverrides:
        """The fp_solver_overrides a call in the current mode passes."""
        nan = float("nan")
        overrides = _abi.SolverOverrides(-1, 0, nan, nan)
        cap = self.max_iter
        if cap is None:
            cap = (self.train_iteration_cap if self.training
                   else self.eval_iteration_cap)
        if cap is not None:
            overrides.max_iter = int(cap)
        if self.fixed_iters is not None:
            overrides.fixed_iters = int(self.fixed_iters)
        if self.tolerance is not None:
            overrides.tolerance = float(self.tolerance)
        quantile = self.quantile
        if quantile is None and self.training:
            quantile = self.train_quantile
        if quantile is not None:
            overrides.quantile = float(quantile)
        return overrides

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return self.forward_with(input, self.ordered_parameters())

    def forward_with(self, input: torch.Tensor,
                     values: Sequence[torch.Tensor]) -> torch.Tensor:
        """forward() with the parameters `values` (manifest order) in place
        of the module's own, differentiable in each: what
        torch.autograd.gradcheck and functional training loops call."""
        values = list(values)
        if len(values) != len(self.info.params):
            raise FpcError(f"{self._where}: expects {len(self.info.params)} "
                           f"parameters, got {len(values)}")
        cast = self.compute_dtype is not None and input.dtype != self.compute_dtype
        x = input.to(self.compute_dtype) if cast else input
        if cast:
            values = [value.to(self.compute_dtype) for value in values]
        grad = torch.is_grad_enabled() and (
            x.requires_grad or any(value.requires_grad for value in values))
        if grad:
            target = "cuda" if x.device.type == "cuda" else "cpu"
            if not self.info.has_backward(target):
                raise FpcError(
                    f"{self._where}: the library has no compiled backward "
                    f"for target {target}, so this forward cannot be "
                    "differentiated; compile the model with `fpc "
                    "--backward`, or call it under torch.no_grad()")
            out = _LayerFunction.apply(self, x, *values)
        else:
            out, _ = self._forward(x, values, save=False)
        return out.to(input.dtype) if cast else out

    def forward_chunk(self, input: torch.Tensor,
                      states: Optional[List[torch.Tensor]] = None
                      ) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        """The library's chunked forward (docs/streaming.md): the chunk
        `input` [B, T, D] of sequences whose earlier tokens `states`
        summarises (None: the chunk starts them). Returns the output and the
        states after the chunk, one per manifest `chunk.states` entry, each
        [B, shape...]. Without gradient."""
        if not self.info.has_chunked_forward():
            raise FpcError(f"{self._where} has no chunked forward (compiled "
                           "with `fpc --no-chunked`)")
        values = self.ordered_parameters()
        x = input
        if self.compute_dtype is not None and input.dtype != self.compute_dtype:
            x = input.to(self.compute_dtype)
            values = [value.to(self.compute_dtype) for value in values]
        with torch.no_grad():
            out, states = self._chunk(x.detach(), [v.detach() for v in values],
                                      states)
        return out.to(input.dtype), states

    #===------------------------------------------------------------------===#
    # Calls of the library
    #===------------------------------------------------------------------===#

    def _check_call(self, x: torch.Tensor, values: Sequence[torch.Tensor]):
        """The call's (target, dtype) for `x`, or an error naming what
        cannot be passed."""
        info, manifest = self.info, self.library.manifest
        if x.dim() != 3 or x.size(2) != info.d_model or x.size(0) < 1 \
                or x.size(1) < 1:
            raise FpcError(f"{self._where}: expects an input [B, T, "
                           f"{info.d_model}] with B, T >= 1, got "
                           f"{list(x.shape)}")
        if x.dtype not in _ABI_DTYPES:
            raise FpcError(f"{self._where}: the model ABI has no element "
                           f"type for {x.dtype}; use float32, float64 or "
                           "bfloat16")
        name, dtype = _ABI_DTYPES[x.dtype]
        if name not in manifest.dtypes:
            raise FpcError(f"{self._where}: was not compiled for dtype "
                           f"{name}")
        if x.device.type not in ("cpu", "cuda"):
            raise FpcError(f"{self._where}: cannot run on device {x.device}")
        target_name = x.device.type
        if target_name not in manifest.targets:
            raise FpcError(f"{self._where}: was not compiled for target "
                           f"{target_name} (the input is on {x.device})")
        for param, value in zip(info.params, values):
            if value.dtype != x.dtype or value.device != x.device:
                raise FpcError(
                    f"{self._where}: parameter '{param.name}' is "
                    f"{value.dtype} on {value.device} but the input is "
                    f"{x.dtype} on {x.device}; convert the layer with to(), "
                    "or set compute_dtype")
        return _abi.TARGET_NAMES[target_name], dtype

    def _stats(self, x: torch.Tensor, target: int):
        """(stats, device_stats, keep): the statistics a call fills, and
        the tensors that own their memory."""
        batch = x.size(0)
        stats = _abi.SolverStats()
        on_device = target == _abi.TARGET_CUDA and self.info.solver is not None
        if on_device:
            iterations = torch.empty(batch, dtype=torch.int64, device=x.device)
            residuals = torch.empty(batch, dtype=torch.float32,
                                    device=x.device)
            steps = torch.empty((), dtype=torch.int64, device=x.device)
            device_stats = _abi.DeviceStats(
                ctypes.cast(iterations.data_ptr(),
                            ctypes.POINTER(ctypes.c_int64)),
                ctypes.cast(residuals.data_ptr(),
                            ctypes.POINTER(ctypes.c_float)),
                ctypes.cast(steps.data_ptr(), ctypes.POINTER(ctypes.c_int64)))
            return stats, device_stats, (iterations, residuals, steps)
        iterations = torch.zeros(batch, dtype=torch.int32)
        residuals = torch.full((batch,), math.nan, dtype=torch.float32)
        stats.iterations = ctypes.cast(iterations.data_ptr(),
                                       ctypes.POINTER(ctypes.c_int32))
        stats.residuals = ctypes.cast(residuals.data_ptr(),
                                      ctypes.POINTER(ctypes.c_float))
        return stats, None, (iterations, residuals, None)

    def _record(self, stats, keep):
        iterations, residuals, steps = keep
        self.last_host_waits = stats.host_waits
        if steps is None:
            self.last_iterations = iterations.to(torch.int64)
            self.last_residuals = residuals
            self._last_steps = torch.tensor(stats.steps, dtype=torch.int64)
        else:
            self.last_iterations, self.last_residuals = iterations, residuals
            self._last_steps = steps

    def _prepare(self, x: torch.Tensor, values: Sequence[torch.Tensor]):
        """(target, dtype, x, values, sizes): a call's ABI target and element
        type, its input and parameters made contiguous, and the buffer sizes
        the library asks for at its shape."""
        target, dtype = self._check_call(x, values)
        x = x.contiguous()
        values = [value.contiguous() for value in values]
        sizes = self.library.buffer_sizes(self.info.name, target, dtype,
                                          x.size(0), x.size(1))
        return target, dtype, x, values, sizes

    def _invoke(self, entry, args, device: torch.device, what: str):
        """Calls the entry point on `args` on `device`'s CUDA device (when
        it is one); raises LibraryError with the library's message."""
        with _device_guard(device):
            status = entry(ctypes.byref(args))
        self.library.check(status, self._where, what)

    def _fill_shared(self, args, x, out, values, pointers, target, dtype,
                     overrides, stats, device_stats):
        args.struct_size = ctypes.sizeof(args)
        args.target = target
        args.dtype = dtype
        args.allow_tf32 = _allow_tf32(x.device)
        args.stream = _stream(x.device)
        args.batch = x.size(0)
        args.seq_len = x.size(1)
        args.training = 1 if self.training else 0
        args.num_params = len(values)
        args.params = ctypes.cast(pointers, ctypes.POINTER(ctypes.c_void_p))
        args.input = x.data_ptr()
        args.output = out.data_ptr()
        args.solver = ctypes.pointer(overrides)
        args.stats = ctypes.pointer(stats)
        if device_stats is not None:
            args.device_stats = ctypes.pointer(device_stats)

    def _forward(self, x: torch.Tensor, values: Sequence[torch.Tensor],
                 save: bool):
        """(output, saved buffer owner or None): one call of the forward."""
        target, dtype, x, values, sizes = self._prepare(x, values)
        workspace, workspace_at = _aligned(sizes.forward_workspace_bytes,
                                           x.device)
        saved, saved_at = (_aligned(sizes.saved_bytes, x.device) if save
                           else (None, None))
        out = torch.empty_like(x)
        pointers = _pointers(values)
        overrides = self.solver_overrides()
        stats, device_stats, keep = self._stats(x, target)
        args = _abi.ForwardArgs()
        self._fill_shared(args, x, out, values, pointers, target, dtype,
                          overrides, stats, device_stats)
        args.saved = saved_at
        args.workspace = workspace_at
        args.workspace_bytes = sizes.forward_workspace_bytes
        self._invoke(self._entry.forward, args, x.device, "forward")
        del workspace
        self._record(stats, keep)
        return out, (saved, saved_at)

    def _backward(self, x: torch.Tensor, values: Sequence[torch.Tensor],
                  saved_at, grad_output: torch.Tensor):
        target, dtype, x, values, sizes = self._prepare(x, values)
        grad_output = grad_output.to(x.dtype).contiguous()
        grad_input = torch.empty_like(x)
        grads = [torch.zeros_like(value) for value in values]
        workspace, workspace_at = _aligned(sizes.backward_workspace_bytes,
                                           x.device)
        pointers = _pointers(values)
        grad_pointers = _pointers(grads)
        stats = _abi.SolverStats()
        args = _abi.BackwardArgs()
        args.struct_size = ctypes.sizeof(args)
        args.target = target
        args.dtype = dtype
        args.allow_tf32 = _allow_tf32(x.device)
        args.stream = _stream(x.device)
        args.batch = x.size(0)
        args.seq_len = x.size(1)
        args.num_params = len(values)
        args.params = ctypes.cast(pointers, ctypes.POINTER(ctypes.c_void_p))
        args.input = x.data_ptr()
        args.saved = saved_at
        args.grad_output = grad_output.data_ptr()
        args.grad_input = grad_input.data_ptr()
        args.grad_params = ctypes.cast(grad_pointers,
                                       ctypes.POINTER(ctypes.c_void_p))
        args.workspace = workspace_at
        args.workspace_bytes = sizes.backward_workspace_bytes
        args.stats = ctypes.pointer(stats)
        self._invoke(self._entry.backward, args, x.device, "backward")
        del workspace
        self.last_backward_steps = stats.backward_steps
        return grad_input, grads

    def _chunk(self, x: torch.Tensor, values: Sequence[torch.Tensor],
               states: Optional[List[torch.Tensor]]):
        target, dtype, x, values, sizes = self._prepare(x, values)
        infos = self.info.chunk_states
        batch = x.size(0)
        if states is None:
            states = [torch.zeros([batch] + info.shape, dtype=x.dtype,
                                  device=x.device) for info in infos]
        if len(states) != len(infos):
            raise FpcError(f"{self._where}: expects {len(infos)} chunk "
                           f"states, got {len(states)}")
        carried = []
        for info, state in zip(infos, states):
            shape = [batch] + info.shape
            if list(state.shape) != shape:
                raise FpcError(f"{self._where}: chunk state '{info.name}' "
                               f"must be {shape}, got {list(state.shape)}")
            carried.append(state.to(device=x.device, dtype=x.dtype)
                           .contiguous().clone())
        workspace, workspace_at = _aligned(sizes.chunk_workspace_bytes,
                                           x.device)
        out = torch.empty_like(x)
        pointers = _pointers(values)
        state_pointers = _pointers(carried)
        overrides = self.solver_overrides()
        stats, device_stats, keep = self._stats(x, target)
        args = _abi.ChunkArgs()
        self._fill_shared(args, x, out, values, pointers, target, dtype,
                          overrides, stats, device_stats)
        args.num_states = len(carried)
        args.state_in = ctypes.cast(state_pointers,
                                    ctypes.POINTER(ctypes.c_void_p))
        args.state_out = ctypes.cast(state_pointers,
                                     ctypes.POINTER(ctypes.c_void_p))
        args.workspace = workspace_at
        args.workspace_bytes = sizes.chunk_workspace_bytes
        self._invoke(self._entry.forward_chunk, args, x.device,
                     "forward_chunk")
        del workspace
        self._record(stats, keep)
        return out, carried


class _NoGuard:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _device_guard(device: torch.device):
    return torch.cuda.device(device) if device.type == "cuda" else _NoGuard()


class _LayerFunction(torch.autograd.Function):
    """A differentiable call: the library's forward, saving what its derived
    backward reads, and that backward."""

    @staticmethod
    def forward(ctx, layer: CompiledLayer, x: torch.Tensor, *values):
        out, (saved, saved_at) = layer._forward(x, values, save=True)
        ctx.layer = layer
        ctx.saved_buffer = (saved, saved_at)
        ctx.save_for_backward(x, *values)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_output):
        x, *values = ctx.saved_tensors
        _, saved_at = ctx.saved_buffer
        grad_input, grads = ctx.layer._backward(x, values, saved_at,
                                                grad_output)
        return (None, grad_input, *grads)
