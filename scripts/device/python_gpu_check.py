#!/usr/bin/env python3
"""On the GPU machine: faster.ImageLoader's GPU paths against its CPU one, on a small `faster
synth` tree.  CPU decoding on a GPU: the same uint8 batches as on the CPU, byte for byte;
nvJPEG: within 2 levels on average (another IDCT); normalized bf16 channels-last batches on the
GPU: the uint8 ones normalized.  Prints one line per check and exits 1 if any fails.
  PYTHONPATH=build-cuda/python python3 scripts/device/python_gpu_check.py"""
import os
import subprocess
import sys
import tempfile

import torch

import faster

root = tempfile.mkdtemp()
exe = os.path.join(os.path.dirname(faster.__file__), "..", "..", "faster")
subprocess.run([exe, "synth", "--out", f"{root}/photos", "--classes", "4", "--images", "32",
                "--val", "8"], check=True, stdout=subprocess.DEVNULL)
failed = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}", flush=True)
    if not ok:
        failed.append(name)


def batches(**kw):
    # clone(): a CPU batch is the loader's ring memory until the next one (cpu() is no copy there)
    return [(x.cpu().clone(), y.cpu().clone())
            for x, y in faster.ImageLoader(f"{root}/photos/train", 16, **kw)]


kw = dict(res=160, seed=3, normalize=False)
cpu = batches(device="cpu", decode="cpu", **kw)
gpu_cpu = batches(device="cuda", decode="cpu", **kw)
check("cpu decode on the GPU = on the CPU", all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
                                               for a, b in zip(cpu, gpu_cpu)))
val_kw = dict(train=False, res=160, normalize=False)
vc = next(iter(faster.ImageLoader(f"{root}/photos/val", 32, device="cpu", decode="cpu", **val_kw)))[0]
vn = next(iter(faster.ImageLoader(f"{root}/photos/val", 32, device="cuda", decode="nvjpeg", **val_kw)))[0].cpu()
d = (vc.int() - vn.int()).abs().float()
check("nvjpeg val crops ~ cpu's", d.mean() < 2.0, f"(mean {d.mean():.2f}, max {d.max():.0f} levels)")
for decode in ("cpu", "nvjpeg"):
    raw = next(iter(faster.ImageLoader(f"{root}/photos/val", 32, device="cuda", decode=decode, **val_kw)))[0]
    x = next(iter(faster.ImageLoader(f"{root}/photos/val", 32, train=False, res=160, device="cuda",
                                     decode=decode, dtype=torch.bfloat16, channels_last=True)))[0]
    mean = torch.tensor([0.485, 0.456, 0.406], device="cuda").view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device="cuda").view(3, 1, 1)
    expect = (raw.float() / 255 - mean) / std
    err = (x.float() - expect).abs().max().item()
    check(f"{decode}: bf16 channels-last = uint8 normalized", x.dtype == torch.bfloat16 and
          x.is_contiguous(memory_format=torch.channels_last) and err < 2e-2, f"(max error {err:.4f})")
l = faster.ImageLoader(f"{root}/photos/train", 16, res=128, device="cuda")
s = (list(l), l.stats())[1]
check("stats on nvjpeg", s["images"] == 128 and s["bottleneck"] in ("read", "decode", "augment", "copy", "gpu"),
      f"(decode {l.describe()['decode']}, gpu images {s['gpu_images']}, bottleneck {s['bottleneck']})")
sys.exit(1 if failed else 0)
