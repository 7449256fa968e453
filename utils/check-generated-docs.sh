#!/usr/bin/env bash
# Usage: check-generated-docs.sh BUILT CHECKED_IN [BUILT CHECKED_IN ...]
# Fails, naming the stale file, when a checked-in generated doc differs from
# the one the build produced. Fix with `ninja -C build fp-doc`.
set -u
status=0
while [ $# -ge 2 ]; do
  if ! cmp -s "$1" "$2"; then
    echo "stale generated doc: $2 (run 'ninja -C <build> fp-doc')" >&2
    diff -u "$2" "$1" | head -20 >&2
    status=1
  fi
  shift 2
done
exit $status
