"""torchvision's ResNet as the reference for faster's (tests/models/resnet_test.cpp).  Writes its
answer to OUT (stderr stays free for torchvision's warnings).  The input for logits is the one the C++
test builds: sin(0.7 * i) over i = 0 .. 2*3*SIZE*SIZE-1, shaped [2, 3, SIZE, SIZE].
usage:
  resnet_reference.py state OUT ARCH...
      per architecture (torchvision.models.ARCH, e.g. resnet50, num_classes=1000): "ARCH params
      COUNT", then "param NAME SHAPE" in named_parameters() order and "buffer NAME SHAPE" in
      named_buffers() order (SHAPE as 64x3x7x7)
  resnet_reference.py logits OUT CLASSES SIZE ARCH:STATE_DICT...
      loads each state_dict (saved by faster) into ARCH(num_classes=CLASSES) with strict=True
      and writes one line of its eval-mode logits
  resnet_reference.py save OUT ARCH CLASSES SIZE STATE_DICT
      saves ARCH(num_classes=CLASSES), its BatchNorm state randomised, with torch.save, and
      writes its eval-mode logits"""
import sys

import torch
import torchvision


def model(arch, classes):
    return getattr(torchvision.models, arch)(num_classes=classes)


def shape(t):
    return 'x'.join(str(s) for s in t.shape) or 'scalar'


def logits(net, size):
    n = 2 * 3 * size * size
    x = (torch.arange(n, dtype=torch.float32) * 0.7).sin().reshape(2, 3, size, size)
    net.eval()
    with torch.no_grad():
        return ' '.join(repr(v) for v in net(x).flatten().tolist())


def main(mode, out, *args):
    lines = []
    if mode == 'state':
        for arch in args:
            net = model(arch, 1000)
            lines.append(f'{arch} params {sum(p.numel() for p in net.parameters())}')
            lines += [f'param {k} {shape(v)}' for k, v in net.named_parameters()]
            lines += [f'buffer {k} {shape(v)}' for k, v in net.named_buffers()]
    elif mode == 'logits':
        classes, size = int(args[0]), int(args[1])
        for job in args[2:]:
            arch, path = job.split(':', 1)
            net = model(arch, classes)
            net.load_state_dict(torch.load(path), strict=True)
            lines.append(logits(net, size))
    elif mode == 'save':
        arch, classes, size, path = args[0], int(args[1]), int(args[2]), args[3]
        torch.manual_seed(0)
        net = model(arch, classes)
        with torch.no_grad():
            for m in net.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.2, 0.2)
                    m.running_mean.uniform_(-0.2, 0.2)
                    m.running_var.uniform_(0.5, 2.0)
                    m.num_batches_tracked.fill_(3)
        torch.save(net.state_dict(), path)
        lines.append(logits(net, size))
    else:
        sys.exit(f'unknown mode {mode}')
    with open(out, 'w') as f:
        f.write('\n'.join(lines) + '\n')


main(*sys.argv[1:])
