#!/usr/bin/env bash
# Sets up, builds, and runs the main job on the built-in default: ThinNet on Fashion-MNIST
# (Debian's dataset-fashion-mnist).  `faster train` without flags picks its recipe by device: on a
# GPU the seed's 5-epoch benchmark, without one a ThinNet sized for the CPU (2 epochs of the whole
# training set; README's "What you should see" has both outputs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec ./build/faster train
