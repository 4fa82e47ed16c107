#!/usr/bin/env python3
"""The peer's training step (ref_imagenet.py --loader synthetic: a torchvision ResNet, channels
last, autocast, SGD with Nesterov momentum, label smoothing 0.1; --compile for torch.compile) under
torch.profiler: a Chrome trace of --steps steps after --warmup, for scripts/profile_summary.py.
It times nothing for a claim: the peer's own script does that.

  python3 scripts/profile_peer.py --arch resnet50 --bf16 --compile --out peer50.json
"""
import argparse

import torch
import torch.nn as nn
import torchvision


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--arch', default='resnet50')
    p.add_argument('--batch', type=int, default=256)
    p.add_argument('--res', type=int, default=224)
    p.add_argument('--classes', type=int, default=100)
    p.add_argument('--bf16', action='store_true', help='bf16 autocast (default fp16 + GradScaler)')
    p.add_argument('--compile', action='store_true')
    p.add_argument('--warmup', type=int, default=30)
    p.add_argument('--steps', type=int, default=10)
    p.add_argument('--out', required=True)
    a = p.parse_args()
    torch.backends.cudnn.benchmark = True
    mf = torch.channels_last
    model = getattr(torchvision.models, a.arch)(num_classes=a.classes).cuda().to(memory_format=mf)
    decay = [q for q in model.parameters() if q.ndim > 1]
    no_decay = [q for q in model.parameters() if q.ndim <= 1]
    opt = torch.optim.SGD([{'params': decay, 'weight_decay': 5e-5},
                           {'params': no_decay, 'weight_decay': 0}],
                          lr=0.1, momentum=0.9, nesterov=True)
    net = torch.compile(model) if a.compile else model
    dtype = torch.bfloat16 if a.bf16 else torch.float16
    scaler = torch.amp.GradScaler(enabled=not a.bf16)
    crit = nn.CrossEntropyLoss(label_smoothing=0.1)
    x = torch.randn(a.batch, 3, a.res, a.res, device='cuda').to(memory_format=mf)
    y = torch.randint(0, a.classes, (a.batch,), device='cuda')

    def step():
        with torch.autocast('cuda', dtype=dtype):
            loss = crit(net(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(a.steps):
            step()
        torch.cuda.synchronize()
    prof.export_chrome_trace(a.out)
    print('wrote', a.out)


if __name__ == '__main__':
    main()
