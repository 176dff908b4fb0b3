#!/usr/bin/env python3
"""Independent trajectory evaluator (pure numpy): TUM-format ATE and RPE.

Definitions follow Sturm et al., "A Benchmark for the Evaluation of RGB-D SLAM Systems", IROS 2012, and the TUM
benchmark's tools (associate.py, evaluate_ate.py, evaluate_rpe.py):

* Association: TUM ``associate.py`` semantics. Every pair (a, b) with |a - (b + offset)| < max_difference (0.02 s,
  strict) is a candidate; candidates are taken greedily by increasing |difference| (ties by the smaller stamps), each
  stamp used at most once. The result is sorted by the first (ground-truth) stamp.
* ATE: positions only. The estimate is aligned to the ground truth by the closed form of Horn / Umeyama: SE(3) by
  default (c = 1, as TUM ``evaluate_ate.py`` and ``evo_ape -a``), Sim(3) or no alignment on request. Reported: RMSE,
  mean, median, max (metres) of ||c R p_i + t - q_i||.
  Ranges (``--ranges 0:122,122:300``, half-open) select ground-truth *line indices* (the frame number when the
  ground truth has one line per frame, as for the 7-Scenes copy here); a range is evaluated twice:
  ``aligned`` re-aligns on that range alone (what evaluate_ate.py gives on the truncated files) and
  ``global_alignment`` keeps the alignment found on all associated poses and only restricts the errors.
* RPE: E_i = (Q_i^-1 Q_j)^-1 (P_i^-1 P_j), Q ground truth, P estimate (camera-to-world). Translational error ||t(E)||
  (m), rotational error arccos((tr R(E) - 1) / 2) (degrees). RMSE, mean, median, max over the pairs.
  ``delta_frames = 1``: j = i + 1 over the associated poses in time order (evo_rpe's default).
  ``delta_seconds = 1.0``: j = the associated pose whose stamp is closest to t_i + 1.0 s; the pair is kept when
  |t_j - t_i - 1.0| <= max_difference (so pairs whose partner would fall beyond the end are dropped).
  Note: TUM ``evaluate_rpe.py --fixed_delta`` uses E' = (P_i^-1 P_j)(Q_i^-1 Q_j)^-1 (same rotation angle, a
  slightly different translation), drops the last pair and prints the *mean* by default; the figures here are the
  paper/evo form.

Poses are camera-to-world, ``t tx ty tz qx qy qz qw`` (scalar last). No SciPy, no Open3D.

CLI: python3 trajectory_eval.py GT EST [--ranges 0:122,122:300] [--align se3|sim3|none] [--json]
"""
import argparse
import json
import math
import os
import sys

if __name__ == "__main__":
    try:
        import numpy  # noqa: F401
    except ImportError:
        # The interpreter found first (pyenv, a venv) may lack numpy: re-run under Debian's, which has python3-numpy.
        if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and os.access("/usr/bin/python3",
                                                                                                     os.X_OK):
            os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
        raise

import numpy as np  # noqa: E402

MAX_DIFFERENCE = 0.02


# ----------------------------------------------------------------------------------------------------- I/O, poses
def read_tum(path):
    """Reads a TUM trajectory. Returns (stamps (n,), poses (n, 4, 4)) sorted by stamp. '#' lines and blank lines are
    skipped; commas are accepted as separators. A duplicated stamp keeps the last line (as TUM's read_file_list)."""
    rows = {}
    with open(path) as f:
        for line in f:
            line = line.replace(",", " ").replace("\t", " ").strip()
            if not line or line.startswith("#"):
                continue
            v = [float(x) for x in line.split() if x]
            if len(v) != 8:
                raise ValueError("%s: expected 8 values per line, got %d: %r" % (path, len(v), line))
            rows[v[0]] = v[1:]
    stamps = np.array(sorted(rows), dtype=np.float64)
    poses = np.stack([pose_from_tum(rows[s]) for s in stamps]) if len(stamps) else np.zeros((0, 4, 4))
    return stamps, poses


def write_tum(path, stamps, poses):
    with open(path, "w") as f:
        for s, T in zip(stamps, poses):
            q = quat_from_rot(T[:3, :3])
            f.write("%.6f %.9f %.9f %.9f %.9f %.9f %.9f %.9f\n" % (s, T[0, 3], T[1, 3], T[2, 3], q[0], q[1], q[2], q[3]))


def rot_from_quat(qx, qy, qz, qw):
    q = np.array([qx, qy, qz, qw], dtype=np.float64)
    n = np.linalg.norm(q)
    if n < 1e-12:
        raise ValueError("zero quaternion")
    x, y, z, w = q / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def quat_from_rot(R):
    """(qx, qy, qz, qw) with qw >= 0, of a rotation matrix (Shepperd's method)."""
    R = np.asarray(R, dtype=np.float64)
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        q = [(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s]
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        q = [0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s, (R[2, 1] - R[1, 2]) / s]
    elif R[1, 1] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        q = [(R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s, (R[0, 2] - R[2, 0]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        q = [(R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s, (R[1, 0] - R[0, 1]) / s]
    q = np.array(q)
    q /= np.linalg.norm(q)
    return q if q[3] >= 0 else -q


def pose_from_tum(v):
    T = np.eye(4)
    T[:3, :3] = rot_from_quat(v[3], v[4], v[5], v[6])
    T[:3, 3] = v[:3]
    return T


def inv_se3(T):
    Ti = np.eye(4)
    Ti[:3, :3] = T[:3, :3].T
    Ti[:3, 3] = -T[:3, :3].T @ T[:3, 3]
    return Ti


def rotation_angle(R):
    """Angle (radians) of a rotation matrix, arccos((tr R - 1) / 2) clipped to [-1, 1]."""
    return math.acos(max(-1.0, min(1.0, (np.trace(R) - 1.0) / 2.0)))


# ------------------------------------------------------------------------------------------------------ association
def associate(first_stamps, second_stamps, offset=0.0, max_difference=MAX_DIFFERENCE):
    """TUM associate.py: returns a list of (i, j) index pairs into first/second, sorted by first stamp."""
    a = np.asarray(first_stamps, dtype=np.float64)
    b = np.asarray(second_stamps, dtype=np.float64) + offset
    order_b = np.argsort(b, kind="stable")
    bs = b[order_b]
    candidates = []
    for i, s in enumerate(a):
        lo = np.searchsorted(bs, s - max_difference, side="left")
        hi = np.searchsorted(bs, s + max_difference, side="right")
        for k in range(lo, hi):
            d = abs(s - bs[k])
            if d < max_difference:
                j = int(order_b[k])
                candidates.append((d, float(a[i]), float(b[j]), i, j))
    candidates.sort()
    used_a, used_b, pairs = set(), set(), []
    for d, _, _, i, j in candidates:
        if i in used_a or j in used_b:
            continue
        used_a.add(i)
        used_b.add(j)
        pairs.append((i, j))
    pairs.sort(key=lambda p: (a[p[0]], p[0]))
    return pairs


# --------------------------------------------------------------------------------------------------------- alignment
def umeyama(p, q, with_scale=False):
    """R, t, c minimising sum ||c R p_i + t - q_i||^2 (p estimate, q ground truth), (n, 3) arrays."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if len(p) == 0:
        return np.eye(3), np.zeros(3), 1.0
    mp, mq = p.mean(0), q.mean(0)
    pc, qc = p - mp, q - mq
    sigma = qc.T @ pc / len(p)
    U, D, Vt = np.linalg.svd(sigma)
    S = np.eye(3)
    if np.linalg.det(U) * np.linalg.det(Vt) < 0:
        S[2, 2] = -1.0
    R = U @ S @ Vt
    c = 1.0
    if with_scale:
        var_p = (pc * pc).sum() / len(p)
        c = float(np.trace(np.diag(D) @ S) / var_p) if var_p > 0 else 1.0
    t = mq - c * R @ mp
    return R, t, c


def _stats(e):
    e = np.asarray(e, dtype=np.float64)
    if len(e) == 0:
        return {"n": 0, "rmse": None, "mean": None, "median": None, "max": None}
    return {"n": int(len(e)), "rmse": float(np.sqrt(np.mean(e * e))), "mean": float(np.mean(e)),
            "median": float(np.median(e)), "max": float(np.max(e))}


def ate(gt_pos, est_pos, align="se3"):
    """ATE statistics of associated positions (n, 3). align: 'se3' (default), 'sim3' or 'none'."""
    if align == "none":
        R, t, c = np.eye(3), np.zeros(3), 1.0
    else:
        R, t, c = umeyama(est_pos, gt_pos, with_scale=(align == "sim3"))
    err = np.linalg.norm((c * (R @ np.asarray(est_pos).T)).T + t - gt_pos, axis=1)
    out = _stats(err)
    out["align"] = align
    out["scale"] = float(c)
    return out, (R, t, c), err


# ---------------------------------------------------------------------------------------------------------------- RPE
def rpe_pairs_frames(n, delta=1):
    return [(i, i + delta) for i in range(n - delta)]


def rpe_pairs_seconds(stamps, delta=1.0, tolerance=MAX_DIFFERENCE):
    stamps = np.asarray(stamps, dtype=np.float64)
    pairs = []
    for i, s in enumerate(stamps):
        target = s + delta
        k = int(np.searchsorted(stamps, target))
        best = None
        for j in (k - 1, k):
            if 0 <= j < len(stamps) and (best is None or abs(stamps[j] - target) < abs(stamps[best] - target)):
                best = j
        if best is not None and best != i and abs(stamps[best] - target) <= tolerance:
            pairs.append((i, best))
    return pairs


def rpe(gt_poses, est_poses, pairs):
    """RPE over index pairs into the associated (gt, est) pose arrays. Returns (trans stats m, rot stats deg)."""
    te, re = [], []
    for i, j in pairs:
        dq = inv_se3(gt_poses[i]) @ gt_poses[j]
        dp = inv_se3(est_poses[i]) @ est_poses[j]
        E = inv_se3(dq) @ dp
        te.append(np.linalg.norm(E[:3, 3]))
        re.append(math.degrees(rotation_angle(E[:3, :3])))
    return _stats(te), _stats(re)


# ---------------------------------------------------------------------------------------------------------- evaluate
def parse_ranges(text):
    ranges = []
    if not text:
        return ranges
    for part in text.split(","):
        a, b = part.split(":")
        ranges.append((int(a), int(b)))
    return ranges


def evaluate(gt_stamps, gt_poses, est_stamps, est_poses, ranges=(), align="se3", offset=0.0,
             max_difference=MAX_DIFFERENCE, rpe_seconds=1.0):
    """Full evaluation. Returns a JSON-ready dict."""
    pairs = associate(gt_stamps, est_stamps, offset=offset, max_difference=max_difference)
    if len(pairs) < 2:
        raise ValueError("fewer than 2 associated poses (%d)" % len(pairs))
    gi = np.array([p[0] for p in pairs])
    ei = np.array([p[1] for p in pairs])
    G, P = gt_poses[gi], est_poses[ei]
    stamps = gt_stamps[gi]
    res = {"gt_poses": int(len(gt_stamps)), "est_poses": int(len(est_stamps)), "associated": int(len(pairs)),
           "max_difference_s": max_difference}
    a, (R, t, c), err = ate(G[:, :3, 3], P[:, :3, 3], align)
    res["ate_m"] = a
    res["alignment"] = {"R": R.tolist(), "t": t.tolist(), "scale": c}
    res["rpe"] = _rpe_block(G, P, stamps, rpe_seconds)
    res["ranges"] = []
    for lo, hi in ranges:
        sel = (gi >= lo) & (gi < hi)
        entry = {"range": "%d:%d" % (lo, hi), "associated": int(sel.sum())}
        if sel.sum() >= 2:
            entry["ate_m"] = ate(G[sel][:, :3, 3], P[sel][:, :3, 3], align)[0]
            entry["ate_m_global_alignment"] = _stats(err[sel])
            entry["rpe"] = _rpe_block(G[sel], P[sel], stamps[sel], rpe_seconds)
        res["ranges"].append(entry)
    return res


def _rpe_block(G, P, stamps, rpe_seconds):
    t1, r1 = rpe(G, P, rpe_pairs_frames(len(G), 1))
    ts, rs = rpe(G, P, rpe_pairs_seconds(stamps, rpe_seconds))
    return {"delta_1_frame": {"trans_m": t1, "rot_deg": r1},
            "delta_%gs" % rpe_seconds: {"trans_m": ts, "rot_deg": rs}}


def evaluate_files(gt_path, est_path, **kw):
    gs, gp = read_tum(gt_path)
    es, ep = read_tum(est_path)
    return evaluate(gs, gp, es, ep, **kw)


def _fmt(x, k=6):
    return "n/a" if x is None else ("%.*f" % (k, x))


def format_report(res):
    lines = ["associated %d of %d gt / %d est poses" % (res["associated"], res["gt_poses"], res["est_poses"])]

    def block(title, a, r):
        lines.append("%s ATE (%s) m: rmse %s mean %s median %s max %s (n %d)" % (
            title, a.get("align", "se3"), _fmt(a["rmse"]), _fmt(a["mean"]), _fmt(a["median"]), _fmt(a["max"]),
            a["n"]))
        for k, v in r.items():
            lines.append("%s RPE %s: trans m rmse %s mean %s; rot deg rmse %s mean %s (pairs %d)" % (
                title, k, _fmt(v["trans_m"]["rmse"]), _fmt(v["trans_m"]["mean"]), _fmt(v["rot_deg"]["rmse"], 4),
                _fmt(v["rot_deg"]["mean"], 4), v["trans_m"]["n"]))

    block("all", res["ate_m"], res["rpe"])
    for e in res["ranges"]:
        if "ate_m" in e:
            block("[%s]" % e["range"], e["ate_m"], e["rpe"])
            lines.append("[%s] ATE with the global alignment m: rmse %s" % (
                e["range"], _fmt(e["ate_m_global_alignment"]["rmse"])))
        else:
            lines.append("[%s] fewer than 2 associated poses" % e["range"])
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("gt")
    ap.add_argument("est")
    ap.add_argument("--ranges", default="", help="ground-truth line index ranges, half-open: 0:122,122:300")
    ap.add_argument("--align", choices=["se3", "sim3", "none"], default="se3")
    ap.add_argument("--offset", type=float, default=0.0, help="added to the estimate's stamps")
    ap.add_argument("--max_difference", type=float, default=MAX_DIFFERENCE)
    ap.add_argument("--rpe_seconds", type=float, default=1.0)
    ap.add_argument("--json", action="store_true", help="print the full result as JSON")
    args = ap.parse_args(argv)
    res = evaluate_files(args.gt, args.est, ranges=parse_ranges(args.ranges), align=args.align, offset=args.offset,
                         max_difference=args.max_difference, rpe_seconds=args.rpe_seconds)
    print(json.dumps(res, indent=1) if args.json else format_report(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
