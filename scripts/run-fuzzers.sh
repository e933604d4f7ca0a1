#!/usr/bin/env bash
# Builds keel's libFuzzer targets (fuzz/*_fuzz.cpp) with clang-14, ASan and UBSan in a build dir of their own, then
# runs each for SECONDS from its seeds (fuzz/corpus/<target>/, plus fuzz/<target>.dict when present). Exits non-zero
# on any crash, sanitizer report, leak, timeout (> 10 s for one input) or RSS above 2 GiB, printing the log tail and
# the saved input.
#   usage: scripts/run-fuzzers.sh SECONDS [BUILD_DIR]     (BUILD_DIR defaults to build-fuzz)
set -euo pipefail
seconds=${1:?usage: scripts/run-fuzzers.sh SECONDS [BUILD_DIR]}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${2:-$root/build-fuzz}
for tool in clang-14 clang++-14 cmake ninja; do
  command -v "$tool" >/dev/null || { echo "run-fuzzers: $tool not found (scripts/install-deps.sh installs it)" >&2; exit 2; }
done

# -O1 with line tables only (the sanitizers' reports keep file:line): the tree builds in about half the
# CPU time of -O2 -g, which matters because CI builds it on every run.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DKEEL_TESTS=OFF -DKEEL_BENCH=OFF -DKEEL_FUZZ=ON >/dev/null
shopt -s nullglob
sources=("$root"/fuzz/*_fuzz.cpp)
[ ${#sources[@]} -gt 0 ] || { echo "run-fuzzers: no fuzz/*_fuzz.cpp" >&2; exit 2; }
status=0
# Each target builds on its own, so one that does not compile is reported without stopping the others.
for src in "${sources[@]}"; do
  name=$(basename "$src" .cpp)
  bin="$build/fuzz/$name"
  if ! cmake --build "$build" -j2 --target "$name" >"$build/$name.build.log" 2>&1; then
    status=1
    echo "run-fuzzers: $name FAILED to build; log tail ($build/$name.build.log):"
    tail -n 30 "$build/$name.build.log"
    continue
  fi
  work="$build/fuzz-work/$name"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  seeds=()
  [ -d "$root/fuzz/corpus/$name" ] && seeds=("$root/fuzz/corpus/$name")
  dict=()
  [ -f "$root/fuzz/$name.dict" ] && dict=("-dict=$root/fuzz/$name.dict")
  # New inputs go to the scratch corpus (first folder); the checked-in seeds are only read.
  if "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
      -artifact_prefix="$work/artifacts/" "${dict[@]}" "$work/corpus" "${seeds[@]}" >"$work/log" 2>&1; then
    echo "run-fuzzers: $name ok: $(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$work/log" | grep -Eo '[0-9]+$') runs in ${seconds}s, $(ls "$work/corpus" | wc -l) new inputs"
  else
    status=1
    echo "run-fuzzers: $name FAILED; log tail ($work/log):"
    tail -n 60 "$work/log"
    for a in "$work"/artifacts/*; do echo "run-fuzzers: input saved as $a"; done
  fi
done
exit $status
