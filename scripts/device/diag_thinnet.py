"""Where ThinNet's training time goes on the GPU, with the peer's own model (ref_thinnet.py).

  python3 diag_thinnet.py PEERS_DIR [bf16|fp16] [--profile]

1. First-use cost of every op of the first training step (host wall time with a device sync after
   each op: cuDNN plan set-up, kernel loading), then the same ops in the second step.
2. With --profile: the kernels of one CUDA-graphed training step (batch 512, channels_last,
   autocast), grouped by kind, from torch.profiler over 20 replays.
"""
import sys, time, collections
import torch, torch.nn as nn

sys.path.insert(0, sys.argv[1])
from ref_thinnet import ThinNet  # noqa: E402

dtype = torch.bfloat16 if (len(sys.argv) < 3 or sys.argv[2] == 'bf16') else torch.float16
dev = torch.device('cuda')
cl = torch.channels_last
t0 = time.perf_counter()
torch.zeros(1, device=dev)
torch.cuda.synchronize()
print(f'cuda context {1e3 * (time.perf_counter() - t0):.0f} ms')
net = ThinNet(n_blocks=(3, 3, 2)).to(dev).to(memory_format=cl)
opt = torch.optim.SGD(net.parameters(), lr=1e-3, momentum=0.9)
x = torch.randn(512, 1, 28, 28, device=dev).to(memory_format=cl)
y = torch.randint(0, 10, (512,), device=dev)


class Clock:
    def __init__(s): s.rows = collections.OrderedDict()
    def __call__(s, name, fn):
        torch.cuda.synchronize(); a = time.perf_counter(); r = fn(); torch.cuda.synchronize()
        s.rows[name] = 1e3 * (time.perf_counter() - a); return r


def timed_step(clock):
    opt.zero_grad(set_to_none=True)
    with torch.autocast('cuda', dtype=dtype):
        h = x
        for i, blk in enumerate(net.features):
            h = clock(f'conv{i} fwd', lambda: blk[0](h))
            h = clock(f'relu+bn{i} fwd', lambda: blk[2](blk[1](h)))
        out = clock('head fwd', lambda: net.fc(torch.flatten(net.avg(h), 1)))
        loss = clock('loss', lambda: nn.functional.cross_entropy(out, y))
    # Backward block by block: a hook on each batch norm syncs and notes the time its input gradient is done.
    marks = []
    def hook(i):
        def f(*_):
            torch.cuda.synchronize(); marks.append((i, time.perf_counter()))
        return f
    hs = [blk[2].register_full_backward_hook(hook(i)) for i, blk in enumerate(net.features)]
    torch.cuda.synchronize(); a = time.perf_counter()
    loss.backward(); torch.cuda.synchronize()
    clock.rows['bwd total'] = 1e3 * (time.perf_counter() - a)
    for (i, t) in marks:
        clock.rows[f'block{i} bwd'] = 1e3 * (t - a); a = t
    for h in hs: h.remove()
    clock('sgd', lambda: opt.step())


first, second = Clock(), Clock()
t = time.perf_counter(); timed_step(first); t_first = time.perf_counter() - t
t = time.perf_counter(); timed_step(second); t_second = time.perf_counter() - t
print(f'{dtype}: first step {1e3 * t_first:.0f} ms, second {1e3 * t_second:.1f} ms')
for k in first.rows:
    print(f'  {k:14s} first {first.rows[k]:8.1f} ms   second {second.rows[k]:6.2f} ms')

if '--profile' in sys.argv:
    # One graphed step, as faster --fast runs it (static input, whole step captured).
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    def step():
        opt.zero_grad(set_to_none=False)
        with torch.autocast('cuda', dtype=dtype, cache_enabled=False):
            loss = nn.functional.cross_entropy(net(x), y)
        loss.backward(); opt.step()
    with torch.cuda.stream(s):
        for _ in range(3): step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g): step()
    for _ in range(10): g.replay()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(100): g.replay()
    e1.record(); torch.cuda.synchronize()
    print(f'graphed step: {e0.elapsed_time(e1) / 100:.3f} ms (100 replays)')
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(20): g.replay()
        torch.cuda.synchronize()
    kinds = collections.Counter(); names = collections.Counter()
    for e in p.key_averages():
        us = e.device_time_total if hasattr(e, 'device_time_total') else e.cuda_time_total
        if us <= 0: continue
        n = e.key.lower()
        kind = ('conv' if any(w in n for w in ('conv', 'xmma', 'implicit', 'sm90', 'cutlass', 'wgrad', 'dgrad', 'fprop'))
                else 'batchnorm' if ('bn_' in n or 'batch_norm' in n or 'batchnorm' in n)
                else 'gemm' if 'gemm' in n else 'elementwise/other')
        kinds[kind] += us / 20; names[e.key[:90]] += us / 20
    print('per step by kind (us):', {k: round(v, 1) for k, v in kinds.most_common()})
    for n, us in names.most_common(25): print(f'  {us:8.1f} us  {n}')
