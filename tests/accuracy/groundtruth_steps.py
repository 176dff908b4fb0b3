#!/usr/bin/env python3
"""Where a ground-truth trajectory disagrees with every estimate, and what ATE that alone costs.

For each frame step i -> i+1 it compares the ground truth's relative motion (T_i^-1 T_i+1) with each estimate's
(translation difference in mm, rotation difference in degrees) and lists the steps where the ground truth is
farther than --min-mm from *every* estimate while the estimates agree among themselves. Then, for each estimate,
it rebuilds the ground truth with only those steps replaced by the estimate's own and prints the SE(3) ATE of
that trajectory against the ground truth: the error of a tracker that matches the ground truth everywhere else,
so a floor for any tracker that follows the depth through those steps.

The trajectories must hold the same frames, one pose per line in the same order (7-Scenes copies and the
trajectories of tests/accuracy/results do). Pure numpy, on the functions of trajectory_eval.py.

CLI: python3 groundtruth_steps.py GT EST [EST ...] [--min-mm 7.5] [--ranges 0:122,122:300]
"""
import argparse
import os
import sys

try:
    import numpy  # noqa: F401
except ImportError:
    # The interpreter found first (pyenv, a venv) may lack numpy: re-run under Debian's, which has python3-numpy.
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and os.access("/usr/bin/python3",
                                                                                                 os.X_OK):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trajectory_eval as te  # noqa: E402

np = te.np


def relative(poses):
    return [te.inv_se3(poses[i]) @ poses[i + 1] for i in range(len(poses) - 1)]


def step_difference(a, b):
    return np.linalg.norm(a[:3, 3] - b[:3, 3]) * 1000.0, np.degrees(te.rotation_angle(a[:3, :3].T @ b[:3, :3]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("gt")
    ap.add_argument("estimates", nargs="+")
    ap.add_argument("--min-mm", type=float, default=7.5, help="a ground-truth step this far from every estimate's")
    ap.add_argument("--ranges", default="0:122,122:300", help="frame ranges to report the floor on too")
    args = ap.parse_args(argv)
    _, gt = te.read_tum(args.gt)
    estimates = {os.path.basename(p): te.read_tum(p)[1] for p in args.estimates}
    for name, poses in estimates.items():
        if len(poses) != len(gt):
            sys.exit("%s: %d poses, the ground truth has %d" % (name, len(poses), len(gt)))
    g = relative(gt)
    e = {name: relative(poses) for name, poses in estimates.items()}
    names = list(e)
    steps = []
    print("step      GT vs each estimate (mm / deg)" + " " * 24 + "estimates' spread (mm)")
    for i in range(len(g)):
        diffs = [step_difference(g[i], e[n][i]) for n in names]
        spread = max(step_difference(e[a][i], e[b][i])[0] for a in names for b in names)
        if min(d[0] for d in diffs) >= args.min_mm:
            steps.append(i)
            print("%3d->%-3d  %s  %.1f" % (i, i + 1, "  ".join("%5.1f / %.2f" % d for d in diffs), spread))
    median = np.median([min(step_difference(g[i], e[n][i])[0] for n in names) for i in range(len(g))])
    print("median over all steps of the smallest difference: %.2f mm" % median)
    ranges = te.parse_ranges(args.ranges) if args.ranges else []
    for name in names:
        floor = [gt[0]]
        for i in range(len(g)):
            floor.append(floor[-1] @ (e[name][i] if i in steps else g[i]))
        p, q = np.array([T[:3, 3] for T in floor]), gt[:, :3, 3]
        parts = ["all %.4f" % te.ate(q, p)[0]["rmse"]]
        parts += ["%d-%d %.4f" % (a, b - 1, te.ate(q[a:b], p[a:b])[0]["rmse"]) for a, b in ranges]
        print("ground truth with those steps from %s: ATE %s m" % (name, ", ".join(parts)))


if __name__ == "__main__":
    main()
