#!/usr/bin/env bash
# On the GPU machine, side by side in one call: faster's single-device table (faster bench) and the
# peer ref_thinnet.py in the same configurations, on Fashion-MNIST, ThinNet 11 conv, batch 512,
# 5 epochs.  Usage: bench_train.sh DATA_DIR PEERS_DIR OUT_DIR [REPEATS]
# The peer's cudnn.benchmark configurations, whose time is mostly cuDNN's tuning, run once each (the
# call must fit the device's 10-minute limit); every other configuration REPEATS times.
set -uo pipefail
data=$1 peers=$2 out=$3 repeats=${4:-3}
cd "$(dirname "$0")/../.."
mkdir -p "$out"
faster=./build-cuda/faster
$faster env > "$out/env.json"
$faster bench --data "$data" --repeats "$repeats" --out "$out/bench" > "$out/bench.txt" 2>&1
peer() {  # name, runs, args...
  local name=$1 n=$2; shift 2
  for r in $(seq "$n"); do
    PYTHONUNBUFFERED=1 python3 "$peers/ref_thinnet.py" --data "$data" "$@" 2>&1 | grep RESULT |
      sed "s/^/$name /" >> "$out/peer.txt"
  done
}
: > "$out/peer.txt"
peer torch_plain "$repeats" --loader torch
peer torch_bench 1 --loader torch --cudnn-benchmark
peer torch_amp "$repeats" --loader torch --amp
peer torch_both 1 --loader torch --amp --cudnn-benchmark
peer gpu_plain "$repeats" --loader gpu
peer gpu_bench 1 --loader gpu --cudnn-benchmark
peer gpu_amp "$repeats" --loader gpu --amp
peer gpu_both 1 --loader gpu --amp --cudnn-benchmark
peer gpu_best "$repeats" --loader gpu --amp --bf16 --channels-last
# Medians of the peer's runs, per configuration.
python3 - "$out/peer.txt" > "$out/peer_medians.txt" <<'PY'
import re, sys, statistics, collections
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name = line.split()[0]
    t = float(re.search(r'time=([\d.]+)s', line).group(1)); a = float(re.search(r'test_acc=([\d.]+)', line).group(1))
    runs[name].append((t, a))
for name, v in runs.items():
    v.sort(); t, a = v[(len(v) - 1) // 2]
    print(f'{name:12s} median {t:7.2f} s  acc {a:5.2f}  runs {[round(x, 2) for x, _ in v]}')
PY
cat "$out/bench/bench.md"; cat "$out/peer_medians.txt"
