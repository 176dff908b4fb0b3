#!/usr/bin/env python3
"""End-to-end tests of pc-sample (docs/PC-SAMPLE.md) on the real clouds of $S3D_DATA_DIR/pointclouds.

The tool's contracts: files, formats, records, exit codes, rows of the file, and that its outputs agree with each
other. What the kernels compute is tested against references in C++ (tests/points: FPS, kNN, ball query,
three-NN, voxels, rulebooks; the cloud layer). Pure Python (no numpy): .npy and PLY are read and written here with
struct.

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


def dist(p, q):
    return math.sqrt(sum((p[a] - q[a]) ** 2 for a in range(3)))


def axes(v):
    return [v] * 3 if isinstance(v, int) else list(v)


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

    # what the outputs mean, and that they agree with each other -----------------------------------
    def test_fps_indices_are_the_rows_of_the_sampled_cloud(self):
        self.run_tool("fps", BUNNY_SMALL, "-n", "48", "--start", "7", "--emit", "indices", "-o", "idx.txt")
        with open(self.path("idx.txt")) as f:
            got = [int(line) for line in f]
        self.assertEqual(len(got), 48)
        self.assertEqual(got[0], 7)  # the start first
        self.assertEqual(len(set(got)), 48)  # distinct points: no repeat
        self.assertTrue(all(0 <= i < 453 for i in got))
        # .npy by the extension: the same indices as int32
        self.run_tool("fps", BUNNY_SMALL, "-n", "48", "--start", "7", "--emit", "indices", "-o", "idx.npy")
        self.assertEqual(read_npy(self.path("idx.npy")), got)
        # the sampled cloud: exactly those rows, in selection order, every property
        self.run_tool("fps", BUNNY_SMALL, "-n", "48", "--start", "7", "--drop-faces", "-o", "s.ply")
        src, out = read_ply(BUNNY_SMALL)["rows"]["vertex"], read_ply(self.path("s.ply"))["rows"]["vertex"]
        self.assertEqual([tuple(f32(v) for v in r) for r in out], [tuple(f32(v) for v in src[i]) for i in got])

    def test_knn_arrays_agree_with_the_cloud(self):
        self.run_tool("knn", BUNNY_SMALL, "-k", "6", "--exclude-self", "-o", "nn.npy")
        pts = self.bunny_points()
        idx, d = read_npy(self.path("nn.npy")), read_npy(self.path("nn.dist.npy"))
        self.assertEqual(read_npy(self.path("nn.counts.npy")), [6] * len(pts))
        for q in range(len(pts)):
            self.assertEqual(len(set(idx[q])), 6, q)
            self.assertNotIn(q, idx[q])  # --exclude-self
            self.assertEqual(d[q], sorted(d[q]), q)  # ascending distance
            for i, dq in zip(idx[q], d[q]):  # each distance is the one between the two rows
                self.assertAlmostEqual(dq, dist(pts[q], pts[i]), delta=1e-6)

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
        self.assertEqual(len(idx), 453)
        for q in range(len(idx)):
            self.assertEqual(len(set(idx[q])), 3, q)  # three distinct sparse rows
            self.assertTrue(all(0 <= i < len(sparse) for i in idx[q]), q)
            self.assertAlmostEqual(sum(w[q]), 1.0, places=5)
            label = sum(wj * sparse[i][3] for wj, i in zip(w[q], idx[q]))  # the cloud written from these weights
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
        start = self.records(proc)[0]["start"]
        with open(self.path("r.txt")) as f:
            first = [int(v) for v in f]
        self.assertEqual((len(first), first[0]), (5, start))  # the record's start is the first sample
        again = self.run_tool("fps", BUNNY_SMALL, "-n", "5", "--start", "random", "--seed", "3", "--emit",
                              "indices", "-o", "r2.txt", "--json")
        self.assertEqual(self.records(again)[0]["start"], start)  # the seed decides it (points::seeded_start)
        with open(self.path("r2.txt")) as f:
            self.assertEqual([int(v) for v in f], first)
        # another seed, another start (SplitMix64's values are tested in C++: tests/points/file_rows_test.cpp)
        other = self.run_tool("fps", BUNNY_SMALL, "-n", "5", "--start", "random", "--seed", "4", "--emit", "indices",
                              "-o", "r3.txt", "--json")
        self.assertNotEqual(self.records(other)[0]["start"], start)
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
    def test_voxel_cloud_contracts(self):
        """One point per voxel, in sorted (z, y, x) order, the record's counts, only the points element."""
        rows = read_ply(BUNNY_SMALL)["rows"]["vertex"]
        lo, hi = min(f32(r[4]) for r in rows), max(f32(r[4]) for r in rows)
        for origin in ("world", "min-bound"):
            proc = self.run_tool("voxel", "--voxel-size", "0.01", "--origin", origin, BUNNY_SMALL, "-o",
                                 "v_%s.ply" % origin, "--json")
            rec = self.records(proc)[0]
            self.assertEqual(rec["points_kept"], len(rows))
            out = read_ply(self.path("v_%s.ply" % origin))
            self.assertEqual(out["elements"][0][1], rec["voxels"])
            self.assertEqual([e[0] for e in out["elements"]], ["vertex"])  # faces cannot follow voxels
            got = out["rows"]["vertex"]
            if origin == "world":  # a mean stays inside its voxel: one point per cell, cells in (z, y, x) order
                cells = [tuple(math.floor(g[a] / 0.01) for a in (2, 1, 0)) for g in got]
                self.assertEqual(cells, sorted(set(cells)))
            self.assertTrue(all(lo <= f32(g[4]) <= hi for g in got))  # an averaged intensity
        # first: one input point per voxel, all its values, as many voxels as the means
        self.run_tool("voxel", "--voxel-size", "0.01", "--aggregate", "first", BUNNY_SMALL, "-o", "first.ply")
        got = read_ply(self.path("first.ply"))["rows"]["vertex"]
        inputs = {tuple(f32(v) for v in r) for r in rows}
        self.assertEqual(len(got), read_ply(self.path("v_world.ply"))["elements"][0][1])
        self.assertTrue(all(tuple(f32(v) for v in g) in inputs for g in got))

    def test_voxel_emit_voxels_on_kitti(self):
        """spconv-like settings on the KITTI scan: the arrays agree with the record and with each other."""
        args = ["voxel", "--voxel-size", "0.4,0.4,0.5", "--origin", "range", "--range", "0,-40,-3,70.4,40,1",
                "--max-points-per-voxel", "5", "--max-voxels", "3000", "--emit", "voxels", KITTI, "-o", "v.npy",
                "--json"]
        rec = self.records(self.run_tool(*args))[0]
        coords = read_npy(self.path("v.npy"))
        feats = read_npy(self.path("v.features.npy"))
        pv = read_npy(self.path("v.point_voxel.npy"))
        self.assertEqual(rec["shape"], [8, 200, 176])
        self.assertEqual(len(coords), rec["voxels"])
        self.assertEqual(rec["voxels"], 3000)
        self.assertEqual(len(feats), rec["voxels"])
        self.assertEqual(len(feats[0]), 3 + 1)  # x y z + KITTI's reflectance
        self.assertEqual(len(pv), 115384)
        self.assertEqual(sum(1 for i in pv if i >= 0), rec["points_kept"])
        self.assertEqual(rec["points_kept"] + rec["dropped_out_of_range"] + rec["dropped_over_max_points"]
                         + rec["dropped_over_max_voxels"], 115384)
        self.assertEqual(coords, sorted(coords))
        self.assertEqual(len({tuple(c) for c in coords}), len(coords))
        self.assertTrue(all(c[0] == 0 for c in coords))
        with open(KITTI, "rb") as f:
            raw = f.read()
        vals = struct.unpack("<%df" % (len(raw) // 4), raw)
        pts = [tuple(vals[4 * i:4 * i + 3]) for i in range(len(vals) // 4)]
        members = {}
        for i, v in enumerate(pv):
            if v >= 0:
                members.setdefault(v, []).append(i)
        self.assertEqual(sorted(members), list(range(len(coords))))
        size, r0 = (0.4, 0.4, 0.5), (0.0, -40.0, -3.0)
        for v, m in members.items():
            self.assertLessEqual(len(m), 5)  # --max-points-per-voxel
            z, y, x = coords[v][1:]
            for i in m:  # each point lies in its voxel's cell (x, y, z from the range's corner)
                for a, c in enumerate((x, y, z)):
                    self.assertLessEqual(r0[a] + c * size[a] - 1e-4, pts[i][a])
                    self.assertLess(pts[i][a], r0[a] + (c + 1) * size[a] + 1e-4)
            # features: the mean of the kept points (fp64, rounded once)
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
    def assert_layer(self, arrays, prefix, in_coords, in_shape, spec, rec=None):
        """One layer's .npz arrays (and record) hold together and mean what docs/PC-SAMPLE.md says: CSR offsets
        of the counts, every pair (out o, in i) at offset (kz, ky, kx) with in = out * stride - padding + k *
        dilation per axis in one batch, pairs sorted by output then input within an offset, outputs distinct in
        linear order (submanifold: the inputs themselves), spconv's [2, K, N] the same pairs, -1 padded. The
        rulebook's completeness is tested against an enumeration in C++ (tests/points/rulebook_test.cpp).
        Returns (out_coords, out_shape, pairs per offset)."""
        get = lambda n: arrays[prefix + n]
        k, s, pad, d = axes(spec.get("kernel", 3)), axes(spec.get("stride", 1)), axes(spec.get("padding", 0)), \
            axes(spec.get("dilation", 1))
        if spec.get("subm"):
            s, pad = [1, 1, 1], [(k[a] // 2) * d[a] for a in range(3)]
        taps = [(kz, ky, kx) for kz in range(k[0]) for ky in range(k[1]) for kx in range(k[2])]
        (ktaps,), counts = get("counts")
        self.assertEqual(ktaps, len(taps))
        offsets = [0]
        for c in counts:
            offsets.append(offsets[-1] + c)
        self.assertEqual(get("offsets"), ((ktaps + 1,), offsets))
        (p,), out_index = get("out_index")
        self.assertEqual(get("in_index")[0], (p,))
        in_index = get("in_index")[1]
        self.assertEqual(p, offsets[-1])
        (m, four), flat_out = get("out_coords")
        outs = [flat_out[4 * j:4 * j + 4] for j in range(m)]
        (three,), out_shape = get("out_shape")
        if spec.get("subm"):
            self.assertEqual((outs, out_shape), (in_coords, list(in_shape)))
        else:
            self.assertEqual(outs, sorted(outs))
            self.assertEqual(len({tuple(o) for o in outs}), m)
            self.assertEqual(out_shape, [(in_shape[a] + 2 * pad[a] - d[a] * (k[a] - 1) - 1) // s[a] + 1
                                         for a in range(3)])
        pairs = []
        for t, tap in enumerate(taps):
            lst = list(zip(out_index[offsets[t]:offsets[t + 1]], in_index[offsets[t]:offsets[t + 1]]))
            self.assertEqual(lst, sorted(lst))
            for o, i in lst:
                self.assertEqual(in_coords[i][0], outs[o][0])
                self.assertEqual(in_coords[i][1:], [outs[o][1 + a] * s[a] - pad[a] + tap[a] * d[a] for a in range(3)])
            pairs.append(lst)
        shape, values = get("pairs")  # spconv's indice_pairs [2, K, N_max], N_max = the layer's input count
        inputs = len(in_coords)
        self.assertEqual(shape, (2, ktaps, inputs))
        for t in range(ktaps):
            self.assertEqual(values[t * inputs:(t + 1) * inputs], [i for _, i in pairs[t]] + [-1] * (inputs - counts[t]))
            self.assertEqual(values[(ktaps + t) * inputs:(ktaps + t + 1) * inputs],
                             [o for o, _ in pairs[t]] + [-1] * (inputs - counts[t]))
        if rec is not None:
            self.assertEqual((rec["inputs"], rec["outputs"], rec["out_shape"]), (inputs, m, out_shape))
            self.assertEqual(rec["pairs_per_offset"], counts)
            self.assertEqual(rec["pairs"], p)
            self.assertGreaterEqual(rec["milliseconds"], 0.0)
        return outs, out_shape, pairs

    def write_coords(self, name, coords):
        with open(self.path(name), "wb") as f:
            f.write(npy_bytes(coords))

    def test_rulebook_layers_hold_together(self):
        """Regular, strided, anisotropic and submanifold rulebooks: the arrays, their meaning, the record."""
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
            arrays = read_npz(self.path(out))
            self.assertEqual(sorted(arrays), sorted(["pairs", "counts", "offsets", "in_index", "out_index",
                                                     "out_coords", "out_shape"]))
            self.assert_layer(arrays, "", coords, shape, spec, rec["layers"][0])
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
        """--inverse: the forward rulebook with inputs and outputs swapped; its outputs are the forward's inputs."""
        shape = [6, 6, 6]
        coords = random_voxels(2, 50, shape)
        self.write_coords("c.npy", coords)
        args = ["rulebook", "c.npy", "--shape", "6,6,6", "--kernel", "3", "--stride", "2", "--padding", "1"]
        self.run_tool(*args, "-o", "fwd.npz")
        f_outs, _, f_pairs = self.assert_layer(read_npz(self.path("fwd.npz")), "", coords, shape,
                                               dict(kernel=3, stride=2, padding=1))
        rec = self.records(self.run_tool(*args, "--inverse", "-o", "inv.npz", "--json"))[0]
        self.assertEqual(rec["layers"][0]["kind"], "inverse")
        inv = read_npz(self.path("inv.npz"))
        self.assertEqual(inv["out_coords"], ((len(coords), 4), [v for c in coords for v in c]))
        self.assertEqual(inv["out_shape"], ((3,), shape))
        out_index, in_index, offsets = inv["out_index"][1], inv["in_index"][1], inv["offsets"][1]
        for t, pairs in enumerate(f_pairs):
            got = sorted(zip(in_index[offsets[t]:offsets[t + 1]], out_index[offsets[t]:offsets[t + 1]]))
            self.assertEqual(got, sorted(pairs))  # (forward out, forward in) = (inverse in, inverse out)
        self.assertEqual(rec["layers"][0]["inputs"], len(f_outs))

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
                f_in, f_in_shape, f_outs = stack[spec["inverse"]]
                self.assertEqual(cur, f_outs)  # the forward layer's outputs reach it unchanged
                self.assertEqual(lrec["kind"], "inverse")
                get = lambda n: arrays[name + "/" + n]
                self.assertEqual(get("out_coords"), ((len(f_in), 4), [v for c in f_in for v in c]))
                outs, out_shape = f_in, f_in_shape
            else:
                layer = {k: (tuple(v) if isinstance(v, list) else v) for k, v in spec.items() if k != "name"}
                outs, out_shape, _ = self.assert_layer(arrays, name + "/", cur, cur_shape, layer, lrec)
                self.assertEqual(lrec["kind"], "subm" if spec.get("subm") else "regular")
            stack[name] = (cur, cur_shape, outs)
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
        self.assert_layer(read_npz(self.path("rb.npz")), "", coords, vrec["shape"], dict(kernel=3, stride=2),
                          rec["layers"][0])

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
