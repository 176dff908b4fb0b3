#!/usr/bin/env python3
"""Open3D baseline for icp-fuse: tensor RGB-D odometry (PointToPlane, multi-scale) on the 7-Scenes redkitchen frames,
TUM RGB-D sequences (depth only) and folders of depth maps (sgm-depth's stereo depth, e.g. KITTI odometry).

Frame-to-frame: source = frame i, target = frame i-1; Open3D returns T (source to target), so
pose_i = pose_{i-1} @ T, starting from the ground-truth pose of the first frame (camera to world). Initial guess:
identity (as KinFu / Open3D's examples). A failed pair (exception, non-finite T, fitness <= --min_fitness) keeps the
previous pose and is counted. Settings (Open3D's defaults, open3d.t.pipelines.odometry): 3 levels, criteria {10, 5, 3} coarse to
fine, relative_rmse = relative_fitness = 1e-6, OdometryLossParams(depth_outlier_trunc 0.07, depth_huber_delta 0.05),
depth_scale 1000, depth_max 3.0, device CPU:0.

Implementation (--impl):
  api      o3d.t.pipelines.odometry.rgbd_odometry_multi_scale(..., Method.PointToPlane). Colour is not used by
           PointToPlane, but RGBDImage wants one: the frame's JPG is passed.
  replica  Debian's python3-open3d 0.16.1 is built without IPP, and Image::FilterBilateral (which Open3D's
           RGBDOdometryMultiScalePointToPlane applies to the target depth before its normals) is "not implemented"
           on CPU without IPP; Image::PyrDownDepth is not bound in its Python API. The replica runs the same
           multi-scale loop as Open3D's RGBDOdometryMultiScalePointToPlane (same pyramid, same early-exit test)
           with Open3D's own kernels (clip_transform, create_vertex_map, create_normal_map and the Gauss-Newton step
           compute_odometry_result_point_to_plane), and numpy stand-ins for the two missing pieces:
           PyrDownDepth (Open3D's 5x5 [1 4 6 4 1]/16 kernel, neighbours within 2*depth_outlier_trunc of the
           centre, NaN-aware) and FilterBilateral(5, 5, 10) (IPP's: circular 13-tap window, value sigma 5,
           distance sigma 10, NaN propagates; equal to Open3D 0.19's IPP output to 1e-6 m away from the border).
  auto     api, falling back to replica when the api raises (the default).
--f2m adds frame-to-model tracking (the flow of o3d.t.pipelines.slam.Model: VoxelBlockGrid integration, ray cast
of depth from the previous pose, PointToPlane odometry of the input against the ray-cast depth with criteria
{6, 3, 1}, depth_diff 0.07) built from VoxelBlockGrid calls, with the same odometry implementation as above (slam.Model's
TrackFrameToModel calls RGBDOdometryMultiScale and hits the same FilterBilateral on this build).

Threads: OMP_NUM_THREADS is set to --threads (default 1) before Open3D is imported: 1 thread is deterministic
(Open3D's CPU reductions run in parallel otherwise) and matches a single-core CPU comparison.

Timing: wall clock (time.perf_counter) of the odometry call per pair (pyramid construction + iterations), frames
already in memory; `kernel_ms` is the part spent in Open3D's compute_odometry_result_point_to_plane (replica only).

Datasets (--dataset; every default below is per dataset and an explicit option wins):
  redkitchen    (default) 7-Scenes frames frame-NNNNNN.depth.png (mm) + .color.jpg, DIR/camera-intrinsics.txt,
                DIR/groundtruth.txt (one line per frame; frame i is line i), depth_max 3.0, ranges 0:122,122:300.
  tum           TUM RGB-D layout: DIR/depth.txt (`timestamp depth/<stamp>.png`, '#' comments), depth PNG / 5000,
                DIR/groundtruth.txt (motion capture, ~100 Hz, associated by nearest stamp within 0.02 s). No colour
                is read: RGBDImage gets a constant grey (128) 8-bit RGB image of the depth's size, which PointToPlane
                ignores. Default DIR ../shared/data/rgbd/tum_fr1_rpy_f000-299, intrinsics 525,525,319.5,239.5
                (the benchmark's conversion of every sequence's registered depth, as icp-fuse's `tum`), depth_max 4.0.
  depth-folder  the maps of a folder written by `sgm-depth --emit depth --output-dir DIR`: NAME_depth.pfm (metres,
                +-inf / NaN / <= 0 invalid) or NAME_depth.png (DIR/depth-scale.txt units per metre), in name order;
                intrinsics from DIR/camera-intrinsics.txt, depth scale from DIR/depth-scale.txt (1 if missing);
                frame k (of the listing) at t = k / --fps; constant grey colour as for tum; --groundtruth required:
                a TUM trajectory, or KITTI poses.txt (3x4 camera-to-world per line, line k = frame k at t = k / --fps).
                Defaults depth_max 30, voxel_size 0.1 (f2m).
The first pose is the ground truth's (redkitchen: its line --first; others: the pose associated with the first
frame's stamp). Metrics: trajectory_eval.evaluate (ATE after SE(3) alignment, RPE per frame and per second).

Usage: python3 open3d_odometry.py [--dataset redkitchen|tum|depth-folder] [--data DIR] [--first 0] [--last N]
       [--intrinsics fx,fy,cx,cy|K.txt] [--groundtruth GT] [--out est.tum] [--json results.json] [--f2m]
e.g.   python3 open3d_odometry.py --dataset tum --f2m --out f2f.tum --f2m_out f2m.tum --json tum.json
       python3 open3d_odometry.py --dataset depth-folder --data kitti_depth --groundtruth poses.txt --f2m
"""
import argparse
import json
import math
import os
import platform
import re
import subprocess
import sys
import time

SYSTEM_PYTHON = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(os.environ.get("S3D_DATA_DIR", os.path.join(HERE, "..", "..", "..", "shared", "data")),
                            "rgbd", "7scenes_redkitchen_f000-299")
DEFAULT_TUM = os.path.join(os.path.dirname(os.path.dirname(DEFAULT_DATA)), "rgbd", "tum_fr1_rpy_f000-299")
# The benchmark's depth-to-point conversion for every sequence (its depth is registered to the colour camera by
# OpenNI): https://vision.in.tum.de/data/datasets/rgbd-dataset/intrinsic_calibration
TUM_FR1_K = "525,525,319.5,239.5"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="Open3D PointToPlane odometry baseline on 7-Scenes redkitchen, TUM RGB-D "
                                 "(depth only) or a folder of depth maps (sgm-depth --emit depth --output-dir)",
                                 epilog="Per-dataset defaults: redkitchen: --data %s, K from DIR/camera-intrinsics.txt, "
                                 "GT DIR/groundtruth.txt, depth_scale 1000, depth_max 3, last 299, ranges 0:122,122:300. "
                                 "tum: --data %s, K 525,525,319.5,239.5, GT DIR/groundtruth.txt, depth_scale 5000, "
                                 "depth_max 4, all frames of depth.txt, constant grey colour. depth-folder: --data "
                                 "required, K from DIR/camera-intrinsics.txt, depth_scale from DIR/depth-scale.txt, "
                                 "--groundtruth required (TUM or KITTI poses.txt), depth_max 30, voxel_size 0.1, "
                                 "constant grey colour." % (DEFAULT_DATA, DEFAULT_TUM))
    ap.add_argument("--dataset", choices=["redkitchen", "tum", "depth-folder"], default="redkitchen",
                    help="input layout (see the epilog); default redkitchen")
    ap.add_argument("--data", default=None, help="sequence folder")
    ap.add_argument("--intrinsics", default=None, help="fx,fy,cx,cy or a text file holding the 3x3 K")
    ap.add_argument("--groundtruth", default=None, help="TUM trajectory (camera to world), or KITTI poses.txt "
                    "(12 numbers per line, line k at t = k / --fps)")
    ap.add_argument("--fps", type=float, default=10.0, help="depth-folder frame rate (t = k / fps) and KITTI poses' "
                    "rate; default 10")
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--last", type=int, default=None, help="inclusive (default 299 for redkitchen, else the last frame)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--impl", choices=["auto", "api", "replica"], default="auto")
    ap.add_argument("--depth_max", type=float, default=None, help="metres (default 3 redkitchen, 4 tum, 30 depth-folder)")
    ap.add_argument("--depth_scale", type=float, default=None, help="depth units per metre (default 1000 redkitchen, "
                    "5000 tum, depth-folder: DIR/depth-scale.txt or 1)")
    ap.add_argument("--depth_outlier_trunc", type=float, default=0.07, help="OdometryLossParams (Open3D default 0.07 m)")
    ap.add_argument("--depth_huber_delta", type=float, default=0.05, help="OdometryLossParams (Open3D default 0.05 m)")
    ap.add_argument("--criteria", default="10,5,3", help="iterations per level, coarse to fine")
    ap.add_argument("--min_fitness", type=float, default=0.0, help="a pair at or below this fitness has failed")
    ap.add_argument("--ranges", default=None, help="ground-truth line ranges for ATE/RPE by part (default "
                    "0:122,122:300 for redkitchen, none otherwise)")
    ap.add_argument("--out", default="", help="TUM trajectory of the frame-to-frame estimate")
    ap.add_argument("--json", default="", help="merge the results (settings, timings, metrics) into this JSON file, "
                    "under runs[LABEL]")
    ap.add_argument("--label", default="", help="run label in the JSON (default open3d-VERSION-IMPL-tTHREADS)")
    ap.add_argument("--f2m", action="store_true", help="also run frame-to-model tracking (VoxelBlockGrid)")
    ap.add_argument("--f2m_out", default="", help="TUM trajectory of the frame-to-model estimate")
    ap.add_argument("--voxel_size", type=float, default=None, help="f2m voxel (default 3/512 m; 0.1 m depth-folder)")
    ap.add_argument("--block_count", type=int, default=40000)
    return resolve_defaults(ap, ap.parse_args(argv))


def resolve_defaults(ap, a):
    """Fills the per-dataset defaults (no numpy needed)."""
    if a.data is None:
        if a.dataset == "depth-folder":
            ap.error("--dataset depth-folder needs --data DIR")
        a.data = DEFAULT_DATA if a.dataset == "redkitchen" else DEFAULT_TUM
    if a.groundtruth is None:
        if a.dataset == "depth-folder":
            ap.error("--dataset depth-folder needs --groundtruth (TUM trajectory or KITTI poses.txt)")
        a.groundtruth = os.path.join(a.data, "groundtruth.txt")
    if a.intrinsics is None:
        a.intrinsics = TUM_FR1_K if a.dataset == "tum" else os.path.join(a.data, "camera-intrinsics.txt")
    if a.depth_scale is None:
        a.depth_scale = {"redkitchen": 1000.0, "tum": 5000.0}.get(a.dataset)
        if a.depth_scale is None:
            a.depth_scale = 1.0
            f = os.path.join(a.data, "depth-scale.txt")
            if os.path.exists(f):
                with open(f) as fh:
                    a.depth_scale = float([x for x in fh.read().split("\n") if x.strip() and
                                           not x.lstrip().startswith("#")][0].split()[0])
    if a.depth_max is None:
        a.depth_max = {"redkitchen": 3.0, "tum": 4.0, "depth-folder": 30.0}[a.dataset]
    if a.last is None and a.dataset == "redkitchen":
        a.last = 299
    if a.ranges is None:
        a.ranges = "0:122,122:300" if a.dataset == "redkitchen" else ""
    if a.voxel_size is None:
        a.voxel_size = 0.1 if a.dataset == "depth-folder" else 3.0 / 512
    return a


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
    try:
        import numpy  # noqa: F401
        import open3d  # noqa: F401
    except ImportError as e:
        # Debian's python3-open3d is in the system interpreter's dist-packages; re-run under it.
        if os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and os.access(SYSTEM_PYTHON, os.X_OK):
            os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON] + sys.argv)
        if os.environ.get("CI") == "true":
            raise
        print("s3d: skipped: open3d or numpy not importable (apt-get install python3-open3d): %s" % e)
        sys.exit(0)
    if not os.path.exists(ARGS.groundtruth) or not os.path.isdir(ARGS.data):
        if os.environ.get("CI") == "true":
            sys.exit("no data at %s (ground truth %s)" % (ARGS.data, ARGS.groundtruth))
        print("s3d: skipped: no data at %s (ground truth %s; set S3D_DATA_DIR, --data or --groundtruth)" % (
            ARGS.data, ARGS.groundtruth))
        sys.exit(0)

import numpy as np  # noqa: E402
import open3d as o3d  # noqa: E402

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import trajectory_eval as te  # noqa: E402

CPU = o3d.core.Device("CPU:0")
OD = o3d.t.pipelines.odometry
NAN = float("nan")


# ------------------------------------------------------------------------------------------------ numpy stand-ins
def pyrdown_depth(d, depth_diff):
    """Open3D Image::PyrDownDepth: output (y, x) from source (2y, 2x), 5x5 Gaussian [1 4 6 4 1]/16 weights over the
    neighbours (clamped to the image) that are valid and within depth_diff of the centre; NaN centre -> NaN."""
    h, w = d.shape
    hd, wd = (h + 1) // 2, (w + 1) // 2
    c = d[0:2 * hd:2, 0:2 * wd:2]
    wts = (0.375, 0.25, 0.0625)
    vs = np.zeros((hd, wd), np.float64)
    ws = np.zeros((hd, wd), np.float64)
    ys = np.arange(hd) * 2
    xs = np.arange(wd) * 2
    for dy in range(-2, 3):
        yy = ys + dy
        vy = (yy >= 0) & (yy < h)
        yy = np.clip(yy, 0, h - 1)
        for dx in range(-2, 3):
            xx = xs + dx
            vx = (xx >= 0) & (xx < w)
            xx = np.clip(xx, 0, w - 1)
            v = d[yy][:, xx]
            ok = vy[:, None] & vx[None, :] & np.isfinite(v) & (np.abs(v - c) < depth_diff)
            wgt = wts[abs(dx)] * wts[abs(dy)]
            vs += np.where(ok, wgt * v, 0.0)
            ws += np.where(ok, wgt, 0.0)
    out = np.where(ws > 0, vs / np.where(ws > 0, ws, 1.0), NAN).astype(np.float32)
    out[~np.isfinite(c)] = NAN
    return out


def bilateral(d, ksize=5, value_sigma=5.0, dist_sigma=10.0):
    """Open3D Image::FilterBilateral(5, 5, 10) stand-in on a float depth map (NaN = invalid). Matches Open3D 0.19's
    IPP result on these frames to 1e-6 m inside the image (checked): a circular window (dx^2 + dy^2 <= 2^2, 13
    taps), weights exp(-r^2 / (2 dist_sigma^2)) * exp(-dv^2 / (2 value_sigma^2)), and NaN propagates (a NaN in the
    window makes the output NaN). Border: replicated."""
    r = ksize // 2
    h, w = d.shape
    p = np.pad(d, r, mode="edge")
    vs = np.zeros((h, w), np.float64)
    ws = np.zeros((h, w), np.float64)
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            if dx * dx + dy * dy > r * r:
                continue
            v = p[r + dy:r + dy + h, r + dx:r + dx + w]
            wgt = np.exp(-(dx * dx + dy * dy) / (2 * dist_sigma ** 2)) * np.exp(-(v - d) ** 2 / (2 * value_sigma ** 2))
            vs += wgt * v
            ws += wgt
    return (vs / ws).astype(np.float32)


def _rel(prev, cur):
    """|prev - cur| / prev with C++ float semantics (x / 0 = inf, 0 / 0 = NaN: both fail a `<` test)."""
    if prev == 0:
        return math.inf if prev != cur else math.nan
    return abs(prev - cur) / prev


def _img(a):
    return o3d.t.geometry.Image(o3d.core.Tensor(np.ascontiguousarray(a[..., None] if a.ndim == 2 else a)))


# ------------------------------------------------------------------------------------------------------ odometry
class Odometry:
    def __init__(self, K, impl, depth_scale, depth_max, criteria, params=None):
        self.K = o3d.core.Tensor(np.asarray(K, np.float64))
        self.K_np = np.asarray(K, np.float64)
        self.impl = impl
        self.depth_scale = depth_scale
        self.depth_max = depth_max
        self.criteria_iters = list(criteria)
        self.criteria = [OD.OdometryConvergenceCriteria(n) for n in criteria]
        self.params = params or OD.OdometryLossParams()
        self.kernel_s = 0.0

    def run(self, src, tgt, init=None):
        """src, tgt: dicts with 'depth' (t Image uint16 or float raw units) and 'color'. Returns OdometryResult-like
        (transformation 4x4 numpy, fitness, inlier_rmse)."""
        init = np.eye(4) if init is None else init
        if self.impl == "api":
            r = OD.rgbd_odometry_multi_scale(
                o3d.t.geometry.RGBDImage(src["color"], src["depth"]), o3d.t.geometry.RGBDImage(tgt["color"], tgt["depth"]),
                self.K, o3d.core.Tensor(init), self.depth_scale, self.depth_max, self.criteria, OD.Method.PointToPlane,
                self.params)
            return r.transformation.numpy(), r.fitness, r.inlier_rmse
        return self._replica(src["depth"], tgt["depth"], init)

    def _replica(self, src_depth, tgt_depth, init):
        n = len(self.criteria_iters)
        trunc = self.params.depth_outlier_trunc
        s = src_depth.clip_transform(self.depth_scale, 0.0, self.depth_max, NAN).as_tensor().numpy()[..., 0]
        t = tgt_depth.clip_transform(self.depth_scale, 0.0, self.depth_max, NAN).as_tensor().numpy()[..., 0]
        K = self.K_np.copy()
        sv, tv, tn, Ks = [None] * n, [None] * n, [None] * n, [None] * n
        for i in range(n):
            # finest level first while building, stored coarse-first as Open3D does
            Kt = o3d.core.Tensor(K)
            sv[n - 1 - i] = _img(s).create_vertex_map(Kt, NAN).as_tensor()
            tv[n - 1 - i] = _img(t).create_vertex_map(Kt, NAN).as_tensor()
            tn[n - 1 - i] = _img(bilateral(t)).create_vertex_map(Kt, NAN).create_normal_map(NAN).as_tensor()
            Ks[n - 1 - i] = Kt
            if i != n - 1:
                s = pyrdown_depth(s, trunc * 2)
                t = pyrdown_depth(t, trunc * 2)
                K = K / 2
                K[2, 2] = 1
        T = np.asarray(init, np.float64)
        fitness, rmse = 1.0, 0.0
        for lvl in range(n):
            for _ in range(self.criteria_iters[lvl]):
                k0 = time.perf_counter()
                d = OD.compute_odometry_result_point_to_plane(sv[lvl], tv[lvl], tn[lvl], Ks[lvl], o3d.core.Tensor(T),
                                                              trunc, self.params.depth_huber_delta)
                self.kernel_s += time.perf_counter() - k0
                T = d.transformation.numpy() @ T
                if (_rel(fitness, d.fitness) < self.criteria[lvl].relative_fitness
                        and _rel(rmse, d.inlier_rmse) < self.criteria[lvl].relative_rmse):
                    break
                rmse, fitness = d.inlier_rmse, d.fitness
        return T, fitness, rmse


# ---------------------------------------------------------------------------------------------------------- data
def load_frame(data, i):
    return {"depth": o3d.t.io.read_image(os.path.join(data, "frame-%06d.depth.png" % i)),
            "color": o3d.t.io.read_image(os.path.join(data, "frame-%06d.color.jpg" % i))}


GREY_NOTE = ("no colour: RGBDImage gets a constant grey (128) 8-bit RGB image; PointToPlane does not use colour "
             "(the replica never reads it)")


def grey_like(depth):
    return o3d.t.geometry.Image(o3d.core.Tensor(np.full((depth.rows, depth.columns, 3), 128, np.uint8)))


def read_pfm(path):
    """Grey PFM (Pf) as float32 (h, w), top row first (PFM stores rows bottom to top; scale < 0: little endian)."""
    with open(path, "rb") as f:
        kind = f.readline().strip()
        if kind != b"Pf":
            raise ValueError("%s: not a one-channel PFM (%r)" % (path, kind))
        dims = f.readline().split()
        while len(dims) < 2:
            dims += f.readline().split()
        w, h = int(dims[0]), int(dims[1])
        scale = float(f.readline())
        a = np.fromfile(f, dtype="<f4" if scale < 0 else ">f4", count=w * h)
    if a.size != w * h:
        raise ValueError("%s: %d values, expected %d" % (path, a.size, w * h))
    return np.ascontiguousarray(a.reshape(h, w)[::-1]).astype(np.float32)


def parse_intrinsics(spec):
    """'fx,fy,cx,cy' or a text file with the 3x3 K."""
    if os.path.exists(spec):
        K = np.loadtxt(spec)
        if K.shape != (3, 3):
            raise ValueError("%s: expected a 3x3 K, got shape %s" % (spec, K.shape))
        return K
    fx, fy, cx, cy = [float(x) for x in spec.split(",")]
    return np.array([[fx, 0, cx], [0, fy, cy], [0, 0, 1]], np.float64)


def read_groundtruth(path, fps):
    """TUM trajectory, or KITTI poses.txt (12 numbers per line: 3x4 camera to world, line k at t = k / fps)."""
    with open(path) as f:
        rows = [ln.split() for ln in f if ln.strip() and not ln.lstrip().startswith("#")]
    if rows and len(rows[0]) == 12:
        poses = np.stack([np.vstack([np.array(r, np.float64).reshape(3, 4), [0, 0, 0, 1]]) for r in rows])
        return np.arange(len(rows)) / fps, poses, "KITTI poses.txt (3x4 camera to world), line k at t = k / %g s" % fps
    stamps, poses = te.read_tum(path)
    return stamps, poses, "TUM trajectory (camera to world)"


def load_sequence(args):
    """Returns a dict: K, frames, stamps (per frame), gt_stamps, gt_poses, pose0, notes."""
    K = parse_intrinsics(args.intrinsics)
    gt_stamps, gt_poses, gt_format = read_groundtruth(args.groundtruth, args.fps)
    seq = {"K": K, "gt_stamps": gt_stamps, "gt_poses": gt_poses, "gt_format": gt_format, "colour": None}
    if args.dataset == "redkitchen":
        idx = list(range(args.first, args.last + 1))
        seq["frames"] = [load_frame(args.data, i) for i in idx]
        seq["stamps"] = gt_stamps[idx]
        seq["pose0"] = gt_poses[args.first]
        seq["colour"] = "frame-NNNNNN.color.jpg"
        return seq
    if args.dataset == "tum":
        items = []
        with open(os.path.join(args.data, "depth.txt")) as f:
            for ln in f:
                if ln.strip() and not ln.lstrip().startswith("#"):
                    t, rel = ln.split()[:2]
                    items.append((float(t), os.path.join(args.data, rel)))
    else:
        names = sorted(n for n in os.listdir(args.data)
                       if n.endswith("_depth.pfm") or n.endswith("_depth.png") or
                       (n.endswith(".pfm") and not n.startswith(".")))
        if not names:
            raise SystemExit("no NAME_depth.pfm / NAME_depth.png maps in %s" % args.data)
        items = [(k / args.fps, os.path.join(args.data, n)) for k, n in enumerate(names)]
    last = len(items) - 1 if args.last is None else args.last
    items = items[args.first:last + 1]
    args.last = args.first + len(items) - 1
    frames = []
    for _, path in items:
        if path.endswith(".pfm"):
            d = read_pfm(path)
            d[~np.isfinite(d) | (d <= 0)] = 0.0  # +inf (sgm-depth's invalid) -> 0, Open3D's invalid
            depth = o3d.t.geometry.Image(o3d.core.Tensor(d[..., None]))
        else:
            depth = o3d.t.io.read_image(path)
        frames.append({"depth": depth, "color": grey_like(depth), "path": path})
    seq["frames"] = frames
    seq["stamps"] = np.array([t for t, _ in items], np.float64)
    pairs = te.associate(seq["stamps"][:1], gt_stamps)
    if not pairs:
        raise SystemExit("no ground-truth pose within %.3f s of the first frame (t = %.6f)" % (te.MAX_DIFFERENCE,
                                                                                              seq["stamps"][0]))
    seq["pose0"] = gt_poses[pairs[0][1]]
    seq["colour"] = GREY_NOTE
    return seq


def loss_params(args):
    return OD.OdometryLossParams(args.depth_outlier_trunc, args.depth_huber_delta)


def choose_impl(args, K, frames):
    if args.impl != "auto":
        return args.impl, None
    od = Odometry(K, "api", args.depth_scale, args.depth_max, [int(x) for x in args.criteria.split(",")],
                  loss_params(args))
    try:
        od.run(frames[1], frames[0])
        return "api", None
    except RuntimeError as e:
        return "replica", re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip().split("\n")[0][:300]


def track_f2f(args, K, frames, stamps, pose0, impl):
    od = Odometry(K, impl, args.depth_scale, args.depth_max, [int(x) for x in args.criteria.split(",")],
                  loss_params(args))
    poses, ms, cpu_ms, fits, failed = [pose0], [], [], [], []
    for k in range(1, len(frames)):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            T, fit, rmse = od.run(frames[k], frames[k - 1])
            ok = np.all(np.isfinite(T)) and fit > args.min_fitness
        except RuntimeError:
            T, fit, ok = np.eye(4), 0.0, False
        ms.append((time.perf_counter() - t0) * 1e3)
        cpu_ms.append((time.process_time() - c0) * 1e3)
        fits.append(float(fit))
        if not ok:
            failed.append(args.first + k)
            T = np.eye(4)
        poses.append(poses[-1] @ T)
    return np.stack(poses), ms, cpu_ms, fits, failed, od.kernel_s


def track_f2m(args, K, frames, pose0, impl):
    """Frame-to-model as o3d.t.pipelines.slam.Model (dense_slam.py): track against the ray cast of the previous
    pose, then integrate at the new pose."""
    od = Odometry(K, impl, args.depth_scale, args.depth_max, [6, 3, 1], loss_params(args))
    vbg = o3d.t.geometry.VoxelBlockGrid(("tsdf", "weight"), (o3d.core.float32, o3d.core.float32), ((1), (1)),
                                        args.voxel_size, 16, args.block_count, CPU)
    Kt = o3d.core.Tensor(np.asarray(K, np.float64))
    h, w = frames[0]["depth"].rows, frames[0]["depth"].columns
    poses, ms, ms_total, failed = [pose0], [], [], []
    trunc_mult = 8.0

    def integrate(frame, pose):
        ext = o3d.core.Tensor(np.linalg.inv(pose))
        blocks = vbg.compute_unique_block_coordinates(frame["depth"], Kt, ext, args.depth_scale, args.depth_max,
                                                      trunc_mult)
        vbg.integrate(blocks, frame["depth"], Kt, ext, args.depth_scale, args.depth_max, trunc_mult)
        return blocks

    blocks = integrate(frames[0], pose0)
    for k in range(1, len(frames)):
        t0 = time.perf_counter()
        # slam.Model::SynthesizeModelFrame: the blocks of the last integration, weight threshold min(frame, 3)
        ext = o3d.core.Tensor(np.linalg.inv(poses[-1]))
        rc = vbg.ray_cast(blocks, Kt, ext, w, h, ["depth"], args.depth_scale, 0.1, args.depth_max, min(float(k), 3.0),
                          trunc_mult)
        model = {"depth": o3d.t.geometry.Image(rc["depth"].contiguous()), "color": frames[k]["color"]}
        t1 = time.perf_counter()
        try:
            T, fit, _ = od.run(frames[k], model)
            ok = np.all(np.isfinite(T)) and fit > args.min_fitness
        except RuntimeError:
            T, fit, ok = np.eye(4), 0.0, False
        ms.append((time.perf_counter() - t1) * 1e3)
        if not ok:
            failed.append(args.first + k)
            T = np.eye(4)
        poses.append(poses[-1] @ T)
        blocks = integrate(frames[k], poses[-1])
        ms_total.append((time.perf_counter() - t0) * 1e3)
    return np.stack(poses), ms, ms_total, failed


def summary(res):
    out = {"ate_rmse_m": res["ate_m"]["rmse"],
           "rpe_1frame_trans_rmse_m": res["rpe"]["delta_1_frame"]["trans_m"]["rmse"],
           "rpe_1frame_rot_rmse_deg": res["rpe"]["delta_1_frame"]["rot_deg"]["rmse"],
           "rpe_1frame_trans_median_m": res["rpe"]["delta_1_frame"]["trans_m"]["median"],
           "rpe_1frame_rot_median_deg": res["rpe"]["delta_1_frame"]["rot_deg"]["median"],
           "rpe_1s_trans_rmse_m": res["rpe"]["delta_1s"]["trans_m"]["rmse"],
           "rpe_1s_rot_rmse_deg": res["rpe"]["delta_1s"]["rot_deg"]["rmse"]}
    for r in res["ranges"]:
        if "ate_m" in r:
            out["ate_rmse_m_" + r["range"]] = r["ate_m"]["rmse"]
            out["ate_rmse_m_" + r["range"] + "_global_alignment"] = r["ate_m_global_alignment"]["rmse"]
    return out


def main(args):
    seq = load_sequence(args)
    K, frames, stamps, pose0 = seq["K"], seq["frames"], seq["stamps"], seq["pose0"]
    gt_stamps, gt_poses = seq["gt_stamps"], seq["gt_poses"]
    impl, why = choose_impl(args, K, frames)
    print("open3d %s, impl %s%s, threads %d, frames %d..%d" % (o3d.__version__, impl,
                                                              (" (api: %s)" % why) if why else "", args.threads,
                                                              args.first, args.last))
    if args.dataset != "redkitchen":
        print("dataset %s %s: %d frames %dx%d, K fx %.4f fy %.4f cx %.4f cy %.4f, depth_scale %g, depth_max %g m, "
              "ground truth %s (%s); %s" % (args.dataset, args.data, len(frames), frames[0]["depth"].columns,
                                            frames[0]["depth"].rows, K[0, 0], K[1, 1], K[0, 2], K[1, 2],
                                            args.depth_scale, args.depth_max, args.groundtruth, seq["gt_format"],
                                            seq["colour"]))
    ranges = te.parse_ranges(args.ranges)
    t0 = time.perf_counter()
    poses, ms, cpu_ms, fits, failed, kernel_s = track_f2f(args, K, frames, stamps, pose0, impl)
    wall = time.perf_counter() - t0
    if args.out:
        te.write_tum(args.out, stamps, poses)
    res = te.evaluate(gt_stamps, gt_poses, stamps, poses, ranges=ranges)
    print("frame-to-frame: median %.2f ms per pair (CPU time %.2f; mean %.2f, min %.2f, max %.2f%s), failed %d %s, "
          "fitness min %.3f median %.3f, total %.1f s" % (
              np.median(ms), np.median(cpu_ms), np.mean(ms), np.min(ms), np.max(ms),
              ("; Open3D kernel %.2f ms mean" % (kernel_s * 1e3 / max(1, len(ms)))) if impl == "replica" else "",
              len(failed), failed[:10], np.min(fits), np.median(fits), wall))
    print(te.format_report(res))
    # Evaluator sanity: gt vs itself and vs a rigidly moved copy (both 0 after SE(3) alignment).
    M = np.eye(4)
    M[:3, :3] = te.rot_from_quat(0.2, -0.3, 0.1, 0.9)
    M[:3, 3] = [1.5, -2.0, 0.7]
    self_res = te.evaluate(gt_stamps, gt_poses, gt_stamps, gt_poses)
    moved_res = te.evaluate(gt_stamps, gt_poses, gt_stamps, np.einsum("ij,njk->nik", M, gt_poses))
    sanity = {"gt_vs_gt_ate_rmse_m": self_res["ate_m"]["rmse"], "gt_vs_rigidly_moved_gt_ate_rmse_m":
              moved_res["ate_m"]["rmse"], "gt_vs_rigidly_moved_gt_rpe_1frame_trans_rmse_m":
              moved_res["rpe"]["delta_1_frame"]["trans_m"]["rmse"]}
    print("evaluator sanity: %s" % sanity)
    if args.dataset == "redkitchen":
        sequence = "7scenes redkitchen frames %d..%d (%s)" % (args.first, args.last, os.path.basename(args.data))
    else:
        sequence = "%s frames %d..%d of %s (%d frames)" % (args.dataset, args.first, args.last,
                                                           os.path.basename(os.path.normpath(args.data)), len(frames))
    out = {
        "sequence": sequence,
        "open3d_version": o3d.__version__, "python": platform.python_version(), "numpy": np.__version__,
        "machine": platform.machine(), "cpu": _cpu_name(), "threads": args.threads,
        "settings": {"method": "PointToPlane", "impl": impl, "api_error": why, "device": "CPU:0",
                     "criteria_coarse_to_fine": [int(x) for x in args.criteria.split(",")],
                     "relative_rmse": 1e-6, "relative_fitness": 1e-6,
                     "depth_outlier_trunc": args.depth_outlier_trunc, "depth_huber_delta": args.depth_huber_delta,
                     "depth_scale": args.depth_scale, "depth_max": args.depth_max,
                     "init": "identity", "chain": "pose_i = pose_{i-1} @ T(source=i -> target=i-1)",
                     "first_pose": "ground truth", "min_fitness": args.min_fitness},
        "dataset": {"kind": args.dataset, "data": args.data, "frames": len(frames),
                    "size_wh": [frames[0]["depth"].columns, frames[0]["depth"].rows], "K": K.tolist(),
                    "intrinsics": args.intrinsics, "groundtruth": args.groundtruth,
                    "groundtruth_format": seq["gt_format"], "colour": seq["colour"],
                    "stamps": "ground-truth line stamps" if args.dataset == "redkitchen" else
                    ("depth.txt" if args.dataset == "tum" else "k / %g s" % args.fps)},
        "frame_to_frame": {"ms_per_pair_median": float(np.median(ms)), "ms_per_pair_mean": float(np.mean(ms)),
                           "cpu_ms_per_pair_median": float(np.median(cpu_ms)),
                           "load_average_1_5_15": list(os.getloadavg()),
                           "kernel_ms_per_pair_mean": kernel_s * 1e3 / max(1, len(ms)) if impl == "replica" else None,
                           "pairs": len(ms), "failed": len(failed), "failed_frames": failed,
                           "fitness_min": float(np.min(fits)), "fitness_median": float(np.median(fits)),
                           "summary": summary(res), "metrics": res},
        "evaluator_sanity": sanity,
    }
    if args.f2m:
        t0 = time.perf_counter()
        fposes, fms, ftot, ffailed = track_f2m(args, K, frames, pose0, impl)
        fwall = time.perf_counter() - t0
        if args.f2m_out:
            te.write_tum(args.f2m_out, stamps, fposes)
        fres = te.evaluate(gt_stamps, gt_poses, stamps, fposes, ranges=ranges)
        print("frame-to-model: median %.2f ms odometry, %.2f ms per frame with ray cast + integration, failed %d, "
              "total %.1f s" % (np.median(fms), np.median(ftot), len(ffailed), fwall))
        print(te.format_report(fres))
        out["frame_to_model"] = {"voxel_size": args.voxel_size, "block_resolution": 16, "block_count": args.block_count,
                                 "trunc_voxel_multiplier": 8.0, "criteria_coarse_to_fine": [6, 3, 1],
                                 "raycast": "depth, from the previous pose, depth_min 0.1, weight_threshold min(frame, 3)",
                                 "ms_odometry_median": float(np.median(fms)),
                                 "ms_per_frame_median_with_raycast_integration": float(np.median(ftot)),
                                 "ms_per_frame_mean_with_raycast_integration": float(np.mean(ftot)),
                                 "failed": len(ffailed), "failed_frames": ffailed, "summary": summary(fres),
                                 "metrics": fres}
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        doc = {}
        if os.path.exists(args.json):
            with open(args.json) as f:
                doc = json.load(f)
        doc.setdefault("description", "Open3D PointToPlane RGB-D odometry baseline on %s "
                       "(tests/accuracy/open3d_odometry.py); metrics by tests/accuracy/trajectory_eval.py" % (
                           "7-Scenes redkitchen" if args.dataset == "redkitchen" else sequence))
        label = args.label or "open3d-%s-%s-t%d" % (o3d.__version__, impl, args.threads)
        out["command"] = " ".join([os.path.basename(sys.executable)] + sys.argv)
        doc.setdefault("runs", {})[label] = out
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    return 0


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    sys.exit(main(ARGS))
