#!/usr/bin/env python3
"""End-to-end tests of the s3d CLI frame, driving s3d-frame-demo (tests/cli/frame/frame_demo.cpp).

The demo upper-cases text files; an input holding FAIL fails its item (DataError), one holding TRANSIENT
stops the batch (DeviceUnavailable -> 75); --sleep-ms makes items slow, --bad-start fails on_start.

Run: frame_e2e_test.py DEMO_EXE [DOC_DIR] [-k PATTERN | FrameTest.test_name ...]
 or, with S3D_FRAME_DEMO (and S3D_FRAME_DEMO_DOC_DIR) set in the environment, as CTest does (one test per
 method, found by tests/python_tests.cmake): frame_e2e_test.py [-k PATTERN | FrameTest.test_name ...]
"""
import json
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

from frame_case import FrameCase

DEMO = None
DOC_DIR = None
NAME = "s3d-frame-demo"


def gpu_present():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
        return out.returncode == 0 and "GPU" in out.stdout
    except (OSError, subprocess.TimeoutExpired):
        return False


class FrameTest(FrameCase):
    # helpers -----------------------------------------------------------------------------------------
    def run_demo(self, *args, stdin=None, env=None, check_tmp=True):
        proc = subprocess.run([DEMO, *args], cwd=self.dir, input=stdin, capture_output=True, text=True,
                              env=env or self.env, timeout=120)
        if check_tmp:
            self.assertEqual(os.listdir(self.tmpdir), [], "temp files left in TMPDIR")
        return proc

    def records(self, text):
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def make_batch(self, n, fail=(), prefix="in"):
        names = []
        for i in range(n):
            names.append(self.write(f"{prefix}/f{i:03d}.txt", ("FAIL " if i in fail else "") + f"item {i}\n"))
        return [os.path.relpath(p, self.dir) for p in names]

    # help, version, config, completion ---------------------------------------------------------------
    def test_help_ends_with_examples_and_lists_exit_codes(self):
        p = self.run_demo("--help")
        self.assertEqual(p.returncode, 0)
        self.assertEqual(p.stderr, "")
        self.assertIn("Exit codes:", p.stdout)
        for code in ("0", "1", "2", "75", "130", "143"):
            self.assertRegex(p.stdout, rf"\n  {code} ")
        tail = [l for l in p.stdout.splitlines() if l.strip()][-7:]  # 3 examples of 2 lines each
        self.assertEqual(tail[0], "Examples:")
        self.assertTrue(tail[-2].strip().startswith("cat notes.txt | s3d-frame-demo - -o -"), tail)
        self.assertGreater(p.stdout.index("Examples:"), p.stdout.index("Exit codes:"))
        for flag in ("--device", "--json", "--report", "--progress", "--overwrite", "--skip-existing", "--threads",
                     "--config", "--print-config", "--fail-fast", "--shard", "--input-list", "--manifest",
                     "--output-dir", "--format", "--generate-completion", "--version", "-q", "-v"):
            self.assertIn(flag, p.stdout)
        # The tool's own help text for --format replaces the frame's.
        self.assertIn("output text format: txt (the demo's only one)", p.stdout)
        self.assertNotIn("overriding the extension", p.stdout)

    def test_help_ends_with_one_newline(self):
        for args in (["--help"], ["-h"], ["lower", "--help"]):
            p = self.run_demo(*args)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(p.stdout.endswith("\n"), f"{args}: {p.stdout[-40:]!r}")
            self.assertFalse(p.stdout.endswith("\n\n"), f"{args}: {p.stdout[-40:]!r}")

    def test_version_format(self):
        p = self.run_demo("--version")
        self.assertEqual(p.returncode, 0)
        lines = p.stdout.splitlines()
        self.assertRegex(lines[0], rf"^{NAME} \d+\.\d+\.\d+$")
        self.assertRegex(lines[1], r"^git: \S+$")
        self.assertRegex(lines[2], r"^cuda: (off|on \(runtime [0-9.]+, archs sm_[0-9]+a?( sm_[0-9]+a?)*(, PTX compute_[0-9]+a?( compute_[0-9]+a?)*)?\))$")
        self.assertRegex(lines[3], r"^opencv: \d+\.\d+")
        self.assertRegex(lines[4], r"^pcl: \d+\.\d+")

    def test_print_config_round_trip(self):
        p = self.run_demo("--print-config", "--device", "cpu", "--threads", "3", "--sleep-ms", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('device="cpu"', p.stdout)
        self.assertIn("threads=3", p.stdout)
        self.assertIn("sleep-ms=1", p.stdout)
        cfg = self.write("run.toml", p.stdout)
        a = self.write("a.txt", "abc\n")
        # The file's settings apply ...
        p = self.run_demo("--config", cfg, "a.txt", "-o", "a.out", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        settings = self.records(p.stdout)[-1]["settings"]
        self.assertEqual(settings["device"], "cpu")
        self.assertEqual(settings["threads"], 3)
        # ... and flags override them.
        p = self.run_demo("--config", cfg, "--threads", "1", "a.txt", "-o", "b.out", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.records(p.stdout)[-1]["settings"]["threads"], 1)
        # An INI file works too.
        ini = self.write("run.ini", "[default]\nsleep-ms=2\ndevice=cpu\n")
        p = self.run_demo("--config", ini, "a.txt", "-o", "c.out", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.records(p.stdout)[-1]["settings"]["sleep-ms"], 2)
        self.assertEqual(self.run_demo("--config", self.path("missing.toml"), "a.txt").returncode, 2)
        del a

    def test_print_config_has_every_flag_and_reads_them_back(self):
        p = self.run_demo("--print-config", "--device", "cpu")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        for off in ("bad-start=false", "overwrite=false", "skip-existing=false", "fail-fast=false", "json=false",
                    "quiet=false", "verbose=0"):
            self.assertIn(off, lines)
        self.write("a.txt", "abc\n")
        off = self.write("off.toml", p.stdout)
        # A flag that is false in the file is not given: it neither applies nor excludes its opposite.
        p = self.run_demo("--config", off, "a.txt", "-o", "a.out", "--skip-existing", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        settings = self.records(p.stdout)[-1]["settings"]
        self.assertEqual((settings["skip-existing"], settings["overwrite"], settings["fail-fast"]), (True, False, False))
        p = self.run_demo("--config", off, "a.txt", "-o", "a.out", "-q", "--overwrite")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        # Flags that are on come back on.
        p = self.run_demo("--print-config", "--device", "cpu", "--overwrite", "--fail-fast", "--json", "-vv")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        for on in ("overwrite=true", "fail-fast=true", "json=true", "verbose=2", "skip-existing=false"):
            self.assertIn(on, lines)
        on = self.write("on.toml", p.stdout)
        p = self.run_demo("--config", on, "a.txt", "-o", "a.out")
        self.assertEqual(p.returncode, 0, p.stderr)
        summary = self.records(p.stdout)[-1]
        self.assertEqual((summary["settings"]["overwrite"], summary["settings"]["fail-fast"]), (True, True))
        self.assertIn(f"{NAME}: debug: item 1: a.txt", p.stderr)
        # A tool's own flag, on in the file.
        p = self.run_demo("--config", self.write("bad.toml", "bad-start=true\n"), "a.txt", "-o", "b.out")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--bad-start was given", p.stderr)

    def test_generate_completion(self):
        for shell in ("bash", "zsh", "fish"):
            p = self.run_demo("--generate-completion", shell)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("device", p.stdout)
            self.assertIn("skip-existing", p.stdout)
            self.assertIn("auto cpu cuda", p.stdout)  # choices of --device
            if shell == "bash" and shutil.which("bash"):
                script = self.write("c.bash", p.stdout)
                self.assertEqual(subprocess.run(["bash", "-n", script]).returncode, 0)
        self.assertEqual(self.run_demo("--generate-completion", "tcsh").returncode, 2)

    def test_build_generated_completions_and_man_page(self):
        if not DOC_DIR:
            self.skipTest("no doc dir given")
        for rel in ("bash/" + NAME, "zsh/_" + NAME, "fish/" + NAME + ".fish"):
            p = os.path.join(DOC_DIR, rel)
            self.assertTrue(os.path.getsize(p) > 0, p)
        man = os.path.join(DOC_DIR, "man1", NAME + ".1")
        if not shutil.which("help2man"):
            self.skipTest("help2man not installed")
        with open(man) as f:
            text = f.read()
        self.assertIn(".TH", text)
        self.assertIn("EXIT CODES", text.upper())

    # exit codes --------------------------------------------------------------------------------------
    def test_usage_errors_exit_2_with_one_line(self):
        self.write("a.txt", "x\n")
        self.write("b.txt", "y\n")
        cases = [
            ["--bogus", "a.txt"],
            ["a.txt", "--progress", "sometimes"],
            ["a.txt", "--shard", "4/4"],
            ["a.txt", "--shard", "x"],
            ["a.txt", "--device", "tpu"],
            ["a.txt", "--device", "cuda:0,1"],                  # a tool that runs on one device
            ["a.txt", "--device", "cuda:0,0"],
            ["a.txt", "--threads", "-1"],
            ["a.txt", "--overwrite", "--skip-existing", "-o", "o.txt"],
            ["a.txt", "-o", "o.txt", "--bad-start", "--device", "cpu"],
            ["a.txt", "b.txt", "-o", "fixed.txt"],             # one name for two items
            ["a.txt", "-o", "-", "--json"],                     # records and data both on stdout
            ["-o", "o.txt"],                                    # no input
            ["a.txt", "--manifest", "m.jsonl"],                 # two input sources
            ["--manifest", "missing.jsonl", "-o", "{}.out"],
            ["--input-list", "-", "-", "-o", "o.txt"],          # stdin twice
        ]
        for args in cases:
            p = self.run_demo(*args)
            self.assertEqual(p.returncode, 2, f"{args}: {p.stderr}")
            lines = p.stderr.splitlines()
            self.assertEqual(len(lines), 1, f"{args}: {p.stderr!r}")
            self.assertTrue(lines[0].startswith(f"{NAME}: error: "), lines[0])
            self.assertEqual(p.stdout, "")
        self.assertFalse(os.path.exists(self.path("fixed.txt")))

    def test_device_cuda_without_gpu_exits_75(self):
        if gpu_present():
            self.skipTest("a GPU is present")
        self.write("a.txt", "x\n")
        for dev in ("cuda", "cuda:1"):
            p = self.run_demo("a.txt", "-o", "a.out", "--device", dev)
            self.assertEqual(p.returncode, 75, p.stderr)
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertIn("cuda", p.stderr)
            self.assertFalse(os.path.exists(self.path("a.out")))

    def test_auto_device_warns_once_and_runs_on_cpu(self):
        if gpu_present():
            self.skipTest("a GPU is present")
        names = self.make_batch(3)
        p = self.run_demo(*names, "--output-dir", "out", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr.count("warning"), 1, p.stderr)
        # The warning says why: a build without CUDA, or no GPU visible.
        cuda_off = "\ncuda: off\n" in self.run_demo("--version").stdout
        reason = "this build has no CUDA support" if cuda_off else "no CUDA device visible"
        self.assertIn(f"{NAME}: warning: {reason}: running on the CPU", p.stderr)
        self.assertTrue(all(r.get("device", "cpu") == "cpu" for r in self.records(p.stdout)))
        # -q silences the warning.
        p = self.run_demo(*names, "--output-dir", "out2", "-q")
        self.assertEqual((p.returncode, p.stderr), (0, ""))

    def test_transient_error_stops_the_batch_with_75(self):
        self.write("in/a.txt", "a\n")
        self.write("in/b.txt", "TRANSIENT\n")
        self.write("in/c.txt", "c\n")
        p = self.run_demo("in/a.txt", "in/b.txt", "in/c.txt", "--output-dir", "out", "--device", "cpu", "--json")
        self.assertEqual(p.returncode, 75, p.stderr)
        recs = self.records(p.stdout)
        self.assertEqual([r["status"] for r in recs[:-1]], ["ok", "failed"])
        self.assertEqual(recs[-1]["type"], "summary")
        self.assertEqual(recs[-1]["not_run"], 1)
        self.assertTrue(os.path.exists(self.path("out/a.up.txt")))
        self.assertFalse(os.path.exists(self.path("out/c.up.txt")))

    def test_bad_input_one_line_exit_1_no_output(self):
        self.write("bad.txt", "this will FAIL\n")
        p = self.run_demo("bad.txt", "-o", "bad.out", "--device", "cpu")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, f"{NAME}: bad.txt: contains the failure marker FAIL\n")
        self.assertEqual(p.stdout, "")
        self.assertFalse(os.path.exists(self.path("bad.out")))
        self.assertEqual(self.temps_under("."), [])
        # A missing file: the same shape, naming the file.
        p = self.run_demo("nope.txt", "-o", "nope.out", "--device", "cpu")
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stderr, rf"^{NAME}: nope.txt: [^\n]+\n$")
        self.assertFalse(os.path.exists(self.path("nope.out")))
        # A message that already names the item is not prefixed again: its path, or `<stdin>` for `-`.
        self.write("named.txt", "NAMEDFAIL\n")
        p = self.run_demo("named.txt", "-o", "named.out", "--device", "cpu")
        self.assertEqual((p.returncode, p.stderr), (1, f"{NAME}: named.txt: contains the failure marker NAMEDFAIL\n"))
        p = self.run_demo("-", "-o", "-", "--device", "cpu", stdin="NAMEDFAIL\n")
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertEqual(p.stderr, f"{NAME}: <stdin>: contains the failure marker NAMEDFAIL\n")

    def test_failed_writer_leaves_no_temp_and_no_output(self):
        self.write("w.txt", "this BADWRITE is long enough to be half written\n")
        self.write("ok.txt", "fine\n")
        p = self.run_demo("w.txt", "ok.txt", "-o", "out/{/.}.txt", "--device", "cpu", "--json")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, f"{NAME}: w.txt: out/w.txt: simulated write failure\n")
        self.assertEqual(os.listdir(self.path("out")), ["ok.txt"])  # no temp file, no partial output
        self.assertEqual([r["status"] for r in self.records(p.stdout)[:-1]], ["failed", "ok"])
        # The same through stdout: nothing of the failed item reaches stdout, and TMPDIR is clean.
        p = self.run_demo("w.txt", "ok.txt", "-o", "-", "--device", "cpu")
        self.assertEqual((p.returncode, p.stdout), (1, "FINE\n"))

    def test_failed_item_does_not_stop_the_batch_unless_fail_fast(self):
        names = self.make_batch(5, fail={1})
        p = self.run_demo(*names, "--output-dir", "out", "--device", "cpu")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(sorted(os.listdir(self.path("out"))), ["f000.up.txt", "f002.up.txt", "f003.up.txt",
                                                                "f004.up.txt"])
        p = self.run_demo(*names, "--output-dir", "ff", "--device", "cpu", "--fail-fast", "--json")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(sorted(os.listdir(self.path("ff"))), ["f000.up.txt"])
        summary = self.records(p.stdout)[-1]
        self.assertEqual((summary["ok"], summary["failed"], summary["not_run"]), (1, 1, 3))

    def test_folder_argument_expands_into_items(self):
        names = self.make_batch(3, prefix="dir")
        self.write("x.txt", "x\n")
        self.write("dir/skip.md", "not a .txt\n")
        p = self.run_demo("x.txt", "dir", "-o", "out/{#}.up", "--device", "cpu", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        recs = self.records(p.stdout)
        self.assertEqual([r["input"] for r in recs[:-1]], ["x.txt"] + names)
        self.assertEqual([r["index"] for r in recs[:-1]], [0, 1, 2, 3])
        self.assertEqual(self.read("out/4.up"), "ITEM 2\n")
        self.assertEqual(recs[-1]["total_items"], 4)
        # --shard works on the expanded items; an unusable folder is a usage error before any item.
        p = self.run_demo("dir", "x.txt", "--shard", "1/2", "-o", "sh/{#}.up", "--device", "cpu", "--json")
        self.assertEqual([r["input"] for r in self.records(p.stdout)[:-1]], [names[1], "x.txt"])
        os.mkdir(self.path("empty"))
        p = self.run_demo("empty", "-o", "e/{#}.up", "--device", "cpu")
        self.assertEqual((p.returncode, p.stderr), (2, f"{NAME}: error: empty: no .txt files\n"))

    # records -----------------------------------------------------------------------------------------
    def test_json_records_and_summary_schema(self):
        names = self.make_batch(3, fail={1})
        p = self.run_demo(*names, "--output-dir", "out", "--device", "cpu", "--json")
        self.assertEqual(p.returncode, 1)
        recs = self.records(p.stdout)  # every stdout line is one JSON object
        self.assertEqual(len(recs), 4)
        for k, r in enumerate(recs[:3]):
            self.assertEqual(r["type"], "item")
            self.assertEqual(r["index"], k)
            self.assertEqual(r["input"], names[k])
            self.assertIsInstance(r["seconds"], float)
        self.assertEqual([r["status"] for r in recs[:3]], ["ok", "failed", "ok"])
        self.assertEqual(recs[0]["output"], "out/f000.up.txt")
        self.assertEqual(recs[0]["chars"], len("item 0\n"))  # the tool's own fields
        self.assertIn("FAIL", recs[1]["error"])
        s = recs[3]
        self.assertEqual(s["type"], "summary")
        self.assertEqual(s["tool"], NAME)
        self.assertRegex(s["version"], r"^\d+\.\d+\.\d+$")
        self.assertEqual((s["ok"], s["failed"], s["skipped"], s["items"], s["exit_code"]), (2, 1, 0, 3, 1))
        self.assertEqual(s["device"], "cpu")
        self.assertEqual(s["settings"]["device"], "cpu")
        self.assertEqual(s["settings"]["output-dir"], "out")
        self.assertEqual(s["total_chars"], 2 * len("item 0\n"))  # on_summary fields
        # --report writes the same records to a file; stderr still has the failure line.
        p2 = self.run_demo(*names, "--output-dir", "out2", "--device", "cpu", "--report", "r.jsonl")
        self.assertEqual(p2.returncode, 1)
        self.assertEqual(p2.stdout, "")
        rep = self.records(self.read("r.jsonl"))
        self.assertEqual([r["status"] for r in rep[:3]], ["ok", "failed", "ok"])
        self.assertEqual(rep[-1]["type"], "summary")

    def test_threads_reach_the_cpu_backends(self):
        self.write("a.txt", "x\n")
        for n in (1, 3):
            p = self.run_demo("a.txt", "-o", f"t{n}.out", "--device", "cpu", "--threads", str(n), "--json")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(self.records(p.stdout)[0]["cpu_threads"], n)

    # stdin / stdout ----------------------------------------------------------------------------------
    def test_dash_pipes_stdin_to_stdout(self):
        p = self.run_demo("-", "-o", "-", "--device", "cpu", stdin="piped text\n")
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "PIPED TEXT\n", ""))
        # With records: data on stdout, records in the report.
        p = self.run_demo("-", "-o", "-", "--device", "cpu", "--json", "--report", "r.jsonl", stdin="abc")
        self.assertEqual((p.returncode, p.stdout), (0, "ABC"))
        recs = self.records(self.read("r.jsonl"))
        self.assertEqual((recs[0]["input"], recs[0]["status"], recs[1]["type"]), ("-", "ok", "summary"))
        # stdin to a templated file: `-` is named "stdin".
        p = self.run_demo("-", "-o", "{/.}.up.txt", "--device", "cpu", stdin="x")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.read("stdin.up.txt"), "X")

    def test_broken_pipe_is_quiet_exit_0(self):
        names = self.make_batch(1)
        with open(self.path(names[0]), "w") as f:
            f.write("x" * 200000)
        proc = subprocess.Popen([DEMO, *(names * 1), *(names * 49), "-o", "-", "--device", "cpu"], cwd=self.dir,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
        proc.stdout.read(10)
        proc.stdout.close()  # the consumer stops reading
        err = proc.stderr.read().decode()
        rc = proc.wait(timeout=60)
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(os.listdir(self.tmpdir), [])

    # batches -----------------------------------------------------------------------------------------
    def test_output_templates(self):
        names = self.make_batch(3)
        p = self.run_demo(*names, "-o", "res/{//}/{/.}_{#}.txt", "--device", "cpu")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(self.path("res/in"))), ["f000_1.txt", "f001_2.txt", "f002_3.txt"])
        self.assertEqual(self.read("res/in/f001_2.txt"), "ITEM 1\n")
        p = self.run_demo(*names, "-o", "{/}.u", "--output-dir", "od", "--device", "cpu")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(self.path("od"))), ["f000.txt.u", "f001.txt.u", "f002.txt.u"])

    def test_existing_outputs_overwrite_and_skip(self):
        self.write("a.txt", "new\n")
        self.write("a.out", "old\n")
        p = self.run_demo("a.txt", "-o", "a.out", "--device", "cpu")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(p.stderr.splitlines()), 1)
        self.assertIn("a.out", p.stderr)
        self.assertEqual(self.read("a.out"), "old\n")  # never silently replaced
        p = self.run_demo("a.txt", "-o", "a.out", "--device", "cpu", "--skip-existing", "--json")
        self.assertEqual(p.returncode, 0)
        self.assertEqual(self.records(p.stdout)[0]["status"], "skipped")
        self.assertEqual(self.records(p.stdout)[-1]["skipped"], 1)
        self.assertEqual(self.read("a.out"), "old\n")
        p = self.run_demo("a.txt", "-o", "a.out", "--device", "cpu", "--overwrite")
        self.assertEqual(p.returncode, 0)
        self.assertEqual(self.read("a.out"), "NEW\n")

    def test_input_list(self):
        names = self.make_batch(3)
        lst = self.write("list.txt", "# inputs\n" + "\n".join(names) + "\n\n")
        p = self.run_demo("--input-list", lst, "--output-dir", "out", "--device", "cpu")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(os.listdir(self.path("out"))), 3)
        p = self.run_demo("--input-list", "-", "--output-dir", "out2", "--device", "cpu", stdin="\n".join(names))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(os.listdir(self.path("out2"))), 3)

    def test_manifest_and_chaining_records(self):
        names = self.make_batch(4, fail={2})
        manifest = self.write("m.jsonl", "".join(json.dumps({"input": n, "id": i}) + "\n" for i, n in enumerate(names)))
        p = self.run_demo("--manifest", manifest, "-o", "a/{/.}.txt", "--device", "cpu", "--json")
        self.assertEqual(p.returncode, 1)
        # The next tool reads these records: failed items and the summary are skipped, outputs become inputs.
        p2 = self.run_demo("--manifest", "-", "-o", "b/{/.}.again", "--device", "cpu", "--json", stdin=p.stdout)
        self.assertEqual(p2.returncode, 0, p2.stderr)
        recs = self.records(p2.stdout)
        self.assertEqual([r["input"] for r in recs[:-1]], ["a/f000.txt", "a/f001.txt", "a/f003.txt"])
        self.assertEqual(sorted(os.listdir(self.path("b"))), ["f000.again", "f001.again", "f003.again"])
        # A bad manifest line is a usage error naming the line, before any item runs.
        bad = self.write("bad.jsonl", json.dumps({"input": names[0]}) + "\n{oops\n")
        p3 = self.run_demo("--manifest", bad, "--output-dir", "c", "--device", "cpu")
        self.assertEqual(p3.returncode, 2)
        self.assertIn("bad.jsonl:2", p3.stderr)
        self.assertFalse(os.path.exists(self.path("c")))

    def test_shard_partitions_a_manifest_exactly(self):
        n_items, n_shards = 23, 4
        names = self.make_batch(n_items)
        manifest = self.write("m.jsonl", "".join(json.dumps({"input": n}) + "\n" for n in names))
        seen = {}
        for i in range(n_shards):
            p = self.run_demo("--manifest", manifest, "--output-dir", "out", "--shard", f"{i}/{n_shards}",
                              "--device", "cpu", "--json")
            self.assertEqual(p.returncode, 0, p.stderr)
            recs = self.records(p.stdout)
            for r in recs[:-1]:
                self.assertEqual(r["index"] % n_shards, i)
                self.assertNotIn(r["index"], seen)  # disjoint
                seen[r["index"]] = r["input"]
            self.assertEqual(recs[-1]["items"], len(recs) - 1)
            self.assertEqual(recs[-1]["total_items"], n_items)
        self.assertEqual(seen, dict(enumerate(names)))  # the union is everything, in manifest order
        self.assertEqual(len(os.listdir(self.path("out"))), n_items)
        # --shard auto from a Slurm array (ids 1..4) covers the same partition.
        auto_seen = set()
        for task in range(1, n_shards + 1):
            env = dict(self.env, SLURM_ARRAY_TASK_ID=str(task), SLURM_ARRAY_TASK_COUNT=str(n_shards),
                       SLURM_ARRAY_TASK_MIN="1")
            p = self.run_demo("--manifest", manifest, "--output-dir", "auto", "--shard", "auto", "--device", "cpu",
                              "--json", env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            idx = {r["index"] for r in self.records(p.stdout)[:-1]}
            self.assertTrue(all(k % n_shards == task - 1 for k in idx))
            self.assertFalse(idx & auto_seen)
            auto_seen |= idx
        self.assertEqual(auto_seen, set(range(n_items)))
        # Kubernetes indexed job: JOB_COMPLETION_INDEX + --shard-count.
        env = dict(self.env, JOB_COMPLETION_INDEX="2")
        p = self.run_demo("--manifest", manifest, "--output-dir", "k8s", "--shard", "auto", "--shard-count", "4",
                          "--device", "cpu", "--json", env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual({r["index"] for r in self.records(p.stdout)[:-1]}, set(range(2, n_items, 4)))

    def test_subcommand_takes_common_options_and_inputs(self):
        self.write("a.txt", "MiXeD\n")
        p = self.run_demo("lower", "--prefix", "> ", "a.txt", "-o", "{/.}.low", "--device", "cpu", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.read("a.low"), "> mixed\n")
        self.assertEqual(self.records(p.stdout)[-1]["settings"]["lower"], {"prefix": "> "})
        p = self.run_demo("--device", "cpu", "a.txt", "-o", "{/.}.up")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.read("a.up"), "MIXED\n")
        self.assertIn("lower", self.run_demo("--generate-completion", "bash").stdout)

    # signals -----------------------------------------------------------------------------------------
    def _interrupt(self, sig, expected_rc):
        n = 20
        names = self.make_batch(n)
        ref = self.run_demo(*names, "--output-dir", "ref", "--device", "cpu")
        self.assertEqual(ref.returncode, 0, ref.stderr)
        proc = subprocess.Popen([DEMO, *names, "--output-dir", "out", "--device", "cpu", "--sleep-ms", "150",
                                 "--report", "r.jsonl"], cwd=self.dir, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env)
        deadline = time.time() + 60
        while time.time() < deadline:
            if os.path.isdir(self.path("out")) and len(os.listdir(self.path("out"))) >= 2:
                break
            time.sleep(0.02)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, expected_rc, err)
        done = [f for f in os.listdir(self.path("out")) if not f.startswith(".")]
        self.assertLess(len(done), n)
        self.assertEqual(self.temps_under("out"), [])
        self.assertEqual(os.listdir(self.tmpdir), [])
        rep = self.records(self.read("r.jsonl"))  # flushed, ending with the summary
        self.assertEqual(rep[-1]["type"], "summary")
        self.assertEqual(rep[-1]["interrupted"], "SIGTERM" if sig == signal.SIGTERM else "SIGINT")
        self.assertEqual(rep[-1]["ok"], len(done))
        # Resume: the same command with --skip-existing completes the batch, identically.
        p = self.run_demo(*names, "--output-dir", "out", "--device", "cpu", "--skip-existing", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.records(p.stdout)[-1]["skipped"], len(done))
        self.assertEqual(sorted(os.listdir(self.path("out"))), sorted(os.listdir(self.path("ref"))))
        for f in os.listdir(self.path("ref")):
            self.assertEqual(self.read("out/" + f), self.read("ref/" + f))

    def test_sigterm_mid_batch_then_skip_existing_resumes(self):
        self._interrupt(signal.SIGTERM, 143)

    def test_sigint_mid_batch_exits_130(self):
        self._interrupt(signal.SIGINT, 130)

    def test_second_signal_exits_at_once_removing_temps(self):
        proc = self.start_stuck_writer(DEMO)
        proc.send_signal(signal.SIGTERM)  # first: recorded, the item would finish
        time.sleep(0.3)
        self.assertIsNone(proc.poll())
        proc.send_signal(signal.SIGTERM)  # second: exit now
        try:
            # The writer sleeps 30 s: ending before that means the second signal abandoned the item.
            proc.communicate(timeout=25)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            self.fail("the second signal did not end the process before the 30 s write finished")
        self.assertEqual(proc.returncode, 143)
        self.assertEqual(os.listdir(self.path("out")), [])

    # stderr: progress, verbosity, colour -------------------------------------------------------------
    def _run_with_tty_stderr(self, args, env):
        try:
            master, slave = pty.openpty()
        except OSError as e:
            self.skipTest(f"no pseudo-terminal here: {e}")
        proc = subprocess.Popen([DEMO, *args], cwd=self.dir, stdout=subprocess.PIPE, stderr=slave, env=env)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=60)
        os.close(master)
        return proc.returncode, b"".join(chunks).decode(errors="replace")

    def test_progress_only_on_a_terminal(self):
        names = self.make_batch(3)
        p = self.run_demo(*names, "--output-dir", "a", "--device", "cpu")  # stderr is a pipe: no bar
        self.assertEqual(p.stderr, "")
        p = self.run_demo(*names, "--output-dir", "b", "--device", "cpu", "--progress", "always")
        self.assertIn("[########################] 3/3", p.stderr)  # (text mode shows the \r as \n)
        rc, err = self._run_with_tty_stderr([*names, "--output-dir", "c", "--device", "cpu"], self.env)
        self.assertEqual(rc, 0)
        self.assertIn("\r[", err)
        rc, err = self._run_with_tty_stderr([*names, "--output-dir", "d", "--device", "cpu", "-q"], self.env)
        self.assertEqual((rc, err), (0, ""))
        rc, err = self._run_with_tty_stderr([*names, "--output-dir", "e", "--device", "cpu", "--progress", "never"],
                                            self.env)
        self.assertEqual((rc, err), (0, ""))

    def test_colour_on_a_terminal_unless_no_color(self):
        self.write("a.txt", "x\n")
        args = ["a.txt", "-o", "{}.out", "--overwrite", "--progress", "never", "-v"]
        rc, err = self._run_with_tty_stderr(args, self.env)
        self.assertEqual(rc, 0)
        self.assertIn("\033[", err)
        rc, err = self._run_with_tty_stderr(args, dict(self.env, NO_COLOR="1"))
        self.assertEqual(rc, 0)
        self.assertIn(f"{NAME}: info:", err)
        self.assertNotIn("\033[", err)

    def test_verbosity_levels(self):
        self.write("a.txt", "x\n")
        quiet = self.run_demo("a.txt", "-o", "q.out", "-q")
        normal = self.run_demo("a.txt", "-o", "n.out", "--device", "cpu")
        verbose = self.run_demo("a.txt", "-o", "v.out", "--device", "cpu", "-v")
        self.assertEqual([quiet.returncode, normal.returncode, verbose.returncode], [0, 0, 0])
        self.assertEqual(quiet.stderr, "")
        self.assertEqual(normal.stderr, "")
        self.assertIn(f"{NAME}: info:", verbose.stderr)
        self.assertNotIn("debug", verbose.stderr)
        debug = self.run_demo("a.txt", "-o", "d.out", "--device", "cpu", "-vv")
        self.assertIn(f"{NAME}: debug: item 1: a.txt", debug.stderr)
        self.assertEqual(self.run_demo("a.txt", "-o", "x.out", "-q", "-v").returncode, 2)


def main():
    global DEMO, DOC_DIR
    args = sys.argv[1:]
    if os.environ.get("S3D_FRAME_DEMO"):
        DEMO = os.path.abspath(os.environ["S3D_FRAME_DEMO"])
        if os.environ.get("S3D_FRAME_DEMO_DOC_DIR"):
            DOC_DIR = os.path.abspath(os.environ["S3D_FRAME_DEMO_DOC_DIR"])
    else:
        if not args or args[0].startswith("-"):
            sys.exit(__doc__)
        DEMO = os.path.abspath(args.pop(0))
        if args and not args[0].startswith("-"):
            DOC_DIR = os.path.abspath(args.pop(0))
    unittest.main(argv=[sys.argv[0], "-v", *args])


if __name__ == "__main__":
    main()
