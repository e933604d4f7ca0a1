#!/usr/bin/env bash
# Builds and tests keel on the GPU machine from the Debian packages that scripts/gpu-deps.sh downloaded here into
# .deps/debs (carry .deps with the run). Usage there: scripts/gpu-build.sh [BUILD_DIR] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-gpu}
shift || true
FLAGS=$(bash scripts/gpu-deps.sh unpack | tail -n 1)
# shellcheck disable=SC2086
# Another GCC (13 there) warns where Debian 12's GCC 12 does not: warnings stay visible but do not stop the build.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKEEL_BENCH=OFF -DKEEL_WERROR=OFF $FLAGS "$@"
cmake --build "$BUILD" -j "$(nproc)" -- -k 0
# Node client tests and the clang fuzzers need tools the GPU machine does not have.
status=0
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" -LE 'fuzz|node' || status=1
# The in-process server tests once more with their engine on the GPU (tests/server/server_harness.h).
KEEL_TEST_DEVICE=cuda ctest --test-dir "$BUILD" --output-on-failure -j 4 -L server -LE 'fuzz|node' || status=1
exit $status
