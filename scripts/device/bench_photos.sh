#!/usr/bin/env bash
# Loading benchmark on photographs for the GPU machine (issue 14), all in one call: builds the
# photo tree (scripts/make_photo_tree.sh, from the carried lomiri-wallpapers-16.04 .deb; 24 x 800
# by default, 19,200 images, mean about 470x390, 88 KiB), then RUNS rounds, interleaved, of
#   - faster load --decode cpu and --decode nvjpeg (RRC 224 + flip, uint8 to the GPU, normalized
#     there; WORKERS workers, batch BATCH, 2 epochs after a warm-up, page cache warm)
#   - the peer: python3 PEERS/ref_loader.py ROOT --mode M for each M of PEER_MODES
# and once each, per core: faster load --decode cpu --workers 1 beside ref_loader.py --mode cv2
# --workers 1 (so a per-core ratio on this machine's cores), one diagnostic --decode cpu run with
# OMP_NUM_THREADS=1, and the decode floor
# (faster load --decode-only: one core's full-size libjpeg-turbo decode, x cores).  Prints a table
# of medians (also OUT/table.md; raw outputs and JSON beside it).
# Usage: scripts/device/bench_photos.sh PEERS OUT   (FASTER, default build/faster, must exist)
#   PEERS  the folder of ref_loader.py;  OUT  where results go (created)
# Environment: ROOT (tree, default /tmp/faster-photos), DEBS (folder with the .deb, default
#              .device-kit/photos), CLASSES (24), PER_CLASS (800), WORKERS (16), BATCH (256),
#              RUNS (3), PEER_MODES (default "cv2"; "cv2 pil gpu" adds about a minute).
set -euo pipefail
cd "$(dirname "$0")/../.."
PEERS=${1:?usage: bench_photos.sh PEERS OUT}
OUT=${2:?usage: bench_photos.sh PEERS OUT}
ROOT=${ROOT:-/tmp/faster-photos}
DEBS=${DEBS:-.device-kit/photos}
WORKERS=${WORKERS:-16}
BATCH=${BATCH:-256}
RUNS=${RUNS:-3}
PEER_MODES=${PEER_MODES:-cv2}
FASTER=${FASTER:-build/faster}
# `faster load` exits 3 when it skipped bad images: a measurement all the same here.
faster_bin=$FASTER
faster_tolerant() { "$faster_bin" "$@" || [ $? -eq 3 ]; }
FASTER=faster_tolerant
export FASTER_PROGRESS=plain CLASSES=${CLASSES:-24} PER_CLASS=${PER_CLASS:-800}

[ -x "$FASTER" ] || { echo "error: $FASTER not found: build the project first" >&2; exit 1; }
[ -f "$PEERS/ref_loader.py" ] || { echo "error: $PEERS/ref_loader.py not found" >&2; exit 1; }
mkdir -p "$OUT"
start=$(date +%s)
scripts/make_photo_tree.sh "$ROOT" "$DEBS" | tee "$OUT/tree.txt"
TRAIN="$ROOT/train"
echo "== tree ready after $(( $(date +%s) - start )) s"

echo "== decode floor"
"$FASTER" load "$TRAIN" --decode-only --floor-images 500 --json "$OUT/floor.json" | tee "$OUT/floor.txt"
common=(--batch "$BATCH" --size 224 --epochs 2 --floor-images 0)
for i in $(seq "$RUNS"); do
  for mode in cpu nvjpeg; do
    echo "== faster load --decode $mode, run $i"
    "$FASTER" load "$TRAIN" "${common[@]}" --workers "$WORKERS" --decode "$mode" \
      --json "$OUT/faster_${mode}_$i.json" | tee "$OUT/faster_${mode}_$i.txt"
  done
  for mode in $PEER_MODES; do
    echo "== peer $mode, run $i"
    python3 "$PEERS/ref_loader.py" "$TRAIN" --mode "$mode" --workers "$WORKERS" --batch "$BATCH" \
      | tee "$OUT/peer_${mode}_$i.txt" || echo "peer $mode failed"
  done
done
echo "== diagnostic: faster load --decode cpu with OMP_NUM_THREADS=1 (LibTorch's CPU threads idle)"
OMP_NUM_THREADS=1 "$FASTER" load "$TRAIN" "${common[@]}" --workers "$WORKERS" --decode cpu \
  --json "$OUT/faster_cpu_omp1.json" | tee "$OUT/faster_cpu_omp1.txt"
echo "== per core: one worker each"
"$FASTER" load "$TRAIN" --batch "$BATCH" --size 224 --batches 20 --floor-images 0 --workers 1 \
  --decode cpu --json "$OUT/faster_cpu_1worker.json" | tee "$OUT/faster_cpu_1worker.txt"
python3 "$PEERS/ref_loader.py" "$TRAIN" --mode cv2 --workers 1 --batch "$BATCH" --max-batches 20 \
  | tee "$OUT/peer_cv2_1worker.txt" || echo "peer cv2 (1 worker) failed"

python3 - "$OUT" "$RUNS" "$WORKERS" "$BATCH" "$PEER_MODES" <<'PY' | tee "$OUT/table.md"
import json, re, statistics, sys, os
out, runs, workers, batch, peer_modes = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5].split()
def peer(name):
    try:
        m = re.search(r'RESULT .* (\d+) img/s (\d+) MB/s', open(f'{out}/{name}.txt').read())
    except OSError:
        m = None
    return float(m.group(1)) if m else None
def med(vals):
    vals = [v for v in vals if v is not None]
    return (statistics.median(vals), vals) if vals else (None, [])
rows = {}
for mode in ('cpu', 'nvjpeg'):
    js = [json.load(open(f'{out}/faster_{mode}_{i}.json')) for i in range(1, runs + 1)]
    m, vals = med([j['images_per_s'] for j in js])
    note = js[0]['bottleneck'] + ' bottleneck'
    if mode == 'nvjpeg':
        share = statistics.median(100.0 * j['gpu_images'] / max(1, j['images']) for j in js)
        note += f'; {share:.0f} % of images on the GPU'
    rows[f'faster load --decode {mode}'] = (m, vals, note)
for mode in peer_modes:
    m, vals = med([peer(f'peer_{mode}_{i}') for i in range(1, runs + 1)])
    if m: rows[f'ref_loader.py --mode {mode}'] = (m, vals, '')
floor = json.load(open(f'{out}/floor.json'))
cores = floor['cores']
fl = floor['decode_floor']
print(f'| loader ({workers} workers, batch {batch}, RRC 224 + flip + normalize, to the GPU; photographs) | img/s (median of {runs}) | runs | note |')
print('|---|---:|---|---|')
for name, (m, vals, note) in rows.items():
    print(f'| {name} | {m:.0f} | {" / ".join(f"{v:.0f}" for v in vals)} | {note} |')
print(f'| decode floor: {fl["mp_per_s_per_core"]:.1f} MP/s per core (full-size libjpeg-turbo) x {cores} cores | '
      f'{fl["images_per_s_all_cores"]:.0f} | | {fl["images_per_s_per_core"]:.0f} img/s per core, from memory |')
one_json = json.load(open(f'{out}/faster_cpu_1worker.json'))
one = one_json['images_per_s']
peer_one = peer('peer_cv2_1worker')
print(f'\nper core (one worker each): faster --decode cpu {one:.0f} img/s, cv2 peer '
      + (f'{peer_one:.0f} img/s ({one / peer_one:.2f}x)' if peer_one else 'failed'))
# Per-image work (read + decode + augment, ms per image per worker) alone and with all workers:
# if it grows with the workers, they slow each other down; if not, they wait.
def work_ms(j):
    st = j['stages_s']
    return 1e3 * (st['read'] + st['decode'] + st['augment']) / max(1, j['images'])
many = json.load(open(f'{out}/faster_cpu_1.json'))
omp1 = json.load(open(f'{out}/faster_cpu_omp1.json'))
print(f'faster per-image work: {work_ms(one_json):.3f} ms with 1 worker, {work_ms(many):.3f} ms each with '
      f'{many["workers"]} workers; with OMP_NUM_THREADS=1: {omp1["images_per_s"]:.0f} img/s, {work_ms(omp1):.3f} ms')
best_cpu_peer = max((rows[k][0] for k in rows if k.startswith('ref_loader') and ('cv2' in k or 'pil' in k)), default=0)
cv2 = rows.get('ref_loader.py --mode cv2', (0,))[0]
if cv2:
    print(f'faster --decode cpu / cv2 peer: {rows["faster load --decode cpu"][0] / cv2:.2f}x (target >= 1.3x)')
if best_cpu_peer:
    print(f'faster --decode nvjpeg / best CPU peer: {rows["faster load --decode nvjpeg"][0] / best_cpu_peer:.2f}x (target >= 1.5x)')
print(f'\ncommand: scripts/device/bench_photos.sh PEERS OUT (ROOT={os.environ.get("ROOT", "/tmp/faster-photos")}, '
      f'{os.environ["CLASSES"]} x {os.environ["PER_CLASS"]} photos)')
PY
echo "== done in $(( $(date +%s) - start )) s"
