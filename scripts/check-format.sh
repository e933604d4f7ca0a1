#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what clang-format 14 (the repo's .clang-format) would write
# (ctest `check_format`, label unit). Fix: git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | xargs clang-format -i
#   usage: scripts/check-format.sh [REPO_ROOT]     (defaults to this script's parent folder)
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$root"
# clang-format-14 where Debian installs it under its versioned name; a plain clang-format only if it is 14.
tool=""
for t in clang-format-14 clang-format; do
  if command -v "$t" >/dev/null && "$t" --version | grep -q 'version 14\.'; then tool=$t; break; fi
done
if [ -z "$tool" ]; then
  echo "check-format: clang-format 14 not found (scripts/install-deps.sh installs it)" >&2
  exit 2
fi
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check-format: $root is not a git checkout; the files to check are git's tracked ones" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
if [ ${#files[@]} -eq 0 ]; then
  echo "check-format: no tracked C++ files under $root" >&2
  exit 2
fi
# Files that git tracks but this checkout lacks (deleted, not yet committed) are not there to check.
present=()
for f in "${files[@]}"; do [ -f "$f" ] && present+=("$f"); done
if ! printf '%s\0' "${present[@]}" | xargs -0 "$tool" --dry-run -Werror --style=file; then
  echo "check-format: the files above differ from $tool's output; fix with: $tool -i FILE" >&2
  exit 1
fi
echo "check-format: ok (${#present[@]} files, $("$tool" --version | head -n 1))"
