#!/usr/bin/env bash
# On the GPU machine, after `source .device-kit/prelude.sh`: the measurements of issue 37 (the
# run as named steps: no regression against the code before it) and issue 35 (the Python
# module), in phases, each skipped past END seconds from the start:
#   build   build-cuda/ (this tree, with tests and the Python module) and /tmp/base/build-cuda/
#           (BASE, a tarball of the code before the change: `git archive REV | gzip`)
#   tests   the GPU tests, the Python module's GPU checks (scripts/device/python_gpu_check.py)
#   steps   `faster train --recipe speedrun` for SEEDS seeds and ResNet-18 --fast from JPEG for
#           RUNS rounds, this tree and BASE in turn (same machine, same call)
#   python  scripts/train_torchvision.py (faster.ImageLoader) beside the peer ref_imagenet.py
#           (DataLoader) and `faster train --fast`, ResNet-18 bf16 channels-last; ResNet-50
#           --compile from JPEG beside the peer's compiled model alone; the loader alone in
#           Python (scripts/bench_python_loader.py, 3 epochs, RSS) beside `faster load`
#   python2 ResNet-18 from JPEG with --compile through faster.ImageLoader, beside the DataLoader
#           peer, its eager model alone and `faster train --fast`; the loader alone in Python for
#           5 epochs (RSS) beside `faster load` with the same decoder settings; a PNG tree through
#           --decode nvjpeg (its PNGs go to the CPU)
#   gap     scripts/device/python_gap.py: the compiled ResNet-18 alone and through loaders of
#           GAP_SETTINGS in one process (GPU busy and idle of each from a profile); the loader
#           alone in Python on the nvJPEG path for 4 epochs (RSS at each epoch's end); the
#           DataLoader peer and `faster train --fast`, ResNet-18 from JPEG; GAP_MODES="default
#           reduce-overhead": torch.compile's modes, a process each
# BUILD_TESTS=OFF builds the programs and the module only (no base build, no GPU tests).
# The JPEG tree: `faster synth` CLASSES x PER_CLASS (default 100 x 500 = 50,000) in ROOT.
# Usage: [PHASES=..] [SEEDS=10] [RUNS=2] [END=570] issue35_37.sh KIT OUT
#   KIT: .device-kit (fmnist/ idx files, peers/ the peer scripts, base.tar.gz)
set -uo pipefail
kit=$(realpath "$1") out=$(realpath -m "$2")
PHASES=${PHASES:-build tests steps python}
SEEDS=${SEEDS:-10} RUNS=${RUNS:-2} END=${END:-570}
ROOT=${ROOT:-/tmp/faster-synth-50k} CLASSES=${CLASSES:-100} PER_CLASS=${PER_CLASS:-500}
cd "$(dirname "$0")/../.." || exit 2
repo=$(pwd)
mkdir -p "$out"
t0=$(date +%s)
left() { echo $((END - ($(date +%s) - t0))); }
phase() { [[ " $PHASES " == *" $1 "* ]] && [ "$(left)" -gt 20 ]; }
export FASTER_PROGRESS=plain PYTHONUNBUFFERED=1 PYTHONPATH=$repo/build-cuda/python
new=$repo/build-cuda/faster base=/tmp/base/build-cuda/faster
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
# Train images/s of a --json report's last epoch, and its final accuracy.
rate() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); e=r['epochs'][-1]; \
print('%.0f img/s, top-1 %s, %.2f s from process start' % (e['train_images']/e['train_seconds'], \
r.get('final_test_accuracy'), r['process_seconds']))" "$1"; }

if phase build; then
  FASTER_TESTS=${BUILD_TESTS:-ON} bash scripts/device/build.sh || exit 1
  if [ "${BUILD_TESTS:-ON}" = ON ] && [ ! -x "$base" ]; then
    rm -rf /tmp/base && mkdir -p /tmp/base && tar xzf "$kit/base.tar.gz" -C /tmp/base
    (cd /tmp/base && FASTER_TESTS=OFF TARGETS="faster faster-torch" bash scripts/device/build.sh) ||
      exit 1
  fi
  ls build-cuda/python/faster/
  echo "== built at $(($(date +%s) - t0)) s"
fi

if phase tests; then
  [ -x build-cuda/tests/faster_tests ] && FASTER_FASHION_MNIST=$kit/fmnist timeout 200 build-cuda/tests/faster_tests \
    --gtest_filter='MaxPool*:Fused*:*Nvjpeg*:*Cuda*:*Graph*:NewtonSchulz*:FlatSgd*:Speedrun.OnAGpu*:PythonLoader*' \
    2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED|Failure|Expected|Which is" | tail -20
  timeout 200 python3 scripts/device/python_gpu_check.py 2>&1 | tail -20
  echo "== tests at $(($(date +%s) - t0)) s"
fi

synth() {
  [ -f "$ROOT/.done" ] && return
  rm -rf "$ROOT"
  $new synth --out "$ROOT" --classes "$CLASSES" --images "$PER_CLASS" --val 10 --seed 0 > /dev/null &&
    touch "$ROOT/.done"
}

# The DataLoader peer (ref_imagenet.py, 16 PIL workers), ResNet-18 bf16 channels-last from JPEG:
# NAME (its log: $out/NAME.log) LABEL (its RESULT line's prefix) [TIMEOUT].
peer_pil() {
  timeout "${3:-120}" python3 "$kit/peers/ref_imagenet.py" "$ROOT" --arch resnet18 --amp --bf16 \
    --channels-last --workers 16 --no-val > "$out/$1.log" 2>&1
  grep RESULT "$out/$1.log" | sed "s/^/$2 /"
}
# `faster train --model resnet18 --fast` from JPEG, 2 epochs: NAME LABEL [FLAGS...].
fast18() {
  local name=$1 label=$2; shift 2
  $new train --data "$ROOT" --model resnet18 --fast "$@" --epochs 2 --eval-every 100 \
    --json "$out/$name.json" > "$out/$name.log" 2>&1 && echo "$label: $(rate "$out/$name.json")"
}

if phase steps; then
  echo "== speedrun, $SEEDS seeds, base and this tree in turn"
  for seed in $(seq 0 $((SEEDS - 1))); do
    for which in base new; do
      [ "$(left)" -gt 120 ] || break 2
      bin=$base; [ $which = new ] && bin=$new
      $bin train --recipe speedrun --data "$kit/fmnist" --seed "$seed" \
        --json "$out/sr_${which}_$seed.json" > "$out/sr_${which}_$seed.log" 2>&1 &&
        echo "speedrun $which seed $seed: $(rate "$out/sr_${which}_$seed.json")" ||
        echo "speedrun $which seed $seed: FAILED $(tail -1 "$out/sr_${which}_$seed.log")"
    done
  done
  synth
  echo "== resnet18 --fast from $CLASSES x $PER_CLASS synth JPEGs, $RUNS rounds"
  for r in $(seq 1 "$RUNS"); do
    for which in base new; do
      [ "$(left)" -gt 60 ] || break 2
      bin=$base; [ $which = new ] && bin=$new
      $bin train --data "$ROOT" --model resnet18 --fast --epochs 2 --eval-every 100 \
        --json "$out/r18_${which}_$r.json" > "$out/r18_${which}_$r.log" 2>&1 &&
        echo "resnet18 $which round $r: $(rate "$out/r18_${which}_$r.json")" ||
        echo "resnet18 $which round $r: FAILED $(tail -1 "$out/r18_${which}_$r.log")"
    done
  done
  echo "== steps at $(($(date +%s) - t0)) s"
fi

if phase python; then
  synth
  peer=$kit/peers/ref_imagenet.py
  echo "== resnet18 bf16 channels-last from JPEG: faster.ImageLoader, the DataLoader peer, faster train"
  for r in $(seq 1 "$RUNS"); do
    [ "$(left)" -gt 200 ] || break
    python3 scripts/train_torchvision.py "$ROOT" --arch resnet18 --amp --bf16 --channels-last \
      --no-val > "$out/py18_$r.log" 2>&1; grep -E "RESULT|loader:" "$out/py18_$r.log" | sed "s/^/py r$r /"
    peer_pil "peer18_$r" "peer r$r"
    fast18 "f18_$r" "faster r$r" --amp-dtype bf16
  done
  echo "== the loader alone: Python (3 epochs, RSS) and faster load"
  python3 scripts/bench_python_loader.py "$ROOT/train" --epochs 3 2>&1 | tail -4
  $new load "$ROOT/train" --batch 256 --json "$out/load.json" 2>&1 | grep -E "result|bottleneck"
  echo "== resnet50 --compile: faster.ImageLoader from JPEG, the peer's compiled model alone"
  if [ "$(left)" -gt 150 ]; then
    timeout $(($(left) - 60)) python3 scripts/train_torchvision.py "$ROOT" --arch resnet50 --amp \
      --bf16 --channels-last --compile --epochs 2 --no-val > "$out/py50c.log" 2>&1
    grep -E "^epoch|RESULT" "$out/py50c.log"
  fi
  if [ "$(left)" -gt 60 ]; then
    timeout $(($(left) - 10)) python3 "$peer" "$ROOT" --arch resnet50 --amp --bf16 --channels-last \
      --compile --loader synthetic --steps 200 --epochs 2 --no-val > "$out/peer50c.log" 2>&1
    grep -E "^epoch|RESULT" "$out/peer50c.log"
  fi
  echo "== python at $(($(date +%s) - t0)) s"
fi
if phase python2; then
  synth
  peer=$kit/peers/ref_imagenet.py
  echo "== resnet18 bf16 channels-last from JPEG: faster.ImageLoader + torch.compile, the peers"
  timeout 200 python3 scripts/train_torchvision.py "$ROOT" --arch resnet18 --amp --bf16 \
    --channels-last --compile --epochs 2 --no-val > "$out/py18c.log" 2>&1
  grep -E "^epoch|RESULT|loader:" "$out/py18c.log"
  peer_pil peer18 "peer pil"
  timeout 90 python3 "$peer" "$ROOT" --arch resnet18 --amp --bf16 --channels-last \
    --loader synthetic --steps 200 --epochs 2 --no-val > "$out/peer18s.log" 2>&1
  grep RESULT "$out/peer18s.log" | sed "s/^/peer eager model alone /"
  fast18 f18 "faster train --fast"
  echo "== the loader alone: Python, 5 epochs; faster load, the same decoder settings"
  python3 scripts/bench_python_loader.py "$ROOT/train" --epochs 5 2>&1 | tail -6
  $new load "$ROOT/train" --batch 256 --decode auto --cpu-share auto --nvjpeg-threads 4 \
    --epochs 2 --json "$out/load.json" 2>&1 | grep -E "result|bottleneck|GPU decode"
  echo "== a PNG tree through --decode nvjpeg"
  python3 - "$ROOT/val" /tmp/png-tree <<'PY'
import os, sys
from PIL import Image
src, dst = sys.argv[1], sys.argv[2]
for c in sorted(os.listdir(src))[:20]:
    os.makedirs(os.path.join(dst, c), exist_ok=True)
    for f in os.listdir(os.path.join(src, c)):
        Image.open(os.path.join(src, c, f)).save(os.path.join(dst, c, f[:-5] + ".png"))
PY
  $new load /tmp/png-tree --decode nvjpeg --batch 50 --json "$out/png.json" 2>&1 |
    grep -E "result|PNG images|skipped"
  echo "== python2 at $(($(date +%s) - t0)) s"
fi
if phase gap; then
  synth
  echo "== compiled resnet18 alone and through faster.ImageLoader, one process"
  rm -rf /tmp/gap && mkdir -p /tmp/gap
  # GAP_MODES: torch.compile's modes, one process each ("default": its default)
  for mode in ${GAP_MODES:-default}; do
    [ "$(left)" -gt 200 ] || break
    margs=(); [ "$mode" = default ] || margs=(--compile-mode "$mode")
    timeout $(($(left) - 100)) python3 scripts/device/python_gap.py "$ROOT/train" --profile /tmp/gap \
      --settings "${GAP_SETTINGS:-workers=0;copy_after=1;nice=5;workers=12;decode=cpu}" "${margs[@]}" \
      2>&1 | grep -E "^[a-z_0-9-]+: |compiled|Error" | tail -12
  done
  for t in /tmp/gap/*.trace.json; do python3 scripts/profile_summary.py "$t" --top 0 | head -1; done
  echo "== beside it: the DataLoader peer (eager) and faster train --fast, ResNet-18 from JPEG"
  [ "$(left)" -gt 120 ] && peer_pil peer18 "peer pil" 100
  [ "$(left)" -gt 70 ] && fast18 f18 "faster train --fast"
  echo "== the loader alone in Python, nvJPEG path, 4 epochs: RSS"
  timeout $(($(left) - 5)) python3 scripts/bench_python_loader.py "$ROOT/train" --epochs 4 | tail -5
  echo "== gap at $(($(date +%s) - t0)) s"
fi
echo "== done at $(($(date +%s) - t0)) s"
