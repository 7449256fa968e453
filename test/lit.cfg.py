# -*- Python -*-
# lit configuration for the fp compiler tests.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "FP"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".fp", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Unit", "Inputs"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fp_obj_root, "test")

config.environment["FILECHECK_OPTS"] = (
    "-enable-var-scope --allow-unused-prefixes=false"
)

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%models", os.path.join(config.fp_src_root, "models")))
config.substitutions.append(("%fp_src", config.fp_src_root))
config.substitutions.append(("%nvcc", config.fp_nvcc or "nvcc"))

llvm_config.with_system_environment(
    ["HOME", "INCLUDE", "LIB", "TMP", "TEMP", "FP_TEST_SEED"])
llvm_config.use_default_substitutions()

# Features: what this machine can build and run.
if config.fp_cuda_enabled:
    config.available_features.add("nvcc")
if shutil.which("nvidia-smi") and os.path.exists("/dev/nvidia0"):
    config.available_features.add("cuda")
# The exhaustive checks (every model through nvcc for every architecture,
# say) run only in the opt-in soak runs (scripts/soak.sh, docs/testing.md);
# `REQUIRES: soak` marks them.
if os.environ.get("FP_SOAK") == "1":
    config.available_features.add("soak")

tool_dirs = [config.fp_tools_dir, config.llvm_tools_dir]
tools = ["fp-opt", "fp-translate", "fpc", "not", "split-file"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
