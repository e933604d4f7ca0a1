#!/usr/bin/env bash
# Runs GPU tests on the GPU machine without building there (the build takes ~140 s of device time there;
# this machine builds for free). Two steps:
#   here (Debian 12, CUDA toolkit, after `ninja -C build <targets>`):
#     scripts/gpu-bundle.sh pack TARGET...   -> .deps/gpubin: each build/TARGET stripped and xz'd, plus the
#                                               runtime .debs its binaries need (fmt, spdlog, pcre2, utf8proc)
#   there (carry .deps/gpubin):
#     scripts/gpu-bundle.sh unpack           -> /tmp/gpubin/<name> runnable, build/keel in place (the tests
#                                               find keel at the build folder compiled into them), and prints
#                                               the LD_LIBRARY_PATH to export
#     scripts/gpu-bundle.sh run LOGDIR NAME... -> unpacks, then runs each /tmp/gpubin/NAME (gtest) in turn,
#                                               one at a time (each keel process takes the device's free
#                                               memory as its pool), its output in LOGDIR/runs.log, a line
#                                               per binary (status, seconds) in LOGDIR/summary.txt; exit 1
#                                               if any failed
# The binaries need the GPU machine's CUDA runtime to be this toolkit's major version (13).
set -euo pipefail
cd "$(dirname "$0")/.."
G=${GPUBIN:-.deps/gpubin}  # GPUBIN=.deps/other keeps two bundles apart
case "${1:-}" in
  pack)
    shift
    rm -rf "$G" && mkdir -p "$G"
    for t in "$@"; do
      strip -o "$G/$(basename "$t")" "build/$t"
      xz -T2 -6 "$G/$(basename "$t")"
    done
    (cd "$G" && apt-get download libfmt9 libspdlog1.10 libpcre2-8-0 libutf8proc2 >/dev/null)
    du -sh "$G"
    ;;
  unpack)
    mkdir -p /tmp/gpubin/rt build/tests/server
    for d in "$G"/*.deb; do dpkg -x "$d" /tmp/gpubin/rt; done
    for x in "$G"/*.xz; do
      n=$(basename "$x" .xz)
      xz -dc "$x" > "/tmp/gpubin/$n" && chmod +x "/tmp/gpubin/$n"
    done
    [ -x /tmp/gpubin/keel ] && cp /tmp/gpubin/keel build/keel
    echo "/tmp/gpubin/rt/usr/lib/x86_64-linux-gnu"
    ;;
  run)
    logdir=$2
    shift 2
    mkdir -p "$logdir"
    LD_LIBRARY_PATH="$(bash "$0" unpack | tail -n 1)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
    status=0
    for n in "$@"; do
      start=$(date +%s)
      rc=0
      { echo "===== $n"; timeout "${GPU_TEST_TIMEOUT:-300}" "/tmp/gpubin/$n" 2>&1; } >>"$logdir/runs.log" || rc=$?
      [ "$rc" = 0 ] || status=1
      echo "$n rc=$rc $(($(date +%s) - start))s" | tee -a "$logdir/summary.txt"
    done
    exit $status
    ;;
  *)
    echo "usage: $0 pack TARGET... | unpack | run LOGDIR NAME..." >&2
    exit 2
    ;;
esac
