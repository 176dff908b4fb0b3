#!/usr/bin/env python3
"""Unit tests of tests/accuracy/trajectory_eval.py on hand-computed cases (pure numpy, < 1 s).

Run: python3 tests/accuracy/trajectory_eval_test.py [Class.method], or python3 -m unittest from tests/accuracy.
CTest registers each method through tests/python_tests.cmake. numpy is required: when the interpreter CMake found
(pyenv, a venv) has none, the file re-runs itself under /usr/bin/python3 (Debian's python3-numpy).
"""
import contextlib
import io
import math
import os
import sys
import tempfile
import unittest

SYSTEM_PYTHON = "/usr/bin/python3"

if __name__ == "__main__":
    try:
        import numpy  # noqa: F401
    except ImportError:
        if os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON) and os.access(SYSTEM_PYTHON, os.X_OK):
            os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON] + sys.argv)
        raise

import numpy as np  # noqa: E402

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trajectory_eval as te  # noqa: E402


def rz(deg):
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


def se3(R=None, t=(0, 0, 0)):
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    T[:3, 3] = t
    return T


def rigid():
    """An arbitrary rigid motion (about 60 degrees, a few metres)."""
    return se3(te.rot_from_quat(0.3, -0.4, 0.2, 0.8), (1.5, -2.0, 0.7))


def curve(n, rate=30.0):
    """A smooth 3D trajectory with rotation, n poses, stamps k / rate."""
    stamps = np.arange(n) / rate
    poses = []
    for k in range(n):
        R = te.rot_from_quat(0.1 * math.sin(0.1 * k), 0.05 * k / n, 0.2, 1.0)
        poses.append(se3(R, (math.cos(0.05 * k), math.sin(0.07 * k), 0.01 * k)))
    return stamps, np.stack(poses)


class AssociateTest(unittest.TestCase):
    def test_identical_stamps(self):
        s = np.arange(10) / 30.0
        self.assertEqual(te.associate(s, s), [(i, i) for i in range(10)])

    def test_greedy_smallest_difference_each_used_once(self):
        # b0 is 0.009 from a0 and 0.001 from a1: a1 takes it, a0 is left unmatched.
        self.assertEqual(te.associate([0.0, 0.01], [0.009]), [(1, 0)])
        # two candidates for one first stamp: the closer one wins, the other pairs with its own partner
        self.assertEqual(te.associate([1.0, 1.03], [1.015, 1.005]), [(0, 1), (1, 0)])

    def test_strict_threshold_and_offset(self):
        self.assertEqual(te.associate([0.0], [0.02]), [])            # |dt| = 0.02 is not < 0.02
        self.assertEqual(te.associate([0.0], [0.0199]), [(0, 0)])
        self.assertEqual(te.associate([1.0], [0.5], offset=0.5), [(0, 0)])
        self.assertEqual(te.associate([0.0, 1.0, 2.0], [1.005, 5.0]), [(1, 0)])


class PoseIoTest(unittest.TestCase):
    def test_quaternion_round_trip(self):
        for q in ([0, 0, 0, 1], [0.3, -0.4, 0.2, 0.8], [1, 0, 0, 0], [0, 0.7071, 0.7071, 0], [0.5, 0.5, 0.5, -0.5]):
            q = np.array(q, float) / np.linalg.norm(q)
            q2 = te.quat_from_rot(te.rot_from_quat(*q))
            self.assertTrue(np.allclose(q2, q, atol=1e-9) or np.allclose(q2, -q, atol=1e-9), (q, q2))

    def test_read_write_tum(self):
        stamps, poses = curve(20)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.txt")
            te.write_tum(path, stamps, poses)
            with open(path) as f:
                text = f.read()
            with open(path, "w") as f:
                f.write("# timestamp tx ty tz qx qy qz qw\n\n" + text)
            s2, p2 = te.read_tum(path)
        self.assertTrue(np.allclose(s2, stamps, atol=1e-6))
        self.assertTrue(np.allclose(p2, poses, atol=1e-8))


class AteTest(unittest.TestCase):
    def test_translation_offset_is_zero_after_alignment(self):
        stamps, gt = curve(50)
        est = gt.copy()
        est[:, :3, 3] += [0.3, -0.2, 0.1]
        res = te.evaluate(stamps, gt, stamps, est)
        self.assertLess(res["ate_m"]["rmse"], 1e-12)
        # without alignment every error is the offset's length
        a, _, _ = te.ate(gt[:, :3, 3], est[:, :3, 3], align="none")
        n = math.sqrt(0.3 ** 2 + 0.2 ** 2 + 0.1 ** 2)
        for k in ("rmse", "mean", "median", "max"):
            self.assertAlmostEqual(a[k], n, places=12)

    def test_rigid_motion_is_zero_after_alignment(self):
        stamps, gt = curve(80)
        M = rigid()
        est = np.einsum("ij,njk->nik", M, gt)
        res = te.evaluate(stamps, gt, stamps, est)
        self.assertLess(res["ate_m"]["rmse"], 1e-12)
        self.assertLess(res["rpe"]["delta_1_frame"]["trans_m"]["rmse"], 1e-12)
        self.assertLess(res["rpe"]["delta_1_frame"]["rot_deg"]["rmse"], 1e-5)   # arccos near 1: ~1e-6 deg
        self.assertTrue(np.allclose(np.array(res["alignment"]["R"]), M[:3, :3].T, atol=1e-12))

    def test_known_noise_pattern(self):
        # Six points on the axes; each is moved radially by eps = a, a, b, b, c, c (a = 0.01, b = -0.02, c = 0.03).
        # The noise has zero mean and a symmetric positive cross-covariance diag(1+a, 1+b, 1+c) / 3, so the best
        # alignment is the identity and the errors are |eps|: RMSE = sqrt((a^2 + b^2 + c^2) / 3) = 0.0216025...,
        # mean 0.02, median 0.02, max 0.03. A rigid motion of the estimate changes nothing.
        q = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)
        eps = np.array([0.01, 0.01, -0.02, -0.02, 0.03, 0.03])
        p = q * (1 + eps)[:, None]
        M = rigid()
        for est in (p, (M[:3, :3] @ p.T).T + M[:3, 3]):
            a, (R, t, c), err = te.ate(q, est)
            self.assertAlmostEqual(a["rmse"], math.sqrt(14.0 / 3.0) * 0.01, places=12)
            self.assertAlmostEqual(a["mean"], 0.02, places=12)
            self.assertAlmostEqual(a["median"], 0.02, places=12)
            self.assertAlmostEqual(a["max"], 0.03, places=12)
            self.assertEqual(a["n"], 6)
        self.assertTrue(np.allclose(te.umeyama(p, q)[0], np.eye(3), atol=1e-12))

    def test_sim3_recovers_scale(self):
        stamps, gt = curve(40)
        M = rigid()
        est = gt.copy()
        est[:, :3, 3] = 0.5 * (M[:3, :3] @ gt[:, :3, 3].T).T + M[:3, 3]
        a, (R, t, c), _ = te.ate(gt[:, :3, 3], est[:, :3, 3], align="sim3")
        self.assertLess(a["rmse"], 1e-12)
        self.assertAlmostEqual(c, 2.0, places=12)
        self.assertGreater(te.ate(gt[:, :3, 3], est[:, :3, 3], align="se3")[0]["rmse"], 0.01)

    def test_ranges_realign_per_range(self):
        # Frames 0..29 offset by (0.1, 0, 0), frames 30..59 by (0, 0.2, 0): each range alone aligns to 0; the
        # global alignment leaves a residual.
        stamps, gt = curve(60)
        est = gt.copy()
        est[:30, :3, 3] += [0.1, 0, 0]
        est[30:, :3, 3] += [0, 0.2, 0]
        res = te.evaluate(stamps, gt, stamps, est, ranges=[(0, 30), (30, 60)])
        self.assertGreater(res["ate_m"]["rmse"], 0.01)
        for r in res["ranges"]:
            self.assertEqual(r["associated"], 30)
            self.assertLess(r["ate_m"]["rmse"], 1e-12)
            self.assertGreater(r["ate_m_global_alignment"]["rmse"], 0.01)

    def test_ranges_use_gt_line_indices(self):
        # The estimate lacks frames 0..9: range 0:20 holds the 10 associated poses 10..19.
        stamps, gt = curve(40)
        res = te.evaluate(stamps, gt, stamps[10:], gt[10:], ranges=[(0, 20), (20, 40)])
        self.assertEqual([r["associated"] for r in res["ranges"]], [10, 20])
        self.assertEqual(res["associated"], 30)


class RpeTest(unittest.TestCase):
    def make(self, n, step_err_deg, step_len_est):
        """GT moves 1 m along its x per frame, no rotation. The estimate's increment D = [Rz(step_err_deg) |
        (step_len_est, 0, 0)] is constant in its own frame, so every 1-frame error is E = [Rz | (step_len_est - 1,
        0, 0)]."""
        stamps = np.arange(n) / 30.0
        G = se3(t=(1.0, 0, 0))
        D = se3(rz(step_err_deg), (step_len_est, 0, 0))
        gt, est = [np.eye(4)], [rigid()]
        for _ in range(n - 1):
            gt.append(gt[-1] @ G)
            est.append(est[-1] @ D)
        return stamps, np.stack(gt), np.stack(est)

    def test_constant_per_step_error(self):
        stamps, gt, est = self.make(61, 1.0, 1.1)
        res = te.evaluate(stamps, gt, stamps, est)
        r1 = res["rpe"]["delta_1_frame"]
        self.assertEqual(r1["trans_m"]["n"], 60)
        for k in ("rmse", "mean", "median", "max"):
            self.assertAlmostEqual(r1["trans_m"][k], 0.1, places=9)
            self.assertAlmostEqual(r1["rot_deg"][k], 1.0, places=6)
        # Delta = 1 s = 30 frames at 30 Hz: 31 pairs (i = 0..30), each E = G^-30 D^30 = [Rz(30 deg) |
        # 1.1 * sum_{k<30} (cos k deg, sin k deg, 0) - (30, 0, 0)].
        rs = res["rpe"]["delta_1s"]
        self.assertEqual(rs["trans_m"]["n"], 31)
        k = np.radians(np.arange(30))
        t30 = 1.1 * np.array([np.cos(k).sum(), np.sin(k).sum()]) - [30.0, 0.0]
        self.assertAlmostEqual(rs["trans_m"]["rmse"], float(np.linalg.norm(t30)), places=9)
        self.assertAlmostEqual(rs["trans_m"]["mean"], float(np.linalg.norm(t30)), places=9)
        self.assertAlmostEqual(rs["rot_deg"]["rmse"], 30.0, places=6)

    def test_single_bad_step(self):
        # One 5 cm error among 10 steps: RMSE sqrt(0.05^2 / 10), mean 0.005, max 0.05.
        stamps, gt, est = self.make(11, 0.0, 1.0)
        est[6:] = np.einsum("ij,njk->nik", est[5] @ se3(t=(0.05, 0, 0)) @ np.linalg.inv(est[5]), est[6:])
        r1 = te.evaluate(stamps, gt, stamps, est)["rpe"]["delta_1_frame"]["trans_m"]
        self.assertAlmostEqual(r1["rmse"], math.sqrt(0.05 ** 2 / 10), places=12)
        self.assertAlmostEqual(r1["mean"], 0.005, places=12)
        self.assertAlmostEqual(r1["max"], 0.05, places=12)

    def test_seconds_pairs(self):
        # 30 Hz stamps with one gap: pairs need a partner within 0.02 s of t + 1.
        s = np.arange(0, 61) / 30.0
        self.assertEqual(te.rpe_pairs_seconds(s, 1.0), [(i, i + 30) for i in range(31)])
        s2 = np.delete(s, 40)  # frame 40 missing: the pair from frame 10 has no partner
        pairs = te.rpe_pairs_seconds(s2, 1.0)
        self.assertEqual(len(pairs), 30)
        self.assertNotIn(10, [i for i, _ in pairs])


class CliTest(unittest.TestCase):
    def test_cli_gt_against_moved_gt(self):
        stamps, gt = curve(100)
        M = rigid()
        with tempfile.TemporaryDirectory() as d:
            g, e = os.path.join(d, "gt.txt"), os.path.join(d, "est.txt")
            te.write_tum(g, stamps, gt)
            te.write_tum(e, stamps, np.einsum("ij,njk->nik", M, gt))
            res = te.evaluate_files(g, e, ranges=te.parse_ranges("0:40,40:100"))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(te.main([g, e, "--ranges", "0:40,40:100"]), 0)
        self.assertIn("[40:100] ATE (se3) m: rmse 0.000000", out.getvalue())
        self.assertEqual(res["associated"], 100)
        self.assertLess(res["ate_m"]["rmse"], 1e-6)   # the file's 9 decimals
        self.assertEqual([r["associated"] for r in res["ranges"]], [40, 60])


if __name__ == "__main__":
    unittest.main()
