#!/usr/bin/env python3
"""The FPS set of s3d::points (CPU device) equals Open3D's farthest_point_down_sample on the Stanford bunny.

Open3D (0.16, Debian python3-open3d) starts at index 0, keeps the running minimum of squared distances in double
and takes the first maximum, i.e. the smallest index among ties: the same rule as ours, though in double on the
text's values where ours is fp32 on the floats; the sets must still agree. It returns the selected points (not
indices) in ascending index order, so they are matched back to indices by their coordinates, which needs the
cloud to have no duplicate points (checked).

Run by CTest (tests/python_tests.cmake) with S3D_POINTS_FPS_DUMP (tests/points/points_fps_dump.cpp) and
S3D_DATA_DIR set. Skipped when open3d cannot be imported, a failure under CI=true.
"""
import subprocess
import unittest

from open3d_case import Open3dCase, o3d, use_an_interpreter_with_open3d

if __name__ == "__main__":
    use_an_interpreter_with_open3d()

try:
    import numpy as np
except ImportError:
    np = None

BUNNY = "pointclouds/stanford_bunny/bun_zipper.ply"


class Open3dFpsTest(Open3dCase):
    DUMP_ENV = "S3D_POINTS_FPS_DUMP"

    def setUp(self):
        super().setUp()
        self.path = self.data_path(BUNNY)

    def ours(self, m):
        out = subprocess.run([self.dump, self.path, str(m), "0"], capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        return [int(line) for line in out.stdout.split()]

    def check(self, m):
        cloud = o3d.io.read_point_cloud(self.path)
        # The library reads the floats; Open3D parses the ASCII text to double. Matching is on the fp32 values.
        points = np.asarray(cloud.points).astype(np.float32)
        self.assertEqual(len(points), 35947)
        index_of = {tuple(p): i for i, p in enumerate(points.tolist())}
        self.assertEqual(len(index_of), len(points), "duplicate points: coordinates cannot name an index")
        sampled = np.asarray(cloud.farthest_point_down_sample(m).points).astype(np.float32)
        theirs = [index_of[tuple(p)] for p in sampled.tolist()]
        self.assertEqual(theirs, sorted(theirs), "Open3D's points are expected in ascending index order")
        ours = self.ours(m)
        self.assertEqual(len(ours), m)
        self.assertEqual(ours[0], 0)
        self.assertEqual(len(set(ours)), m, "a cloud without duplicates never repeats a pick")
        only_ours, only_theirs = sorted(set(ours) - set(theirs)), sorted(set(theirs) - set(ours))
        self.assertEqual((only_ours, only_theirs), ([], []), f"M={m}: the FPS sets differ")

    def test_bunny_1024_set_equals_open3d(self):
        self.check(1024)

    def test_bunny_4096_set_equals_open3d(self):
        self.check(4096)


if __name__ == "__main__":
    unittest.main()
