#!/usr/bin/env python3
"""End-to-end tests of the stereo chain `sgm-depth --emit depth --output-dir D` -> `icp-fuse D` without
hand-typed numbers (docs/ICP-FUSE.md, "From a stereo camera"; docs/SGM-DEPTH.md, "The depth folder"):
sgm-depth writes camera-intrinsics.txt (3x3 K) and depth-scale.txt beside its depth maps, icp-fuse reads them.

The synthetic cases run on the repository's data/sample pair; the real one on the first 11 of the 51 KITTI
odometry pairs of
$S3D_DATA_DIR/stereo_sequences/kitti_odometry_02_f000-050 (skipped without them, failed under CI=true). It
checks what the chain carries (intrinsics, depth encoding, every frame with valid depth, the run completing
with an evaluation), never the tracking's accuracy.

Run as CTest does (tests/python_tests.cmake) with S3D_SGM_DEPTH, S3D_ICP_FUSE and S3D_DATA_DIR set:
stereo_chain_e2e_test.py [StereoChainTest.test_name ...].
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

SGM_DEPTH = os.environ.get("S3D_SGM_DEPTH", "")
ICP_FUSE = os.environ.get("S3D_ICP_FUSE", "")
SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "sample")
KITTI = os.path.join(os.environ.get("S3D_DATA_DIR", ""), "stereo_sequences", "kitti_odometry_02_f000-050")
ENV = dict(os.environ, OMP_WAIT_POLICY="passive")
# The sample pair: 320x240, disparities 8..40 px; with f = 300 px and B = 0.1 m, depth 0.75..3.75 m.
SAMPLE_CALIB = "f=300,b=0.1"
SAMPLE_K = (300.0, 300.0, 159.5, 119.5)  # no cx/cy in the calibration: the image centre
# The KITTI odometry calib.txt's rectified left camera (its MANIFEST.md).
KITTI_K = (718.856, 718.856, 607.1928, 185.2157)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, env=ENV, timeout=kw.pop("timeout", 280), **kw)


def records(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def read_png16(path):
    """(width, height, values) of a 16-bit grey PNG (any of the five row filters)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path + ": not a PNG"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, bits, colour = struct.unpack(">IIBB", body[:10])
            assert (bits, colour) == (16, 0), "%s: %d-bit colour type %d, not 16-bit grey" % (path, bits, colour)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, bpp = zlib.decompress(idat), 2 * width, 2
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = row[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                row[i] = (row[i] + a) & 255
            elif kind == 2:
                row[i] = (row[i] + b) & 255
            elif kind == 3:
                row[i] = (row[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(struct.unpack(">%dH" % width, bytes(row)))
        prev = row
    return width, height, [v for r in rows for v in r]


def read_pfm(path):
    """(width, height, values top row first) of a 1-channel PFM."""
    with open(path, "rb") as f:
        data = f.read()
    head = data.split(b"\n", 3)
    assert head[0] == b"Pf", path + ": not a 1-channel PFM"
    width, height = (int(v) for v in head[1].split())
    scale = float(head[2])
    v = struct.unpack(("<" if scale < 0 else ">") + "%df" % (width * height), head[3][:4 * width * height])
    rows = [v[y * width:(y + 1) * width] for y in range(height)]
    return width, height, [x for r in reversed(rows) for x in r]


def kitti_poses_to_tum(poses_txt, out):
    """KITTI 3x4 camera-to-world poses -> TUM `t tx ty tz qx qy qz qw` with t = index / 10 s: the loop
    docs/ICP-FUSE.md shows ("From a stereo camera")."""
    with open(out, "w") as o:
        for i, line in enumerate(open(poses_txt)):
            m = [float(v) for v in line.split()]
            R = [m[0:3], m[4:7], m[8:11]]
            if R[0][0] + R[1][1] + R[2][2] > 0:
                s = 2 * math.sqrt(1 + R[0][0] + R[1][1] + R[2][2])
                q = [(R[2][1] - R[1][2]) / s, (R[0][2] - R[2][0]) / s, (R[1][0] - R[0][1]) / s, s / 4]
            else:
                a = max(range(3), key=lambda j: R[j][j])
                b, c = (a + 1) % 3, (a + 2) % 3
                s = 2 * math.sqrt(1 + R[a][a] - R[b][b] - R[c][c])
                q = [0, 0, 0, (R[c][b] - R[b][c]) / s]
                q[a], q[b], q[c] = s / 4, (R[a][b] + R[b][a]) / s, (R[a][c] + R[c][a]) / s
            print("%.6f %.9f %.9f %.9f %.9f %.9f %.9f %.9f" % (i / 10, m[3], m[7], m[11], *q), file=o)


class StereoChainTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="s3d-chain-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def sgm(self, *args, expect=0):
        r = run([SGM_DEPTH, "--device", "cpu", "--json", *args])
        self.assertEqual(r.returncode, expect, r.stderr)
        return records(r.stdout)

    def sample_depth(self, out, *args, expect=0, left="left.png"):
        """sgm-depth --emit depth of the sample pair into `out` (the left image may be a copy named `left`)."""
        l = os.path.join(SAMPLE, "left.png")
        if left != "left.png":
            l = self.path(left)
            shutil.copyfile(os.path.join(SAMPLE, "left.png"), l)
        return self.sgm("-D", "48", l, os.path.join(SAMPLE, "right.png"), "--emit", "depth", "--output-dir", out,
                        *args, expect=expect)

    def fuse(self, seq, *args, expect=0):
        """icp-fuse over `seq` on the CPU (small volume, trajectory only): (item record, frames.jsonl records)."""
        out = self.path("run_" + os.path.basename(seq))
        r = run([ICP_FUSE, "--device", "cpu", seq, "-o", out, "--emit", "trajectory", "--json", *args])
        self.assertEqual(r.returncode, expect, r.stderr)
        item = records(r.stdout)[0]
        with open(os.path.join(out, "frames.jsonl")) as f:
            return item, records(f.read())

    def text(self, *parts):
        with open(self.path(*parts)) as f:
            return f.read()

    def assert_intrinsics(self, record, k, source_suffix):
        got = record["intrinsics"]
        for key, want in zip(("fx", "fy", "cx", "cy"), k):
            self.assertAlmostEqual(got[key], want, delta=abs(want) * 1e-6, msg=key)  # the engine's floats
        self.assertTrue(got["source"].endswith(source_suffix), got["source"])

    def test_png_depth_under_output_dir_is_a_png_named_png_that_icp_fuse_reads(self):
        # --format png used to write NAME_depth.pfm files holding millimetres with 0 as invalid, which icp-fuse
        # then read as a PFM in metres: 51 frames with "no valid depth".
        recs = self.sample_depth(self.path("png"), "--calib", SAMPLE_CALIB, "--format", "png")
        self.assertEqual(recs[0]["outputs"], [{"emit": "depth", "path": self.path("png", "left_depth.png")}])
        self.assertEqual(sorted(os.listdir(self.path("png"))),
                         ["camera-intrinsics.txt", "depth-scale.txt", "left_depth.png"])
        self.assertEqual(self.text("png", "depth-scale.txt").split("\n")[1], "1000")
        # The PNG holds millimetres, 0 where the PFM of the same pair holds +inf (or beyond 65.535 m).
        self.sample_depth(self.path("pfm"), "--calib", SAMPLE_CALIB)
        self.assertEqual(self.text("pfm", "depth-scale.txt").split("\n")[1], "1")
        w, h, mm = read_png16(self.path("png", "left_depth.png"))
        self.assertEqual((w, h), read_pfm(self.path("pfm", "left_depth.pfm"))[:2])
        metres = read_pfm(self.path("pfm", "left_depth.pfm"))[2]
        valid = 0
        for v, z in zip(mm, metres):
            if math.isfinite(z) and z * 1000 < 65535.5:
                self.assertLessEqual(abs(v - z * 1000), 0.5 + 1e-3 * z * 1000, (v, z))
                valid += 1
            else:
                self.assertEqual(v, 0, z)
        self.assertGreater(valid, w * h // 2)
        # icp-fuse reads both folders without --intrinsics: the same valid pixels, the sample's camera.
        for folder in ("png", "pfm"):
            item, frames = self.fuse(self.path(folder), "--volume-resolution", "32")
            self.assertEqual(item["layout"], "sgm-depth")
            self.assert_intrinsics(item, SAMPLE_K, os.path.join(folder, "camera-intrinsics.txt"))
            self.assertEqual(item["depth_scale"], 1000.0 if folder == "png" else 1.0)
            self.assertEqual((item["unreadable"], item["invalid"]), (0, 0))
            self.assertEqual(frames[0]["valid_pixels"], valid, folder)

    def test_depth_scale_of_a_png_folder_reaches_icp_fuse(self):
        self.sample_depth(self.path("tum"), "--calib", SAMPLE_CALIB, "--format", "png", "--depth-scale", "tum")
        self.assertEqual(self.text("tum", "depth-scale.txt").split("\n")[1], "5000")
        self.sample_depth(self.path("pfm"), "--calib", SAMPLE_CALIB)
        item, frames = self.fuse(self.path("tum"), "--volume-resolution", "32")
        self.assertEqual(item["depth_scale"], 5000.0)
        _, pfm_frames = self.fuse(self.path("pfm"), "--volume-resolution", "32")
        self.assertGreater(frames[0]["valid_pixels"], 0)
        self.assertEqual(frames[0]["valid_pixels"], pfm_frames[0]["valid_pixels"])
        # --depth-scale still wins over the folder's file.
        item, _ = self.fuse(self.path("tum"), "--volume-resolution", "32", "--depth-scale", "1000", "--overwrite")
        self.assertEqual(item["depth_scale"], 1000.0)

    def test_the_folder_files_are_written_once_and_agree_with_every_item(self):
        calib_a = self.path("a.txt")
        with open(calib_a, "w") as f:
            f.write("focal_px=300 baseline_m=0.1 cx=160 cy=120\n")
        # Two items, one calibration: one K, both items ok.
        recs = self.sample_depth(self.path("one"), "--calib", calib_a)
        self.assertEqual(self.text("one", "camera-intrinsics.txt"), "300 0 160\n0 300 120\n0 0 1\n")
        recs = self.sample_depth(self.path("one"), "--calib", calib_a, left="second.png")
        self.assertEqual(recs[0]["status"], "ok")
        # A later run with another calibration into the same folder: that item fails, the file stays ...
        recs = self.sample_depth(self.path("one"), "--calib", "f=301,b=0.1", left="third.png", expect=1)
        self.assertIn("camera-intrinsics.txt: says fx 300 fy 300 cx 160 cy 120", recs[0]["error"])
        self.assertIn("--overwrite", recs[0]["error"])
        self.assertFalse(os.path.exists(self.path("one", "third_depth.pfm")))
        self.assertEqual(self.text("one", "camera-intrinsics.txt"), "300 0 160\n0 300 120\n0 0 1\n")
        # ... unless --overwrite.
        self.sample_depth(self.path("one"), "--calib", "f=301,b=0.1", "--overwrite", left="third.png")
        self.assertEqual(self.text("one", "camera-intrinsics.txt"), "301 0 159.5\n0 301 119.5\n0 0 1\n")
        # One run, two calibrations into one folder (a manifest's per-item `calib`): the later item fails.
        left, right = os.path.join(SAMPLE, "left.png"), os.path.join(SAMPLE, "right.png")
        manifest = self.path("m.jsonl")
        with open(manifest, "w") as f:
            for name, calib in (("x", calib_a), ("y", "f=400,b=0.1"), ("z", calib_a)):
                f.write(json.dumps({"left": left, "right": right, "calib": calib, "name": name}) + "\n")
        recs = self.sgm("-D", "48", "--manifest", manifest, "--emit", "depth", "--output-dir", self.path("two"),
                        "--prefetch", "1", expect=1)
        self.assertEqual([r["status"] for r in recs[:3]], ["ok", "failed", "ok"])
        self.assertIn("an earlier item of this run wrote fx 300 fy 300 cx 160 cy 120", recs[1]["error"])
        self.assertEqual(sorted(os.listdir(self.path("two"))),
                         ["camera-intrinsics.txt", "depth-scale.txt", "x_depth.pfm", "z_depth.pfm"])
        # Names in subfolders: a folder each, with its own calibration.
        with open(manifest, "w") as f:
            for name, calib in (("p/x", calib_a), ("q/y", "f=400,b=0.1")):
                f.write(json.dumps({"left": left, "right": right, "calib": calib, "name": name}) + "\n")
        self.sgm("-D", "48", "--manifest", manifest, "--emit", "depth", "--output-dir", self.path("sub"))
        self.assertEqual(self.text("sub", "p", "camera-intrinsics.txt"), "300 0 160\n0 300 120\n0 0 1\n")
        self.assertEqual(self.text("sub", "q", "camera-intrinsics.txt"), "400 0 159.5\n0 400 119.5\n0 0 1\n")
        # One depth encoding per folder: PNG millimetres beside PFM metres is refused.
        recs = self.sample_depth(self.path("sub", "p"), "--calib", calib_a, "--format", "png", left="png.png",
                                 expect=1)
        self.assertIn("depth-scale.txt: says 1, but this item's depth maps have 1000", recs[0]["error"])
        # No temp file is left beside them.
        for folder in ("one", "two", "sub/p", "sub/q"):
            self.assertEqual([n for n in os.listdir(self.path(folder)) if n.startswith(".")], [], folder)

    def test_icp_fuse_takes_the_calibration_file_sgm_depth_took(self):
        # KITTI odometry's calib.txt: two unlabelled lines, P0 then P1 (the shared data's, byte for byte).
        calib = self.path("calib.txt")
        with open(calib, "w") as f:
            f.write("7.188560000000e+02 0.000000000000e+00 6.071928000000e+02 0.000000000000e+00 "
                    "0.000000000000e+00 7.188560000000e+02 1.852157000000e+02 0.000000000000e+00 "
                    "0.000000000000e+00 0.000000000000e+00 1.000000000000e+00 0.000000000000e+00\n"
                    "7.188560000000e+02 0.000000000000e+00 6.071928000000e+02 -3.861448000000e+02 "
                    "0.000000000000e+00 7.188560000000e+02 1.852157000000e+02 0.000000000000e+00 "
                    "0.000000000000e+00 0.000000000000e+00 1.000000000000e+00 0.000000000000e+00")
        recs = self.sample_depth(self.path("d"), "--calib", calib)
        self.assertEqual(recs[0]["calib"]["format"], "kitti")
        self.assertAlmostEqual(recs[0]["calib"]["baseline_m"], 386.1448 / 718.856, places=12)
        self.assertEqual(self.text("d", "camera-intrinsics.txt"), "718.856 0 607.1928\n0 718.856 185.2157\n0 0 1\n")
        os.remove(self.path("d", "camera-intrinsics.txt"))
        item, frames = self.fuse(self.path("d"), "--volume-resolution", "32", "--intrinsics", calib)
        self.assert_intrinsics(item, KITTI_K, "calib.txt")
        self.assertGreater(frames[0]["valid_pixels"], 0)

    def test_kitti_odometry_sequence_end_to_end(self):
        if not os.path.isdir(KITTI):
            if os.environ.get("CI") == "true":
                self.fail("real data missing under CI: " + KITTI)
            self.skipTest("real data not found: %s (set S3D_DATA_DIR)" % KITTI)
        lefts = sorted(os.listdir(os.path.join(KITTI, "image_l")))
        self.assertEqual(len(lefts), 51)
        # The first 11 pairs (1.1 s of driving), 4 in the sanitizer build (sgm-depth takes tens of seconds a pair
        # there): the chain is the same for all 51.
        lefts = lefts[:4 if os.environ.get("S3D_SANITIZED") == "1" else 11]
        n = len(lefts)
        # As docs/ICP-FUSE.md types it: a list of the pairs, sgm-depth into depth/, icp-fuse on depth/.
        pairs = self.path("pairs.txt")
        with open(pairs, "w") as f:
            for name in lefts:
                f.write("%s\t%s\n" % (os.path.join(KITTI, "image_l", name), os.path.join(KITTI, "image_r", name)))
        depth = self.path("depth")
        t0 = time.time()
        recs = self.sgm("--input-list", pairs, "--calib", os.path.join(KITTI, "calib.txt"), "--emit", "depth",
                        "--output-dir", depth)
        t_sgm = time.time() - t0
        self.assertEqual(recs[-1]["ok"], n)
        self.assertEqual(self.text("depth", "camera-intrinsics.txt"),
                         "718.856 0 607.1928\n0 718.856 185.2157\n0 0 1\n")
        self.assertEqual(self.text("depth", "depth-scale.txt").split("\n")[1], "1")
        gt = self.path("gt.txt")
        kitti_poses_to_tum(os.path.join(KITTI, "poses.txt"), gt)
        # Not about accuracy (the tracker is tuned elsewhere): frame to frame at 128^3 keeps it quick, and a
        # tracker that fails a sequence for its lost frames (--max-lost) is told to finish it.
        extra = ["--mode", "f2f", "--volume-resolution", "128"]
        if "--max-lost" in run([ICP_FUSE, "--help"]).stdout:
            extra += ["--max-lost", "1"]
        t0 = time.time()
        item, frames = self.fuse(depth, "--fps", "10", "--max-depth", "30", "--volume-size", "40", "--eval", gt,
                                 *extra)
        t_fuse = time.time() - t0
        sys.stderr.write("sgm-depth %.1f s, icp-fuse %.1f s\n" % (t_sgm, t_fuse))
        self.assertEqual(item["status"], "ok")
        self.assertEqual(item["layout"], "sgm-depth")
        self.assert_intrinsics(item, KITTI_K, os.path.join("depth", "camera-intrinsics.txt"))
        self.assertEqual((item["width"], item["height"]), (1241, 376))
        self.assertEqual(item["frames"], n)
        self.assertEqual((item["unreadable"], item["invalid"]), (0, 0))
        self.assertEqual(len(frames), n)
        for f in frames:
            self.assertNotIn(f["status"], ("invalid", "error"), f)
            self.assertGreater(f["valid_pixels"], 1241 * 376 // 5, f)  # within 30 m
        with open(os.path.join(self.path("run_depth"), "trajectory.txt")) as f:
            self.assertEqual(len(f.read().splitlines()), n)
        # Evaluated against every pose of poses.txt (timestamps index / 10 on both sides); no accuracy asserted.
        self.assertEqual(item["eval"]["groundtruth"], gt)
        self.assertEqual(item["eval"]["ate_m"]["pairs"], n)
        # With the left images and the photometric term (docs/ICP-FUSE.md's last command): no frame is lost, the
        # first step starts from matched features (no motion is known yet), and every step is the car's within
        # 5 cm (measured: 1-2.5 cm; from the last pose alone the first steps came out 0.04-0.75 m for 1 m).
        item, frames = self.fuse(depth, "--fps", "10", "--max-depth", "30", "--volume-size", "40", "--eval", gt,
                                 "--images", os.path.join(KITTI, "image_l"), "--photometric", "0.02",
                                 "--depth-noise", "stereo:0.5372", "--max-step", "2,10", "--min-inliers", "0.05",
                                 "--mode", "f2f", "--volume-resolution", "128", "--overwrite")
        self.assertEqual(item["status"], "ok")
        self.assertEqual([f["status"] for f in frames if f["status"] == "lost"], [])
        self.assertEqual([f["index"] for f in frames if f.get("start") == "features"], [1])
        with open(gt) as f:
            truth = [[float(v) for v in line.split()[1:4]] for line in f.read().splitlines()][:n]
        with open(os.path.join(self.path("run_depth"), "trajectory.txt")) as f:
            est = [[float(v) for v in line.split()[1:4]] for line in f.read().splitlines()]
        for k in range(1, n):
            step_gt, step = math.dist(truth[k], truth[k - 1]), math.dist(est[k], est[k - 1])
            self.assertLess(abs(step - step_gt), 0.05, "step %d: %.3f m, the car's %.3f m" % (k, step, step_gt))

if __name__ == "__main__":
    if not SGM_DEPTH or not ICP_FUSE:
        sys.exit(__doc__)
    unittest.main(argv=[sys.argv[0], "-v", *sys.argv[1:]])
