"""The PyTorch peer of `faster train` on the CPU: the seed's ThinNet (tests/python/thinnet_reference.py)
on Fashion-MNIST as a PyTorch user would write it, the data as tensors in memory (no DataLoader
workers), SGD with momentum, a shuffled epoch then the whole test split, every epoch.  Its clock
runs as faster's total_seconds does: from the model and optimizer built to the end of the last test.

  /usr/bin/python3 scripts/cpu_peer_thinnet.py [--epochs 2 --train-limit 4096 --batch 128 --lr 0.01]
      [--threads N] [--channels-last]

Prints one line per epoch and `RESULT time=<s>s test_acc=<%> threads=<n>` for scripts.
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'python'))
from thinnet_reference import ThinNet  # noqa: E402


def read_idx(path):
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rb') as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], 'big') for i in range(dims)]
    return torch.from_numpy(np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape).copy())


def split(folder, name, limit):
    def find(stem):
        for suffix in ('.gz', ''):
            if os.path.exists(os.path.join(folder, stem + suffix)):
                return os.path.join(folder, stem + suffix)
        sys.exit(f'no {stem} in {folder}')
    x = read_idx(find(f'{name}-images-idx3-ubyte')).unsqueeze(1)
    y = read_idx(find(f'{name}-labels-idx1-ubyte')).long()
    return (x[:limit], y[:limit]) if limit > 0 else (x, y)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--data', default='/usr/share/datasets/fashion-mnist')
    p.add_argument('--epochs', type=int, default=2)
    p.add_argument('--train-limit', type=int, default=4096)
    p.add_argument('--batch', type=int, default=128)
    p.add_argument('--lr', type=float, default=0.01)
    p.add_argument('--momentum', type=float, default=0.9)
    p.add_argument('--blocks', default='3,3,2')
    p.add_argument('--filters', default='32,64,128')
    p.add_argument('--threads', type=int, default=0, help="intra-op threads (0: PyTorch's choice)")
    p.add_argument('--channels-last', action='store_true', help='weights and inputs in NHWC')
    p.add_argument('--seed', type=int, default=0)
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    train_x, train_y = split(a.data, 'train', a.train_limit)
    test_x, test_y = split(a.data, 't10k', 0)
    net = ThinNet(1, [int(b) for b in a.blocks.split(',')], [int(f) for f in a.filters.split(',')])
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    net = net.to(memory_format=fmt)
    opt = torch.optim.SGD(net.parameters(), lr=a.lr, momentum=a.momentum)
    start = time.perf_counter()
    acc = 0.0
    for epoch in range(a.epochs):
        t0 = time.perf_counter()
        net.train()
        order = torch.randperm(len(train_x))
        loss_sum = 0.0
        for i in range(0, len(order), a.batch):
            idx = order[i:i + a.batch]
            x = train_x[idx].float().div_(255).contiguous(memory_format=fmt)  # ToTensor's scaling
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(net(x), train_y[idx])
            loss.backward()
            opt.step()
            loss_sum += loss.item() * len(idx)
        train_s = time.perf_counter() - t0
        net.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, len(test_x), a.batch):
                out = net(test_x[i:i + a.batch].float().div_(255).contiguous(memory_format=fmt))
                correct += (out.argmax(1) == test_y[i:i + a.batch]).sum().item()
        acc = 100.0 * correct / len(test_x)
        print(f'epoch {epoch + 1}/{a.epochs}  train loss {loss_sum / len(order):.4f}  test acc {acc:.2f}%  '
              f'{time.perf_counter() - t0:.2f}s ({len(order) / train_s:.0f} img/s)', flush=True)
    print(f'RESULT time={time.perf_counter() - start:.2f}s test_acc={acc:.2f} threads={torch.get_num_threads()}')


if __name__ == '__main__':
    main()
