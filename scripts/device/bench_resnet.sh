#!/usr/bin/env bash
# ResNets on JPEG folders on the GPU machine (issue 12), in phases chosen by PHASES:
#   smoke    : every path once on a small synth tree (cpu/nvjpeg decode, fp16/bf16, graphs,
#              progressive resizing, DDP with one NCCL rank, eval), one line each
#   speed    : training images/s from JPEG, faster beside the peer ref_imagenet.py in the same call,
#              RUNS rounds (each: faster then the peer), on a `faster synth` tree of CLASSES x
#              PER_CLASS images; MODELS (resnet50 resnet18); the peer's model-only speed too
#   accuracy : Fashion-MNIST exported to JPEG (faster export) and the idx files themselves, ResNet-18
#              at ACC_RES px for ACC_EPOCHS epochs with the flags in ACC_FLAGS (';' between
#              configurations), then FixRes: the same weights evaluated at higher resolutions
# Usage: scripts/device/bench_resnet.sh PEERS_DIR FMNIST_DIR OUT_DIR
# Environment: FASTER (default build-cuda/faster), PHASES, ROOT, CLASSES, PER_CLASS, RUNS, MODELS,
#              EPOCHS (speed runs), VARIANTS (';'-separated extra faster flags, one run each per
#              round), SPEED_FLAGS (for all), PEER=0 / PEER_SYNTHETIC=0 (skip the peer runs),
#              PEER_AMP (peer precision flags), FLOOR=0 (skip the decode floor), ACC_* as above
#              (ACC_DATA="jpeg idx": the data each configuration trains on; FIXRES=0 skips the
#              FixRes evaluations), GPU_DEFAULT=1
#              (also run `faster train` with no flags, the README's job).
set -uo pipefail
peers=$1 fmnist=$2 out=$3
cd "$(dirname "$0")/../.."
FASTER=${FASTER:-build-cuda/faster}
PHASES=${PHASES:-smoke speed accuracy}
ROOT=${ROOT:-/tmp/faster-resnet-synth}
CLASSES=${CLASSES:-100} PER_CLASS=${PER_CLASS:-500} RUNS=${RUNS:-3} EPOCHS=${EPOCHS:-2}
MODELS=${MODELS:-resnet50 resnet18}
ACC_RES=${ACC_RES:-64} ACC_EPOCHS=${ACC_EPOCHS:-10}
ACC_FLAGS=${ACC_FLAGS:---lr 0.2 --weight-decay 5e-4 --crop-scale 0.35}
export FASTER_PROGRESS=plain PYTHONUNBUFFERED=1
mkdir -p "$out"
$FASTER env > "$out/env.json"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv \
  > "$out/gpu.txt" 2>&1

synth() {  # dir classes per_class val
  [ -f "$1/.done-$2-$3-$4" ] && return
  rm -rf "$1"
  $FASTER synth --out "$1" --classes "$2" --images "$3" --val "$4" --seed 0 > "$out/synth-$(basename "$1").txt"
  touch "$1/.done-$2-$3-$4"
}
# train images/s of the last epoch of a faster --json report, and the loader's work per image
# (its threads' busy time summed: CPU read + decode + augment per image, nvJPEG stage per GPU image
# and its parts)
rate() { python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['epochs'][-1]; l=e.get('loader', {}); \
g=lambda k: 1e3*l.get(k, 0)/l['gpu_images']; \
w=' loader %.3f ms/img CPU, %s' % (1e3*l['cpu_seconds']/l['images'], ('%.3f ms/img nvJPEG stage (headers %.3f, calls %.3f, GPU wait %.3f; %d images, CPU share %.2f)' % (g('gpu_seconds'), g('gpu_parse_seconds'), g('gpu_call_seconds'), g('gpu_wait_seconds'), l['gpu_images'], 1 - l['gpu_images']/l['images'])) if l['gpu_images'] else 'no nvJPEG') if l else ''; \
print('%.0f img/s (epoch %d: %.2fs train, %.2fs waiting for the loader, top-1 %s)%s' % (e['train_images']/e['train_seconds'], e['epoch'], e['train_seconds'], e['loader_wait_seconds'], e.get('test_accuracy'), w))" "$1"; }

if [[ " $PHASES " == *" smoke "* ]]; then
  small=/tmp/faster-resnet-small
  synth $small 10 100 10
  run() {  # name, flags...  (SMOKE: the names to run; default all)
    local name=$1; shift
    [ -n "${SMOKE:-}" ] && [[ " $SMOKE " != *" $name "* ]] && return
    if $FASTER train --data $small --epochs 2 --batch 64 --json "$out/smoke_$name.json" "$@" \
        > "$out/smoke_$name.log" 2>&1; then
      echo "smoke $name: ok, $(rate "$out/smoke_$name.json")"
    else
      echo "smoke $name: FAILED: $(tail -2 "$out/smoke_$name.log" | tr '\n' ' ')"
    fi
  }
  run r18_cpu --model resnet18 --res 128 --decode cpu
  run r18_nvjpeg --model resnet18 --res 128 --decode nvjpeg
  run r18_fast --model resnet18 --res 128 --fast
  run r18_bf16 --model resnet18 --res 128 --amp --amp-dtype bf16 --channels-last --cuda-graph
  run r18_prog --model resnet18 --res 96 --res-end 128 --res-ramp 1:2 --fast --val-res 160
  run r50_fast --model resnet50 --res 128 --fast --ema 0.999 --checkpoint "$out/smoke.ckpt"
  run r18_ddp1 --model resnet18 --res 128 --amp --channels-last --parallel ddp --nproc 1 --sync-bn
  if $FASTER eval --weights "$out/smoke.ckpt" --data $small --val-res 160 --json "$out/smoke_eval.json" \
      > "$out/smoke_eval.log" 2>&1; then echo "smoke eval: $(tail -1 "$out/smoke_eval.log")"
  else echo "smoke eval: FAILED: $(tail -2 "$out/smoke_eval.log" | tr '\n' ' ')"; fi
fi

if [[ " $PHASES " == *" speed "* ]]; then
  synth "$ROOT" "$CLASSES" "$PER_CLASS" 10
  if [ "${FLOOR:-1}" = 1 ]; then
    echo "== decode floor"
    $FASTER load "$ROOT/train" --decode-only --floor-images 500 --json "$out/floor.json" | tail -2
  fi
  IFS=';' read -r -a variants <<< "${VARIANTS:- }"
  for model in $MODELS; do
    for i in $(seq "$RUNS"); do
      for v in "${!variants[@]}"; do
        read -r -a flags <<< "${variants[$v]}"
        name="${model}_v${v}_$i"
        $FASTER train --data "$ROOT" --model $model --fast --epochs "$EPOCHS" --batch 256 \
          ${SPEED_FLAGS:-} "${flags[@]}" --json "$out/speed_$name.json" > "$out/speed_$name.log" 2>&1 &&
          echo "faster $model [${variants[$v]}] run $i: $(rate "$out/speed_$name.json")" ||
          echo "faster $model [${variants[$v]}] run $i: FAILED $(tail -2 "$out/speed_$name.log" | tr '\n' ' ')"
      done
      [ "${PEER:-1}" = 1 ] || continue
      python3 "$peers/ref_imagenet.py" "$ROOT" --arch $model --epochs "$EPOCHS" --batch 256 \
        --workers 16 --channels-last ${PEER_AMP:---amp} --no-val > "$out/peer_${model}_$i.log" 2>&1
      echo "peer $model run $i: $(grep -h RESULT "$out/peer_${model}_$i.log" || tail -2 "$out/peer_${model}_$i.log")"
    done
    [ "${PEER_SYNTHETIC:-1}" = 1 ] || continue
    python3 "$peers/ref_imagenet.py" "$ROOT" --arch $model --loader synthetic --steps 100 --epochs 2 \
      --batch 256 --channels-last ${PEER_AMP:---amp} --no-val > "$out/peer_${model}_synthetic.log" 2>&1
    echo "peer $model model alone: $(grep -h RESULT "$out/peer_${model}_synthetic.log")"
  done
fi

if [[ " $PHASES " == *" accuracy "* ]]; then
  jpegs=/tmp/faster-fmnist-jpeg
  [ -d $jpegs/train ] || $FASTER export --data "$fmnist" --out $jpegs > "$out/export.txt" 2>&1
  IFS=';' read -r -a configs <<< "$ACC_FLAGS"
  for c in "${!configs[@]}"; do
    read -r -a flags <<< "${configs[$c]}"
    for data in ${ACC_DATA:-jpeg idx}; do
      src=$jpegs; [ $data = idx ] && src=$fmnist
      $FASTER train --data "$src" --model resnet18 --res "$ACC_RES" --val-resize "$ACC_RES" \
        --epochs "$ACC_EPOCHS" --batch 256 --fast ${SPEED_FLAGS:-} --save "$out/acc_${c}_$data.pt" "${flags[@]}" \
        --log-dir "$out/acc_${c}_$data" --json "$out/acc_${c}_$data.json" > "$out/acc_${c}_$data.log" 2>&1
      echo "accuracy [${configs[$c]}] $data: $(grep -h '^done' "$out/acc_${c}_$data.log" || tail -2 "$out/acc_${c}_$data.log")"
    done
    [ "${FIXRES:-1}" = 1 ] || continue
    for r in $((ACC_RES * 9 / 8)) $((ACC_RES * 5 / 4)) $((ACC_RES * 3 / 2)); do
      $FASTER eval --weights "$out/acc_${c}_jpeg.pt" --data $jpegs --val-res $r --val-resize $r \
        --json "$out/fixres_${c}_$r.json" > "$out/fixres_${c}_$r.log" 2>&1
      echo "fixres [${configs[$c]}] eval at $r: $(tail -1 "$out/fixres_${c}_$r.log")"
    done
  done
fi

if [ "${GPU_DEFAULT:-0}" = 1 ]; then
  $FASTER train --data "$fmnist" > "$out/default.log" 2>&1
  echo "default run:"; grep -v '%.*batch' "$out/default.log" | tail -3
fi
