#!/usr/bin/env bash
# Installs what building faster needs from Debian 12's packages (only what is missing), then configures
# and builds it into build/.  Usage: scripts/setup.sh [--tests]
set -euo pipefail
cd "$(dirname "$0")/.."
# python3-torch, python3-dev and pybind11-dev: the Python module (import faster, with
# PYTHONPATH=build/python), linked to the same LibTorch as Debian's torch.
pkgs=(build-essential cmake ninja-build libtorch-dev libgloo-dev libjpeg-dev libspng-dev liblmdb-dev
      libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev dataset-fashion-mnist python3-torch
      python3-dev pybind11-dev)
tests=OFF
if [ "${1:-}" = "--tests" ]; then
  tests=ON
  # Test-only references: OpenCV (INTER_AREA resize quality), torchvision (the ResNet reference,
  # ImageFolder and its transforms), pytest (the Python module's tests).
  pkgs+=(libopencv-dev python3-torchvision python3-numpy python3-pytest)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFASTER_TESTS=$tests >/dev/null
cmake --build build -j "$(nproc)"
