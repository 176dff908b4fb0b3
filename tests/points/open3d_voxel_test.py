#!/usr/bin/env python3
"""Voxel-grid downsampling of s3d::points (CPU device, origin kMinBound, mean) equals Open3D's legacy
voxel_down_sample on the Stanford bunny and the KITTI scan.

Open3D (0.16, Debian python3-open3d) puts the grid at min_bound - v/2, indexes a point by
floor((p - voxel_min_bound) / v) in double, and averages each voxel's points in double in index order: the
rule docs/PC-SAMPLE.md states for kMinBound. Given the same fp32 points (the helper prints them as s3d::io read
them; Open3D's own ASCII reader would parse the text to double) and v as the float the library gets, the
centroids must be equal after rounding Open3D's doubles to fp32, as sets (Open3D's order is its hash map's).

Run by CTest (tests/python_tests.cmake) with S3D_POINTS_VOXEL_DUMP (tests/points/points_voxel_dump.cpp) and
S3D_DATA_DIR set. Skipped when open3d cannot be imported, a failure under CI=true.
"""
import subprocess
import sys
import unittest

from open3d_case import Open3dCase, o3d, use_an_interpreter_with_open3d

if __name__ == "__main__":
    use_an_interpreter_with_open3d()

try:
    import numpy as np
except ImportError:
    np = None

BUNNY = "pointclouds/stanford_bunny/bun_zipper.ply"
KITTI = "pointclouds/kitti_velodyne/000000.bin"


class Open3dVoxelTest(Open3dCase):
    DUMP_ENV = "S3D_POINTS_VOXEL_DUMP"

    def check(self, rel, voxel, expected_points):
        out = subprocess.run([self.dump, self.data_path(rel), repr(voxel), "min-bound"], capture_output=True, text=True,
                             timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        n, m = (int(x) for x in lines[0].split())
        self.assertEqual(n, expected_points)
        values = np.array([line.split() for line in lines[1:]], dtype=np.float32)
        points, ours = values[:n], values[n:]
        self.assertEqual(len(ours), m)
        cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points.astype(np.float64)))
        # The library gets v as fp32; Open3D computes with the double it is given: give it the same value.
        theirs = np.asarray(cloud.voxel_down_sample(float(np.float32(voxel))).points).astype(np.float32)
        print(f"{rel} v={voxel}: s3d {m} voxels, Open3D {len(theirs)}", file=sys.stderr)
        self.assertEqual(len(theirs), m)
        key = lambda a: a[np.lexsort((a[:, 2], a[:, 1], a[:, 0]))]  # noqa: E731
        np.testing.assert_array_equal(key(ours), key(theirs))

    def test_bunny(self):
        self.check(BUNNY, 0.002, 35947)
        self.check(BUNNY, 0.005, 35947)

    def test_kitti(self):
        self.check(KITTI, 0.1, 115384)
        self.check(KITTI, 0.25, 115384)


if __name__ == "__main__":
    unittest.main()
