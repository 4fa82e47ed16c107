#!/usr/bin/env python3
# On the GPU machine: what a fresh process's set-up is made of, in PyTorch (BENCHMARKS.md, issue 13).
# Times CUDA's init, the context, cuBLAS's and cuDNN's first calls, then SpeedNet's convolutions'
# first calls at the speedrun's batch (bf16, channels-last; forward, data and weight gradients, the
# whitened stem forward only), whether NVRTC is loaded, the same calls again, on a new thread (a
# new cuDNN plan cache, kernels loaded), and fresh batch sizes on seven threads and on one.
# With --parallel the first calls run one convolution a thread, all at once, instead of in turn
# (whether a warm-up spread over threads pays for the first calls sooner).
# Usage: python3 scripts/device/probe_setup.py [--parallel]
import time, threading, sys
t = time.perf_counter
T0 = t()
import torch
import torch.nn.functional as F
print(f"import torch {t()-T0:.3f}", flush=True)
def nvrtc(): return any('nvrtc' in l for l in open('/proc/self/maps'))
def rtc(): return any('runtime_compiled' in l for l in open('/proc/self/maps'))
def sync(): torch.cuda.synchronize()
a = t(); torch.cuda.init(); print(f"cuda init {t()-a:.3f}", flush=True)
a = t(); x = torch.zeros(1, device='cuda'); sync(); print(f"context {t()-a:.3f}", flush=True)
a = t(); h = torch.randn(8, 16, device='cuda'); (h @ h.T).sum().item(); print(f"cublas first {t()-a:.3f}", flush=True)
a = t(); w = torch.randn(16, 16, 3, 3, device='cuda'); F.conv2d(torch.randn(8,16,8,8,device='cuda'), w, padding=1).sum().item(); print(f"cudnn first {t()-a:.3f} nvrtc={nvrtc()} rtc_lib={rtc()}", flush=True)
shapes = [("stem", 1, 16, 28, False), ("s1a", 16, 64, 28, True), ("s1b", 64, 64, 14, True),
          ("s2a", 64, 128, 14, True), ("s2b", 128, 128, 7, True), ("s3a", 128, 256, 7, True),
          ("s3b", 256, 256, 3, True)]
cl = torch.channels_last
def one(name, cin, cout, side, grad, n=512):
    x = torch.randn(n, cin, side, side, device='cuda', dtype=torch.bfloat16).contiguous(memory_format=cl)
    w = torch.randn(cout, cin, 3, 3, device='cuda', dtype=torch.bfloat16).contiguous(memory_format=cl)
    sync(); a = t()
    y = torch.ops.aten.convolution(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1); sync(); f = t() - a
    bd = bw = 0.0
    if grad:
        g = torch.randn_like(y)
        a = t(); torch.ops.aten.convolution_backward(g, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False]); sync(); bw = t() - a
        if name != "s1a":
            a = t(); torch.ops.aten.convolution_backward(g, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, False, False]); sync(); bd = t() - a
    return f, bd, bw
def sweep(label):
    tot = t()
    for s in shapes:
        f, bd, bw = one(*s)
        print(f"{label} {s[0]:4s} fwd {f*1e3:7.1f} ms  bwd_data {bd*1e3:7.1f}  bwd_w {bw*1e3:7.1f}  nvrtc={nvrtc()}", flush=True)
    print(f"{label} total {t()-tot:.3f}", flush=True)
if "--parallel" in sys.argv:
    a = t()
    ths = [threading.Thread(target=one, args=s) for s in shapes]
    [x.start() for x in ths]; [x.join() for x in ths]
    print(f"first calls on 7 threads at once: {t()-a:.3f} nvrtc={nvrtc()}", flush=True)
    sweep("after")
    sys.exit(0)
sweep("pass1")
sweep("pass2")
th = threading.Thread(target=sweep, args=("thread",)); th.start(); th.join()
# 7 threads at once, one shape each, fresh shapes (batch 256) so no cache
a = t()
ths = [threading.Thread(target=one, args=(*s, 256)) for s in shapes]
[x.start() for x in ths]; [x.join() for x in ths]
print(f"parallel 7 threads, batch 256 shapes: {t()-a:.3f}")
a = t(); [one(*s, 256) for s in shapes]; print(f"then batch 256 on main thread: {t()-a:.3f}")
a = t(); [one(*s, 128) for s in shapes]; print(f"batch 128 on main thread (fresh): {t()-a:.3f}")
