#!/usr/bin/env python3
"""Where a training step's GPU time goes, from a Chrome trace of a few steps: `faster train
--profile FILE` or torch.profiler's export_chrome_trace (scripts/profile_peer.py).

Sums the CUDA kernels' time by kind (convolutions and matrix products, batch norm, element-wise,
pooling, the optimizer, layout changes, copies) and the GPU's idle time between the first kernel
and the last; per step with --steps N.  Kinds are read from the kernels' names (cuDNN's, cuBLAS's,
LibTorch's, Triton's from torch.compile), so they are approximate: the table lists the largest
kernels with their kind, to check.

  python3 scripts/profile_summary.py TRACE.json [--steps 10] [--top 15]
"""
import argparse
import json
import re
import sys

KINDS = [  # first match wins; names lower-cased
    ('layout (NCHW <-> NHWC)', r'nchwtonhwc|nhwctonchw|transpose|permute'),
    ('batch norm', r'bn_fw|bn_bw|batch_norm|batchnorm|\bbn_|_bn_|welford|native_batch_norm|'
                   r'bn(fwd|bwd)|norm_stats|cudnn::bn'),
    ('optimizer', r'multi_tensor_apply|foreach|sgd|fused_sgd|_amp_foreach|amp_update_scale'),
    ('convolution, matrix product', r'conv|xmma|implicit|gemm|cutlass|wgrad|dgrad|fprop|'
                                    r'sm\d+_|nvjet|cublas|cudnn|winograd|fft|kernel_mma|hmma'),
    ('pooling', r'pool'),
    ('reduction', r'reduce|triton_red|triton_per|sum_|norm_kernel'),
    ('element-wise', r'elementwise|vectorized|unrolled|triton_poi|pointwise|fill|relu|add|mul|'
                     r'copy|cast|where|masked'),
]


def kind(name):
    low = name.lower()
    for label, pattern in KINDS:
        if re.search(pattern, low):
            return label
    return 'other'


def load(path):
    with open(path) as f:
        data = json.load(f)
    return data['traceEvents'] if isinstance(data, dict) else data


def cpu_summary(a, events):
    """A CPU run's trace (LibTorch's operators only): each operator's time summed, its nested
    operators' included, per step."""
    ops = [e for e in events if e.get('ph') == 'X' and 'dur' in e]
    if not ops:
        sys.exit('%s: no operators or kernels in the trace' % a.trace)
    by_name = {}
    for e in ops:
        n, d = by_name.get(e['name'], (0, 0.0))
        by_name[e['name']] = (n + 1, d + float(e['dur']))
    per = 1000.0 * a.steps
    print('%s: %d CPU operator calls over %d steps (no GPU kernels: a CPU run); time per step, '
          'nested operators included:' % (a.trace, len(ops), a.steps))
    for name, (n, d) in sorted(by_name.items(), key=lambda kv: -kv[1][1])[:a.top]:
        print('  %6.1f  %8.3f ms  %s' % (n / a.steps, d / per, name[:110]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('trace')
    p.add_argument('--steps', type=int, default=10, help='training steps the trace holds')
    p.add_argument('--top', type=int, default=15, help='largest kernels to list')
    a = p.parse_args()
    events = load(a.trace)
    gpu = [e for e in events if e.get('ph') == 'X' and
           str(e.get('cat', '')).lower() in ('kernel', 'gpu_memcpy', 'gpu_memset')]
    if not gpu:
        return cpu_summary(a, events)
    spans = sorted((float(e['ts']), float(e['ts']) + float(e['dur'])) for e in gpu)
    busy, end = 0.0, spans[0][0]
    for s, t in spans:  # the union of the kernels' intervals (streams overlap)
        if t > end:
            busy += t - max(s, end)
            end = t
    span = spans[-1][1] - spans[0][0]
    by_kind, by_name = {}, {}
    for e in gpu:
        name = e['name'] if e.get('cat', '').lower() == 'kernel' else 'copy: ' + e['name']
        k = 'copies' if name.startswith('copy: ') else kind(name)
        by_kind[k] = by_kind.get(k, 0.0) + float(e['dur'])
        n, d, _ = by_name.get(name, (0, 0.0, k))
        by_name[name] = (n + 1, d + float(e['dur']), k)
    total = sum(by_kind.values())
    per = 1000.0 * a.steps  # microseconds in the trace -> ms per step
    print('%s: %d kernels over %d steps; GPU busy %.2f ms per step of %.2f (%.1f %% idle)' %
          (a.trace, len(gpu), a.steps, busy / per, span / per, 100 * (1 - busy / span)))
    print('| kind | ms per step | share of kernel time |')
    print('|---|---|---|')
    for k, d in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print('| %s | %.3f | %.1f %% |' % (k, d / per, 100 * d / total))
    print('| idle between kernels | %.3f | |' % ((span - busy) / per))
    print('\nlargest kernels (calls per step, ms per step, kind):')
    for name, (n, d, k) in sorted(by_name.items(), key=lambda kv: -kv[1][1])[:a.top]:
        print('  %6.1f  %7.3f  %-28s %s' % (n / a.steps, d / per, k, name[:110]))


if __name__ == '__main__':
    main()
