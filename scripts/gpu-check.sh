#!/usr/bin/env bash
# The GPU checks of docs/CUDA.md, run on the GPU machine (carry .deps, from scripts/gpu-deps.sh download):
#   scripts/gpu-check.sh LOGDIR PHASE...
# builds build-gpu with scripts/gpu-build.sh's flags if it is not built yet (a warm machine keeps it), then
# runs each phase one after the other (GPU tests never run beside each other: each keel process takes the
# device's free memory), its output in LOGDIR/PHASE.log, a line per phase (exit status, seconds) in
# LOGDIR/summary.txt and on stdout. Phases:
#   gpu      ctest -L gpu (device, models, memory, sampling, restart tests)
#   model    the model tests (CPU backends, under the GPU host's compiler)
#   ops      the op harness: every op test, the CUDA backend in each one's list
#   server   the server tests with their engine on the GPU (KEEL_TEST_DEVICE=cuda)
#   soak     tools/soak.py, 60 s of mixed HTTP traffic on cuda:0 (bundled model, --parallel 4)
#   shapes   keel bench at real widths, cut to a few layers of one kind (random weights, 1K/4K/16K tokens):
#            eight Mamba2 layers of Nemotron-H 30B-A3B, six Gated DeltaNet and four attention layers of
#            Qwen3.5-35B-A3B; planned against measured transient
#   full     keel bench on the whole Nemotron-H 30B-A3B and Qwen3.5-35B-A3B shapes (random weights)
#   quant    keel bench on the whole Nemotron-H 30B-A3B shape, random weights MLX-packed at 4 and 2 bits
#   profile  Nsight Compute's time and DRAM bytes of every kernel (tools/ncu_steps.py: per step, by kernel, and
#            the median decode step launch by launch) of keel bench on
#            the two seed shapes cut to one period of their layer pattern (MEMEM* and three DeltaNet + one
#            attention; 1024-token prompt, 8 decode steps), beside the same bench's wall time without ncu
#   ab       the change under test against its base on the whole Nemotron-H 30B-A3B shape, interleaved
#            (bench/compare.py keel, 3 rounds): the base is this tree with the files under .ab/base put back
#            (make them here: for f in $(git diff --name-only BASE -- src); do mkdir -p .ab/base/$(dirname $f);
#            git show BASE:$f > .ab/base/$f; done; carry .ab), built as /tmp/ab-base/build-base; AB_RUNS
#            (default 3) and AB_LENGTHS (default 1024,16384) change the rounds and prompt lengths
#   mlxref   tools/make_mlx_reference.py: transformers on the MLX test folders' dequantized twins, written to
#            tests/fixtures/<family>/mlx_reference.safetensors (copies in LOGDIR)
#   all      gpu ops model server soak
# Exit status 1 if any phase failed.
set -uo pipefail
cd "$(dirname "$0")/.."
L=$1
shift
mkdir -p "$L"
B=build-gpu
if [ ! -x "$B/keel" ]; then
  start=$(date +%s)
  FLAGS=$(bash scripts/gpu-deps.sh unpack | tail -n 1)
  # shellcheck disable=SC2086
  { cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKEEL_BENCH=OFF -DKEEL_WERROR=OFF $FLAGS &&
      cmake --build "$B" -j "$(nproc)"; } >"$L/build.log" 2>&1 || { tail -n 40 "$L/build.log"; exit 1; }
  echo "build $(($(date +%s) - start))s" | tee -a "$L/summary.txt"
fi
# (again on a warm machine: a carried .deps replaces the prefix the last call unpacked)
bash scripts/gpu-deps.sh unpack >/dev/null
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
phase() {
  local name=$1 limit=$2
  shift 2
  local start rc=0
  start=$(date +%s)
  timeout "$limit" bash -c "$*" >"$L/$name.log" 2>&1 || rc=$?
  echo "$name rc=$rc $(($(date +%s) - start))s" | tee -a "$L/summary.txt"
  [ "$rc" = 0 ] || status=1
}
# keel bench on a real-width shape cut to a few layers of one kind (random weights, prefill chunks of 4096):
# shape_bench NAME CONFIG LAYERS TYPE [ENV=VALUE...]. nemotron_h: TYPE M (Mamba2); qwen3_5_moe_text: TYPE
# linear_attention or full_attention.
shape_bench() {
  local name=$1 config=$2 layers=$3 type=$4
  shift 4
  mkdir -p "/tmp/$name"
  python3 -c "import json; c = json.load(open('$config')); n = $layers
c.update(num_hidden_layers=n)
if 'hybrid_override_pattern' in c: c['hybrid_override_pattern'] = '$type' * n
if 'layer_types' in c: c['layer_types'] = ['$type'] * n
json.dump(c, open('/tmp/$name/config.json', 'w'))"
  env "$@" "$B/keel" bench --device cuda --random-weights -m "/tmp/$name" --prompt-lengths 1024,4096,16384 \
    --gen 8 --prefill-chunk-size 4096
}
shapes() {
  shape_bench nh_mamba8 bench/nemotron_h_30b_a3b/config.json 8 M &&
    shape_bench q35_deltanet6 bench/qwen3_5_35b_a3b/config.json 6 linear_attention &&
    shape_bench q35_attention4 bench/qwen3_5_35b_a3b/config.json 4 full_attention
}
# Both seed shapes whole (issue 16's workloads), with their JSON beside the log.
full() {
  for m in nemotron_h_30b_a3b qwen3_5_35b_a3b; do
    "$B/keel" bench --device cuda --random-weights -m "bench/$m" --prompt-lengths 1024,4096,16384 --gen 16 \
      --prefill-chunk-size 4096 --json "$L/full_$m.json" || return 1
  done
}
# The Nemotron-H shape with its matrices MLX-packed (issue 13's figures), JSON beside the log.
quant() {
  for bits in 4 2; do
    "$B/keel" bench --device cuda --random-weights --quantize "$bits" -m bench/nemotron_h_30b_a3b \
      --prompt-lengths 1024,4096,16384 --gen 16 --prefill-chunk-size 4096 --json "$L/quant_$bits.json" || return 1
  done
}
profile() {
  local ncu
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
  [ -n "$ncu" ] || { echo "no ncu on this machine"; return 1; }
  python3 -c "import json
c = json.load(open('bench/nemotron_h_30b_a3b/config.json'))
c.update(num_hidden_layers=6, hybrid_override_pattern='MEMEM*')
d = json.load(open('bench/qwen3_5_35b_a3b/config.json'))
d.update(num_hidden_layers=4, layer_types=['linear_attention'] * 3 + ['full_attention'])
for n, x in (('nh6', c), ('q4', d)):
    import os; os.makedirs('/tmp/prof_' + n, exist_ok=True); json.dump(x, open('/tmp/prof_' + n + '/config.json', 'w'))"
  for n in nh6 q4; do
    "$B/keel" bench --device cuda --random-weights -m "/tmp/prof_$n" --prompt-lengths 1024 --gen 8 || return 1
    "$ncu" --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
      --csv "$B/keel" bench --device cuda --random-weights -m "/tmp/prof_$n" --prompt-lengths 1024 --gen 8 \
      >"$L/ncu_$n.csv" || return 1
    python3 tools/ncu_steps.py --launches "$L/ncu_$n.csv" || return 1
  done
}
ab() {
  [ -d .ab/base ] || { echo "no .ab/base (carry .ab)"; return 1; }
  if [ ! -x /tmp/ab-base/build-base/keel ]; then
    rm -rf /tmp/ab-base && mkdir -p /tmp/ab-base &&
      tar --exclude=./build-gpu --exclude=./.deps -cf - . | tar -xf - -C /tmp/ab-base &&
      cp -r .ab/base/. /tmp/ab-base/ || return 1
    local flags
    flags=$(bash scripts/gpu-deps.sh unpack | tail -n 1)
    # shellcheck disable=SC2086
    cmake -S /tmp/ab-base -B /tmp/ab-base/build-base -G Ninja -DCMAKE_BUILD_TYPE=Release -DKEEL_BENCH=OFF \
      -DKEEL_WERROR=OFF -DKEEL_TESTS=OFF $flags >/dev/null && cmake --build /tmp/ab-base/build-base -j "$(nproc)" \
      --target keel >/dev/null || return 1
  fi
  python3 bench/compare.py keel --a "$B/keel" --b /tmp/ab-base/build-base/keel -m bench/nemotron_h_30b_a3b \
    --random-weights --device cuda --prompt-lengths "${AB_LENGTHS:-1024,16384}" --gen 32 --prefill-chunk-size 4096 \
    --runs "${AB_RUNS:-3}" \
    --out "$L/ab.json"
}
mlxref() {
  python3 tools/make_mlx_reference.py --out tests/fixtures &&
    for f in tests/fixtures/*/mlx_reference.safetensors; do cp "$f" "$L/$(basename "$(dirname "$f")")_mlx_reference.safetensors"; done
}
export -f shape_bench shapes full quant profile ab mlxref
export L
export B
status=0
[ "${1:-}" = all ] && set -- gpu ops model server soak
for p in "$@"; do
  case "$p" in
    gpu) phase gpu 420 "ctest --test-dir $B -L gpu --output-on-failure" ;;
    model) phase model 300 "ctest --test-dir $B -L model -j 8 --output-on-failure" ;;
    ops) phase ops 300 "ctest --test-dir $B/tests/ops -j 8 --output-on-failure" ;;
    server) phase server 420 "KEEL_TEST_DEVICE=cuda ctest --test-dir $B -L server \
                              -LE 'fuzz|node' -E soak_60s -j 4 --output-on-failure" ;;
    soak) phase soak 150 "python3 tools/soak.py $B/keel models/keel-brown-nemotron-h-8m \
                          --seconds 60 --device cuda:0 --limit-mib 2048" ;;
    shapes) phase shapes 300 shapes ;;
    full) phase full 400 full ;;
    quant) phase quant 400 quant ;;
    profile) phase profile 400 profile ;;
    ab) phase ab 500 ab ;;
    mlxref) phase mlxref 400 mlxref ;;
    *) echo "unknown phase $p" >&2; exit 2 ;;
  esac
done
exit $status
