#!/usr/bin/env bash
# On the GPU machine, after `source .device-kit/prelude.sh`: the measurements of issue 38
# (torchvision's recipes) that its augmentations on the device allow, in phases, each skipped
# past END seconds from the start:
#   build   build-cuda/ (the programs; BUILD_TESTS=ON adds the tests, and runs the GPU ones)
#   speed   ResNet-50 --fast from CLASSES x PER_CLASS `faster synth` JPEGs at train crop 176:
#           the plain recipe and the same with torchvision's strong augmentations (--auto-augment
#           ta_wide --random-erase 0.1 --mixup-alpha 0.2 --cutmix-alpha 1.0), RUNS rounds in
#           turn, beside the plain recipe decoding on the CPU and the model alone (train images/s
#           of the second of 2 epochs)
#   peer    the peer ref_imagenet.py (ResNet-50, AMP fp16, channels-last, crop 176) as it is and
#           with the same augmentations in its DataLoader (scripts/ref_strong.py)
#   accuracy ResNet-18 on Fashion-MNIST exported as JPEGs (60,000 / 10,000), EPOCHS epochs of
#           ACC_FLAGS (default: README's 94 % command, 64 px, --crop-scale 1), then with the same
#           augmentations (and --model-ema), SEEDS seeds each
# Usage: [PHASES=..] [RUNS=3] [EPOCHS=10] [SEEDS=2] [END=570] issue38.sh KIT OUT
#   KIT: .device-kit (fmnist/ the idx files, peers/ the peer scripts)
set -uo pipefail
kit=$(realpath "$1") out=$(realpath -m "$2")
PHASES=${PHASES:-build speed peer accuracy}
RUNS=${RUNS:-3} EPOCHS=${EPOCHS:-10} SEEDS=${SEEDS:-2} END=${END:-570}
ACC_FLAGS=${ACC_FLAGS:---res 64 --val-resize 64 --batch 256 --fast --lr 0.2 --weight-decay 5e-4 --crop-scale 1}
ROOT=${ROOT:-/tmp/faster-synth-50k} CLASSES=${CLASSES:-100} PER_CLASS=${PER_CLASS:-500}
cd "$(dirname "$0")/../.." || exit 2
mkdir -p "$out"
t0=$(date +%s)
left() { echo $((END - ($(date +%s) - t0))); }
phase() { [[ " $PHASES " == *" $1 "* ]] && [ "$(left)" -gt 30 ]; }
export FASTER_PROGRESS=plain
bin=build-cuda/faster
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
# Train images/s of a --json report's last epoch, and its final accuracy.
rate() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); e=r['epochs'][-1]; \
print('%.0f img/s, top-1 %s' % (e['train_images']/e['train_seconds'], \
r.get('final_test_accuracy')))" "$1"; }
AUG="--auto-augment ta_wide --random-erase 0.1 --mixup-alpha 0.2 --cutmix-alpha 1.0"

if phase build; then
  FASTER_TESTS=${BUILD_TESTS:-OFF} TARGETS="${TARGETS:-faster}" FASTER_FASHION_MNIST=$kit/fmnist \
    GPU_TESTS='BatchAugment*:TorchvisionFlags*:*Graph*:FlatSgd*' bash scripts/device/build.sh || exit 1
  echo "== built at $(($(date +%s) - t0)) s"
fi

if phase speed; then
  if [ ! -f "$ROOT/.done" ]; then
    rm -rf "$ROOT"
    $bin synth --out "$ROOT" --classes "$CLASSES" --images "$PER_CLASS" --val 10 --seed 0 \
      > /dev/null && touch "$ROOT/.done"
  fi
  echo "== resnet50 --fast --res 176 from $CLASSES x $PER_CLASS synth JPEGs, 2 epochs (the last"
  echo "   timed): plain (nvJPEG), plain --decode cpu, augmented, the model alone (synthetic)"
  for r in $(seq 1 "$RUNS"); do
    for which in plain cpu aug model; do
      [ "$(left)" -gt 60 ] || break 2
      case $which in
        plain) flags="" ;; cpu) flags="--decode cpu" ;; aug) flags=$AUG ;;
        model) flags="--loader synthetic" ;;
      esac
      # shellcheck disable=SC2086
      $bin train --data "$ROOT" --model resnet50 --fast --res 176 --val-res 224 --epochs 2 \
        --eval-every 2 $flags --json "$out/r50_${which}_$r.json" > "$out/r50_${which}_$r.log" 2>&1 &&
        echo "resnet50 $which round $r: $(rate "$out/r50_${which}_$r.json")" ||
        echo "resnet50 $which round $r: FAILED $(tail -2 "$out/r50_${which}_$r.log")"
    done
  done
fi

if phase peer; then
  echo "== peer ref_imagenet.py resnet50 --amp --channels-last --res 176: plain, augmented"
  for which in plain aug; do
    [ "$(left)" -gt 90 ] || break
    script="$kit/peers/ref_imagenet.py"
    [ $which = aug ] && script="scripts/ref_strong.py $kit/peers"
    # shellcheck disable=SC2086
    timeout $(($(left) - 30)) python3 $script "$ROOT" --arch resnet50 --amp --channels-last \
      --res 176 --epochs 2 --no-val > "$out/peer_$which.log" 2>&1
    echo "peer $which: $(grep -E "RESULT|img/s" "$out/peer_$which.log" | tail -1)"
  done
fi

if phase accuracy; then
  fm=/tmp/fmnist-jpeg
  [ -d "$fm/val" ] || $bin export --data "$kit/fmnist" --out "$fm" > /dev/null
  echo "== resnet18 $ACC_FLAGS on exported Fashion-MNIST JPEGs, $EPOCHS epochs: plain, augmented"
  for seed in $(seq 0 $((SEEDS - 1))); do
    for which in plain aug; do
      [ "$(left)" -gt 60 ] || break 2
      flags=""; [ $which = aug ] && flags="$AUG --model-ema"
      # shellcheck disable=SC2086
      $bin train --data "$fm" --model resnet18 $ACC_FLAGS \
        --epochs "$EPOCHS" --seed "$seed" $flags --json "$out/fm_${which}_$seed.json" \
        > "$out/fm_${which}_$seed.log" 2>&1 &&
        echo "resnet18 fmnist $which seed $seed: $(rate "$out/fm_${which}_$seed.json")" ||
        echo "resnet18 fmnist $which seed $seed: FAILED $(tail -2 "$out/fm_${which}_$seed.log")"
    done
  done
fi
echo "== done at $(($(date +%s) - t0)) s"
