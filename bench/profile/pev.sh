#!/bin/bash
# usage: pev.sh NAME MODEL_DIR PROMPT_LEN GEN -- every step entry, parallel_for call, mmap/munmap/futex
# syscall and page fault after the load, with timestamps; pev_parse.py sums them per step.
set -u
name=$1; model=$2; len=$3; gen=$4
cd "$(dirname "$0")/../.."
# uprobes on keel::Scheduler::step and keel::ThreadPool::parallel_for (by address: perf probe cannot parse
# the C++ names); needs root and uprobes in the kernel.
K=build/keel
perf probe -d 'probe_keel:*' >/dev/null 2>&1 || true
perf probe -x $K -a "step=0x$(nm $K | awk '$3 == "_ZN4keel9Scheduler4stepEv" {print $1}')" >/dev/null
perf probe -x $K -a "pfor=0x$(nm $K | awk '$3 == "_ZN4keel10ThreadPool12parallel_forElRKSt8functionIFvlliEE" {print $1}')" >/dev/null
out=${OUT:-/tmp/cpuprof}/pev_$name; mkdir -p $out; : > $out/log
./build/keel bench --random-weights -m $model --prompt-lengths $len --gen $gen -t 2 > $out/log 2>&1 &
kpid=$!
while ! grep -q "loaded" $out/log; do sleep 0.2; done
perf record -e probe_keel:step,probe_keel:pfor,syscalls:sys_enter_mmap,syscalls:sys_enter_munmap,syscalls:sys_enter_futex,page-faults -c 1 -p $kpid -o $out/perf.data > $out/perf.log 2>&1 &
ppid=$!
wait $kpid
sleep 1; kill -INT $ppid 2>/dev/null; wait $ppid
perf script -i $out/perf.data -F comm,tid,time,event,trace > $out/events.txt 2>/dev/null
