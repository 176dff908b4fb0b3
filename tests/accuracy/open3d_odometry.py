#!/usr/bin/env python3
"""Open3D baseline for icp-fuse: tensor RGB-D odometry (PointToPlane, multi-scale) on the 7-Scenes redkitchen frames.

Frame-to-frame: source = frame i, target = frame i-1; Open3D returns T (source to target), so
pose_i = pose_{i-1} @ T, starting from the ground-truth pose of the first frame (camera to world). Initial guess:
identity (as KinFu / Open3D's examples). A failed pair (exception, non-finite T, fitness <= --min_fitness) keeps the
previous pose and is counted. Settings (Open3D defaults, FUSION.md section 7): 3 levels, criteria {10, 5, 3} coarse to
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

Usage: python3 open3d_odometry.py [--data DIR] [--first 0] [--last 299] [--out est.tum] [--json results.json] [--f2m]
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


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="Open3D PointToPlane odometry baseline on 7-Scenes redkitchen")
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--last", type=int, default=299, help="inclusive")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--impl", choices=["auto", "api", "replica"], default="auto")
    ap.add_argument("--depth_max", type=float, default=3.0)
    ap.add_argument("--depth_scale", type=float, default=1000.0)
    ap.add_argument("--criteria", default="10,5,3", help="iterations per level, coarse to fine")
    ap.add_argument("--min_fitness", type=float, default=0.0, help="a pair at or below this fitness has failed")
    ap.add_argument("--ranges", default="0:122,122:300")
    ap.add_argument("--out", default="", help="TUM trajectory of the frame-to-frame estimate")
    ap.add_argument("--json", default="", help="merge the results (settings, timings, metrics) into this JSON file, "
                    "under runs[LABEL]")
    ap.add_argument("--label", default="", help="run label in the JSON (default open3d-VERSION-IMPL-tTHREADS)")
    ap.add_argument("--f2m", action="store_true", help="also run frame-to-model tracking (VoxelBlockGrid)")
    ap.add_argument("--f2m_out", default="", help="TUM trajectory of the frame-to-model estimate")
    ap.add_argument("--voxel_size", type=float, default=3.0 / 512)
    ap.add_argument("--block_count", type=int, default=40000)
    return ap.parse_args(argv)


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
    if not os.path.exists(os.path.join(ARGS.data, "groundtruth.txt")):
        if os.environ.get("CI") == "true":
            sys.exit("no data at %s" % ARGS.data)
        print("s3d: skipped: no data at %s (set S3D_DATA_DIR or --data)" % ARGS.data)
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


def choose_impl(args, K, frames):
    if args.impl != "auto":
        return args.impl, None
    od = Odometry(K, "api", args.depth_scale, args.depth_max, [int(x) for x in args.criteria.split(",")])
    try:
        od.run(frames[1], frames[0])
        return "api", None
    except RuntimeError as e:
        return "replica", re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip().split("\n")[0][:300]


def track_f2f(args, K, frames, stamps, pose0, impl):
    od = Odometry(K, impl, args.depth_scale, args.depth_max, [int(x) for x in args.criteria.split(",")])
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
    od = Odometry(K, impl, args.depth_scale, args.depth_max, [6, 3, 1], OD.OdometryLossParams(0.07))
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
           "rpe_1s_trans_rmse_m": res["rpe"]["delta_1s"]["trans_m"]["rmse"],
           "rpe_1s_rot_rmse_deg": res["rpe"]["delta_1s"]["rot_deg"]["rmse"]}
    for r in res["ranges"]:
        if "ate_m" in r:
            out["ate_rmse_m_" + r["range"]] = r["ate_m"]["rmse"]
            out["ate_rmse_m_" + r["range"] + "_global_alignment"] = r["ate_m_global_alignment"]["rmse"]
    return out


def main(args):
    K = np.loadtxt(os.path.join(args.data, "camera-intrinsics.txt"))
    gt_stamps, gt_poses = te.read_tum(os.path.join(args.data, "groundtruth.txt"))
    idx = list(range(args.first, args.last + 1))
    frames = [load_frame(args.data, i) for i in idx]
    stamps = gt_stamps[idx]
    pose0 = gt_poses[args.first]
    impl, why = choose_impl(args, K, frames)
    print("open3d %s, impl %s%s, threads %d, frames %d..%d" % (o3d.__version__, impl,
                                                              (" (api: %s)" % why) if why else "", args.threads,
                                                              args.first, args.last))
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
    out = {
        "sequence": "7scenes redkitchen frames %d..%d (%s)" % (args.first, args.last, os.path.basename(args.data)),
        "open3d_version": o3d.__version__, "python": platform.python_version(), "numpy": np.__version__,
        "machine": platform.machine(), "cpu": _cpu_name(), "threads": args.threads,
        "settings": {"method": "PointToPlane", "impl": impl, "api_error": why, "device": "CPU:0",
                     "criteria_coarse_to_fine": [int(x) for x in args.criteria.split(",")],
                     "relative_rmse": 1e-6, "relative_fitness": 1e-6, "depth_outlier_trunc": 0.07,
                     "depth_huber_delta": 0.05, "depth_scale": args.depth_scale, "depth_max": args.depth_max,
                     "init": "identity", "chain": "pose_i = pose_{i-1} @ T(source=i -> target=i-1)",
                     "first_pose": "ground truth", "min_fitness": args.min_fitness},
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
                                 "failed": len(ffailed), "failed_frames": ffailed, "summary": summary(fres),
                                 "metrics": fres}
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        doc = {}
        if os.path.exists(args.json):
            with open(args.json) as f:
                doc = json.load(f)
        doc.setdefault("description", "Open3D PointToPlane RGB-D odometry baseline on 7-Scenes redkitchen "
                       "(tests/accuracy/open3d_odometry.py); metrics by tests/accuracy/trajectory_eval.py")
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
