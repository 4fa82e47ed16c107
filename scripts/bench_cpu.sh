#!/usr/bin/env bash
# faster against its PyTorch peer on the CPU, side by side: the seed's ThinNet on 4,096
# Fashion-MNIST images, 2 epochs, batch 128, lr 0.01 (issue 16), and the CPU default run
# (`faster train` without a GPU).  Runs interleave, one of each per round; medians at the end.
#   scripts/bench_cpu.sh [ROUNDS=3] [OUT=build/bench-cpu]
# FASTER (default ./build/faster) and PYTHON (default /usr/bin/python3, Debian's python3-torch: the
# same LibTorch as faster's CPU build) pick the programs; BEFORE=path/to/older/faster (one from
# before the CPU recipe, whose default was the seed's) adds a row.
set -uo pipefail
rounds=${1:-3} out=${2:-build/bench-cpu}
cd "$(dirname "$0")/.."
faster=${FASTER:-./build/faster} python=${PYTHON:-/usr/bin/python3}
mkdir -p "$out"
seed_args="--device cpu --epochs 2 --train-limit 4096 --batch 128 --lr 0.01"
cores=$(nproc)
# faster as it trains by default (ThinNet channels-last on the CPU) and in the peer's NCHW layout;
# the peer as it starts (PyTorch's thread count), and tuned as faster is: one thread per core,
# OpenMP threads that sleep while they wait (what `faster` sets for faster-torch), and NHWC too.
tuned="env OMP_WAIT_POLICY=PASSIVE $python scripts/cpu_peer_thinnet.py --threads $cores"
declare -A cmd=(
  [faster_seed]="$faster train --recipe seed $seed_args"
  [faster_seed_nchw]="$faster train --recipe seed --no-channels-last $seed_args"
  [peer_default_threads]="$python scripts/cpu_peer_thinnet.py"
  [peer_${cores}_threads]="$tuned"
  [peer_${cores}_threads_nhwc]="$tuned --channels-last"
  [faster_cpu_default]="$faster train"
)
names="faster_seed faster_seed_nchw peer_default_threads peer_${cores}_threads"
names="$names peer_${cores}_threads_nhwc faster_cpu_default"
if [ -n "${BEFORE:-}" ]; then
  cmd[before_seed]="$BEFORE train $seed_args"
  names="before_seed $names"
fi
$faster env > "$out/env.json"
: > "$out/runs.txt"
for r in $(seq "$rounds"); do
  for n in $names; do
    before=$(cut -d' ' -f1 /proc/loadavg)
    FASTER_PROGRESS=plain ${cmd[$n]} > "$out/$n.$r.log" 2>&1
    # faster: "done: 2 epochs in 21.07s ... final test accuracy 73.75%"; the peer: its RESULT line.
    line=$(grep -E '^done: |^RESULT ' "$out/$n.$r.log" | tail -1)
    t=$(echo "$line" | grep -oE '(in |time=)[0-9.]+s' | grep -oE '[0-9.]+')
    a=$(echo "$line" | grep -oE '(accuracy |test_acc=)[0-9.]+' | grep -oE '[0-9.]+$')
    echo "$n ${t:-failed} ${a:-?} load=$before-$(cut -d' ' -f1 /proc/loadavg)" |
      tee -a "$out/runs.txt"
  done
done
echo "median of $rounds (seconds, accuracy of that run, all runs):"
for n in $names; do
  grep "^$n " "$out/runs.txt" | sort -k2 -n |
    awk -v n="$n" '{t[NR]=$2; a[NR]=$3} END {m=int((NR+1)/2); s=""; for (i=1;i<=NR;i++) s=s t[i] " ";
      printf "%-26s %8.2f s  %6.2f %%   runs: %s\n", n, t[m], a[m], s}'
done | tee "$out/medians.txt"
