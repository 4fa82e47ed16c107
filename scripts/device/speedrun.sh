#!/usr/bin/env bash
# On the GPU machine, after scripts/device/build.sh (nothing is built here): time to accuracy of
# `faster train --recipe speedrun` on Fashion-MNIST, timed from process start (the shell's clock
# around each command, and the process_seconds faster reports), then the PyTorch peer.
#   SEEDS=10        seeds of the recipe as it stands (0 skips)
#   RECIPE=speedrun the recipe (speedrun95 for the longer one); EXTRA: flags added to every run
#   SWEEP="A;B;..." flag sets, each run for SWEEP_SEEDS=2 seeds (e.g. "--epochs 10;--lr 0.6");
#                   leading NAME=VALUE words are set in the run's environment
#                   (e.g. "CUDA_MODULE_LOADING=EAGER --epochs 8")
#   INTERLEAVE=1    run the recipe and every flag set seed by seed, in turn (SEEDS seeds each), so
#                   that a machine whose set-up drifts during the call affects them alike (with
#                   SEEDS=0 the flag sets run as without it, SWEEP_SEEDS each)
#   PEER_SEEDS=5    seeds of scripts/speedrun_peer.py (0 skips); PEER_ARGS: its extra flags
#   PEER_CURVES=1   the peer also tests after every epoch and writes OUT/runs/peer_sN.curve per
#                   seed, for `faster bench --tta-peer OUT/runs/peer_s*.curve` (the test passes
#                   add to its seconds, so leave it off when timing the peer against faster)
#   BUDGET_S=330    no run starts after this many seconds (the device call's limit is 600 s)
#   TARGET=94       the accuracy a run must reach
# Usage: [SEEDS=..] [SWEEP=..] ... speedrun.sh FMNIST_DIR OUT_DIR
# Prints one line per run (accuracy, process and shell seconds, set-up milestones, epoch seconds)
# and a summary per configuration (mean, min, spread, runs at TARGET, median seconds).
set -uo pipefail
data=$1 out=$2
seeds=${SEEDS:-10} recipe=${RECIPE:-speedrun} extra=${EXTRA:-} sweep=${SWEEP:-}
sweep_seeds=${SWEEP_SEEDS:-2} peer_seeds=${PEER_SEEDS:-5} peer_args=${PEER_ARGS:-}
peer_curves=${PEER_CURVES:-0}
budget=${BUDGET_S:-330} target=${TARGET:-94}
cd "$(dirname "$0")/../.." || exit 2
faster=./build-cuda/faster
[ -x "$faster" ] || { echo "no $faster: run scripts/device/build.sh first" >&2; exit 2; }
mkdir -p "$out/runs"
: > "$out/runs.tsv"
start=$(date +%s.%N)
since() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN { printf "%.3f", a - b }'; }
elapsed() { since "$start"; }
over_budget() { awk -v e="$(elapsed)" -v b="$budget" 'BEGIN { exit !(e > b) }'; }
$faster env > "$out/env.json" 2>&1

# One run: label, seed, [NAME=VALUE...] flags...  Appends "label seed acc process_s shell_s" to
# runs.tsv.
run() {
  local label=$1 seed=$2; shift 2
  local envs=()
  while [ $# -gt 0 ] && [[ $1 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do envs+=("$1"); shift; done
  local base="$out/runs/${label}_s${seed}"
  if over_budget; then echo "skip $label seed $seed: past BUDGET_S=$budget"; return; fi
  local t0
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  env "${envs[@]}" $faster train --recipe "$recipe" --data "$data" --seed "$seed" \
    --json "$base.json" $extra "$@" > "$base.log" 2>&1
  local rc=$?
  local shell_s
  shell_s=$(since "$t0")
  if { [ $rc -ne 0 ] && [ $rc -ne 3 ]; } || [ ! -s "$base.json" ]; then  # 3: done, bad images skipped
    echo "FAIL $label seed $seed (exit $rc): $(tail -2 "$base.log" | tr '\n' ' ')"
    return
  fi
  python3 - "$base.json" "$label" "$seed" "$shell_s" "$out/runs.tsv" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); label, seed, shell_s, tsv = sys.argv[2:6]
acc = j['final_test_accuracy']; p = j['process_seconds']; s = j.get('setup', {})
ms = ' '.join(f'{k[:-2]}={v:.2f}' for k, v in sorted(s.items(), key=lambda kv: kv[1]))
ep = ' '.join(f"{e['seconds']:.2f}" for e in j['epochs'])
# With --eval-every 1: accuracy against the process clock, epoch by epoch.
curve = ' '.join(f"{e['process_seconds']:.2f}:{e['test_accuracy']:.2f}" for e in j['epochs']
                 if 'test_accuracy' in e)
print(f"{label:10s} seed {seed:>2s}  acc {acc:6.2f}  process {p:5.2f}s  shell {float(shell_s):5.2f}s  "
      f"setup [{ms}]  epochs [{ep}]" + (f"  s:acc [{curve}]" if curve.count(':') > 1 else ''),
      flush=True)
open(tsv, 'a').write(f'{label}\t{seed}\t{acc}\t{p}\t{shell_s}\n')
PY
}

IFS=';' read -ra sets <<< "$sweep"
if [ "${INTERLEAVE:-0}" = 1 ] && [ "$seeds" -gt 0 ]; then
  echo "== faster train --recipe $recipe $extra, and in turn per seed ($seeds seeds):"
  i=0
  for flags in "${sets[@]}"; do
    i=$((i + 1))
    echo "   v$i: $flags"
    echo "v$i	$flags" >> "$out/legend.tsv"
  done
  for s in $(seq 0 $((seeds - 1))); do
    run base "$s"
    i=0
    for flags in "${sets[@]}"; do
      i=$((i + 1))
      # shellcheck disable=SC2086
      run "v$i" "$s" $flags
    done
  done
  sweep=  # done
else
  echo "== faster train --recipe $recipe $extra ($seeds seeds)"
  for s in $(seq 0 $((seeds - 1))); do run base "$s"; done
fi

if [ -n "$sweep" ]; then
  i=0
  for flags in "${sets[@]}"; do
    i=$((i + 1))
    echo "== sweep v$i: $flags ($sweep_seeds seeds)"
    echo "v$i	$flags" >> "$out/legend.tsv"
    # shellcheck disable=SC2086
    for s in $(seq 0 $((sweep_seeds - 1))); do run "v$i" "$s" $flags; done
  done
fi

if [ "$peer_seeds" -gt 0 ]; then
  echo "== peer: scripts/speedrun_peer.py $peer_args ($peer_seeds seeds)"
  for s in $(seq 0 $((peer_seeds - 1))); do
    if over_budget; then echo "skip peer seed $s: past BUDGET_S=$budget"; continue; fi
    t0=$(date +%s.%N)
    curve=()
    rm -f "$out/runs/peer_s$s.curve"  # none left from an earlier call, none from a failed run
    [ "$peer_curves" = 1 ] && curve=(--curve "$out/runs/peer_s$s.curve")
    # shellcheck disable=SC2086
    line=$(PYTHONUNBUFFERED=1 python3 scripts/speedrun_peer.py --data "$data" --seed "$s" ${curve[@]+"${curve[@]}"} $peer_args 2>&1 |
      tee "$out/runs/peer_s$s.log" | grep '^RESULT')
    shell_s=$(since "$t0")
    if [ -z "$line" ]; then
      echo "FAIL peer seed $s: $(tail -2 "$out/runs/peer_s$s.log" | tr '\n' ' ')"
      rm -f "$out/runs/peer_s$s.curve"
      continue
    fi
    echo "peer       seed $s  $line  shell ${shell_s}s"
    acc=$(sed -E 's/.*acc=([0-9.]+).*/\1/' <<< "$line")
    p=$(sed -E 's/.*process_s=([0-9.]+).*/\1/' <<< "$line")
    printf 'peer\t%s\t%s\t%s\t%s\n' "$s" "$acc" "$p" "$shell_s" >> "$out/runs.tsv"
  done
fi

echo "== summary (target $target %; seconds are medians; shell = the command's wall clock)"
python3 - "$out/runs.tsv" "$target" <<'PY' | tee "$out/summary.txt"
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    label, seed, acc, p, sh = line.split('\t')
    runs[label].append((float(acc), float(p), float(sh)))
target = float(sys.argv[2])
med = {}
for label, v in runs.items():
    accs = [a for a, _, _ in v]
    med[label] = statistics.median(sh for _, _, sh in v)
    sd = statistics.stdev(accs) if len(accs) > 1 else 0.0
    print(f'{label:10s} n={len(v):2d}  acc mean {statistics.mean(accs):6.2f}  min {min(accs):6.2f}  '
          f'max {max(accs):6.2f}  spread {max(accs) - min(accs):5.2f}  sd {sd:4.2f}  '
          f'>= {target:g}: {sum(a >= target for a in accs)}/{len(v)}  '
          f'process {statistics.median(p for _, p, _ in v):5.2f}s  shell {med[label]:5.2f}s')
if 'base' in med and 'peer' in med:
    print(f'faster / peer (shell seconds, medians): {med["base"] / med["peer"]:.2f}')
PY
echo "total $(elapsed) s"
