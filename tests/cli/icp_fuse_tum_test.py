#!/usr/bin/env python3
"""icp-fuse on real TUM fr1_rpy frames where the camera turns towards the far side of the room (frames 20-69:
up to 9 m of depth, a third of it beyond 3 m): the sparse volume tracks every frame, with an ATE that a broken
model cannot reach, because the truncation grows with depth (docs/ICP-FUSE.md, Truncation); with a constant
truncation the far surfaces break up and the same frames are lost.

Run by CTest (tests/python_tests.cmake) with S3D_ICP_FUSE and S3D_DATA_DIR set. Without the real data the test is
skipped (failed under CI=true); in the sanitizer build it is skipped (the release build's tests run it: the 300
real frames take minutes there).
"""
import json
import os
import subprocess

from tool_case import ToolCase, run_tests

TUM = os.path.join(os.environ.get("S3D_DATA_DIR", ""), "rgbd", "tum_fr1_rpy_f000-299")
RUN = ["--intrinsics", "517.3,516.5,318.6,255.3", "--frames", "20:70", "--device", "cpu", "--volume", "sparse",
       "--emit", "trajectory", "--eval", "auto", "--json", "--max-lost", "1"]


class IcpFuseTumTest(ToolCase):
    prefix = "s3d-icp-tum-"

    def setUp(self):
        super().setUp()
        if not os.path.exists(TUM):
            if os.environ.get("CI") == "true":
                self.fail("TUM fr1_rpy frames missing under CI: %r" % TUM)
            self.skipTest("TUM fr1_rpy frames not found: %r" % TUM)
        if os.environ.get("S3D_SANITIZED") == "1":
            self.skipTest("sanitizer build: the release build's tests run the 100 real frames")

    def fuse(self, name, *extra):
        """Lost frames and ATE (m) of one run into `name`."""
        r = subprocess.run([self.exe, TUM, *RUN, "-o", self.path(name), *extra], capture_output=True, text=True,
                           timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        summary = self.records(r.stdout)[-1]
        with open(self.path(name, "frames.jsonl")) as f:
            frames = [json.loads(line) for line in f]
        self.assertEqual(len(frames), 50)
        return sum(fr["status"] == "lost" for fr in frames), summary["eval"]["ate_rmse_m"]

    def test_sparse_model_holds_the_far_view(self):
        lost, ate = self.fuse("grown")
        self.assertEqual(lost, 0)
        self.assertLess(ate, 0.1)  # measured 0.062
        # The same frames with the truncation constant: lost frames and a broken trajectory (measured 13, 0.23 m).
        lost, ate = self.fuse("constant", "--truncation-growth", "0")
        self.assertTrue(lost > 0 or ate > 0.1, (lost, ate))

    def test_the_defaults_meet_the_documented_targets(self):
        # docs/ACCURACY.md: all 300 frames, `icp-fuse SEQ --eval auto` (frame to model, the dense cube, TUM's depth
        # intrinsics): 0 lost, ATE 0.0242 m against a target of 0.025 m. The CPU backend gives the same bits on every
        # machine (and CUDA), so a change that moves the result past the target fails here.
        r = subprocess.run([self.exe, TUM, "--device", "cpu", "--emit", "trajectory", "--eval", "auto", "--json",
                            "-o", self.path("defaults")], capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        item = self.records(r.stdout)[0]
        self.assertEqual(item["lost"], 0)
        self.assertLess(item["eval"]["ate_m"]["rmse"], 0.025)

    def test_a_tum_folder_takes_the_benchmarks_depth_intrinsics(self):
        r = subprocess.run([self.exe, TUM, "--frames", "0:3", "--device", "cpu", "--emit", "trajectory", "--json",
                            "-o", self.path("default")], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        item = self.records(r.stdout)[0]
        self.assertEqual(item["intrinsics"], {"fx": 525, "fy": 525, "cx": 319.5, "cy": 239.5, "source": "tum"})
        # Named on the command line, the same (another image size is an error: test_io_image_geometry).
        r = subprocess.run([self.exe, TUM, "--frames", "0:3", "--device", "cpu", "--intrinsics", "tum", "--emit",
                            "trajectory", "--json", "-o", self.path("named")], capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.records(r.stdout)[0]["intrinsics"]["source"], "tum")


if __name__ == "__main__":
    run_tests("S3D_ICP_FUSE", __doc__)
