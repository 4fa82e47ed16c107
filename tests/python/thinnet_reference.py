"""Reference check for `faster train --save`: loads the state_dict with Python's torch.load into a
PyTorch ThinNet (the seed's definition: conv 3x3 no bias -> ReLU -> BatchNorm per block) with
strict=True, and prints its eval-mode logits for a fixed input, for the C++ test to compare.
usage: thinnet_reference.py STATE_DICT BLOCKS FILTERS IN_CHANNELS SIZE
(scripts/cpu_peer_thinnet.py imports its ThinNet.)"""
import sys
import torch
import torch.nn as nn


class ThinNet(nn.Module):
    def __init__(self, in_ch, blocks, filters=(32, 64, 128), classes=10):
        super().__init__()
        layers, c = [], in_ch
        for f, nb in zip(filters, blocks):
            for i in range(nb + 1):
                layers.append(nn.Sequential(nn.Conv2d(c, f, 3, bias=False), nn.ReLU(inplace=True),
                                            nn.BatchNorm2d(f)))
                c = f
        self.features = nn.Sequential(*layers)
        self.avg = nn.AdaptiveAvgPool2d((2, 2))
        self.fc = nn.Linear(c * 4, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.avg(self.features(x)), 1))


if __name__ == '__main__':
    path, blocks, filters = sys.argv[1], [int(b) for b in sys.argv[2].split(',')], [int(f) for f in sys.argv[3].split(',')]
    in_ch, size = int(sys.argv[4]), int(sys.argv[5])
    state = torch.load(path)
    net = ThinNet(in_ch, blocks, filters)
    net.load_state_dict(state, strict=True)
    net.eval()
    x = torch.linspace(0, 1, 2 * in_ch * size * size).reshape(2, in_ch, size, size)
    with torch.no_grad():
        print(' '.join(f'{v:.6f}' for v in net(x).flatten().tolist()))
