#!/usr/bin/env python3
"""Replays FPS in NumPy float32 (no FMA: NumPy never fuses) on a case dumped by ../shared/peers/bench_points.py
--dump DIR and compares the index sequences of s3d (bench_points --save DIR) and the peers with it: which of
them follows the documented definition, and where the first difference is.

usage: points_fps_replay.py DUMP_DIR SAVE_DIR CASE"""
import os
import sys

import numpy as np


def replay(points, m):
    n = points.shape[0]
    d = np.full(n, np.inf, dtype=np.float32)
    out = np.empty(m, dtype=np.int64)
    last = 0
    for s in range(m):
        out[s] = last
        diff = points - points[last]
        sq = diff * diff
        d = np.minimum(d, (sq[:, 0] + sq[:, 1]) + sq[:, 2])
        last = int(np.argmax(d))  # first maximum: the smallest index among ties
    return out


def main():
    dump, save, case = sys.argv[1:4]
    pts = np.load(os.path.join(dump, case + "__points.npy")).astype(np.float32)
    pts = pts.reshape(-1, pts.shape[-2], 3)
    seqs = {}
    for peer in ("pytorch3d", "pointnet2", "torch_cluster"):
        path = os.path.join(dump, "%s__%s.npy" % (case, peer))
        if os.path.exists(path):
            seqs[peer] = np.load(path).reshape(pts.shape[0], -1)
    ours = np.fromfile(os.path.join(save, case + "__s3d.i32"), dtype=np.int32).reshape(pts.shape[0], -1)
    seqs["s3d"] = ours
    m = ours.shape[1]
    for b in range(pts.shape[0]):
        ref = replay(pts[b], m)
        for name, seq in seqs.items():
            diff = np.nonzero(seq[b][:m] != ref)[0]
            first = int(diff[0]) if diff.size else -1
            print("%s cloud %d: %s: %s" % (case, b, name, "identical to the replay" if first < 0 else
                                           "first difference at pick %d (%d vs replay %d)" % (first, seq[b][first], ref[first])))


if __name__ == "__main__":
    main()
