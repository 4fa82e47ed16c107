"""faster's data pipeline for any PyTorch model.

``faster.ImageLoader`` replaces ``torch.utils.data.DataLoader`` over ``torchvision.datasets.
ImageFolder`` (or an LMDB written by ``faster pack``): the same C++ loader as ``faster train``
(libjpeg-turbo threads or the GPU's nvJPEG engines, crops and flips, pinned memory, a side stream)
hands out ``(images, labels)`` as ``torch.Tensor`` on the device, without a copy.  See
docs/python.md.
"""

import os as _os

# The loader's streams (nvJPEG's stage, the host copies) run beside the training's: with CUDA's
# default 8 hardware work queues they wait behind its kernels.  As `faster train` does for JPEG
# data, 32 are asked for where the process has not said (it takes effect if CUDA has not started
# yet; compiled ResNet-18 from JPEG on one H100: 11,320 -> 11,791 img/s; BENCHMARKS.md).
if "CUDA_DEVICE_MAX_CONNECTIONS" not in _os.environ:
    _os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "32"

import torch  # LibTorch first: the native module links the very libraries torch loaded

from . import _faster

__all__ = ["ImageLoader", "options"]


def options():
    """Each ImageLoader keyword as (name, default, help); the defaults are faster's own."""
    return [tuple(o) for o in _faster.options()]


def _distributed():
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return None


class ImageLoader:
    """Batches of (images, labels) from an ImageFolder tree or a faster LMDB.

    ``ImageLoader(root, batch_size, train=True, res=None, **options)``

    root: a folder of class folders (``root/<class>/<image>``, classes numbered in sorted order,
    as ImageFolder does), a root holding ``train/`` and ``val/`` (the split ``train`` names), or an
    LMDB from ``faster pack``.  train=True: RandomResizedCrop(res) + RandomHorizontalFlip, a new
    order every epoch; train=False: Resize(res * 256 / 224) + CenterCrop(res), in order.

    Images come as ``[N, 3, res, res]`` normalized tensors (or uint8 with normalize=False) on the
    device, labels as ``[N]`` int64.  A batch's tensors are the loader's memory until the next one
    is asked for: ``.clone()`` what must outlive that.  Each ``iter()`` is an epoch: the first is
    epoch 0, then 1, 2, ...; ``set_epoch(e)`` sets the next (DistributedSampler's rule, as
    ``faster train`` shards: every rank the same number of samples in training, none repeated in
    evaluation).  Under ``torch.distributed`` each rank reads its own shard.

    Keywords (``faster.options()`` lists them with their defaults):
    """

    def __init__(self, root, batch_size, train=True, res=None, **options):
        if res is not None:
            options["res"] = res
        shard = _distributed()
        if shard is not None:
            options.setdefault("rank", shard[0])
            options.setdefault("world_size", shard[1])
        if isinstance(options.get("dtype"), torch.dtype):
            options["dtype"] = str(options["dtype"]).replace("torch.", "")
        if isinstance(options.get("device"), torch.device):
            options["device"] = str(options["device"])
        self._loader = _faster.Loader(_os.fspath(root), batch_size, train, options)
        self._epoch = 0
        self._train = train

    def __len__(self):
        """Batches per epoch (this rank's)."""
        return self._loader.batches_per_epoch()

    def __iter__(self):
        epoch, self._epoch = self._epoch, self._epoch + 1
        self._loader.start_epoch(epoch)
        while True:
            batch = self._loader.next()
            if batch is None:
                return
            yield batch

    def set_epoch(self, epoch):
        """The epoch the next iteration runs (its order and crops)."""
        self._epoch = int(epoch)

    def set_res(self, res):
        """Train: the crop side from the next epoch on (progressive resizing), at most max_res."""
        self._loader.set_res(int(res))

    @property
    def classes(self):
        """Class names in label order."""
        return list(self._loader.classes())

    def indices(self):
        """The dataset index of each image of the last batch (sorted ImageFolder order; a bad
        image's stand-in's own), for shards and debugging."""
        return self._loader.indices()

    @property
    def samples(self):
        """Images this rank delivers per epoch (padding not counted)."""
        return self._loader.samples_per_epoch()

    def stats(self):
        """What the loader did so far: images, bytes, skipped images (with the first names),
        per-stage seconds and rates (read, decode, augment, copy, gpu), the bottleneck, the
        seconds the caller waited for it (wait_s), as ``faster load`` reports."""
        return self._loader.stats()

    def describe(self):
        """The settled plan: device, decoder, batch, workers, sizes, flips, classes, images."""
        return self._loader.describe()

    def close(self):
        """Stops the loader's threads now (deleting it does the same)."""
        self._loader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


ImageLoader.__doc__ += "".join(
    f"\n    {name}={default!r}: {help}" for name, default, help in options()
)
