#!/bin/bash
# usage: pfg.sh NAME MODEL_DIR PROMPT_LEN GEN -- DWARF call graphs (99 Hz) of the main thread, after the load
set -u
name=$1; model=$2; len=$3; gen=$4
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/cpuprof}/pfg_$name; mkdir -p $out; : > $out/log
./build/keel bench --random-weights -m $model --prompt-lengths $len --gen $gen -t 2 --json $out/bench.json > $out/log 2>&1 &
kpid=$!
while ! grep -q "loaded" $out/log; do sleep 0.2; done
perf record -e cpu-clock -F 99 --call-graph dwarf,65528 -t $kpid -o $out/perf.data > $out/perf.log 2>&1 &
ppid=$!
wait $kpid
sleep 1; kill -INT $ppid 2>/dev/null; wait $ppid
perf script -i $out/perf.data -F tid,time,period,ip,sym,dso 2>/dev/null > $out/script.txt  # for cg_attr.py
