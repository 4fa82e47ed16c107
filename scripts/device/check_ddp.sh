#!/usr/bin/env bash
# On the GPU machine (issue 3): single-GPU training against DDP with one rank through NCCL in the
# same configuration, interleaved, median of N; then the same job under torchrun and DataParallel
# on one GPU.  Usage: check_ddp.sh DATA_DIR OUT_DIR [RUNS]
set -uo pipefail
data=$1 out=$2 runs=${3:-3}
cd "$(dirname "$0")/../.."
f=./build-cuda/faster
export FASTER_PROGRESS=plain
mkdir -p "$out"
cfg=(--data "$data" --loader device --amp)
for i in $(seq "$runs"); do
  $f train "${cfg[@]}" --json "$out/single_$i.json" > "$out/single_$i.log" 2>&1
  $f train "${cfg[@]}" --parallel ddp --json "$out/ddp1_$i.json" > "$out/ddp1_$i.log" 2>&1
done
torchrun --no-python --nproc-per-node 1 $f train "${cfg[@]}" --parallel ddp --json "$out/torchrun.json" \
  > "$out/torchrun.log" 2>&1; echo "torchrun rc=$?"
$f train "${cfg[@]}" --parallel dp --json "$out/dp.json" > "$out/dp.log" 2>&1; echo "dp rc=$?"
$f train --data "$data" --parallel ddp --nproc 2 --epochs 1 > "$out/too_many.log" 2>&1
echo "2 ranks on 1 GPU rc=$?: $(grep -h 'error\|HINT' "$out"/too_many.log | head -2 | tr '\n' ' ')"
python3 - "$out" "$runs" <<'PY'
import json, sys, statistics
out, runs = sys.argv[1], int(sys.argv[2])
def med(name):
    reports = [json.load(open(f'{out}/{name}_{i}.json')) for i in range(1, runs + 1)]
    v = sorted((j['total_seconds'], j['final_test_accuracy']) for j in reports)
    return v[(len(v) - 1) // 2], [round(t, 2) for t, _ in v]
(s, sa), sr = med('single'); (d, da), dr = med('ddp1')
print(f'single GPU      median {s:.2f} s acc {sa:.2f}  runs {sr}')
print(f'DDP, 1 rank     median {d:.2f} s acc {da:.2f}  runs {dr}  overhead {100 * (d / s - 1):+.1f} %')
for n in ('torchrun', 'dp'):
    try:
        j = json.load(open(f'{out}/{n}.json')); print(f'{n:15s} {j["total_seconds"]:.2f} s acc {j["final_test_accuracy"]:.2f} ({j["device"]})')
    except Exception as e: print(n, 'failed', e)
PY
