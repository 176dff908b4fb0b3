#!/usr/bin/env python3
"""Render the sample stereo pair of data/sample/ with its exact ground-truth disparity.

Pure standard library (a fresh Debian has python3 but not numpy): the PNG and PFM writers are here.

The scene (320x240 by default), seen by a rectified pair (the right camera to the right of the left one):
  - a slanted background plane, disparity d = 8 + 0.03 x + 0.02 y (8..~22 px),
  - two fronto-parallel boxes (d = 24 and 32 px) and a disc (d = 40 px) in front of it.
Every surface carries its own random value-noise texture, attached to the surface (texture coordinates
are the left-image coordinates of the surface point), so the right image is the same texture seen from
the right camera: a left pixel x with disparity d appears at x - d in the right image. Intensities are
averaged over 4x4 sub-samples per pixel (anti-aliased edges, sub-pixel disparities render correctly).

Outputs (deterministic for a given --seed):
  left.png, right.png   8-bit grey PNG
  gt_disparity.pfm      float32 PFM (Middlebury convention: rows bottom to top, little endian, scale -1),
                        disparity of the LEFT view in pixels at pixel centres, dense (occluded pixels too).
Suggested matching range: --disparities 64 (minimum disparity 0).
"""
import argparse
import os
import random
import struct
import zlib

WIDTH, HEIGHT = 320, 240
SUB = 4  # sub-samples per pixel along each axis


class Noise:
    """Two-octave bilinear value noise on seeded random lattices, values in [0, 1]."""

    def __init__(self, rng, size=256):
        self.size = size
        self.fine = [rng.random() for _ in range(size * size)]
        self.coarse = [rng.random() for _ in range(size * size)]

    def _lattice(self, grid, u, v):
        n = self.size
        iu, iv = int(u // 1), int(v // 1)
        fu, fv = u - iu, v - iv
        a = grid[(iv % n) * n + iu % n]
        b = grid[(iv % n) * n + (iu + 1) % n]
        c = grid[((iv + 1) % n) * n + iu % n]
        d = grid[((iv + 1) % n) * n + (iu + 1) % n]
        top = a + (b - a) * fu
        bot = c + (d - c) * fu
        return top + (bot - top) * fv

    def __call__(self, u, v):
        return 0.65 * self._lattice(self.fine, u / 1.6, v / 1.6) + 0.35 * self._lattice(self.coarse, u / 7.0, v / 7.0)


class Plane:
    """Background: d = a + b x + c y, covers everything."""

    def __init__(self, a, b, c, noise, gain, bias):
        self.a, self.b, self.c, self.noise, self.gain, self.bias = a, b, c, noise, gain, bias

    def disparity(self, x, y):
        return self.a + self.b * x + self.c * y

    def covers(self, x, y):
        return True

    def left_x_from_right(self, xr, y):
        # xr = x - d(x, y)  =>  x = (xr + a + c y) / (1 - b)
        return (xr + self.a + self.c * y) / (1.0 - self.b)


class FrontoParallel:
    """A box (rectangle) or disc at constant disparity."""

    def __init__(self, d, shape, noise, gain, bias):
        self.d, self.shape, self.noise, self.gain, self.bias = d, shape, noise, gain, bias

    def disparity(self, x, y):
        return self.d

    def covers(self, x, y):
        kind = self.shape[0]
        if kind == "box":
            _, x0, y0, x1, y1 = self.shape
            return x0 <= x < x1 and y0 <= y < y1
        _, cx, cy, r = self.shape
        return (x - cx) ** 2 + (y - cy) ** 2 < r * r

    def left_x_from_right(self, xr, y):
        return xr + self.d


def intensity(surface, x, y, offset):
    return surface.bias + surface.gain * surface.noise(x + offset, y + offset)


def render(width, height, seed):
    rng = random.Random(seed)
    surfaces = [
        Plane(8.0, 0.03, 0.02, Noise(rng), 120.0, 15.0),
        FrontoParallel(24.0, ("box", 0.18 * width, 0.2 * height, 0.45 * width, 0.55 * height), Noise(rng), 130.0, 115.0),
        FrontoParallel(32.0, ("box", 0.52 * width, 0.5 * height, 0.82 * width, 0.85 * height), Noise(rng), 200.0, 40.0),
        FrontoParallel(40.0, ("disc", 0.72 * width, 0.28 * height, 0.11 * width), Noise(rng), 110.0, 140.0),
    ]
    offsets = [0.0, 61.0, 117.0, 173.0]

    def front_left(x, y):
        best, best_d = None, -1e30
        for k, s in enumerate(surfaces):
            if s.covers(x, y):
                d = s.disparity(x, y)
                if d > best_d:
                    best, best_d = k, d
        return best, best_d

    def front_right(xr, y):
        best, best_d, best_x = None, -1e30, 0.0
        for k, s in enumerate(surfaces):
            x = s.left_x_from_right(xr, y)
            if s.covers(x, y):
                d = s.disparity(x, y)
                if d > best_d:
                    best, best_d, best_x = k, d, x
        return best, best_x

    left = bytearray(width * height)
    right = bytearray(width * height)
    gt = [0.0] * (width * height)
    subs = [(i + 0.5) / SUB - 0.5 for i in range(SUB)]
    for y in range(height):
        for x in range(width):
            k, d = front_left(x, y)
            gt[y * width + x] = d
            acc_l = acc_r = 0.0
            for sy in subs:
                for sx in subs:
                    xs, ys = x + sx, y + sy
                    kl, _ = front_left(xs, ys)
                    acc_l += intensity(surfaces[kl], xs, ys, offsets[kl])
                    kr, xl = front_right(xs, ys)
                    acc_r += intensity(surfaces[kr], xl, ys, offsets[kr])
            left[y * width + x] = max(0, min(255, int(round(acc_l / (SUB * SUB)))))
            right[y * width + x] = max(0, min(255, int(round(acc_r / (SUB * SUB)))))
    return left, right, gt


def write_png_grey8(path, width, height, pixels):
    def chunk(tag, data):
        body = tag + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    raw = bytearray()
    for y in range(height):
        raw.append(0)  # filter type 0 (None) per row
        raw += pixels[y * width:(y + 1) * width]
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale, no interlace
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(raw), 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(data)


def write_pfm(path, width, height, values):
    with open(path, "wb") as f:
        f.write(b"Pf\n%d %d\n-1.0\n" % (width, height))
        for y in range(height - 1, -1, -1):  # PFM rows are bottom to top
            f.write(struct.pack("<%df" % width, *values[y * width:(y + 1) * width]))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--output-dir", default=os.path.join(here, "..", "data", "sample"))
    ap.add_argument("--width", type=int, default=WIDTH)
    ap.add_argument("--height", type=int, default=HEIGHT)
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args()
    os.makedirs(args.output_dir, exist_ok=True)
    left, right, gt = render(args.width, args.height, args.seed)
    write_png_grey8(os.path.join(args.output_dir, "left.png"), args.width, args.height, left)
    write_png_grey8(os.path.join(args.output_dir, "right.png"), args.width, args.height, right)
    write_pfm(os.path.join(args.output_dir, "gt_disparity.pfm"), args.width, args.height, gt)
    print("wrote %s/{left,right}.png and gt_disparity.pfm (%dx%d, disparity %.1f..%.1f)"
          % (os.path.normpath(args.output_dir), args.width, args.height, min(gt), max(gt)))


if __name__ == "__main__":
    main()
