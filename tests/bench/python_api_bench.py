#!/usr/bin/env python3
"""The Python package on the GPU, beside the C++ calls and the peers, in one run (docs/PYTHON.md).

  python3 tests/bench/python_api_bench.py --harness build/gpu/tests/bench/bench_python_overhead \
      [--nms-dump DIR --nms-s3d s3d.json] [--peers PEERS_BUILD] --out python_api.json

1. Call overhead: the median wall time of one call (with its stream synchronisation) through `s3d` and through
   `s3d.torch` on CUDA tensors, minus the C++ harness's time for the same call on the same inputs (small inputs:
   4,096 points, 1,024 queries, 1,000 boxes), measured in this run.
2. NMS against torchvision.ops.nms / batched_nms on bench_nms's dumped cases: identical keep lists, both timed.
3. FPS, ball query and kNN against pointnet2_ops and PyTorch3D (../shared/peers, built by its build.sh): the
   same indices (kNN: the same distances), both timed with CUDA events.
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import s3d
import s3d.torch as s3t


def wall_us(call, calls=500):
    """Median microseconds of the call's launch (until it returns) and of the call until the GPU is done."""
    for _ in range(20):
        call()
    torch.cuda.synchronize()
    launch, done = [], []
    for _ in range(calls):
        t0 = time.perf_counter()
        out = call()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        del out
        launch.append((t1 - t0) * 1e6)
        done.append((t2 - t0) * 1e6)
    return statistics.median(launch), statistics.median(done)


def event_ms(call, runs=20):
    for _ in range(3):
        call()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def clustered_boxes(n, seed):
    rng = np.random.default_rng(seed)
    centres = rng.random((max(n // 20, 1), 2)) * 1000
    c = centres[rng.integers(0, len(centres), n)] + rng.normal(0, 8, (n, 2))
    wh = rng.random((n, 2)) * 60 + 20
    boxes = np.concatenate([c - wh / 2, c + wh / 2], 1).astype(np.float32)
    return boxes, rng.random(n).astype(np.float32)


def overhead(harness, rows):
    rng = np.random.default_rng(7)
    n, q, b, fps_m, knn_k, ball_k, ball_r = 4096, 1024, 1000, 512, 16, 32, 0.1
    points = rng.random((n, 3), dtype=np.float32)
    queries = rng.random((q, 3), dtype=np.float32)
    boxes, scores = clustered_boxes(b, 7)
    with tempfile.TemporaryDirectory() as tmp:
        for name, a in [("points", points), ("queries", queries), ("boxes", boxes), ("scores", scores)]:
            a.tofile(os.path.join(tmp, name + ".f32"))
        with open(os.path.join(tmp, "sizes.txt"), "w") as f:
            f.write(f"{n} {q} {b} {fps_m} {knn_k} {ball_k} {ball_r}\n")
        out = subprocess.run([harness, tmp], check=True, capture_output=True, text=True).stdout
    cpp = {r["op"]: r for r in map(json.loads, out.splitlines())}
    p, qq, bb, ss = (torch.from_numpy(a).cuda() for a in (points, queries, boxes, scores))
    calls = {
        "fps": (lambda: s3d.fps(p, fps_m), lambda: s3t.fps(p, fps_m)),
        "knn": (lambda: s3d.knn(p, qq, knn_k), lambda: s3t.knn(p, qq, knn_k)),
        "ball_query": (lambda: s3d.ball_query(p, qq, ball_r, ball_k), lambda: s3t.ball_query(p, qq, ball_r, ball_k)),
        "nms": (lambda: s3d.nms(bb, ss, 0.5), lambda: s3t.nms(bb, ss, 0.5)),
    }
    for op, (plain, custom) in calls.items():
        (py_launch, py), (tc_launch, tc) = wall_us(plain), wall_us(custom)
        c = cpp[op]
        rows.append(dict(section="overhead", op=op, cpp_launch_us=c["cpp_launch_us"], cpp_us=c["cpp_us"],
                         s3d_launch_us=py_launch, s3d_us=py, s3d_torch_launch_us=tc_launch, s3d_torch_us=tc,
                         overhead_launch_us=py_launch - c["cpp_launch_us"], overhead_us=py - c["cpp_us"],
                         torch_overhead_launch_us=tc_launch - c["cpp_launch_us"], torch_overhead_us=tc - c["cpp_us"]))


def nms_vs_torchvision(dump, s3d_json, rows):
    import torchvision

    for case in json.load(open(s3d_json))["cases"]:
        if case.get("method", "hard") != "hard" or case.get("rotated"):
            continue
        name, iou = case["case"], float(case["iou"])
        base = os.path.join(dump, name)
        b = torch.from_numpy(np.fromfile(base + ".boxes.f32", np.float32).reshape(-1, 4)).cuda()
        s = torch.from_numpy(np.fromfile(base + ".scores.f32", np.float32)).cuda()
        g = (torch.from_numpy(np.fromfile(base + ".groups.i64", np.int64)).cuda()
             if os.path.exists(base + ".groups.i64") else None)
        if g is None:
            ours, theirs = (lambda: s3t.nms(b, s, iou)), (lambda: torchvision.ops.nms(b, s, iou))
        else:
            ours, theirs = (lambda: s3t.batched_nms(b, s, g, iou)), (lambda: torchvision.ops.batched_nms(b, s, g, iou))
        try:
            tv_keep = theirs()
            tv_ms = event_ms(theirs)
            error = None
        except RuntimeError as e:  # torchvision's limits (it fails from ~370k boxes)
            tv_keep, tv_ms, error = None, None, str(e).splitlines()[0][:120]
        keep = ours()
        rows.append(dict(section="nms", case=name, n=len(s), s3d_ms=event_ms(ours), peer="torchvision", peer_ms=tv_ms,
                         same=None if tv_keep is None else bool(torch.equal(keep, tv_keep)), peer_error=error))


def load_peer(build, name):
    path = os.path.join(build, name, "peer_" + name + ".so")
    spec = importlib.util.spec_from_file_location("peer_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def points_vs_peers(build, rows):
    pn2, p3d = load_peer(build, "pointnet2"), load_peer(build, "pytorch3d")
    g = torch.Generator().manual_seed(3)
    for B, N, M in [(8, 16384, 1024), (1, 131072, 4096)]:
        pts = torch.rand(B, N, 3, generator=g).cuda()
        ours = s3t.fps(pts, M)
        lengths = torch.full((B,), N, dtype=torch.int64, device="cuda")
        K = torch.full((B,), M, dtype=torch.int64, device="cuda")
        start = torch.zeros(B, dtype=torch.int64, device="cuda")
        peers = {"pointnet2": lambda: pn2.furthest_point_sampling(pts, M),
                 "pytorch3d": lambda: p3d.sample_farthest_points(pts, lengths, K, start, M)}
        s3d_ms = event_ms(lambda: s3t.fps(pts, M))
        for peer, call in peers.items():
            same = bool(torch.equal(ours.long(), call().long()))
            rows.append(dict(section="points", case=f"fps B{B} N{N} M{M}", s3d_ms=s3d_ms, peer=peer,
                             peer_ms=event_ms(call), same=same))
    # Ball query (pointnet2: the first k within r by index, padded with the first) and kNN (PyTorch3D).
    N, Q, r, k = 16384, 4096, 0.1, 32
    pts = torch.rand(1, N, 3, generator=g).cuda()
    qs = torch.rand(1, Q, 3, generator=g).cuda()
    ours = s3d.ball_query(pts[0], qs[0], r, k, pad="first")
    theirs = pn2.ball_query(qs, pts, r, k)[0]
    found = ours[:, 0] >= 0  # pointnet2 leaves an empty ball's row at 0
    rows.append(dict(section="points", case=f"ball N{N} Q{Q} r{r} k{k}", peer="pointnet2",
                     s3d_ms=event_ms(lambda: s3d.ball_query(pts[0], qs[0], r, k, pad="first")),
                     peer_ms=event_ms(lambda: pn2.ball_query(qs, pts, r, k)),
                     same=bool(torch.equal(ours[found].long(), theirs[found].long()))))
    k = 16
    idx, dist = s3d.knn(pts[0], qs[0], k)
    l1 = torch.full((1,), Q, dtype=torch.int64, device="cuda")
    l2 = torch.full((1,), N, dtype=torch.int64, device="cuda")
    p_idx, p_d2 = p3d.knn_points_idx(qs, pts, l1, l2, 2, k, -1)
    p_d2, order = p_d2[0].sort(dim=1)  # the kernel's rows are unsorted; pytorch3d.ops.knn_points sorts them after
    p_idx = p_idx[0].gather(1, order)
    rows.append(dict(section="points", case=f"knn N{N} Q{Q} k{k}", peer="pytorch3d",
                     s3d_ms=event_ms(lambda: s3d.knn(pts[0], qs[0], k)),
                     peer_ms=event_ms(lambda: p3d.knn_points_idx(qs, pts, l1, l2, 2, k, -1)),
                     same=bool(torch.allclose(dist * dist, p_d2, rtol=1e-5, atol=1e-7)),
                     same_indices=float((idx.long() == p_idx).float().mean())))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness", required=True)
    ap.add_argument("--nms-dump")
    ap.add_argument("--nms-s3d")
    ap.add_argument("--peers")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = []
    overhead(args.harness, rows)
    if args.nms_dump:
        nms_vs_torchvision(args.nms_dump, args.nms_s3d, rows)
    if args.peers:
        points_vs_peers(args.peers, rows)
    meta = dict(device=torch.cuda.get_device_name(0), torch=torch.__version__, python=sys.version.split()[0],
                s3d_cuda=s3d.cuda_build_info())
    json.dump(dict(meta=meta, rows=rows), open(args.out, "w"), indent=1)
    print(json.dumps(meta))
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
