#!/usr/bin/env bash
# Checks C and C++ files for formatting (.clang-format) and the clang-tidy checks of .clang-tidy,
# with Debian 12's clang-format / clang-tidy 14 (scripts/setup.sh lint installs them).
#
#   scripts/lint.sh            the files changed against main (committed, staged or not), and
#                              untracked new ones
#   scripts/lint.sh --all      the whole tree
#   scripts/lint.sh --fix      rewrite formatting in place instead of reporting it
#   scripts/lint.sh --format-only | --tidy-only
#   scripts/lint.sh FILE...    just these files
#
# clang-tidy needs build/compile_commands.json (./scripts/build.sh writes it; GRAPHI_BUILD_DIR
# for another build directory); it checks .c/.cpp files and, through them, the tree's headers.
# GRAPHI_LINT_JOBS (default 2) files are checked at once. Exit 0 clean, 1 findings, 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
JOBS=${GRAPHI_LINT_JOBS:-2}
BASE=${GRAPHI_LINT_BASE:-main}

all=0 fix=0 do_format=1 do_tidy=1
files=()
for a in "$@"; do
  case "$a" in
    --all) all=1 ;;
    --fix) fix=1 ;;
    --format-only) do_tidy=0 ;;
    --tidy-only) do_format=0 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "lint: unknown option '$a' (see --help)" >&2; exit 2 ;;
    *) files+=("$a") ;;
  esac
done

for tool in clang-format clang-tidy; do
  if ! command -v "$tool" > /dev/null; then
    echo "lint: $tool not found: run scripts/setup.sh lint" >&2
    exit 2
  fi
done

is_source() { case "$1" in *.c|*.cc|*.cpp|*.h|*.hpp) return 0 ;; *) return 1 ;; esac; }

if [ ${#files[@]} -eq 0 ]; then
  if [ $all -eq 1 ]; then
    mapfile -t candidates < <(git ls-files)
  else
    if ! git rev-parse --verify -q "$BASE" > /dev/null; then
      echo "lint: no branch '$BASE' to compare with (GRAPHI_LINT_BASE); use --all" >&2
      exit 2
    fi
    mapfile -t candidates < <( { git diff --name-only --diff-filter=d "$(git merge-base "$BASE" HEAD)";
                                 git ls-files --others --exclude-standard; } | sort -u)
  fi
  for f in "${candidates[@]}"; do
    is_source "$f" && [ -f "$f" ] && files+=("$f")
  done
else
  # Files named explicitly: C/C++ only (clang-format would format a .py or .sh as C++).
  named=("${files[@]}")
  files=()
  for f in "${named[@]}"; do
    if is_source "$f"; then
      files+=("$f")
    else
      echo "lint: skipping $f (not a C/C++ file)" >&2
    fi
  done
fi
if [ ${#files[@]} -eq 0 ]; then
  echo "lint: no C/C++ files to check"
  exit 0
fi

status=0
if [ $do_format -eq 1 ]; then
  if [ $fix -eq 1 ]; then
    printf '%s\0' "${files[@]}" | xargs -0 -n 16 -P "$JOBS" clang-format -i
    echo "lint: formatted ${#files[@]} file(s)"
  else
    bad=()
    for f in "${files[@]}"; do
      clang-format --dry-run --Werror "$f" > /dev/null 2>&1 || bad+=("$f")
    done
    if [ ${#bad[@]} -gt 0 ]; then
      status=1
      echo "lint: ${#bad[@]} file(s) not formatted as .clang-format says (scripts/lint.sh --fix rewrites them):"
      for f in "${bad[@]}"; do
        echo "  $f"
        clang-format "$f" | diff -u --label "$f" --label "$f (formatted)" "$f" - | head -20 | sed 's/^/    /'
      done
    else
      echo "lint: formatting ok (${#files[@]} file(s))"
    fi
  fi
fi

if [ $do_tidy -eq 1 ]; then
  db="$BUILD_DIR/compile_commands.json"
  if [ ! -f "$db" ]; then
    echo "lint: $db missing: run ./scripts/build.sh first" >&2
    exit 2
  fi
  # Translation units: the .c/.cpp files among those checked that the build compiles.
  tus=()
  for f in "${files[@]}"; do
    case "$f" in *.c|*.cc|*.cpp) grep -qF "\"$ROOT/$f\"" "$db" && tus+=("$f") ;; esac
  done
  if [ ${#tus[@]} -gt 0 ]; then
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
    # One report per file; --quiet keeps only the findings. Flags GCC knows and clang does not
    # (-Wno-restrict) are not findings.
    printf '%s\0' "${tus[@]}" | xargs -0 -P "$JOBS" -I{} sh -c \
      'clang-tidy -p "$1" --quiet --header-filter="^$2/" --extra-arg=-Wno-unknown-warning-option "$3" \
         > "$4/$(echo "$3" | tr / _).txt" 2>&1 || true' \
      sh "$BUILD_DIR" "$ROOT" {} "$out"
    findings=$(cat "$out"/*.txt | grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' | sort -u || true)
    if [ -n "$findings" ]; then
      status=1
      echo "lint: clang-tidy findings (.clang-tidy):"
      echo "$findings" | sed "s|^$ROOT/||; s/^/  /"
    else
      echo "lint: clang-tidy ok (${#tus[@]} translation unit(s))"
    fi
  fi
fi
exit $status
