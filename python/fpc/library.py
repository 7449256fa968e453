#===- python/fpc/library.py - Opening a model.so -------------------------===#
#
# Library opens a model library as the C++ runtime's ModelLibrary does: the
# file checked before dlopen, the ABI version, the manifest against its
# compiled checksum, then every entry point the manifest names. Calls go
# through ctypes; a failing call raises LibraryError with the library's own
# message.
#
#===------------------------------------------------------------------------===#

import ctypes
import os
from typing import Dict

from . import _abi
from .errors import LibraryError, LoadError, ManifestError
from .manifest import Manifest, parse_manifest


class LayerEntryPoints:
    """The entry points of one layer, as ctypes functions."""

    def __init__(self, buffer_sizes, forward, backward, forward_chunk=None,
                 schedule=None):
        self.buffer_sizes = buffer_sizes
        self.forward = forward
        self.backward = backward
        self.forward_chunk = forward_chunk
        self.schedule = schedule


class Library:
    """A loaded model library: its manifest and entry points."""

    def __init__(self, path: str):
        self.path = os.path.abspath(os.fspath(path))
        quoted = f"'{os.fspath(path)}'"
        if not os.path.exists(self.path):
            raise LoadError(f"cannot load model library {quoted}: no such "
                            "file; check the path or build the library with "
                            "fpc")
        if os.path.isdir(self.path):
            raise LoadError(f"cannot load model library {quoted}: it is a "
                            "directory; pass the model .so file itself")
        try:
            self._dll = ctypes.CDLL(self.path,
                                    mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as error:
            raise LoadError(f"{quoted} is not a loadable shared library: "
                            f"{error}; pass a model library built by "
                            "fpc") from None

        def symbol(name, kind, required=True):
            try:
                return kind((name, self._dll))
            except AttributeError:
                if not required:
                    return None
                raise LoadError(
                    f"{quoted} lacks symbol '{name}' required by model ABI "
                    f"version {_abi.ABI_VERSION}; recompile it with "
                    "fpc") from None

        version_fn = symbol("fp_model_abi_version", _abi.ABI_VERSION_FN,
                            required=False)
        if version_fn is None:
            raise LoadError(f"{quoted} is not an fpc model library (no "
                            "symbol 'fp_model_abi_version'); pass a model "
                            "library built by fpc")
        version = version_fn()
        if version != _abi.ABI_VERSION:
            raise LoadError(
                f"{quoted} was built for model ABI version {version}, but "
                f"this package speaks version {_abi.ABI_VERSION}; recompile "
                "it with a matching fpc")
        text = symbol("fp_model_manifest", _abi.MANIFEST_FN)()
        if text is None:
            raise LoadError(f"{quoted} has an invalid manifest: "
                            "fp_model_manifest() returned NULL")
        checksum = symbol("fp_model_manifest_checksum", _abi.CHECKSUM_FN)()
        if checksum != _abi.manifest_checksum(text):
            raise LoadError(
                f"{quoted} has an invalid manifest: it does not match the "
                "checksum compiled with it (the file was edited or "
                "damaged); recompile it with fpc")
        try:
            self.manifest: Manifest = parse_manifest(text.decode("utf-8"))
        except (ManifestError, UnicodeDecodeError) as error:
            raise LoadError(f"{quoted} has an invalid manifest: {error}; "
                            "recompile it with fpc") from None
        if self.manifest.abi_version != version:
            raise LoadError(
                f"{quoted} has an invalid manifest: field 'abi_version' is "
                f"{self.manifest.abi_version}, but fp_model_abi_version() "
                f"returns {version}")
        self.manifest_text = text.decode("utf-8")
        self._last_error = symbol("fp_model_last_error", _abi.LAST_ERROR_FN)

        self._entry: Dict[str, LayerEntryPoints] = {}
        for layer in self.manifest.layers:
            names = layer.entry_points

            def resolve(role, kind, layer=layer, names=names):
                name = names.get(role)
                if not name:
                    return None
                try:
                    return kind((name, self._dll))
                except AttributeError:
                    raise LoadError(
                        f"{quoted} lacks entry point '{name}' ({role} of "
                        f"layer '{layer.name}') named in its manifest; "
                        "recompile it with fpc") from None

            self._entry[layer.name] = LayerEntryPoints(
                resolve("buffer_sizes", _abi.BUFFER_SIZES_FN),
                resolve("forward", _abi.FORWARD_FN),
                resolve("backward", _abi.BACKWARD_FN),
                resolve("forward_chunk", _abi.FORWARD_CHUNK_FN),
                resolve("schedule", _abi.SCHEDULE_FN))

    def __repr__(self):
        layers = ", ".join(layer.name for layer in self.manifest.layers)
        return f"fpc.Library('{self.path}', layers: {layers})"

    def entry_points(self, layer: str) -> LayerEntryPoints:
        self.manifest.layer(layer)  # the error that lists the layers
        return self._entry[layer]

    def last_error(self) -> str:
        message = self._last_error()
        return message.decode("utf-8", "replace") if message else ""

    def check(self, status: int, where: str, what: str) -> None:
        """Raises LibraryError with the library's message unless `status`
        is FP_OK."""
        if status == 0:
            return
        message = self.last_error()
        name = _abi.STATUS_NAMES.get(status, f"status {status}")
        raise LibraryError(f"{where}: {what} failed with {name}"
                           + (f": {message}" if message else ""))

    def buffer_sizes(self, layer: str, target: int, dtype: int, batch: int,
                     seq_len: int) -> _abi.BufferSizes:
        sizes = _abi.BufferSizes()
        status = self.entry_points(layer).buffer_sizes(
            target, dtype, batch, seq_len, ctypes.byref(sizes))
        self.check(status, f"layer '{layer}' of '{self.path}'",
                   "buffer_sizes")
        return sizes
