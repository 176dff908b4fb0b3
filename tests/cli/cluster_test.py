#!/usr/bin/env python3
"""Datasets beyond one process (docs/CLUSTER.md): the tools under a real single-node Slurm (started by
scripts/slurm-local.sh: slurmctld + slurmd + munged on localhost) and under GNU parallel, on the real pairs
and clouds of $S3D_DATA_DIR. Each run's outputs must equal a single-process run's byte for byte, and the
merged shard reports (`TOOL report`) its summary.

Skipped with a message where Slurm or GNU parallel is not installed (scripts/setup.sh installs both); a
failure under CI=true. Skipped in the sanitizer build (S3D_SANITIZE=ON: 10-20x slower tools; the release
build runs them). Run as CTest does (tests/python_tests.cmake), with S3D_SGM_DEPTH, S3D_PC_SAMPLE,
S3D_SOURCE_DIR and S3D_DATA_DIR set.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tool_case import ToolCase  # noqa: E402

SGM = os.environ.get("S3D_SGM_DEPTH", "")
PCS = os.environ.get("S3D_PC_SAMPLE", "")
SOURCE = os.environ.get("S3D_SOURCE_DIR", "")
DATA = os.environ.get("S3D_DATA_DIR", "")
STEREO = os.path.join(DATA, "stereo")
CLOUDS = os.path.join(DATA, "pointclouds")
SHARDS = 4
# One thread per process: the shards then run side by side on a small machine, and every run (one process
# or a shard) computes the same way.
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="passive")
# Fields of a summary that describe the batch (not the run): a merge of the shards' reports must give them.
BATCH_FIELDS = ("total_items", "ok", "failed", "skipped", "eval", "totals")


def need(condition, why):
    """Skips the test with `why`, or fails it under CI=true (CI must run it)."""
    if condition:
        return
    if os.environ.get("CI") == "true":
        raise AssertionError(why + " (CI=true: this test must run)")
    raise unittest.SkipTest(why)


def stereo_manifest(path, kitti_copies):
    """The real pairs with ground truth, as a manifest; the KITTI pair (the slowest) repeated so that it
    lands on every SHARDS-th item (shard 1 of SHARDS gets all of them): that shard runs long enough to be
    cancelled mid-run."""
    middlebury = [("middlebury2001/tsukuba", 8), ("middlebury2001/venus", 8), ("middlebury2003/cones", 4),
                  ("middlebury2003/teddy", 4)]
    kitti = os.path.join(STEREO, "kitti2015", "000005_10")
    rows = []
    for copy in range(kitti_copies):
        for slot in range(SHARDS):
            if slot == 1:
                rows.append({"left": os.path.join(kitti, "stereo_left.png"),
                             "right": os.path.join(kitti, "stereo_right.png"),
                             "gt": os.path.join(kitti, "gt_disparity.png"), "gt_scale": 256,
                             "name": "kitti_000005_%d" % copy})
            else:
                name, scale = middlebury[(copy * SHARDS + slot) % len(middlebury)]
                folder = os.path.join(STEREO, name)
                rows.append({"left": os.path.join(folder, "imL.png"), "right": os.path.join(folder, "imR.png"),
                             "gt": os.path.join(folder, "groundtruth.png"), "gt_scale": scale,
                             "name": "%s_%d" % (name.replace("/", "_"), copy)})
    for r in rows:
        for key in ("left", "right", "gt"):
            need(os.path.exists(r[key]), "no real stereo data: %s is missing" % r[key])
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    return len(rows)


def cloud_list(path):
    clouds = sorted(glob.glob(os.path.join(CLOUDS, "stanford_bunny", "*.ply")) +
                    glob.glob(os.path.join(CLOUDS, "pcl_pcd", "*.pcd")) +
                    [os.path.join(CLOUDS, "kitti_velodyne", "000000.bin")])
    need(len(clouds) > 5 and all(os.path.exists(c) for c in clouds), "no real point clouds under " + CLOUDS)
    with open(path, "w") as f:
        f.writelines(c + "\n" for c in clouds)
    return len(clouds)


class ClusterCase(ToolCase):
    prefix = "s3d-cluster-"

    def setUp(self):
        if os.environ.get("S3D_SANITIZE") == "ON":
            self.skipTest("sanitizer build: the cluster batches run in the release build's tests")
        need(SGM and PCS and SOURCE, "S3D_SGM_DEPTH, S3D_PC_SAMPLE and S3D_SOURCE_DIR must be set")
        super().setUp()
        self.sgm_args = ["--device", "cpu", "--threads", "1", "--manifest", self.path("pairs.jsonl")]
        self.pcs_args = ["fps", "-n", "256", "--drop-invalid", "--device", "cpu", "--threads", "1",
                         "--input-list", self.path("clouds.txt")]

    def report(self, path):
        """The records of a --report file."""
        with open(path) as f:
            return self.records(f.read())

    def run_quiet(self, args, **kw):
        return subprocess.run(args, env=ENV, capture_output=True, text=True, timeout=240, **kw)

    def reference(self, exe, args, name):
        """One process over the whole batch: its outputs under ref-NAME/, its summary."""
        out, report = self.path("ref-" + name), self.path("ref-%s.jsonl" % name)
        proc = self.run_quiet([exe, *args, "--output-dir", out, "--report", report, "-q"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(report) as f:
            return out, self.records(f.read())[-1]

    def assert_same_outputs(self, ref_dir, out_dir):
        """The same files, byte for byte, and no temp files left (atomic writes: .NAME.s3d-tmp.*)."""
        ref, got = sorted(os.listdir(ref_dir)), sorted(os.listdir(out_dir))
        self.assertEqual(got, ref)
        self.assertTrue(ref)
        for name in ref:
            with open(os.path.join(ref_dir, name), "rb") as a, open(os.path.join(out_dir, name), "rb") as b:
                self.assertEqual(a.read(), b.read(), name)

    def merge(self, exe, reports, expect_rc=0):
        merged = self.path("merged-%d.jsonl" % len(glob.glob(self.path("merged-*.jsonl"))))
        proc = self.run_quiet([exe, "report", *reports, "-o", merged])
        self.assertEqual(proc.returncode, expect_rc, proc.stderr)
        with open(merged) as f:
            return self.records(f.read())

    def assert_merge_equals(self, exe, reports, ref_summary, items):
        records = self.merge(exe, reports)
        summary = records[-1]
        self.assertEqual([r["index"] for r in records[:-1]], list(range(items)))
        for field in BATCH_FIELDS:
            self.assertEqual(summary.get(field), ref_summary.get(field), field)
        self.assertEqual(summary["missing"], 0)
        return summary


class Slurm(ClusterCase):
    """A real single-node Slurm per test (its own folder, ports and munge socket)."""

    def setUp(self):
        super().setUp()
        self.slurm_dir = tempfile.mkdtemp(prefix="s3d-slurm-")  # short: munge and slurmd sockets live there
        script = os.path.join(SOURCE, "scripts", "slurm-local.sh")
        # Cleanups first (run last to first): a start that fails or times out still stops what it started.
        self.addCleanup(shutil.rmtree, self.slurm_dir, True)
        self.addCleanup(subprocess.run, ["bash", script, "stop", self.slurm_dir], capture_output=True, timeout=120)
        proc = subprocess.run(["bash", script, "start", self.slurm_dir], capture_output=True, text=True, timeout=180)
        if proc.returncode == 77:
            need(False, "Slurm is not installed (scripts/setup.sh installs slurm-wlm and munge): " + proc.stderr.strip())
        self.assertEqual(proc.returncode, 0, "single-node Slurm did not start: " + proc.stderr)
        self.env = dict(ENV)
        for line in proc.stdout.splitlines():  # `export VAR=value`
            key, _, value = line.removeprefix("export ").partition("=")
            self.env[key] = value
        self.assertIn("SLURM_CONF", self.env)
        os.makedirs(self.path("reports"))
        os.makedirs(self.path("logs"))

    def slurm(self, *args, timeout=240):
        proc = subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=timeout)
        self.assertEqual(proc.returncode, 0, "%s: %s" % (" ".join(args), proc.stderr))
        return proc.stdout

    def job_script(self, name, command):
        """A batch script running `command` (an argv list) as docs/CLUSTER.md's recipe does; the report of
        each attempt of each shard is kept (array task id + job id)."""
        quoted = " ".join("'%s'" % a for a in command)
        path = self.write(name + ".sh", "#!/bin/sh\nexec %s --shard auto --shard-count %d --skip-existing --json "
                          "--report %s/%s-${SLURM_ARRAY_TASK_ID}-${SLURM_JOB_ID}.jsonl\n"
                          % (quoted, SHARDS, self.path("reports"), name))
        os.chmod(path, 0o755)
        return path

    def sbatch(self, script, array, wait=True):
        args = ["sbatch", "--parsable", "--array=" + array, "--cpus-per-task=1", "-D", self.dir,
                "-o", self.path("logs", "%x-%A_%a.out")]
        return self.slurm(*args, *(["--wait"] if wait else []), script).strip().split(";")[0]

    def wait_gone(self, job, seconds=180):
        deadline = time.time() + seconds
        while time.time() < deadline:
            # A purged job makes squeue fail ("Invalid job id"): gone as well.
            proc = subprocess.run(["squeue", "-h", "-j", job, "-o", "%i"], env=self.env, capture_output=True, text=True,
                                  timeout=60)
            if proc.returncode != 0 or not proc.stdout.strip():
                return
            time.sleep(0.2)
        self.fail("job %s still queued after %d s" % (job, seconds))

    def test_array_jobs_equal_one_process(self):
        items = stereo_manifest(self.path("pairs.jsonl"), kitti_copies=2)
        clouds = cloud_list(self.path("clouds.txt"))
        for exe, args, name, count in ((SGM, self.sgm_args, "sgm", items), (PCS, self.pcs_args, "fps", clouds)):
            ref_dir, ref_summary = self.reference(exe, args, name)
            script = self.job_script(name, [exe, *args, "--output-dir", self.path("out-" + name)])
            self.sbatch(script, "0-%d" % (SHARDS - 1))
            self.assert_same_outputs(ref_dir, self.path("out-" + name))
            reports = sorted(glob.glob(self.path("reports", name + "-*.jsonl")))
            self.assertEqual(len(reports), SHARDS)
            shards = sorted(self.report(r)[-1]["shard"]["index"] for r in reports)
            self.assertEqual(shards, list(range(SHARDS)))
            for r in reports:
                self.assertEqual(self.report(r)[-1]["shard"]["source"], "slurm-array")
            self.assert_merge_equals(exe, reports, ref_summary, count)

    def test_cancelled_task_resubmitted_completes_the_batch(self):
        items = stereo_manifest(self.path("pairs.jsonl"), kitti_copies=6)
        ref_dir, ref_summary = self.reference(SGM, self.sgm_args, "sgm")
        out = self.path("out-sgm")
        script = self.job_script("sgm", [SGM, *self.sgm_args, "--output-dir", out])
        job = self.sbatch(script, "0-%d" % (SHARDS - 1), wait=False)
        # Shard 1 holds every KITTI pair: cancel its task once it has written its first output.
        kitti_outputs = ["kitti_000005_%d.pfm" % c for c in range(6)]
        deadline = time.time() + 180
        while not any(os.path.exists(os.path.join(out, k)) for k in kitti_outputs):
            self.assertLess(time.time(), deadline, "shard 1 wrote nothing in 180 s")
            time.sleep(0.05)
        self.slurm("scancel", job + "_1")
        self.wait_gone(job)
        done = [k for k in kitti_outputs if os.path.exists(os.path.join(out, k))]
        self.assertLess(len(done), len(kitti_outputs), "shard 1 finished before the cancel reached it")
        reports = sorted(glob.glob(self.path("reports", "sgm-*.jsonl")))
        # The merge names the gap: the cancelled shard's items that are in no report.
        summary = self.merge(SGM, reports, expect_rc=1)[-1]
        self.assertGreater(summary["missing"], 0)
        self.assertTrue(all(i % SHARDS == 1 for i in summary["missing_indexes"]), summary["missing_indexes"])

        # The same script for task 1 alone: --shard-count keeps it shard 1 of 4; --skip-existing keeps the
        # outputs the cancelled attempt finished.
        self.sbatch(script, "1")
        self.assert_same_outputs(ref_dir, out)
        reports = sorted(glob.glob(self.path("reports", "sgm-*.jsonl")))
        self.assertEqual(len(reports), SHARDS + 1)
        resubmitted = [self.report(r) for r in reports if os.path.basename(r).startswith("sgm-1-")]
        last = [recs[-1] for recs in resubmitted if recs and recs[-1]["type"] == "summary" and recs[-1]["skipped"]]
        self.assertEqual(len(last), 1, "one attempt of shard 1 skipped the outputs of the cancelled one")
        self.assertEqual(last[0]["skipped"], len(done))
        self.assertEqual(last[0]["shard"], {"index": 1, "count": SHARDS, "source": "slurm-array"})
        self.assert_merge_equals(SGM, reports, ref_summary, items)

    def test_srun_tasks_split_the_batch_and_the_batch_script_runs_it_whole(self):
        items = stereo_manifest(self.path("pairs.jsonl"), kitti_copies=1)
        ref_dir, ref_summary = self.reference(SGM, self.sgm_args, "sgm")
        quoted = " ".join("'%s'" % a for a in [SGM, *self.sgm_args])
        # Two tasks of one step split the batch (never run it twice); the batch script's own run (not a
        # step, though SLURM_NTASKS=2 there) takes the whole batch.
        script = self.write("tasks.sh", "#!/bin/sh\n"
                            "srun -n 2 sh -c 'exec %s --output-dir %s --shard auto --report %s/task-$SLURM_PROCID.jsonl'\n"
                            "exec %s --output-dir %s --shard auto --report %s/whole.jsonl\n"
                            % (quoted, self.path("out-tasks"), self.path("reports"),
                               quoted, self.path("out-whole"), self.path("reports")))
        self.slurm("sbatch", "--wait", "--ntasks=2", "--cpus-per-task=1", "-D", self.dir,
                   "-o", self.path("logs", "tasks-%j.out"), script)
        self.assert_same_outputs(ref_dir, self.path("out-tasks"))
        self.assert_same_outputs(ref_dir, self.path("out-whole"))
        tasks = [self.path("reports", "task-%d.jsonl" % t) for t in range(2)]
        for t, r in enumerate(tasks):
            self.assertEqual(self.report(r)[-1]["shard"], {"index": t, "count": 2, "source": "slurm-step"})
        self.assert_merge_equals(SGM, tasks, ref_summary, items)
        whole = self.report(self.path("reports", "whole.jsonl"))[-1]
        self.assertEqual(whole["shard"]["count"], 1)
        self.assertEqual(whole["items"], items)


class GnuParallel(ClusterCase):
    def test_two_jobs_equal_one_process(self):
        parallel = shutil.which("parallel")
        need(parallel is not None, "GNU parallel is not installed (scripts/setup.sh installs it)")
        items = stereo_manifest(self.path("pairs.jsonl"), kitti_copies=2)
        clouds = cloud_list(self.path("clouds.txt"))
        os.makedirs(self.path("reports"))
        for exe, args, name, count in ((SGM, self.sgm_args, "sgm", items), (PCS, self.pcs_args, "fps", clouds)):
            ref_dir, ref_summary = self.reference(exe, args, name)
            quoted = " ".join("'%s'" % a for a in [exe, *args])
            # docs/CLUSTER.md's one-liner: PARALLEL_SEQ (1..4) is the shard, 2 jobs at a time.
            proc = self.run_quiet([parallel, "-j2", "--halt", "never",
                                   "%s --output-dir %s --shard auto --shard-count %d --skip-existing --json "
                                   "--report %s/%s-{}.jsonl > /dev/null"
                                   % (quoted, self.path("out-" + name), SHARDS, self.path("reports"), name),
                                   ":::", *[str(i) for i in range(SHARDS)]])
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assert_same_outputs(ref_dir, self.path("out-" + name))
            reports = sorted(glob.glob(self.path("reports", name + "-*.jsonl")))
            self.assertEqual(len(reports), SHARDS)
            sources = {self.report(r)[-1]["shard"]["source"] for r in reports}
            self.assertEqual(sources, {"gnu-parallel"})
            self.assert_merge_equals(exe, reports, ref_summary, count)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v", *sys.argv[1:]])
