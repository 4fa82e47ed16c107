#!/usr/bin/env bash
# On the GPU machine, after `source .device-kit/prelude.sh`: issue 36's measurements (the ResNet
# step against torch.compile), in phases, each skipped past END seconds from the start:
#   build   build-cuda/ (BUILD_TESTS=ON: the tests too, and the GPU ones of the step's numerics)
#   floor   the matrix rate (bf16 and fp16, 8192^3) and the copy bandwidth, through torch
#   levers  model alone (--loader synthetic), ResNet-50 and -18, each lever (FASTER_RESNET_LEVERS,
#           models/resnet.h) on top of the last: base (none: the code before them), input, stem,
#           pool, shortcut (the shortcut's gradient inside the convolution: beta = 1;
#           shortcut_add: in its epilogue), bf16 (--amp-dtype bf16 with the fused batch norm;
#           bf16_unfused: --no-fuse),
#           batch (--batch BIG); each run profiles its third epoch (--profile), its second is timed
#   peer    ref_imagenet.py --compile --loader synthetic --amp --bf16 --channels-last (the peer,
#           timed; PEER_MIN: the seconds a model's run needs, default 150), then
#           scripts/profile_peer.py (its step under torch.profiler; PEER_PROFILE=0: not)
#   probe   scripts/device/probe_conv_fusion.cpp: cuDNN's graph API fusing ResNet-50's convolutions
#           with the batch norm's statistics (epilogue) and apply + ReLU (prologue), and their data
#           gradients with the shortcut's gradient added (beta = 1; an epilogue addition), per shape
#   final   faster's best (FINAL_LEVERS, default: the code's) and base configurations, model
#           alone, RUNS rounds (FINAL_BASE=0: not the base; FINAL_BASE_LEVERS: the base's
#           levers, default none)
#   jpeg    from CLASSES x PER_CLASS `faster synth` JPEGs: faster's best, RUNS rounds (JPEG_VARIANTS:
#           "name:flags;..", interleaved; JPEG_EPOCHS, default 2: the last is timed)
# Usage: [PHASES=..] [MODELS="resnet50 resnet18"] [RUNS=2] [END=570] issue36.sh KIT OUT
set -uo pipefail
kit=$(realpath "$1") summary=$(realpath -m "$2")
out=/tmp/issue36-out  # traces and logs stay on the machine; OUT gets the summaries
PHASES=${PHASES:-build floor levers}
MODELS=${MODELS:-resnet50 resnet18} RUNS=${RUNS:-2} END=${END:-570}
ROOT=${ROOT:-/tmp/faster-synth-50k} CLASSES=${CLASSES:-100} PER_CLASS=${PER_CLASS:-500}
SMALL=/tmp/faster-synth-20k
LEVERS=${LEVERS:-base input stem pool bf16 bf16_unfused batch}
# The code before this issue's levers: float32 input, a 3-channel stem, LibTorch's max-pool.
BASE="FASTER_RESNET_LEVERS="
# final and jpeg: FINAL_LEVERS where set (empty: none), else the levers the code has on by default.
final_env=(); [ -n "${FINAL_LEVERS+set}" ] && final_env=(FASTER_RESNET_LEVERS="$FINAL_LEVERS")
cd "$(dirname "$0")/../.." || exit 2
mkdir -p "$out" "$summary"
t0=$(date +%s)
left() { echo $((END - ($(date +%s) - t0))); }
phase() { [[ " $PHASES " == *" $1 "* ]] && [ "$(left)" -gt 30 ]; }
export FASTER_PROGRESS=plain
bin=build-cuda/faster
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
# Train images/s of a --json report's epoch (default: the last).
rate() { python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['epochs'][int(sys.argv[2])]; \
print('%.0f img/s' % (e['train_images']/e['train_seconds']))" "$1" "${2:--1}"; }
# The loader's figures of a --json report's last epoch: the step's wait, nvJPEG's share, CPU time.
loader_stats() { python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['epochs'][-1]; \
l=e.get('loader',{}); print('waited %.2f of %.2f s, GPU decoded %.0f %%, CPU %.1f s' % \
(e['loader_wait_seconds'], e['train_seconds'], 100*l.get('gpu_images',0)/max(1,l.get('images',1)), \
l.get('cpu_seconds',0)))" "$1"; }
synth() {  # synth DIR PER_CLASS
  [ -f "$1/.done" ] && return
  rm -rf "$1"
  $bin synth --out "$1" --classes "$CLASSES" --images "$2" --val 2 --seed 0 > /dev/null &&
    touch "$1/.done"
}
big_batch() { [ "$1" = resnet50 ] && echo 384 || echo 512; }
# One model-alone run: NAME MODEL [ENV=..] -- FLAGS; third epoch profiled, second timed.
alone() {
  local name=$1 model=$2; shift 2
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  [ "$(left)" -gt 45 ] || return
  env "${envs[@]}" $bin train --data "$SMALL" --model "$model" --fast --loader synthetic \
    --epochs 3 --eval-every 100 --profile "$out/$name.trace.json" --overwrite "$@" \
    --json "$out/$name.json" > "$out/$name.log" 2>&1 &&
    echo "$name: $(rate "$out/$name.json" 1) (epoch 2), $(rate "$out/$name.json" 0) (epoch 1)" ||
    echo "$name: FAILED $(tail -2 "$out/$name.log")"
  grep -m3 "^warning: " "$out/$name.log" | sed "s/^/  $name /"
  [ -f "$out/$name.trace.json" ] &&
    python3 scripts/profile_summary.py "$out/$name.trace.json" --top 12 > "$summary/$name.profile.txt"
}

if phase build; then
  FASTER_TESTS=${BUILD_TESTS:-OFF} TARGETS="${TARGETS:-faster}" FASTER_FASHION_MNIST=$kit/fmnist \
    GPU_TESTS=${GPU_TESTS:-'FusedBatchNormRelu*:ConvAndShortcut*:MaxPool*:PixelNormalizer*:ResNet*:*Graph*:ImageLoader.OnAGpu*'} \
    bash scripts/device/build.sh || exit 1
  echo "== built and tested at $(($(date +%s) - t0)) s"
fi

if phase floor; then
  python3 - <<'PY'
import torch, time
def timed(f, reps=20):
    f(); torch.cuda.synchronize(); ts = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); f(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e) / 1e3)
    return sorted(ts)[len(ts) // 2]
n = 8192
for dt in (torch.bfloat16, torch.float16):
    a = torch.randn(n, n, device='cuda', dtype=dt); b = torch.randn(n, n, device='cuda', dtype=dt)
    t = timed(lambda: a @ b)
    print('matmul %s %d^3: %.0f TFLOP/s (median of 20)' % (dt, n, 2 * n**3 / t / 1e12))
x = torch.empty(1 << 28, device='cuda', dtype=torch.float32); y = torch.empty_like(x)
t = timed(lambda: y.copy_(x))
print('copy 1 GiB: %.0f GB/s read + write (median of 20)' % (2 * x.numel() * 4 / t / 1e9))
PY
fi

if phase levers; then
  synth "$SMALL" 200
  for m in $MODELS; do
    for lever in $LEVERS; do
      case $lever in
        base) alone "${m}_base" "$m" $BASE -- ;;
        input) alone "${m}_input" "$m" FASTER_RESNET_LEVERS=input -- ;;
        stem) alone "${m}_stem" "$m" FASTER_RESNET_LEVERS=input,stem -- ;;
        pool) alone "${m}_pool" "$m" FASTER_RESNET_LEVERS=input,stem,pool -- ;;
        shortcut) alone "${m}_shortcut" "$m" FASTER_RESNET_LEVERS=input,stem,pool,shortcut -- ;;
        shortcut_add)
          alone "${m}_shortcut_add" "$m" FASTER_RESNET_LEVERS=input,stem,pool,shortcut_add -- ;;
        bf16) alone "${m}_bf16" "$m" FASTER_RESNET_LEVERS=input,stem,pool,bf16 -- --amp-dtype bf16 ;;
        bf16_unfused) alone "${m}_bf16_unfused" "$m" -- --amp-dtype bf16 --no-fuse ;;
        batch) alone "${m}_batch" "$m" FASTER_RESNET_LEVERS=input,stem,pool -- \
          --batch "$(big_batch "$m")" ;;
      esac
    done
  done
  grep -h "GPU busy" "$summary"/*.profile.txt
  echo "== levers at $(($(date +%s) - t0)) s"
fi

if phase peer; then
  synth "$SMALL" 200
  for m in $MODELS; do
    [ "$(left)" -gt "${PEER_MIN:-150}" ] || break
    timeout $(($(left) - 10)) python3 "$kit/peers/ref_imagenet.py" "$SMALL" --arch "$m" --amp \
      --bf16 --channels-last --compile --loader synthetic --steps 200 --epochs 2 --no-val \
      > "$out/peer_$m.log" 2>&1
    grep -E "^epoch|RESULT" "$out/peer_$m.log" | sed "s/^/peer $m /"
    [ "${PEER_PROFILE:-1}" = 1 ] && [ "$(left)" -gt 90 ] || continue
    timeout $(($(left) - 20)) python3 scripts/profile_peer.py --arch "$m" --bf16 --compile \
      --out "$out/peer_$m.trace.json" > "$out/peer_${m}_profile.log" 2>&1 &&
      python3 scripts/profile_summary.py "$out/peer_$m.trace.json" --top 12 |
      tee "$summary/peer_$m.profile.txt" | head -14
  done
  echo "== peer at $(($(date +%s) - t0)) s"
fi

if phase probe; then
  # The cuDNN that PyTorch loads (its pip package), else the CUDA folder's.
  lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(nvidia.cudnn.__path__[0], "lib"))' \
    2>/dev/null || echo /usr/local/cuda/lib64)
  inc=$(dirname "$lib")/include
  g++ -O2 -std=c++17 scripts/device/probe_conv_fusion.cpp -I"$inc" -I/usr/local/cuda/include \
    -L"$lib" -l:libcudnn.so.9 -Wl,-rpath,"$lib" -L/usr/local/cuda/lib64 -lcudart \
    -o "$out/probe_conv_fusion" && timeout $(($(left) - 10)) "$out/probe_conv_fusion" 256 |
    tee "$summary/probe_conv_fusion.txt"
  echo "== probe at $(($(date +%s) - t0)) s"
fi

if phase final; then
  synth "$SMALL" 200
  for r in $(seq 1 "$RUNS"); do
    for m in $MODELS; do
      [ "${FINAL_BASE:-1}" = 1 ] &&
        alone "${m}_final_base_$r" "$m" FASTER_RESNET_LEVERS="${FINAL_BASE_LEVERS:-}" --
      # shellcheck disable=SC2086
      alone "${m}_final_$r" "$m" "${final_env[@]}" -- ${FINAL_FLAGS:-}
    done
  done
  echo "== final at $(($(date +%s) - t0)) s"
fi

if phase jpeg; then
  synth "$ROOT" "$PER_CLASS"
  # Without JPEG_VARIANTS one variant, "best": FINAL_FLAGS alone.
  IFS=';' read -ra variants <<< "${JPEG_VARIANTS:-best:}"
  for r in $(seq 1 "$RUNS"); do
    for m in $MODELS; do
      for v in "${variants[@]}"; do
        [ "$(left)" -gt 60 ] || break 3
        name=${v%%:*} flags=${v#*:} log="$out/${m}_jpeg_${name}_$r"
        # shellcheck disable=SC2086
        env "${final_env[@]}" $bin train --data "$ROOT" --model "$m" --fast \
          --epochs "${JPEG_EPOCHS:-2}" --eval-every 100 ${FINAL_FLAGS:-} $flags \
          --json "$log.json" > "$log.log" 2>&1 &&
          echo "$m from JPEG, $name, round $r: $(rate "$log.json"); $(loader_stats "$log.json")" ||
          echo "$m from JPEG, $name, round $r: FAILED $(tail -2 "$log.log")"
      done
    done
  done
fi
echo "== done at $(($(date +%s) - t0)) s"
