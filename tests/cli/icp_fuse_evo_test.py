#!/usr/bin/env python3
"""icp-fuse's evaluation beside evo itself (MichaelGrupp/evo, PyPI `evo`, installed by scripts/setup.sh into
.venv-evo): on real TUM fr1_rpy frames, every block icp-fuse prints (APE, RPE per frame) has evo_ape's /
evo_rpe's title and the same statistics to 1e-6, for each alignment and several pose relations; evo_res reads
the --save-results archive, whose arrays equal the ones evo_ape saves; --trajectory-format kitti holds the same
poses as the TUM trajectory.

Run by CTest (tests/python_tests.cmake) with S3D_ICP_FUSE, S3D_EVO_BIN (evo's bin folder) and S3D_DATA_DIR set.
Without evo or the real data a test is skipped (failed under CI=true).
"""
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import zipfile

from tool_case import ToolCase, run_tests

TUM = os.path.join(os.environ.get("S3D_DATA_DIR", ""), "rgbd", "tum_fr1_rpy_f000-299")
EVO_BIN = os.environ.get("S3D_EVO_BIN", "")
# Frame to frame on the CPU (no volume): a few seconds; fewer frames in a sanitizer build.
FRAMES = "0:16" if os.environ.get("S3D_SANITIZED") == "1" else "0:40"
RUN = ["--intrinsics", "517.3,516.5,318.6,255.3", "--frames", FRAMES, "--device", "cpu", "--mode", "f2f"]
EVO_ALIGN = {"se3": ["-a"], "sim3": ["-as"], "none": []}
# (alignment, pose relation) pairs compared with evo: every alignment and every relation; two in a sanitizer
# build, where each run of both tools takes ten times as long.
CASES = [("se3", "trans_part"), ("sim3", "angle_deg"), ("none", "full"), ("se3", "rot_part"), ("none", "angle_rad")]
if os.environ.get("S3D_SANITIZED") == "1":
    CASES = CASES[:2]
STATS = ["max", "mean", "median", "min", "rmse", "sse", "std"]


def blocks(text):
    """{title: {stat: value}} of every evo-style block in `text`: title lines (after an empty line or the start),
    an empty line, the 7 stats."""
    lines = text.splitlines()
    out = {}
    for i in range(len(lines) - 7):
        rows = [line.split("\t") for line in lines[i + 1:i + 8]]
        if lines[i] == "" and all(len(r) == 2 and r[0].strip() == s for r, s in zip(rows, STATS)):
            start = i
            while start > 0 and lines[start - 1] != "":
                start -= 1
            title = "\n".join(lines[start:i])
            out[title] = {r[0].strip(): float(r[1]) for r in rows}
    return out


class IcpFuseEvoTest(ToolCase):
    prefix = "s3d-icp-evo-"

    def setUp(self):
        super().setUp()
        for what, path in (("TUM fr1_rpy frames", TUM), ("evo (scripts/setup.sh: .venv-evo)", EVO_BIN)):
            if not path or not os.path.exists(path):
                if os.environ.get("CI") == "true":
                    self.fail("%s missing under CI: %r" % (what, path))
                self.skipTest("%s not found: %r" % (what, path))

    def fuse(self, *extra, emit="trajectory", evaluate=True):
        r = subprocess.run([self.exe, TUM, *RUN, "--emit", emit, *(["--eval", "auto"] if evaluate else []),
                            "--output-dir", self.dir, "--overwrite", *extra],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout, os.path.join(self.dir, os.path.basename(TUM))

    def evo(self, tool, *args):
        r = subprocess.run([os.path.join(EVO_BIN, tool), *args], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, MPLBACKEND="Agg"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # evo's first run in a home without ~/.evo prints a notice ("Initialized new .../settings.json") before its
        # output, on a fresh machine into whichever test calls it first: not part of the result.
        return "".join(line for line in r.stdout.splitlines(keepends=True)
                       if not re.search(r"Initialized new .*settings\.json", line))

    def assert_same_blocks(self, ours, theirs):
        self.assertEqual(len(theirs), 1, theirs)
        title, stats = next(iter(theirs.items()))
        self.assertIn(title, ours, "evo's title %r not among ours %r" % (title, list(ours)))
        for s in STATS:
            self.assertAlmostEqual(ours[title][s], stats[s], delta=1.01e-6, msg="%s %s" % (title, s))

    def test_blocks_equal_evo_for_each_alignment_and_relation(self):
        gt = os.path.join(TUM, "groundtruth.txt")
        for align, relation in CASES:
            with self.subTest(align=align, relation=relation):
                out, folder = self.fuse("--eval-align", align, "--eval-relation", relation)
                ours = blocks(out)
                self.assertEqual(len(ours), 2, out)  # APE and RPE per frame (the path is shorter than 1 m)
                est = os.path.join(folder, "trajectory.txt")
                self.assert_same_blocks(ours, blocks(self.evo("evo_ape", "tum", gt, est, "-r", relation,
                                                              *EVO_ALIGN[align])))
                self.assert_same_blocks(ours, blocks(self.evo("evo_rpe", "tum", gt, est, "-r", relation,
                                                              "--delta", "1", "--delta_unit", "f",
                                                              *EVO_ALIGN[align])))
                record = [json.loads(line) for line in open(os.path.join(folder, "frames.jsonl"))]
                self.assertTrue(record)

    def test_results_archive_reads_in_evo_res_and_matches_evo_ape_own(self):
        _, folder = self.fuse("--save-results", "ape.zip", emit="trajectory,plot")  # each output to its own file
        with open(os.path.join(folder, "ape.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        ours = os.path.join(folder, "ape.zip")
        theirs = self.path("evo_ape.zip")
        self.evo("evo_ape", "tum", os.path.join(TUM, "groundtruth.txt"), os.path.join(folder, "trajectory.txt"),
                 "-a", "--save_results", theirs, "--no_warnings")
        table = self.evo("evo_res", ours, theirs)
        self.assertIn(os.path.basename(TUM), table)
        with zipfile.ZipFile(ours) as a, zipfile.ZipFile(theirs) as b:
            self.assertIsNone(a.testzip())
            info_a, info_b = json.loads(a.read("info.json")), json.loads(b.read("info.json"))
            self.assertEqual(info_a["title"], info_b["title"])
            self.assertEqual(info_a["label"], info_b["label"])
            sa, sb = json.loads(a.read("stats.json")), json.loads(b.read("stats.json"))
            self.assertEqual(sorted(sa), sorted(sb))
            for k in sa:
                self.assertAlmostEqual(sa[k], sb[k], delta=1e-9, msg=k)
            arrays = sorted(n for n in b.namelist() if n.endswith(".npy"))
            self.assertEqual(sorted(n for n in a.namelist() if n.endswith(".npy")), arrays)
        # The arrays, read by evo's own interpreter (numpy): equal element for element within 1e-9.
        check = ("import sys, zipfile, io, numpy as np\n"
                 "a, b = (zipfile.ZipFile(p) for p in sys.argv[1:3])\n"
                 "for n in sys.argv[3:]:\n"
                 "    x, y = (np.load(io.BytesIO(z.read(n))) for z in (a, b))\n"
                 "    assert x.shape == y.shape and x.dtype == y.dtype, (n, x.shape, y.shape, x.dtype, y.dtype)\n"
                 "    assert np.allclose(x, y, rtol=0, atol=1e-9), (n, np.abs(x - y).max())\n"
                 "print('equal', len(sys.argv) - 3)\n")
        r = subprocess.run([os.path.join(EVO_BIN, "python"), "-c", check, ours, theirs, *arrays],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("equal %d" % len(arrays), r.stdout)

    def test_kitti_trajectory_holds_the_tum_poses(self):
        _, folder = self.fuse()
        with open(os.path.join(folder, "trajectory.txt")) as f:
            tum = [[float(v) for v in line.split()] for line in f if line.strip()]
        _, folder = self.fuse("--trajectory-format", "kitti")
        with open(os.path.join(folder, "trajectory.txt")) as f:
            kitti = [[float(v) for v in line.split()] for line in f if line.strip()]
        self.assertEqual(len(kitti), len(tum))
        for t, k in zip(tum, kitti):
            self.assertEqual(len(k), 12)
            x, y, z, w = t[4:8]
            rot = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                   [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                   [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
            for r in range(3):
                self.assertAlmostEqual(k[4 * r + 3], t[1 + r], delta=2e-9)
                for c in range(3):
                    self.assertAlmostEqual(k[4 * r + c], rot[r][c], delta=1e-7)
        self.assertFalse(any(math.isnan(v) for row in kitti for v in row))

    def test_plots_with_and_without_ground_truth(self):
        def png_size(path):
            with open(path, "rb") as f:
                head = f.read(24)
            self.assertEqual(head[:8], b"\x89PNG\r\n\x1a\n", path)
            return struct.unpack(">II", head[16:24])

        _, folder = self.fuse(emit="trajectory,plot")
        self.assertEqual(sorted(os.listdir(folder)), ["ape.png", "frames.jsonl", "trajectory.png", "trajectory.txt"])
        self.assertEqual(png_size(os.path.join(folder, "trajectory.png")), (1000, 800))
        self.assertEqual(png_size(os.path.join(folder, "ape.png")), (1000, 500))
        shutil.rmtree(folder)
        _, folder = self.fuse(emit="trajectory,plot", evaluate=False)  # no ground truth: the trajectory alone
        self.assertEqual(sorted(os.listdir(folder)), ["frames.jsonl", "trajectory.png", "trajectory.txt"])

    def test_usage_errors(self):
        for extra, evaluate, needle in ((["--save-results", "ape.zip"], False, "--save-results"),
                                        (["--save-results", "ape.txt"], True, ".zip"),
                                        (["--eval-align", "se2"], True, "--eval-align"),
                                        (["--eval-max-diff", "0"], True, "--eval-max-diff")):
            with self.subTest(extra=extra):
                r = subprocess.run([self.exe, TUM, *RUN, *(["--eval", "auto"] if evaluate else []), "--output-dir",
                                    self.dir, *extra], capture_output=True, text=True, timeout=120)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(needle, r.stderr)
                self.assertEqual(os.listdir(self.dir), [])


if __name__ == "__main__":
    run_tests("S3D_ICP_FUSE", __doc__)
