#!/usr/bin/env python3
"""nms-filter against hostile but fair inputs: numeric flags, line endings and byte-order marks,
duplicate columns, and a VOC folder with one bad file.

Run with S3D_NMS_FILTER set to the built executable (CTest does: tests/cli/CMakeLists.txt), as
nms_filter_hardening_test.py [-k PATTERN | NmsFilterHardeningTest.test_name ...]
"""
import os
import subprocess

from tool_case import ToolCase, run_tests


class NmsFilterHardeningTest(ToolCase):
    prefix = "s3d-nms-hard-"

    def run_tool(self, *args):
        return subprocess.run([self.exe, "--device", "cpu", "--threads", "1", *args], cwd=self.dir, capture_output=True,
                              text=True, timeout=120)

    # numeric flags ------------------------------------------------------------------------------------
    def test_non_finite_and_out_of_range_numbers_are_usage_errors(self):
        dets = self.write("d.csv", "x1,y1,x2,y2,score\n0,0,10,10,0.9\n")
        bad = [("--iou", "nan"), ("--iou", "inf"), ("--iou", "-0.1"), ("--iou", "1.5"), ("--sigma", "nan"),
               ("--sigma", "0"), ("--sigma", "-1"), ("--sigma", "inf"), ("--min-score", "nan"),
               ("--min-score", "inf"), ("--min-score", "-inf"), ("--pre-top-k", "-1"), ("--max-dets", "-1"),
               ("--pixel-offset", "2"), ("--max-dets", "1.5")]
        for flag, value in bad:
            with self.subTest(flag=flag, value=value):
                if os.path.exists(self.path("k.csv")):
                    os.remove(self.path("k.csv"))
                p = self.run_tool(dets, flag, value, "-o", self.path("k.csv"))
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(len(self.lines(p.stderr)), 1, p.stderr)
                self.assertIn(flag, p.stderr)
                self.assertFalse(os.path.exists(self.path("k.csv")))
        p = self.run_tool(dets, "--min-score", "-0.5", "--sigma", "0.1", "-o", self.path("ok.csv"))
        self.assertEqual(p.returncode, 0, p.stderr)

    # line endings and byte-order marks ----------------------------------------------------------------
    def test_crlf_and_bom_are_written_back_as_read(self):
        rows = ["0,0,10,10,0.9", "1,1,11,11,0.8", "20,20,30,30,0.7"]
        cases = {
            "crlf_bom.csv": ("\ufeffx1,y1,x2,y2,score\r\n" + "\r\n".join(rows) + "\r\n",
                             "\ufeffx1,y1,x2,y2,score\r\n" + rows[0] + "\r\n" + rows[2] + "\r\n"),
            "crlf.csv": ("x1,y1,x2,y2,score\r\n" + "\r\n".join(rows) + "\r\n",
                         "x1,y1,x2,y2,score\r\n" + rows[0] + "\r\n" + rows[2] + "\r\n"),
            "bom.csv": ("\ufeffx1,y1,x2,y2,score\n" + "\n".join(rows) + "\n",
                        "\ufeffx1,y1,x2,y2,score\n" + rows[0] + "\n" + rows[2] + "\n"),
            "lf.csv": ("x1,y1,x2,y2,score\n" + "\n".join(rows) + "\n",
                       "x1,y1,x2,y2,score\n" + rows[0] + "\n" + rows[2] + "\n"),
            "crlf.det.txt": ("1,-1,0,0,10,10,0.9,-1,-1,-1\r\n1,-1,1,1,10,10,0.8,-1,-1,-1\r\n",
                             "1,-1,0,0,10,10,0.9,-1,-1,-1\r\n"),
            "crlf.jsonl": ('{"bbox":[0,0,10,10],"score":0.9}\r\n{"bbox":[1,1,10,10],"score":0.8}\r\n',
                           '{"bbox":[0,0,10,10],"score":0.9}\r\n'),
        }
        for name, (given, expected) in cases.items():
            with self.subTest(name=name):
                src = self.write(name, given)
                out = "out_" + name
                p = self.run_tool(src, "--iou", "0.5", "-o", self.path(out))
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(self.read(out), expected.encode())

    # duplicate columns --------------------------------------------------------------------------------
    def test_duplicate_columns_are_a_data_error_naming_the_column(self):
        good = self.write("good.csv", "x1,y1,x2,y2,score\n0,0,10,10,0.9\n")
        for header, dup in (("x1,y1,x2,y2,score,score", "score"), ("x1,y1,x2,y2,score,Score", "score"),
                            ("x1,y1,x2,x1,y2,score", "x1")):
            with self.subTest(header=header):
                n = header.count(",") + 1
                bad = self.write("dup.csv", header + "\n" + ",".join(["1"] * n) + "\n")
                p = self.run_tool(bad, good, "-o", self.path("out", "{/}"), "--overwrite")
                self.assertEqual(p.returncode, 1, p.stderr)
                lines = self.lines(p.stderr)
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertTrue(lines[0].startswith("nms-filter: " + bad + ": "), lines[0])
                self.assertIn("'" + dup + "'", lines[0].lower())
                self.assertFalse(os.path.exists(self.path("out", "dup.csv")))
                self.assertTrue(os.path.exists(self.path("out", "good.csv")))

    # VOC ------------------------------------------------------------------------------------------------
    def test_voc_files_given_one_by_one_fail_alone(self):
        self.write("voc/a.txt", "car 0.9 0 0 10 10\ncar 0.8 1 1 10 10\n")
        self.write("voc/b.txt", "car 0.9 0 0 10 10\ncar nan 1 1 10 10\n")
        self.write("voc/c.txt", "dog 0.7 5 5 50 50\n")
        files = [self.path("voc", n) for n in ("a.txt", "b.txt", "c.txt")]
        p = self.run_tool("--format", "voc", *files, "-o", self.path("out", "{/}"), "--json")
        self.assertEqual(p.returncode, 1, p.stderr)
        recs = self.records(p.stdout)
        self.assertEqual([r["status"] for r in recs[:-1]], ["ok", "failed", "ok"])
        self.assertEqual(recs[-1]["failed"], 1)
        lines = self.lines(p.stderr)
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn("b.txt: line 2", lines[0])
        self.assertEqual(sorted(os.listdir(self.path("out"))), ["a.txt", "c.txt"])
        # The folder is one item (one output folder): the bad file fails it, and the message names the file.
        p = self.run_tool(self.path("voc"), "-o", self.path("nms"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(len(self.lines(p.stderr)), 1, p.stderr)
        self.assertIn("b.txt: line 2", p.stderr)
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                               "NMS-FILTER.md")) as f:
            doc = f.read()
        self.assertTrue("--format voc dir/*.txt" in doc, "NMS-FILTER.md does not say how to get one item per file")

    # configuration ------------------------------------------------------------------------------------
    def test_print_config_then_config_reproduces_the_run(self):
        rows = []
        for image in (1, 2):
            for i in range(12):
                x, y = (i % 4) * 6, (i // 4) * 6
                rows.append('{"image_id":%d,"category_id":%d,"bbox":[%d,%d,10,10],"score":%.2f}'
                            % (image, i % 2, x, y, 0.95 - 0.07 * i))
        dets = self.write("d.jsonl", "\n".join(rows) + "\n")
        args = ["--iou", "0.3", "--iou-ge", "--pixel-offset", "1", "--per-class", "--min-score", "0.2",
                "--max-dets", "5", "--method", "soft-gaussian", "--sigma", "0.3", "--pre-top-k", "9",
                "--box-format", "xywh"]
        p = self.run_tool(dets, *args, "-o", self.path("direct.jsonl"))
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.run_tool(dets, *args, "-o", self.path("again.jsonl"), "--print-config")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(os.path.exists(self.path("again.jsonl")))  # printing the config runs nothing
        for key in ("iou", "iou-ge", "pixel-offset", "per-class", "min-score", "max-dets", "method", "sigma",
                    "pre-top-k", "box-format"):
            self.assertIn(key, p.stdout)
        self.write("run.toml", p.stdout)
        p = self.run_tool("--config", self.path("run.toml"), dets)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.read("again.jsonl"), self.read("direct.jsonl"))
        # and the settings did change the result: the defaults keep another set
        p = self.run_tool(dets, "-o", self.path("defaults.jsonl"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotEqual(self.read("defaults.jsonl"), self.read("direct.jsonl"))


if __name__ == "__main__":
    run_tests("S3D_NMS_FILTER", __doc__)
