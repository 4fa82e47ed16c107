#!/usr/bin/env python3
"""faster.ImageLoader alone: a loop that only iterates (and waits for each batch on the GPU),
several epochs, printing per epoch images/s, seconds, the process's resident memory at the
epoch's end and the seconds the loop waited for the loader; then a RESULT line.  Set beside
`faster load` on the same data and settings, the difference per batch is the Python side's
overhead; the RSS column says whether host memory stays flat.
  python3 scripts/bench_python_loader.py DIR [--batch 256] [--res 224] [--epochs 3] [--decode auto]
(PYTHONPATH=build/python)."""
import argparse
import time

import torch

import faster


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("root")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--res", type=int, default=224)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--decode", default="auto")
    p.add_argument("--device", default="auto")
    p.add_argument("--val", action="store_true", help="the validation transform")
    a = p.parse_args()
    loader = faster.ImageLoader(a.root, a.batch, train=not a.val, res=a.res, workers=a.workers,
                                decode=a.decode, device=a.device)
    cuda = loader.describe()["device"].startswith("cuda")
    print(loader.describe(), flush=True)
    rates = []
    for epoch in range(a.epochs):
        t, images = time.time(), 0
        for x, y in loader:
            if cuda:
                torch.cuda.current_stream().synchronize()  # the batch is there, as a step needs
            images += len(y)
        seconds = time.time() - t
        rates.append(images / seconds)
        s = loader.stats()
        print(f"epoch {epoch + 1}: {images / seconds:.0f} img/s, {seconds:.2f} s, "
              f"{len(loader)} batches, RSS {rss_mb():.0f} MB, waited {s['wait_s']:.2f} s in all",
              flush=True)
    s = loader.stats()
    print(f"RESULT img_s={max(rates):.0f} median={sorted(rates)[len(rates) // 2]:.0f} "
          f"bottleneck={s['bottleneck']} skipped={s['skipped']} rss_mb={rss_mb():.0f}")


if __name__ == "__main__":
    main()
