"""The fixture the frame's end-to-end tests share (imported by frame_e2e_test.py and frame_outputs_test.py): a
fresh folder per test, the tool's TMPDIR inside it (to check that nothing is left there), file helpers."""
import os
import shutil
import subprocess
import tempfile
import time
import unittest


class FrameCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="s3d-frame-e2e-")
        self.tmpdir = os.path.join(self.dir, "tmp")  # the process's TMPDIR: must be empty after every run
        os.mkdir(self.tmpdir)
        self.env = dict(os.environ, TMPDIR=self.tmpdir)
        for var in ("NO_COLOR", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
                    "JOB_COMPLETION_INDEX", "S3D_SHARD_COUNT"):
            self.env.pop(var, None)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def write(self, name, text):
        p = self.path(name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        return p

    def read(self, name):
        with open(self.path(name)) as f:
            return f.read()

    def temps_under(self, folder):
        """The frame's temp files and folders (`.NAME.s3d-tmp.HOST.PID.N`) under `folder`."""
        found = []
        for root, dirs, files in os.walk(self.path(folder)):
            found += [os.path.join(root, f) for f in files + dirs if ".s3d-tmp." in f]
        return found

    def start_stuck_writer(self, demo):
        """Starts `demo` writing out/a.txt with a writer that sleeps 30 s half-way; returns once its temp file
        exists (the process, with stdout and stderr piped)."""
        self.write("a.txt", "some text to write\n")
        proc = subprocess.Popen([demo, "a.txt", "-o", "out/a.txt", "--device", "cpu", "--write-sleep-ms", "30000"],
                                cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
        deadline = time.time() + 60
        while time.time() < deadline and not self.temps_under("out"):
            time.sleep(0.02)
        self.assertTrue(self.temps_under("out"), "the writer never started")
        return proc
