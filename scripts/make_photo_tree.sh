#!/usr/bin/env bash
# Builds an ImageFolder tree of real photographs for loader benchmarks (issue 14): `faster synth`
# images decode unlike photographs, so photo figures are measured on this tree.  The photographs
# are the 14 of Debian 12's lomiri-wallpapers-16.04 (15.8 MB; CC-BY-4.0, CC-BY-SA-4.0 and CC0-1.0,
# see the package's copyright file; its one drawing, umang_by_Abhishek_Mudgal.jpg, is left out).
# Each output image is a distinct crop of one photograph (class k takes photograph k mod 14):
# a random region of 1/4 to all of the photograph's short side, at a random place, flipped or not,
# downscaled with Lanczos to W x H (W uniform in 380..560, H in 320..460: mean about 470x390, as in
# ImageNet), with sensor-like grain, then JPEG quality 90, 4:2:0, baseline: about 89 KiB on average.
# The grain stands in for the texture of ImageNet's photographs: wallpapers are smoother (sky,
# out-of-focus backgrounds), and their crops alone average 47 KiB at quality 90, where ImageNet's
# average about 110 KB.  Entropy decoding, most of a decode's time, grows with the bytes.
# Deterministic: the same CLASSES, PER_CLASS and SEED give the same crops on any machine (the JPEG
# bytes may differ by a few bits with another libjpeg version).
#
# Usage: scripts/make_photo_tree.sh OUT [DEBS_DIR]
#   OUT       the tree (OUT/train/<class>/<n>.jpg); an existing complete tree of the same settings
#             is kept as it is
#   DEBS_DIR  a folder holding lomiri-wallpapers-16.04_*.deb (on a machine without network);
#             without it the .deb is fetched with `apt-get download` into OUT/.debs
# Environment: CLASSES (default 24), PER_CLASS (800), SEED (0), JOBS (default: all cores),
#              GRAIN ("LOW HIGH": the grain's standard deviation per image, uniform, in levels of
#              0..255; default "8 22"; "0 0" for none).
# Needs python3 with numpy and Pillow (Debian: apt-get install python3-numpy python3-pil), dpkg-deb.
set -euo pipefail
OUT=${1:?usage: make_photo_tree.sh OUT [DEBS_DIR]}
DEBS=${2:-}
CLASSES=${CLASSES:-24}
PER_CLASS=${PER_CLASS:-800}
SEED=${SEED:-0}
JOBS=${JOBS:-$(nproc)}
GRAIN=${GRAIN:-8 22}
PACKAGE=lomiri-wallpapers-16.04

marker="$OUT/.photo-tree-$CLASSES-$PER_CLASS-$SEED-${GRAIN// /-}"
if [ -f "$marker" ]; then
  echo "make_photo_tree: $OUT already holds $CLASSES x $PER_CLASS photos (seed $SEED)"
  exit 0
fi
python3 -c 'import numpy, PIL' 2>/dev/null || {
  echo "error: python3 needs numpy and Pillow" >&2
  echo "HINT: apt-get install python3-numpy python3-pil (or pip install numpy pillow)" >&2
  exit 1
}
mkdir -p "$OUT"
if [ -z "$DEBS" ]; then
  DEBS="$OUT/.debs"
  mkdir -p "$DEBS"
  ls "$DEBS"/${PACKAGE}_*.deb >/dev/null 2>&1 || (cd "$DEBS" && apt-get download "$PACKAGE")
fi
deb=$(ls "$DEBS"/${PACKAGE}_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || {
  echo "error: no ${PACKAGE}_*.deb in $DEBS" >&2
  echo "HINT: on a Debian 12 machine with network: (cd $DEBS && apt-get download $PACKAGE)" >&2
  exit 1
}
photos="$OUT/.photos"
rm -rf "$photos" "$OUT/train"
mkdir -p "$photos"
dpkg-deb -x "$deb" "$photos"
echo "make_photo_tree: $(basename "$deb") ($(sha256sum "$deb" | cut -c1-16)...), $CLASSES classes x $PER_CLASS, seed $SEED, grain $GRAIN, $JOBS jobs"

python3 - "$photos/usr/share/backgrounds" "$OUT/train" "$CLASSES" "$PER_CLASS" "$SEED" "$JOBS" $GRAIN <<'PY'
import math, multiprocessing as mp, os, sys, time
import numpy as np
from PIL import Image

src, out = sys.argv[1], sys.argv[2]
classes, per_class, seed, jobs = map(int, sys.argv[3:7])
grain = tuple(map(float, sys.argv[7:9]))
DRAWINGS = {'umang_by_Abhishek_Mudgal.jpg'}  # not a photograph
names = sorted(f for f in os.listdir(src) if f.endswith('.jpg') and f not in DRAWINGS)
assert len(names) == 14, f'expected 14 photographs in {src}, found {len(names)}'
pyramids = {}  # per worker process, the last photograph's: [full size, 1/2, 1/4, ...] to ~500 px

def pyramid(k):
    if k not in pyramids:
        pyramids.clear()  # jobs come grouped by photograph: keep one in memory
        im = Image.open(os.path.join(src, names[k])).convert('RGB')
        levels = [im]
        while min(levels[-1].size) >= 1000:  # Lanczos then downscales 2x at most: fast
            levels.append(levels[-1].reduce(2))
        pyramids[k] = levels
    return pyramids[k]

def make(job):
    c, i = job
    rng = np.random.default_rng([seed, c, i])
    levels = pyramid(c % len(names))
    W, H = int(rng.integers(380, 561)), int(rng.integers(320, 461))
    pw, ph = levels[0].size
    # Region: its short side 1/4 to all of the photograph's short side (log-uniform), aspect W/H.
    side = min(pw, ph) * math.exp(rng.uniform(math.log(0.25), 0.0))
    rw, rh = (side * W / H, side) if W >= H else (side, side * H / W)
    if rw > pw: rw, rh = pw, pw * H / W
    if rh > ph: rw, rh = ph * W / H, ph
    x, y = rng.uniform(0, pw - rw), rng.uniform(0, ph - rh)
    # The smallest pyramid level that still downscales to W x H.
    lv = 0
    while lv + 1 < len(levels) and rw / 2 ** (lv + 1) >= W:
        lv += 1
    f = 2 ** lv
    box = (x / f, y / f, (x + rw) / f, (y + rh) / f)
    im = levels[lv].resize((W, H), Image.LANCZOS, box=box)
    if rng.random() < 0.5:
        im = im.transpose(Image.FLIP_LEFT_RIGHT)
    a = np.asarray(im, dtype=np.float32)
    sigma = rng.uniform(*grain)  # white, the same on R, G and B: luminance grain
    a += sigma * rng.standard_normal((H, W, 1), dtype=np.float32)
    im = Image.fromarray(np.clip(a + 0.5, 0, 255).astype(np.uint8))
    path = os.path.join(out, f'c{c:03d}', f'{i:05d}.jpg')
    im.save(path, 'JPEG', quality=90, subsampling=2, optimize=False, progressive=False)
    return os.path.getsize(path), W, H

if __name__ == '__main__':
    t0 = time.time()
    for c in range(classes):
        os.makedirs(os.path.join(out, f'c{c:03d}'), exist_ok=True)
    # Jobs grouped by photograph, so each worker decodes few of them.
    work = [(c, i) for c in range(classes) for i in range(per_class)]
    work.sort(key=lambda j: (j[0] % len(names), j))
    with mp.Pool(jobs) as pool:
        res = pool.map(make, work, chunksize=max(1, len(work) // (jobs * 8)))
    sizes = np.array([r[0] for r in res]); ws = np.array([r[1] for r in res]); hs = np.array([r[2] for r in res])
    print(f'make_photo_tree: {len(res)} images in {time.time() - t0:.1f} s, mean {ws.mean():.0f}x{hs.mean():.0f}, '
          f'{sizes.mean() / 1024:.1f} KiB (min {sizes.min() / 1024:.0f}, max {sizes.max() / 1024:.0f}), '
          f'{sizes.sum() / 2**20:.0f} MiB in all')
PY
rm -rf "$photos"
touch "$marker"
