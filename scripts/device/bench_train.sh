#!/usr/bin/env bash
# On the GPU machine, side by side in one call: faster's single-device table (faster bench) and the
# peer ref_thinnet.py in the same configurations, on Fashion-MNIST, ThinNet 11 conv, batch 512,
# 5 epochs.  Usage: [ROWS=device|host|all] bench_train.sh DATA_DIR PEERS_DIR OUT_DIR [REPEATS]
# ROWS picks the loader row (device: GPU-resident data, with the fastest mode and the peer's best;
# host: the DataLoader row); with REPEATS 3 one row fits the device's 10-minute limit, both do not.
# The peer runs in rounds (every configuration once per round), REPEATS rounds; medians at the end.
set -uo pipefail
data=$1 peers=$2 out=$3 repeats=${4:-3} rows=${ROWS:-device}
cd "$(dirname "$0")/../.."
mkdir -p "$out"
faster=./build-cuda/faster
case $rows in
  device) bench_rows="single, device loader;fast" loaders=gpu ;;
  host) bench_rows="single, host loader" loaders=torch ;;
  all) bench_rows="single, host loader;single, device loader;fast" loaders="torch gpu" ;;
  *) echo "ROWS must be device, host or all" >&2; exit 2 ;;
esac
$faster env > "$out/env.json"
$faster bench --data "$data" --rows "$bench_rows" --repeats "$repeats" --out "$out/bench" \
  > "$out/bench.txt" 2>&1
peer() {  # name, args...
  local name=$1; shift
  PYTHONUNBUFFERED=1 python3 "$peers/ref_thinnet.py" --data "$data" "$@" 2>&1 | grep RESULT |
    sed "s/^/$name /" >> "$out/peer.txt"
}
: > "$out/peer.txt"
for r in $(seq "$repeats"); do
  for l in $loaders; do
    peer "${l}_plain" --loader "$l"
    peer "${l}_bench" --loader "$l" --cudnn-benchmark
    peer "${l}_amp" --loader "$l" --amp
    peer "${l}_both" --loader "$l" --amp --cudnn-benchmark
    [ "$l" = gpu ] && peer gpu_best --loader gpu --amp --bf16 --channels-last
  done
done
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
