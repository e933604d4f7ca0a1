#!/usr/bin/env bash
# Bit-identity check between two keel binaries (a refactor must not change what a user sees):
#   tools/compare_outputs.sh OLD_KEEL NEW_KEEL
# For every model folder under tests/fixtures/ and the bundled model it runs, with both binaries,
#  - `keel perplexity --json` over two documents of 300 pseudo-random ids (fixed seed), in windows of 128 tokens
#    and prefill chunks of 37 (odd splits), and in one window with one chunk;
#  - `keel run --json` greedy from a 40-id prompt, 24 new tokens;
# and compares the outputs byte for byte (the NLLs are printed with round-trip precision). Exit 0 when every
# output is identical, 1 otherwise (the differing case is named). Log lines (timestamped) are left out.
set -euo pipefail
old=$(realpath "$1")
new=$(realpath "$2")
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
models=(models/keel-brown-nemotron-h-8m)
for d in tests/fixtures/*/; do [ -f "$d/config.json" ] && models+=("${d%/}"); done
for m in "${models[@]}"; do
  vocab=$(python3 -c "import json,sys; c=json.load(open('$m/config.json')); c=c.get('text_config',c); print(c['vocab_size'])")
  python3 -c "
import random
r = random.Random(20261201)
for _ in range(2): print(' '.join(str(r.randrange($vocab)) for _ in range(300)))" >"$tmp/ids"
  prompt=$(head -c 400 "$tmp/ids" | tr ' ' '\n' | head -40 | paste -sd, -)
  cases=(
    "perplexity -m $m -t 2 --ids-file $tmp/ids --ctx 128 --prefill-chunk-size 37 --json"
    "perplexity -m $m -t 1 --ids-file $tmp/ids --ctx 301 --prefill-chunk-size 512 --json"
    "run -m $m -t 2 --prompt-ids $prompt -n 24 --json"
  )
  for c in "${cases[@]}"; do
    # shellcheck disable=SC2086
    "$old" $c 2>/dev/null | grep -v '^\[20[0-9-]* [0-9:.]*\]' >"$tmp/old" || echo "old failed: $c" >>"$tmp/old"
    # shellcheck disable=SC2086
    "$new" $c 2>/dev/null | grep -v '^\[20[0-9-]* [0-9:.]*\]' >"$tmp/new" || echo "new failed: $c" >>"$tmp/new"
    if cmp -s "$tmp/old" "$tmp/new"; then
      echo "same  $(wc -c <"$tmp/new") bytes  keel $c"
    else
      echo "DIFF  keel $c"
      fail=1
    fi
  done
done
exit $fail
