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
    # Debian's python3-open3d lives in the system interpreter's dist-packages; CMake may have found another
    # python3 (pyenv, a venv) that cannot see it. Re-run this file under the system one when that can import it.
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


class Open3dFpsTest(unittest.TestCase):
    def setUp(self):
        # Built only with S3D_BUILD_IO (it reads the PLY with s3d::io): a configuration without it has no helper.
        self.dump = os.environ.get("S3D_POINTS_FPS_DUMP")
        if not self.dump:
            self.skipTest("points_fps_dump is not built in this configuration (S3D_BUILD_IO=OFF)")
        if o3d is None:
            if os.environ.get("CI") == "true":
                self.fail("open3d is required under CI (python3-open3d, scripts/setup.sh): " + IMPORT_ERROR)
            self.skipTest("open3d not importable (apt-get install python3-open3d): " + IMPORT_ERROR)
        self.assertTrue(os.access(self.dump, os.X_OK), "S3D_POINTS_FPS_DUMP must name points_fps_dump")
        self.path = os.path.join(os.environ.get("S3D_DATA_DIR", "../shared/data"), BUNNY)
        if not os.path.exists(self.path):
            if os.environ.get("CI") == "true":
                self.fail("real data missing under CI: " + self.path)
            self.skipTest("real data not found: " + self.path)

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
