"""s3d.FusionEngine.

- The C++ CPU oracle: icp-fuse (docs/ICP-FUSE.md) on a folder of PFM depth frames (layout `pfm`: frames by name,
  metres, non-finite or <= 0 invalid, timestamps index / 30 s) synthesised here: a room corner (three walls) and a
  box, seen by a 160x120 camera that starts at KinFu's initial pose and moves a few mm and a tenth of a degree per
  frame, with sensor holes and one frame without any valid depth. The engine, given the same frames and the
  parameters that correspond to the tool's flags, must report the same statuses, counts and residuals
  (frames.jsonl), the same poses to the trajectory's printed precision (TUM, %.9f), and the same mesh and cloud
  bit for bit (mesh.ply, cloud.ply).
- Independent checks: the tracked poses follow the synthetic motion; the mesh lies on the scene's planes;
  documented behaviour of invalid frames, the depth range, the initial pose, colour and reset().
- The argument contract: ValueError naming `depth` / `rgb` / `mode` / `volume`, s3d.InvalidArgument for bad
  parameters.
"""
import json
import math

import numpy as np
import pytest

import s3d
from conftest import devices

W, H = 160, 120
FX = FY = 140.0
CX, CY = 79.5, 59.5
INTRINSICS = (FX, FY, CX, CY)
SIZE = 3.0  # the tool's default --volume-size
START = np.array([SIZE / 2, SIZE / 2, SIZE / 2 - 0.6 * SIZE])  # KinFu's first camera position for that cube
PLANES = [((0.0, 0.0, 1.0), 1.6), ((0.0, 1.0, 0.0), 2.0), ((1.0, 0.0, 0.0), 2.1)]  # n . p = c, world frame
BOX = (np.array([1.0, 1.75, 1.1]), np.array([1.4, 2.0, 1.4]))  # standing on the floor (y down)
INVALID_FRAME = 4


# ---------------------------------------------------------------------------------------------------------
# The synthetic sequence


def rotation(axis, degrees):
    a = math.radians(degrees)
    c, s = math.cos(a), math.sin(a)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    r = np.eye(3)
    r[i, i], r[i, j], r[j, i], r[j, j] = c, -s, s, c
    return r


def true_pose(k):
    """Camera to world of frame k: KinFu's first pose, then 3, -2, 4 mm and 0.15 deg (yaw), -0.1 deg (pitch) per
    frame."""
    pose = np.eye(4)
    pose[:3, :3] = rotation(1, 0.15 * k) @ rotation(0, -0.1 * k)
    pose[:3, 3] = START + k * np.array([0.003, -0.002, 0.004])
    return pose


def render(pose, holes_seed=None):
    """Depth (float32 metres along the optical axis) of the planes and the box from `pose`; holes_seed: 2 % of
    the pixels dropped to 0 (invalid) as a sensor does."""
    rotation_, origin = pose[:3, :3], pose[:3, 3]
    u, v = np.meshgrid(np.arange(W, dtype=np.float64), np.arange(H, dtype=np.float64))
    rays = np.stack([(u - CX) / FX, (v - CY) / FY, np.ones_like(u)], axis=-1) @ rotation_.T  # z_cam = 1
    depth = np.full((H, W), np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        for normal, offset in PLANES:
            normal = np.asarray(normal)
            t = (offset - normal @ origin) / (rays @ normal)
            depth = np.minimum(depth, np.where(t > 0, t, np.inf))
        t1, t2 = (BOX[0] - origin) / rays, (BOX[1] - origin) / rays
        near, far = np.nanmax(np.minimum(t1, t2), axis=-1), np.nanmin(np.maximum(t1, t2), axis=-1)
    depth = np.where((near <= far) & (near > 0), np.minimum(depth, near), depth)
    assert np.isfinite(depth).all()
    depth = depth.astype(np.float32)
    if holes_seed is not None:
        rng = np.random.default_rng(holes_seed)
        depth[rng.random((H, W)) < 0.02] = 0.0
    return depth


def sequence(n, invalid=INVALID_FRAME):
    frames = [render(true_pose(k), holes_seed=k) for k in range(n)]
    if invalid is not None and invalid < n:
        frames[invalid] = np.zeros((H, W), np.float32)
    return frames


def scene_distance(points):
    """Distance of each point to the nearest surface of the scene (the planes and the box's faces)."""
    points = np.asarray(points, np.float64)
    d = np.full(len(points), np.inf)
    for normal, offset in PLANES:
        d = np.minimum(d, np.abs(points @ np.asarray(normal) - offset))
    lo, hi = BOX
    outside = np.maximum(np.maximum(lo - points, points - hi), 0.0)
    inside = np.minimum(points - lo, hi - points).min(axis=1)
    box = np.where((outside > 0).any(axis=1), np.linalg.norm(outside, axis=1), np.maximum(inside, 0.0))
    return np.minimum(d, box)


# ---------------------------------------------------------------------------------------------------------
# Files: PFM out; TUM trajectory, frames.jsonl and binary PLY in


def write_pfm(path, image):
    with open(path, "wb") as f:
        f.write(b"Pf\n%d %d\n-1.0\n" % (image.shape[1], image.shape[0]))
        f.write(np.ascontiguousarray(image[::-1], dtype="<f4").tobytes())


def read_trajectory(path):
    """TUM lines: (timestamp, position [3], quaternion x y z w) as printed."""
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    assert all(len(r) == 8 for r in rows)
    return [(float(r[0]), np.array(r[1:4], float), np.array(r[4:8], float)) for r in rows], rows


def quaternion(rotation_):
    """(x, y, z, w) of a rotation matrix, w >= 0."""
    m = rotation_
    trace = np.trace(m)
    if trace > 0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s]
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k])
        q = [0.0] * 4
        q[i] = 0.25 * s
        q[j] = (m[j, i] + m[i, j]) / s
        q[k] = (m[k, i] + m[i, k]) / s
        q[3] = (m[k, j] - m[j, k]) / s
    q = np.array(q)
    return -q if q[3] < 0 else q


def read_ply(path):
    """Binary little-endian PLY with a vertex element of float properties and an optional face element
    (list uchar int): (vertex property names, vertices float32 [V, P], faces int32 [F, 3] or None)."""
    data = path.read_bytes()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    header = data[:end].decode().splitlines()
    assert "format binary_little_endian 1.0" in header
    names, counts, element = [], {}, None
    for line in header:
        words = line.split()
        if words[:1] == ["element"]:
            element = words[1]
            counts[element] = int(words[2])
        elif words[:1] == ["property"] and element == "vertex":
            assert words[1] == "float", line
            names.append(words[2])
        elif words[:1] == ["property"] and element == "face":
            assert words[1:4] == ["list", "uchar", "int"], line
    body = data[end:]
    v = counts["vertex"]
    vertices = np.frombuffer(body, "<f4", count=v * len(names)).reshape(v, len(names))
    faces = None
    if "face" in counts:
        record = np.dtype([("n", "u1"), ("i", "<i4", (3,))])
        rows = np.frombuffer(body, record, count=counts["face"], offset=v * len(names) * 4)
        assert (rows["n"] == 3).all()
        faces = rows["i"].astype(np.int32)
        assert len(body) == v * len(names) * 4 + counts["face"] * record.itemsize
    else:
        assert len(body) == v * len(names) * 4
    return names, vertices, faces


def icp_fuse(run_tool, tmp_path, frames, *flags):
    """Runs icp-fuse on the frames (a PFM folder); returns the output folder."""
    folder = tmp_path / "seq"
    folder.mkdir()
    for k, depth in enumerate(frames):
        write_pfm(folder / f"{k:06d}.pfm", depth)
    out = tmp_path / "out"
    run_tool("icp-fuse", "--device", "cpu", "-q", folder, "--intrinsics", ",".join(map(repr, INTRINSICS)),
             "-o", out, *flags)
    return out


def fuse(frames, device="cpu", request=None, **kwargs):
    engine = s3d.FusionEngine(W, H, INTRINSICS, device, **kwargs)
    results = []
    for depth in frames:
        if device != "cpu":
            depth = request.getfixturevalue("torch").from_numpy(depth).to("cuda")
        results.append(engine.process(depth))
    return engine, results


def assert_same_bits(a, b):
    a, b = np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32)
    assert a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


def assert_same_as_tool(out, results):
    """Statuses, counts, residuals (frames.jsonl) and poses (trajectory.txt, to its printed precision)."""
    records = [json.loads(line) for line in (out / "frames.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == [r["status"] for r in results]
    for record, result in zip(records, results):
        for key in ("valid_pixels", "inliers", "iterations", "inlier_ratio", "residual"):
            assert record[key] == result[key], (record["index"], key)
        assert record.get("blocks", 0) == result["blocks"], record["index"]
        assert record.get("blocks_refused", 0) == result["blocks_refused"], record["index"]
    trajectory, rows = read_trajectory(out / "trajectory.txt")
    assert len(trajectory) == len(results)
    for k, ((_, position, q), result) in enumerate(zip(trajectory, results)):
        assert rows[k][0] == f"{k / 30:.6f}"
        pose = np.asarray(result["pose"])
        assert pose.shape == (4, 4) and np.array_equal(pose[3], [0, 0, 0, 1])
        # %.9f: the printed value is the pose rounded to 9 decimals
        np.testing.assert_allclose(position, pose[:3, 3], rtol=0, atol=5e-10 + 1e-12)
        np.testing.assert_allclose(q, quaternion(pose[:3, :3]), rtol=0, atol=5e-10 + 1e-12)


# ---------------------------------------------------------------------------------------------------------
# Against the C++ CPU oracle: icp-fuse


@pytest.fixture(scope="module")
def frames():
    return sequence(8)


@pytest.mark.parametrize("mode", ["f2m", "f2f"])
def test_poses_statuses_and_mesh_equal_icp_fuse(run_tool, tmp_path, frames, mode):
    # A 128^3 cube keeps the test light; every other parameter is the tool's default and the engine's.
    out = icp_fuse(run_tool, tmp_path, frames, "--mode", mode, "--volume-resolution", 128, "--emit", "mesh,cloud")
    engine, results = fuse(frames, mode=mode, resolution=128)
    statuses = [r["status"] for r in results]
    assert statuses == ["first"] + ["tracked"] * (INVALID_FRAME - 1) + ["invalid"] + ["tracked"] * 3
    assert_same_as_tool(out, results)
    assert np.array_equal(engine.pose, results[-1]["pose"])

    names, vertices, faces = read_ply(out / "mesh.ply")
    assert names == ["x", "y", "z", "nx", "ny", "nz"]
    mesh = engine.mesh()
    assert len(mesh["vertices"]) > 1000
    assert_same_bits(mesh["vertices"], vertices[:, :3])
    assert_same_bits(mesh["normals"], vertices[:, 3:])
    np.testing.assert_array_equal(mesh["triangles"], faces)

    names, points, no_faces = read_ply(out / "cloud.ply")
    assert names == ["x", "y", "z", "nx", "ny", "nz"] and no_faces is None
    cloud = engine.cloud()
    assert len(cloud["points"]) > 1000
    assert_same_bits(cloud["points"], points[:, :3])
    assert_same_bits(cloud["normals"], points[:, 3:])


def test_default_parameters_are_the_tools_defaults(run_tool, tmp_path):
    # No volume flag and no volume keyword: both use the 3 m, 512^3 cube, truncation 0.03 m and the rest.
    frames = sequence(3, invalid=None)
    out = icp_fuse(run_tool, tmp_path, frames, "--emit", "trajectory")
    engine, results = fuse(frames)
    assert [r["status"] for r in results] == ["first", "tracked", "tracked"]
    assert_same_as_tool(out, results)


# ---------------------------------------------------------------------------------------------------------
# Independent checks


def rotation_degrees(r):
    return math.degrees(math.acos(max(-1.0, min(1.0, (np.trace(r) - 1) / 2))))


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("mode", ["f2m", "f2f"])
def test_tracking_follows_the_synthetic_motion(device, mode, frames, request):
    _, results = fuse(frames, device, request, mode=mode, resolution=128)
    previous = None  # (index, estimated pose) of the last tracked frame
    for k, result in enumerate(results):
        pose = np.asarray(result["pose"])
        if k == INVALID_FRAME:
            assert result["status"] == "invalid" and np.array_equal(pose, previous[1])
            continue
        assert result["status"] == ("first" if k == 0 else "tracked")
        if previous is not None:
            # each step (5.4 mm and 0.18 deg a frame; two frames across the invalid one) against the truth
            j, before = previous
            truth = np.linalg.inv(true_pose(j)) @ true_pose(k)
            error = np.linalg.inv(truth) @ (np.linalg.inv(before) @ pose)
            step = np.linalg.norm(truth[:3, 3])
            assert np.linalg.norm(error[:3, 3]) < min(0.003, 0.5 * step)
            assert rotation_degrees(error[:3, :3]) < 0.1
        previous = (k, pose)
    travelled = np.linalg.norm(true_pose(len(frames) - 1)[:3, 3] - START)
    drift = np.linalg.norm(previous[1][:3, 3] - true_pose(len(frames) - 1)[:3, 3])
    assert drift < (0.003 if mode == "f2m" else 0.25 * travelled)


@pytest.mark.parametrize("device", [d for d in devices() if d == "cuda"])
def test_cuda_and_cpu_give_the_same_poses(device, frames, request):
    _, cpu = fuse(frames, resolution=128)
    _, gpu = fuse(frames, device, request, resolution=128)
    assert [r["status"] for r in gpu] == [r["status"] for r in cpu]
    for a, b in zip(gpu, cpu):
        np.testing.assert_array_equal(a["pose"], b["pose"])


def test_first_pose_is_kinfus_initial_pose_of_the_volume():
    depth = render(true_pose(0))
    for size, origin in [(3.0, None), (2.0, None), (2.0, (0.5, -1.0, 0.25))]:
        kwargs = dict(resolution=32, size=size) if origin is None else dict(resolution=32, size=size, origin=origin)
        engine = s3d.FusionEngine(W, H, INTRINSICS, **kwargs)
        corner = np.zeros(3) if origin is None else np.array(origin)
        expected = np.eye(4)
        expected[:3, 3] = corner + [size / 2, size / 2, size / 2 - 0.6 * size]
        np.testing.assert_allclose(engine.pose, expected, rtol=0, atol=1e-12)
        result = engine.process(depth)
        assert result["status"] == "first" and result["inliers"] == 0 and result["iterations"] == 0
        np.testing.assert_allclose(result["pose"], expected, rtol=0, atol=1e-12)
    given = true_pose(5)
    engine = s3d.FusionEngine(W, H, INTRINSICS, resolution=32, initial_pose=given)
    np.testing.assert_allclose(engine.process(depth)["pose"], given, rtol=0, atol=1e-12)


@pytest.mark.parametrize("invalid", ["zeros", "nan", "inf", "negative", "beyond max_depth"])
def test_a_frame_without_valid_depth_is_invalid_not_tracked(invalid):
    engine = s3d.FusionEngine(W, H, INTRINSICS, resolution=64, max_depth=3.0)
    bad = {"zeros": 0.0, "nan": np.nan, "inf": np.inf, "negative": -1.0, "beyond max_depth": 3.5}[invalid]
    bad = np.full((H, W), bad, np.float32)
    first = engine.process(bad)
    assert first["status"] == "invalid" and first["valid_pixels"] == 0 and first["reason"]
    assert engine.process(render(true_pose(0)))["status"] == "first"  # the first valid frame starts the model
    good = engine.process(render(true_pose(1)))
    assert good["status"] == "tracked"
    again = engine.process(bad)
    assert again["status"] == "invalid" and again["inliers"] == 0
    np.testing.assert_array_equal(again["pose"], good["pose"])
    np.testing.assert_array_equal(engine.pose, good["pose"])


def test_valid_pixels_count_the_depth_range():
    depth = render(true_pose(0))
    depth[:5] = np.nan
    depth[:, :10] = 0.0
    depth[100:] = np.inf
    depth[50:52] = -2.0
    finite = np.isfinite(depth) & (depth > 0)
    assert s3d.FusionEngine(W, H, INTRINSICS, resolution=32).process(depth)["valid_pixels"] == finite.sum()
    ranged = s3d.FusionEngine(W, H, INTRINSICS, resolution=32, min_depth=1.45, max_depth=2.0).process(depth)
    assert ranged["valid_pixels"] == (finite & (depth > 1.45) & (depth <= 2.0)).sum() > 0


def test_mesh_arrays_are_consistent_and_lie_on_the_scene(frames):
    engine, results = fuse(frames, resolution=128)
    mesh = engine.mesh()
    vertices, normals, triangles, colors = mesh["vertices"], mesh["normals"], mesh["triangles"], mesh["colors"]
    assert vertices.dtype == np.float32 and vertices.ndim == 2 and vertices.shape[1] == 3
    assert normals.dtype == np.float32 and normals.shape == vertices.shape
    assert triangles.dtype == np.int32 and triangles.ndim == 2 and triangles.shape[1] == 3
    assert colors.dtype == np.uint8 and colors.shape == (0, 3)  # no colour volume
    assert len(triangles) > len(vertices) > 1000
    assert triangles.min() >= 0 and triangles.max() < len(vertices)
    assert np.unique(triangles).size == len(vertices)  # every vertex belongs to a triangle
    assert (triangles[:, 0] != triangles[:, 1]).all() and (triangles[:, 1] != triangles[:, 2]).all()
    assert ((vertices >= 0) & (vertices <= SIZE)).all()
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, atol=1e-3)
    voxel = SIZE / 128
    distance = scene_distance(vertices)
    assert np.median(distance) < 0.25 * voxel and np.quantile(distance, 0.99) < 1.5 * voxel
    cloud = engine.cloud()
    assert cloud["points"].shape == cloud["normals"].shape and cloud["points"].shape[1] == 3
    assert cloud["colors"].shape == (0, 3) and len(cloud["points"]) > 1000
    assert np.quantile(scene_distance(cloud["points"]), 0.99) < 1.5 * voxel


def test_integrate_at_given_poses_builds_the_scene_and_tracking_goes_on_from_there():
    engine = s3d.FusionEngine(W, H, INTRINSICS, resolution=96)
    for k in range(0, 12, 3):
        result = engine.integrate(render(true_pose(k)), true_pose(k))
        assert result["status"] == ("first" if k == 0 else "tracked")
        np.testing.assert_allclose(result["pose"], true_pose(k), rtol=0, atol=1e-12)
        np.testing.assert_allclose(engine.pose, true_pose(k), rtol=0, atol=1e-12)
    vertices = engine.mesh()["vertices"]
    assert len(vertices) > 500
    assert np.quantile(scene_distance(vertices), 0.99) < 1.5 * SIZE / 96
    tracked = engine.process(render(true_pose(10)))
    assert tracked["status"] == "tracked"
    assert np.linalg.norm(np.asarray(tracked["pose"])[:3, 3] - true_pose(10)[:3, 3]) < 0.003
    with pytest.raises(ValueError, match="depth"):
        engine.integrate(np.zeros((H, W), np.float64), true_pose(0))


def test_colour_of_the_frames_reaches_the_mesh():
    engine = s3d.FusionEngine(W, H, INTRINSICS, resolution=64, color=True)
    rgb = np.empty((H, W, 3), np.uint8)
    rgb[:] = (200, 30, 90)
    for k in range(3):
        assert engine.process(render(true_pose(k)), rgb)["status"] in ("first", "tracked")
    mesh = engine.mesh()
    assert mesh["colors"].shape == mesh["vertices"].shape and mesh["colors"].dtype == np.uint8
    assert (mesh["colors"] == (200, 30, 90)).all(axis=1).mean() > 0.99
    cloud = engine.cloud()
    assert cloud["colors"].shape == cloud["points"].shape


def test_reset_drops_the_model_and_the_trajectory(frames):
    engine, results = fuse(frames[:3], resolution=64)
    assert results[-1]["status"] == "tracked"
    engine.reset()
    assert len(engine.mesh()["vertices"]) == 0
    again = engine.process(frames[2])
    assert again["status"] == "first"
    np.testing.assert_allclose(again["pose"], results[0]["pose"], rtol=0, atol=1e-12)


def test_cuda_engine_is_unavailable_without_a_gpu():
    if "cuda" in devices():
        pytest.skip("this machine has a GPU")
    with pytest.raises(s3d.DeviceUnavailable):
        s3d.FusionEngine(W, H, INTRINSICS, "cuda", resolution=32)


# ---------------------------------------------------------------------------------------------------------
# The argument contract


@pytest.fixture(scope="module")
def engine():
    return s3d.FusionEngine(W, H, INTRINSICS, resolution=32)


@pytest.mark.parametrize("depth, message", [
    (np.zeros((H, W + 1), np.float32), r"depth: expected shape \[120, 160\]"),
    (np.zeros((W, H), np.float32), r"depth: expected shape \[120, 160\]"),
    (np.zeros((H, W, 1), np.float32), "depth: expected shape"),
    (np.zeros((H, W), np.float64), "depth: expected float32"),
    (np.zeros((H, W), np.uint16), "depth: expected float32"),
    (np.zeros((H, 2 * W), np.float32)[:, ::2], "depth: expected a C-contiguous array"),
    ([[0.0] * W] * H, "depth: expected an array"),
])
def test_bad_depth_raises_value_error_naming_depth(engine, depth, message):
    with pytest.raises(ValueError, match=message):
        engine.process(depth)


@pytest.mark.parametrize("rgb, message", [
    (np.zeros((H, W), np.uint8), "rgb: expected shape"),
    (np.zeros((H, W, 4), np.uint8), r"rgb: expected shape \[120, 160, 3\]"),
    (np.zeros((H, W, 3), np.float32), "rgb: expected uint8"),
])
def test_bad_rgb_raises_value_error_naming_rgb(engine, rgb, message):
    with pytest.raises(ValueError, match=message):
        engine.process(np.ones((H, W), np.float32), rgb)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(mode="icp"), ValueError, "mode"),
    (dict(volume="octree"), ValueError, "volume"),
    (dict(resolution=0), s3d.InvalidArgument, "resolution"),
    (dict(resolution=(64, 64, 5000)), s3d.InvalidArgument, "resolution"),
    (dict(size=-1.0), s3d.InvalidArgument, "size"),
    (dict(origin=(0.0, float("nan"), 0.0)), s3d.InvalidArgument, "origin"),
    (dict(truncation=0.0), s3d.InvalidArgument, "truncation"),
    (dict(min_depth=-0.5), s3d.InvalidArgument, "min_depth"),
    (dict(max_depth=float("inf")), s3d.InvalidArgument, "max_depth"),
])
def test_bad_parameters_raise(kwargs, error, message):
    kwargs.setdefault("resolution", 32)
    with pytest.raises(error, match=message):
        s3d.FusionEngine(W, H, INTRINSICS, **kwargs)


@pytest.mark.parametrize("intrinsics", [(0.0, FY, CX, CY), (FX, float("nan"), CX, CY), (FX, FY, float("inf"), CY)])
def test_bad_intrinsics_are_invalid_argument(intrinsics):
    with pytest.raises(s3d.InvalidArgument, match="camera"):
        s3d.FusionEngine(W, H, intrinsics, resolution=32)


def test_integrate_refuses_a_pose_that_is_not_rigid():
    engine = s3d.FusionEngine(32, 24, (30.0, 30.0, 16.0, 12.0), resolution=64)
    depth = np.full((24, 32), 1.0, np.float32)
    for pose in (np.diag([2.0, 1.0, 1.0, 1.0]), np.diag([1.0, 1.0, -1.0, 1.0]), np.full((4, 4), np.nan)):
        with pytest.raises(s3d.InvalidArgument, match="pose: expected a rigid"):
            engine.integrate(depth, pose)
    assert engine.integrate(depth, np.eye(4))["status"] in ("first", "tracked")
