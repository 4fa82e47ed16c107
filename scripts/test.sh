#!/usr/bin/env bash
# Sets up, builds with tests, and runs them (CPU only; GPU tests run where CUDA is found).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
cd build && ctest --output-on-failure -j 2 --timeout 900
