"""Fixtures for the Python module's tests: small trees made by the faster program itself
(Fashion-MNIST exported to JPEGs, ImageNet-like synthetic photographs), and a helper that runs a
snippet in a fresh interpreter with a time limit (for what could hang: signals, forks, threads).
FASTER_BIN names the program; PYTHONPATH holds the built module (CTest sets both)."""

import os
import subprocess
import sys
import textwrap

import pytest

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def faster(*args):
    subprocess.run([os.environ.get("FASTER_BIN", "faster"), *map(str, args)], check=True,
                   stdout=subprocess.DEVNULL)


@pytest.fixture(scope="session")
def fmnist(tmp_path_factory):
    """Fashion-MNIST's first 300 training and 300 test images as an ImageFolder tree of JPEGs."""
    if not os.path.isdir(FASHION_MNIST):
        pytest.skip("Debian's dataset-fashion-mnist is not installed")
    out = tmp_path_factory.mktemp("fm") / "jpeg"
    faster("export", "--data", FASHION_MNIST, "--out", out, "--limit", 300)
    return out


@pytest.fixture(scope="session")
def photos(tmp_path_factory):
    """4 classes of 12 ImageNet-sized synthetic photographs, 4 per class in val/."""
    out = tmp_path_factory.mktemp("photos") / "synth"
    faster("synth", "--out", out, "--classes", 4, "--images", 12, "--val", 4)
    return out


def run_python(code, timeout=120, env=None):
    """Runs `code` in a fresh python3 with this PYTHONPATH; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})
