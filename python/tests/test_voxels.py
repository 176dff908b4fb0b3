"""s3d.voxelize and s3d.rulebook and the VoxelEngine / RulebookEngine objects.

Three kinds of checks:
- bit-exact against the C++ CPU oracle, `pc-sample voxel --emit voxels` and `pc-sample rulebook` (docs/PC-SAMPLE.md)
  run with --device cpu: voxel coordinates, the point -> voxel map, aggregated xyz, the record's counts, shape and
  grid origin; every array of the rulebook's .npz (pairs, counts, offsets, in_index, out_index, out_coords,
  out_shape). `voxel` uses no local origin (its grids are anchored in the file's coordinates), so the package gets
  the same points as the file;
- independent NumPy references on small inputs: the cell rules of the three grid origins, the keep rules and
  aggregates of voxels.hpp, and a brute-force rulebook from spconv's convention (i = o * s - p + tap * d);
- the argument contract: ValueError naming the argument, s3d.InvalidArgument for bad parameters, s3d.DataError
  for bad data (duplicate or out-of-shape coordinates, non-finite points).
Ops with a CUDA path run on each of conftest.devices(); CUDA inputs are made with torch (or CuPy).
"""
import hashlib
import itertools
import json
import subprocess

import numpy as np
import pytest

import s3d
from conftest import (cache_key, devices, duplicate_cloud, host, lattice_cloud, on, pc_sample, save,
                      uniform_cloud, unavailable)

F32 = np.float32
F64 = np.float64
DEVICES = devices()


def assert_same(actual, expected, what=""):
    actual = host(actual)
    assert actual.dtype == expected.dtype, (what, actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    if not np.array_equal(actual, expected):
        bad = np.argwhere(actual != expected)
        raise AssertionError(f"{what}: {len(bad)} elements differ, first at {bad[0].tolist()}: "
                             f"{actual[tuple(bad[0])]} != {expected[tuple(bad[0])]}")


# ---------------------------------------------------------------------------------------------------------------
# Clouds





CLOUDS = {
    "n1": lambda: uniform_cloud(1, 1),
    "n2": lambda: uniform_cloud(2, 2),
    "n3": lambda: uniform_cloud(3, 3),
    "n7": lambda: uniform_cloud(7, 7),
    "dup7": lambda: duplicate_cloud(7, 3, 8),
    "n1000": lambda: uniform_cloud(1000, 10),
    "dup1337": lambda: duplicate_cloud(1337, 300, 11),
    "lattice513": lambda: lattice_cloud(513, 12),
    "negative1001": lambda: uniform_cloud(1001, 13, scale=10.0, shift=(-1000.0, -2005.0, -5.0)),
}
CLOUD_NAMES = list(CLOUDS)


def cloud(name):
    return CLOUDS[name]()


def extent(points):
    e = float(np.max(points.max(0).astype(F64) - points.min(0)))
    return e if e > 0 else 1.0


def f32(value):
    """A float32 value as the Python float that parses back to it (for the tool's flags and the package alike)."""
    return float(F32(value))


# name -> kwargs of s3d.voxelize, from the cloud (sizes scale with its extent; the lattice gets exact 1/8ths).
def voxel_config(name, points):
    e = extent(points)
    lattice = np.all(np.mod(points, 0.25) == 0)
    v = 0.125 if lattice else f32(e / 10)
    lo, hi = points.min(0).astype(F64), points.max(0).astype(F64)
    # A box that cuts the cloud on both sides (and holds a degenerate axis' points): points are dropped.
    box = [f32(x) for x in np.concatenate([lo + 0.25 * (hi - lo) - 0.1 * e, lo + 0.8 * (hi - lo) + 0.1 * e])]
    if lattice:
        box = [0.25, 0.0, 0.25, 1.0, 1.125, 0.875]
    configs = {
        "world_mean": dict(voxel_size=v),
        "world_anisotropic_first": dict(voxel_size=(v / 2, v, 2 * v), reduce="first"),
        "min_bound_nearest": dict(voxel_size=f32(1.5 * v), origin="min_bound", reduce="nearest"),
        "range_limits": dict(voxel_size=v, origin="range", range=box, max_points=3, max_voxels=40),
        "range_nearest": dict(voxel_size=(v, 2 * v, v), origin="range", range=box, reduce="nearest"),
        "world_min_points": dict(voxel_size=2 * v, min_points=2, max_points=4, reduce="nearest"),
    }
    return configs[name]


VOXEL_CONFIGS = ["world_mean", "world_anisotropic_first", "min_bound_nearest", "range_limits", "range_nearest",
                 "world_min_points"]


def size3(voxel_size):
    return np.asarray(voxel_size if isinstance(voxel_size, tuple) else (voxel_size,) * 3, F32)


# ---------------------------------------------------------------------------------------------------------------
# NumPy reference of voxelize (voxels.hpp, docs/PC-SAMPLE.md "Voxels").


def ref_voxelize(points, voxel_size, origin="world", range=None, max_points=0, max_voxels=0, min_points=1,
                 reduce="mean", batch=None):
    p = np.asarray(points, F32)
    n = len(p)
    v = size3(voxel_size)
    b = np.zeros(n, np.int64) if batch is None else np.asarray(batch, np.int64)
    batches = int(b.max()) + 1 if n else 1
    valid = np.ones(n, bool)
    if origin == "world":
        cells = np.floor(p * (F32(1) / v)).astype(np.int64)  # fp32 product, 1/v rounded to fp32 first
        offset = cells.min(0)
        dims = cells.max(0) - offset + 1
        corner = offset.astype(F64) * v.astype(F64)
        c = cells - offset
    elif origin == "min_bound":
        bound = p.min(0).astype(F64) - v.astype(F64) * 0.5
        c = np.floor((p.astype(F64) - bound) / v.astype(F64)).astype(np.int64)
        dims = np.floor((p.max(0).astype(F64) - bound) / v.astype(F64)).astype(np.int64) + 1
        corner = bound
    else:
        lo, hi = np.asarray(range[:3], F32), np.asarray(range[3:], F32)
        dims = np.floor((hi.astype(F64) - lo.astype(F64)) / v.astype(F64) + 0.5).astype(np.int64)
        f = np.floor((p - lo) / v)  # fp32
        valid = np.all((p >= lo) & (p < hi) & (f >= 0) & (f < dims), axis=1)
        c = np.where(valid[:, None], f, 0).astype(np.int64)
        corner = lo.astype(F64)
    key = ((b * dims[2] + c[:, 2]) * dims[1] + c[:, 1]) * dims[0] + c[:, 0]
    order = np.lexsort((np.arange(n), key))
    order = order[valid[order]]
    keys, starts = np.unique(key[order], return_index=True)
    ends = np.append(starts[1:], len(order))
    members = [order[s:e] for s, e in zip(starts, ends)]
    survivors = [len(m) >= min_points for m in members]
    firsts = sorted(m[0] for m, ok in zip(members, survivors) if ok)
    threshold = firsts[max_voxels - 1] if max_voxels > 0 and len(firsts) > max_voxels else np.inf
    out = dict(coords=[], xyz=[], points_per_voxel=[], representative=[], dropped_over_max_points=0,
               dropped_over_max_voxels=0)
    point_voxel = np.full(n, -1, np.int32)
    for k, m, ok in zip(keys, members, survivors):
        kept = m[:max_points] if max_points > 0 else m
        out["dropped_over_max_points"] += len(m) - len(kept)
        if not ok or m[0] > threshold:
            out["dropped_over_max_voxels"] += len(kept)
            continue
        point_voxel[kept] = len(out["coords"])
        x, rest = k % dims[0], k // dims[0]
        y, rest = rest % dims[1], rest // dims[1]
        z, bb = rest % dims[2], rest // dims[2]
        out["coords"].append((bb, z, y, x))
        rep = kept[0]
        if reduce == "nearest":
            centre = corner + (np.array([x, y, z], F64) + 0.5) * v.astype(F64)
            d = p[kept].astype(F64) - centre
            rep = kept[np.argmin(((d[:, 0] * d[:, 0]) + (d[:, 1] * d[:, 1])) + (d[:, 2] * d[:, 2]))]
        out["representative"].append(rep)
        out["points_per_voxel"].append(len(kept))
        if reduce == "mean":
            total = np.zeros(3, F64)
            for i in kept:  # fp64, input order
                total += p[i].astype(F64)
            out["xyz"].append((total / len(kept)).astype(F32))
        else:
            out["xyz"].append(p[rep])
    m = len(out["coords"])
    return {
        "count": m,
        "shape": tuple(int(x) for x in dims[::-1]),
        "origin": tuple(float(x) for x in corner),
        "dropped_out_of_range": int(n - valid.sum()),
        "dropped_over_max_points": out["dropped_over_max_points"],
        "dropped_over_max_voxels": out["dropped_over_max_voxels"],
        "coords": np.asarray(out["coords"], np.int32).reshape(m, 4),
        "xyz": np.asarray(out["xyz"], F32).reshape(m, 3),
        "points_per_voxel": np.asarray(out["points_per_voxel"], np.int32),
        "representative": np.asarray(out["representative"], np.int32),
        "point_voxel": point_voxel,
    }


ARRAYS = ["coords", "xyz", "points_per_voxel", "representative", "point_voxel"]
SCALARS = ["count", "shape", "origin", "dropped_out_of_range", "dropped_over_max_points", "dropped_over_max_voxels"]


def assert_voxels_equal(got, expected):
    got = host(got)
    for k in SCALARS:
        assert got[k] == expected[k], (k, got[k], expected[k])
    for k in ARRAYS:
        assert_same(got[k], expected[k], k)


def check_voxels_consistent(points, got, reduce):
    """What the arrays must say of each other, whatever the grid."""
    pv = got["point_voxel"]
    m = got["count"]
    assert got["coords"].shape == (m, 4)
    counts = np.bincount(pv[pv >= 0], minlength=m)
    assert_same(got["points_per_voxel"], counts.astype(np.int32), "points_per_voxel vs point_voxel")
    assert got["dropped_out_of_range"] + got["dropped_over_max_points"] + got["dropped_over_max_voxels"] + \
        counts.sum() == len(points)
    # Sorted by (batch, z, y, x), no voxel twice.
    keys = [tuple(r) for r in got["coords"].tolist()]
    assert keys == sorted(set(keys))
    rep = got["representative"]
    assert np.all(pv[rep] == np.arange(m))
    if reduce != "nearest":  # the first member
        first = np.full(m, len(points))
        np.minimum.at(first, pv[pv >= 0], np.nonzero(pv >= 0)[0])
        assert_same(rep, first.astype(np.int32), "representative")
    if reduce != "mean":
        assert_same(got["xyz"], np.asarray(points, F32)[rep], "xyz of the representative")


# ---------------------------------------------------------------------------------------------------------------
# The oracle




_ORACLE = {}



def csv(values):
    return ",".join(repr(float(x)) if isinstance(x, float) or isinstance(x, np.floating) else str(x) for x in values)


def voxel_flags(cfg):
    v = size3(cfg["voxel_size"])
    flags = ["--voxel-size", csv([f32(x) for x in v])]
    origin = cfg.get("origin", "world")
    flags += ["--origin", origin.replace("_", "-")]
    if "range" in cfg:
        flags += ["--range", csv([f32(x) for x in cfg["range"]])]
    flags += ["--max-points-per-voxel", cfg.get("max_points", 0), "--max-voxels", cfg.get("max_voxels", 0),
              "--min-points", cfg.get("min_points", 1), "--aggregate", cfg.get("reduce", "mean")]
    return flags


def record_of(completed):
    for line in completed.stdout.splitlines():
        rec = json.loads(line)
        if rec.get("type") == "item":
            return rec
    raise AssertionError("no item record in the tool's --json output")


def tool_voxels(run_tool, tmp_path, source, cfg):
    """(record, coords, features, point_voxel) of `pc-sample voxel --emit voxels` on a file or an array."""
    if isinstance(source, np.ndarray):
        key = cache_key("voxel", source, sorted(cfg.items()))
        source_path = None
    else:
        key = cache_key("voxel", str(source), sorted(cfg.items()))
        source_path = source
    if key not in _ORACLE:
        if source_path is None:
            source_path = save(tmp_path, "in.npy", source)
        out = tmp_path / "v.npy"
        done = pc_sample(run_tool, "voxel", *voxel_flags(cfg), "--emit", "voxels", "--json", source_path, "-o", out,
                         "--overwrite")
        _ORACLE[key] = (record_of(done), np.load(out), np.load(tmp_path / "v.features.npy"),
                        np.load(tmp_path / "v.point_voxel.npy"))
    return _ORACLE[key]


def assert_voxels_match_tool(got, tool, points):
    rec, coords, features, point_voxel = tool
    got = host(got)
    assert got["count"] == rec["voxels"]
    assert list(got["shape"]) == rec["shape"]
    assert list(got["origin"]) == rec["grid_origin"]
    for k in ["dropped_out_of_range", "dropped_over_max_points", "dropped_over_max_voxels"]:
        assert got[k] == rec[k], k
    assert int(got["points_per_voxel"].sum()) == rec["points_kept"]
    assert_same(got["coords"], coords, "coords")
    assert_same(got["point_voxel"], point_voxel, "point_voxel")
    assert_same(got["xyz"], np.ascontiguousarray(features[:, :3]), "xyz")


@pytest.fixture(scope="module")
def kitti(data_dir):
    path = data_dir / "pointclouds" / "kitti_velodyne" / "000000.bin"
    if not path.is_file():
        unavailable(f"no KITTI scan at {path}")
    xyz = np.ascontiguousarray(np.fromfile(path, dtype=F32).reshape(-1, 4)[:, :3])
    return path, xyz


# ---------------------------------------------------------------------------------------------------------------
# voxelize


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("config", VOXEL_CONFIGS)
@pytest.mark.parametrize("name", CLOUD_NAMES)
def test_voxelize_matches_tool(run_tool, tmp_path, name, config, device):
    points = cloud(name)
    cfg = voxel_config(config, points)
    got = host(s3d.voxelize(on(device, points), **cfg))
    assert_voxels_match_tool(got, tool_voxels(run_tool, tmp_path, points, cfg), points)
    check_voxels_consistent(points, got, cfg.get("reduce", "mean"))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("config", VOXEL_CONFIGS)
@pytest.mark.parametrize("name", CLOUD_NAMES)
def test_voxelize_matches_reference(name, config, device):
    points = cloud(name)
    cfg = voxel_config(config, points)
    assert_voxels_equal(s3d.voxelize(on(device, points), **cfg), ref_voxelize(points, **cfg))


def test_voxelize_keep_rules_by_hand():
    # One voxel of 5 points (indices 0, 2, 4, 6, 8 in cell (0,0,0)), one of 3 (1, 3, 5 in cell x=1) and one of
    # 1 (7, cell x=2); voxel size 1, world origin.
    x = np.array([0.1, 1.1, 0.2, 1.2, 0.3, 1.3, 0.4, 2.5, 0.5], F32)
    points = np.stack([x, np.full(9, 0.5, F32), np.full(9, 0.5, F32)], 1)
    v = s3d.voxelize(points, 1.0, max_points=2, min_points=2)
    assert v["coords"].tolist() == [[0, 0, 0, 0], [0, 0, 0, 1]]
    assert v["points_per_voxel"].tolist() == [2, 2]
    assert v["point_voxel"].tolist() == [0, 1, 0, 1, -1, -1, -1, -1, -1]
    assert (v["dropped_over_max_points"], v["dropped_over_max_voxels"]) == (4, 1)
    assert_same(v["xyz"][0], ((points[0].astype(F64) + points[2]) / 2).astype(F32))
    # max_voxels keeps the voxels whose first point comes first (0 before 1 before 7), in sorted order.
    v = s3d.voxelize(points[::-1].copy(), 1.0, max_voxels=2)  # now the x=2 voxel's point is row 1
    assert v["coords"][:, 3].tolist() == [0, 2]
    assert v["dropped_over_max_voxels"] == 3


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("origin", ["world", "range"])
def test_voxelize_batch_ids(device, origin):
    rng = np.random.default_rng(3)
    points = rng.random((600, 3)).astype(F32)
    batch = rng.integers(0, 3, 600).astype(np.int32)
    batch[batch == 1] = 2  # an empty batch in the middle
    cfg = dict(voxel_size=0.125)
    if origin == "range":
        cfg.update(origin="range", range=[0.0, 0.0, 0.0, 0.75, 1.0, 1.0], max_points=5)
    got = host(s3d.voxelize(on(device, points), batch=on(device, batch), **cfg))
    assert_voxels_equal(got, ref_voxelize(points, batch=batch, **cfg))
    assert set(got["coords"][:, 0].tolist()) == {0, 2}
    if origin == "range":
        # A range grid does not depend on the cloud: each batch alone gives the same voxels.
        for b in (0, 2):
            alone = host(s3d.voxelize(np.ascontiguousarray(points[batch == b]), **cfg))
            mine = got["coords"][:, 0] == b
            assert_same(got["coords"][mine][:, 1:], alone["coords"][:, 1:], "coords")
            assert_same(got["xyz"][mine], alone["xyz"], "xyz")


@pytest.mark.parametrize("cfg", [
    dict(voxel_size=0.2),
    dict(voxel_size=(0.05, 0.05, 0.1), origin="range", range=[0.0, -40.0, -3.0, 70.4, 40.0, 1.0], max_points=5,
         max_voxels=16000),
    dict(voxel_size=0.3, origin="min_bound", reduce="nearest", min_points=3),
], ids=["world", "openpcdet_range", "min_bound_nearest"])
def test_voxelize_kitti_matches_tool(run_tool, tmp_path, kitti, cfg):
    path, xyz = kitti
    got = host(s3d.voxelize(xyz, **cfg))
    rec, coords, features, point_voxel = tool_voxels(run_tool, tmp_path, path, cfg)
    assert features.shape[1] == 4  # x y z and the reflectance
    assert_voxels_match_tool(got, (rec, coords, features, point_voxel), xyz)
    check_voxels_consistent(xyz, got, cfg.get("reduce", "mean"))


@pytest.mark.parametrize("device", DEVICES)
def test_voxel_engine_reuse(device):
    engine = s3d.VoxelEngine(device)
    assert engine.device == ("cpu" if device == "cpu" else "cuda:0")
    a, b = cloud("n1000"), cloud("lattice513")
    cfg_a = voxel_config("range_limits", a)
    cfg_b = voxel_config("world_mean", b)
    first = host(engine.voxelize(on(device, a), **cfg_a))
    assert_voxels_equal(engine.voxelize(on(device, b), **cfg_b), ref_voxelize(b, **cfg_b))
    assert_voxels_equal(engine.voxelize(on(device, a), **cfg_a), first)
    assert_voxels_equal(first, ref_voxelize(a, **cfg_a))


# ---------------------------------------------------------------------------------------------------------------
# Rulebook: NumPy reference (rulebook.hpp, docs/PC-SAMPLE.md "Rulebooks")


def triple(v):
    return np.asarray(v if isinstance(v, (tuple, list)) else (v, v, v), np.int64)


class NoOutput(Exception):
    """The reference finds no output cell (the library's DataError)."""


def ref_rulebook(coords, shape, kernel=3, stride=1, padding=0, dilation=1, subm=False):
    coords = np.asarray(coords, np.int64)
    k, s, d = triple(kernel), triple(stride), triple(dilation)
    shape = np.asarray(shape, np.int64)
    p = (k // 2) * d if subm else triple(padding)
    out_shape = shape if subm else (shape + 2 * p - d * (k - 1) - 1) // s + 1
    if not np.all(out_shape >= 1):
        raise NoOutput("a kernel larger than the padded input")
    b, cell = coords[:, 0], coords[:, 1:]

    def linear(bb, c):
        return ((bb * out_shape[0] + c[:, 0]) * out_shape[1] + c[:, 1]) * out_shape[2] + c[:, 2]

    taps = list(itertools.product(range(k[0]), range(k[1]), range(k[2])))  # offset (kz * KY + ky) * KX + kx
    reach = []
    for t in taps:
        num = cell + p - np.asarray(t) * d
        ok = np.all((num >= 0) & (num % s == 0), axis=1)
        o = num // s
        ok &= np.all(o < out_shape, axis=1)
        reach.append((ok, o))
    if subm:
        out_coords = coords
    else:
        hit = [(b[ok], o[ok]) for ok, o in reach]
        all_b = np.concatenate([h[0] for h in hit])
        all_o = np.concatenate([h[1] for h in hit])
        if len(all_b) == 0:
            raise NoOutput("every input falls outside the output grid")
        keys, first = np.unique(linear(all_b, all_o), return_index=True)
        out_coords = np.concatenate([all_b[first, None], all_o[first]], 1)
    out_keys = linear(out_coords[:, 0], out_coords[:, 1:])
    row_of = {int(key): row for row, key in enumerate(out_keys)}
    in_index, out_index, offsets = [], [], [0]
    for ok, o in reach:
        keys = linear(b, o)
        pairs = [(row_of[int(keys[i])], i) for i in np.nonzero(ok)[0] if int(keys[i]) in row_of]
        pairs.sort()  # by output, then input
        out_index += [q[0] for q in pairs]
        in_index += [q[1] for q in pairs]
        offsets.append(len(in_index))
    offsets = np.asarray(offsets, np.int64)
    return {
        "out_coords": np.asarray(out_coords, np.int32).reshape(-1, 4),
        "out_shape": tuple(int(x) for x in out_shape),
        "in_index": np.asarray(in_index, np.int32),
        "out_index": np.asarray(out_index, np.int32),
        "offsets": offsets,
        "indice_num": np.diff(offsets).astype(np.int32),
    }


def check_spconv_layout(rb, n_max):
    """indice_pairs [2, K, n_max]: offset k's pairs first (equal to the CSR's), then -1; indice_num = counts."""
    pairs, num, offsets = rb["indice_pairs"], rb["indice_num"], rb["offsets"]
    assert offsets.dtype == np.int64 and pairs.dtype == np.int32 and num.dtype == np.int32
    assert rb["in_index"].dtype == np.int32 and rb["out_index"].dtype == np.int32
    kv = len(num)
    assert pairs.shape == (2, kv, n_max)
    assert offsets.shape == (kv + 1,) and offsets[0] == 0 and offsets[-1] == len(rb["in_index"])
    assert_same(num, np.diff(offsets).astype(np.int32), "indice_num vs offsets")
    for k in range(kv):
        a, e, n = offsets[k], offsets[k + 1], num[k]
        assert_same(pairs[0, k, :n], rb["in_index"][a:e], f"indice_pairs[0, {k}]")
        assert_same(pairs[1, k, :n], rb["out_index"][a:e], f"indice_pairs[1, {k}]")
        assert np.all(pairs[:, k, n:] == -1)
        # within an offset: sorted by output, then input; no pair twice
        o, i = rb["out_index"][a:e].astype(np.int64), rb["in_index"][a:e].astype(np.int64)
        assert np.all(np.diff(o * (1 << 32) + i) > 0)


# coords cases: name -> (coords int32 [M, 4], shape (Z, Y, X))
def _random_coords(seed, shape, count, batches):
    rng = np.random.default_rng(seed)
    total = batches * int(np.prod(shape))
    flat = rng.choice(total, size=count, replace=False)
    b, rest = np.divmod(flat, int(np.prod(shape)))
    z, rest = np.divmod(rest, shape[1] * shape[2])
    y, x = np.divmod(rest, shape[2])
    return np.stack([b, z, y, x], 1).astype(np.int32), tuple(shape)


def _voxelised():
    v = s3d.voxelize(uniform_cloud(1000, 10), 0.1)
    return v["coords"], v["shape"]


COORDS = {
    "single": lambda: (np.array([[0, 2, 2, 2]], np.int32), (5, 5, 5)),
    "random_two_batches": lambda: _random_coords(5, (8, 9, 10), 150, 2),
    "unsorted_three_batches": lambda: _random_coords(6, (5, 7, 6), 90, 3),
    "dense_cube": lambda: _random_coords(7, (4, 4, 4), 64, 1),
    "voxelised_cloud": _voxelised,
    "thin_line": lambda: (np.array([[0, 0, 0, x] for x in range(0, 40, 3)], np.int32), (1, 1, 40)),
}

SPECS = {
    "subm3": dict(kernel=3, subm=True),
    "subm_anisotropic_dilated": dict(kernel=(3, 1, 5), dilation=(1, 1, 2), subm=True),
    "pointwise": dict(kernel=1),
    "down": dict(kernel=3, stride=2, padding=1),
    "anisotropic": dict(kernel=(2, 3, 1), stride=(1, 2, 3), padding=(0, 1, 0), dilation=(1, 1, 2)),
    "inverse_down": dict(kernel=3, stride=2, padding=1, inverse=True),
    "inverse_anisotropic": dict(kernel=(1, 3, 2), stride=(1, 2, 2), inverse=True),
}


def coords_case(name):
    coords, shape = COORDS[name]()
    return np.ascontiguousarray(coords), tuple(int(x) for x in shape)


def batch_size_of(coords):
    return int(coords[:, 0].max()) + 1


def rb_flags(spec):
    flags = []
    for field in ["kernel", "stride", "padding", "dilation"]:
        if field in spec:
            flags += [f"--{field}", csv(triple(spec[field]))]
    if spec.get("subm"):
        flags.append("--subm")
    if spec.get("inverse"):
        flags.append("--inverse")
    return flags


def tool_rulebook(run_tool, tmp_path, coords, shape, spec, batch_size):
    """The tool's .npz as a dict, or None when the item failed (exit 1)."""
    key = cache_key("rulebook", coords, shape, sorted(spec.items()), batch_size)
    if key not in _ORACLE:
        out = tmp_path / "rb.npz"
        try:
            pc_sample(run_tool, "rulebook", save(tmp_path, "c.npy", coords), "--shape", csv(shape),
                      "--batch-size", batch_size, *rb_flags(spec), "-o", out, "--overwrite")
        except subprocess.CalledProcessError as failed:
            assert failed.returncode == 1, failed.stderr
            _ORACLE[key] = None
        else:
            with np.load(out) as z:
                _ORACLE[key] = {k: z[k] for k in z.files}
    return _ORACLE[key]


def forward_spec(spec):
    return {k: v for k, v in spec.items() if k != "inverse"}


# ---------------------------------------------------------------------------------------------------------------
# rulebook


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("spec", list(SPECS))
@pytest.mark.parametrize("case", list(COORDS))
def test_rulebook_matches_tool(run_tool, tmp_path, case, spec, device):
    coords, shape = coords_case(case)
    bs = batch_size_of(coords)
    expected = tool_rulebook(run_tool, tmp_path, coords, shape, SPECS[spec], bs)
    if expected is None:  # the tool refuses (no output cell): so does the package, with a DataError
        with pytest.raises(s3d.DataError):
            s3d.rulebook(on(device, coords), shape, batch_size=bs, **SPECS[spec])
        return
    got = host(s3d.rulebook(on(device, coords), shape, batch_size=bs, **SPECS[spec]))
    assert list(got["out_shape"]) == expected["out_shape"].tolist()
    assert_same(got["out_coords"], expected["out_coords"], "out_coords")
    assert_same(got["offsets"], expected["offsets"], "offsets")
    assert_same(got["indice_num"], expected["counts"], "indice_num")
    assert_same(got["in_index"], expected["in_index"], "in_index")
    assert_same(got["out_index"], expected["out_index"], "out_index")
    assert_same(got["indice_pairs"], expected["pairs"], "indice_pairs")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("spec", [s for s in SPECS if not SPECS[s].get("inverse")])
@pytest.mark.parametrize("case", list(COORDS))
def test_rulebook_matches_reference_and_spconv_layout(case, spec, device):
    coords, shape = coords_case(case)
    try:
        expected = ref_rulebook(coords, shape, **SPECS[spec])
    except NoOutput:
        with pytest.raises(s3d.DataError, match="larger than the padded input|no output voxel"):
            s3d.rulebook(on(device, coords), shape, batch_size=batch_size_of(coords), **SPECS[spec])
        return
    got = host(s3d.rulebook(on(device, coords), shape, batch_size=batch_size_of(coords), **SPECS[spec]))
    assert got["out_shape"] == expected["out_shape"]
    for k in ["out_coords", "offsets", "indice_num", "in_index", "out_index"]:
        assert_same(got[k], expected[k], k)
    check_spconv_layout(got, max(len(coords), 1))
    if SPECS[spec].get("subm"):
        assert_same(got["out_coords"], coords, "subm outputs are the inputs")
        assert got["out_shape"] == shape
        centre = len(got["indice_num"]) // 2  # the centre tap pairs every voxel with itself
        a, e = got["offsets"][centre], got["offsets"][centre + 1]
        assert_same(got["in_index"][a:e], np.arange(len(coords), dtype=np.int32), "centre tap")
        assert_same(got["out_index"][a:e], np.arange(len(coords), dtype=np.int32), "centre tap")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("spec", [s for s in SPECS if SPECS[s].get("inverse")])
@pytest.mark.parametrize("case", ["random_two_batches", "unsorted_three_batches", "dense_cube", "voxelised_cloud"])
def test_inverse_is_the_forward_rulebook_swapped(case, spec, device):
    coords, shape = coords_case(case)
    bs = batch_size_of(coords)
    fwd = host(s3d.rulebook(on(device, coords), shape, batch_size=bs, **forward_spec(SPECS[spec])))
    inv = host(s3d.rulebook(on(device, coords), shape, batch_size=bs, **SPECS[spec]))
    # The inverse's outputs are the forward's inputs, on the input's shape; its inputs the forward's outputs.
    assert_same(inv["out_coords"], coords, "out_coords")
    assert inv["out_shape"] == shape
    assert_same(inv["offsets"], fwd["offsets"], "offsets")
    assert_same(inv["indice_num"], fwd["indice_num"], "indice_num")
    for k in range(len(fwd["indice_num"])):
        a, e = fwd["offsets"][k], fwd["offsets"][k + 1]
        swapped = sorted(zip(fwd["in_index"][a:e].tolist(), fwd["out_index"][a:e].tolist()))  # (out, in) of inv
        assert list(zip(inv["out_index"][a:e].tolist(), inv["in_index"][a:e].tolist())) == swapped
    assert int(inv["in_index"].max()) < len(fwd["out_coords"])
    # indice_pairs is sized by the inverse layer's input count, the forward's output count (as the tool's .npz).
    check_spconv_layout(inv, max(len(fwd["out_coords"]), 1))


@pytest.mark.parametrize("device", DEVICES)
def test_rulebook_default_batch_size_and_engine_reuse(device):
    coords, shape = coords_case("random_two_batches")
    engine = s3d.RulebookEngine(device)
    assert engine.device == ("cpu" if device == "cpu" else "cuda:0")
    first = host(engine.rulebook(on(device, coords), shape, 3, 2, 1, batch_size=2))
    small, small_shape = coords_case("single")
    assert_same(host(engine.rulebook(on(device, small), small_shape, 3, subm=True, batch_size=1))["in_index"],
                np.zeros(1, np.int32), "single voxel subm")
    again = host(engine.rulebook(on(device, coords), shape, 3, 2, 1, batch_size=2))
    for k in ["out_coords", "offsets", "in_index", "out_index", "indice_pairs", "indice_num"]:
        assert_same(again[k], first[k], k)
    if device == "cpu":  # batch_size=0 (the default) takes the largest id + 1 (CUDA needs it given)
        default = host(s3d.rulebook(coords, shape, 3, 2, 1))
        for k in ["out_coords", "offsets", "in_index", "out_index"]:
            assert_same(default[k], first[k], k)
    else:
        with pytest.raises(ValueError, match="batch_size"):
            s3d.rulebook(on(device, coords), shape, 3, 2, 1)


@pytest.mark.parametrize("spec", [dict(kernel=3, subm=True), dict(kernel=3, stride=2, padding=1)],
                         ids=["subm", "down"])
def test_rulebook_kitti_matches_tool(run_tool, tmp_path, kitti, spec):
    # The tool voxelises the cloud itself (world origin, batch 0); the package chains voxelize and rulebook.
    path, xyz = kitti
    out = tmp_path / "rb.npz"
    pc_sample(run_tool, "rulebook", path, "--voxel-size", 0.4, *rb_flags(spec), "-o", out)
    v = s3d.voxelize(xyz, 0.4)
    got = s3d.rulebook(v["coords"], v["shape"], **spec)
    with np.load(out) as expected:
        assert list(got["out_shape"]) == expected["out_shape"].tolist()
        for k, e in [("out_coords", "out_coords"), ("offsets", "offsets"), ("indice_num", "counts"),
                     ("in_index", "in_index"), ("out_index", "out_index"), ("indice_pairs", "pairs")]:
            assert_same(got[k], expected[e], k)


# ---------------------------------------------------------------------------------------------------------------
# Errors

P10 = uniform_cloud(10, 0)
C2 = np.array([[0, 1, 1, 1], [0, 2, 2, 2]], np.int32)
S4 = (4, 4, 4)

ARRAY_ERRORS = {
    "voxelize float64": (lambda: s3d.voxelize(P10.astype(F64), 0.1), "points: expected float32"),
    "voxelize shape": (lambda: s3d.voxelize(np.zeros((5, 4), F32), 0.1), "points: expected shape"),
    "voxelize strided": (lambda: s3d.voxelize(np.zeros((20, 3), F32)[::2], 0.1), "points: expected a C-contiguous"),
    "voxelize fortran": (lambda: s3d.voxelize(np.asfortranarray(P10), 0.1), "points: expected a C-contiguous"),
    "voxelize list": (lambda: s3d.voxelize([[0.0, 0.0, 0.0]], 0.1), "points: expected an array"),
    "voxelize batch dtype": (lambda: s3d.voxelize(P10, 0.1, batch=np.zeros(10, np.int64)), "batch: expected int32"),
    "voxelize batch length": (lambda: s3d.voxelize(P10, 0.1, batch=np.zeros(9, np.int32)), "batch: expected shape"),
    "voxelize batch strided": (lambda: s3d.voxelize(P10, 0.1, batch=np.zeros(20, np.int32)[::2]),
                               "batch: expected a C-contiguous"),
    "voxelize origin": (lambda: s3d.voxelize(P10, 0.1, origin="centre"), "origin: expected"),
    "voxelize range without origin": (lambda: s3d.voxelize(P10, 0.1, range=[0, 0, 0, 1, 1, 1]), "range: give"),
    "voxelize range missing": (lambda: s3d.voxelize(P10, 0.1, origin="range"), "range: give"),
    "voxelize reduce": (lambda: s3d.voxelize(P10, 0.1, reduce="max"), "reduce: expected"),
    "rulebook int64": (lambda: s3d.rulebook(C2.astype(np.int64), S4), "coords: expected int32"),
    "rulebook shape": (lambda: s3d.rulebook(np.ascontiguousarray(C2[:, :3]), S4), "coords: expected shape"),
    "rulebook fortran": (lambda: s3d.rulebook(np.asfortranarray(C2), S4), "coords: expected a C-contiguous"),
    "rulebook strided": (lambda: s3d.rulebook(np.zeros((4, 4), np.int32)[::2], S4), "coords: expected a C-contiguous"),
    "rulebook float": (lambda: s3d.rulebook(C2.astype(F32), S4), "coords: expected int32"),
    "rulebook batch_size": (lambda: s3d.rulebook(C2, S4, batch_size=-1), "batch_size: expected >= 0"),
}


@pytest.mark.parametrize("case", list(ARRAY_ERRORS))
def test_bad_arguments_raise_value_error_naming_them(case):
    call, message = ARRAY_ERRORS[case]
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value).startswith(message), str(info.value)


INVALID_ARGUMENTS = {
    "voxel size 0": (lambda: s3d.voxelize(P10, 0.0), "voxel_size.x"),
    "voxel size negative z": (lambda: s3d.voxelize(P10, (0.1, 0.1, -0.1)), "voxel_size.z"),
    "voxel size nan": (lambda: s3d.voxelize(P10, float("nan")), "voxel_size.x"),
    "range inverted": (lambda: s3d.voxelize(P10, 0.1, origin="range", range=[1, 0, 0, 0, 1, 1]), "range along x"),
    "range under half a voxel": (lambda: s3d.voxelize(P10, 1.0, origin="range", range=[0, 0, 0, 1, 1, 0.4]),
                                 "range along z"),
    "min_points 0": (lambda: s3d.voxelize(P10, 0.1, min_points=0), "min_points_per_voxel"),
    "max_points negative": (lambda: s3d.voxelize(P10, 0.1, max_points=-1), "max_points_per_voxel"),
    "max_voxels negative": (lambda: s3d.voxelize(P10, 0.1, max_voxels=-1), "max_voxels"),
    "kernel 0": (lambda: s3d.rulebook(C2, S4, 0), "kernel size along z"),
    "kernel 16": (lambda: s3d.rulebook(C2, S4, (3, 3, 16)), "kernel size along x"),
    "kernel volume": (lambda: s3d.rulebook(C2, S4, (15, 15, 5)), "kernel"),
    "stride 0": (lambda: s3d.rulebook(C2, S4, 3, (1, 0, 1)), "stride along y"),
    "padding negative": (lambda: s3d.rulebook(C2, S4, 3, 1, -1), "padding along z"),
    "dilation 0": (lambda: s3d.rulebook(C2, S4, 3, 1, 0, 0), "dilation along z"),
    "subm even kernel": (lambda: s3d.rulebook(C2, S4, (3, 2, 3), subm=True), "odd along y"),
    "subm stride": (lambda: s3d.rulebook(C2, S4, 3, 2, subm=True), "stride 1 along z"),
    "shape 0": (lambda: s3d.rulebook(C2, (4, 0, 4)), "spatial shape along y"),
    "engine device": (lambda: s3d.VoxelEngine("gpu"), "invalid device 'gpu'"),
}


@pytest.mark.parametrize("case", list(INVALID_ARGUMENTS))
def test_bad_parameters_raise_invalid_argument(case):
    call, message = INVALID_ARGUMENTS[case]
    with pytest.raises(s3d.InvalidArgument) as info:
        call()
    assert isinstance(info.value, ValueError) and isinstance(info.value, s3d.Error)
    assert message in str(info.value), str(info.value)


DATA_ERRORS = {
    "duplicate": (lambda: s3d.rulebook(np.array([[0, 1, 2, 3], [0, 0, 0, 0], [0, 1, 2, 3]], np.int32), S4),
                  "row 2 (0, 1, 2, 3) repeats row 0"),
    "duplicate inverse": (lambda: s3d.rulebook(np.array([[0, 1, 2, 3], [0, 1, 2, 3]], np.int32), S4, inverse=True),
                          "repeats row 0"),
    "x outside": (lambda: s3d.rulebook(np.array([[0, 1, 1, 4]], np.int32), S4), "x outside [0, 4)"),
    "z negative": (lambda: s3d.rulebook(np.array([[0, -1, 1, 1]], np.int32), S4), "z outside [0, 4)"),
    "negative batch": (lambda: s3d.rulebook(np.array([[-1, 1, 1, 1]], np.int32), S4), "negative batch id"),
    "batch beyond batch_size": (lambda: s3d.rulebook(np.array([[0, 1, 1, 1], [2, 1, 1, 1]], np.int32), S4,
                                                     batch_size=2), "batch id outside [0, 2)"),
    "kernel larger than the input": (lambda: s3d.rulebook(C2, (3, 8, 8), 5), "larger than the padded input"),
    # kernel 1, stride 3: outputs reach the inputs i = 3 o only, and z = 1 is none of them.
    "no output cell": (lambda: s3d.rulebook(np.array([[0, 1, 1, 1]], np.int32), (5, 5, 5), 1, 3), "no output voxel"),
    "voxelize nan": (lambda: s3d.voxelize(np.array([[0, 0, 0], [0, np.nan, 0]], F32), 0.1), "point 1"),
    "voxelize grid too large": (lambda: s3d.voxelize(np.array([[0, 0, 0], [1e6, 0, 0]], F32), 1e-4),
                                "cells along x"),
}


@pytest.mark.parametrize("case", list(DATA_ERRORS))
def test_bad_data_raises_data_error(case):
    call, message = DATA_ERRORS[case]
    with pytest.raises(s3d.DataError) as info:
        call()
    assert isinstance(info.value, ValueError) and isinstance(info.value, s3d.Error)
    assert message in str(info.value), str(info.value)


@pytest.mark.parametrize("engine", ["VoxelEngine", "RulebookEngine"])
def test_cpu_engines_accept_cpu_arrays_and_refuse_cuda(engine):
    e = getattr(s3d, engine)("cpu")
    assert e.device == "cpu"
    if engine == "VoxelEngine":
        call = lambda x: e.voxelize(x, 0.25)  # noqa: E731
        assert_voxels_equal(call(P10), ref_voxelize(P10, 0.25))
        arg = P10
    else:
        call = lambda x: e.rulebook(x, S4, 3, subm=True, batch_size=1)  # noqa: E731
        got = call(C2)
        assert_same(got["out_coords"], C2, "subm outputs")
        assert_same(got["in_index"], ref_rulebook(C2, S4, 3, subm=True)["in_index"], "in_index")
        arg = C2
    if "cuda" not in DEVICES:
        with pytest.raises(s3d.DeviceUnavailable):
            getattr(s3d, engine)("cuda")
        return
    with pytest.raises(ValueError, match="points" if engine == "VoxelEngine" else "coords"):
        call(on("cuda", arg))


@pytest.mark.parametrize("device", DEVICES)
def test_outputs_live_on_the_input_device_with_documented_dtypes(device):
    pts = on(device, P10)
    v = s3d.voxelize(pts, 0.25, batch=on(device, np.zeros(10, np.int32)))
    m = v["count"]
    for k, dtype, shape in [("coords", np.int32, (m, 4)), ("xyz", F32, (m, 3)), ("points_per_voxel", np.int32, (m,)),
                            ("representative", np.int32, (m,)), ("point_voxel", np.int32, (10,))]:
        assert type(v[k]) is type(pts), k
        assert host(v[k]).dtype == dtype and host(v[k]).shape == shape, k
    coords = on(device, C2)
    rb = s3d.rulebook(coords, S4, 3, batch_size=1)
    for k, dtype in [("out_coords", np.int32), ("in_index", np.int32), ("out_index", np.int32),
                     ("indice_pairs", np.int32), ("indice_num", np.int32), ("offsets", np.int64)]:
        assert type(rb[k]) is type(coords), k
        assert host(rb[k]).dtype == dtype, k
    assert isinstance(rb["out_shape"], tuple) and isinstance(v["shape"], tuple) and isinstance(v["origin"], tuple)
