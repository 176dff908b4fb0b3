"""Shared by the tests that compare s3d::points with Open3D (open3d_fps_test.py, open3d_voxel_test.py): the
system interpreter when only it can import Debian's python3-open3d, and a TestCase base that finds the dump
helper and the real data (skipped when absent, a failure under CI=true)."""
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


def use_an_interpreter_with_open3d():
    """Debian's python3-open3d lives in the system interpreter's dist-packages; CMake may have found another
    python3 (pyenv, a venv) that cannot see it. Re-runs the calling script under the system one when that
    can import it."""
    try:
        import open3d  # noqa: F401
    except ImportError:
        if (os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON)
                and os.access(SYSTEM_PYTHON, os.X_OK) and open3d_importable(SYSTEM_PYTHON)):
            os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON] + sys.argv)


try:
    import open3d as o3d
    IMPORT_ERROR = ""
except ImportError as e:
    o3d = None
    IMPORT_ERROR = str(e)


class Open3dCase(unittest.TestCase):
    """`DUMP_ENV` names the variable holding the dump helper's path (built only with S3D_BUILD_IO, since it
    reads clouds with s3d::io: a configuration without it has no helper)."""
    DUMP_ENV = ""

    def setUp(self):
        self.dump = os.environ.get(self.DUMP_ENV)
        if not self.dump:
            self.skipTest("%s is not set: the dump helper is not built in this configuration (S3D_BUILD_IO=OFF)"
                          % self.DUMP_ENV)
        if o3d is None:
            if os.environ.get("CI") == "true":
                self.fail("open3d is required under CI (python3-open3d, scripts/setup.sh): " + IMPORT_ERROR)
            self.skipTest("open3d not importable (apt-get install python3-open3d): " + IMPORT_ERROR)
        self.assertTrue(os.access(self.dump, os.X_OK), "%s must name an executable" % self.DUMP_ENV)

    def data_path(self, rel):
        path = os.path.join(os.environ.get("S3D_DATA_DIR", "../shared/data"), rel)
        if not os.path.exists(path):
            if os.environ.get("CI") == "true":
                self.fail("real data missing under CI: " + path)
            self.skipTest("real data not found: " + path)
        return path
