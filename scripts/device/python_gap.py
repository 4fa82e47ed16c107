#!/usr/bin/env python3
"""Where a Python loop fed by faster.ImageLoader loses to the same model alone (issue 35): one
torchvision model, compiled once (bf16 autocast, channels-last, SGD nesterov, as
scripts/train_torchvision.py trains it), timed on a made-up batch and then through loaders of
several settings, each in turn in this one process, so every figure shares the compile and the GPU.
Per setting: img/s over STEPS steps after 10 untimed, the seconds the loop waited for batches, the
images nvJPEG decoded, the main thread's CPU seconds per step; with --profile DIR, steps 30-39 of
each are recorded by torch.profiler (summarise with scripts/profile_summary.py: GPU busy and idle).
  python3 scripts/device/python_gap.py ROOT/train [--arch resnet18] [--steps 150]
      [--settings "workers=0;copy_after=1;nice=5;cpu_share=0"] [--profile DIR]
      [--compile-mode reduce-overhead]
(PYTHONPATH=build-cuda/python)."""
import argparse
import os
import time

import torch
import torch.nn as nn
import torchvision

import faster


def parse_setting(text):
    """'workers=12,decode=cpu' -> {'workers': 12, 'decode': 'cpu'} (numbers as numbers)."""
    out = {}
    for item in filter(None, text.split(",")):
        key, value = item.split("=", 1)
        for kind in (int, float):
            try:
                value = kind(value)
                break
            except ValueError:
                pass
        out[key.strip()] = value
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("root")
    p.add_argument("--arch", default="resnet18")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--settings", default="workers=0;workers=12;cpu_share=0",
                   help="loader keyword sets, ';' between sets, ',' within one")
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--compile-mode", default=None, help="torch.compile's mode (reduce-overhead: "
                   "the forward and backward as CUDA graphs)")
    p.add_argument("--profile", default="", help="a folder for one trace per setting")
    p.add_argument("--device", default="cuda", help="cpu: a smoke test of this script")
    a = p.parse_args()
    device = torch.device(a.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    torch.backends.cudnn.benchmark = True
    mf = torch.channels_last
    probe = faster.ImageLoader(a.root, a.batch, device=device, workers=1)
    classes = len(probe.classes)
    probe.close()
    model = getattr(torchvision.models, a.arch)(num_classes=classes).to(device, memory_format=mf)
    decay = [q for q in model.parameters() if q.ndim > 1]
    no_decay = [q for q in model.parameters() if q.ndim <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 5e-5},
                           {"params": no_decay, "weight_decay": 0}],
                          lr=0.1, momentum=0.9, nesterov=True)
    net = model if a.no_compile else torch.compile(model, mode=a.compile_mode)
    crit = nn.CrossEntropyLoss(label_smoothing=0.1)

    def step(x, y):
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = crit(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    def timed(name, batches, stats=None):
        """Runs 10 + steps steps of batches(); prints and returns img/s."""
        prof = None
        n, t0, cpu0 = 0, None, 0.0
        for i, (x, y) in enumerate(batches):
            if i == 10:
                sync()
                t0, cpu0, n = time.time(), time.thread_time(), 0
            if a.profile and i == 30:
                prof = torch.profiler.profile(
                    activities=[torch.profiler.ProfilerActivity.CPU,
                                torch.profiler.ProfilerActivity.CUDA])
                prof.__enter__()
            step(x, y)
            n += x.shape[0]
            if prof is not None and i == 39:
                sync()
                prof.__exit__(None, None, None)
                prof.export_chrome_trace(os.path.join(a.profile, name + ".trace.json"))
                prof = None
            if i == 10 + a.steps - 1:
                break
        sync()
        seconds = time.time() - t0
        cpu = (time.thread_time() - cpu0) / max(1, n // a.batch) * 1e3
        rate = n / seconds
        extra = ""
        if stats is not None:
            s = stats()
            extra = (f", waited {s['wait_s']:.2f} s, {s['gpu_images']} of {s['images']} on the GPU,"
                     f" bottleneck {s['bottleneck']}")
        print(f"{name}: {rate:.0f} img/s over {n // a.batch} steps, main thread "
              f"{cpu:.1f} ms CPU per step{extra}", flush=True)
        return rate

    x = torch.randn(a.batch, 3, 224, 224, device=device).to(memory_format=mf,
                                                             dtype=torch.bfloat16)
    y = torch.randint(classes, (a.batch,), device=device)
    t = time.time()
    for _ in range(3):
        step(x, y)
    sync()
    print(f"compiled and warmed in {time.time() - t:.0f} s", flush=True)

    def fixed():
        while True:
            yield x, y

    prefix = (a.compile_mode + "_") if a.compile_mode else ""
    timed(prefix + "alone", fixed())
    for text in filter(None, a.settings.split(";")):
        kw = parse_setting(text)
        # nice=N: the CPU workers' priority lowered by N (FASTER_LOADER_NICE, read as they start);
        # copy_after=1: host batches copied after the consumer's queued work, as before
        # (FASTER_COPY_AFTER_CONSUMER)
        os.environ["FASTER_LOADER_NICE"] = str(kw.pop("nice", 0))
        os.environ["FASTER_COPY_AFTER_CONSUMER"] = str(kw.pop("copy_after", 0))
        with faster.ImageLoader(a.root, a.batch, device=device, dtype=torch.bfloat16,
                                channels_last=True, drop_last=True, **kw) as loader:
            timed(prefix + text.replace(",", "_").replace("=", "-"), iter(loader), loader.stats)
    timed(prefix + "alone_again", fixed())


if __name__ == "__main__":
    main()
