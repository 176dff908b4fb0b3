"""Shared by the tools' end-to-end tests (tests/cli/*_hardening_test.py): a test case with its own scratch
folder, and readers of a run's stdout and stderr."""
import json
import os
import shutil
import sys
import tempfile
import unittest


class ToolCase(unittest.TestCase):
    """Each test gets an empty folder `self.dir`, removed afterwards."""

    prefix = "s3d-tool-"
    exe = None  # the tool under test (run_tests)

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self.prefix)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def write(self, name, data):
        """Writes text or bytes to `name` under the folder (parents created); returns the path."""
        p = self.path(name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        return p

    def read(self, name):
        with open(self.path(name), "rb") as f:
            return f.read()

    @staticmethod
    def records(text):
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    @staticmethod
    def lines(text):
        return [line for line in text.splitlines() if line.strip()]


def run_tests(env_var, doc):
    """Runs the calling module's tests against the executable named by `env_var` (CTest sets it); returns
    nothing, exits with `doc` as usage when the variable is missing."""
    exe = os.environ.get(env_var)
    if not exe:
        sys.exit(doc)
    ToolCase.exe = exe
    unittest.main(module="__main__", argv=[sys.argv[0], "-v", *sys.argv[1:]])
