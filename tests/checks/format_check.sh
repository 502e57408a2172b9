#!/usr/bin/env bash
# Every C++ file of the repository formatted as .clang-format says: lists each file that
# deviates and exits 1, or exits 0. Fix with: clang-format -i FILE...
#   format_check.sh [SOURCE_DIR [CLANG_FORMAT]]   (SOURCE_DIR: this checkout by default)
set -euo pipefail
cd "${1:-$(dirname "$0")/../..}"
clang_format=${2:-clang-format}
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cc' '*.h' 2>/dev/null ||
                     find . -path ./build -prune -o \( -name '*.cc' -o -name '*.h' \) -print)
# One clang-format for every file (a process per file takes minutes on a loaded machine); only
# when some file deviates, one per file to name them.
if "$clang_format" --dry-run --Werror "${files[@]}" >/dev/null 2>&1; then
  echo "all ${#files[@]} C++ files follow .clang-format"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$clang_format" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "${#bad[@]} of ${#files[@]} files deviate from .clang-format; fix with:"
  echo "  $clang_format -i ${bad[*]}"
  exit 1
fi
echo "all ${#files[@]} C++ files follow .clang-format"
