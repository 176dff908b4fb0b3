#!/usr/bin/env python3
"""End-to-end tests of icp-fuse (docs/ICP-FUSE.md): a few real 7-Scenes redkitchen frames of
$S3D_DATA_DIR/rgbd/ on the CPU with a small volume, and synthetic sequences (16-bit PNG and PFM written here
with zlib/struct) for bad frames, batches and usage errors.

Run as CTest does (tests/python_tests.cmake) with S3D_ICP_FUSE and S3D_DATA_DIR set:
icp_fuse_e2e_test.py [IcpFuseTest.test_name ...]. Without the real data a test that needs it is skipped
(failed under CI=true).
"""
import json
import math
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

EXE = os.environ.get("S3D_ICP_FUSE", "")
REDKITCHEN = os.path.join(os.environ.get("S3D_DATA_DIR", ""), "rgbd", "7scenes_redkitchen_f000-299")
ENV = dict(os.environ, OMP_WAIT_POLICY="passive")
SMALL = ["--device", "cpu", "--volume-resolution", "64"]


def png16(width, height, value):
    """A 16-bit grey PNG; value(x, y) gives each sample."""
    raw = b"".join(b"\x00" + b"".join(struct.pack(">H", value(x, y)) for x in range(width)) for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 16, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def pfm(width, height, value):
    """A little-endian 1-channel PFM (rows bottom to top); value(x, y) in metres, inf = invalid."""
    rows = [struct.pack("<%df" % width, *[value(x, y) for x in range(width)]) for y in range(height)]
    return b"Pf\n%d %d\n-1.0\n" % (width, height) + b"".join(reversed(rows))


def scene_depth(x, y, shift):
    """A tilted plane with a box on it, moved by `shift` pixels between frames (mm)."""
    d = 1500 + 4 * y + 2 * x
    if 20 + shift <= x < 40 + shift and 15 <= y < 35:
        d -= 300
    return d


def read_trajectory(path):
    poses = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            v = [float(t) for t in line.split()]
            assert len(v) == 8, line
            assert abs(math.sqrt(sum(q * q for q in v[4:])) - 1.0) < 1e-6, line
            poses.append(v)
    return poses


def ply_header(path):
    """(format, {element: count}, [property lines], header bytes, file size)."""
    with open(path, "rb") as f:
        data = f.read()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    counts, props, fmt = {}, [], None
    for line in data[:end].decode("latin-1").splitlines():
        w = line.split()
        if w[0] == "format":
            fmt = w[1]
        elif w[0] == "element":
            counts[w[1]] = int(w[2])
        elif w[0] == "property":
            props.append(" ".join(w[1:]))
    return fmt, counts, props, end, len(data)


class IcpFuseTest(unittest.TestCase):
    def setUp(self):
        if not EXE:
            self.fail("S3D_ICP_FUSE is not set (run through ctest)")
        self.dir = tempfile.mkdtemp(prefix="s3d-icp-fuse-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, *names):
        return os.path.join(self.dir, *names)

    def need_data(self):
        if not os.path.isdir(REDKITCHEN):
            if os.environ.get("CI") == "true":
                self.fail("real data missing under CI: " + REDKITCHEN)
            self.skipTest("real data not found: %s (set S3D_DATA_DIR)" % REDKITCHEN)

    def run_tool(self, *args, code=0):
        proc = subprocess.run([EXE, *args], cwd=self.dir, capture_output=True, timeout=280, env=ENV)
        if code is not None:
            self.assertEqual(proc.returncode, code, proc.stderr.decode())
        return proc

    def records(self, proc):
        return [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]

    def real_copy(self, name="seq", frames=6, intrinsics=True, color=False):
        """The first `frames` redkitchen frames in 7-Scenes layout (depth, pose, camera-intrinsics.txt; with
        `color` their colour images too)."""
        self.need_data()
        out = self.path(name)
        os.makedirs(out)
        for i in range(frames):
            for kind in ("depth.png", "pose.txt") + (("color.jpg",) if color else ()):
                shutil.copy(os.path.join(REDKITCHEN, "frame-%06d.%s" % (i, kind)), out)
        if intrinsics:
            shutil.copy(os.path.join(REDKITCHEN, "camera-intrinsics.txt"), out)
        return out

    def synthetic(self, name="syn", frames=4, width=64, height=48, kind="png"):
        out = self.path(name)
        os.makedirs(out)
        for i in range(frames):
            if kind == "png":
                data = png16(width, height, lambda x, y: scene_depth(x, y, i))
            else:
                data = pfm(width, height, lambda x, y: scene_depth(x, y, i) / 1000.0 if x > 0 else float("inf"))
            with open(os.path.join(out, "%04d.%s" % (i, kind)), "wb") as f:
                f.write(data)
        return out

    # outputs on real frames --------------------------------------------------------------------------
    def test_trajectory_mesh_and_frame_records(self):
        seq = self.real_copy(frames=6)
        proc = self.run_tool(*SMALL, seq, "-o", "out", "--json")
        recs = self.records(proc)
        self.assertEqual([r["type"] for r in recs], ["item", "summary"])
        item = recs[0]
        self.assertEqual(item["status"], "ok")
        self.assertEqual(item["layout"], "7scenes")
        self.assertEqual(item["timestamps"], "index/fps")
        self.assertEqual(item["frames"], 6)
        self.assertEqual((item["width"], item["height"]), (640, 480))
        self.assertEqual(item["intrinsics"]["fx"], 585)
        self.assertEqual(recs[1]["exit_code"], 0)
        poses = read_trajectory(self.path("out", "trajectory.txt"))
        self.assertEqual(len(poses), 6)
        for i, p in enumerate(poses):
            self.assertAlmostEqual(p[0], i / 30.0, places=5)  # a plain folder: frame index / 30
        with open(self.path("out", "frames.jsonl")) as f:
            frames = [json.loads(line) for line in f]
        self.assertEqual([fr["index"] for fr in frames], list(range(6)))
        self.assertEqual(frames[0]["status"], "first")
        for fr in frames:
            for key in ("status", "inliers", "inlier_ratio", "residual", "iterations", "ms", "timestamp", "file"):
                self.assertIn(key, fr)
            self.assertIn(fr["status"], ("first", "tracked", "recovered", "lost", "invalid"))
        fmt, counts, props, header, size = ply_header(self.path("out", "mesh.ply"))
        self.assertEqual(fmt, "binary_little_endian")
        self.assertEqual(props[:6], ["float x", "float y", "float z", "float nx", "float ny", "float nz"])
        self.assertEqual(props[-1].split()[-1], "vertex_indices")
        self.assertEqual(size, header + 24 * counts["vertex"] + 13 * counts["face"])
        self.assertEqual(item["mesh"], {"vertices": counts["vertex"], "triangles": counts["face"]})
        self.assertFalse(os.path.exists(self.path("out", "cloud.ply")))
        # only the outputs, no temp files left
        self.assertEqual(sorted(os.listdir(self.path("out"))), ["frames.jsonl", "mesh.ply", "trajectory.txt"])

    def test_the_first_step_starts_from_matched_features(self):
        """With colour images listed, the first step (no motion known yet) starts from the ORB match, even where
        the images are not otherwise read (trajectory only); --feature-start off, or no images: from the last pose."""
        def starts(seq, out, *args):
            self.run_tool(*SMALL, seq, "-o", out, "--emit", "trajectory", *args)
            with open(self.path(out, "frames.jsonl")) as f:
                return [fr["index"] for fr in map(json.loads, f) if fr.get("start") == "features"]
        with_images = self.real_copy("rgb", frames=4, color=True)
        self.assertEqual(starts(with_images, "on"), [1])
        self.assertEqual(starts(with_images, "off", "--feature-start", "off"), [])
        self.assertEqual(starts(self.real_copy("depth", frames=4), "none"), [])

    def test_colour_frames_give_a_coloured_mesh_and_cloud(self):
        seq = self.real_copy(frames=4, color=True)
        os.remove(os.path.join(seq, "frame-000001.color.jpg"))  # a frame without colour
        with open(os.path.join(seq, "frame-000002.color.jpg"), "wb") as f:
            f.write(b"\xff\xd8 not a jpeg")  # a colour image that does not decode
        proc = self.run_tool(*SMALL, seq, "-o", "out", "--json", "--emit", "trajectory,mesh,cloud")
        item = self.records(proc)[0]
        self.assertEqual((item["status"], item["color"], item["color_frames"]), ("ok", True, 2))
        with open(self.path("out", "frames.jsonl")) as f:
            frames = [json.loads(line) for line in f]
        self.assertEqual([fr["color"] for fr in frames], [True, False, False, True])
        self.assertIn("no colour image", frames[1]["color_error"])
        self.assertIn("frame-000002.color.jpg", frames[2]["color_error"])
        self.assertNotEqual(frames[2]["status"], "error")  # the depth was still tracked and fused
        self.assertIn("fused without colour", proc.stderr.decode())
        for name, stride in (("mesh.ply", 27), ("cloud.ply", 27)):
            fmt, counts, props, header, size = ply_header(self.path("out", name))
            self.assertEqual(props[6:9], ["uchar red", "uchar green", "uchar blue"], name)
            extra = 13 * counts.get("face", 0)
            self.assertEqual(size, header + stride * counts["vertex"] + extra, name)
            with open(self.path("out", name), "rb") as f:
                data = f.read()[header:header + stride * counts["vertex"]]
            colours = {data[i + 24:i + 27] for i in range(0, len(data), stride)}
            self.assertGreater(len(colours), 100, name)  # the kitchen's colours, not one fill value
        # --color off: plain geometry; --color on without colour images: the sequence fails, nothing written
        self.run_tool(*SMALL, seq, "-o", "plain", "--color", "off")
        self.assertNotIn("uchar red", ply_header(self.path("plain", "mesh.ply"))[2])
        bare = self.real_copy("bare", frames=2)
        proc = self.run_tool(*SMALL, bare, "-o", "none", "--color", "on", code=1)
        self.assertIn("lists no colour images", proc.stderr.decode())
        self.assertFalse(os.path.exists(self.path("none", "mesh.ply")))

    def test_eval_prints_ate_and_rpe(self):
        seq = self.real_copy(frames=6)
        proc = self.run_tool(*SMALL, seq, "-o", "out", "--eval", "auto", "--emit", "trajectory")
        out = proc.stdout.decode()
        self.assertIn("ATE RMSE", out)
        self.assertIn("RPE per frame", out)
        # the summary line, then evo's APE and RPE-per-frame blocks (the path is too short for one per metre)
        lines = out.splitlines()
        self.assertIn("ATE RMSE", lines[0])
        self.assertEqual(lines[1], "")
        self.assertEqual(lines[2:4], ["APE w.r.t. translation part (m)", "(with SE(3) Umeyama alignment)"])
        self.assertEqual([line.split("\t")[0].strip() for line in lines[5:12]],
                         ["max", "mean", "median", "min", "rmse", "sse", "std"])
        self.assertIn("RPE w.r.t. translation part (m)", lines)
        self.assertNotIn("for delta = 1.0 (m) using consecutive pairs", lines)
        # a TUM ground truth file, with --json: in the record, nothing else on stdout
        proc = self.run_tool(*SMALL, REDKITCHEN, "--frames", "0:6", "-o", "out2", "--eval",
                             os.path.join(REDKITCHEN, "groundtruth.txt"), "--emit", "trajectory", "--json",
                             "--eval-ranges", "0:3,3:")
        item = self.records(proc)[0]
        self.assertEqual([r["frames"] for r in item["eval"]["ate_ranges"]], ["0:3", "3:"])
        self.assertEqual([r["ate_m"]["pairs"] for r in item["eval"]["ate_ranges"]], [3, 3])
        ate = item["eval"]["ate_m"]
        self.assertEqual(ate["pairs"], 6)
        self.assertGreaterEqual(ate["rmse"], 0.0)
        self.assertLessEqual(ate["mean"], ate["rmse"] + 1e-12)
        self.assertEqual(item["eval"]["rpe_frame"]["unit"], "frames")
        self.assertEqual(item["eval"]["rpe_frame"]["translation_m"]["pairs"], 5)
        # evo's APE: 7-Scenes' stamps match exactly, so the same poses as the ATE, from the written trajectory
        evo = item["eval"]["evo"]
        self.assertEqual(evo["ape"]["count"], 6)
        self.assertAlmostEqual(evo["ape"]["stats"]["rmse"], ate["rmse"], delta=1e-6)
        self.assertEqual(evo["rpe_frame"]["count"], 5)
        self.assertIn("error", evo["rpe_m"])
        self.assertEqual(item["timestamps"], "list")  # the real folder has depth.txt
        # a ground truth that does not parse: a one-line error naming file:line, exit 1, no outputs
        with open(self.path("bad_gt.txt"), "w") as f:
            f.write("0 0 0 0 0 0 0 1\n1 2 3\n")
        proc = self.run_tool(*SMALL, seq, "-o", "out3", "--eval", "bad_gt.txt", code=1)
        err = proc.stderr.decode().strip().splitlines()
        self.assertEqual(len(err), 1, err)
        self.assertIn("bad_gt.txt:2:", err[0])
        self.assertFalse(os.path.exists(self.path("out3")))
        # --eval auto with one frame's pose file missing: the other frames are evaluated, with a warning
        os.remove(os.path.join(seq, "frame-000004.pose.txt"))
        proc = self.run_tool(*SMALL, seq, "-o", "out4", "--eval", "auto", "--emit", "trajectory", "--json")
        self.assertEqual(self.records(proc)[0]["eval"]["ate_m"]["pairs"], 5)
        self.assertIn("1 of 6 frames have no pose file", proc.stderr.decode())
        self.assertIn("frame-000004", proc.stderr.decode())

    # bad frames --------------------------------------------------------------------------------------
    def test_corrupt_truncated_wrong_size_and_empty_frames(self):
        seq = self.synthetic(frames=8)
        with open(os.path.join(seq, "0002.png"), "wb") as f:
            f.write(b"this is not a PNG file at all")
        with open(os.path.join(seq, "0003.png"), "rb") as f:
            data = f.read()
        with open(os.path.join(seq, "0003.png"), "wb") as f:
            f.write(data[: len(data) // 2])  # truncated
        with open(os.path.join(seq, "0004.png"), "wb") as f:
            f.write(png16(32, 24, lambda x, y: 1500))  # another size
        open(os.path.join(seq, "0005.png"), "wb").close()  # empty
        proc = self.run_tool(*SMALL, seq, "--intrinsics", "60,60,32,24", "-o", "out", "--json")
        item = self.records(proc)[0]
        self.assertEqual(item["status"], "ok")
        self.assertEqual(item["unreadable"], 4)
        self.assertEqual(sum(item[k] for k in ("first", "tracked", "recovered", "lost", "invalid")), 4)
        with open(self.path("out", "frames.jsonl")) as f:
            frames = [json.loads(line) for line in f]
        bad = {fr["index"]: fr for fr in frames if fr["status"] == "error"}
        self.assertEqual(sorted(bad), [2, 3, 4, 5])
        for i, fr in bad.items():
            self.assertTrue(fr["reason"].startswith(os.path.join(seq, "%04d.png" % i)), fr["reason"])
        self.assertIn("32x24 but the sequence's first frame is 64x48", bad[4]["reason"])
        self.assertEqual(len(read_trajectory(self.path("out", "trajectory.txt"))), 4)
        warnings = [l for l in proc.stderr.decode().splitlines() if l]
        self.assertEqual(len(warnings), 4, warnings)

    def test_sequence_without_any_readable_frame_fails_cleanly(self):
        seq = self.synthetic(frames=2)
        for name in os.listdir(seq):
            open(os.path.join(seq, name), "wb").close()
        proc = self.run_tool(*SMALL, seq, "--intrinsics", "60,60,32,24", "-o", "out", code=1)
        err = proc.stderr.decode().strip().splitlines()
        self.assertTrue(err[-1].startswith("icp-fuse: " + seq + ": no frame could be read"), err)
        self.assertFalse(os.path.exists(self.path("out")))
        # an empty folder: no frames at all
        os.makedirs(self.path("empty"))
        proc = self.run_tool(*SMALL, "empty", "--intrinsics", "60,60,32,24", "-o", "out", code=2)
        self.assertIn("no depth frames", proc.stderr.decode())

    def test_all_invalid_depth_fails_and_an_empty_mesh_is_a_warning(self):
        for name, depth in (("zero", 0), ("far", 9000)):
            os.makedirs(self.path(name))
            for i in range(3):
                with open(self.path(name, "%04d.png" % i), "wb") as f:
                    f.write(png16(64, 48, lambda x, y: depth))
        proc = self.run_tool(*SMALL, "zero", "--intrinsics", "60,60,32,24", "-o", "out", code=1)
        self.assertIn("zero: none of its 3 frames has enough valid depth", proc.stderr.decode())
        self.assertFalse(os.path.exists(self.path("out")))
        # a wall 9 m away, outside the 3 m cube: nothing is fused (the flat wall loses tracking, kept by --max-lost)
        proc = self.run_tool(*SMALL, "far", "--intrinsics", "60,60,32,24", "-o", "far_out", "--max-lost", "1",
                             "--json")
        self.assertIn("far: the mesh is empty", proc.stderr.decode())
        item = self.records(proc)[0]
        self.assertEqual(item["mesh"]["vertices"], 0)
        self.assertEqual(len(item["warnings"]), 1)

    def test_a_full_sparse_volume_is_counted_and_warned(self):
        seq = self.synthetic(frames=4)
        common = [*SMALL, seq, "--intrinsics", "60,60,32,24", "--volume", "sparse", "--json"]
        proc = self.run_tool(*common, "-o", "roomy")
        item = self.records(proc)[0]
        self.assertGreater(item["volume_blocks"], 0)
        self.assertEqual(item["volume_blocks_refused"], 0)
        self.assertNotIn("warnings", item)
        with open(self.path("roomy", "frames.jsonl")) as f:
            frames = [json.loads(line) for line in f]
        self.assertEqual(frames[-1]["blocks"], item["volume_blocks"])
        # a pool of 8 blocks: the first frame already asks for more
        proc = self.run_tool(*common, "-o", "tight", "--max-memory", "17K", "--max-lost", "1")
        item = self.records(proc)[0]
        self.assertEqual(item["status"], "ok")
        self.assertEqual(item["volume_blocks"], 8)
        self.assertGreater(item["volume_blocks_refused"], 0)
        self.assertIn("memory (--max-memory) was full from frame 0 (8 blocks)", item["warnings"][0])
        self.assertIn("raise --max-memory", proc.stderr.decode())

    def test_tum_folder_with_its_timestamps_and_scale(self):
        seq = self.path("tum")
        os.makedirs(os.path.join(seq, "depth"))
        stamps = ["1305031102.160407", "1305031102.194330", "1305031102.226738"]
        with open(os.path.join(seq, "depth.txt"), "w") as f:
            f.write("# depth maps\n# file: 'rgbd_dataset_freiburg1_xyz.bag'\n# timestamp filename\n")
            for i, t in enumerate(stamps):
                f.write("%s depth/%s.png\n" % (t, t))
                with open(os.path.join(seq, "depth", t + ".png"), "wb") as img:
                    img.write(png16(64, 48, lambda x, y: 5 * scene_depth(x, y, i)))  # x5000 per metre
        with open(os.path.join(seq, "rgb.txt"), "w") as f:
            f.write("# colour\n# \n# timestamp filename\n")
            for t in stamps:
                f.write("%.6f rgb/%s.png\n" % (float(t) + 0.01, t))
        proc = self.run_tool(*SMALL, seq, "--depth-scale", "tum", "--intrinsics", "60,60,32,24", "-o", "out",
                             "--json", "--emit", "trajectory")
        item = self.records(proc)[0]
        self.assertEqual((item["layout"], item["timestamps"]), ("tum", "list"))
        poses = read_trajectory(self.path("out", "trajectory.txt"))
        self.assertEqual(["%.6f" % p[0] for p in poses], stamps)
        with open(self.path("out", "frames.jsonl")) as f:
            first = json.loads(f.readline())
        self.assertEqual(first["valid_pixels"], 64 * 48)
        self.assertEqual(item["depth_scale"], 5000)
        # TUM's own depth.txt header sets 5000 without the flag; --depth-scale still wins over it.
        proc = self.run_tool(*SMALL, seq, "--intrinsics", "60,60,32,24", "-o", "guessed", "--json",
                             "--emit", "trajectory")
        self.assertEqual(self.records(proc)[0]["depth_scale"], 5000)
        with open(self.path("out", "trajectory.txt")) as a, open(self.path("guessed", "trajectory.txt")) as b:
            self.assertEqual(a.read(), b.read())
        proc = self.run_tool(*SMALL, seq, "--depth-scale", "mm", "--intrinsics", "60,60,32,24", "-o", "mm",
                             "--json", "--emit", "trajectory")
        self.assertEqual(self.records(proc)[0]["depth_scale"], 1000)
        # Without --intrinsics a TUM folder takes the benchmark's depth intrinsics, which are for 640x480 frames:
        # these 64x48 ones fail, with no outputs, saying so.
        proc = self.run_tool(*SMALL, seq, "-o", "default", "--json", "--emit", "trajectory", code=1)
        error = self.records(proc)[0]["error"]
        self.assertIn("640x480", error)
        self.assertIn("--intrinsics", error)
        self.assertFalse(os.path.exists(self.path("default", "trajectory.txt")))

    def test_manifest_names_and_per_sequence_intrinsics(self):
        a = self.synthetic("a", frames=2)
        with open(self.path("m.jsonl"), "w") as f:
            f.write(json.dumps({"input": a, "name": "first", "intrinsics": "61,61,32,24"}) + "\n")
            f.write(json.dumps({"input": a, "name": "second"}) + "\n")  # no intrinsics: this item fails
        proc = self.run_tool(*SMALL, "--manifest", "m.jsonl", "--output-dir", "runs", "--json", code=1)
        recs = self.records(proc)
        self.assertEqual([r["status"] for r in recs[:2]], ["ok", "failed"])
        self.assertEqual(recs[0]["intrinsics"]["fx"], 61)
        self.assertIn("--intrinsics", recs[1]["error"])
        self.assertTrue(os.path.exists(self.path("runs", "first", "trajectory.txt")))
        self.assertFalse(os.path.exists(self.path("runs", "second")))

    def test_pfm_sequence_from_sgm_depth(self):
        seq = self.synthetic(kind="pfm", frames=3)
        proc = self.run_tool(*SMALL, seq, "--intrinsics", "60,60,32,24", "-o", "out", "--json",
                             "--emit", "trajectory,cloud")
        item = self.records(proc)[0]
        self.assertEqual(item["layout"], "pfm")
        self.assertEqual(len(read_trajectory(self.path("out", "trajectory.txt"))), 3)
        fmt, counts, props, header, size = ply_header(self.path("out", "cloud.ply"))
        self.assertEqual(size, header + 24 * counts["vertex"])
        self.assertFalse(os.path.exists(self.path("out", "mesh.ply")))

    def test_frame_list_on_stdin_is_relative_to_the_working_directory(self):
        self.synthetic(frames=3)
        lines = "".join("%d.0 syn/%04d.png\n" % (i, i) for i in range(3))
        proc = subprocess.run([EXE, *SMALL, "-", "--intrinsics", "60,60,32,24", "-o", "out", "--json"], cwd=self.dir,
                              input=lines.encode(), capture_output=True, timeout=280, env=ENV)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode())
        item = self.records(proc)[0]
        self.assertEqual((item["layout"], item["frames"], item["unreadable"]), ("list", 3, 0))
        self.assertEqual([p[0] for p in read_trajectory(self.path("out", "trajectory.txt"))], [0.0, 1.0, 2.0])
        # messages name `-`, never the copy of stdin
        proc = subprocess.run([EXE, *SMALL, "-", "--intrinsics", "60,60,32,24", "-o", "bad"], cwd=self.dir,
                              input=b"0.0 syn/0000.png\nsyn/0001.png\n", capture_output=True, timeout=280, env=ENV)
        self.assertEqual(proc.returncode, 1, proc.stderr.decode())
        self.assertIn("-:2: expected `timestamp path`", proc.stderr.decode())
        self.assertNotIn("s3d-tmp", proc.stderr.decode())

    def test_print_config_then_config_reproduces_the_run(self):
        seq = self.synthetic(frames=3)
        args = [*SMALL, "--intrinsics", "60,60,32,24", "--mode", "f2f", "--max-step", "0.5,20", "--min-inliers", "0.1",
                "--depth-noise", "stereo:0.1", "--emit", "trajectory,cloud"]
        self.run_tool(seq, *args, "-o", "direct")
        config = self.run_tool(seq, *args, "-o", "again", "--print-config").stdout
        with open(self.path("run.toml"), "wb") as f:
            f.write(config)
        self.run_tool("--config", "run.toml", seq)
        for name in ("trajectory.txt", "cloud.ply"):
            with open(self.path("direct", name), "rb") as a, open(self.path("again", name), "rb") as b:
                self.assertEqual(a.read(), b.read(), name)

    # usage -------------------------------------------------------------------------------------------
    def test_missing_intrinsics_is_a_usage_error(self):
        seq = self.synthetic(frames=2)
        proc = self.run_tool(*SMALL, seq, "-o", "out", code=2)
        err = proc.stderr.decode().strip().splitlines()
        self.assertEqual(len(err), 1, err)
        self.assertIn("--intrinsics", err[0])
        self.assertFalse(os.path.exists(self.path("out")))
        # a K file works as well as fx,fy,cx,cy
        with open(self.path("K.txt"), "w") as f:
            f.write("60 0 32\n0 60 24\n0 0 1\n")
        proc = self.run_tool(*SMALL, seq, "-o", "out", "--intrinsics", "K.txt", "--json")
        self.assertEqual(self.records(proc)[0]["intrinsics"]["cx"], 32)
        # an OpenCV Q matrix (what sgm-depth reads): cx = -Q03, cy = -Q13, f = Q23
        with open(self.path("Q.dat"), "w") as f:
            f.write("1 0 0 -31.5\n0 1 0 -23.5\n0 0 0 60\n0 0 -10 0\n")
        proc = self.run_tool(*SMALL, seq, "-o", "outq", "--intrinsics", "Q.dat", "--json")
        k = self.records(proc)[0]["intrinsics"]
        self.assertEqual((k["fx"], k["fy"], k["cx"], k["cy"]), (60, 60, 31.5, 23.5))

    def test_noise_weighting_is_on_by_default_and_can_be_turned_off(self):
        seq = self.real_copy(frames=4)
        runs = {}
        for name, args in (("default", []), ("on", ["--noise-weighting", "on"]), ("off", ["--noise-weighting", "off"])):
            self.run_tool(*SMALL, seq, "-o", name, *args)
            runs[name] = read_trajectory(self.path(name, "trajectory.txt"))
            self.assertEqual(len(runs[name]), 4, name)
        self.assertEqual(runs["default"], runs["on"])
        self.assertNotEqual(runs["on"][1:], runs["off"][1:])  # the first pose is the fixed initial one
        for a, b in zip(runs["on"], runs["off"]):  # both track the same small motion
            self.assertLess(sum((x - y) ** 2 for x, y in zip(a[1:4], b[1:4])) ** 0.5, 0.01)

    def test_usage_errors(self):
        seq = self.synthetic(frames=2)
        k = ["--intrinsics", "60,60,32,24"]
        for args in (["--mode", "icp"], ["--frames", "5:2"], ["--frames", "x"], ["--icp-iterations", "1,2,3,4,5,6"],
                     ["--volume-resolution", "0"], ["--depth-scale", "-1"], ["--emit", "mesh,video"],
                     ["--eval-ranges", "0:2"], ["--eval", "auto", "--eval-ranges", "3:1"], ["--color", "maybe"],
                     ["--truncation", "1e-9"], ["--noise-weighting", "yes"], ["--volume-resolution", "1291"],
                     ["--frames", "0:99999999999999999999"], ["--icp-iterations", "0"], ["--icp-iterations", "0,0"],
                     ["--intrinsics", "0,0,0,0"], ["--intrinsics", "-585,585,320,240"], ["--intrinsics", "1e30,1,1,1"],
                     ["--intrinsics", "585,585,320"], ["--intrinsics", "abc"], ["--intrinsics", "nan,1,1,1"],
                     ["--depth-noise", "stereo:0"], ["--depth-noise", "sonar"], ["--max-step", "0.2"],
                     ["--max-step", "0.2,200"], ["--max-lost", "2"], ["--min-inliers", "-1"], ["--volume", "cube"],
                     ["--max-memory", "0"], ["--max-memory", "5X"], ["--voxel-size", "-1"],
                     ["--motion-prior", "maybe"], ["--feature-start", "yes"], ["--photometric", "2"],
                     ["--photometric", "-0.1"],
                     ["--images", "no-such-folder"], ["--truncation-growth", "-0.01"], ["--truncation-growth", "2"],
                     ["--truncation-growth", "nan"]):
            proc = self.run_tool(*SMALL, *k, seq, "-o", "out", *args, code=2)
            err = proc.stderr.decode().strip().splitlines()
            self.assertEqual(len(err), 1, (args, proc.stderr))
            self.assertIn(args[-2], err[0])  # the message names the flag
        self.run_tool(*SMALL, *k, seq, code=2)  # no output
        self.run_tool(*SMALL, *k, seq, "-o", "-", code=2)
        self.assertFalse(os.path.exists(self.path("out")))

    def test_photometric_term_needs_the_frames_images(self):
        """--photometric without colour frames is a failed item naming the way out (--images); --images with a
        count that does not match the depth frames is one too; with matching images the run tracks."""
        seq = self.synthetic(frames=3)
        k = [*SMALL, "--intrinsics", "60,60,32,24", "--mode", "f2f", "--photometric", "0.02"]
        proc = self.run_tool(*k, seq, "-o", "out", code=1)
        err = [l for l in proc.stderr.decode().splitlines() if "no CUDA" not in l]
        self.assertEqual(len(err), 1, proc.stderr)
        self.assertIn("--images", err[0])
        images = self.path("images")
        os.makedirs(images)
        for i in range(2):
            with open(os.path.join(images, "%06d.png" % i), "wb") as f:
                f.write(png16(64, 48, lambda x, y: 300 * ((x // 4 + y // 4) % 2)))
        proc = self.run_tool(*k, "--images", images, seq, "-o", "out", code=1)
        self.assertIn("holds 2 images for the 3 depth frames", proc.stderr.decode())
        self.assertFalse(os.path.exists(self.path("out", "trajectory.txt")))

    def test_a_cut_to_an_unrelated_scene_fails_the_sequence(self):
        """Five redkitchen frames, then three of a wall 6 m away that the kitchen's model has nothing of: the
        wall frames are lost, not tracked, and with more than --max-lost of the frames lost the sequence fails
        (exit 1, one line that counts them, no outputs); --max-lost 1 writes the outputs and the records say
        which frames were lost."""
        seq = self.real_copy(frames=5)
        wall = png16(640, 480, lambda x, y: 6000 + 2 * x)
        for i in range(5, 8):
            with open(os.path.join(seq, "frame-%06d.depth.png" % i), "wb") as f:
                f.write(wall)
        proc = self.run_tool(*SMALL, seq, "-o", "out", code=1)
        err = [l for l in proc.stderr.decode().splitlines() if "no CUDA" not in l]
        self.assertEqual(len(err), 1, proc.stderr)
        self.assertIn("tracking lost on 3 of 8 frames", err[0])
        self.assertIn("the first at frame 5", err[0])
        self.assertFalse(os.path.exists(self.path("out", "trajectory.txt")))
        proc = self.run_tool(*SMALL, seq, "-o", "out", "--max-lost", "1", "--json")
        rec = self.records(proc)[0]
        self.assertEqual((rec["status"], rec["lost"], rec["tracked"] + rec["recovered"]), ("ok", 3, 4))
        with open(self.path("out", "frames.jsonl")) as f:
            status = [json.loads(line)["status"] for line in f]
        # The kitchen frames are tracked (against the 64^3 model or, where it covers too little, the previous
        # frame); the wall frames are lost.
        self.assertEqual(status[0], "first")
        self.assertTrue(all(s in ("tracked", "recovered") for s in status[1:5]), status)
        self.assertEqual(status[5:], ["lost"] * 3)

    # batches -----------------------------------------------------------------------------------------
    def test_batch_skip_existing_and_overwrite(self):
        a, b = self.synthetic("a", frames=2), self.synthetic("b", frames=3)
        with open(self.path("list.txt"), "w") as f:
            f.write("a\nb\n")
        k = ["--intrinsics", "60,60,32,24"]
        proc = self.run_tool(*SMALL, *k, "--input-list", "list.txt", "--output-dir", "runs", "--json")
        self.assertEqual([r["status"] for r in self.records(proc)[:2]], ["ok", "ok"])
        self.assertEqual(len(read_trajectory(self.path("runs", "a", "trajectory.txt"))), 2)
        self.assertEqual(len(read_trajectory(self.path("runs", "b", "trajectory.txt"))), 3)
        self.run_tool(*SMALL, *k, "--input-list", "list.txt", "--output-dir", "runs", code=1)  # exists
        proc = self.run_tool(*SMALL, *k, "--input-list", "list.txt", "--output-dir", "runs", "--json",
                             "--skip-existing")
        self.assertEqual([r["status"] for r in self.records(proc)[:2]], ["skipped", "skipped"])
        self.run_tool(*SMALL, *k, "--input-list", "list.txt", "--output-dir", "runs", "--overwrite")
        # -o with two sequences must be a template
        self.run_tool(*SMALL, *k, a, b, "-o", "out", code=2)
        self.run_tool(*SMALL, *k, a, b, "-o", "tpl/{/}")
        self.assertTrue(os.path.exists(self.path("tpl", "b", "trajectory.txt")))
        # --frames: a range of each sequence
        self.run_tool(*SMALL, *k, b, "--frames", "1:", "-o", "range")
        poses = read_trajectory(self.path("range", "trajectory.txt"))
        self.assertEqual([round(p[0] * 30) for p in poses], [1, 2])

    def test_sigint_keeps_a_valid_trajectory(self):
        self.need_data()
        proc = subprocess.Popen([EXE, "--device", "cpu", "--volume-resolution", "64", "-vv", REDKITCHEN, "-o", "out",
                                 "--report", "cut.jsonl"],
                                cwd=self.dir, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=ENV)
        seen = 0
        deadline = time.time() + 240
        for line in proc.stderr:
            if b": frame " in line:
                seen += 1
                if seen == 3:
                    proc.send_signal(signal.SIGINT)
                    break
            if time.time() > deadline:
                break
        proc.stderr.read()
        proc.stderr.close()
        self.assertEqual(proc.wait(timeout=240), 130)
        poses = read_trajectory(self.path("out", "trajectory.txt"))
        self.assertGreaterEqual(len(poses), 3)
        self.assertLess(len(poses), 300)
        # an interrupted sequence keeps only its trajectory, so --skip-existing redoes it
        self.assertEqual(sorted(os.listdir(self.path("out"))), ["trajectory.txt"])
        # ... and it is not done: its record says so, and a merge of the reports fails on it
        with open(self.path("cut.jsonl")) as f:
            records = [json.loads(line) for line in f]
        self.assertEqual([r["status"] for r in records if r["type"] == "item"], ["interrupted"])
        self.assertEqual(records[-1]["interrupted_items"], 1)
        self.assertEqual(records[-1]["ok"], 0)
        merged = subprocess.run([EXE, "report", "cut.jsonl"], cwd=self.dir, capture_output=True, text=True, env=ENV)
        self.assertEqual(merged.returncode, 1, merged.stderr)
        self.assertIn("interrupted", merged.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=2)
