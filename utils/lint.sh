#!/usr/bin/env bash
#===- lint.sh - Repository lint run by CI ----------------------------------===#
#
# Checks the files git tracks:
#   whitespace    trailing whitespace, CRLF line endings and a missing final
#                 newline in text files (binary files are skipped);
#   large-files   files over 1 MiB;
#   merge-markers leftover conflict markers;
#   clang-format  *.h *.c *.cpp *.cu *.cuh must be clang-format clean
#                 (.clang-format), all of them or, with --base, those changed
#                 since REV; a failure prints the patch that fixes it;
#   lit-lines     lit/FileCheck/-verify-diagnostics lines that are silently
#                 dead: `// RUN fp-opt` or `// CHECK fp.foo` without the colon,
#                 `// expected-error @below msg` without `{{...}}`,
#                 in test/**/*.{mlir,fp,test} and models/**/*.fp; then its
#                 self-test, utils/lint-selftest.sh;
#   clang-tidy    only with --tidy BUILD_DIR (.clang-tidy, the build's
#                 compile_commands.json): the compiler and runtime sources,
#                 all of them or, with --base, those changed since REV (a
#                 changed header is seen through the sources that include it).
# Every problem is one `FILE:LINE: [check] message` line; the last line is
# `lint: N problem(s)` (exit 1) or `lint: clean` (exit 0). Exit 2 on misuse.
#
# Usage:
#   utils/lint.sh [--base REV] [--tidy BUILD_DIR] [--untracked]
#   utils/lint.sh --lit-lines FILE...   (only the lit-line check, on FILEs)
#
#   --base REV    restrict clang-format (and clang-tidy) to files changed
#                 between REV and the working tree (`git diff REV`)
#   --tidy DIR    also run clang-tidy with DIR/compile_commands.json
#   --untracked   also lint files git does not track yet (but does not ignore)
#
# Environment: CLANG_FORMAT (default clang-format), CLANG_TIDY (clang-tidy).
# No other tools beyond git, coreutils, diff and awk; shellcheck is not used.
#
#===----------------------------------------------------------------------===#

set -uo pipefail

CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
CLANG_TIDY=${CLANG_TIDY:-clang-tidy}
readonly MAX_FILE_BYTES=$((1024 * 1024))

# Formatting is not checked for these (extended regex on the repo-relative
# path): generated or third-party C/C++ sources, none tracked today.
readonly FORMAT_EXCLUDE='^(third_party|thirdparty|external)/|/generated/'

# Sources clang-tidy looks at: the compiler and the runtime, C++ only.
readonly TIDY_DIRS='dialect|passes|codegen|frontend|runtime|tools|test/Unit'
readonly TIDY_INCLUDE="^($TIDY_DIRS)/.*[.]cpp\$"

usage() {
  sed -n '/^# Usage:/,/^# Environment/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

problems=0

# problem FILE LINE CHECK MESSAGE: report one problem.
problem() {
  printf '%s:%s: [%s] %s\n' "$1" "$2" "$3" "$4"
  problems=$((problems + 1))
}

# report_records CHECK: report the `FILE<TAB>LINE<TAB>MESSAGE` records read
# from stdin.
report_records() {
  local file line msg
  while IFS=$'\t' read -r file line msg; do
    problem "$file" "$line" "$1" "$msg"
  done
}

#===----------------------------------------------------------------------===#
# lit-lines
#===----------------------------------------------------------------------===#

# The checker reads each file twice: the first pass collects the FileCheck
# prefixes its RUN lines name (--check-prefix=P, --check-prefixes=P,Q, also
# with a single dash or a space), the second flags comment lines whose first
# word is a directive but which lit/FileCheck/-verify-diagnostics would not
# see. Directives are case-sensitive, so prose ("// Check that ...") passes.
# Comments start with `//`; in *.test files also with `#`.
# shellcheck disable=SC2016 # $n below are awk fields, not shell expansions.
readonly LIT_LINES_AWK='
function reset(  p) {
  for (p in prefix) delete prefix[p]
  prefix["CHECK"] = 1
}
function addPrefixes(line,  opt, list, n, parts, i) {
  while (match(line, /-?-check-prefix(es)?[= ][ ]*[A-Za-z0-9_,-]+/)) {
    opt = substr(line, RSTART, RLENGTH)
    line = substr(line, RSTART + RLENGTH)
    list = opt
    sub(/^-?-check-prefix(es)?[= ][ ]*/, "", list)
    n = split(list, parts, ",")
    for (i = 1; i <= n; ++i)
      if (parts[i] != "")
        prefix[parts[i]] = 1
  }
}
# Whether word is a lit keyword or a FileCheck directive of a known prefix.
function isDirective(word,  p, rest) {
  if (word == "RUN" || word == "REQUIRES" || word == "UNSUPPORTED" ||
      word == "XFAIL" || word == "ALLOW_RETRIES")
    return 1
  for (p in prefix) {
    if (word == p)
      return 1
    if (index(word, p "-") != 1)
      continue
    rest = substr(word, length(p) + 2)
    if (rest ~ /^(NEXT|SAME|NOT|DAG|LABEL|EMPTY|COUNT-[0-9]+)$/)
      return 1
  }
  return 0
}
# Collect the prefixes on the first pass over a file.
FNR == 1 { pass = (pass == 1 && FILENAME == seen) ? 2 : 1; seen = FILENAME
           if (pass == 1) reset()
           hashComments = FILENAME ~ /\.test$/ }
pass == 1 { if ($0 ~ /RUN:/) addPrefixes($0); next }
{
  line = $0
  sub(/\r$/, "", line)
  # MLIR also reads `expected-*` in a comment after code on the same line.
  if (match(line, /\/\/[ \t]*expected-(error|note|remark|warning)/)) {
    text = substr(line, RSTART)
    sub(/^\/\/[ \t]*/, "", text)
    word = text
    sub(/[^A-Za-z_-].*$/, "", word)
    after = substr(text, length(word) + 1)
    if (word ~ /^expected-(error|note|remark|warning)(-re)?$/ &&
        after !~ /^[ \t]*(@[^ \t{]*)?[ \t]*[{][{].*[}][}][ \t]*$/)
      printf "%s\t%d\t`%s` is not checked: write `%s %s`\n",
             FILENAME, FNR, word, word, "[@LOCATION] {{MESSAGE}}"
    next
  }
  if (line ~ /^[ \t]*\/\//)
    sub(/^[ \t]*\/\/+[ \t]*/, "", line)
  else if (hashComments && line ~ /^[ \t]*#/)
    sub(/^[ \t]*#+[ \t]*/, "", line)
  else
    next
  if (!match(line, /^[A-Za-z_][A-Za-z0-9_-]*/))
    next
  word = substr(line, 1, RLENGTH)
  after = substr(line, RLENGTH + 1)
  if (substr(after, 1, 1) != ":" && isDirective(word))
    printf "%s\t%d\t`%s` without a colon is not a directive: write `%s:`\n",
           FILENAME, FNR, word, word
}'

# lit_lines FILE...: run the lit-line check on FILEs.
lit_lines() {
  local f
  for f in "$@"; do
    if [ ! -f "$f" ]; then
      problem "$f" 0 lit-lines "no such file"
      continue
    fi
    report_records lit-lines < <(awk "$LIT_LINES_AWK" "$f" "$f")
  done
}

finish() {
  if [ "$problems" -eq 0 ]; then
    echo "lint: clean"
    exit 0
  fi
  echo "lint: $problems problem(s)"
  exit 1
}

#===----------------------------------------------------------------------===#
# Options
#===----------------------------------------------------------------------===#

base=""
tidy_dir=""
untracked=0
while [ $# -gt 0 ]; do
  case "$1" in
  --lit-lines)
    shift
    [ $# -gt 0 ] || usage
    lit_lines "$@"
    finish
    ;;
  --base)
    [ $# -ge 2 ] || usage
    base=$2
    shift 2
    ;;
  --base=*)
    base=${1#--base=}
    shift
    ;;
  --tidy)
    [ $# -ge 2 ] || usage
    tidy_dir=$2
    shift 2
    ;;
  --tidy=*)
    tidy_dir=${1#--tidy=}
    shift
    ;;
  --untracked)
    untracked=1
    shift
    ;;
  -h | --help) usage ;;
  *)
    echo "lint: unknown argument '$1'" >&2
    usage
    ;;
  esac
done

root=$(git rev-parse --show-toplevel 2>/dev/null) || {
  echo "lint: not inside a git work tree" >&2
  exit 2
}
cd "$root" || exit 2
if [ -n "$tidy_dir" ]; then
  dir=$(cd "$tidy_dir" 2>/dev/null && pwd) || {
    echo "lint: no build directory '$tidy_dir'" >&2
    exit 2
  }
  tidy_dir=$dir
fi
if [ -n "$base" ] &&
  ! git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
  echo "lint: unknown revision '$base'" >&2
  exit 2
fi

#===----------------------------------------------------------------------===#
# File lists
#===----------------------------------------------------------------------===#

# files: every regular file git lists; text: those git does not consider
# binary; crlf: text files with CRLF line endings in the working tree.
files=()
text=()
crlf=()
ls_args=(--cached)
[ "$untracked" -eq 1 ] && ls_args+=(--others --exclude-standard)
while IFS= read -r -d '' record; do
  path=${record#*$'\t'}
  eol=${record%%$'\t'*}
  eol=${eol#*w/}
  eol=${eol%% *}
  # Deleted in the working tree, a symlink or a submodule: nothing to read.
  if [ ! -f "$path" ] || [ -L "$path" ]; then
    continue
  fi
  files+=("$path")
  [ "$eol" = "-text" ] && continue
  text+=("$path")
  case "$eol" in crlf | mixed) crlf+=("$path") ;; esac
done < <(git ls-files -z --eol "${ls_args[@]}" | sort -zu)

# changed: files changed between --base and the working tree (plus untracked
# ones with --untracked); without --base, every listed file.
changed=()
if [ -n "$base" ]; then
  while IFS= read -r -d '' path; do
    [ -f "$path" ] && changed+=("$path")
  done < <(
    git diff -z --name-only --diff-filter=d "$base" --
    [ "$untracked" -eq 1 ] && git ls-files -z --others --exclude-standard
  )
else
  changed=("${files[@]}")
fi

# run_awk PROGRAM FILE...: run an awk program over FILEs in batches (none:
# no output, instead of reading stdin).
run_awk() {
  local program=$1
  shift
  [ $# -gt 0 ] || return 0
  printf '%s\0' "$@" | xargs -0 awk "$program"
}

section() {
  echo "== $1"
}

#===----------------------------------------------------------------------===#
# whitespace
#===----------------------------------------------------------------------===#
# Nothing is exempt: docs/generated/*.md (mlir-tblgen output) has no trailing
# whitespace today; should a generator produce some, fix the .td description.

section "whitespace (${#text[@]} text files)"
before=$problems
# shellcheck disable=SC2016 # awk program.
report_records whitespace < <(run_awk '
  { sub(/\r$/, "") }
  /[ \t]+$/ { printf "%s\t%d\ttrailing whitespace\n", FILENAME, FNR }
' "${text[@]}")
for path in "${crlf[@]}"; do
  problem "$path" 1 whitespace "CRLF line endings (use LF)"
done
for path in "${text[@]}"; do
  if [ -s "$path" ] && [ -n "$(tail -c 1 "$path")" ]; then
    problem "$path" "$(($(wc -l <"$path") + 1))" whitespace \
      "no newline at end of file"
  fi
done
[ "$problems" -eq "$before" ] && echo "ok"

#===----------------------------------------------------------------------===#
# large-files
#===----------------------------------------------------------------------===#

section "large-files (limit $MAX_FILE_BYTES bytes)"
before=$problems
for path in "${files[@]}"; do
  size=$(wc -c <"$path")
  if [ "$size" -gt "$MAX_FILE_BYTES" ]; then
    problem "$path" 1 large-files "$size bytes, over the 1 MiB limit"
  fi
done
[ "$problems" -eq "$before" ] && echo "ok"

#===----------------------------------------------------------------------===#
# merge-markers
#===----------------------------------------------------------------------===#
# `<<<<<<< `, `||||||| ` and `>>>>>>> ` always count; a bare `=======` only in
# a file that also has one of those (alone it is a Markdown heading rule).

section "merge-markers"
before=$problems
# shellcheck disable=SC2016 # awk program.
report_records merge-markers < <(run_awk '
  function flush(  i) {
    if (marked)
      for (i = 1; i <= nsep; ++i)
        printf "%s\t%d\tmerge conflict marker\n", file, sep[i]
    nsep = 0; marked = 0
  }
  FNR == 1 { flush(); file = FILENAME }
  /^(<<<<<<<|\|\|\|\|\|\|\||>>>>>>>)( |$)/ {
    printf "%s\t%d\tmerge conflict marker\n", FILENAME, FNR; marked = 1
  }
  /^=======$/ { sep[++nsep] = FNR }
  END { flush() }
' "${text[@]}")
[ "$problems" -eq "$before" ] && echo "ok"

#===----------------------------------------------------------------------===#
# clang-format
#===----------------------------------------------------------------------===#

format_files=()
for path in "${changed[@]}"; do
  case "$path" in *.h | *.c | *.cpp | *.cu | *.cuh) ;; *) continue ;; esac
  [[ "$path" =~ $FORMAT_EXCLUDE ]] && continue
  format_files+=("$path")
done

section "clang-format (${#format_files[@]} files${base:+ changed since $base})"
before=$problems
if [ "${#format_files[@]}" -gt 0 ]; then
  if ! command -v "$CLANG_FORMAT" >/dev/null; then
    problem . 0 clang-format \
      "'$CLANG_FORMAT' not found (install it or set CLANG_FORMAT)"
  else
    "$CLANG_FORMAT" --version | sed 's/^/  using /'
    for path in "${format_files[@]}"; do
      out=$("$CLANG_FORMAT" --dry-run --Werror "$path" 2>&1) && continue
      # The first violation's line; `file:line:col: error: ...`.
      line=$(printf '%s\n' "$out" |
        sed -n 's/^[^:]*:\([0-9][0-9]*\):[0-9]*: .*/\1/p' | head -n 1)
      problem "$path" "${line:-1}" clang-format \
        "not clang-format clean; fix: $CLANG_FORMAT -i $path"
      # The patch that fixes it (applies with `git apply`).
      "$CLANG_FORMAT" "$path" |
        diff -u --label "a/$path" --label "b/$path" "$path" - |
        sed 's/^/    /'
    done
    if [ "$problems" -ne "$before" ] && [ -n "$base" ]; then
      echo "  (or, for the changed lines only: git clang-format $base)"
    fi
  fi
fi
[ "$problems" -eq "$before" ] && echo "ok"

#===----------------------------------------------------------------------===#
# lit-lines
#===----------------------------------------------------------------------===#

lit_files=()
for path in "${text[@]}"; do
  if [[ "$path" =~ ^test/.*\.(mlir|fp|test)$ ||
    "$path" =~ ^models/.*\.fp$ ]]; then
    lit_files+=("$path")
  fi
done

section "lit-lines (${#lit_files[@]} files)"
before=$problems
[ "${#lit_files[@]}" -gt 0 ] && lit_lines "${lit_files[@]}"
[ "$problems" -eq "$before" ] && echo "ok"

# The lit-line check's own test, so that it cannot silently stop flagging.
if [ -f utils/lint-selftest.sh ]; then
  section "lit-lines self-test"
  if out=$(bash utils/lint-selftest.sh 2>&1); then
    echo "ok"
  else
    printf '%s\n' "$out" | sed 's/^/    /'
    problem utils/lint-selftest.sh 1 lit-lines \
      "the lit-line check fails its self-test"
  fi
fi

#===----------------------------------------------------------------------===#
# clang-tidy
#===----------------------------------------------------------------------===#

if [ -n "$tidy_dir" ]; then
  tidy_files=()
  db="$tidy_dir/compile_commands.json"
  section "clang-tidy (${base:+files changed since $base, }$db)"
  before=$problems
  if [ ! -f "$db" ]; then
    problem "$db" 0 clang-tidy \
      "missing (configure with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)"
  else
    for path in "${changed[@]}"; do
      [[ "$path" =~ $TIDY_INCLUDE ]] || continue
      # Only sources the build compiles (others have no flags to use).
      grep -qF "\"file\": \"$root/$path\"" "$db" && tidy_files+=("$path")
    done
  fi
  echo "  ${#tidy_files[@]} source files"
  if [ "${#tidy_files[@]}" -gt 0 ]; then
    if ! command -v "$CLANG_TIDY" >/dev/null; then
      problem . 0 clang-tidy \
        "'$CLANG_TIDY' not found (install it or set CLANG_TIDY)"
    else
      "$CLANG_TIDY" --version | sed -n 's/^ *\(.*version.*\)/  using \1/p'
      # Headers are reported once however many sources include them.
      declare -A tidy_seen=()
      for path in "${tidy_files[@]}"; do
        echo "  $path"
        out=$("$CLANG_TIDY" -p "$tidy_dir" --quiet "$path" 2>&1 |
          grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$')
        while IFS= read -r diag; do
          [ -n "${tidy_seen[$diag]:-}" ] && continue
          tidy_seen[$diag]=1
          file=${diag%%:*}
          rest=${diag#*:}
          problem "${file#"$root"/}" "${rest%%:*}" clang-tidy "${rest#*: }"
        done < <(printf '%s\n' "$out" |
          grep -E '^[^ :][^:]*:[0-9]+:[0-9]+: (warning|error): ')
        # The full report (code excerpts, notes) for the new problems.
        [ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/    /'
      done
    fi
  fi
  [ "$problems" -eq "$before" ] && echo "ok"
fi

finish
