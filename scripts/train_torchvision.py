#!/usr/bin/env python3
"""A PyTorch user's ImageNet-style training loop, fed by faster.ImageLoader instead of a
DataLoader: the peer ../shared/peers/ref_imagenet.py's loop, flags and printout, its
ImageFolder + DataLoader lines swapped for faster's loader (docs/python.md).  torchvision ResNet,
SGD nesterov, label smoothing 0.1, warm-up then cosine, AMP (fp16 with GradScaler, or bf16),
channels_last, torch.compile; DDP under torchrun.
  python3 scripts/train_torchvision.py ROOT --arch resnet18 --amp --bf16 --channels-last
(PYTHONPATH=build/python, or build-cuda/python on a GPU machine).  Prints per epoch the train
images/s (the first 10 steps of an epoch not counted), loss, val top-1/top-5, and a RESULT line."""
import argparse
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision

import faster


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("root", help="ROOT/train/<class>/*.JPEG and ROOT/val/ (or LMDBs from faster pack)")
    p.add_argument("--arch", default="resnet50")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--workers", type=int, default=0, help="loader threads (0: all cores)")
    p.add_argument("--decode", default="auto", choices=["auto", "cpu", "nvjpeg"])
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--wd", type=float, default=5e-5)
    p.add_argument("--warmup-epochs", type=float, default=0.0)
    p.add_argument("--res", type=int, default=224)
    p.add_argument("--val-res", type=int, default=224)
    p.add_argument("--steps", type=int, default=0, help="steps per epoch (0: the whole epoch)")
    p.add_argument("--amp", action="store_true")
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--compile", action="store_true")
    p.add_argument("--compile-mode", default=None,
                   help="torch.compile's mode with --compile (reduce-overhead: CUDA graphs)")
    p.add_argument("--no-val", action="store_true")
    a = p.parse_args()
    ddp = "WORLD_SIZE" in os.environ
    if ddp:  # faster.ImageLoader reads the rank and world size from torch.distributed
        dist.init_process_group("nccl")
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    rank = dist.get_rank() if ddp else 0
    device = torch.device("cuda", torch.cuda.current_device())
    torch.backends.cudnn.benchmark = True

    # The DataLoader(ImageFolder(...)) lines of the peer, as one loader each: batches arrive on
    # the GPU, normalized, in the model's memory format and, under --amp, in its dtype (autocast
    # would convert them anyway: one pass over the batch less).
    amp_dtype = torch.bfloat16 if a.bf16 else torch.float16
    loader = dict(device=device, workers=a.workers, decode=a.decode, channels_last=a.channels_last,
                  dtype=amp_dtype if a.amp else torch.float32)
    train = faster.ImageLoader(os.path.join(a.root, "train"), a.batch, res=a.res, drop_last=True,
                               **loader)
    val_dir = os.path.join(a.root, "val")
    val = None if a.no_val or not os.path.exists(val_dir) else faster.ImageLoader(
        val_dir, a.batch, train=False, res=a.val_res, **loader)
    classes = len(train.classes)

    mf = torch.channels_last if a.channels_last else torch.contiguous_format
    model = getattr(torchvision.models, a.arch)(num_classes=classes).to(device, memory_format=mf)
    decay = [q for q in model.parameters() if q.ndim > 1]
    no_decay = [q for q in model.parameters() if q.ndim <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": a.wd},
                           {"params": no_decay, "weight_decay": 0}],
                          lr=a.lr, momentum=0.9, nesterov=True)
    if ddp:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index])
    net = torch.compile(model, mode=a.compile_mode) if a.compile else model
    steps_per_epoch = min(a.steps or len(train), len(train))
    total, warm = steps_per_epoch * a.epochs, int(a.warmup_epochs * steps_per_epoch)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm
        else 0.5 * (1 + math.cos(math.pi * (s - warm) / max(1, total - warm))))
    dtype = amp_dtype
    scaler = torch.amp.GradScaler(enabled=a.amp and not a.bf16)
    crit = nn.CrossEntropyLoss(label_smoothing=0.1)

    t_start = time.time()
    rates, top1, top5 = [], float("nan"), float("nan")
    for ep in range(a.epochs):
        train.set_epoch(ep)
        net.train()
        n, loss_sum, t0 = 0, 0.0, None
        for i, (x, y) in enumerate(train):
            if i == steps_per_epoch:
                break
            if i == 10:
                torch.cuda.synchronize()
                t0, n = time.time(), 0
            with torch.autocast("cuda", dtype=dtype, enabled=a.amp):
                loss = crit(net(x), y)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            sched.step()
            n += x.shape[0]
            if i % 50 == 0:
                loss_sum = loss.item()
        torch.cuda.synchronize()
        world = dist.get_world_size() if ddp else 1
        rate = n / (time.time() - t0) * world if t0 else float("nan")
        rates.append(rate)
        if val is not None:
            net.eval()
            c1 = c5 = m = 0
            with torch.no_grad(), torch.autocast("cuda", dtype=dtype, enabled=a.amp):
                for x, y in val:
                    t = net(x).topk(min(5, classes), 1).indices
                    c1 += (t[:, 0] == y).sum().item()
                    c5 += (t == y[:, None]).any(1).sum().item()
                    m += y.numel()
            top1, top5 = 100 * c1 / m, 100 * c5 / m
        if rank == 0:
            print(f"epoch {ep + 1}/{a.epochs} train {rate:.0f} img/s loss {loss_sum:.3f} "
                  f"val top1 {top1:.2f} top5 {top5:.2f} elapsed {time.time() - t_start:.1f}s",
                  flush=True)
    if rank == 0:
        s = train.stats()
        print(f"loader: bottleneck {s['bottleneck']}, waited {s['wait_s']:.1f} s, "
              f"{s['gpu_images']} of {s['images']} images decoded on the GPU", flush=True)
        print(f"RESULT arch={a.arch} loader=faster amp={a.amp} bf16={a.bf16} "
              f"cl={a.channels_last} compile={a.compile} res={a.res} batch={a.batch} "
              f"img_s={max(rates):.0f} top1={top1:.2f} top5={top5:.2f} "
              f"time={time.time() - t_start:.1f}s")
    if ddp:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
