#!/usr/bin/env bash
# Loading benchmark for the GPU machine (issue 4), all in one call: generates a `faster synth` tree
# (100 classes x 100 images by default), then runs side by side
#   - faster load in each decode mode of MODES, warm, RUNS runs each (median): random-resized-crop
#     224 + flip, uint8 to the GPU, normalized there; 16 workers, batch 256; then once --cold
#   - the peer loaders: python3 PEERS/ref_loader.py ROOT --mode pil|cv2|gpu --workers 16
#   - the decode floor: one core's full-size libjpeg-turbo decode rate x cores
# and prints a table (also written to OUT/table.md, raw outputs and JSON beside it).
# Usage: scripts/device/bench_load.sh [PEERS_DIR]   (default shared/peers; build/faster must exist)
# Environment: ROOT (dataset, default /tmp/faster-bench-load), CLASSES, PER_CLASS, WORKERS, BATCH,
#              RUNS, OUT (default /tmp/faster-bench-load-results), MODES (faster load flags per
#              mode, ';'-separated), PEER_MODES (default "pil cv2 gpu").
set -euo pipefail
cd "$(dirname "$0")/../.."
PEERS=${1:-shared/peers}
ROOT=${ROOT:-/tmp/faster-bench-load}
CLASSES=${CLASSES:-100}
PER_CLASS=${PER_CLASS:-100}
WORKERS=${WORKERS:-16}
BATCH=${BATCH:-256}
RUNS=${RUNS:-3}
OUT=${OUT:-/tmp/faster-bench-load-results}
MODES=${MODES:---decode cpu;--decode nvjpeg;--decode nvjpeg --cpu-share 0.25}
PEER_MODES=${PEER_MODES:-pil cv2 gpu}
FASTER=build/faster
# `faster load` exits 3 when it skipped bad images: a measurement all the same here.
faster_bin=$FASTER
faster_tolerant() { "$faster_bin" "$@" || [ $? -eq 3 ]; }
FASTER=faster_tolerant
export FASTER_PROGRESS=plain

[ -x "$FASTER" ] || { echo "error: $FASTER not found: build the project first" >&2; exit 1; }
[ -f "$PEERS/ref_loader.py" ] || { echo "error: $PEERS/ref_loader.py not found" >&2; exit 1; }
mkdir -p "$OUT"

marker="$ROOT/.synth-$CLASSES-$PER_CLASS"
if [ ! -f "$marker" ]; then
  rm -rf "$ROOT"
  "$FASTER" synth --out "$ROOT" --classes "$CLASSES" --images "$PER_CLASS" --seed 0 | tee "$OUT/synth.txt"
  touch "$marker"
fi
TRAIN="$ROOT/train"
common=(--workers "$WORKERS" --batch "$BATCH" --size 224 --epochs 2)

echo "== decode floor"
"$FASTER" load "$TRAIN" --decode-only --floor-images 500 --json "$OUT/floor.json" | tee "$OUT/floor.txt"

IFS=';' read -r -a modes <<< "$MODES"
printf '%s\n' "${modes[@]}" > "$OUT/modes.txt"
for m in "${!modes[@]}"; do
  read -r -a flags <<< "${modes[$m]}"
  for i in $(seq "$RUNS"); do
    echo "== faster load ${modes[$m]}, warm, run $i"
    "$FASTER" load "$TRAIN" "${common[@]}" "${flags[@]}" --floor-images 0 \
      --json "$OUT/faster_${m}_warm_$i.json" | tee "$OUT/faster_${m}_warm_$i.txt"
  done
  echo "== faster load ${modes[$m]}, cold"
  "$FASTER" load "$TRAIN" "${common[@]}" "${flags[@]}" --floor-images 0 --cold \
    --json "$OUT/faster_${m}_cold.json" | tee "$OUT/faster_${m}_cold.txt"
done
for mode in $PEER_MODES; do
  for i in $(seq "$RUNS"); do
    echo "== peer $mode, run $i"
    python3 "$PEERS/ref_loader.py" "$TRAIN" --mode "$mode" --workers "$WORKERS" --batch "$BATCH" \
      | tee "$OUT/peer_${mode}_$i.txt" || echo "peer $mode failed"
  done
done

python3 - "$OUT" "$RUNS" "$WORKERS" "$BATCH" "$PEER_MODES" <<'PY' | tee "$OUT/table.md"
import json, re, statistics, sys, os
out, runs, workers, batch, peer_modes = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5].split()
modes = open(f'{out}/modes.txt').read().splitlines()
def peer(mode):
    vals = []
    for i in range(1, runs + 1):
        try:
            m = re.search(r'RESULT .* (\d+) img/s (\d+) MB/s', open(f'{out}/peer_{mode}_{i}.txt').read())
        except OSError:
            m = None
        if m: vals.append((float(m.group(1)), float(m.group(2))))
    return vals
def ours(name):
    j = json.load(open(f'{out}/{name}.json'))
    return j['images_per_s'], j['mb_per_s'], j
rows, best_ours, best_peer, cores = [], 0, 0, 0
for m, flags in enumerate(modes):
    warm = sorted((ours(f'faster_{m}_warm_{i}') for i in range(1, runs + 1)), key=lambda r: r[0])
    med = warm[len(warm) // 2]
    cold = ours(f'faster_{m}_cold')
    cores = med[2]['cores']
    best_ours = max(best_ours, med[0])
    note = med[2]['bottleneck']
    if med[2].get('gpu_images'):
        note += '; %.0f %% of images decoded on the GPU' % (100.0 * med[2]['gpu_images'] / max(1, med[2]['images']))
    rows.append((f'faster load {flags} (warm, median of {runs})', med[0], med[1], note))
    rows.append((f'faster load {flags} --cold', cold[0], cold[1], cold[2]['bottleneck']))
for mode in peer_modes:
    v = sorted(peer(mode))
    if v:
        m = v[len(v) // 2]
        if mode in ('pil', 'cv2'): best_peer = max(best_peer, m[0])
        rows.append((f'ref_loader.py --mode {mode} (median of {len(v)})', m[0], m[1],
                     '' if mode in ('pil', 'cv2') else 'GPU decode, not in the target'))
floor = json.load(open(f'{out}/floor.json'))['decode_floor']
print(f'| loader ({workers} workers, batch {batch}, RRC 224 + flip + normalize, to the GPU) | img/s | MB/s | note |')
print('|---|---:|---:|---|')
for name, ips, mbs, note in rows:
    print(f'| {name} | {ips:.0f} | {mbs:.0f} | {note} |')
print(f'| decode floor: {floor["mp_per_s_per_core"]:.1f} MP/s per core x {cores} cores | '
      f'{floor["images_per_s_all_cores"]:.0f} | | full-size CPU decode, from memory |')
if best_peer:
    print(f'\nfastest faster load / best CPU peer (pil, cv2): {best_ours / best_peer:.2f}x (target >= 2x)')
print(f'\ncommand: scripts/device/bench_load.sh (ROOT={os.environ.get("ROOT", "/tmp/faster-bench-load")})')
PY
