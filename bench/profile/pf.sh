#!/bin/bash
# usage: pf.sh NAME MODEL_DIR PROMPT_LEN GEN -- cpu-clock samples (1 ms) of every thread, attached after the load
set -u
name=$1; model=$2; len=$3; gen=$4
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/cpuprof}/pf_$name; mkdir -p $out; : > $out/log
${KEEL:-./build/keel} bench --random-weights ${KEEL_ARGS:-} -m $model --prompt-lengths $len --gen $gen -t 2 --json $out/bench.json > $out/log 2>&1 &
kpid=$!
while ! grep -q "loaded" $out/log; do sleep 0.2; done
perf record -e cpu-clock -F 999 -p $kpid -o $out/perf.data > $out/perf.log 2>&1 &
ppid=$!
wait $kpid
sleep 1; kill -INT $ppid 2>/dev/null; wait $ppid
perf report -i $out/perf.data --stdio --no-children --sort symbol 2>/dev/null | grep -v "^#" | grep -v "^$" > $out/report.txt
perf script -i $out/perf.data -F tid,time,period,event,ip,sym,dso 2>/dev/null > $out/script.txt  # for slice.py
