#!/usr/bin/env python3
"""End-to-end tests of pc-sample (docs/PC-SAMPLE.md) on the real clouds of $S3D_DATA_DIR/pointclouds.

Pure Python (no numpy): the references (FPS, kNN, three-NN) redo the fp32 arithmetic the headers state, one
IEEE rounding per operation, on small clouds; .npy and PLY are read and written here with struct.

Run as CTest does (tests/python_tests.cmake), with S3D_PC_SAMPLE, S3D_SGM_DEPTH, S3D_SOURCE_DIR and S3D_DATA_DIR
set: pc_sample_e2e_test.py [PcSampleTest.test_name ...]
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

EXE = os.environ.get("S3D_PC_SAMPLE", "")
SGM = os.environ.get("S3D_SGM_DEPTH", "")
SOURCE = os.environ.get("S3D_SOURCE_DIR", "")
CLOUDS = os.path.join(os.environ.get("S3D_DATA_DIR", ""), "pointclouds")
BUNNY_SMALL = os.path.join(CLOUDS, "stanford_bunny", "bun_zipper_res4.ply")  # ascii, 453 vertices + faces
BUNNY = os.path.join(CLOUDS, "stanford_bunny", "bun_zipper.ply")
KITTI = os.path.join(CLOUDS, "kitti_velodyne", "000000.bin")
MILK = os.path.join(CLOUDS, "pcl_pcd", "milk_color.pcd")  # binary_compressed
MUG = os.path.join(CLOUDS, "pcl_pcd", "table_scene_mug_stereo_textured.pcd")  # organised, NaN points
AERIAL = os.path.join(CLOUDS, "aerial_vol_total", "vol_total_498868.ply")

# The CPU backends open one OpenMP region per FPS step; on a shared 2-core machine (ctest -j2, other builds)
# spinning OpenMP threads wait for descheduled ones and a 0.5 s run takes a minute. Passive waiting keeps
# the threads (and so the parallel code paths) without that.
ENV = dict(os.environ, OMP_WAIT_POLICY="passive")

PLY_TYPES = {  # PLY name -> struct code
    "char": "b", "uchar": "B", "short": "h", "ushort": "H", "int": "i", "uint": "I", "float": "f", "double": "d",
    "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "float32": "f",
    "float64": "d"}


def f32(x):
    """x rounded once to IEEE binary32 (what one fp32 operation gives when x is its exact result)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", path
    hlen = struct.unpack("<H", data[8:10])[0]
    header = eval(data[10:10 + hlen].decode())  # a Python dict literal by the format's definition
    code = {"<i4": "i", "<f4": "f"}[header["descr"]]
    shape = header["shape"]
    count = 1
    for s in shape:
        count *= s
    values = struct.unpack("<%d%s" % (count, code), data[10 + hlen:10 + hlen + 4 * count])
    if len(shape) == 2:
        return [list(values[r * shape[1]:(r + 1) * shape[1]]) for r in range(shape[0])]
    return list(values)


def read_ply(path):
    """{'format', 'elements': [(name, count, [(prop, type, is_list)])], 'rows': {element: [tuple]}}."""
    with open(path, "rb") as f:
        data = f.read()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    elements, fmt = [], None
    for line in data[:end].decode("latin-1").splitlines():
        w = line.split()
        if w[0] == "format":
            fmt = w[1]
        elif w[0] == "element":
            elements.append((w[1], int(w[2]), []))
        elif w[0] == "property":
            elements[-1][2].append((w[-1], w[1:-1], w[1] == "list"))
    rows = {}
    if fmt == "ascii":
        tokens = data[end:].split()
        pos = 0
        for name, count, props in elements:
            out = []
            for _ in range(count):
                row = []
                for _, types, is_list in props:
                    if is_list:
                        n = int(tokens[pos]); pos += 1
                        row.append(tuple(float(t) for t in tokens[pos:pos + n])); pos += n
                    else:
                        row.append(float(tokens[pos])); pos += 1
                out.append(tuple(row))
            rows[name] = out
    else:
        order = "<" if fmt == "binary_little_endian" else ">"
        pos = end
        for name, count, props in elements:
            out = []
            if not any(p[2] for p in props):  # fixed rows: one struct per row
                row_struct = struct.Struct(order + "".join(PLY_TYPES[t[0]] for _, t, _ in props))
                for i in range(count):
                    out.append(row_struct.unpack_from(data, pos)); pos += row_struct.size
            else:
                for _ in range(count):
                    row = []
                    for _, types, is_list in props:
                        if is_list:
                            n = struct.unpack_from(order + PLY_TYPES[types[1]], data, pos)[0]
                            pos += struct.calcsize(PLY_TYPES[types[1]])
                            code = PLY_TYPES[types[2]]
                            row.append(struct.unpack_from(order + str(n) + code, data, pos))
                            pos += n * struct.calcsize(code)
                        else:
                            code = PLY_TYPES[types[0]]
                            row.append(struct.unpack_from(order + code, data, pos)[0]); pos += struct.calcsize(code)
                    out.append(tuple(row))
            rows[name] = out
    return {"format": fmt, "elements": elements, "rows": rows}


def write_ply(path, props, rows, fmt="binary_little_endian", extra_header=""):
    """A vertex-only PLY: props = [(name, ply_type)], rows = tuples."""
    head = "ply\nformat %s 1.0\n%selement vertex %d\n" % (fmt, extra_header, len(rows))
    head += "".join("property %s %s\n" % (t, n) for n, t in props) + "end_header\n"
    with open(path, "wb") as f:
        f.write(head.encode())
        if fmt == "ascii":
            f.write("".join(" ".join(repr(v) for v in r) + "\n" for r in rows).encode())
        else:
            s = struct.Struct(("<" if fmt == "binary_little_endian" else ">") + "".join(PLY_TYPES[t] for _, t in props))
            f.write(b"".join(s.pack(*r) for r in rows))


def local_xyz(points):
    """The tool's fp32 positions: each coordinate minus the bounding-box centre in double, rounded once."""
    centre = [(min(p[a] for p in points) + max(p[a] for p in points)) / 2 for a in range(3)]
    return [tuple(f32(p[a] - centre[a]) for a in range(3)) for p in points]


def d2(p, q):
    """((dx*dx)+(dy*dy))+(dz*dz) in fp32, one rounding per operation."""
    dx, dy, dz = (f32(p[a] - q[a]) for a in range(3))
    return f32(f32(f32(dx * dx) + f32(dy * dy)) + f32(dz * dz))


def fps_reference(points, m, start=0):
    """Plain FPS: d = min(d, new), next = the first arg-max."""
    d = [math.inf] * len(points)
    sel = [start]
    for _ in range(1, m):
        p = points[sel[-1]]
        best, best_i = -1.0, -1
        for i, q in enumerate(points):
            v = d2(q, p)
            if v < d[i]:
                d[i] = v
            if d[i] > best:
                best, best_i = d[i], i
        sel.append(best_i)
    return sel


def voxel_reference(points, size, origin="world", rng=None):
    """Voxels by the formulas docs/PC-SAMPLE.md states, with one IEEE rounding per fp32 operation: a dict
    (z, y, x) -> member indices (input order), and the count of points outside the range. `size`: V or
    (X, Y, Z)."""
    v = [f32(size)] * 3 if not isinstance(size, (tuple, list)) else [f32(x) for x in size]
    groups, outside = {}, 0
    if origin == "world":
        inv = [f32(1.0 / v[a]) for a in range(3)]
        lo_cell = [min(math.floor(f32(p[a] * inv[a])) for p in points) for a in range(3)]
    elif origin == "min-bound":
        lo = [min(p[a] for p in points) - v[a] * 0.5 for a in range(3)]
    else:
        r0, r1 = [f32(x) for x in rng[:3]], [f32(x) for x in rng[3:]]
        dims = [round((r1[a] - r0[a]) / v[a]) for a in range(3)]
    for i, p in enumerate(points):
        if origin == "world":
            c = [math.floor(f32(p[a] * inv[a])) - lo_cell[a] for a in range(3)]
        elif origin == "min-bound":
            c = [math.floor((p[a] - lo[a]) / v[a]) for a in range(3)]
        else:
            if any(not (r0[a] <= p[a] < r1[a]) for a in range(3)):
                outside += 1
                continue
            c = [math.floor(f32(f32(p[a] - r0[a]) / v[a])) for a in range(3)]
            if any(not (0 <= c[a] < dims[a]) for a in range(3)):
                outside += 1
                continue
        groups.setdefault((c[2], c[1], c[0]), []).append(i)
    return groups, outside


def npy_bytes(rows, dtype="<i4", shape=None):
    """An .npy (version 1.0, C order) of `rows` (a list of equal-length lists, or a flat list with `shape`)."""
    flat = [v for r in rows for v in r] if shape is None else list(rows)
    shape = shape if shape is not None else (len(rows), len(rows[0]) if rows else 0)
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else ""))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    code = {"<i4": "i", "<f4": "f", "<i8": "q"}[dtype]
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode()
            + struct.pack("<%d%s" % (len(flat), code), *flat))


def parse_npy(data):
    """(shape, flat values) of an .npy's bytes (<i4, <i8, <f4)."""
    assert data[:6] == b"\x93NUMPY"
    hlen = struct.unpack("<H", data[8:10])[0]
    header = eval(data[10:10 + hlen].decode())  # a Python dict literal by the format's definition
    code, size = {"<i4": ("i", 4), "<i8": ("q", 8), "<f4": ("f", 4)}[header["descr"]]
    assert not header["fortran_order"]
    count = 1
    for s in header["shape"]:
        count *= s
    body = data[10 + hlen:]
    assert len(body) == size * count, (len(body), count)
    return tuple(header["shape"]), list(struct.unpack("<%d%s" % (count, code), body))


def read_npz(path):
    """name -> (shape, flat values) of every array of an .npz (zipfile checks each member's CRC)."""
    import zipfile
    with zipfile.ZipFile(path) as z:
        return {n[:-4]: parse_npy(z.read(n)) for n in z.namelist()}


def rulebook_reference(coords, shape, kernel, stride=1, padding=0, dilation=1, subm=False):
    """Outputs, output shape and per-offset (out, in) pairs by enumeration (docs/PC-SAMPLE.md, Rulebooks)."""
    k, s, p, d = ([v] * 3 if isinstance(v, int) else list(v) for v in (kernel, stride, padding, dilation))
    if subm:
        s, p = [1, 1, 1], [(k[a] // 2) * d[a] for a in range(3)]
    taps = [(kz, ky, kx) for kz in range(k[0]) for ky in range(k[1]) for kx in range(k[2])]
    index = {tuple(c): i for i, c in enumerate(coords)}
    if subm:
        outs, out_shape = [list(c) for c in coords], list(shape)
        pairs = []
        for t in taps:
            lst = []
            for o, c in enumerate(outs):
                q = (c[0],) + tuple(c[1 + a] - p[a] + t[a] * d[a] for a in range(3))
                if q in index:
                    lst.append((o, index[q]))
            pairs.append(sorted(lst))
        return outs, out_shape, pairs
    out_shape = [(shape[a] + 2 * p[a] - d[a] * (k[a] - 1) - 1) // s[a] + 1 for a in range(3)]
    hits = []  # (tap, out cell, input row)
    for i, c in enumerate(coords):
        for ti, t in enumerate(taps):
            q = [c[1 + a] + p[a] - t[a] * d[a] for a in range(3)]
            if all(q[a] >= 0 and q[a] % s[a] == 0 and q[a] // s[a] < out_shape[a] for a in range(3)):
                hits.append((ti, (c[0],) + tuple(q[a] // s[a] for a in range(3)), i))
    outs = sorted({h[1] for h in hits})  # (batch, z, y, x) in range: lexicographic = linear order
    oidx = {o: j for j, o in enumerate(outs)}
    pairs = [[] for _ in taps]
    for ti, o, i in hits:
        pairs[ti].append((oidx[o], i))
    return [list(o) for o in outs], out_shape, [sorted(x) for x in pairs]


def random_voxels(seed, count, shape, batches=2):
    import random
    rng = random.Random(seed)
    cells = set()
    while len(cells) < count:
        cells.add((rng.randrange(batches), rng.randrange(shape[0]), rng.randrange(shape[1]), rng.randrange(shape[2])))
    coords = [list(c) for c in cells]
    rng.shuffle(coords)  # the input order is not the linear order
    return coords


class PcSampleTest(unittest.TestCase):
    def setUp(self):
        if not EXE:
            self.fail("S3D_PC_SAMPLE is not set (run through ctest)")
        self.dir = tempfile.mkdtemp(prefix="s3d-pc-sample-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def run_tool(self, *args, stdin=None, code=0):
        proc = subprocess.run([EXE, *args], cwd=self.dir, input=stdin, capture_output=True, timeout=240, env=ENV)
        if code is not None:
            self.assertEqual(proc.returncode, code, proc.stderr.decode())
        return proc

    def records(self, proc):
        return [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]

    def bunny_points(self):
        """The small bunny's positions as the tool reads them (ascii text to float32)."""
        return [tuple(f32(v) for v in r[:3]) for r in read_ply(BUNNY_SMALL)["rows"]["vertex"]]

    # semantics against independent references ------------------------------------------------------
    def test_fps_indices_equal_reference(self):
        self.run_tool("fps", BUNNY_SMALL, "-n", "48", "--start", "7", "--emit", "indices", "-o", "idx.txt")
        with open(self.path("idx.txt")) as f:
            got = [int(line) for line in f]
        self.assertEqual(got, fps_reference(local_xyz(self.bunny_points()), 48, 7))
        # .npy by the extension: the same indices as int32
        self.run_tool("fps", BUNNY_SMALL, "-n", "48", "--start", "7", "--emit", "indices", "-o", "idx.npy")
        self.assertEqual(read_npy(self.path("idx.npy")), got)

    def test_knn_equals_brute_force(self):
        self.run_tool("knn", BUNNY_SMALL, "-k", "6", "--exclude-self", "-o", "nn.npy")
        pts = local_xyz(self.bunny_points())
        idx, dist = read_npy(self.path("nn.npy")), read_npy(self.path("nn.dist.npy"))
        counts = read_npy(self.path("nn.counts.npy"))
        self.assertEqual(counts, [6] * len(pts))
        for q in range(0, len(pts), 7):  # every 7th query keeps the pure-Python reference quick
            ref = sorted((d2(pts[q], p), i) for i, p in enumerate(pts) if i != q)[:6]
            self.assertEqual(idx[q], [i for _, i in ref], "query %d" % q)
            self.assertEqual(dist[q], [f32(math.sqrt(v)) for v, _ in ref], "query %d" % q)

    def test_ball_query_contracts(self):
        # points 0..5 on a line, 1 apart: radius 1 is strict (d = r is outside)
        write_ply(self.path("line.ply"), [("x", "float"), ("y", "float"), ("z", "float")],
                  [(float(i), 0.0, 0.0) for i in range(6)] + [(100.0, 0.0, 0.0)])
        write_ply(self.path("q.ply"), [("x", "float"), ("y", "float"), ("z", "float")],
                  [(2.0, 0.0, 0.0), (50.0, 0.0, 0.0), (2.5, 0.0, 0.0)])
        self.run_tool("ball", "line.ply", "--queries", "q.ply", "--radius", "1", "-k", "3", "-o", "b.npy")
        self.assertEqual(read_npy(self.path("b.npy")), [[2, -1, -1], [-1, -1, -1], [2, 3, -1]])
        self.assertEqual(read_npy(self.path("b.counts.npy")), [1, 0, 2])
        self.assertEqual(read_npy(self.path("b.dist.npy"))[2][:2], [0.5, 0.5])
        self.assertEqual(read_npy(self.path("b.dist.npy"))[0][1], math.inf)
        # pad first repeats the first hit; an empty ball stays -1; first-k in index order vs nearest-k
        self.run_tool("ball", "line.ply", "--queries", "q.ply", "--radius", "1", "-k", "3", "--pad", "first",
                      "--emit", "indices", "-o", "p.npy")
        self.assertEqual(read_npy(self.path("p.npy")), [[2, 2, 2], [-1, -1, -1], [2, 3, 2]])
        self.run_tool("ball", "line.ply", "--queries", "q.ply", "--radius", "2.6", "-k", "2", "--emit", "indices",
                      "-o", "i.npy")
        self.assertEqual(read_npy(self.path("i.npy")), [[0, 1], [-1, -1], [0, 1]])
        self.run_tool("ball", "line.ply", "--queries", "q.ply", "--radius", "2.6", "-k", "2", "--order", "distance",
                      "--emit", "indices", "-o", "o.npy")
        self.assertEqual(read_npy(self.path("o.npy")), [[2, 1], [-1, -1], [2, 3]])
        # --min-radius (mmcv): closer points are out, except one at d = 0 (the query itself)
        self.run_tool("ball", "line.ply", "--queries", "q.ply", "--radius", "1.6", "--min-radius", "0.6", "-k", "3",
                      "--emit", "indices", "-o", "m.npy")
        self.assertEqual(read_npy(self.path("m.npy")), [[1, 2, 3], [-1, -1, -1], [1, 4, -1]])

    def test_interp_spreads_sparse_attributes(self):
        pts = self.bunny_points()
        sparse = [(p[0], p[1], p[2], float(i % 5)) for i, p in enumerate(pts[:60])]
        write_ply(self.path("sparse.ply"), [("x", "float"), ("y", "float"), ("z", "float"), ("label", "float")],
                  sparse)
        proc = self.run_tool("interp", BUNNY_SMALL, "--from", "sparse.ply", "-o", "dense.ply", "--json")
        self.assertEqual(self.records(proc)[0]["attributes"], ["label"])
        out = read_ply(self.path("dense.ply"))
        names = [p[0] for p in out["elements"][0][2]]
        self.assertEqual(names, ["x", "y", "z", "confidence", "intensity", "label"])
        src = read_ply(BUNNY_SMALL)["rows"]["vertex"]
        self.assertEqual([tuple(f32(v) for v in r[:5]) for r in out["rows"]["vertex"]],
                         [tuple(f32(v) for v in r) for r in src])
        self.assertEqual(out["elements"][1][:2], ("face", 948))  # faces pass through: every point is kept
        self.proc_weights_match(out, sparse)

    def proc_weights_match(self, out, sparse):
        self.run_tool("interp", BUNNY_SMALL, "--from", "sparse.ply", "--emit", "weights", "-o", "w.npy")
        idx, w = read_npy(self.path("w.npy")), read_npy(self.path("w.weights.npy"))
        dense_local = local_xyz(self.bunny_points())
        centre = [(min(p[a] for p in self.bunny_points()) + max(p[a] for p in self.bunny_points())) / 2
                  for a in range(3)]
        sparse_local = [tuple(f32(s[a] - centre[a]) for a in range(3)) for s in sparse]
        for q in range(0, len(dense_local), 11):
            ref = sorted((d2(dense_local[q], p), i) for i, p in enumerate(sparse_local))[:3]
            self.assertEqual(idx[q], [i for _, i in ref], "query %d" % q)
            self.assertAlmostEqual(sum(w[q]), 1.0, places=5)
            label = sum(wj * sparse[i][3] for wj, i in zip(w[q], idx[q]))
            self.assertAlmostEqual(out["rows"]["vertex"][q][5], label, places=4)
        self.assertEqual(idx[0][0], 0)  # a dense point that is a sparse point finds itself first
        self.assertAlmostEqual(w[0][0], 1.0, places=5)

    # attributes, encodings, formats ----------------------------------------------------------------
    def test_fps_keeps_every_property_and_type_ascii_equals_binary(self):
        props = [("x", "double"), ("y", "double"), ("z", "double"), ("a", "char"), ("b", "uchar"), ("c", "short"),
                 ("d", "ushort"), ("e", "int"), ("f", "uint"), ("g", "float"), ("h", "double")]
        rows = [(0.1 * i + 1e5, math.sin(i), (i * 37 % 11) * 0.5, -100 + i, 200 - i, -30000 + i, 60000 + i,
                 -2 ** 31 + i, 2 ** 32 - 1 - i, f32(i / 3), i / 7) for i in range(40)]
        outputs = []
        for fmt in ("ascii", "binary_little_endian", "binary_big_endian"):
            write_ply(self.path(fmt + ".ply"), props, rows, fmt, "comment made by the test\n")
            self.run_tool("fps", fmt + ".ply", "-n", "12", "-o", fmt + ".out.ply")
            self.run_tool("fps", fmt + ".ply", "-n", "12", "--emit", "indices", "-o", fmt + ".txt")
            out = read_ply(self.path(fmt + ".out.ply"))
            if fmt == "ascii":  # float32 text is the shortest that reads back as float32, not as double
                out["rows"]["vertex"] = [r[:9] + (f32(r[9]),) + r[10:] for r in out["rows"]["vertex"]]
            self.assertEqual(out["format"], fmt)  # the input's encoding is kept
            self.assertEqual(out["elements"][0][2], [(n, [t], False) for n, t in props])
            with open(self.path(fmt + ".txt")) as f:
                sel = [int(line) for line in f]
            self.assertEqual(out["rows"]["vertex"], [tuple(float(v) for v in rows[i]) for i in sel])
            with open(self.path(fmt + ".out.ply"), "rb") as f:
                self.assertIn(b"comment made by the test", f.read(400))
            outputs.append(sel)
        self.assertEqual(outputs[0], outputs[1])
        self.assertEqual(outputs[1], outputs[2])

    def test_fps_on_real_clouds(self):
        proc = self.run_tool("fps", BUNNY, "-n", "2000", "-o", "b.ply", "--json")
        rec = self.records(proc)[0]
        self.assertEqual((rec["points"], rec["samples"]), (35947, 2000))
        self.assertIn(rec["device"], ("cpu", "cuda:0"))
        self.assertEqual(read_ply(self.path("b.ply"))["elements"][0][1], 2000)
        # a mesh: the faces whose three vertices were all sampled survive, renumbered to the output rows
        self.run_tool("fps", BUNNY_SMALL, "-n", "400", "-o", "s.ply")
        self.run_tool("fps", BUNNY_SMALL, "-n", "400", "--emit", "indices", "-o", "s.txt")
        with open(self.path("s.txt")) as f:
            sel = [int(line) for line in f]
        faces = [tuple(int(v) for v in f[0]) for f in read_ply(self.path("s.ply"))["rows"]["face"]]
        source = [tuple(int(v) for v in f[0]) for f in read_ply(BUNNY_SMALL)["rows"]["face"]]
        sampled = set(sel)
        kept = [f for f in source if all(v in sampled for v in f)]  # in file order (the file repeats some faces)
        self.assertGreater(len(kept), 0)
        self.assertEqual([tuple(sel[v] for v in f) for f in faces], kept)
        # KITTI .bin in, .bin out: 16 bytes a point, rows of the input
        self.run_tool("fps", KITTI, "--ratio", "0.01", "-o", "k.bin")
        self.run_tool("fps", KITTI, "--ratio", "0.01", "--emit", "indices", "-o", "k.txt")
        with open(self.path("k.txt")) as f:
            sel = [int(line) for line in f]
        self.assertEqual(len(sel), math.ceil(115384 * 0.01))
        with open(KITTI, "rb") as f:
            src = f.read()
        with open(self.path("k.bin"), "rb") as f:
            self.assertEqual(f.read(), b"".join(src[16 * i:16 * i + 16] for i in sel))
        # PCD binary_compressed in and out, rgba kept
        self.run_tool("fps", MILK, "-n", "500", "-o", "m.pcd")
        with open(self.path("m.pcd"), "rb") as f:
            head = f.read(300).decode("latin-1")
        self.assertIn("DATA binary_compressed", head)
        self.assertIn("POINTS 500", head)
        self.assertIn("rgba", head)
        # PLY -> PCD by -o's extension
        self.run_tool("fps", BUNNY_SMALL, "-n", "10", "-o", "s.pcd")
        with open(self.path("s.pcd"), "rb") as f:
            self.assertIn("FIELDS x y z confidence intensity", f.read(300).decode("latin-1"))

    def test_shifted_double_aerial_knn_equals_unshifted(self):
        ply = read_ply(AERIAL)
        props = ply["elements"][0][2]
        self.assertEqual([p[0] for p in props], ["x", "y", "z", "red", "green", "blue"])
        shift = (4.5e5, 5.4e6, 300.0)
        rows = [(r[0] + shift[0], r[1] + shift[1], r[2] + shift[2], r[3], r[4], r[5]) for r in ply["rows"]["vertex"]]
        write_ply(self.path("shifted.ply"), [("x", "double"), ("y", "double"), ("z", "double"), ("red", "uchar"),
                                             ("green", "uchar"), ("blue", "uchar")], rows)
        # queries: 500 farthest points of the scan (FPS is itself computed in local coordinates)
        self.run_tool("fps", AERIAL, "-n", "500", "-o", "q.ply")
        self.run_tool("fps", "shifted.ply", "-n", "500", "-o", "qs.ply")
        qs = read_ply(self.path("qs.ply"))["rows"]["vertex"]
        q = read_ply(self.path("q.ply"))["rows"]["vertex"]
        self.assertEqual([r[:3] for r in qs], [(r[0] + shift[0], r[1] + shift[1], r[2] + shift[2]) for r in q])
        self.run_tool("knn", AERIAL, "--queries", "q.ply", "-k", "8", "-o", "a.npy")
        self.run_tool("knn", "shifted.ply", "--queries", "qs.ply", "-k", "8", "-o", "s.npy")
        for suffix in (".npy", ".dist.npy", ".counts.npy"):
            with open(self.path("a" + suffix), "rb") as a, open(self.path("s" + suffix), "rb") as s:
                self.assertEqual(a.read(), s.read(), suffix)

    # bad input -----------------------------------------------------------------------------------
    def assert_fails(self, args, code, *needles):
        proc = self.run_tool("-q", *args, code=code)  # -q: no warning (e.g. no GPU), only the error line
        err = proc.stderr.decode().strip()
        self.assertEqual(len(err.splitlines()), 1, err)
        for n in needles:
            self.assertIn(n, err)
        self.assertEqual(sorted(f for f in os.listdir(self.dir) if f.startswith("out")), [])
        return err

    def test_bad_inputs_fail_with_one_line(self):
        xyz = [("x", "float"), ("y", "float"), ("z", "float")]
        write_ply(self.path("nan.ply"), xyz, [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (2.0, 0.0, 0.0),
                                              (float("nan"), 0.0, 0.0), (4.0, 1.0, 0.0)], "ascii")
        self.assert_fails(["fps", "nan.ply", "-n", "2", "-o", "out.ply"], 1, "nan.ply", "point 3")
        proc = self.run_tool("fps", "nan.ply", "-n", "4", "--drop-invalid", "--emit", "indices", "-o", "ok.txt",
                             "--json")
        self.assertEqual(self.records(proc)[0]["dropped_invalid"], 1)
        with open(self.path("ok.txt")) as f:
            self.assertEqual(sorted(int(v) for v in f), [0, 1, 2, 4])  # rows of the file, not of the kept points
        write_ply(self.path("empty.ply"), xyz, [])
        self.assert_fails(["fps", "empty.ply", "-n", "1", "-o", "out.ply"], 1, "empty.ply", "empty cloud")
        self.assert_fails(["fps", "nan.ply", "-n", "9", "-o", "out.ply", "--drop-invalid"], 1, "nan.ply",
                          "--allow-fewer")
        self.assert_fails(["ball", "nan.ply", "--radius", "0", "-o", "out.npy"], 2, "--radius")
        self.assert_fails(["ball", "nan.ply", "--radius", "-1", "-o", "out.npy"], 2, "--radius")
        self.assert_fails(["knn", "empty.ply", "-k", "2000", "-o", "out.npy"], 2, "k")
        write_ply(self.path("three.ply"), xyz, [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (3.0, 0.0, 0.0)])
        self.assert_fails(["knn", "three.ply", "-k", "4", "-o", "out.npy"], 1, "three.ply", "--pad")
        self.run_tool("knn", "three.ply", "-k", "4", "--pad", "-1", "-o", "padded.npy")
        # an output no item could write is a usage error before any item runs
        self.assert_fails(["knn", "three.ply", "-k", "2", "-o", "out.txt"], 2, "out.txt", ".npy")
        self.assert_fails(["ball", "three.ply", "--radius", "1", "-o", "out_{stem}.ply"], 2, ".npy")
        self.assertEqual(read_npy(self.path("padded.npy"))[0], [0, 1, 2, -1])
        # the readers: a truncated binary body, an absurd count, an unknown type
        with open(self.path("three.ply"), "rb") as f:
            whole = f.read()
        with open(self.path("cut.ply"), "wb") as f:
            f.write(whole[:-5])
        self.assert_fails(["fps", "cut.ply", "-n", "1", "-o", "out.ply"], 1, "cut.ply")
        with open(self.path("huge.ply"), "wb") as f:
            f.write(whole.replace(b"element vertex 3", b"element vertex 1000000000000"))
        self.assert_fails(["fps", "huge.ply", "-n", "1", "-o", "out.ply"], 1, "huge.ply")
        with open(self.path("type.ply"), "wb") as f:
            f.write(whole.replace(b"property float z", b"property float128 z"))
        self.assert_fails(["fps", "type.ply", "-n", "1", "-o", "out.ply"], 1, "type.ply")

    def test_start_ratio_seed_and_header_contracts(self):
        xyz = [("x", "float"), ("y", "float"), ("z", "float")]
        write_ply(self.path("nan.ply"), xyz, [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (float("nan"), 0.0, 0.0),
                                              (2.0, 2.0, 2.0), (4.0, 1.0, 0.0)])
        # --start names a row of the file under --drop-invalid too (rows of dropped points are refused)
        proc = self.run_tool("fps", "nan.ply", "-n", "2", "--start", "3", "--drop-invalid", "--emit", "indices",
                             "-o", "s.txt", "--json")
        self.assertEqual(self.records(proc)[0]["start"], 3)
        with open(self.path("s.txt")) as f:
            self.assertEqual([int(v) for v in f], [3, 0])
        self.assert_fails(["fps", "nan.ply", "-n", "2", "--start", "2", "--drop-invalid", "-o", "out.ply"], 1,
                          "nan.ply", "--start 2", "dropped")
        self.assert_fails(["fps", "nan.ply", "-n", "2", "--start", "5", "--drop-invalid", "-o", "out.ply"], 1,
                          "nan.ply", "--start 5")
        # --ratio: ceil(r * N) of the decimal r (0.07 * 100 is 7 although the double product is 7.000000000000001)
        write_ply(self.path("n100.ply"), xyz, [(float(i), float(i * i % 17), 0.5) for i in range(100)])
        for ratio, m in (("0.07", 7), ("0.55", 55), ("0.3", 30), ("0.071", 8), ("0.001", 1), ("1", 100)):
            self.run_tool("fps", "n100.ply", "--ratio", ratio, "--emit", "indices", "-o", "r.txt", "--overwrite")
            with open(self.path("r.txt")) as f:
                self.assertEqual(len(f.read().split()), m, ratio)
        for bad in ("0", "-0.1", "nan", "1.5", "0.5x"):
            self.assert_fails(["fps", "n100.ply", "--ratio", bad, "-o", "out.ply"], 2, "--ratio")
        # --seed is a whole number in [0, 2^64): no sign, no silent clamping
        for bad in ("-5", "99999999999999999999999", "3.5", "+3"):
            self.assert_fails(["fps", "n100.ply", "-n", "2", "--start", "random", "--seed", bad, "-o", "out.ply"], 2,
                              "--seed")
        self.run_tool("fps", "n100.ply", "-n", "2", "--start", "random", "--seed", "18446744073709551615",
                      "-o", "ok.ply")
        # two properties of one name would lose one; a float beyond its type's range is a bad value, as an int is
        write_ply(self.path("dup.ply"), xyz + [("x", "float")], [(1.0, 2.0, 3.0, 5.0), (4.0, 5.0, 6.0, 6.0)])
        self.assert_fails(["fps", "dup.ply", "-n", "1", "-o", "out.ply"], 1, "dup.ply", "two properties named 'x'")
        with open(self.path("big.ply"), "w") as f:
            f.write("ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\n"
                    "property float w\nend_header\n0 0 0 1e40\n1 1 1 2\n")
        self.assert_fails(["fps", "big.ply", "-n", "1", "-o", "out.ply"], 1, "big.ply", "1e40")
        with open(self.path("tiny.ply"), "w") as f:  # a subnormal reads as the nearest value
            f.write("ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\n"
                    "property float w\nend_header\n0 0 0 1e-50\n1 1 1 2\n")
        self.run_tool("fps", "tiny.ply", "-n", "2", "-o", "tiny_out.ply")
        self.assertEqual(read_ply(self.path("tiny_out.ply"))["rows"]["vertex"][0][3], 0.0)
        # a failed item's record names no output (nothing was written)
        os.makedirs(self.path("many"))
        write_ply(os.path.join(self.path("many"), "a.ply"), xyz, [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (3.0, 0.0, 0.0)])
        write_ply(os.path.join(self.path("many"), "b.ply"), xyz, [(0.0, 0.0, 0.0)])
        proc = self.run_tool("-q", "fps", "many", "-n", "2", "--output-dir", "outs", "--json", code=1)
        recs = {os.path.basename(r["input"]): r for r in self.records(proc) if r.get("type") == "item"}
        self.assertEqual(recs["a.ply"]["status"], "ok")
        self.assertIn("output", recs["a.ply"])
        self.assertEqual(recs["b.ply"]["status"], "failed")
        self.assertNotIn("output", recs["b.ply"])

    def test_organised_pcd_with_nan_points(self):
        self.assert_fails(["fps", MUG, "-n", "64", "-o", "out.pcd"], 1, "table_scene_mug", "non-finite")
        proc = self.run_tool("fps", MUG, "-n", "64", "--drop-invalid", "-o", "mug.pcd", "--json")
        rec = self.records(proc)[0]
        self.assertEqual((rec["points"], rec["dropped_invalid"]), (307200, 307200 - 209280))
        with open(self.path("mug.pcd"), "rb") as f:
            head = f.read(400).decode("latin-1")
        self.assertIn("POINTS 64", head)
        self.assertIn("HEIGHT 1\n", head)  # a sample is no longer an organised grid

    def test_random_start_and_stdout_arrays(self):
        # --start random: splitmix64(seed + item index) mod N, the same on every run
        proc = self.run_tool("fps", BUNNY_SMALL, "-n", "5", "--start", "random", "--seed", "3", "--emit", "indices",
                             "-o", "r.txt", "--json")
        x = (3 + 0x9E3779B97F4A7C15) % 2 ** 64
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) % 2 ** 64
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) % 2 ** 64
        start = (x ^ (x >> 31)) % 453
        self.assertEqual(self.records(proc)[0]["start"], start)
        with open(self.path("r.txt")) as f:
            self.assertEqual([int(v) for v in f], fps_reference(local_xyz(self.bunny_points()), 5, start))
        # -o - takes one array; --format npy names it
        proc = self.run_tool("knn", BUNNY_SMALL, "-k", "2", "--emit", "counts", "-o", "-", "--format", "npy")
        with open(self.path("c.npy"), "wb") as f:
            f.write(proc.stdout)
        self.assertEqual(read_npy(self.path("c.npy")), [2] * 453)
        err = self.run_tool("-q", "knn", BUNNY_SMALL, "-k", "2", "-o", "-", code=2).stderr.decode()  # a usage error
        self.assertIn("one array", err)
        # interp --attributes replaces a dense column of the same name
        pts = self.bunny_points()
        write_ply(self.path("sp.ply"), [("x", "float"), ("y", "float"), ("z", "float"), ("intensity", "float")],
                  [(p[0], p[1], p[2], 7.0) for p in pts[:10]])
        self.run_tool("interp", BUNNY_SMALL, "--from", "sp.ply", "--attributes", "intensity", "-o", "d.ply")
        out = read_ply(self.path("d.ply"))
        self.assertEqual([p[0] for p in out["elements"][0][2]], ["x", "y", "z", "confidence", "intensity"])
        self.assertTrue(all(abs(r[4] - 7.0) < 1e-5 for r in out["rows"]["vertex"]))

    # pipes, batches, records ---------------------------------------------------------------------
    def test_pipeline_from_sgm_depth(self):
        sample = os.path.join(SOURCE, "data", "sample")
        sgm = subprocess.run([SGM, os.path.join(sample, "left.png"), os.path.join(sample, "right.png"), "-D", "48",
                              "--calib", "f=500,b=0.1", "--emit", "cloud", "-o", "-"], capture_output=True,
                             timeout=240)
        self.assertEqual(sgm.returncode, 0, sgm.stderr.decode())
        self.assertTrue(sgm.stdout.startswith(b"ply\n"))
        self.run_tool("fps", "-", "-n", "256", "-o", "s.ply", stdin=sgm.stdout)
        out = read_ply(self.path("s.ply"))
        self.assertEqual(out["elements"][0][1], 256)
        self.assertEqual([p[0] for p in out["elements"][0][2]][:6], ["x", "y", "z", "red", "green", "blue"])
        # a stdin error names <stdin>, not the temp copy
        err = self.run_tool("fps", "-", "-n", "1", "-o", "t.ply", stdin=b"ply\nformat ascii 1.0\n", code=1).stderr
        self.assertIn(b"<stdin>", err)

    def test_batch_folder_json_records(self):
        os.mkdir(self.path("in"))
        for name in ("a", "b"):
            shutil.copy(BUNNY_SMALL, self.path(os.path.join("in", name + ".ply")))
        shutil.copy(KITTI, self.path(os.path.join("in", "c.bin")))
        proc = self.run_tool("fps", "-n", "100", "in", "--output-dir", "out", "--json")
        recs = self.records(proc)
        self.assertEqual([r["status"] for r in recs[:3]], ["ok"] * 3)
        self.assertEqual([r["points"] for r in recs[:3]], [453, 453, 115384])
        self.assertEqual(sorted(os.listdir(self.path("out"))), ["a.ply", "b.ply", "c.bin"])
        self.assertEqual(recs[3]["type"], "summary")
        self.assertEqual(recs[3]["settings"]["fps"]["samples"], 100)
        # --skip-existing: every output there, nothing redone
        proc = self.run_tool("fps", "-n", "100", "in", "--output-dir", "out", "--json", "--skip-existing")
        self.assertEqual([r["status"] for r in self.records(proc)[:3]], ["skipped"] * 3)
        # knn names its three arrays from one -o template
        self.run_tool("knn", "-k", "3", "in/a.ply", "in/b.ply", "-o", "nn/{/.}.npy")
        self.assertEqual(sorted(os.listdir(self.path("nn"))),
                         ["a.counts.npy", "a.dist.npy", "a.npy", "b.counts.npy", "b.dist.npy", "b.npy"])

    def test_batch_groups_clouds_with_identical_results(self):
        """--batch B runs B clouds per launch: every output equals the one-at-a-time run; an item whose -n
        exceeds its cloud still fails alone, and the items around it are still sampled."""
        os.mkdir(self.path("in"))
        pts = self.bunny_points()
        for i in range(7):  # clouds of different lengths, the PointNet++ training shape in small
            rows = [p + (k,) for k, p in enumerate(pts[: 120 + 40 * i])]
            write_ply(self.path(os.path.join("in", "c%d.ply" % i)), [("x", "float"), ("y", "float"), ("z", "float"),
                                                                     ("id", "int")], rows)
        rows = [p + (k,) for k, p in enumerate(pts[:50])]
        write_ply(self.path(os.path.join("in", "c3small.ply")), [("x", "float"), ("y", "float"), ("z", "float"),
                                                                 ("id", "int")], rows)
        common = ["fps", "-n", "64", "--start", "random", "--seed", "5", "in", "--json", "--emit", "indices"]
        one = self.run_tool(*common, "--output-dir", "one", code=1)
        grouped = self.run_tool(*common, "--output-dir", "grouped", "--batch", "3", code=1)
        recs_one, recs_grouped = self.records(one)[:-1], self.records(grouped)[:-1]
        self.assertEqual([r["status"] for r in recs_grouped], [r["status"] for r in recs_one])
        self.assertEqual([r["status"] for r in recs_grouped].count("failed"), 1)
        self.assertEqual(sorted(os.listdir(self.path("one"))), sorted(os.listdir(self.path("grouped"))))
        for name in os.listdir(self.path("one")):
            with open(self.path(os.path.join("one", name))) as a, open(self.path(os.path.join("grouped", name))) as b:
                self.assertEqual(a.read(), b.read(), name)
        self.assertTrue(any(r.get("batch", 1) > 1 for r in recs_grouped))
        self.assertTrue(all(r.get("batch", 1) <= 3 for r in recs_grouped))
        self.assertFalse(any("batch" in r for r in recs_one))
        self.run_tool("knn", "--batch", "2", "in/c0.ply", "-o", "x.npy", code=2)  # fps only

    def test_batch_of_real_plys_equals_single_runs(self):
        """A batch reads each file into storage an earlier item gave back (CloudPool): clouds of different
        sizes, encodings and property sets, in an order that shrinks and grows them, and failing items between
        them, give the same outputs as one run per file; each failure names its own file and no other item."""
        pts = self.bunny_points()
        # big-endian doubles with a ushort label: the swapped path, x y z kept as double attributes
        write_ply(self.path("be.ply"), [("x", "double"), ("y", "double"), ("z", "double"), ("label", "ushort")],
                  [p + (k % 7,) for k, p in enumerate(pts)], "binary_big_endian")
        xyz = [("x", "float"), ("y", "float"), ("z", "float")]
        write_ply(self.path("nan.ply"), xyz, [(0.0, 0.0, 0.0), (float("nan"), 1.0, 0.0), (2.0, 0.0, 0.0)])
        with open(os.path.join(CLOUDS, "kitti_velodyne", "000000.ply"), "rb") as f:
            kitti_ply = f.read()
        with open(self.path("cut.ply"), "wb") as f:
            f.write(kitti_ply[: len(kitti_ply) // 2])  # truncated after a reusable cloud's worth of data
        write_ply(self.path("sparse.ply"), xyz + [("label", "float")],
                  [(p[0], p[1], p[2], float(i % 5)) for i, p in enumerate(pts[:60])])
        inputs = [AERIAL, BUNNY_SMALL, self.path("cut.ply"), os.path.join(CLOUDS, "kitti_velodyne", "000000.ply"),
                  self.path("be.ply"), self.path("nan.ply"), BUNNY, BUNNY_SMALL, AERIAL,
                  os.path.join(CLOUDS, "stanford_bunny", "bun000.ply"), self.path("be.ply")]
        failing = {2: "cut.ply", 5: "nan.ply"}
        with open(self.path("list.txt"), "w") as f:
            f.write("".join(p + "\n" for p in inputs))
        for mode in (["fps", "-n", "300", "--start", "5"], ["interp", "--from", "sparse.ply", "--attributes", "label"]):
            singles = []
            for k, path in enumerate(inputs):
                proc = self.run_tool("-q", *mode, path, "-o", "single.ply", "--overwrite", "--json",
                                     code=1 if k in failing else 0)
                if k in failing:
                    singles.append(None)
                    continue
                with open(self.path("single.ply"), "rb") as f:
                    singles.append(f.read())
            # --prefetch 1: every item after the first reads into the previous item's cloud; the default
            # window: several clouds in flight on two workers; fps --batch 3: items grouped into one launch
            # (a failing item among them), the window widened for the group
            batches = (["--batch", "3"],) if mode[0] == "fps" else ()
            for flags in (["--prefetch", "1"], ["--threads", "2"]) + batches:
                out = "out%s%s" % (mode[0], flags[1])
                proc = self.run_tool("-q", *mode, "--input-list", "list.txt", "-o", out + "/{#}.ply", "--json",
                                     *flags, code=1)
                recs = self.records(proc)[:-1]
                self.assertEqual([r["status"] for r in recs],
                                 ["failed" if k in failing else "ok" for k in range(len(inputs))])
                errors = proc.stderr.decode().strip().splitlines()
                self.assertEqual(len(errors), len(failing), errors)
                for line, name in zip(errors, failing.values()):
                    self.assertIn(name, line)
                    self.assertEqual([n for n in failing.values() if n in line], [name])
                for k, expected in enumerate(singles):
                    produced = self.path(os.path.join(out, "%d.ply" % (k + 1)))
                    if expected is None:
                        self.assertFalse(os.path.exists(produced), produced)
                        continue
                    with open(produced, "rb") as f:
                        self.assertEqual(f.read(), expected, "%s item %d (%s)" % (flags, k + 1, inputs[k]))

    # voxel --------------------------------------------------------------------------------------------
    def test_voxel_cloud_equals_reference(self):
        """Counts, order, centroids and the averaged attributes of `voxel` against the plain reference."""
        rows = read_ply(BUNNY_SMALL)["rows"]["vertex"]
        pts = self.bunny_points()
        for origin in ("world", "min-bound"):
            proc = self.run_tool("voxel", "--voxel-size", "0.01", "--origin", origin, BUNNY_SMALL, "-o",
                                 "v_%s.ply" % origin, "--json")
            rec = self.records(proc)[0]
            groups, _ = voxel_reference(pts, 0.01, origin)
            self.assertEqual(rec["voxels"], len(groups), origin)
            self.assertEqual(rec["points_kept"], len(pts))
            out = read_ply(self.path("v_%s.ply" % origin))
            self.assertEqual(out["elements"][0][1], len(groups))
            self.assertEqual([e[0] for e in out["elements"]], ["vertex"])  # faces cannot follow voxels
            got = out["rows"]["vertex"]
            for j, key in enumerate(sorted(groups)):  # sorted (z, y, x) order
                members = groups[key]
                for a in range(3):
                    self.assertEqual(f32(got[j][a]), f32(sum(pts[i][a] for i in members) / len(members)))
                intensity = f32(sum(f32(rows[i][4]) for i in members) / len(members))
                self.assertEqual(f32(got[j][4]), intensity)
        # first: the voxel's first point, all its values
        self.run_tool("voxel", "--voxel-size", "0.01", "--aggregate", "first", BUNNY_SMALL, "-o", "first.ply")
        groups, _ = voxel_reference(pts, 0.01)
        got = read_ply(self.path("first.ply"))["rows"]["vertex"]
        self.assertEqual([tuple(f32(x) for x in g[:3]) for g in got], [pts[groups[k][0]] for k in sorted(groups)])

    def test_voxel_emit_voxels_on_kitti(self):
        """spconv-like settings on the KITTI scan: the arrays agree with the record and the reference."""
        args = ["voxel", "--voxel-size", "0.4,0.4,0.5", "--origin", "range", "--range", "0,-40,-3,70.4,40,1",
                "--max-points-per-voxel", "5", "--max-voxels", "3000", "--emit", "voxels", KITTI, "-o", "v.npy",
                "--json"]
        rec = self.records(self.run_tool(*args))[0]
        coords = read_npy(self.path("v.npy"))
        feats = read_npy(self.path("v.features.npy"))
        pv = read_npy(self.path("v.point_voxel.npy"))
        self.assertEqual(rec["shape"], [8, 200, 176])
        self.assertEqual(len(coords), rec["voxels"])
        self.assertEqual(len(feats), rec["voxels"])
        self.assertEqual(len(feats[0]), 3 + 1)  # x y z + KITTI's reflectance
        self.assertEqual(len(pv), 115384)
        self.assertEqual(sum(1 for i in pv if i >= 0), rec["points_kept"])
        self.assertEqual(rec["points_kept"] + rec["dropped_out_of_range"] + rec["dropped_over_max_points"]
                         + rec["dropped_over_max_voxels"], 115384)
        self.assertEqual(coords, sorted(coords))
        self.assertTrue(all(c[0] == 0 for c in coords))
        # the reference: the same voxels, each keeping its first 5 points, the first 3000 voxels by first point
        with open(KITTI, "rb") as f:
            raw = f.read()
        vals = struct.unpack("<%df" % (len(raw) // 4), raw)
        pts = [tuple(vals[4 * i:4 * i + 3]) for i in range(len(vals) // 4)]
        groups, outside = voxel_reference(pts, (0.4, 0.4, 0.5), "range", [0, -40, -3, 70.4, 40, 1])
        self.assertEqual(rec["dropped_out_of_range"], outside)
        kept = sorted(sorted(groups, key=lambda k: groups[k][0])[:3000])  # first 3000 by first point, sorted
        self.assertEqual(coords, [[0, *k] for k in kept])
        pts_voxel = {}
        for i, v in enumerate(pv):
            if v >= 0:
                pts_voxel.setdefault(v, []).append(i)
        self.assertEqual([pts_voxel[j] for j in range(len(kept))], [groups[k][:5] for k in kept])
        # features: the mean of the kept points (fp64, rounded once)
        for v in (0, len(coords) // 2, len(coords) - 1):
            m = pts_voxel[v]
            for a in range(3):
                self.assertEqual(feats[v][a], f32(sum(pts[i][a] for i in m) / len(m)))

    def test_voxel_bad_flags_exit_2_without_output(self):
        xyz = [("x", "float"), ("y", "float"), ("z", "float")]
        write_ply(self.path("three.ply"), xyz, [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (3.0, 0.0, 0.0)])
        for bad in (["--voxel-size", "0"], ["--voxel-size=-1"], ["--voxel-size", "abc"], ["--voxel-size", "1,2"],
                    ["--voxel-size", "inf"], ["--voxel-size", "nan"], []):
            self.assert_fails(["voxel", "three.ply", *bad, "-o", "out.ply"], 2, "voxel")
        self.assert_fails(["voxel", "three.ply", "--voxel-size", "1", "--range", "0,0,0,1,1,1", "-o", "out.ply"], 2,
                          "--range")
        self.assert_fails(["voxel", "three.ply", "--voxel-size", "1", "--origin", "range", "-o", "out.ply"], 2,
                          "--range")
        self.assert_fails(["voxel", "three.ply", "--voxel-size", "1", "--origin", "range", "--range",
                           "0,0,0,-1,1,1", "-o", "out.ply"], 2, "range")
        self.assert_fails(["voxel", "three.ply", "--voxel-size", "1", "--min-points", "0", "-o", "out.ply"], 2,
                          "--min-points must be >= 1")
        # the library's checks reach the user under the flags' names, not the C++ fields'
        err = self.assert_fails(["knn", "three.ply", "-k", "0", "-o", "out.npy"], 2, "-k must be in [1, 1024]")
        self.assertNotIn("Params", err)
        # several arrays are named from -o: one that is not NAME.npy is refused before any item
        self.assert_fails(["voxel", "three.ply", "--voxel-size", "1", "--emit", "voxels", "-o", "/dev/null"], 2,
                          "-o /dev/null", "NAME.npy")
        self.assert_fails(["knn", "three.ply", "-k", "2", "-o", "/dev/null"], 2, "-o /dev/null", "NAME.npy")
        # a grid beyond 2^62 cells is the item's failure (exit 1), named
        write_ply(self.path("far.ply"), xyz, [(-1e10, -1e10, -1e10), (1e10, 1e10, 1e10)])
        self.assert_fails(["voxel", "far.ply", "--voxel-size", "1e-3", "-o", "out.ply"], 1, "far.ply", "cells")

    def test_print_config_then_config_reproduces_every_subcommand(self):
        """Each subcommand with settings off their defaults: --print-config's text, given back with --config and
        the inputs alone (the subcommand chosen by its [section]), writes the same bytes."""
        pts = self.bunny_points()
        write_ply(self.path("sparse.ply"), [("x", "float"), ("y", "float"), ("z", "float"), ("label", "float")],
                  [(p[0], p[1], p[2], float(i % 5)) for i, p in enumerate(pts[:60])])
        self.write_coords("c.npy", random_voxels(3, 40, [5, 6, 7]))
        runs = [
            (["fps", "-n", "17", "--start", "3", "--emit", "indices"], BUNNY_SMALL, "out.txt"),
            (["knn", "-k", "4", "--exclude-self"], BUNNY_SMALL, "out.npy"),
            (["ball", "--radius", "0.01", "-k", "5", "--order", "distance"], BUNNY_SMALL, "out.npy"),
            (["interp", "--from", "sparse.ply", "--attributes", "label", "--drop-faces"], BUNNY_SMALL, "out.ply"),
            (["voxel", "--voxel-size", "0.01,0.02,0.01", "--aggregate", "first", "--min-points", "2"], BUNNY_SMALL,
             "out.ply"),
            (["rulebook", "--shape", "5,6,7", "--kernel", "3", "--stride", "2", "--padding", "1"], "c.npy",
             "out.npz"),
        ]
        for args, cloud, out in runs:
            with self.subTest(args[0]):
                direct, again = self.path(args[0] + "_direct_" + out), self.path(args[0] + "_" + out)
                self.run_tool(*args, cloud, "-o", direct)
                config = self.run_tool(*args, cloud, "-o", again, "--print-config").stdout
                self.assertIn(("\n[%s]\n" % args[0]).encode(), config)
                with open(self.path(args[0] + ".toml"), "wb") as f:
                    f.write(config)
                self.run_tool("--config", args[0] + ".toml", cloud)  # no subcommand, no flag, no -o
                with open(direct, "rb") as a, open(again, "rb") as b:
                    self.assertEqual(a.read(), b.read(), args[0])

    # rulebook -----------------------------------------------------------------------------------------
    def assert_layer(self, arrays, prefix, inputs, outs, out_shape, pairs, rec=None):
        """One layer's .npz arrays (and record) equal the reference, in the defined order."""
        get = lambda n: arrays[prefix + n]
        k = len(pairs)
        counts = [len(x) for x in pairs]
        self.assertEqual(get("counts"), ((k,), counts))
        offsets = [0]
        for c in counts:
            offsets.append(offsets[-1] + c)
        self.assertEqual(get("offsets"), ((k + 1,), offsets))
        flat = [pr for x in pairs for pr in x]
        self.assertEqual(get("out_index"), ((len(flat),), [o for o, _ in flat]))
        self.assertEqual(get("in_index"), ((len(flat),), [i for _, i in flat]))
        self.assertEqual(get("out_coords"), ((len(outs), 4), [v for o in outs for v in o]))
        self.assertEqual(get("out_shape"), ((3,), out_shape))
        # spconv's indice_pairs [2, K, N_max], N_max = the layer's input count, -1 padded
        shape, values = get("pairs")
        self.assertEqual(shape, (2, k, inputs))
        for t in range(k):
            row_in = values[t * inputs:(t + 1) * inputs]
            row_out = values[(k + t) * inputs:(k + t + 1) * inputs]
            self.assertEqual(row_in, [i for _, i in pairs[t]] + [-1] * (inputs - len(pairs[t])))
            self.assertEqual(row_out, [o for o, _ in pairs[t]] + [-1] * (inputs - len(pairs[t])))
        if rec is not None:
            self.assertEqual((rec["inputs"], rec["outputs"], rec["out_shape"]), (inputs, len(outs), out_shape))
            self.assertEqual(rec["pairs_per_offset"], counts)
            self.assertEqual(rec["pairs"], len(flat))
            self.assertGreaterEqual(rec["milliseconds"], 0.0)

    def write_coords(self, name, coords):
        with open(self.path(name), "wb") as f:
            f.write(npy_bytes(coords))

    def test_rulebook_equals_reference(self):
        """Regular, strided, anisotropic and submanifold rulebooks against the enumeration."""
        shape = [5, 6, 7]
        coords = random_voxels(1, 70, shape)
        self.write_coords("c.npy", coords)
        cases = [
            (["--kernel", "3", "--stride", "2", "--padding", "1"], dict(kernel=3, stride=2, padding=1), "regular"),
            (["--kernel", "3"], dict(kernel=3), "regular"),
            (["--kernel", "3,1,2", "--stride", "2,1,3", "--padding", "1,0,1", "--dilation", "1,1,2"],
             dict(kernel=(3, 1, 2), stride=(2, 1, 3), padding=(1, 0, 1), dilation=(1, 1, 2)), "regular"),
            (["--kernel", "3", "--subm"], dict(kernel=3, subm=True), "subm"),
            (["--kernel", "5,3,3", "--dilation", "1,2,1", "--subm"],
             dict(kernel=(5, 3, 3), dilation=(1, 2, 1), subm=True), "subm"),
        ]
        for n, (args, spec, kind) in enumerate(cases):
            out = "rb%d.npz" % n
            rec = self.records(self.run_tool("rulebook", "c.npy", "--shape", "5,6,7", *args, "-o", out, "--json"))[0]
            self.assertEqual((rec["voxels"], rec["shape"], rec["batch_size"]), (70, shape, 2))
            self.assertEqual(len(rec["layers"]), 1)
            self.assertEqual(rec["layers"][0]["kind"], kind)
            outs, out_shape, pairs = rulebook_reference(coords, shape, **spec)
            arrays = read_npz(self.path(out))
            self.assertEqual(sorted(arrays), sorted(["pairs", "counts", "offsets", "in_index", "out_index",
                                                     "out_coords", "out_shape"]))
            self.assert_layer(arrays, "", 70, outs, out_shape, pairs, rec["layers"][0])
            if kind == "subm":
                self.assertEqual(outs, coords)  # outputs are the inputs, in input order
        # -o NAME.npy: the pairs array alone, the same bytes as the .npz member
        self.run_tool("rulebook", "c.npy", "--shape", "5,6,7", "--kernel", "3", "--stride", "2", "--padding", "1",
                      "-o", "pairs.npy")
        with open(self.path("pairs.npy"), "rb") as f:
            self.assertEqual(parse_npy(f.read()), read_npz(self.path("rb0.npz"))["pairs"])
        # --batch-size larger than the ids: the same rulebook
        self.run_tool("rulebook", "c.npy", "--shape", "5,6,7", "--batch-size", "4", "--kernel", "3", "--stride", "2",
                      "--padding", "1", "-o", "b4.npz")
        self.assertEqual(read_npz(self.path("b4.npz")), read_npz(self.path("rb0.npz")))
        try:
            import numpy as np
        except ImportError:
            return
        with np.load(self.path("rb0.npz")) as z:
            self.assertEqual(z["pairs"].dtype, np.int32)
            self.assertEqual(z["offsets"].dtype, np.int64)
            self.assertEqual(list(z["pairs"].shape), [2, 27, 70])

    def test_rulebook_inverse(self):
        shape = [6, 6, 6]
        coords = random_voxels(2, 50, shape)
        self.write_coords("c.npy", coords)
        rec = self.records(self.run_tool("rulebook", "c.npy", "--shape", "6,6,6", "--kernel", "3", "--stride", "2",
                                         "--padding", "1", "--inverse", "-o", "inv.npz", "--json"))[0]
        f_outs, f_shape, f_pairs = rulebook_reference(coords, shape, 3, 2, 1)
        pairs = [sorted((i, o) for o, i in x) for x in f_pairs]
        self.assertEqual(rec["layers"][0]["kind"], "inverse")
        self.assert_layer(read_npz(self.path("inv.npz")), "", len(f_outs), coords, shape, pairs, rec["layers"][0])

    def test_rulebook_layers_chain(self):
        """--layers: regular layers feed their outputs on, subm keeps them, an inverse undoes a named layer."""
        shape = [9, 10, 11]
        coords = random_voxels(3, 120, shape, batches=3)
        self.write_coords("c.npy", coords)
        layers = [{"kernel": 3, "subm": True, "name": "subm1"},
                  {"kernel": 3, "stride": 2, "padding": 1, "name": "down1"},
                  {"kernel": [3, 1, 1], "stride": [2, 1, 1]},
                  {"kernel": 3, "subm": True, "dilation": 2, "name": "subm2"},
                  {"inverse": "layer2", "name": "up2"},
                  {"inverse": "down1"}]
        with open(self.path("net.json"), "w") as f:
            json.dump(layers, f)
        rec = self.records(self.run_tool("rulebook", "c.npy", "--shape", "9,10,11", "--layers", "net.json", "-o",
                                         "net.npz", "--json"))[0]
        arrays = read_npz(self.path("net.npz"))
        names = ["subm1", "down1", "layer2", "subm2", "up2", "layer5"]
        self.assertEqual([l["name"] for l in rec["layers"]], names)
        self.assertEqual(sorted({n.split("/")[0] for n in arrays}), sorted(names))
        cur, cur_shape, stack = coords, shape, {}
        for spec, name, lrec in zip(layers, names, rec["layers"]):
            if "inverse" in spec:
                f_in, f_in_shape, f_outs, f_pairs = stack[spec["inverse"]]
                self.assertEqual(cur, f_outs)
                outs, out_shape = f_in, f_in_shape
                pairs = [sorted((i, o) for o, i in x) for x in f_pairs]
                self.assertEqual(lrec["kind"], "inverse")
            else:
                args = {k: (tuple(v) if isinstance(v, list) else v) for k, v in spec.items() if k != "name"}
                outs, out_shape, pairs = rulebook_reference(cur, cur_shape, **args)
                self.assertEqual(lrec["kind"], "subm" if spec.get("subm") else "regular")
            self.assert_layer(arrays, name + "/", len(cur), outs, out_shape, pairs, lrec)
            stack[name] = (cur, cur_shape, outs, pairs)
            cur, cur_shape = outs, out_shape
        self.assertEqual(cur, coords)

    def test_rulebook_of_a_voxelised_cloud(self):
        """A cloud plus --voxel-size: the voxels of `voxel --emit voxels`, their grid's shape."""
        vrec = self.records(self.run_tool("voxel", "--voxel-size", "0.005", "--emit", "voxels", BUNNY_SMALL, "-o",
                                          "v.npy", "--json"))[0]
        coords = read_npy(self.path("v.npy"))
        rec = self.records(self.run_tool("rulebook", BUNNY_SMALL, "--voxel-size", "0.005", "--kernel", "3",
                                         "--stride", "2", "-o", "rb.npz", "--json"))[0]
        self.assertEqual((rec["voxels"], rec["shape"]), (len(coords), vrec["shape"]))
        outs, out_shape, pairs = rulebook_reference(coords, vrec["shape"], 3, 2)
        self.assert_layer(read_npz(self.path("rb.npz")), "", len(coords), outs, out_shape, pairs, rec["layers"][0])

    def test_rulebook_bad_input_exit_1_without_output(self):
        self.write_coords("c.npy", [[0, 1, 1, 1], [0, 2, 2, 2], [1, 0, 0, 0]])
        self.assert_fails(["rulebook", "c.npy", "--shape", "3,3,2", "-o", "out.npz"], 1, "c.npy", "outside")
        self.write_coords("dup.npy", [[0, 1, 1, 1], [0, 2, 2, 2], [0, 1, 1, 1]])
        self.assert_fails(["rulebook", "dup.npy", "--shape", "4,4,4", "-o", "out.npz"], 1, "dup.npy", "repeats")
        self.write_coords("neg.npy", [[0, 1, 1, 1], [-1, 2, 2, 2]])
        self.assert_fails(["rulebook", "neg.npy", "--shape", "4,4,4", "-o", "out.npz"], 1, "neg.npy", "batch")
        self.write_coords("negz.npy", [[0, -1, 1, 1]])
        self.assert_fails(["rulebook", "negz.npy", "--shape", "4,4,4", "-o", "out.npz"], 1, "negz.npy", "outside")
        self.assert_fails(["rulebook", "c.npy", "--shape", "4,4,4", "--batch-size", "1", "-o", "out.npz"], 1,
                          "c.npy", "batch")
        with open(self.path("f32.npy"), "wb") as f:
            f.write(npy_bytes([[0.0, 1.0, 1.0, 1.0]], "<f4"))
        self.assert_fails(["rulebook", "f32.npy", "--shape", "4,4,4", "-o", "out.npz"], 1, "f32.npy", "int32")
        self.write_coords("three.npy", [[0, 1, 1], [0, 2, 2]])
        self.assert_fails(["rulebook", "three.npy", "--shape", "4,4,4", "-o", "out.npz"], 1, "three.npy", "[M, 4]")
        with open(self.path("flat.npy"), "wb") as f:
            f.write(npy_bytes([0, 1, 1, 1], shape=(4,)))
        self.assert_fails(["rulebook", "flat.npy", "--shape", "4,4,4", "-o", "out.npz"], 1, "flat.npy", "[M, 4]")
        with open(self.path("c.npy"), "rb") as f:
            whole = f.read()
        with open(self.path("cut.npy"), "wb") as f:
            f.write(whole[:-3])
        self.assert_fails(["rulebook", "cut.npy", "--shape", "4,4,4", "-o", "out.npz"], 1, "cut.npy", "truncated")
        self.assert_fails(["rulebook", BUNNY_SMALL, "--shape", "4,4,4", "-o", "out.npz"], 1, "not an .npy")
        big = "2147483647,2147483647,2147483647"
        self.assert_fails(["rulebook", "c.npy", "--shape", big, "-o", "out.npz"], 1, "c.npy", "overflows")
        # a chained inverse whose input is not its layer's output
        with open(self.path("net.json"), "w") as f:
            json.dump([{"kernel": 3, "stride": 2, "padding": 1, "name": "d"}, {"kernel": 2}, {"inverse": "d"}], f)
        self.write_coords("grid.npy", [[0, z, y, x] for z in range(6) for y in range(6) for x in range(6)])
        self.assert_fails(["rulebook", "grid.npy", "--shape", "6,6,6", "--layers", "net.json", "-o", "out.npz"], 1,
                          "grid.npy", "layer layer2", "not layer d's output")

    def test_rulebook_bad_flags_exit_2_without_output(self):
        self.write_coords("c.npy", [[0, 1, 1, 1], [0, 2, 2, 2]])
        for bad in (["--shape", "0,4,4"], ["--shape", "4,-4,4"], ["--shape", "4,4"], ["--shape", "a,b,c"], [],
                    ["--shape", "4,4,4", "--kernel", "0"], ["--shape", "4,4,4", "--kernel", "2", "--subm"],
                    ["--shape", "4,4,4", "--stride", "0"], ["--shape", "4,4,4", "--padding", "-1"],
                    ["--shape", "4,4,4", "--dilation", "0"], ["--shape", "4,4,4", "--kernel", "1,2"],
                    ["--shape", "4,4,4", "--stride", "2", "--subm"], ["--shape", "4,4,4", "--voxel-size", "1"],
                    ["--voxel-size", "0"], ["--voxel-size", "1", "--batch-size", "2"],
                    ["--shape", "4,4,4", "--layers", "net.json", "--kernel", "3"]):
            self.assert_fails(["rulebook", "c.npy", *bad, "-o", "out.npz"], 2)
        for layers in ("[", "[]", '[{"kernel": 3, "strides": 2}]', '[{"kernel": 0}]', '[{"inverse": "x"}]',
                       '[{"name": "a"}, {"name": "a"}]', '[{"name": "a"}, {"inverse": "a", "kernel": 3}]',
                       '[{"name": "a/b"}]', '[{"kernel": [3, 3]}]'):
            with open(self.path("net.json"), "w") as f:
                f.write(layers)
            self.assert_fails(["rulebook", "c.npy", "--shape", "4,4,4", "--layers", "net.json", "-o", "out.npz"], 2,
                              "--layers")
        self.assert_fails(["rulebook", "c.npy", "--shape", "4,4,4", "-o", "out.txt"], 2, ".npz")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=2)
