#!/usr/bin/env bash
# Sets up, builds, and runs the main job on the built-in default: ThinNet on Fashion-MNIST
# (Debian's dataset-fashion-mnist).  On a GPU the full 5-epoch run; without one a short CPU run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if ./build/faster env | grep -q '"available": true'; then
  exec ./build/faster train
else
  echo "run: no GPU found, so a short CPU run (1 epoch on 10,000 training images)"
  exec ./build/faster train --device cpu --epochs 1 --train-limit 10000
fi
