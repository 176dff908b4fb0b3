#!/usr/bin/env python3
"""cupoch's KinectFusion pipeline (cupoch.kinfu.KinfuPipeline, the PyPI wheel) on the first N redkitchen frames:
per-frame time of process_frame (median, p10, p90 after 5 frames) and its poses as TUM lines (t = index / 30 s, camera
to world, as cur_pose gives them) for tests/accuracy/trajectory_eval.py. Run on the GPU machine beside
`bench_fusion --device cuda --frames N [--color] [--volume sparse]`:

    python3 tests/bench/cupoch_kinfu.py DATA_DIR/rgbd/7scenes_redkitchen_f000-299 OUT_DIR [--frames 100] [--matched]

--matched: 3 levels of 10/5/4 ICP iterations, a 3 m cube of 512^3 from (-1.5, -1.5, -0.3), 3 cm truncation, depth
cut at 4 m (s3d's settings); default: cupoch's own (4 levels of 20, 8 m cube, 5 cm truncation, depth cut 3 m)."""
import argparse
import glob
import math
import os
import time

import numpy as np
import cupoch as cph


def quaternion(r):
    if r[0][0] + r[1][1] + r[2][2] > 0:
        s = 2 * math.sqrt(1 + r[0][0] + r[1][1] + r[2][2])
        return [(r[2][1] - r[1][2]) / s, (r[0][2] - r[2][0]) / s, (r[1][0] - r[0][1]) / s, s / 4]
    a = max(range(3), key=lambda j: r[j][j])
    b, c = (a + 1) % 3, (a + 2) % 3
    s = 2 * math.sqrt(1 + r[a][a] - r[b][b] - r[c][c])
    q = [0, 0, 0, (r[c][b] - r[b][c]) / s]
    q[a], q[b], q[c] = s / 4, (r[a][b] + r[b][a]) / s, (r[a][c] + r[c][a]) / s
    return q


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sequence")
    ap.add_argument("out")
    ap.add_argument("--frames", type=int, default=100)
    ap.add_argument("--matched", action="store_true")
    args = ap.parse_args()
    depths = sorted(glob.glob(os.path.join(args.sequence, "frame-*.depth.png")))[: args.frames]
    colors = sorted(glob.glob(os.path.join(args.sequence, "frame-*.color.jpg")))[: args.frames]
    opt = cph.kinfu.KinfuOption()
    if args.matched:
        opt.num_pyramid_levels = 3
        opt.icp_iterations = [10, 5, 4]
        opt.tsdf_length = 3.0
        opt.tsdf_resolution = 512
        opt.tsdf_origin = np.array([-1.5, -1.5, -0.3], dtype=np.float32)
        opt.sdf_trunc = 0.03
        opt.depth_cutoff = 4.0
        opt.distance_threshold = 0.1
    kinfu = cph.kinfu.KinfuPipeline(cph.camera.PinholeCameraIntrinsic(640, 480, 585.0, 585.0, 320.0, 240.0), opt)
    times, lines = [], []
    for i, (d, c) in enumerate(zip(depths, colors)):
        rgbd = cph.geometry.RGBDImage.create_from_color_and_depth(
            cph.io.read_image(c), cph.io.read_image(d), depth_scale=1000.0, depth_trunc=opt.depth_cutoff,
            convert_rgb_to_intensity=False)
        t = time.perf_counter()
        kinfu.process_frame(rgbd)
        times.append((time.perf_counter() - t) * 1e3)
        m = np.asarray(kinfu.cur_pose)
        lines.append("%.6f %.9f %.9f %.9f %.9f %.9f %.9f %.9f" % (i / 30.0, *m[:3, 3], *quaternion(m[:3, :3])))
    name = "cupoch_kinfu_%s" % ("matched" if args.matched else "defaults")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, name + ".tum"), "w") as f:
        f.write("\n".join(lines) + "\n")
    ts = sorted(times[5:])
    print("%s: %d frames, median %.2f ms, p10 %.2f, p90 %.2f" % (name, len(times), ts[len(ts) // 2],
                                                                   ts[len(ts) // 10], ts[9 * len(ts) // 10]))


if __name__ == "__main__":
    main()
