#!/usr/bin/python3
"""Open3D on KITTI odometry 02 through sgm-depth: does a photometric term make frame-to-frame RGB-D odometry track KITTI odometry 02 (frames 0-50) with
sgm-depth stereo depth, where depth-only point-to-plane fails?  Open3D 0.16.1 (Debian, no IPP), CPU, 1 thread.

Methods:
  legacy-hybrid     o3d.pipelines.odometry.compute_rgbd_odometry, RGBDOdometryJacobianFromHybridTerm
  legacy-color      o3d.pipelines.odometry.compute_rgbd_odometry, RGBDOdometryJacobianFromColorTerm
  t-hybrid          tensor pipeline RGBDOdometryMultiScaleHybrid   (replica, see below)
  t-intensity       tensor pipeline RGBDOdometryMultiScaleIntensity (replica)
  t-p2plane         tensor pipeline RGBDOdometryMultiScalePointToPlane (replica from tests/accuracy/open3d_odometry.py),
                    the depth-only reference
Tensor "replica": o3d.t.pipelines.odometry.rgbd_odometry_multi_scale raises on this build (RGBToGray / FilterSobel /
FilterBilateral are IPP-only on CPU). The replica runs Open3D's multi-scale loop (RGBDOdometry.cpp) with Open3D's own
per-iteration kernels (compute_odometry_result_hybrid / _intensity / _point_to_plane, create_vertex_map) and numpy
stand-ins for RGBToGray (input is already grey), FilterSobel (3x3, unnormalised, +x / +y; the kernel applies 1/8),
PyrDown (FilterGaussian(5, sigma 1) then nearest 0.5 resize = every 2nd pixel) and PyrDownDepth (5x5 [1 4 6 4 1]/16
over neighbours within 2*depth_outlier_trunc, output floor(h/2) x floor(w/2)).

Convention: source = frame i, target = frame i-1, T = source->target, pose_i = pose_{i-1} @ T, pose_0 = GT pose 0.
Init: 'cv' = previous pair's estimated T (identity for the first pair), 'id' = identity.
A failed pair (legacy success False, exception, non-finite T) contributes identity (keeps the previous pose).
"""
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.dont_write_bytecode = True
import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import open3d as o3d  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trajectory_eval as te  # noqa: E402
import open3d_odometry as oo  # noqa: E402  (read_pfm, Odometry replica for PointToPlane)

D = os.path.join(os.environ.get("S3D_DATA_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../shared/data")),
                 "stereo_sequences", "kitti_odometry_02_f000-050")
FX = FY = 718.856
CX, CY = 607.1928, 185.2157
NAN = float("nan")
OD = o3d.t.pipelines.odometry


def read_kitti_poses(path):
    P = []
    for ln in open(path):
        if ln.strip():
            P.append(np.vstack([np.array(ln.split(), np.float64).reshape(3, 4), [0, 0, 0, 1]]))
    return np.stack(P)


# ------------------------------------------------------------------------------------- numpy stand-ins (no IPP)
def sobel(a):
    """3x3 Sobel, unnormalised, replicated border; NaN propagates. Returns (d/dx, d/dy), +x right, +y down."""
    p = np.pad(a, 1, mode="edge").astype(np.float32)
    h, w = a.shape
    s = lambda dy, dx: p[1 + dy:1 + dy + h, 1 + dx:1 + dx + w]  # noqa: E731
    gx = (s(-1, 1) + 2 * s(0, 1) + s(1, 1)) - (s(-1, -1) + 2 * s(0, -1) + s(1, -1))
    gy = (s(1, -1) + 2 * s(1, 0) + s(1, 1)) - (s(-1, -1) + 2 * s(-1, 0) + s(-1, 1))
    return gx.astype(np.float32), gy.astype(np.float32)


G5 = np.exp(-np.arange(-2, 3) ** 2 / 2.0)
G5 = G5 / G5.sum()


def pyrdown(a):
    """FilterGaussian(5, 1.0) (separable, replicated border) then nearest 0.5 resize (every 2nd pixel)."""
    h, w = a.shape
    p = np.pad(a, 2, mode="edge").astype(np.float64)
    t = sum(G5[k] * p[:, k:k + w] for k in range(5))
    b = sum(G5[k] * t[k:k + h, :] for k in range(5))
    return np.ascontiguousarray(b[0:(h // 2) * 2:2, 0:(w // 2) * 2:2]).astype(np.float32)


def pyrdown_depth(d, depth_diff):
    """Open3D PyrDownDepth: dst floor(h/2) x floor(w/2), centre src(2y, 2x), 5x5 [1 4 6 4 1]/16 over valid neighbours
    within depth_diff of the centre; NaN centre -> NaN. Not open3d_odometry.pyrdown_depth, which rounds the size up
    (ceil): this one's output must match the intensity pyramid's floor(h/2) x floor(w/2) on KITTI's odd width."""
    h, w = d.shape
    hd, wd = h // 2, w // 2
    c = d[0:2 * hd:2, 0:2 * wd:2]
    wts = (0.375, 0.25, 0.0625)
    vs = np.zeros((hd, wd))
    ws = np.zeros((hd, wd))
    ys, xs = np.arange(hd) * 2, np.arange(wd) * 2
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
            wg = wts[abs(dx)] * wts[abs(dy)]
            vs += np.where(ok, wg * v, 0.0)
            ws += np.where(ok, wg, 0.0)
    out = np.where(ws > 0, vs / np.where(ws > 0, ws, 1), NAN).astype(np.float32)
    out[~np.isfinite(c)] = NAN
    return out


def T1(a):
    a = np.ascontiguousarray(a, np.float32)
    return o3d.core.Tensor(a[..., None] if a.ndim == 2 else a)


class TensorPhoto:
    """Replica of RGBDOdometryMultiScaleHybrid / Intensity (Open3D 0.16 RGBDOdometry.cpp)."""

    def __init__(self, method, criteria, params, depth_max):
        self.method, self.criteria, self.params, self.depth_max = method, criteria, params, depth_max
        self.K = np.array([[FX, 0, CX], [0, FY, CY], [0, 0, 1]], np.float64)

    def pyramid(self, depth, grey):
        """depth: metres (NaN invalid, already clipped); grey float32 [0, 1]. Coarse level first."""
        n = len(self.criteria)
        lv = [None] * n
        d, g, K = depth, grey, self.K.copy()
        for i in range(n):
            Kt = o3d.core.Tensor(K)
            vm = o3d.t.geometry.Image(T1(d)).create_vertex_map(Kt, NAN).as_tensor()
            gdx, gdy = sobel(g)
            ddx, ddy = sobel(d)
            lv[n - 1 - i] = dict(d=T1(d), g=T1(g), gdx=T1(gdx), gdy=T1(gdy), ddx=T1(ddx), ddy=T1(ddy), vm=vm, K=Kt)
            if i != n - 1:
                d = pyrdown_depth(d, self.params.depth_outlier_trunc * 2)
                g = pyrdown(g)
                K = K / 2
                K[2, 2] = 1
        return lv

    def run(self, src, tgt, init):
        T = np.asarray(init, np.float64).copy()
        fit, rmse = 1.0, 0.0
        p = self.params
        for lvl, iters in enumerate(self.criteria):
            s, t = src[lvl], tgt[lvl]
            for _ in range(iters):
                if self.method == "hybrid":
                    r = OD.compute_odometry_result_hybrid(s["d"], t["d"], s["g"], t["g"], t["ddx"], t["ddy"], t["gdx"],
                                                          t["gdy"], s["vm"], s["K"], o3d.core.Tensor(T),
                                                          p.depth_outlier_trunc, p.depth_huber_delta,
                                                          p.intensity_huber_delta)
                else:
                    r = OD.compute_odometry_result_intensity(s["d"], t["d"], s["g"], t["g"], t["gdx"], t["gdy"],
                                                             s["vm"], s["K"], o3d.core.Tensor(T),
                                                             p.depth_outlier_trunc, p.intensity_huber_delta)
                T = r.transformation.numpy() @ T
                if (oo._rel(fit, r.fitness) < 1e-6 and oo._rel(rmse, r.inlier_rmse) < 1e-6):
                    break
                rmse, fit = r.inlier_rmse, r.fitness
        return T, fit, rmse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--depth", required=True, help="sgm-depth --emit depth output folder of the 51 pairs")
    ap.add_argument("--methods", default="legacy-hybrid,legacy-color,t-hybrid,t-intensity,t-p2plane")
    ap.add_argument("--inits", default="cv,id")
    ap.add_argument("--last", type=int, default=50)
    ap.add_argument("--depth_max", type=float, default=30.0)
    ap.add_argument("--depth_diff_max", type=float, default=1.0, help="legacy OdometryOption.depth_diff_max (m)")
    ap.add_argument("--legacy_iters", default="20,10,5", help="legacy iterations per level, coarse to fine (Open3D: "
                    "iteration_number_per_pyramid_level, default [20,10,5])")
    ap.add_argument("--t_criteria", default="10,5,3", help="tensor iterations per level, coarse to fine")
    ap.add_argument("--trunc", type=float, default=1.0, help="tensor depth_outlier_trunc (m)")
    ap.add_argument("--depth_huber", type=float, default=0.5)
    ap.add_argument("--intensity_huber", type=float, default=0.1)
    ap.add_argument("--out", required=True, help="folder for results.json and the trajectories")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    gt = read_kitti_poses(os.path.join(D, "poses.txt"))[:a.last + 1]
    stamps = np.arange(len(gt)) * 0.1
    n = len(gt)
    grey, depth = [], []
    for i in range(n):
        g = np.asarray(o3d.io.read_image(os.path.join(D, "image_l", "%06d.png" % i)))
        assert g.ndim == 2 and g.dtype == np.uint8, g.shape
        d = oo.read_pfm(os.path.join(a.depth, "%06d_depth.pfm" % i))
        assert d.shape == g.shape, (d.shape, g.shape)
        grey.append(g)
        depth.append(d)
    H, W = grey[0].shape
    print("frames %d, %dx%d, depth finite %.3f, finite & <= %g m: %.3f" % (
        n, W, H, np.mean([np.isfinite(d).mean() for d in depth]), a.depth_max,
        np.mean([(np.isfinite(d) & (d <= a.depth_max)).mean() for d in depth])), flush=True)

    # GT relative motions (source i -> target i-1) for per-pair diagnostics
    gt_rel = [None] + [np.linalg.inv(gt[i - 1]) @ gt[i] for i in range(1, n)]

    results = {}
    methods = a.methods.split(",")
    inits = a.inits.split(",")

    # ---------- per-method frame preparation
    def prep_legacy():
        out = []
        for g, d in zip(grey, depth):
            dd = np.where(np.isfinite(d) & (d > 0), d, 0).astype(np.float32)
            out.append(o3d.geometry.RGBDImage.create_from_color_and_depth(
                o3d.geometry.Image(np.ascontiguousarray(g)), o3d.geometry.Image(dd), depth_scale=1.0,
                depth_trunc=a.depth_max, convert_rgb_to_intensity=True))
        return out

    def clip(d):
        return np.where(np.isfinite(d) & (d > 0) & (d <= a.depth_max), d, NAN).astype(np.float32)

    cache = {}
    for m in methods:
        t_prep = time.perf_counter()
        if m.startswith("legacy"):
            if "legacy" not in cache:
                cache["legacy"] = prep_legacy()
            frames = cache["legacy"]
            intr = o3d.camera.PinholeCameraIntrinsic(W, H, FX, FY, CX, CY)
            opt = o3d.pipelines.odometry.OdometryOption(
                iteration_number_per_pyramid_level=o3d.utility.IntVector([int(x) for x in a.legacy_iters.split(",")]),
                depth_diff_max=a.depth_diff_max, depth_min=0.0, depth_max=a.depth_max)
            jac = (o3d.pipelines.odometry.RGBDOdometryJacobianFromHybridTerm() if m == "legacy-hybrid"
                   else o3d.pipelines.odometry.RGBDOdometryJacobianFromColorTerm())

            def step(i, init, frames=frames, intr=intr, opt=opt, jac=jac):
                ok, T, _ = o3d.pipelines.odometry.compute_rgbd_odometry(frames[i], frames[i - 1], intr, init, jac, opt)
                return bool(ok), np.asarray(T), {}
        elif m in ("t-hybrid", "t-intensity"):
            params = OD.OdometryLossParams(a.trunc, a.depth_huber, a.intensity_huber)
            crit = [int(x) for x in a.t_criteria.split(",")]
            tp = TensorPhoto(m[2:], crit, params, a.depth_max)
            key = "tpyr"
            if key not in cache:
                cache[key] = [tp.pyramid(clip(d), g.astype(np.float32) / 255.0) for g, d in zip(grey, depth)]
            frames = cache[key]

            def step(i, init, frames=frames, tp=tp):
                T, fit, rmse = tp.run(frames[i], frames[i - 1], init)
                return bool(np.all(np.isfinite(T))), T, {"fitness": fit, "inlier_rmse": rmse}
        elif m == "t-p2plane":
            params = OD.OdometryLossParams(a.trunc, a.depth_huber)
            od = oo.Odometry(np.array([[FX, 0, CX], [0, FY, CY], [0, 0, 1]]), "replica", 1.0, a.depth_max,
                             [int(x) for x in a.t_criteria.split(",")], params)
            if "tdepth" not in cache:
                cache["tdepth"] = [{"depth": o3d.t.geometry.Image(T1(np.where(np.isfinite(d), d, 0)))} for d in depth]
            frames = cache["tdepth"]

            def step(i, init, frames=frames, od=od):
                T, fit, rmse = od.run(frames[i], frames[i - 1], init)
                return bool(np.all(np.isfinite(T))), T, {"fitness": fit, "inlier_rmse": rmse}
        else:
            raise SystemExit("unknown method " + m)
        prep_s = time.perf_counter() - t_prep

        for init_mode in inits:
            label = "%s/%s" % (m, init_mode)
            poses = [gt[0].copy()]
            prev = np.eye(4)
            failed, per = [], []
            t0 = time.perf_counter()
            for i in range(1, n):
                init = prev if init_mode == "cv" else np.eye(4)
                try:
                    ok, T, info = step(i, init)
                except RuntimeError as e:
                    ok, T, info = False, np.eye(4), {"error": str(e)[:200]}
                if not ok or not np.all(np.isfinite(T)):
                    failed.append(i)
                    T = np.eye(4)
                    ok = False
                poses.append(poses[-1] @ T)
                if ok:
                    prev = T
                E = np.linalg.inv(gt_rel[i]) @ T
                per.append({"i": i, "ok": ok, "step_m": float(np.linalg.norm(T[:3, 3])),
                            "gt_step_m": float(np.linalg.norm(gt_rel[i][:3, 3])),
                            "err_m": float(np.linalg.norm(E[:3, 3])),
                            "err_deg": float(np.degrees(te.rotation_angle(E[:3, :3]))), **info})
            dt = time.perf_counter() - t0
            P = np.stack(poses)
            te.write_tum(os.path.join(a.out, label.replace("/", "_") + ".tum"), stamps, P)
            ev = te.evaluate(stamps, gt, stamps, P)
            rp = ev["rpe"]["delta_1_frame"]
            bad = [p["i"] for p in per if p["err_m"] > 0.25 or p["err_deg"] > 1.0]
            res = {"ate_m": ev["ate_m"]["rmse"], "rpe_med_m": rp["trans_m"]["median"],
                   "rpe_med_deg": rp["rot_deg"]["median"], "rpe_rmse_m": rp["trans_m"]["rmse"],
                   "failed": failed, "bad_pairs(err>0.25m or >1deg)": bad,
                   "mean_step_m": float(np.mean([p["step_m"] for p in per])),
                   "seconds": dt, "prep_seconds": prep_s, "per_pair": per}
            results[label] = res
            print("%-22s ATE %.3f m  RPE med %.3f m / %.3f deg  mean step %.3f m (gt %.3f)  failed %d  bad %d  "
                  "%.1f s (+prep %.1f)" % (label, res["ate_m"], res["rpe_med_m"], res["rpe_med_deg"],
                                           res["mean_step_m"], np.mean([p["gt_step_m"] for p in per]), len(failed),
                                           len(bad), dt, prep_s), flush=True)
            with open(os.path.join(a.out, "results.json"), "w") as f:
                json.dump({"args": vars(a), "open3d": o3d.__version__, "runs": results}, f, indent=1)


if __name__ == "__main__":
    main()
