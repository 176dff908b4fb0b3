#!/usr/bin/env python3
"""Times Open3D's farthest_point_down_sample (legacy PointCloud, start index 0) on the clouds and sample counts
of bench_points_cpu's fps/* rows, so that the ratio comes from one run on one machine.

Usage: points_open3d_fps.py [DATA_DIR] [--repeat N] [--json OUT]   (DATA_DIR default ../shared/data)
Prints the median (and min) of N timed calls per case in milliseconds; one untimed call first. Open3D 0.16's
FPS is single-threaded (one loop over the points per pick, in double). Needs python3-open3d (Debian's lives in
/usr/bin/python3's dist-packages).
"""
import argparse
import json
import os
import statistics
import time

import numpy as np
import open3d as o3d

CASES = [("bunny", "pointclouds/stanford_bunny/bun_zipper.ply", 1024),
         ("bunny", "pointclouds/stanford_bunny/bun_zipper.ply", 4096),
         ("kitti", "pointclouds/kitti_velodyne/000000.bin", 1024),
         ("kitti", "pointclouds/kitti_velodyne/000000.bin", 4096)]


def load(path):
    if path.endswith(".bin"):  # KITTI: float32 x y z reflectance
        xyz = np.fromfile(path, dtype=np.float32).reshape(-1, 4)[:, :3]
        return o3d.geometry.PointCloud(o3d.utility.Vector3dVector(xyz.astype(np.float64)))
    return o3d.io.read_point_cloud(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data", nargs="?", default="../shared/data")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for name, rel, m in CASES:
        cloud = load(os.path.join(args.data, rel))
        cloud.farthest_point_down_sample(m)  # warm-up
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            out = cloud.farthest_point_down_sample(m)
            times.append((time.perf_counter() - t0) * 1e3)
        assert len(out.points) == m
        row = {"name": f"fps/{name}/{m}/open3d", "points": len(cloud.points), "median_ms": statistics.median(times),
               "min_ms": min(times), "repeat": args.repeat}
        rows.append(row)
        print(f"{row['name']:<24} N={row['points']:<7} median {row['median_ms']:9.2f} ms  min {row['min_ms']:9.2f} ms")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"open3d": o3d.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
