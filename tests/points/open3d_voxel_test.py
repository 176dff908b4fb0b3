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
import os
import subprocess
import sys
import unittest

SYSTEM_PYTHON = "/usr/bin/python3"


def open3d_importable(python):
    try:
        return subprocess.run([python, "-c", "import open3d"], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


if __name__ == "__main__":
    # Debian's python3-open3d lives in the system interpreter's dist-packages (see open3d_fps_test.py).
    try:
        import open3d  # noqa: F401
    except ImportError:
        if (os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON)
                and os.access(SYSTEM_PYTHON, os.X_OK) and open3d_importable(SYSTEM_PYTHON)):
            os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON] + sys.argv)

try:
    import numpy as np
    import open3d as o3d
except ImportError as e:
    o3d = None
    IMPORT_ERROR = str(e)

BUNNY = "pointclouds/stanford_bunny/bun_zipper.ply"
KITTI = "pointclouds/kitti_velodyne/000000.bin"


class Open3dVoxelTest(unittest.TestCase):
    def setUp(self):
        self.dump = os.environ.get("S3D_POINTS_VOXEL_DUMP")
        if not self.dump:
            self.skipTest("points_voxel_dump is not built in this configuration (S3D_BUILD_IO=OFF)")
        if o3d is None:
            if os.environ.get("CI") == "true":
                self.fail("open3d is required under CI (python3-open3d, scripts/setup.sh): " + IMPORT_ERROR)
            self.skipTest("open3d not importable (apt-get install python3-open3d): " + IMPORT_ERROR)
        self.assertTrue(os.access(self.dump, os.X_OK), "S3D_POINTS_VOXEL_DUMP must name points_voxel_dump")

    def path(self, rel):
        path = os.path.join(os.environ.get("S3D_DATA_DIR", "../shared/data"), rel)
        if not os.path.exists(path):
            if os.environ.get("CI") == "true":
                self.fail("real data missing under CI: " + path)
            self.skipTest("real data not found: " + path)
        return path

    def check(self, rel, voxel, expected_points):
        out = subprocess.run([self.dump, self.path(rel), repr(voxel), "min-bound"], capture_output=True, text=True,
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
