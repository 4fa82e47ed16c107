#!/usr/bin/env bash
# On the GPU machine: configure and build faster with CUDA into build-cuda/ (after
# `source .device-kit/prelude.sh`, see the device notes in BENCHMARKS.md).
# TARGETS="a b": only those (default: everything).  GPU_TESTS='gtest filter': once built, runs those
# tests of build-cuda/tests/faster_tests (built with FASTER_TESTS=ON) and prints their verdicts.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DFASTER_TESTS=${FASTER_TESTS:-ON} > build-cuda.configure.log 2>&1 || { tail -30 build-cuda.configure.log; exit 1; }
# shellcheck disable=SC2086
if ! cmake --build build-cuda -j "$(nproc)" ${TARGETS:+--target $TARGETS} > build-cuda.build.log 2>&1; then
  grep -E -A6 "error|Error" build-cuda.build.log | head -80
  exit 1
fi
tail -3 build-cuda.build.log
if [ -n "${GPU_TESTS:-}" ] && [ -x build-cuda/tests/faster_tests ]; then
  timeout "${GPU_TESTS_TIMEOUT:-240}" build-cuda/tests/faster_tests --gtest_filter="$GPU_TESTS" 2>&1 |
    grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED|Failure|Expected|Which is|actual" | tail -30 || true
fi
