#!/usr/bin/env python3
"""sgm-depth against hostile but fair inputs: numeric flags, unpaired dataset files, bad
calibration files, images that print decoder noise, pairs that can never fit in memory, and the records.

Run with S3D_SGM_DEPTH set to the built executable (CTest does: tests/cli/CMakeLists.txt), as
sgm_depth_hardening_test.py [-k PATTERN | SgmDepthHardeningTest.test_name ...]
"""
import os
import shutil
import struct
import subprocess
import zlib

from tool_case import ToolCase, run_tests

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "..", "..", "data", "sample")


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def grey_png(width, height, value=128, extra_chunks=b""):
    """An 8-bit grey PNG, every row a ramp (texture is irrelevant to these tests)."""
    row = bytes([0]) + bytes((value + x) & 0xFF for x in range(width))
    raw = row * height
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)) +
            extra_chunks + png_chunk(b"IDAT", zlib.compress(raw, 9)) + png_chunk(b"IEND", b""))


def memory_limit_bytes():
    """What the tool compares a CPU item's need against: physical RAM, or a smaller cgroup limit."""
    limit = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
            if text.isdigit():
                limit = min(limit, int(text))
        except OSError:
            pass
    return limit


class SgmDepthHardeningTest(ToolCase):
    prefix = "s3d-sgm-hard-"

    def setUp(self):
        super().setUp()
        self.left = os.path.join(SAMPLE, "left.png")
        self.right = os.path.join(SAMPLE, "right.png")

    def run_tool(self, *args):
        return subprocess.run([self.exe, "--device", "cpu", "--threads", "2", *args], cwd=self.dir, capture_output=True,
                              text=True, timeout=600)

    # numeric flags ------------------------------------------------------------------------------------
    def test_non_finite_and_out_of_range_numbers_are_usage_errors(self):
        bad = [("--gt-scale", "nan"), ("--gt-scale", "inf"), ("--gt-scale", "-1"), ("--gt-scale", "0"),
               ("--max-depth", "-1"), ("--max-depth", "nan"), ("--max-depth", "inf"), ("--lr-check", "nan"),
               ("--lr-check", "-1"), ("--speckle-range", "nan"), ("--speckle-range", "-0.5"),
               ("--speckle-size", "-1"), ("--uniqueness", "100"), ("--p1", "-1"), ("--depth-scale", "nan"),
               ("--depth-scale", "-5"), ("-D", "nan"), ("-D", "8"), ("--min-disparity", "1e9"),
               ("--max-memory", "0"), ("--max-memory", "-5"), ("--max-memory", "nan"), ("--max-memory", "12Q")]
        for flag, value in bad:
            with self.subTest(flag=flag, value=value):
                if os.path.exists(self.path("d.pfm")):  # a run that wrongly succeeded must not fail the next
                    os.remove(self.path("d.pfm"))
                p = self.run_tool(self.left, self.right, "-D", "48", flag, value, "-o", self.path("d.pfm"))
                self.assertEqual(p.returncode, 2, p.stderr)
                lines = self.lines(p.stderr)
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertFalse(os.path.exists(self.path("d.pfm")))
        # The documented "off" values stay accepted.
        p = self.run_tool(self.left, self.right, "-D", "48", "--max-depth", "0", "--max-memory", "4G", "-o",
                          self.path("ok.pfm"))
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_error_picture_needs_a_ground_truth_and_has_the_pairs_size(self):
        gt = os.path.join(SAMPLE, "gt_disparity.pfm")
        p = self.run_tool(self.left, self.right, "-D", "48", "--emit", "error", "-o", self.path("e.png"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--emit error needs a ground truth", p.stderr)
        self.assertFalse(os.path.exists(self.path("e.png")))
        p = self.run_tool(self.left, self.right, "-D", "48", "--emit", "error", "-o", self.path("e.txt"), "--eval", gt)
        self.assertEqual(p.returncode, 1, p.stderr)  # not a picture format: the item fails, nothing written
        self.assertFalse(os.path.exists(self.path("e.txt")))
        p = self.run_tool(self.left, self.right, "-D", "48", "--emit", "disparity", "--emit", "error", "-o",
                          self.path("d.pfm"), "-o", self.path("e.png"), "--eval", gt)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(self.path("e.png"), "rb") as f:
            head = f.read(26)
        with open(self.left, "rb") as f:
            left = f.read(24)
        self.assertEqual(head[:8], b"\x89PNG\r\n\x1a\n")
        self.assertEqual(head[16:24], left[16:24])  # width and height
        self.assertEqual(head[25], 2)  # colour type: RGB

    # records ------------------------------------------------------------------------------------------
    def test_summary_settings_show_the_stages_that_ran(self):
        p = self.run_tool(self.left, self.right, "-D", "48", "-o", self.path("a.pfm"), "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        s = self.records(p.stdout)[-1]["settings"]
        for on in ("subpixel", "median", "fill"):
            self.assertIs(s[on], True, on)
            self.assertIs(s["no-" + on], False, on)
        self.assertIs(s["no-lr-check"], False)
        self.assertEqual(s["lr-method"], "right-sgm")
        p = self.run_tool(self.left, self.right, "-D", "48", "--lr-method", "volume", "-o", self.path("v.pfm"), "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.records(p.stdout)[-1]["settings"]["lr-method"], "volume")
        p = self.run_tool(self.left, self.right, "-D", "48", "--lr-method", "left", "-o", self.path("w.pfm"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertFalse(os.path.exists(self.path("w.pfm")))
        p = self.run_tool(self.left, self.right, "-D", "48", "--no-median", "--no-fill", "--no-lr-check", "-o",
                          self.path("b.pfm"), "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        s = self.records(p.stdout)[-1]["settings"]
        self.assertIs(s["median"], False)
        self.assertIs(s["no-median"], True)
        self.assertIs(s["fill"], False)
        self.assertIs(s["subpixel"], True)
        self.assertIs(s["no-lr-check"], True)

    # dataset folders ----------------------------------------------------------------------------------
    def test_kitti_files_without_a_partner_are_failed_items(self):
        for name in ("000000_10.png", "000001_10.png"):
            shutil.copy(self.left, self.write(os.path.join("kitti", "image_2", name), b""))
        for name in ("000000_10.png", "000002_10.png"):
            shutil.copy(self.right, self.write(os.path.join("kitti", "image_3", name), b""))
        p = self.run_tool("kitti", "-D", "48", "--output-dir", "out", "--json")
        self.assertEqual(p.returncode, 1, p.stderr)
        recs = self.records(p.stdout)
        self.assertEqual(len(recs), 4, p.stdout)
        self.assertEqual([r["status"] for r in recs[:-1]], ["ok", "failed", "failed"])
        self.assertIn(os.path.join("image_2", "000001_10.png"), recs[1]["error"])
        self.assertIn(os.path.join("image_3", "000002_10.png"), recs[2]["error"])
        self.assertEqual(recs[-1]["failed"], 2)
        self.assertEqual(recs[-1]["ok"], 1)
        lines = self.lines(p.stderr)
        self.assertEqual(len(lines), 2, p.stderr)
        self.assertIn("000001_10.png", lines[0])
        self.assertIn("000002_10.png", lines[1])
        self.assertEqual(sorted(os.listdir(self.path("out"))), ["000000_10.pfm"])

    # calibration --------------------------------------------------------------------------------------
    def test_bad_yaml_calibration_is_one_line_naming_the_file(self):
        cases = {
            "broken.yml": "%YAML:1.0\nQ: !!opencv-matrix\n   rows: 4\n   cols: [\n",
            "qtext.yml": "%YAML:1.0\nQ: hello\n",
            "qshape.yml": "%YAML:1.0\nQ: !!opencv-matrix\n   rows: 2\n   cols: 2\n   dt: d\n   data: [ 1, 2, 3 ]\n",
        }
        for name, text in cases.items():
            with self.subTest(name=name):
                calib = self.write(name, text.encode())
                p = self.run_tool(self.left, self.right, "-D", "48", "--calib", calib, "--emit", "depth", "-o",
                                  self.path("z.pfm"))
                self.assertIn(p.returncode, (1, 2), p.stderr)
                lines = self.lines(p.stderr)
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertIn(calib, lines[0])
                self.assertNotIn("OpenCV(", p.stderr)
                self.assertNotIn("in function", p.stderr)

    # decoder noise ------------------------------------------------------------------------------------
    def test_bad_images_print_exactly_one_line_even_with_q(self):
        good = grey_png(64, 48)
        bad_crc = bytearray(good)
        bad_crc[29] ^= 0xFF  # the IHDR CRC
        truncated = good[:len(good) - 30]
        # A valid image whose ancillary chunk is damaged: libpng warns (and decodes it)
        warned = grey_png(64, 48, extra_chunks=png_chunk(b"gAMA", b"\x00\x00"))
        cases = {"crc.png": bytes(bad_crc), "trunc.png": truncated, "garbage.png": b"\x89PNG\r\n\x1a\nnot a png"}
        right = self.write("r.png", good)
        for name, data in cases.items():
            bad = self.write(name, data)
            for quiet in ([], ["-q"]):
                with self.subTest(name=name, quiet=quiet):
                    p = self.run_tool(*quiet, bad, right, "-D", "16", "-o", self.path("d.pfm"))
                    self.assertEqual(p.returncode, 1, p.stderr)
                    lines = self.lines(p.stderr)
                    self.assertEqual(len(lines), 1, p.stderr)
                    self.assertTrue(lines[0].startswith("sgm-depth: " + bad), p.stderr)
        left = self.write("warned.png", warned)
        p = self.run_tool(left, right, "-D", "16", "-o", self.path("w.pfm"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")

    # memory -------------------------------------------------------------------------------------------
    def test_a_pair_over_max_memory_fails_alone(self):
        big_l = self.write("big_l.png", grey_png(1024, 768))
        big_r = self.write("big_r.png", grey_png(1024, 768, 130))
        p = self.run_tool(big_l, big_r, self.left, self.right, "-D", "48", "--max-memory", "40M", "-o",
                          self.path("{/.}.pfm"), "--json")
        self.assertEqual(p.returncode, 1, p.stderr)
        recs = self.records(p.stdout)
        self.assertEqual([r["status"] for r in recs[:-1]], ["failed", "ok"])
        lines = self.lines(p.stderr)
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertTrue(lines[0].startswith("sgm-depth: " + big_l + ": 1024x768"), lines[0])
        self.assertIn("needs", lines[0])
        self.assertIn("--max-memory", lines[0])
        self.assertFalse(os.path.exists(self.path("big_l.pfm")))
        self.assertTrue(os.path.exists(self.path("left.pfm")))

    def test_a_pair_larger_than_this_machine_is_a_data_error_not_transient(self):
        limit = memory_limit_bytes()
        # CPU need at -D 1024 is about 3 * pixels * D (uint8 costs + uint16 sums): twice the limit.
        pixels = 2 * limit // (3 * 1024) + 1
        side = int(pixels ** 0.5) + 1
        if side * side > (1 << 26):
            self.skipTest("this machine has more memory than the largest pair sgm-depth accepts needs")
        big_l = self.write("huge_l.png", grey_png(side, side))
        big_r = self.write("huge_r.png", grey_png(side, side, 131))
        p = self.run_tool(big_l, big_r, self.left, self.right, "-D", "1024", "--prefetch", "1", "-o",
                          self.path("{/.}.pfm"), "--json")
        self.assertEqual(p.returncode, 1, p.stderr)  # not 75: retrying elsewhere cannot help
        recs = self.records(p.stdout)
        self.assertEqual(recs[0]["status"], "failed")
        self.assertIn("needs", recs[0]["error"])
        # the second pair (320 wide) cannot take -D 1024 either: a data error of its own, the batch went on
        self.assertEqual(recs[1]["status"], "failed")
        self.assertEqual(recs[-1]["not_run"], 0)
        lines = self.lines(p.stderr)
        self.assertEqual(len(lines), 2, p.stderr)
        self.assertTrue(lines[0].startswith("sgm-depth: " + big_l + ": "), lines[0])


if __name__ == "__main__":
    run_tests("S3D_SGM_DEPTH", __doc__)
