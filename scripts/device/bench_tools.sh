#!/usr/bin/env bash
# Dataset-tools benchmark (issue 5), all in one call: generates a `faster synth` tree (50 classes x
# 100 images by default), then
#   - faster resize --max-size 160 against the peer PEERS/ref_resize.py (OpenCV, one file at a
#     time), same tree, RUNS runs each (median), wall-clock images/s including start-up
#   - faster pack of the original tree, and with --max-size 160 on the way in; --verify of both
#   - faster load on the original folder, the downscaled copy and both databases, warm and --cold
# and prints a table (also written to OUT/table.md, raw outputs and JSON beside it).
# Usage: scripts/device/bench_tools.sh [PEERS_DIR]   (default shared/peers; build/faster must exist)
# Environment: ROOT (dataset, default /tmp/faster-bench-tools), CLASSES, PER_CLASS, MAX_SIZE, RUNS,
#              WORKERS (faster load), BATCH, OUT (default /tmp/faster-bench-tools-results),
#              FASTER (default build/faster), PYTHON (default python3), SKIP_LOAD=1 (resize and
#              pack only, e.g. on a machine without the loader's device).
set -euo pipefail
cd "$(dirname "$0")/../.."
PEERS=${1:-shared/peers}
ROOT=${ROOT:-/tmp/faster-bench-tools}
CLASSES=${CLASSES:-50}
PER_CLASS=${PER_CLASS:-100}
MAX_SIZE=${MAX_SIZE:-160}
RUNS=${RUNS:-3}
WORKERS=${WORKERS:-$(nproc)}
BATCH=${BATCH:-256}
OUT=${OUT:-/tmp/faster-bench-tools-results}
FASTER=${FASTER:-build/faster}
PYTHON=${PYTHON:-python3}
export FASTER_PROGRESS=plain

[ -x "$FASTER" ] || { echo "error: $FASTER not found: build the project first" >&2; exit 1; }
[ -f "$PEERS/ref_resize.py" ] || { echo "error: $PEERS/ref_resize.py not found" >&2; exit 1; }
mkdir -p "$OUT"
SRC="$ROOT/src" SMALL="$ROOT/small-$MAX_SIZE" PEER_DST="$ROOT/peer-$MAX_SIZE"
DB="$ROOT/db" DB_SMALL="$ROOT/db-$MAX_SIZE"

marker="$ROOT/.synth-$CLASSES-$PER_CLASS"
if [ ! -f "$marker" ]; then
  rm -rf "$ROOT"
  "$FASTER" synth --out "$SRC" --classes "$CLASSES" --images "$PER_CLASS" --seed 0 | tee "$OUT/synth.txt"
  touch "$marker"
fi
sync

# timed NAME COMMAND...: runs it, keeps its output in OUT/NAME.txt and "wall user sys" seconds in
# OUT/NAME.s (CPU seconds as well: on a shared machine they say more than the wall clock).
timed() {
  local name=$1; shift
  local rc=0 TIMEFORMAT='%R %U %S'
  { time "$@" > "$OUT/$name.txt" 2>&1 || rc=$?; } 2> "$OUT/$name.s"
  echo "== $name: $(cat "$OUT/$name.s") s wall/user/sys (exit $rc)"
  tail -n 3 "$OUT/$name.txt"
  [ "$rc" -eq 0 ] || { echo "error: $name failed" >&2; exit 1; }
}

for i in $(seq "$RUNS"); do
  rm -rf "$SMALL" "$PEER_DST"
  timed "resize_$i" "$FASTER" resize --src "$SRC" --dst "$SMALL" --max-size "$MAX_SIZE"
  timed "peer_resize_$i" "$PYTHON" "$PEERS/ref_resize.py" "$SRC" "$PEER_DST" "$MAX_SIZE"
done
timed resize_rerun "$FASTER" resize --src "$SRC" --dst "$SMALL" --max-size "$MAX_SIZE"

rm -rf "$DB" "$DB_SMALL"
timed pack "$FASTER" pack --src "$SRC/train" --out "$DB"
timed pack_small "$FASTER" pack --src "$SRC/train" --out "$DB_SMALL" --max-size "$MAX_SIZE"
timed verify "$FASTER" pack --verify "$DB"

if [ "${SKIP_LOAD:-0}" != 1 ]; then
  common=(--workers "$WORKERS" --batch "$BATCH" --size 224 --epochs 2 --floor-images 0)
  for data in "folder:$SRC/train" "small:$SMALL/train" "lmdb:$DB" "lmdb_small:$DB_SMALL"; do
    name=${data%%:*} path=${data#*:}
    timed "load_${name}_warm" "$FASTER" load "$path" "${common[@]}" --json "$OUT/load_${name}_warm.json"
    timed "load_${name}_cold" "$FASTER" load "$path" "${common[@]}" --cold \
      --json "$OUT/load_${name}_cold.json"
  done
fi

"$PYTHON" - "$OUT" "$RUNS" "$MAX_SIZE" "$SRC" "$SMALL" "$DB" "$DB_SMALL" <<'PY' | tee "$OUT/table.md"
import json, os, re, statistics, subprocess, sys
out, runs, n = sys.argv[1], int(sys.argv[2]), sys.argv[3]
src, small, db, db_small = sys.argv[4:8]
secs = lambda name: float(open(f'{out}/{name}.s').read().split()[0])
cpu = lambda name: sum(map(float, open(f'{out}/{name}.s').read().split()[1:3]))
text = lambda name: open(f'{out}/{name}.txt').read()
du = lambda p: int(subprocess.run(['du', '-sb', p], capture_output=True, text=True).stdout.split()[0])
images = int(re.search(r'resize: (\d+) images', text('resize_1')).group(1))
ours = statistics.median(secs(f'resize_{i}') for i in range(1, runs + 1))
peer = statistics.median(secs(f'peer_resize_{i}') for i in range(1, runs + 1))
peer_own = statistics.median(float(re.search(r'(\d+) img/s', text(f'peer_resize_{i}')).group(1))
                             for i in range(1, runs + 1))
cores = os.cpu_count()
print(f'| dataset tools, {images} synth images, {cores} cores | seconds | img/s | size | note |')
print('|---|---:|---:|---:|---|')
ours_cpu = statistics.median(cpu(f'resize_{i}') for i in range(1, runs + 1))
peer_cpu = statistics.median(cpu(f'peer_resize_{i}') for i in range(1, runs + 1))
print(f'| faster resize --max-size {n} (median of {runs}) | {ours:.2f} | {images / ours:.0f} | '
      f'{du(small) / 1e6:.0f} MB | wall clock with start-up; {1e3 * ours_cpu / images:.2f} CPU-ms/img |')
print(f'| ref_resize.py {n} (median of {runs}) | {peer:.2f} | {images / peer:.0f} | '
      f'{du(src) / 1e6:.0f} MB in | its own figure {peer_own:.0f} img/s; '
      f'{1e3 * peer_cpu / images:.2f} CPU-ms/img |')
print(f'| faster resize, re-run (all up to date) | {secs("resize_rerun"):.2f} | | | |')
print(f'| faster pack | {secs("pack"):.2f} | {images / secs("pack"):.0f} | {du(db) / 1e6:.0f} MB | |')
print(f'| faster pack --max-size {n} | {secs("pack_small"):.2f} | {images / secs("pack_small"):.0f} | '
      f'{du(db_small) / 1e6:.0f} MB | |')
print(f'| faster pack --verify | {secs("verify"):.2f} | {images / secs("verify"):.0f} | | |')
print(f'\nfaster resize / peer: {peer / ours:.1f}x (wall clock; target >= 5x); '
      f'{peer_cpu / ours_cpu:.1f}x less CPU per image')
if os.path.exists(f'{out}/load_folder_warm.json'):
    print('\n| faster load (RRC 224 + flip, batch 256) | warm img/s | warm MB/s | cold img/s | cold MB/s | bottleneck (warm) |')
    print('|---|---:|---:|---:|---:|---|')
    for name, label in (('folder', 'original folder'), ('small', f'downscaled copy ({n})'),
                        ('lmdb', 'LMDB of the original'), ('lmdb_small', f'LMDB, --max-size {n}')):
        w = json.load(open(f'{out}/load_{name}_warm.json'))
        c = json.load(open(f'{out}/load_{name}_cold.json'))
        print(f'| {label} | {w["images_per_s"]:.0f} | {w["mb_per_s"]:.0f} | {c["images_per_s"]:.0f} | '
              f'{c["mb_per_s"]:.0f} | {w["bottleneck"]} |')
print(f'\ncommand: scripts/device/bench_tools.sh (ROOT={os.environ.get("ROOT", "/tmp/faster-bench-tools")})')
PY
