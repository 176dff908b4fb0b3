"""Shared fixtures of the s3d Python package's tests.

The tests import the installed package `s3d` (README: the first command installs it into .venv). Comparisons
with the command-line tools read the tools' paths from S3D_TOOLS_DIR (ctest sets it to the build's apps/); real
data comes from S3D_DATA_DIR (default ../shared/data). What is missing skips a test with a message, and fails it
when CI=true.
"""
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def unavailable(message):
    """Skips the calling test, or fails it under CI=true (where everything must be present)."""
    if os.environ.get("CI") == "true":
        pytest.fail(message + " (required under CI=true)")
    pytest.skip(message)


@pytest.fixture(scope="session")
def tools_dir():
    folder = pathlib.Path(os.environ.get("S3D_TOOLS_DIR", REPO / "build" / "default" / "apps"))
    if not folder.is_dir():
        unavailable(f"no built tools in {folder} (set S3D_TOOLS_DIR)")
    return folder


@pytest.fixture(scope="session")
def run_tool(tools_dir):
    """run_tool(name, *args) runs a built tool and returns its CompletedProcess (check=True)."""

    def run(name, *args):
        exe = tools_dir / name
        if not exe.exists():
            unavailable(f"{exe} is not built")
        return subprocess.run([str(exe), *map(str, args)], check=True, capture_output=True, text=True)

    return run


@pytest.fixture(scope="session")
def data_dir():
    folder = pathlib.Path(os.environ.get("S3D_DATA_DIR", REPO.parent / "shared" / "data"))
    if not folder.is_dir():
        unavailable(f"no real data in {folder} (set S3D_DATA_DIR)")
    return folder


@pytest.fixture(scope="session")
def torch():
    try:
        import torch as module
    except ImportError:
        unavailable("torch is not installed (scripts/setup.sh installs it with S3D_PYTHON_TORCH=1 or CI=true)")
    return module


def devices():
    """The devices the tests run on: the CPU, and cuda:0 where this build and machine have one."""
    import s3d

    found = ["cpu"]
    if s3d.cuda_built() and s3d.cuda_device_count() > 0:
        found.append("cuda")
    return found
