#!/usr/bin/env bash
# On the GPU machine, after `source .device-kit/prelude.sh`: issue 13's whole measurement in one
# device call.  Builds faster and its tests into build-cuda/, runs the GPU tests (the speedrun's
# among them: FASTER_FASHION_MNIST is set to FMNIST_DIR, where Debian's package is absent), then
# `faster train --recipe speedrun` for SEEDS=10 seeds beside the graphed PyTorch peer for
# PEER_SEEDS=5 (speedrun.sh; SWEEP=.. adds flag sets, interleaved seed by seed; PEER_ARGS, the
# peer's flags, default --cuda-graph), then
# `--recipe speedrun95` for SEEDS95=5 seeds, no run starting after END=540 s from the start.
# Usage: [SEEDS=..] [SWEEP=..] [PEER_SEEDS=..] [SEEDS95=..] [END=..] issue13.sh FMNIST_DIR OUT_DIR
# Prints the build's end, the tests' verdicts, speedrun.sh's lines and summaries; OUT_DIR/sr and
# OUT_DIR/sr95 hold the runs.
set -uo pipefail
data=$(realpath "$1") out=$2
t0=$(date +%s)
left() { echo $(( ${END:-540} - ($(date +%s) - t0) )); }
cd "$(dirname "$0")/../.." || exit 2
mkdir -p "$out"
nvidia-smi --query-gpu=name --format=csv,noheader
FASTER_TESTS=ON TARGETS="faster faster-torch faster_tests" bash scripts/device/build.sh || exit 1
echo "== built at $(( $(date +%s) - t0 )) s"
FASTER_FASHION_MNIST=$data timeout 150 build-cuda/tests/faster_tests \
  --gtest_filter='MaxPool*:Fused*:*Nvjpeg*:*Cuda*:*Graph*:NewtonSchulz*:FlatSgd*:Speedrun.OnAGpu*' 2>&1 |
  grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED|Failure|Expected|Which is|Value of" | tail -30
echo "== speedrun at $(( $(date +%s) - t0 )) s, $(left) s left"
# No run of speedrun.sh starts once speedrun95's seeds (about 12 s each) and one more run would
# not fit.
seeds95=${SEEDS95:-5} peer_seeds=${PEER_SEEDS:-5}
budget=$(( $(left) - 12 * seeds95 - 30 ))
SEEDS=${SEEDS:-10} INTERLEAVE=1 SWEEP="${SWEEP:-}" PEER_SEEDS=$peer_seeds \
  PEER_ARGS="${PEER_ARGS:---cuda-graph}" \
  BUDGET_S=$budget bash scripts/device/speedrun.sh "$data" "$out/sr"
echo "== speedrun95 at $(( $(date +%s) - t0 )) s, $(left) s left"
if [ "$seeds95" -gt 0 ]; then
  RECIPE=speedrun95 TARGET=95 SEEDS=$seeds95 SWEEP= PEER_SEEDS=0 BUDGET_S=$(( $(left) - 15 )) \
    bash scripts/device/speedrun.sh "$data" "$out/sr95" | grep -E "summary|n="
fi
echo "== done at $(( $(date +%s) - t0 )) s"
