"""The peer ref_imagenet.py with torchvision's strong-recipe augmentations in its DataLoader, as a
user of torchvision's references would add them: TrivialAugmentWide after the crop and flip,
RandomErasing(0.1) after Normalize (in the workers), and mixup (0.2) or cutmix (1.0), one per batch,
in the collate function with torchvision's transforms.v2.MixUp / CutMix (soft targets, which the
peer's CrossEntropyLoss takes as they are).  Everything else is the peer's own loop.

Usage: python3 ref_strong.py PEER_DIR ROOT [ref_imagenet.py's flags]
  PEER_DIR: the folder holding ref_imagenet.py (the shared peers)."""
import importlib.util
import sys

import torch
import torchvision.transforms as T
from torch.utils.data import default_collate
from torchvision.transforms import v2


def main():
    peer_dir, args = sys.argv[1], sys.argv[2:]
    spec = importlib.util.spec_from_file_location("ref_imagenet", f"{peer_dir}/ref_imagenet.py")
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)

    compose = T.Compose

    def strong_compose(transforms):
        # The peer's training pipeline is the one with a RandomResizedCrop; its validation one
        # stays as it is.
        if any(isinstance(t, T.RandomResizedCrop) for t in transforms):
            flip = next(i for i, t in enumerate(transforms) if isinstance(t, T.RandomHorizontalFlip))
            transforms = transforms[: flip + 1] + [T.TrivialAugmentWide()] + transforms[flip + 1:]
            transforms = transforms + [T.RandomErasing(p=0.1)]
        return compose(transforms)

    data_loader = peer.DataLoader
    made = []

    def strong_loader(dataset, *a, **kw):
        if not made:  # the first is the training loader
            mix = v2.RandomChoice([v2.MixUp(alpha=0.2, num_classes=len(dataset.classes)),
                                   v2.CutMix(alpha=1.0, num_classes=len(dataset.classes))])
            kw["collate_fn"] = lambda batch: mix(*default_collate(batch))
        made.append(dataset)
        return data_loader(dataset, *a, **kw)

    peer.T.Compose = strong_compose
    peer.DataLoader = strong_loader
    sys.argv = [sys.argv[0]] + args
    peer.main()


if __name__ == "__main__":
    torch.multiprocessing.set_start_method("fork", force=True)
    main()
