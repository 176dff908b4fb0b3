#!/usr/bin/env python3
"""End-to-end tests of the frame's output, input and signal promises (docs/CLI.md, "Outputs", "Pipes and
signals"), on s3d-frame-demo (tests/cli/frame/frame_demo.cpp) and, where a tool's own path shows the defect,
on nms-filter and sgm-depth.

Run with S3D_FRAME_DEMO, S3D_NMS_FILTER, S3D_SGM_DEPTH (and S3D_DATA_DIR) set, as CTest does:
frame_outputs_test.py [-k PATTERN | OutputsTest.test_name ...]
"""
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import unittest

from frame_case import FrameCase

DEMO = os.environ.get("S3D_FRAME_DEMO", "")
NMS = os.environ.get("S3D_NMS_FILTER", "")
SGM = os.environ.get("S3D_SGM_DEPTH", "")
SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "sample")


def host_tag():
    return socket.gethostname().replace(".", "_").replace("/", "_")


def dead_pid():
    """The id of a process that has ended (reaped), for a stale temp's name."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


class OutputsTest(FrameCase):
    def run_tool(self, exe, *args, stdin=None, check_tmp=True):
        proc = subprocess.run([exe, *args], cwd=self.dir, input=stdin, capture_output=True, text=True, env=self.env,
                              timeout=300)
        if check_tmp:
            self.assertEqual(os.listdir(self.tmpdir), [], "temp files left in TMPDIR")
        return proc

    def demo(self, *args, **kw):
        return self.run_tool(DEMO, *args, "--device", "cpu", **kw)

    def assert_one_error_line(self, proc, *parts):
        lines = proc.stderr.splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        for part in parts:
            self.assertIn(part, lines[0])

    def wait_blocked(self, proc):
        """Waits (at most 10 s) until the process sleeps in a read (wchan names a pipe or FIFO wait), so that
        the signal arrives during the wait; where /proc says nothing, a short pause does."""
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                states = []
                for tid in os.listdir(f"/proc/{proc.pid}/task"):
                    with open(f"/proc/{proc.pid}/task/{tid}/wchan") as f:
                        states.append(f.read())
                if any(w in s for s in states for w in ("pipe", "fifo", "partner")):
                    return
                if all(s in ("", "0") for s in states):
                    break  # wchan hidden here
            except OSError:
                break
            time.sleep(0.05)
        time.sleep(1.0)

    # 1. special files at the output path --------------------------------------------------------------
    def test_dev_null_output_stays_a_device(self):
        self.write("a.txt", "text\n")
        for extra in ([], ["--overwrite"]):
            p = self.demo("a.txt", "-o", "/dev/null", *extra)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(stat.S_ISCHR(os.stat("/dev/null").st_mode))
        self.assertEqual(os.listdir(self.tmpdir), [])

    def test_fifo_output_is_written_through(self):
        self.write("a.txt", "through the fifo\n")
        fifo = self.path("out.fifo")
        os.mkfifo(fifo)
        got = []

        def reader():
            with open(fifo) as f:
                got.append(f.read())

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        try:
            p = self.demo("a.txt", "-o", "out.fifo", "--overwrite")
        finally:
            if t.is_alive():  # the tool never opened the fifo: release the reader
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK) if stat.S_ISFIFO(os.stat(fifo).st_mode) else None
                if fd is not None:
                    os.close(fd)
            t.join(10)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode), "the fifo was replaced")
        self.assertEqual(got, ["THROUGH THE FIFO\n"])

    def test_fifo_output_commits_nothing_before_its_reader(self):
        """An item's file outputs are committed only after its FIFO output has its reader: a signal during the
        wait leaves none of them; kill -9 there leaves a staged copy in $TMPDIR that the next run removes, even
        one that skips every item."""
        self.write("a.txt", "fine\n")
        os.mkfifo(self.path("b.fifo"))
        for how in (signal.SIGTERM, signal.SIGKILL):
            proc = subprocess.Popen([DEMO, "--device", "cpu", "--second", "a.txt", "-o", "out/a.txt", "-o", "b.fifo",
                                     "--overwrite"], cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    env=self.env)
            self.wait_blocked(proc)
            proc.send_signal(how)
            proc.communicate(timeout=30)
            self.assertEqual(proc.returncode, 143 if how == signal.SIGTERM else -signal.SIGKILL)
            out = os.listdir(self.path("out")) if os.path.isdir(self.path("out")) else []
            self.assertEqual([f for f in out if not f.startswith(".")], [])  # kill -9 leaves a hidden temp
            self.assertTrue(stat.S_ISFIFO(os.stat(self.path("b.fifo")).st_mode))
        self.assertNotEqual(os.listdir(self.tmpdir), [])  # the killed run's staged copy
        self.write("c.txt", "other\n")
        self.write(os.path.join("done", "c.up.txt"), "made before\n")
        p = self.run_tool(DEMO, "c.txt", "--output-dir", "done", "--skip-existing", "--device", "cpu")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(os.listdir(self.tmpdir), [])  # run_tool's own check, made explicit

    def test_symlink_output_replaces_its_target(self):
        self.write("a.txt", "new\n")
        self.write("real/target.txt", "old\n")
        os.symlink("real/target.txt", self.path("link.txt"))
        p = self.demo("a.txt", "-o", "link.txt", "--overwrite", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.islink(self.path("link.txt")), "the link was replaced by a file")
        self.assertEqual(self.read("real/target.txt"), "NEW\n")
        self.assertEqual(json.loads(p.stdout.splitlines()[0])["output"], "link.txt")
        self.assertEqual(self.temps_under("real"), [])
        # Without --overwrite the existing target is kept.
        p = self.demo("a.txt", "-o", "link.txt")
        self.assertEqual(p.returncode, 1)
        self.assert_one_error_line(p, "link.txt: exists")

    # 2. --threads bound -------------------------------------------------------------------------------
    def test_threads_above_the_bound_is_a_usage_error(self):
        self.write("a.txt", "x\n")
        for n in ("70000", "1025"):
            p = self.demo("a.txt", "-o", "out.txt", "--threads", n)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assert_one_error_line(p, "--threads")
        self.assertFalse(os.path.exists(self.path("out.txt")))
        self.assertEqual(self.demo("a.txt", "-o", "out.txt", "--threads", "3").returncode, 0)

    # 3. empty stdin -----------------------------------------------------------------------------------
    def test_empty_stdin_is_a_data_error_and_leaves_no_temp(self):
        p = self.demo("-", "-o", "out.txt", stdin="")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assert_one_error_line(p, "-: empty input")
        self.assertNotIn("temporary", p.stderr)
        self.assertFalse(os.path.exists(self.path("out.txt")))

    def test_empty_stdin_in_nms_filter(self):
        p = self.run_tool(NMS, "--format", "csv", "-", "-o", "out.csv", "--device", "cpu", stdin="")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assert_one_error_line(p, "-: empty input")

    # 4. an item's outputs are all or nothing ----------------------------------------------------------
    def test_failed_second_output_leaves_no_first(self):
        self.write("a.txt", "SECONDBAD\n")
        p = self.demo("--second", "a.txt", "-o", "out/a.txt", "-o", "out/b.txt")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(os.listdir(self.path("out")) if os.path.isdir(self.path("out")) else [], [])
        self.write("ok.txt", "fine\n")
        p = self.demo("--second", "ok.txt", "-o", "out/a.txt", "-o", "out/b.txt")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(self.path("out"))), ["a.txt", "b.txt"])

    def test_failed_folder_output_leaves_nothing(self):
        self.write("a.txt", "BADWRITE\n")
        p = self.demo("--folder-out", "a.txt", "-o", "out/d")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(os.listdir(self.path("out")) if os.path.isdir(self.path("out")) else [], [])
        self.write("ok.txt", "fine\n")
        p = self.demo("--folder-out", "ok.txt", "-o", "out/d")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(self.path("out/d"))), ["part1.txt", "part2.txt", "part3.txt"])
        self.assertEqual(self.temps_under("out"), [])

    def test_sgm_depth_failed_emit_leaves_no_earlier_output(self):
        left, right = os.path.join(SAMPLE, "left.png"), os.path.join(SAMPLE, "right.png")
        # The colour image cannot be written as .xyz: the item fails after its disparity was encoded.
        p = self.run_tool(SGM, left, right, "--device", "cpu", "-D", "32", "--emit", "disparity", "--emit", "color", "-o",
                          "out/d.pfm", "-o", "out/c.xyz")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(os.listdir(self.path("out")) if os.path.isdir(self.path("out")) else [], [])

    # 5. two items writing one path --------------------------------------------------------------------
    def test_two_items_writing_one_output_is_a_usage_error(self):
        self.write("d1/a.txt", "one\n")
        self.write("d2/a.txt", "two\n")
        for extra in ([], ["--overwrite"]):
            p = self.demo("d1/a.txt", "d2/a.txt", "--output-dir", "out", *extra)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assert_one_error_line(p, "item 1 (d1/a.txt)", "item 2 (d2/a.txt)", "a.up.txt")
            self.assertFalse(os.path.exists(self.path("out", "a.up.txt")))
        p = self.demo("d1/a.txt", "--second", "-o", "same.txt", "-o", "same.txt")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assert_one_error_line(p, "item 1 (d1/a.txt)", "same.txt")

    # 7. the first signal ends a blocked read ----------------------------------------------------------
    def _signal_while_waiting(self, args, sig, expected_rc):
        proc = subprocess.Popen([DEMO, *args, "--device", "cpu"], cwd=self.dir, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
        try:
            self.wait_blocked(proc)
            proc.send_signal(sig)  # one signal only
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            self.fail("one signal did not end a process waiting on input")
        finally:
            proc.stdin.close()
            proc.stdout.close()
            proc.stderr.close()
            proc.wait()
        self.assertEqual(proc.returncode, expected_rc)
        self.assertEqual(os.listdir(self.tmpdir), [], "temp files left in TMPDIR")

    def test_sigterm_ends_a_wait_on_stdin(self):
        self._signal_while_waiting(["-", "-o", "out.txt"], signal.SIGTERM, 143)

    def test_sigint_ends_a_wait_on_a_manifest_pipe(self):
        self._signal_while_waiting(["--manifest", "-", "--output-dir", "out"], signal.SIGINT, 130)

    def test_sigterm_ends_a_wait_on_a_fifo_input(self):
        os.mkfifo(self.path("in.fifo"))
        self._signal_while_waiting(["in.fifo", "-o", "out.txt"], signal.SIGTERM, 143)
        self.assertFalse(os.path.exists(self.path("out.txt")))

    # 8. manifest names stay inside --output-dir -------------------------------------------------------
    def test_manifest_name_outside_the_output_dir_is_refused(self):
        self.write("a.txt", "x\n")
        for name in ("../x", "/tmp/x", "a/../../x"):
            self.write("m.jsonl", '{"input":"a.txt","name":"ok"}\n' + json.dumps({"input": "a.txt", "name": name}))
            p = self.demo("--manifest", "m.jsonl", "--output-dir", "out")
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assert_one_error_line(p, "m.jsonl:2:", name)
            self.assertFalse(os.path.exists(self.path("out")))

    # 9. --config: unknown keys and unreadable lines ---------------------------------------------------
    def test_config_unknown_key_or_garbage_is_a_usage_error(self):
        self.write("a.txt", "x\n")
        for text, line in (("threads = 2\nthreds = 3\n", 2), ("# c\nthis is not a setting\n", 2), ("zz\n", 1),
                           ("[nosuch]\nthreads = 1\n", 1)):
            self.write("c.toml", text)
            p = self.demo("a.txt", "-o", "out.txt", "--config", "c.toml")
            self.assertEqual(p.returncode, 2, text + p.stderr)
            self.assert_one_error_line(p, f"c.toml:{line}:")
            self.assertFalse(os.path.exists(self.path("out.txt")))
        self.write("c.toml", "threads = 2\n[lower]\nprefix = \"p:\"\n")
        p = self.demo("lower", "a.txt", "-o", "out.txt", "--config", "c.toml")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.read("out.txt"), "p:x\n")

    def test_sgm_depth_config_misspelt_key(self):
        self.write("c.toml", "disparites = 16\n")
        left, right = os.path.join(SAMPLE, "left.png"), os.path.join(SAMPLE, "right.png")
        p = self.run_tool(SGM, left, right, "-o", "d.pfm", "--device", "cpu", "--config", "c.toml")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assert_one_error_line(p, "c.toml:1:", "disparites")
        self.assertFalse(os.path.exists(self.path("d.pfm")))

    # Also: messages, up-front output checks, folders, stale temps --------------------------------------
    def test_writer_message_names_the_output_not_the_temp(self):
        self.write("a.txt", "TMPBAD\n")
        p = self.demo("a.txt", "-o", "out/a.txt")
        self.assertEqual(p.returncode, 1)
        self.assert_one_error_line(p, "out/a.txt: simulated write failure")
        self.assertNotIn("s3d-tmp", p.stderr)

    def test_output_dir_that_is_a_file_is_a_usage_error(self):
        self.write("a.txt", "x\n")
        self.write("f", "a file\n")
        p = self.demo("a.txt", "--output-dir", "f", "--json")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assert_one_error_line(p, "--output-dir f")
        self.assertEqual(p.stdout, "")  # before any item: no record

    def test_output_under_a_file_is_a_usage_error_before_any_item(self):
        self.write("a.txt", "x\n")
        self.write("b.txt", "y\n")
        self.write("f", "a file\n")
        p = self.demo("a.txt", "b.txt", "-o", "f/sub/{/.}.up.txt", "--json")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assert_one_error_line(p, "f/sub/a.up.txt: f is not a folder")
        self.assertEqual(p.stdout, "")  # before any item: no record
        self.assertEqual(sorted(os.listdir(self.dir)), ["a.txt", "b.txt", "f", "tmp"])  # tmp: the test's TMPDIR

    def test_write_failures_say_why(self):
        self.write("a.txt", "x\n")
        p = self.demo("a.txt", "-o", "/dev/full")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assert_one_error_line(p, "/dev/full", "No space left on device")

    def test_sgm_depth_stdout_without_format_is_a_usage_error(self):
        left, right = os.path.join(SAMPLE, "left.png"), os.path.join(SAMPLE, "right.png")
        p = self.run_tool(SGM, left, right, "-o", "-", "--device", "cpu")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assert_one_error_line(p, "--format")
        self.assertEqual(p.stdout, "")

    def test_folder_at_a_file_output_is_an_item_error_even_with_skip_existing(self):
        self.write("a.txt", "x\n")
        os.makedirs(self.path("out", "a.up.txt"))
        for extra in ([], ["--skip-existing"], ["--overwrite"]):
            p = self.demo("a.txt", "--output-dir", "out", "--json", *extra)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assert_one_error_line(p, "out/a.up.txt: is a folder")
            self.assertEqual(json.loads(p.stdout.splitlines()[0])["status"], "failed")
            self.assertTrue(os.path.isdir(self.path("out", "a.up.txt")))

    def test_stale_temps_of_dead_processes_are_removed(self):
        self.write("a.txt", "x\n")
        os.makedirs(self.path("out"))
        stale = f".a.up.txt.s3d-tmp.{host_tag()}.{dead_pid()}.7.txt"
        stale_dir = f".d.s3d-tmp.{host_tag()}.{dead_pid()}.8"
        live = f".a.up.txt.s3d-tmp.{host_tag()}.{os.getpid()}.9.txt"
        other_host = f".a.up.txt.s3d-tmp.otherhost{host_tag()}.{dead_pid()}.3.txt"
        for name in (stale, live, other_host):
            self.write(os.path.join("out", name), "half")
        os.makedirs(self.path("out", stale_dir, "inner"))
        p = self.demo("a.txt", "--output-dir", "out")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(self.path("out"))), sorted(["a.up.txt", live, other_host]))

    def test_temp_left_by_kill_9_is_removed_by_the_next_run(self):
        proc = self.start_stuck_writer(DEMO)
        proc.kill()
        proc.communicate()
        self.assertTrue(self.temps_under("out"))  # kill -9: nothing could clean up
        p = self.demo("a.txt", "-o", "out/a.txt")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(os.listdir(self.path("out")), ["a.txt"])


if __name__ == "__main__":
    if not (DEMO and NMS and SGM):
        sys.exit(__doc__)
    unittest.main(argv=[sys.argv[0], "-v", *sys.argv[1:]])
