#!/usr/bin/env bash
#===- tools/gpu-check.sh - Build, test and benchmark on a GPU machine ------===#
#
# Two halves, because the GPU machine has no MLIR (so no fpc) and nothing to
# install from:
#
#   tools/gpu-check.sh prepare [CONFIG...]
#                                   on a machine with a built fpc (build/):
#                                   compiles every models/*.fp and the
#                                   benchmark configurations (all, or those
#                                   named) for CUDA and the
#                                   host with their backward, and packs them
#                                   with what the GPU machine lacks into
#                                   gpu-check/bundle.tar.xz (gpu-check/ is
#                                   git-ignored; carry it there)
#   tools/gpu-check.sh run [STAGE]  on the GPU machine, from the repository
#                                   root: STAGE is build [TARGET...]
#                                   (everything, or the targets named),
#                                   test (test-cuda,
#                                   then test-cpu), test-cuda, test-cpu,
#                                   bench [CONFIG...] (all configurations,
#                                   or those named), profile [CONFIG...]
#                                   (Nsight Compute on the fused kernels),
#                                   train-lm (the 12-layer LM trained in
#                                   bf16, compiled and eager), python (the
#                                   fpc package on CUDA), distributed-cuda
#                                   (process groups on CUDA), compile
#                                   (one model's fpc compiles on the
#                                   machine's CPUs), first (the
#                                   open issues' checks sized to one call
#                                   of a short lease, stage_first)
#                                   or all (the default:
#                                   test-cuda, bench, test-cpu), logs under
#                                   $OUT (else build-gpu/out)
#
# A GPU machine may come up bare at every call, so every stage first builds
# what it runs (ninja makes that a no-op on a warm machine): a call of one
# stage works on its own, and a few short calls fit a device lease better
# than one long one. Each verdict line gives the stage's seconds.
#
# `run` builds the runtime (FP_BUILD_COMPILER=OFF) in build-gpu/ against the
# LibTorch of the machine's python3, with GoogleTest built from the bundled
# source and header-only fmt and nlohmann_json; runs every runtime test on
# the CPU against the bundled libraries; runs the CUDA solver against the
# host's at the benchmark configurations' grids (FpDeviceSolverTests); runs
# the compiled-vs-eager model
# tests on CUDA (FP_TEST_DEVICE=cuda), with the solver's loop as a CUDA
# graph, again queued from the host (FP_CUDA_GRAPHS=0), on two models
# built with their scans unfused (fpc --no-fuse-scans), with every call on
# its library's split schedule (FP_CUDA_SCHEDULE=split), and on the fused
# one with each sample's tokens in three chunks (FP_TIME_CHUNKS=3); and
# runs fp-bench on the configurations of docs/performance.md, on CUDA,
# compiled and eager side by side (the forward also with FP_CUDA_GRAPHS=0,
# and the training step also in bf16: the compiled layer in bf16 against
# the eager reference under autocast; config LM's training step also on its
# fused schedule, FP_CUDA_SCHEDULE=fused, in the chunks it picks, with one
# block per sample and in 17 chunks; and with each of its selective scan's
# other kernels, FP_SCAN_KERNEL=channel|ahead|lanes16, in bf16, and with one
# thread per channel in f32; config S's bf16 training step also with its
# scratch returned to the OS at every synchronisation,
# FP_CUDA_KEEP_SCRATCH=0, and its training step in bf16 and f32 on the
# split schedule, FP_CUDA_SCHEDULE=split), summarised into one table
# (tools/bench-summary.py,
# $OUT/bench-summary.md). The train-lm stage trains the paper's language
# model (models/fp_mamba_lm.fp: 12 layers, D = 768) with fp-train in bf16
# at context 2048 on English text (Debian's fortunes, carried in the
# bundle), micro-batches of 16 accumulated to --batch, for a few steps:
# the compiled library, then the eager reference of the same architecture,
# then the compiled library again in an NCCL process group of one process,
# and tabulates tokens/s (the first step left out as warm-up), peak device
# memory and fixed-point iterations ($OUT/train-lm-summary.md). Each stage
# prints a one-line verdict; the exit status is that of the first stage that
# failed.
#
# Environment: FP_GPU_ARCH (prepare; default 90, the H100) names the CUDA
# architectures to compile for; FP_PREPARE_MODELS (prepare; default all)
# names the models/*.fp to compile, without .fp (the test stages then run
# those alone: filter FpCompiledModelTests with --gtest_filter); FP_BENCH_REPEATS (run; default 3);
# FP_BENCH_EXTRAS=0 (run) leaves out the benchmarks' comparisons with the
# loop queued from the host and config LM's fused-schedule runs;
# FP_STALE_BUNDLE=1 (run) runs a bundle prepared from other sources than
# the tree's (run refuses it otherwise); FP_LM_STEPS (run; default 3),
# FP_LM_BATCH (default 64) and FP_LM_ACCUM (default 4) size train-lm.
#
#===------------------------------------------------------------------------===#

set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
carried="$root/gpu-check"
# Where the bundle is assembled (prepare) or unpacked (run).
bundle="$root/build/gpu-check"

die() {
  echo "gpu-check: $*" >&2
  exit 1
}

# A digest of what the bundle's libraries are compiled from: the compiler's
# sources, the runtime headers that generated code includes, and the
# models. prepare stores it in the bundle; run compares it with the tree it
# runs in, so that libraries compiled from other headers than the runtime
# it builds are not tested or timed by mistake.
source_digest() {
  (cd "$root" &&
    find codegen dialect frontend passes tools/fpc runtime/include models \
      \( -name __pycache__ -prune \) -o \( -type f ! -name '*.pyc' -print0 \) |
    LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}

# The benchmark configurations: name, model source, fpc options, fp-bench
# arguments. Each library holds the fused and the split schedule, and a
# call takes the split one where the fused one would run samples in chunks
# (config LM; config S takes the fused one). lm_split is config LM compiled
# with the split schedule alone (fpc --no-fuse-scans), s_householder1_split
# config S so, where 512 samples fill the GPU with fused blocks. The *_saved ones save the
# forward's GEMM products for the backward (fpc --save-products). The
# *_a_untransposed ones read the selective scan's A as it is, channels ×
# N, in the fused kernel (fpc --no-transpose-scan-a), for comparison with
# the default's Aᵀ; s_householder1_unstaged reads the inputs' rows where
# they lie (fpc --no-stage-inputs) rather than from copies made a token
# ahead. The *_host_exp ones compute e^x on the device with the host's
# polynomial (fpc --no-cuda-expf) rather than CUDA's expf. The e_* ones
# are config E: evaluation of a small batch solved to the tolerance (B 8,
# T 65: A5 at four times a training length of 16; D 512), where launches
# and host syncs rather than bytes bound a step; only their forward runs,
# with the solver's loop as a CUDA graph and queued from the host.
bench_configs() {
  cat <<'EOF'
s_householder1|models/fp_mamba_householder1.fp|--set d_model=512|--batch 512 --seq-len 17
s_householder1_saved|models/fp_mamba_householder1.fp|--set d_model=512 --save-products|--batch 512 --seq-len 17
s_kronecker|models/fp_mamba_kronecker.fp|--set d_model=512|--batch 512 --seq-len 17
lm|models/fp_mamba_lm.fp|--set n_layers=1|--batch 16 --seq-len 2048
lm_split|models/fp_mamba_lm.fp|--set n_layers=1 --no-fuse-scans|--batch 16 --seq-len 2048
lm_saved|models/fp_mamba_lm.fp|--set n_layers=1 --save-products|--batch 16 --seq-len 2048
s_householder1_a_untransposed|models/fp_mamba_householder1.fp|--set d_model=512 --no-transpose-scan-a|--batch 512 --seq-len 17
lm_a_untransposed|models/fp_mamba_lm.fp|--set n_layers=1 --no-transpose-scan-a|--batch 16 --seq-len 2048
s_householder1_unstaged|models/fp_mamba_householder1.fp|--set d_model=512 --no-stage-inputs|--batch 512 --seq-len 17
s_householder1_split|models/fp_mamba_householder1.fp|--set d_model=512 --no-fuse-scans|--batch 512 --seq-len 17
s_householder1_host_exp|models/fp_mamba_householder1.fp|--set d_model=512 --no-cuda-expf|--batch 512 --seq-len 17
lm_host_exp|models/fp_mamba_lm.fp|--set n_layers=1 --no-cuda-expf|--batch 16 --seq-len 2048
e_kronecker|models/fp_mamba_kronecker.fp|--set d_model=512|--batch 8 --seq-len 65
e_householder1|models/fp_mamba_householder1.fp|--set d_model=512|--batch 8 --seq-len 65
EOF
}

prepare() {
  local fpc="$root/build/bin/fpc"
  [[ -x "$fpc" ]] || die "no fpc at $fpc; build it first (scripts/build.sh)"
  check_configs "$@"
  local only=" $* "
  local arch="${FP_GPU_ARCH:-90}"
  rm -rf "$bundle"
  mkdir -p "$bundle/models" "$bundle/bench" "$bundle/lib" "$bundle/lm" \
    "$bundle/deps/include" "$bundle/deps/share/cmake" "$bundle/deps/src"
  local cache="$root/build/gpu-check-cache"
  local flags=(--target=all --backward --cuda-arch="$arch" --cache-dir "$cache")

  local model models=" ${FP_PREPARE_MODELS:-} "
  for model in "$root"/models/*.fp; do
    local name
    name=$(basename "$model" .fp)
    [[ -z "${FP_PREPARE_MODELS:-}" || "$models" == *" $name "* ]] || continue
    echo "gpu-check: compiling $name (cpu + cuda sm_$arch, with backward)"
    "$fpc" "$model" "${flags[@]}" -o "$bundle/models/$name.so"
  done
  # The models the test stage also runs with their scans unfused.
  mkdir -p "$bundle/models-split"
  for name in fp_mamba_householder1 fp_mamba_lm; do
    [[ -z "${FP_PREPARE_MODELS:-}" || "$models" == *" $name "* ]] || continue
    echo "gpu-check: compiling $name with --no-fuse-scans"
    "$fpc" "$root/models/$name.fp" --no-fuse-scans "${flags[@]}" \
      -o "$bundle/models-split/$name.so"
  done
  # The language model at full size for train-lm, and English text for it.
  if [[ -z "${FP_PREPARE_MODELS:-}" || "$models" == *" fp_mamba_lm "* ]]; then
    mkdir -p "$bundle/lm/data"
    cp "$bundle/models/fp_mamba_lm.so" "$bundle/lm/"
    local text
    for text in computers science people literature humorists wisdom; do
      cp "/usr/share/games/fortunes/$text" "$bundle/lm/data/" ||
        die "no /usr/share/games/fortunes/$text (scripts/install-deps.sh" \
          "installs the fortunes package)"
    done
  fi
  local source set args
  while IFS='|' read -r name source set args; do
    [[ $# -eq 0 || "$only" == *" $name "* ]] || continue
    echo "gpu-check: compiling benchmark $name ($source $set)"
    # shellcheck disable=SC2086 # $set holds separate words
    "$fpc" "$root/$source" $set "${flags[@]}" -o "$bundle/bench/$name.so"
  done < <(bench_configs)
  find "$bundle/models" "$bundle/models-split" "$bundle/bench" "$bundle/lm" \
    -name '*.so' -exec strip --strip-unneeded {} +
  # For the compile stage: one model's host and CUDA units and fpc's
  # commands compiling them (from `fpc -v`, run with a stand-in nvcc that
  # writes empty objects), their paths and programs as placeholders.
  local unit="${FP_COMPILE_MODEL:-fp_mamba_kronecker}"
  echo "gpu-check: writing $unit's units and compile commands"
  mkdir -p "$bundle/compile"
  "$fpc" "$root/models/$unit.fp" "${flags[@]}" --emit=host \
    -o "$bundle/compile/unit.cpp"
  "$fpc" "$root/models/$unit.fp" "${flags[@]}" --emit=cuda \
    -o "$bundle/compile/unit.cu"
  local stand_in="$bundle/compile/nvcc"
  printf '#!/bin/sh\nwhile [ "$1" != -o ]; do shift; done\n%s\n' \
    ': | cc -x c -c - -o "$2"' >"$stand_in"
  chmod +x "$stand_in"
  NVCC="$stand_in" "$fpc" "$root/models/$unit.fp" "${flags[@]}" --cpus=1 \
    --no-cache -v -o "$bundle/compile/unused.so" 2>&1 |
    sed -nE -e '/ -shared /d' -e 's/^fpc: ([^ ]+ .* -c .*)$/\1/p' |
    sed -E -e "s#^$stand_in #@NVCC@ #" -e '/^@NVCC@/!s#^[^ ]+ #@CXX@ #' \
      -e "s#-I$root/runtime/include#-I@INCLUDE@#" \
      -e 's#-c [^ ]+\.cpp #-c @HOST@ #' -e 's#-c [^ ]+\.cu #-c @CUDA@ #' \
      -e 's#-o [^ ]+\.o$#-o @OBJECT@#' >"$bundle/compile/commands.txt"
  rm -f "$bundle/compile/unused.so" "$stand_in"
  grep -q '^@NVCC@ ' "$bundle/compile/commands.txt" ||
    die "no nvcc command in fpc -v's output for $unit"

  # Shared libraries the model libraries need beyond glibc, the C++
  # runtime and CUDA's own (which the GPU machine has).
  local lib any
  any=$(find "$bundle/models" "$bundle/bench" -name '*.so' | head -1)
  [[ -n "$any" ]] || die "FP_PREPARE_MODELS and the configurations named" \
    "left nothing to compile"
  for lib in $(ldd "$any" |
    awk '$3 ~ /^\// {print $3}'); do
    case "$(basename "$lib")" in
    libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | \
      libstdc++.so* | libgcc_s.so* | libcu*) ;;
    *) cp -L "$lib" "$bundle/lib/" ;;
    esac
  done

  # Build dependencies of the runtime: GoogleTest as source (built there
  # with LibTorch's C++ ABI), fmt and nlohmann_json as headers.
  cp -r /usr/src/googletest "$bundle/deps/src/googletest"
  cp -r /usr/include/fmt /usr/include/nlohmann "$bundle/deps/include/"
  cp -r /usr/share/cmake/nlohmann_json "$bundle/deps/share/cmake/"
  mkdir -p "$bundle/deps/share/cmake/fmt"
  cat >"$bundle/deps/share/cmake/fmt/fmt-config.cmake" <<'EOF'
# fmt, header-only, as bundled by tools/gpu-check.sh.
if(NOT TARGET fmt::fmt)
  add_library(fmt::fmt INTERFACE IMPORTED)
  set_target_properties(fmt::fmt PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${CMAKE_CURRENT_LIST_DIR}/../../../include"
    INTERFACE_COMPILE_DEFINITIONS "FMT_HEADER_ONLY=1")
endif()
set(fmt_FOUND TRUE)
EOF
  # CBLAS for the host-kernel tests (FpCompiledTests includes Host.h and
  # links OpenBLAS, as model libraries do): its headers, and the library
  # with what it loads in lib/, also under the name the linker looks for
  # (run puts the bundle on CMAKE_PREFIX_PATH).
  local cblas
  cblas=$(dirname "$(readlink -f /usr/include/x86_64-linux-gnu/cblas.h)")
  cp "$cblas"/*.h "$bundle/deps/include/"
  for lib in /usr/lib/x86_64-linux-gnu/libopenblas.so.0 $(ldd \
    /usr/lib/x86_64-linux-gnu/libopenblas.so.0 | awk '$3 ~ /^\// {print $3}'); do
    case "$(basename "$lib")" in
    libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | \
      libstdc++.so* | libgcc_s.so*) ;;
    *) [[ -e "$bundle/lib/$(basename "$lib")" ]] || cp -L "$lib" "$bundle/lib/" ;;
    esac
  done
  ln -sf libopenblas.so.0 "$bundle/lib/libopenblas.so"
  source_digest >"$bundle/source-digest"
  rm -rf "$carried"
  mkdir -p "$carried"
  tar -C "$bundle" -cJf "$carried/bundle.tar.xz" .
  du -sh "$carried/bundle.tar.xz"
  echo "gpu-check: prepared $carried; on the GPU machine run" \
    "'tools/gpu-check.sh run' with gpu-check carried"
}

# Prints "stage: ok" or "stage: FAILED (see log)" with the seconds since
# `started` and remembers a failure.
status=0
verdict() {
  local stage=$1 code=$2 log=$3 started=$4
  local took="$((SECONDS - started)) s"
  if [[ $code -eq 0 ]]; then
    echo "gpu-check: $stage: ok, $took ($log)"
  else
    echo "gpu-check: $stage: FAILED with exit $code, $took (see $log)"
    [[ $status -ne 0 ]] || status=$code
  fi
}

# Configures build-gpu/ unless it is configured, then builds the targets
# named (everything without any), going on past a failed compile so that
# the log lists every error; returns at the first failing step.
build_runtime() {
  local deps="$bundle/deps" torch_prefix abi cupti
  python3 -c 'import torch; print("torch", torch.__version__,
    "cuda", torch.version.cuda, "device",
    torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)' ||
    return
  nvidia-smi || true
  if [[ -f "$root/build-gpu/build.ninja" ]]; then
    cmake --build "$root/build-gpu" ${1:+--target "$@"} -- -k 0
    return
  fi
  torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') ||
    return
  abi=$(python3 -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))') ||
    return
  cupti=$(python3 -c 'import os, nvidia.cuda_cupti as c;
print(os.path.dirname(c.__file__))' 2>/dev/null) || cupti=
  # GoogleTest is installed beside the bundle, which a newer one replaces.
  local gtest="$root/build-gpu/gtest"
  if [[ ! -f "$gtest/lib/cmake/GTest/GTestConfig.cmake" ]]; then
    cmake -G Ninja -S "$deps/src/googletest" -B "$gtest/build" \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$gtest" \
      -DCMAKE_CXX_FLAGS="-D_GLIBCXX_USE_CXX11_ABI=$abi" -DBUILD_GMOCK=ON ||
      return
    cmake --build "$gtest/build" --target install || return
  fi
  cmake -G Ninja -S "$root" -B "$root/build-gpu" -DCMAKE_BUILD_TYPE=Release \
    -DFP_BUILD_COMPILER=OFF -DFP_ENABLE_CUDA=ON \
    -DCMAKE_PREFIX_PATH="$gtest;$deps;$bundle;$torch_prefix" \
    ${cupti:+-DFP_CUPTI_ROOT="$cupti"} || return
  cmake --build "$root/build-gpu" ${1:+--target "$@"} -- -k 0
}

# Builds what a stage runs (the targets named, or everything), appending to
# $out/build.log; fails, with the log's end, where the build does.
stage_build() {
  local log="$out/build.log" code=0 started=$SECONDS
  echo "== build ${*:-everything}" >>"$log"
  build_runtime "$@" >>"$log" 2>&1 || code=$?
  verdict "build (${*:-everything})" $code "$log" "$started"
  [[ $code -eq 0 ]] || tail -30 "$log"
  return $code
}

# The runtime's tests on the CPU, the libraries included (the CUDA
# variants of its kernel tests run where they find the GPU; the device
# solver's test runs in test-cuda).
stage_test_cpu() {
  stage_build || return 0
  local log="$out/ctest.log" code=0 started=$SECONDS
  # Gpt2Bpe runs the npm package gpt-3-encoder under Node.js; the bundle
  # carries neither.
  FP_TEST_MODELS_DIR="$bundle/models" \
    ctest --test-dir "$root/build-gpu" -j 8 --output-on-failure \
    -LE runtime-cuda -E Gpt2Bpe >"$log" 2>&1 || code=$?
  verdict "runtime tests (cpu)" $code "$log" "$started"
  tail -5 "$log"
}

# The CUDA solver against the host's at the benchmark grids, then compiled
# vs eager on CUDA: forward and one-step gradients of every model.
stage_test_cuda() {
  stage_build FpDeviceSolverTests FpCompiledModelTests || return 0
  local log="$out/gpu-solver.log" code=0 started=$SECONDS
  "$root/build-gpu/runtime/test/Compiled/FpDeviceSolverTests" \
    >"$log" 2>&1 || code=$?
  verdict "device solver vs host solver, fused launches (cuda)" $code "$log" "$started"
  grep -E "^\[  (PASSED|FAILED|SKIPPED)|^\[  FAILED|fp::cuda::Solver" "$log" |
    tail -20 || true
  log="$out/gpu-models.log"
  code=0
  started=$SECONDS
  export FP_TEST_MODELS_DIR="$bundle/models"
  FP_TEST_DEVICE=cuda "$root/build-gpu/runtime/test/Compiled/FpCompiledModelTests" \
    >"$log" 2>&1 || code=$?
  verdict "compiled vs eager models (cuda)" $code "$log" "$started"
  grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" "$log" | tail -20 || true
  # The same with the solver's loop queued from the host instead of a graph.
  log="$out/gpu-models-no-graphs.log"
  code=0
  started=$SECONDS
  FP_TEST_DEVICE=cuda FP_CUDA_GRAPHS=0 \
    "$root/build-gpu/runtime/test/Compiled/FpCompiledModelTests" \
    >"$log" 2>&1 || code=$?
  verdict "compiled vs eager models (cuda, FP_CUDA_GRAPHS=0)" $code "$log" "$started"
  grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" "$log" | tail -20 || true
  # Two models built with their scans unfused (fpc --no-fuse-scans).
  log="$out/gpu-models-split.log"
  code=0
  started=$SECONDS
  FP_TEST_DEVICE=cuda FP_TEST_MODELS_DIR="$bundle/models-split" \
    "$root/build-gpu/runtime/test/Compiled/FpCompiledModelTests" \
    --gtest_filter='*/fp_mamba_householder1:*/fp_mamba_lm' \
    >"$log" 2>&1 || code=$?
  verdict "compiled vs eager models, scans unfused (cuda)" $code "$log" "$started"
  grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" "$log" | tail -20 || true
  # The libraries' own split schedule at every shape (the tests' batches
  # are small, but their samples too short for chunks, so their calls take
  # the fused one).
  log="$out/gpu-models-split-schedule.log"
  code=0
  started=$SECONDS
  FP_TEST_DEVICE=cuda FP_CUDA_SCHEDULE=split \
    "$root/build-gpu/runtime/test/Compiled/FpCompiledModelTests" \
    >"$log" 2>&1 || code=$?
  verdict "compiled vs eager models, the libraries' split schedule (cuda)" $code "$log" "$started"
  grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" "$log" | tail -20 || true
  # Fused scans with each sample in three chunks (FP_TIME_CHUNKS; where
  # the fused schedule chunks, a call would take the split one unless told).
  log="$out/gpu-models-chunked.log"
  code=0
  started=$SECONDS
  FP_TEST_DEVICE=cuda FP_TIME_CHUNKS=3 FP_CUDA_SCHEDULE=fused \
    "$root/build-gpu/runtime/test/Compiled/FpCompiledModelTests" \
    --gtest_filter='*/fp_mamba_householder1:*/fp_mamba_lm:*/fp_rnn' \
    >"$log" 2>&1 || code=$?
  verdict "compiled vs eager models, samples in chunks (cuda)" $code "$log" "$started"
  grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" "$log" | tail -20 || true
}

# Fails unless every argument names a benchmark configuration.
check_configs() {
  local known name
  known=" $(bench_configs | cut -d'|' -f1 | tr '\n' ' ')"
  for name in "$@"; do
    [[ "$known" == *" $name "* ]] ||
      die "unknown benchmark configuration '$name'; one of$known"
  done
}

# Runs fp-bench on the configurations named in $@, or on all of them.
stage_bench() {
  local log="$out/bench.log" code=0 repeats="${FP_BENCH_REPEATS:-3}"
  local only=" $* " name
  check_configs "$@"
  stage_build fp-bench || return 0
  : >"$log"
  local source set args mode dtype started=$SECONDS config_started
  while IFS='|' read -r name source set args; do
    [[ $# -eq 0 || "$only" == *" $name "* ]] || continue
    if [[ ! -f "$bundle/bench/$name.so" ]]; then
      # A bundle prepared for some configurations holds only theirs.
      echo "gpu-check: $name is not in the bundle (prepare $name)" |
        tee -a "$log"
      [[ $# -eq 0 ]] || code=1
      continue
    fi
    config_started=$SECONDS
    if [[ "$name" == e_* ]]; then
      local graphs
      for graphs in 1 0; do
        echo "== $name, eval, FP_CUDA_GRAPHS=$graphs: fp-bench --model $name.so $args" >>"$log"
        # shellcheck disable=SC2086 # $args holds separate words
        FP_CUDA_GRAPHS=$graphs "$root/build-gpu/bin/fp-bench" \
          --model "$bundle/bench/$name.so" --device cuda --mode eval \
          --repeats "$repeats" --kernels 12 $args >>"$log" 2>&1 || code=$?
        echo >>"$log"
      done
      python3 "$root/tools/bench-summary.py" "$log" >"$out/bench-summary.md" ||
        true
      echo "gpu-check: benchmarked $name, $((SECONDS - config_started)) s"
      continue
    fi
    for mode in eval train; do
      echo "== $name, $mode: fp-bench --model $name.so $args" >>"$log"
      # shellcheck disable=SC2086 # $args holds separate words
      "$root/build-gpu/bin/fp-bench" --model "$bundle/bench/$name.so" \
        --device cuda --mode "$mode" --repeats "$repeats" --kernels 12 \
        $args >>"$log" 2>&1 || code=$?
      echo >>"$log"
    done
    # Config LM's selective scan (both sides run it): its 16 samples make
    # too few threads of one per channel to fill the device, and the scan
    # picks four lanes per channel (fp::cuda::ScanKernel). Its training
    # step again in the other kernels, with the kernels' times: in bf16
    # (where the scan took half the forward) one thread per channel
    # loading one or four tokens ahead and sixteen lanes; in f32 the first.
    if [[ "$name" == lm ]]; then
      local kernel dtype_kernel
      for dtype_kernel in bf16:channel bf16:ahead bf16:lanes16 f32:channel; do
        dtype=${dtype_kernel%%:*}
        kernel=${dtype_kernel#*:}
        echo "== $name, train, $dtype, FP_SCAN_KERNEL=$kernel: fp-bench --model $name.so $args --dtype $dtype" >>"$log"
        # shellcheck disable=SC2086 # $args holds separate words
        FP_SCAN_KERNEL=$kernel "$root/build-gpu/bin/fp-bench" \
          --model "$bundle/bench/$name.so" --device cuda --mode train \
          --dtype "$dtype" --repeats "$repeats" --kernels 4 $args \
          >>"$log" 2>&1 || code=$?
        echo >>"$log"
      done
    fi
    # The training step in bf16, both sides, with their f32 differences and
    # where their time goes (the reference code's precision on its tasks).
    echo "== $name, train, bf16: fp-bench --model $name.so $args --dtype bf16" >>"$log"
    # shellcheck disable=SC2086 # $args holds separate words
    "$root/build-gpu/bin/fp-bench" --model "$bundle/bench/$name.so" \
      --device cuda --mode train --dtype bf16 --repeats "$repeats" \
      --kernels 12 $args >>"$log" 2>&1 || code=$?
    echo >>"$log"
    # The f32 training step with TF32 GEMMs on both sides (--tf32, the
    # opt-in PyTorch users know as allow_tf32): its time beside the exact
    # f32 step above, and its distance from the f64 reference.
    if [[ "$name" == s_householder1 || "$name" == lm ]]; then
      echo "== $name, train, f32, --tf32: fp-bench --model $name.so $args --tf32" >>"$log"
      # shellcheck disable=SC2086 # $args holds separate words
      "$root/build-gpu/bin/fp-bench" --model "$bundle/bench/$name.so" \
        --device cuda --mode train --tf32 --repeats "$repeats" \
        --kernels 4 $args >>"$log" 2>&1 || code=$?
      echo >>"$log"
    fi
    # Config S's bf16 training step again with the launches' scratch handed
    # back to the OS at every synchronisation, as before the libraries kept
    # their memory pool's high-water mark (FP_CUDA_KEEP_SCRATCH=0).
    if [[ "$name" == s_householder1 ]]; then
      echo "== $name, train, bf16, FP_CUDA_KEEP_SCRATCH=0: fp-bench --model $name.so $args --dtype bf16" >>"$log"
      # shellcheck disable=SC2086 # $args holds separate words
      FP_CUDA_KEEP_SCRATCH=0 "$root/build-gpu/bin/fp-bench" \
        --model "$bundle/bench/$name.so" --device cuda --mode train \
        --dtype bf16 --repeats "$repeats" --kernels 4 $args \
        >>"$log" 2>&1 || code=$?
      echo >>"$log"
    fi
    # Config S's training step on the split schedule (FP_CUDA_SCHEDULE=split),
    # which its 512 samples do not take: the fused kernel walks each
    # sample's 17 tokens in order, one block per sample, where the split
    # one is parallel over tokens and runs the scan alone, one thread per
    # channel. In bf16 and f32, with the kernels' times.
    if [[ "$name" == s_householder1 ]]; then
      for dtype in bf16 f32; do
        echo "== $name, train, $dtype, FP_CUDA_SCHEDULE=split: fp-bench --model $name.so $args --dtype $dtype" >>"$log"
        # shellcheck disable=SC2086 # $args holds separate words
        FP_CUDA_SCHEDULE="split" "$root/build-gpu/bin/fp-bench" \
          --model "$bundle/bench/$name.so" --device cuda --mode train \
          --dtype "$dtype" --repeats "$repeats" --kernels 6 $args \
          >>"$log" 2>&1 || code=$?
        echo >>"$log"
      done
    fi
    if [[ "${FP_BENCH_EXTRAS:-1}" == 0 ]]; then
      python3 "$root/tools/bench-summary.py" "$log" >"$out/bench-summary.md" ||
        true
      echo "gpu-check: benchmarked $name, $((SECONDS - config_started)) s"
      continue
    fi
    # The forward again with the loop queued from the host, for comparison.
    echo "== $name, eval, FP_CUDA_GRAPHS=0: fp-bench --model $name.so $args" >>"$log"
    # shellcheck disable=SC2086 # $args holds separate words
    FP_CUDA_GRAPHS=0 "$root/build-gpu/bin/fp-bench" \
      --model "$bundle/bench/$name.so" --device cuda --mode eval \
      --repeats "$repeats" $args >>"$log" 2>&1 || code=$?
    echo >>"$log"
    # At config LM (16 samples leave the GPU idle) the library's calls
    # take its split schedule. Its training step again on the fused one
    # (FP_CUDA_SCHEDULE=fused): in the chunks timeChunks picks, with one
    # block per sample, and with 17 chunks, which timeChunks chose on 132
    # SMs at two blocks per SM before it kept the chunks to one round of
    # blocks (16).
    if [[ "$name" == lm ]]; then
      local chunks note
      for chunks in "" 1 17; do
        note="FP_CUDA_SCHEDULE=fused${chunks:+ FP_TIME_CHUNKS=$chunks}"
        echo "== $name, train, $note: fp-bench --model $name.so $args" >>"$log"
        # shellcheck disable=SC2086 # $args holds separate words
        FP_CUDA_SCHEDULE=fused FP_TIME_CHUNKS=$chunks \
          "$root/build-gpu/bin/fp-bench" \
          --model "$bundle/bench/$name.so" --device cuda --mode train \
          --repeats "$repeats" $args >>"$log" 2>&1 || code=$?
        echo >>"$log"
      done
    fi
    # The table so far, so that a call cut short still leaves one.
    python3 "$root/tools/bench-summary.py" "$log" >"$out/bench-summary.md" ||
      true
    echo "gpu-check: benchmarked $name, $((SECONDS - config_started)) s"
  done < <(bench_configs)
  verdict "benchmarks (cuda)" $code "$log" "$started"
  cat "$log"
  python3 "$root/tools/bench-summary.py" "$log" >"$out/bench-summary.md" &&
    cat "$out/bench-summary.md" ||
    echo "gpu-check: the benchmark summary failed; $log is complete"
}

# Nsight Compute on the fused kernel of each configuration named in $@ (or
# of s_householder1, s_kronecker and lm): one forward call (eval, the loop
# queued from the host), the solver step's second launch of the kernel
# whose name matches FP_PROFILE_KERNEL (default: the fused sample kernels),
# the "detailed" section set, the clocks left as they are; one report per
# configuration, ncu-NAME.txt, its headline figures printed; the program
# ends once that launch is profiled.
stage_profile() {
  local ncu kernel="${FP_PROFILE_KERNEL:-sampleKernel}" code started name
  ncu=$(command -v ncu) || ncu=
  local candidate
  for candidate in /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu; do
    [[ -n "$ncu" || ! -x "$candidate" ]] || ncu=$candidate
  done
  [[ -n "$ncu" ]] || die "no Nsight Compute (ncu) on this machine"
  [[ $# -gt 0 ]] || set -- s_householder1 s_kronecker lm
  check_configs "$@"
  stage_build fp-bench || return 0
  local source set args
  while IFS='|' read -r name source set args; do
    [[ " $* " == *" $name "* ]] || continue
    code=0
    started=$SECONDS
    # shellcheck disable=SC2086 # $args holds separate words
    FP_CUDA_GRAPHS=0 "$ncu" --clock-control none --set detailed --kill yes \
      --kernel-name-base demangled --kernel-name "regex:$kernel" \
      --launch-skip 1 --launch-count 1 \
      "$root/build-gpu/bin/fp-bench" --model "$bundle/bench/$name.so" \
      --device cuda --mode eval --repeats 1 --warmup 0 $args \
      >"$out/ncu-$name.txt" 2>&1 || code=$?
    # Ended by ncu once profiled, the program's exit status says nothing:
    # the report does.
    if grep -q "Section: GPU Speed Of Light" "$out/ncu-$name.txt"; then
      code=0
    else
      [[ $code -ne 0 ]] || code=1
    fi
    verdict "profile of $name" $code "$out/ncu-$name.txt" "$started"
    grep -E "^  [a-z].*\(|Duration|L1/TEX Cache Throughput|Issue Slots Busy|Registers Per Thread|Achieved Occupancy|Waves Per SM|excessive" \
      "$out/ncu-$name.txt" | cut -c1-150 || true
  done < <(bench_configs)
}

# The fpc Python package on CUDA with the machine's PyTorch
# (python/tests/test_cuda.py): layers against the host, a side stream, and
# training steps of the LM under torch.autocast.
stage_python() {
  local log="$out/python.log" code=0 started=$SECONDS
  (cd "$root/python/tests" &&
    PYTHONPATH="$root/python" FPC_TEST_CUDA_MODELS="$bundle/models" \
      FPC_TEST_SOURCE="$root" FPC_TEST_WORK="$out/python-work" \
      python3 -m unittest -v test_cuda) >"$log" 2>&1 || code=$?
  verdict "fpc Python package (cuda)" $code "$log" "$started"
  tail -8 "$log"
}

# The 12-layer LM trained with fp-train in bf16 at context 2048, compiled
# and eager, a few steps each; tokens/s, peak device memory, iterations.
stage_train_lm() {
  local lib="$bundle/lm/fp_mamba_lm.so"
  [[ -f "$lib" ]] || die "the bundle has no lm/fp_mamba_lm.so; prepare it" \
    "with fp_mamba_lm among FP_PREPARE_MODELS"
  stage_build fp-train || return 0
  local steps="${FP_LM_STEPS:-3}" batch="${FP_LM_BATCH:-64}"
  local accum="${FP_LM_ACCUM:-4}" data model code started
  data=$(find "$bundle/lm/data" -type f | sort | paste -sd, -)
  local common=(--task lm --data "$data" --doc-sep % --context-len 2048
    --dtype bf16 --batch "$batch" --grad-accum "$accum" --steps "$steps"
    --log-every 1 --eval-every 0 --eval-count 16 --device cuda
    --progress lines)
  # The eager reference of the library's architecture (its .fp source).
  local eager=(--model reference:fp_mamba --layers 12 --d-model 768
    --d-state 16 --short-conv --glu-in-loop --no-bc-norm --mixer householder
    --mixer-rank 2)
  # compiled-nccl: the compiled run in an NCCL process group of one
  # process, its gradients summed through NCCL (issue 48's first NCCL run).
  for model in compiled eager compiled-nccl; do
    code=0
    started=$SECONDS
    rm -rf "$out/lm-$model"
    if [[ $model == compiled ]]; then
      "$root/build-gpu/bin/fp-train" "${common[@]}" --model "$lib" \
        --out "$out/lm-$model" >"$out/lm-$model.log" 2>&1 || code=$?
    elif [[ $model == compiled-nccl ]]; then
      MASTER_PORT=29533 "$root/build-gpu/bin/fp-train" "${common[@]}" \
        --model "$lib" --dist-backend nccl \
        --out "$out/lm-$model" >"$out/lm-$model.log" 2>&1 || code=$?
    else
      "$root/build-gpu/bin/fp-train" "${common[@]}" "${eager[@]}" \
        --out "$out/lm-$model" >"$out/lm-$model.log" 2>&1 || code=$?
    fi
    verdict "LM training, $model (cuda, bf16)" $code "$out/lm-$model.log" \
      "$started"
    tail -3 "$out/lm-$model.log"
  done
  python3 "$root/tools/train-lm-summary.py" "$out" "$batch" "$accum" \
    >"$out/train-lm-summary.md" && cat "$out/train-lm-summary.md"
}

# The process groups on CUDA (DistributedTest: a bare `cuda` taking the
# local rank's device, NCCL's group of one where the build has NCCL).
stage_distributed_cuda() {
  stage_build FpTrainTests || return 0
  local log="$out/distributed.log" code=0 started=$SECONDS
  "$root/build-gpu/runtime/test/Train/FpTrainTests" \
    --gtest_filter='Distributed.*' >"$log" 2>&1 || code=$?
  verdict "process groups (cuda)" $code "$log" "$started"
  grep -E "^\[  (PASSED|FAILED|SKIPPED)|^\[  FAILED" "$log" | tail -12 || true
}

# fpc's compiles of one model's units (prepare's FP_COMPILE_MODEL, default
# fp_mamba_kronecker, --backward --target=all), all at once as fpc runs
# them, on this machine's CPUs: ptxas on one thread, and on the CPUs the
# compilers leave as fpc gives them (nproc over the compilers, or
# FP_COMPILE_THREADS), alternated twice. What fpc's --cpus policy gains
# where CPUs outnumber compilers.
stage_compile() {
  local dir="$bundle/compile" log="$out/compile.log" code=0
  local started=$SECONDS
  [[ -f "$dir/commands.txt" ]] ||
    die "the bundle has no compile/commands.txt; prepare it again"
  local nvcc="${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
  [[ -x "$nvcc" ]] || nvcc=nvcc
  local compilers threads work
  compilers=$(wc -l <"$dir/commands.txt")
  threads=${FP_COMPILE_THREADS:-$(($(nproc) / compilers))}
  local variants=(1)
  ((threads < 2)) || variants+=("$threads")
  work=$(mktemp -d)
  {
    echo "$(nproc) CPUs, $compilers compilers; ptxas threads: ${variants[*]}"
    local round variant begun line pids pid
    for round in 1 2; do
      for variant in "${variants[@]}"; do
        begun=$(date +%s.%N)
        pids=()
        while read -r line; do
          line=${line//@CXX@/c++}
          line=${line//@INCLUDE@/$root/runtime/include}
          line=${line//@HOST@/$dir/unit.cpp}
          line=${line//@CUDA@/$dir/unit.cu}
          line=${line//@OBJECT@/$work/${#pids[@]}.o}
          if [[ $line == @NVCC@* ]]; then
            line="$nvcc${line#@NVCC@}"
            ((variant < 2)) || line+=" -Xptxas=--split-compile=$variant"
          fi
          # shellcheck disable=SC2086 # the command's words
          $line &
          pids+=($!)
        done <"$dir/commands.txt"
        for pid in "${pids[@]}"; do wait "$pid" || code=1; done
        awk -v r="$round" -v v="$variant" -v b="$begun" \
          -v e="$(date +%s.%N)" 'BEGIN {
            printf "round %d, ptxas on %d thread(s): %.1f s\n", r, v, e - b }'
      done
    done
  } >"$log" 2>&1
  rm -rf "$work"
  verdict "compile ($compilers compilers at once)" $code "$log" "$started"
  tail -5 "$log"
}

# The open issues' GPU checks in one call that fits a short device lease:
# the steps below in this order, each begun only while what is left of
# FP_FIRST_BUDGET seconds (default 540) covers its usual length on an
# H200, with the benchmarks' comparison runs left out (FP_BENCH_EXTRAS=0)
# and two LM training steps a run. The steps left out are listed last, each
# with the call that runs it.
stage_first() {
  local budget="${FP_FIRST_BUDGET:-540}" begun=$SECONDS entry step need
  local skipped=()
  stage_build FpDeviceSolverTests FpCompiledModelTests FpTrainTests \
    fp-bench fp-train || return 0
  # step|seconds: the test stages, then the benchmarks and runs by the
  # weight of what they measure.
  local plan=(
    "test-cuda|150"
    "distributed-cuda|20"
    "bench s_householder1|70"
    "python|40"
    "bench e_kronecker e_householder1|40"
    "bench lm|240"
    "train-lm|200"
    "compile|120"
  )
  for entry in "${plan[@]}"; do
    step=${entry%|*}
    need=${entry##*|}
    if ((SECONDS - begun + need > budget)); then
      skipped+=("$step")
      continue
    fi
    case "$step" in
    test-cuda) stage_test_cuda ;;
    distributed-cuda) stage_distributed_cuda ;;
    python) stage_python ;;
    compile) stage_compile ;;
    train-lm)
      if [[ -f "$bundle/lm/fp_mamba_lm.so" ]]; then
        FP_LM_STEPS="${FP_LM_STEPS:-2}" stage_train_lm
      else
        echo "gpu-check: train-lm: the bundle has no lm/fp_mamba_lm.so"
      fi
      ;;
    bench\ *)
      # shellcheck disable=SC2086 # the configurations are separate words
      FP_BENCH_EXTRAS=0 stage_bench ${step#bench }
      ;;
    esac
  done
  echo "gpu-check: first: $((SECONDS - begun)) s of a $budget s budget"
  for step in "${skipped[@]}"; do
    echo "gpu-check: first: left out $step (tools/gpu-check.sh run $step)"
  done
}

run() {
  local stage=${1:-all}
  [[ $# -eq 0 ]] || shift
  bundle="$root/build-gpu/bundle"
  # Unpack the carried bundle unless this one is unpacked already.
  local stamp="$bundle/.unpacked-from"
  [[ -f "$carried/bundle.tar.xz" || -d "$bundle/models" ]] ||
    die "no $carried/bundle.tar.xz; run 'tools/gpu-check.sh prepare' on a" \
      "machine with fpc and carry gpu-check"
  if [[ -f "$carried/bundle.tar.xz" ]] &&
    ! cmp -s <(cksum <"$carried/bundle.tar.xz") "$stamp"; then
    rm -rf "$bundle"
    mkdir -p "$bundle"
    tar -C "$bundle" -xJf "$carried/bundle.tar.xz"
    cksum <"$carried/bundle.tar.xz" >"$stamp"
  fi
  if [[ "$(cat "$bundle/source-digest" 2>/dev/null)" != "$(source_digest)" ]]; then
    if [[ "${FP_STALE_BUNDLE:-0}" == 1 ]]; then
      echo "gpu-check: warning: the bundle was prepared from other sources" \
        "than this tree's (FP_STALE_BUNDLE=1: running it anyway)" >&2
    else
      die "the bundle was prepared from other sources than this tree's" \
        "(compiler, runtime headers or models changed since): run" \
        "'tools/gpu-check.sh prepare' again, or set FP_STALE_BUNDLE=1 to" \
        "run it anyway"
    fi
  fi
  out="${OUT:-$root/build-gpu/out}"
  mkdir -p "$out"
  export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The GPU's stages first: the CPU tests also run in CI.
  case "$stage" in
  build) stage_build "$@" ;;
  test)
    stage_test_cuda
    stage_test_cpu
    ;;
  test-cpu) stage_test_cpu ;;
  test-cuda) stage_test_cuda ;;
  bench) stage_bench "$@" ;;
  profile) stage_profile "$@" ;;
  train-lm) stage_train_lm ;;
  python) stage_python ;;
  distributed-cuda) stage_distributed_cuda ;;
  compile) stage_compile ;;
  first) stage_first ;;
  all)
    stage_test_cuda
    stage_bench
    stage_test_cpu
    ;;
  *) die "unknown stage '$stage'; one of build, test, test-cpu, test-cuda," \
    "bench, profile, train-lm, python, distributed-cuda, compile, first," \
    "all" ;;
  esac
  return "$status"
}

case "${1:-}" in
prepare)
  shift
  prepare "$@"
  ;;
run)
  shift
  run "$@"
  ;;
*)
  echo "usage: tools/gpu-check.sh prepare [CONFIG...] |" \
    "run [build [TARGET...]|test|test-cpu|test-cuda|bench [CONFIG...]|profile" \
    "[CONFIG...]|train-lm|python|distributed-cuda|compile|first|all]" >&2
  exit 2
  ;;
esac
