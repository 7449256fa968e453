#===- support.py - What the fpc package's tests share --------------------===#
#
# The tests run under ctest (python/CMakeLists.txt), which passes the tools
# they drive through the environment:
#
#   FPC_TEST_FPC         the fpc compiler (empty without the compiler: the
#                        tests that compile a model are skipped)
#   FPC_TEST_ORACLE      fpc-layer-oracle (the C++ CompiledLayer's results)
#   FPC_TEST_ABI_LAYOUT  fpc-abi-layout (ModelABI.h's layout)
#   FPC_TEST_FIXTURES    hand-written fixture libraries, name=path;...
#   FPC_TEST_FP_TRAIN    fp-train
#   FPC_TEST_WORK        a directory of their own (libraries, runs)
#   FPC_TEST_SOURCE      the repository
#
# and FP_TEST_SEED (default 1234) seeds every random draw.
#
#===------------------------------------------------------------------------===#

import contextlib
import os
import shutil
import subprocess
import tempfile
import unittest

import torch

SEED = int(os.environ.get("FP_TEST_SEED", "1234"))


def require_env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise unittest.SkipTest(f"{name} is not set (run the test through "
                                "ctest)")
    return value


def source_dir() -> str:
    return require_env("FPC_TEST_SOURCE")


def work_dir(*parts: str) -> str:
    path = os.path.join(require_env("FPC_TEST_WORK"), *parts)
    os.makedirs(path, exist_ok=True)
    return path


def fixture(name: str) -> str:
    for entry in require_env("FPC_TEST_FIXTURES").split(";"):
        key, _, path = entry.partition("=")
        if key == name:
            return path
    raise unittest.SkipTest(f"no fixture library '{name}'")


def compile_model(source: str, name: str, *flags: str) -> str:
    """Compiles the .fp file `source` with fpc into the work directory as
    NAME.so (host code; fpc's cache makes a second build cheap)."""
    fpc = os.environ.get("FPC_TEST_FPC", "")
    if not fpc:
        raise unittest.SkipTest("built without the compiler: no fpc")
    output = os.path.join(work_dir("libraries"), name + ".so")
    command = [fpc, source, *flags, "-o", output,
               "--cache-dir", work_dir("fpc-cache")]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"fpc failed ({' '.join(command)}):\n"
                             f"{result.stderr}")
    return output


def compile_source(text: str, name: str, *flags: str) -> str:
    """Compiles a model written by the test, importing models/lib."""
    directory = work_dir("sources")
    path = os.path.join(directory, name + ".fp")
    with open(path, "w") as file:
        file.write(text)
    return compile_model(path, name, "-I", os.path.join(source_dir(),
                                                         "models"), *flags)


def model_path(name: str) -> str:
    return os.path.join(source_dir(), "models", name + ".fp")


def small_lm(*flags: str) -> str:
    """models/fp_mamba_lm.fp at d_model 16 with 2 layers, built with
    `flags`, in the work directory (one build per test module)."""
    return compile_model(model_path("fp_mamba_lm"), "fp_mamba_lm_d16",
                         "--set", "d_model=16", "--set", "n_layers=2", *flags)


def fortune(name: str) -> str:
    """A text file of Debian's fortunes package: real English text."""
    path = os.path.join("/usr/share/games/fortunes", name)
    if not os.path.isfile(path):
        raise AssertionError(f"no {path}: scripts/install-deps.sh installs "
                             "Debian's fortunes package")
    return path


def oracle(request: dict) -> dict:
    """The C++ runtime's CompiledLayer on `request` (layer_oracle.cpp)."""
    binary = require_env("FPC_TEST_ORACLE")
    with tempfile.TemporaryDirectory(dir=work_dir()) as scratch:
        asked = os.path.join(scratch, "request.pt")
        answered = os.path.join(scratch, "response.pt")
        torch.save(request, asked)
        result = subprocess.run([binary, asked, answered],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise AssertionError(f"fpc-layer-oracle failed: "
                                 f"{result.stderr.strip()}")
        return torch.load(answered)


def copy_file(source: str, name: str) -> str:
    target = os.path.join(work_dir("copies"), name)
    shutil.copyfile(source, target)
    return target


@contextlib.contextmanager
def allow_tf32(allow: bool):
    """PyTorch's TF32 switch for cuBLAS (the one a call passes as
    allow_tf32) set to `allow` for the block, and restored after it."""
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = allow
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
