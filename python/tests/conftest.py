"""Shared fixtures of the s3d Python package's tests.

The tests import the installed package `s3d` (README: the first command installs it into .venv). Comparisons
with the command-line tools read the tools' paths from S3D_TOOLS_DIR (ctest sets it to the build's apps/); real
data comes from S3D_DATA_DIR (default ../shared/data). What is missing skips a test with a message, and fails it
when CI=true.
"""
import hashlib
import os
import pathlib
import subprocess

import numpy as np
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


def on(device, array):
    """`array` (NumPy) as an array of `device`: itself on the CPU, a CUDA tensor (torch, else CuPy) on "cuda";
    S3D_TEST_CUDA_ARRAYS=cupy makes them CuPy arrays (the GPU machine runs the suites both ways)."""
    array = np.ascontiguousarray(array)
    if device == "cpu":
        return array
    if os.environ.get("S3D_TEST_CUDA_ARRAYS") == "cupy":
        import cupy

        return cupy.asarray(array)
    try:
        import torch

        if torch.cuda.is_available():
            return torch.from_numpy(array).to("cuda")
    except ImportError:
        pass
    try:
        import cupy

        return cupy.asarray(array)
    except ImportError:
        pytest.skip("a CUDA test needs torch (with CUDA) or cupy to make device arrays")


def host(x):
    """An output of s3d (NumPy, torch or CuPy array, or a tuple of them) as NumPy."""
    if isinstance(x, tuple):
        return tuple(host(r) for r in x)
    if isinstance(x, dict):
        return {k: host(v) for k, v in x.items()}
    if isinstance(x, (np.ndarray, int, float, str)):
        return x
    if hasattr(x, "detach"):  # torch
        return x.detach().cpu().numpy()
    if hasattr(x, "get"):  # cupy
        return x.get()
    return np.asarray(x)


def pc_sample(run_tool, *args):
    """pc-sample on the CPU, one thread, quiet: the oracle of the point tests."""
    return run_tool("pc-sample", *args, "--device", "cpu", "--threads", 1, "-q")


def save(tmp_path, name, array):
    path = tmp_path / name
    np.save(path, np.ascontiguousarray(array))
    return path


def cache_key(*parts):
    """A key of arrays and flags: a tool's answer depends on nothing else (so each device reuses it)."""
    digest = hashlib.sha1()
    for part in parts:
        digest.update(np.ascontiguousarray(part).tobytes() if isinstance(part, np.ndarray) else repr(part).encode())
        digest.update(b"|")
    return digest.hexdigest()


def uniform_cloud(n, seed, scale=1.0, shift=(0.0, 0.0, 0.0)):
    rng = np.random.default_rng(seed)
    return (rng.random((n, 3)) * scale + np.asarray(shift)).astype(np.float32)


def duplicate_cloud(n, distinct, seed):
    """n points drawn from `distinct` ones: repeated points."""
    rng = np.random.default_rng(seed)
    base = rng.random((distinct, 3), dtype=np.float32)
    return base[rng.integers(0, distinct, n)]


def lattice_cloud(n, seed):
    """Points on a 0.25 lattice: exactly equal distances (ties) and points on voxel boundaries."""
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 6, (n, 3)) * 0.25).astype(np.float32)
