"""Where SpeedNet's training time goes on the GPU (the speedrun recipe's network, issue 13), with the
peer's own model (scripts/speedrun_peer.py).

  python3 diag_speednet.py [--profile]

1. Milliseconds per CUDA-graphed training step (forward, backward, SGD; random data, batch 512,
   channels_last, bf16 autocast unless a variant says otherwise), median of 5 timings of 50 replays,
   for the variants below: which choices of precision, layout, batch, activation and normalisation
   the step's time depends on.
2. With --profile: the kernels of the base step, grouped by kind, from torch.profiler over 20
   replays.
"""
import collections, os, statistics, sys
import torch, torch.nn as nn, torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import speedrun_peer as peer  # noqa: E402

dev = torch.device('cuda')


def pool_amax(x, k):
    # 2x2 max-pool of a channels_last map as an amax over a view (odd sides: the last row and column
    # dropped, as max_pool2d does).
    n, c, h, w = x.shape
    v = x[:, :, :h // 2 * 2, :w // 2 * 2].permute(0, 2, 3, 1)
    return v.reshape(n, h // 2, 2, w // 2, 2, c).amax((2, 4)).permute(0, 3, 1, 2)


def build(filters=(64, 128, 256), norm=True, stem=18, freeze_stem=False, pool='max_pool2d'):
    net = peer.SpeedNet(filters=list(filters))
    if stem != 18:  # the stem's width, and the first stage's input
        net.stem = nn.Conv2d(1, stem, 3, padding=1, bias=True)
        st = net.stages[0]
        st.convs[0] = nn.Conv2d(stem, st.convs[0].out_channels, 3, padding=1, bias=False)
    if freeze_stem:
        net.stem.requires_grad_(False)
    for st in net.stages:
        if not norm:
            st.bns = nn.ModuleList([nn.Identity() for _ in st.bns])
    return net.to(dev)


def make_step(batch=512, dtype=torch.bfloat16, cl=True, filters=(64, 128, 256), act='gelu',
              norm=True, benchmark=False, side=28, stem=18, freeze_stem=False, pool='max_pool2d'):
    torch.backends.cudnn.benchmark = benchmark
    net = build(filters, norm=norm, stem=stem, freeze_stem=freeze_stem)
    if cl: net = net.to(memory_format=torch.channels_last)
    gelu, max_pool2d = F.gelu, F.max_pool2d
    if act == 'relu':
        F.gelu = F.relu  # the peer's stages call F.gelu and F.max_pool2d
    if pool == 'amax':
        F.max_pool2d = pool_amax
    decay = [p for p in net.parameters() if p.ndim > 1 and p.requires_grad]
    rest = [p for p in net.parameters() if p.ndim <= 1 and p.requires_grad]
    opt = torch.optim.SGD([{'params': decay, 'weight_decay': 5e-4}, {'params': rest, 'weight_decay': 0}],
                          lr=0.01, momentum=0.9, nesterov=True)
    xu = torch.randint(0, 256, (batch, 1, side, side), device=dev, dtype=torch.uint8)
    y = torch.randint(0, 10, (batch,), device=dev)
    crit = nn.CrossEntropyLoss(label_smoothing=0.2)

    def step():
        x = xu.float().div_(255)
        x = x.contiguous(memory_format=torch.channels_last) if cl else x
        with torch.autocast('cuda', dtype=dtype, enabled=dtype != torch.float32):
            loss = crit(net(x), y)
        loss.backward()
        opt.step()

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            opt.zero_grad(set_to_none=True); step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        step()
    F.gelu, F.max_pool2d = gelu, max_pool2d
    return g


def time_graph(g, reps=50, runs=5):
    out = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps): g.replay()
        b.record(); b.synchronize()
        out.append(a.elapsed_time(b) / reps)
    return statistics.median(out)


def kind(name):
    n = name.lower()
    for k, words in [('conv (wgrad)', ['wgrad']), ('conv (dgrad)', ['dgrad']),
                     ('conv', ['conv', 'xmma', 'implicit', 'sm90', 'cutlass', 'gemm', 'fprop']),
                     ('batchnorm', ['batch_norm', 'bn_', 'batchnorm']), ('gelu', ['gelu']),
                     ('pool', ['pool', 'max_']), ('optimizer', ['foreach', 'multi_tensor', 'sgd']),
                     ('cast/copy', ['copy', 'cast', 'nchw', 'nhwc', 'transpose']),
                     ('reduce', ['reduce', 'sum']), ('loss', ['softmax', 'nll', 'cross', 'log'])]:
        if any(w in n for w in words): return k
    return 'other'


def main():
    variants = [
        ('base: bf16, channels_last, heuristics, batch 512', {}),
        ('fp16 autocast', {'dtype': torch.float16}),
        ('fp32 (no autocast, TF32 off)', {'dtype': torch.float32}),
        ('NCHW', {'cl': False}),
        ('cudnn benchmark', {'benchmark': True}),
        ('batch 1024 (per 512 images)', {'batch': 1024}),
        ('batch 256 (per 512 images)', {'batch': 256}),
        ('ReLU instead of GELU', {'act': 'relu'}),
        ('no BatchNorm', {'norm': False}),
        ('widths 64,256,256', {'filters': (64, 256, 256)}),
        ('widths 32,64,128', {'filters': (32, 64, 128)}),
        ('stem frozen', {'freeze_stem': True}),
        ('stem 16 channels', {'stem': 16}),
        ('stem 24 channels', {'stem': 24}),
        ('stem 16 channels, frozen', {'stem': 16, 'freeze_stem': True}),
        ('stem 24 channels, frozen', {'stem': 24, 'freeze_stem': True}),
        ('max-pool as amax of a view', {'pool': 'amax'}),
        ('stem 16 frozen, amax pool', {'stem': 16, 'freeze_stem': True, 'pool': 'amax'}),
    ]
    only = [a for a in sys.argv[1:] if not a.startswith('--')]
    if only: variants = [v for v in variants if any(o in v[0] for o in only)]
    for name, kw in variants:
        ms = time_graph(make_step(**kw))
        per512 = ms * 512 / kw.get('batch', 512)
        print(f'{name:45s} {ms:7.3f} ms/step  {per512:7.3f} ms per 512 images  '
              f'{60000 / 512 * per512 / 1e3:6.3f} s per 60k-image epoch', flush=True)
    if '--profile' in sys.argv:  # the first and the last variant
        for name, kw in (variants[0], variants[-1]) if len(variants) > 1 else variants:
            profile_step(name, kw)


def profile_step(name, kw):
    from torch.profiler import profile, ProfilerActivity
    g = make_step(**kw)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20): g.replay()
        torch.cuda.synchronize()
    by = collections.defaultdict(float); count = collections.Counter(); names = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            t = e.device_time_total if hasattr(e, 'device_time_total') else e.cuda_time_total
            k = kind(e.name); by[k] += t / 20; count[k] += 1
            names.setdefault(k, collections.Counter())[e.name[:110]] += t / 20
    total = sum(by.values())
    print(f'\n{name}: kernels of one step (profiler, 20 replays): {total / 1e3:.3f} ms GPU time, '
          f'{sum(count.values()) // 20} kernels')
    for k, t in sorted(by.items(), key=lambda kv: -kv[1]):
        print(f'  {k:14s} {t / 1e3:7.3f} ms  {100 * t / total:5.1f} %  {count[k] // 20:4d} kernels')
        for n, tn in names[k].most_common(4):
            print(f'      {tn / 1e3:7.3f} ms  {n}')

if __name__ == '__main__':
    main()
