#===- python/fpc/errors.py - The package's exceptions ---------------------===#
#
# Every error the package raises on purpose derives from FpcError.
#
#===------------------------------------------------------------------------===#


class FpcError(Exception):
    """Base of the errors the fpc package raises."""


class LoadError(FpcError):
    """A model library cannot be loaded (missing, not fpc's, another ABI)."""


class ManifestError(FpcError):
    """A library's manifest is malformed."""


class LibraryError(FpcError, RuntimeError):
    """An entry point of a model library reported a failure; the message is
    the library's."""


class WeightsError(FpcError, ValueError):
    """A state dict does not fit a model: missing, unexpected or mis-shaped
    tensors, all listed; nothing was loaded."""
