#!/usr/bin/env bash
# Writes every stage fpc emits (parsed IR, lowered IR, host C++, CUDA C++,
# manifest) for every model under models/, in each of the schedules the
# compiler offers, into one directory. Refactors of the frontend, the passes
# or the emitters that must not change the generated code compare two
# snapshots with `diff -r`.
#
#   utils/snapshot-emitted.sh OUT_DIR [FPC]
set -euo pipefail
out=${1:?usage: utils/snapshot-emitted.sh OUT_DIR [FPC]}
root=$(cd "$(dirname "$0")/.." && pwd)
fpc=${2:-$root/build/bin/fpc}
[[ -x $fpc ]] || { echo "snapshot-emitted: no fpc at $fpc" >&2; exit 2; }
mkdir -p "$out"

variants=(
  "default:--backward"
  "nofuse:--backward --no-fuse"
  "nofusescans:--backward --no-fuse-scans"
  "saved:--backward --save-products"
  "f64:--element-type=f64"
)
for model in "$root"/models/*.fp; do
  name=$(basename "$model" .fp)
  for variant in "${variants[@]}"; do
    tag=${variant%%:*}
    read -r -a flags <<<"${variant#*:}"
    for stage in mlir lowered host cuda manifest; do
      file="$out/$name.$tag.$stage"
      if ! "$fpc" -I "$root/models/lib" "${flags[@]}" --emit="$stage" \
          -o "$file" "$model" 2>"$file.err"; then
        echo "snapshot-emitted: $name $tag $stage failed (see $file.err)" >&2
      fi
      [[ -s $file.err ]] || rm -f "$file.err"
    done
  done
done
echo "snapshot-emitted: $(ls "$out" | wc -l) files in $out"
