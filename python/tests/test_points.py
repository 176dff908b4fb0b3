"""s3d.fps, knn, ball_query, three_nn, three_interpolate and the FpsEngine / NeighborEngine objects.

Three kinds of checks:
- bit-exact against the C++ CPU oracle, `pc-sample` (docs/PC-SAMPLE.md): the inputs are written as .npy, the tool
  runs with --device cpu, and its indices / distances / weights must equal the package's byte for byte. The tool
  computes on positions relative to the cloud's bounding-box centre (docs/PC-SAMPLE.md, "Coordinates and the local
  origin"), so the package is given the same centred positions (`centred`: fp32(x - centre), the centre in double);
- independent NumPy brute force on small inputs (fp32 squared distances ((dx*dx)+(dy*dy))+(dz*dz) from direct
  differences, each op rounded by NumPy, i.e. no FMA; ties to the smaller index);
- the argument contract: ValueError naming the argument, s3d.InvalidArgument for bad parameters, s3d.DataError
  for bad data.
Every op that has a CUDA path runs on each of conftest.devices(); CUDA inputs are made with torch (or CuPy).
"""
import hashlib
import math
from fractions import Fraction

import numpy as np
import pytest

import s3d
from conftest import (cache_key, devices, duplicate_cloud, host, lattice_cloud, on, pc_sample, save,
                      uniform_cloud, unavailable)

F32 = np.float32
DEVICES = devices()


# ---------------------------------------------------------------------------------------------------------------
# Devices: NumPy on the CPU, torch (else CuPy) CUDA arrays on "cuda".




# ---------------------------------------------------------------------------------------------------------------
# Clouds: seeded, odd sizes, duplicates, exact ties (a quarter-unit lattice), a cloud far from the origin.





# name -> (cloud, ball radius). The lattice's radius 0.5 is exactly a lattice distance: d = r is outside.
CLOUDS = {
    "n1": (lambda: uniform_cloud(1, 1), 0.3),
    "n2": (lambda: uniform_cloud(2, 2), 0.3),
    "n3": (lambda: uniform_cloud(3, 3), 0.3),
    "n7": (lambda: uniform_cloud(7, 7), 0.4),
    "dup7": (lambda: duplicate_cloud(7, 3, 8), 0.4),
    "n1000": (lambda: uniform_cloud(1000, 10), 0.1),
    "dup1337": (lambda: duplicate_cloud(1337, 300, 11), 0.1),
    "lattice513": (lambda: lattice_cloud(513, 12), 0.5),
    "far1001": (lambda: uniform_cloud(1001, 13, scale=10.0, shift=(1000.0, -2000.0, 50.0)), 1.0),
    # A unit cloud with one far outlier: fp32(x - centre) rounds, so only the centred positions match the tool.
    "outlier701": (lambda: np.concatenate([uniform_cloud(700, 14), [[3000.0, -2000.0, 500.0]]]).astype(F32), 0.1),
}
CLOUD_NAMES = list(CLOUDS)
SMALL = ["n1", "n2", "n3", "n7", "dup7", "n1000", "lattice513"]


def cloud(name):
    return CLOUDS[name][0]()


def radius_of(name):
    return CLOUDS[name][1]


def queries_for(points, seed=99, count=37):
    """Queries inside the cloud's box, plus exact copies of its first and last points (d = 0 ties)."""
    rng = np.random.default_rng(seed)
    lo, hi = points.min(0).astype(np.float64), points.max(0).astype(np.float64)
    q = (lo + rng.random((count, 3)) * (hi - lo)).astype(F32)
    if np.all(np.mod(points, 0.25) == 0):  # the lattice: queries on it too (ties)
        q = (np.round(q * 4) / 4).astype(F32)
    return np.concatenate([q, points[:1], points[-1:]]).astype(F32)


def centre_of(points):
    points = np.asarray(points, np.float64)
    return (points.min(0) + points.max(0)) / 2


def centred(points, frame=None):
    """fp32(x - c), c the bounding-box centre (in double) of `frame` (default: the points): what pc-sample uses."""
    c = centre_of(points if frame is None else frame)
    return np.ascontiguousarray((np.asarray(points, np.float64) - c).astype(F32))


# ---------------------------------------------------------------------------------------------------------------
# NumPy references (docs/PC-SAMPLE.md, fps.hpp, neighbors.hpp).


def sq_dists(points, queries):
    """[Q, N] fp32 squared distances ((dx*dx)+(dy*dy))+(dz*dz), each operation rounded separately (no FMA)."""
    p = np.asarray(points, F32)
    q = np.asarray(queries, F32)
    dx = q[:, None, 0] - p[None, :, 0]
    dy = q[:, None, 1] - p[None, :, 1]
    dz = q[:, None, 2] - p[None, :, 2]
    return ((dx * dx) + (dy * dy)) + (dz * dz)


def ref_fps(points, m, start=0):
    points = np.asarray(points, F32)
    if m == 0:
        return np.zeros(0, np.int32)
    d = np.full(len(points), np.inf, F32)
    sel = [start]
    while len(sel) < m:
        p = points[sel[-1]]
        dx, dy, dz = points[:, 0] - p[0], points[:, 1] - p[1], points[:, 2] - p[2]
        d = np.minimum(d, ((dx * dx) + (dy * dy)) + (dz * dz))
        sel.append(int(np.argmax(d)))  # the first (smallest) index among the maxima
    return np.asarray(sel, np.int32)


def _fill(found_idx, found_d2, k, pad):
    idx = np.full(k, -1, np.int32)
    dist = np.full(k, np.inf, F32)
    n = min(k, len(found_idx))
    idx[:n] = found_idx[:n]
    dist[:n] = np.sqrt(found_d2[:n])
    if pad == "first" and n > 0:
        idx[n:] = idx[0]
        dist[n:] = dist[0]
    return idx, dist


def ref_knn(points, queries, k, exclude_self=False, pad=-1):
    own = queries is None
    d2 = sq_dists(points, points if own else queries)
    rows = [np.arange(d2.shape[1]) for _ in range(d2.shape[0])]
    idx, dist = [], []
    for q, cand in enumerate(rows):
        if exclude_self:
            cand = cand[cand != q]
        order = cand[np.lexsort((cand, d2[q, cand]))]  # by (d2, index)
        i, d = _fill(order, d2[q, order], k, pad)
        idx.append(i)
        dist.append(d)
    return np.asarray(idx, np.int32).reshape(-1, k), np.asarray(dist, F32).reshape(-1, k)


def ref_ball(points, queries, radius, k, min_radius=0.0, order="index", pad=-1):
    d2 = sq_dists(points, points if queries is None else queries)
    r = F32(radius)
    r2 = F32(r * r)
    mr = F32(min_radius)
    mr2 = F32(mr * mr)
    inside = d2 < r2
    if mr2 > 0:
        inside &= (d2 == 0) | (d2 >= mr2)
    idx, dist = [], []
    for q in range(d2.shape[0]):
        hits = np.nonzero(inside[q])[0]  # index order
        if order == "distance":
            hits = hits[np.lexsort((hits, d2[q, hits]))]
        i, d = _fill(hits, d2[q, hits], k, pad)
        idx.append(i)
        dist.append(d)
    return np.asarray(idx, np.int32).reshape(-1, k), np.asarray(dist, F32).reshape(-1, k)


def ref_three_nn(sparse, dense):
    idx, dist = ref_knn(sparse, dense, 3)
    valid = idx >= 0
    w = np.where(valid, F32(1) / (dist + F32(1e-8)), F32(0)).astype(F32)
    total = ((w[:, 0] + w[:, 1]) + w[:, 2]).astype(F32)
    return idx, np.where(valid, w / total[:, None], F32(0)).astype(F32)


def ref_interpolate(values, idx, weights):
    out = np.zeros((idx.shape[0], values.shape[1]), np.float64)
    for j in range(3):
        ok = idx[:, j] >= 0
        out[ok] += weights[ok, j].astype(np.float64)[:, None] * values[idx[ok, j]].astype(np.float64)
    return out.astype(values.dtype)


def ratio_count(ratio, n):
    """ceil(r * N) of the decimal r (exact, through Fraction), at least 1."""
    return max(1, math.ceil(Fraction(repr(ratio)) * n))


# ---------------------------------------------------------------------------------------------------------------
# The oracle: pc-sample on the CPU.




_ORACLE = {}



def tool_fps(run_tool, tmp_path, points, *flags):
    key = cache_key("fps", points, flags)
    if key not in _ORACLE:
        src = save(tmp_path, "in.npy", points)
        out = tmp_path / "fps.npy"
        pc_sample(run_tool, "fps", *flags, "--emit", "indices", src, "-o", out, "--overwrite")
        _ORACLE[key] = np.load(out)
    return _ORACLE[key]


def tool_neighbors(run_tool, tmp_path, sub, points, queries, *flags):
    """(indices, distances, counts) of `pc-sample knn|ball`; `queries` None = the cloud itself."""
    key = cache_key(sub, points, queries, flags)
    if key not in _ORACLE:
        src = save(tmp_path, "in.npy", points)
        extra = []
        if queries is not None:
            extra = ["--queries", save(tmp_path, "q.npy", queries)]
        out = tmp_path / f"{sub}.npy"
        pc_sample(run_tool, sub, *flags, *extra, src, "-o", out, "--overwrite")
        _ORACLE[key] = (np.load(out), np.load(tmp_path / f"{sub}.dist.npy"), np.load(tmp_path / f"{sub}.counts.npy"))
    return _ORACLE[key]


def tool_three_nn(run_tool, tmp_path, sparse, dense):
    key = cache_key("interp", sparse, dense)
    if key not in _ORACLE:
        out = tmp_path / "w.npy"
        pc_sample(run_tool, "interp", save(tmp_path, "dense.npy", dense), "--from",
                  save(tmp_path, "sparse.npy", sparse), "--emit", "weights", "-o", out, "--overwrite")
        _ORACLE[key] = (np.load(out), np.load(tmp_path / "w.weights.npy"))
    return _ORACLE[key]


def assert_same(actual, expected):
    actual = host(actual)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if not np.array_equal(actual, expected):
        bad = np.argwhere(actual != expected)
        raise AssertionError(f"{len(bad)} elements differ, first at {bad[0].tolist()}: "
                             f"{actual[tuple(bad[0])]} != {expected[tuple(bad[0])]}")


@pytest.fixture(scope="module")
def kitti(data_dir):
    """The KITTI scan's x y z (float32 [N, 3], read only from the data folder) and its path."""
    path = data_dir / "pointclouds" / "kitti_velodyne" / "000000.bin"
    if not path.is_file():
        unavailable(f"no KITTI scan at {path}")
    xyz = np.ascontiguousarray(np.fromfile(path, dtype=F32).reshape(-1, 4)[:, :3])
    return path, xyz


# ---------------------------------------------------------------------------------------------------------------
# FPS


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", CLOUD_NAMES)
def test_fps_matches_tool(run_tool, tmp_path, name, device):
    points = cloud(name)
    n = len(points)
    m = min(n, 64)
    for start in sorted({0, n // 2, n - 1}):
        expected = tool_fps(run_tool, tmp_path, points, "-n", m, "--start", start)
        assert_same(s3d.fps(on(device, centred(points)), m, start=start), expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", CLOUD_NAMES)
def test_fps_matches_numpy_definition(name, device):
    points = cloud(name)
    m = min(len(points), 48)
    start = len(points) // 3
    assert_same(s3d.fps(on(device, points), m, start=start), ref_fps(points, m, start))


def test_fps_with_fewer_distinct_points_than_samples_repeats():
    points = cloud("dup7")  # 7 points, 3 distinct
    distinct = len(np.unique(points, axis=0))
    assert distinct < 7
    got = s3d.fps(points, 7)
    assert_same(got, ref_fps(points, 7))
    # The first `distinct` picks are distinct positions; then every d is 0 and the picks repeat positions.
    picked = points[got]
    assert len(np.unique(picked[:distinct], axis=0)) == distinct
    assert len(np.unique(picked, axis=0)) == distinct


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ratio, n", [(0.07, 100), (0.3, 100), (0.14, 100), (0.25, 7), (0.001, 7), (1.0, 1),
                                      (0.5, 1337), (0.123, 1000)])
def test_fps_ratio_takes_the_ceiling_of_the_decimal_product(run_tool, tmp_path, ratio, n, device):
    points = uniform_cloud(n, 1000 + n)
    m = ratio_count(ratio, n)
    got = host(s3d.fps(on(device, points), ratio=ratio))
    assert got.shape == (m,)
    assert_same(got, host(s3d.fps(points, m)))
    assert_same(s3d.fps(on(device, centred(points)), ratio=ratio),
                tool_fps(run_tool, tmp_path, points, "--ratio", repr(ratio)))


@pytest.mark.parametrize("device", DEVICES)
def test_fps_ragged_lengths_equal_one_call_per_cloud(device):
    sizes = [1, 7, 1000, 2, 3, 257]
    clouds = [uniform_cloud(s, 50 + i) for i, s in enumerate(sizes)]
    clouds[4] = clouds[4][[0, 0, 1]]  # a duplicate inside a cloud
    packed = np.concatenate(clouds)
    n = [1, 5, 64, 2, 3, 0]
    start = [0, 6, 999, 1, 2, 100]
    got = host(s3d.fps(on(device, packed), n, start=start, lengths=sizes))
    expected = np.concatenate([host(s3d.fps(c, m, start=s)) for c, m, s in zip(clouds, n, start)])
    assert_same(got, expected)
    assert_same(got, np.concatenate([ref_fps(c, m, s) for c, m, s in zip(clouds, n, start)]))
    # One n and one start for every cloud.
    got = host(s3d.fps(on(device, packed), 1, lengths=sizes))
    assert_same(got, np.zeros(len(sizes), np.int32))
    # ratio= per cloud, by the ceiling rule.
    got = host(s3d.fps(on(device, packed), ratio=0.07, lengths=sizes))
    counts = [ratio_count(0.07, s) for s in sizes]
    assert counts == [1, 1, 70, 1, 1, 18]
    assert_same(got, np.concatenate([host(s3d.fps(c, m)) for c, m in zip(clouds, counts)]))


@pytest.mark.parametrize("device", DEVICES)
def test_fps_stacked_batch_equals_one_call_per_cloud(device):
    batch = np.stack([uniform_cloud(257, 70 + b) for b in range(4)])
    batch[2, 100:] = batch[2, :157]  # a cloud made of duplicates
    starts = [0, 1, 256, 5]
    got = host(s3d.fps(on(device, batch), 33, start=starts))
    assert got.shape == (4, 33)
    for b in range(4):
        assert_same(got[b], host(s3d.fps(batch[b], 33, start=starts[b])))
        assert_same(got[b], ref_fps(batch[b], 33, starts[b]))
    got = host(s3d.fps(on(device, batch), ratio=0.1))
    assert got.shape == (4, ratio_count(0.1, 257))
    assert_same(got[3], host(s3d.fps(batch[3], ratio_count(0.1, 257))))


@pytest.mark.parametrize("device", DEVICES)
def test_fps_engine_reuse_across_sizes(device):
    engine = s3d.FpsEngine(device)
    assert engine.device == ("cpu" if device == "cpu" else "cuda:0")
    big, small = cloud("n1000"), cloud("n7")
    first = host(engine.fps(on(device, big), 100, start=3))
    assert_same(engine.fps(on(device, small), 7), ref_fps(small, 7))
    assert_same(engine.fps(on(device, big), 100, start=3), first)
    assert_same(first, ref_fps(big, 100, 3))
    assert_same(s3d.fps(on(device, big), 100, start=3), first)


def test_fps_kitti_matches_tool(run_tool, tmp_path, kitti):
    path, xyz = kitti
    out = tmp_path / "fps.npy"
    pc_sample(run_tool, "fps", "-n", 256, "--start", 1234, "--emit", "indices", path, "-o", out)
    expected = np.load(out)
    assert_same(s3d.fps(centred(xyz), 256, start=1234), expected)
    assert len(np.unique(expected)) == 256


# ---------------------------------------------------------------------------------------------------------------
# kNN

KNN_CASES = {
    # name: (uses external queries, kwargs from N)
    "k8": (False, lambda n: dict(k=min(8, n))),
    "exclude_self": (False, lambda n: dict(k=min(8, n - 1), exclude_self=True)),
    "pad_minus_one": (False, lambda n: dict(k=n + 2, allow_fewer=True, pad=-1)),
    "pad_first": (False, lambda n: dict(k=n + 2, allow_fewer=True, pad="first")),
    "exclude_self_pad_first": (False, lambda n: dict(k=n, exclude_self=True, allow_fewer=True, pad="first")),
    "queries": (True, lambda n: dict(k=min(5, n))),
    "queries_pad_first": (True, lambda n: dict(k=n + 1, allow_fewer=True, pad="first")),
}


def knn_case(name, n):
    external, make = KNN_CASES[name]
    return external, make(n)


def knn_params(names):
    """(cloud, case) pairs where the case's k applies: 1 <= k, and k > 64 (padding) only on clouds of <= 600."""
    pairs = []
    for name in names:
        n = len(cloud(name))
        for case in KNN_CASES:
            k = knn_case(case, n)[1]["k"]
            if 1 <= k and (k <= 64 or n <= 600):
                pairs.append((name, case))
    return pairs


def knn_flags(kw):
    flags = ["-k", kw["k"]]
    if kw.get("exclude_self"):
        flags.append("--exclude-self")
    if kw.get("allow_fewer"):
        flags += ["--pad", str(kw.get("pad", -1))]
    return flags


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name, case", knn_params(CLOUD_NAMES))
def test_knn_matches_tool(run_tool, tmp_path, name, case, device):
    points = cloud(name)
    external, kw = knn_case(case, len(points))
    queries = queries_for(points) if external else None
    idx, dist, counts = tool_neighbors(run_tool, tmp_path, "knn", points, queries, *knn_flags(kw))
    q = None if queries is None else on(device, centred(queries, frame=points))
    got_idx, got_dist = s3d.knn(on(device, centred(points)), q, **kw)
    assert_same(got_idx, idx)
    assert_same(got_dist, dist)
    # counts (before padding) agree with the slots that hold a distinct neighbour.
    found = np.minimum(counts, kw["k"])
    assert np.all(host(got_idx)[np.arange(kw["k"])[None, :] < found[:, None]] >= 0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name, case", knn_params(SMALL))
def test_knn_matches_brute_force(name, case, device):
    points = cloud(name)
    external, kw = knn_case(case, len(points))
    queries = queries_for(points) if external else None
    args = {k: v for k, v in kw.items() if k != "allow_fewer"}
    idx, dist = ref_knn(points, queries, **args)
    got_idx, got_dist = s3d.knn(on(device, points), None if queries is None else on(device, queries), **kw)
    assert_same(got_idx, idx)
    assert_same(got_dist, dist)


def test_knn_ties_go_to_the_smaller_index():
    # Six points at distance 1 from the query and two copies of it: ascending (d, index).
    ring = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [-1, 0, 0], [0, -1, 0], [0, 0, -1]], F32)
    points = np.concatenate([ring[3:], [[0, 0, 0]], ring[:3], [[0, 0, 0]]]).astype(F32)
    idx, dist = s3d.knn(points, np.zeros((1, 3), F32), k=5)
    assert idx.tolist() == [[3, 7, 0, 1, 2]]
    assert dist.tolist() == [[0, 0, 1, 1, 1]]


@pytest.mark.parametrize("device", DEVICES)
def test_neighbor_engine_reuse_across_clouds(device):
    engine = s3d.NeighborEngine(device)
    assert s3d.KnnEngine is s3d.NeighborEngine
    a, b = cloud("n1000"), cloud("lattice513")
    first = [host(x) for x in engine.knn(on(device, a), None, 6)]
    ball_b = host(engine.ball_query(on(device, b), None, 0.5, 9))
    again = [host(x) for x in engine.knn(on(device, a), None, 6)]
    assert all(np.array_equal(x, y) for x, y in zip(first, again))
    assert_same(first[0], ref_knn(a, None, 6)[0])
    assert_same(ball_b, ref_ball(b, None, 0.5, 9)[0])
    assert_same(engine.ball_query(on(device, b), None, 0.5, 9), ball_b)


def test_knn_kitti_matches_tool(run_tool, tmp_path, kitti):
    path, xyz = kitti
    queries = xyz[::97].copy()
    q = save(tmp_path, "q.npy", queries)
    out = tmp_path / "knn.npy"
    pc_sample(run_tool, "knn", "-k", 16, "--queries", q, path, "-o", out)
    idx, dist = s3d.knn(centred(xyz), centred(queries, frame=xyz), k=16)
    assert_same(idx, np.load(out))
    assert_same(dist, np.load(tmp_path / "knn.dist.npy"))


# ---------------------------------------------------------------------------------------------------------------
# Ball query

BALL_CASES = {
    "index": (False, dict(k=8)),
    "index_pad_first": (False, dict(k=8, pad="first")),
    "distance": (False, dict(k=5, order="distance")),
    "min_radius": (False, dict(k=16, min_radius_fraction=0.5)),
    "big_k": (False, dict(k=64)),
    "queries_distance_pad_first": (True, dict(k=8, order="distance", pad="first")),
    "queries_index": (True, dict(k=3)),
}


def ball_case(name, cloud_name):
    external, kw = BALL_CASES[name]
    kw = dict(kw)
    r = radius_of(cloud_name)
    kw["radius"] = r
    fraction = kw.pop("min_radius_fraction", None)
    if fraction is not None:
        kw["min_radius"] = r * fraction
    return external, kw


def ball_flags(kw):
    flags = ["--radius", repr(kw["radius"]), "-k", kw["k"]]
    if "min_radius" in kw:
        flags += ["--min-radius", repr(kw["min_radius"])]
    if "order" in kw:
        flags += ["--order", kw["order"]]
    if "pad" in kw:
        flags += ["--pad", str(kw["pad"])]
    return flags


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", ["index", "index_pad_first", "distance", "min_radius", "queries_distance_pad_first"])
@pytest.mark.parametrize("name", CLOUD_NAMES)
def test_ball_query_matches_tool(run_tool, tmp_path, name, case, device):
    points = cloud(name)
    external, kw = ball_case(case, name)
    queries = queries_for(points) if external else None
    idx, dist, counts = tool_neighbors(run_tool, tmp_path, "ball", points, queries, *ball_flags(kw))
    q = None if queries is None else on(device, centred(queries, frame=points))
    p = on(device, centred(points))
    got_idx, got_dist = s3d.ball_query(p, q, return_distances=True, **kw)
    assert_same(got_idx, idx)
    assert_same(got_dist, dist)
    assert_same(s3d.ball_query(p, q, **kw), idx)  # without distances: the indices alone
    # The tool's counts (hits before padding) against the slots: -1 pads after min(count, k) hits, "first"
    # fills every slot of a non-empty ball, and an empty ball is all -1 either way.
    filled = (host(got_idx) >= 0).sum(1)
    hits = np.minimum(counts, kw["k"])
    assert np.array_equal(filled, np.where(hits > 0, kw["k"], 0) if kw.get("pad") == "first" else hits)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(BALL_CASES))
@pytest.mark.parametrize("name", SMALL)
def test_ball_query_matches_brute_force(name, case, device):
    points = cloud(name)
    external, kw = ball_case(case, name)
    queries = queries_for(points) if external else None
    idx, dist = ref_ball(points, queries, **kw)
    got_idx, got_dist = s3d.ball_query(on(device, points), None if queries is None else on(device, queries),
                                       return_distances=True, **kw)
    assert_same(got_idx, idx)
    assert_same(got_dist, dist)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("pad", [-1, "first"])
def test_ball_query_boundary_and_empty_balls(device, pad):
    # A point at exactly d = r is outside; an empty ball is -1 with either pad.
    points = np.array([[0, 0, 0], [0.5, 0, 0], [0.25, 0, 0], [0, 0.5, 0]], F32)
    queries = np.array([[0, 0, 0], [10, 10, 10]], F32)
    idx, dist = s3d.ball_query(on(device, points), on(device, queries), 0.5, 4, pad=pad, return_distances=True)
    idx, dist = host(idx), host(dist)
    fill = [0, 2, 0, 0] if pad == "first" else [0, 2, -1, -1]
    assert idx.tolist() == [fill, [-1, -1, -1, -1]]
    assert np.all(np.isinf(dist[1]))
    assert_same(idx, ref_ball(points, queries, 0.5, 4, pad=pad)[0])


def test_ball_query_kitti_matches_tool(run_tool, tmp_path, kitti):
    path, xyz = kitti
    queries = xyz[::89].copy()
    q = save(tmp_path, "q.npy", queries)
    out = tmp_path / "ball.npy"
    pc_sample(run_tool, "ball", "--radius", 0.8, "-k", 32, "--queries", q, path, "-o", out)
    idx, dist = s3d.ball_query(centred(xyz), centred(queries, frame=xyz), 0.8, 32, return_distances=True)
    assert_same(idx, np.load(out))
    assert_same(dist, np.load(tmp_path / "ball.dist.npy"))


# ---------------------------------------------------------------------------------------------------------------
# three-NN and interpolation


def sparse_for(dense, size, seed=0):
    """`size` sparse points: some rows of `dense` (exact d = 0 matches), the rest new points in its box."""
    rng = np.random.default_rng(seed + size)
    taken = dense[rng.choice(len(dense), size=min(size // 2 + 1, len(dense), size), replace=False)]
    lo, hi = dense.min(0).astype(np.float64), dense.max(0).astype(np.float64)
    extra = (lo + rng.random((size - len(taken), 3)) * (hi - lo)).astype(F32)
    return np.ascontiguousarray(np.concatenate([taken, extra]))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("sparse_size", [1, 2, 3, 7, 200])
@pytest.mark.parametrize("name", ["n7", "dup1337", "lattice513", "outlier701"])
def test_three_nn_matches_tool(run_tool, tmp_path, name, sparse_size, device):
    dense = cloud(name)
    sparse = sparse_for(dense, sparse_size)
    idx, weights = tool_three_nn(run_tool, tmp_path, sparse, dense)
    got_idx, got_w = s3d.three_nn(on(device, centred(sparse, frame=dense)), on(device, centred(dense)))
    assert_same(got_idx, idx)
    assert_same(got_w, weights)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("sparse_size", [1, 2, 3, 50])
@pytest.mark.parametrize("name", ["n7", "n1000", "lattice513"])
def test_three_nn_matches_formula(name, sparse_size, device):
    dense = cloud(name)
    sparse = uniform_cloud(sparse_size, 500 + sparse_size) if name != "lattice513" else lattice_cloud(sparse_size, 7)
    idx, weights = ref_three_nn(sparse, dense)
    got_idx, got_w = s3d.three_nn(on(device, sparse), on(device, dense))
    assert_same(got_idx, idx)
    assert_same(got_w, weights)
    w = host(got_w)
    assert np.all(np.abs(w.sum(1, dtype=np.float64) - 1) < 1e-6)
    assert np.all(w[host(got_idx) < 0] == 0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sparse_size, channels", [(2, 1), (3, 4), (40, 7)])
def test_three_interpolate_matches_double_sum(device, dtype, sparse_size, channels):
    dense = cloud("n1000")
    sparse = uniform_cloud(sparse_size, 900 + sparse_size)
    idx, weights = s3d.three_nn(on(device, sparse), on(device, dense))
    values = np.random.default_rng(channels).normal(size=(sparse_size, channels)).astype(dtype)
    got = s3d.three_interpolate(on(device, values), idx, weights)
    assert_same(got, ref_interpolate(values, host(idx), host(weights)))


def test_three_interpolate_reproduces_values_at_the_sparse_points():
    # A dense point equal to a sparse one takes (within fp32) that point's values: its weight is ~1.
    sparse = uniform_cloud(30, 5)
    values = np.arange(60, dtype=np.float64).reshape(30, 2)
    idx, weights = s3d.three_nn(sparse, sparse)
    assert_same(idx[:, 0], np.arange(30, dtype=np.int32))
    out = s3d.three_interpolate(values, idx, weights)
    assert np.allclose(out, values, rtol=0, atol=1e-5)


def test_three_nn_kitti_matches_tool(run_tool, tmp_path, kitti):
    path, xyz = kitti
    dense = xyz[::7].copy()
    sparse = xyz[3::101].copy()
    idx, weights = tool_three_nn(run_tool, tmp_path, sparse, dense)
    got_idx, got_w = s3d.three_nn(centred(sparse, frame=dense), centred(dense))
    assert_same(got_idx, idx)
    assert_same(got_w, weights)


# ---------------------------------------------------------------------------------------------------------------
# Errors

P10 = uniform_cloud(10, 0)
P10_F64 = P10.astype(np.float64)
BATCH = P10.reshape(2, 5, 3).copy()
NAN = np.array([[0, 0, np.nan], [1, 1, 1], [2, 2, 2]], F32)
IDX = np.zeros((4, 3), np.int32)
W = np.full((4, 3), 1 / 3, F32)
VALUES = np.ones((10, 2), F32)

# (call, the ValueError's message start: the argument's name)
ARRAY_ERRORS = {
    "fps float64": (lambda: s3d.fps(P10_F64, 2), "points: expected float32"),
    "fps shape": (lambda: s3d.fps(np.zeros((5, 4), F32), 2), "points: expected shape"),
    "fps ndim": (lambda: s3d.fps(np.zeros(6, F32), 2), "points: expected 2-3 dimensions"),
    "fps strided": (lambda: s3d.fps(np.zeros((20, 3), F32)[::2], 2), "points: expected a C-contiguous"),
    "fps fortran": (lambda: s3d.fps(np.asfortranarray(P10), 2), "points: expected a C-contiguous"),
    "fps list": (lambda: s3d.fps([[0.0, 0.0, 0.0]], 1), "points: expected an array"),
    "fps lengths sum": (lambda: s3d.fps(P10, 1, lengths=[3, 3]), "lengths: expected them to sum"),
    "fps lengths with batch": (lambda: s3d.fps(BATCH, 1, lengths=[5, 5]), "lengths: only for"),
    "fps n per cloud": (lambda: s3d.fps(P10, [1, 1], lengths=[2, 3, 5]), "n: expected one value per cloud"),
    "fps start per cloud": (lambda: s3d.fps(P10, 1, start=[0], lengths=[5, 5]), "start: expected one value"),
    "fps batch n": (lambda: s3d.fps(BATCH, [1, 2]), "n: a [B, N, 3] batch"),
    "knn points float64": (lambda: s3d.knn(P10_F64, None, 2), "points: expected float32"),
    "knn queries float64": (lambda: s3d.knn(P10, P10_F64, 2), "queries: expected float32"),
    "knn queries shape": (lambda: s3d.knn(P10, np.zeros((3, 2), F32), 2), "queries: expected shape"),
    "knn queries strided": (lambda: s3d.knn(P10, np.zeros((6, 3), F32)[::2], 2), "queries: expected a C-contiguous"),
    "knn points strided": (lambda: s3d.knn(np.zeros((20, 3), F32)[::2], None, 2), "points: expected a C-contiguous"),
    "knn pad": (lambda: s3d.knn(P10, None, 2, pad="last"), "pad: expected"),
    "knn pad int": (lambda: s3d.knn(P10, None, 2, pad=0), "pad: expected"),
    "ball points int": (lambda: s3d.ball_query(P10.astype(np.int32), None, 0.1), "points: expected float32"),
    "ball queries shape": (lambda: s3d.ball_query(P10, np.zeros((3, 4), F32), 0.1), "queries: expected shape"),
    "ball order": (lambda: s3d.ball_query(P10, None, 0.1, order="random"), "order: expected"),
    "ball pad": (lambda: s3d.ball_query(P10, None, 0.1, pad="none"), "pad: expected"),
    "three_nn dense": (lambda: s3d.three_nn(P10, P10_F64), "dense: expected float32"),
    "three_nn dense shape": (lambda: s3d.three_nn(P10, np.zeros((4, 2), F32)), "dense: expected shape"),
    "engine three_nn sparse": (lambda: s3d.NeighborEngine().three_nn(P10_F64, P10), "sparse: expected float32"),
    "interp values dtype": (lambda: s3d.three_interpolate(VALUES.astype(np.int32), IDX, W), "values: expected float32"),
    "interp values ndim": (lambda: s3d.three_interpolate(np.ones(10, F32), IDX, W), "values: expected shape"),
    "interp indices dtype": (lambda: s3d.three_interpolate(VALUES, IDX.astype(np.int64), W), "indices: expected int32"),
    "interp indices shape": (lambda: s3d.three_interpolate(VALUES, np.zeros((4, 2), np.int32), W),
                             "indices: expected shape"),
    "interp indices range": (lambda: s3d.three_interpolate(VALUES, np.full((4, 3), 10, np.int32), W),
                             "indices: expected values in"),
    "interp indices below -1": (lambda: s3d.three_interpolate(VALUES, np.full((4, 3), -2, np.int32), W),
                                "indices: expected values in"),
    "interp weights dtype": (lambda: s3d.three_interpolate(VALUES, IDX, W.astype(np.float64)),
                             "weights: expected float32"),
    "interp weights rows": (lambda: s3d.three_interpolate(VALUES, IDX, W[:3].copy()), "weights: expected shape"),
    "interp weights strided": (lambda: s3d.three_interpolate(VALUES, IDX, np.ones((8, 3), F32)[::2]),
                               "weights: expected a C-contiguous"),
}


@pytest.mark.parametrize("case", list(ARRAY_ERRORS))
def test_bad_arrays_raise_value_error_naming_the_argument(case):
    call, message = ARRAY_ERRORS[case]
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value).startswith(message), str(info.value)


INVALID_ARGUMENTS = {
    "fps n > N": (lambda: s3d.fps(P10, 11), "samples must be in"),
    "fps n < 0": (lambda: s3d.fps(P10, -1), "samples must be in"),
    "fps start": (lambda: s3d.fps(P10, 2, start=10), "start must be in"),
    "fps negative start": (lambda: s3d.fps(P10, 2, start=-1), "start must be in"),
    "fps ragged start": (lambda: s3d.fps(P10, 2, start=[0, 5], lengths=[5, 5]), "cloud 1: start"),
    "fps empty cloud": (lambda: s3d.fps(P10, [1, 0], lengths=[10, 0]), "cloud 1: length"),
    "fps ratio 0": (lambda: s3d.fps(P10, ratio=0.0), "samples_for_ratio: ratio"),
    "fps ratio > 1": (lambda: s3d.fps(P10, ratio=1.5), "samples_for_ratio: ratio"),
    "knn k 0": (lambda: s3d.knn(P10, None, 0), "KnnParams.k"),
    "knn k 1025": (lambda: s3d.knn(P10, None, 1025, allow_fewer=True), "KnnParams.k"),
    "knn k > N": (lambda: s3d.knn(P10, None, 11), "kNN: K = 11"),
    "knn k > N - 1 exclude_self": (lambda: s3d.knn(P10, None, 10, exclude_self=True), "kNN: K = 10"),
    "knn pad first needs allow_fewer": (lambda: s3d.knn(P10, None, 11, pad="first"), "kNN: K = 11"),
    "knn exclude_self with queries": (lambda: s3d.knn(P10, P10, 2, exclude_self=True), "kNN: exclude_self"),
    "ball radius 0": (lambda: s3d.ball_query(P10, None, 0.0), "BallQueryParams.radius"),
    "ball radius -1": (lambda: s3d.ball_query(P10, None, -1.0), "BallQueryParams.radius"),
    "ball radius inf": (lambda: s3d.ball_query(P10, None, float("inf")), "BallQueryParams.radius"),
    "ball min_radius": (lambda: s3d.ball_query(P10, None, 0.1, min_radius=0.1), "BallQueryParams.min_radius"),
    "ball negative min_radius": (lambda: s3d.ball_query(P10, None, 0.1, min_radius=-0.1),
                                 "BallQueryParams.min_radius"),
    "ball k": (lambda: s3d.ball_query(P10, None, 0.1, 1025), "BallQueryParams.k"),
    "engine device": (lambda: s3d.NeighborEngine("tpu"), "invalid device 'tpu'"),
}


@pytest.mark.parametrize("case", list(INVALID_ARGUMENTS))
def test_bad_parameters_raise_invalid_argument(case):
    call, message = INVALID_ARGUMENTS[case]
    with pytest.raises(s3d.InvalidArgument) as info:
        call()
    assert isinstance(info.value, ValueError) and isinstance(info.value, s3d.Error)
    assert message in str(info.value), str(info.value)


@pytest.mark.parametrize("call, message", [
    (lambda: s3d.knn(NAN, None, 2), "points: point 0 has a non-finite coordinate"),
    (lambda: s3d.knn(P10, NAN, 2), "queries: point 0 has a non-finite coordinate"),
    (lambda: s3d.ball_query(NAN, None, 0.5), "points: point 0 has a non-finite coordinate"),
    (lambda: s3d.three_nn(P10, np.array([[0, np.inf, 0]], F32)), "non-finite coordinate"),
], ids=["knn points", "knn queries", "ball points", "three_nn dense"])
def test_non_finite_points_raise_data_error(call, message):
    with pytest.raises(s3d.DataError, match=message):
        call()


def test_fps_needs_exactly_one_of_n_and_ratio():
    for call in (lambda: s3d.fps(P10), lambda: s3d.fps(P10, 2, ratio=0.5)):
        with pytest.raises(ValueError, match="give exactly one of n and ratio"):
            call()


@pytest.mark.parametrize("engine", ["FpsEngine", "NeighborEngine"])
def test_cpu_engines_accept_cpu_arrays_and_refuse_cuda(engine):
    e = getattr(s3d, engine)("cpu")
    assert e.device == "cpu"
    call = (lambda x: e.fps(x, 3)) if engine == "FpsEngine" else (lambda x: e.knn(x, None, 3))
    result = call(P10)
    assert_same(result if engine == "FpsEngine" else result[0],
                ref_fps(P10, 3) if engine == "FpsEngine" else ref_knn(P10, None, 3)[0])
    if "cuda" not in DEVICES:
        with pytest.raises(s3d.DeviceUnavailable):
            getattr(s3d, engine)("cuda")
        return
    with pytest.raises(ValueError, match="points"):
        call(on("cuda", P10))


@pytest.mark.parametrize("device", DEVICES)
def test_outputs_live_on_the_input_device_with_documented_dtypes(device):
    p = on(device, P10)
    checks = [(s3d.fps(p, 4), np.int32, (4,))]
    idx, dist = s3d.knn(p, None, 3)
    checks += [(idx, np.int32, (10, 3)), (dist, F32, (10, 3))]
    idx, dist = s3d.ball_query(p, None, 0.3, 5, return_distances=True)
    checks += [(idx, np.int32, (10, 5)), (dist, F32, (10, 5))]
    idx, w = s3d.three_nn(on(device, P10[:4]), p)
    checks += [(idx, np.int32, (10, 3)), (w, F32, (10, 3))]
    checks += [(s3d.three_interpolate(on(device, VALUES[:4]), idx, w), F32, (10, 2))]
    for out, dtype, shape in checks:
        assert type(out) is type(p)
        assert host(out).dtype == dtype and host(out).shape == shape


# ---------------------------------------------------------------------------------------------------------------
# Empty queries and the module function's argument names.


def test_module_three_nn_names_sparse():
    with pytest.raises(ValueError, match="^sparse: expected float32"):
        s3d.three_nn(P10_F64, P10)


def test_empty_numpy_queries_give_empty_results():
    idx, dist = s3d.knn(P10, np.zeros((0, 3), F32), 2)
    assert idx.shape == (0, 2) and dist.shape == (0, 2)


def test_empty_queries_are_no_queries_not_the_cloud():
    # An empty query array gives empty results (the engines read an empty view as "the points themselves").
    idx, dist = s3d.knn(P10, np.zeros((0, 3), F32), 2, exclude_self=False)
    assert idx.shape == (0, 2)
    assert s3d.ball_query(P10, np.zeros((0, 3), F32), 0.5, 4).shape == (0, 4)


def test_fps_refuses_non_finite_points_on_the_cpu():
    for bad in (np.nan, np.inf):
        points = uniform_cloud(10, 5)
        points[4, 2] = bad
        with pytest.raises(s3d.DataError, match="point 4"):
            s3d.fps(points, 3)
