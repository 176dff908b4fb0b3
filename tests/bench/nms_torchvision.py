#!/usr/bin/env python3
"""Times torchvision.ops.nms / batched_nms on the exact inputs bench_nms dumped (same run, same GPU), checks
that torchvision keeps the same boxes as s3d, and prints/writes the side-by-side table.

  bench_nms --dump DIR --out s3d.json
  python3 tests/bench/nms_torchvision.py --dump DIR --s3d s3d.json --out compare.json [--runs 20]
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torchvision


def load(dump, name):
    boxes = np.fromfile(os.path.join(dump, name + ".boxes.f32"), dtype=np.float32).reshape(-1, 4)
    scores = np.fromfile(os.path.join(dump, name + ".scores.f32"), dtype=np.float32)
    gpath = os.path.join(dump, name + ".groups.i64")
    groups = np.fromfile(gpath, dtype=np.int64) if os.path.exists(gpath) else None
    kpath = os.path.join(dump, name + ".keep.i64")
    keep = np.fromfile(kpath, dtype=np.int64) if os.path.exists(kpath) else None
    return boxes, scores, groups, keep


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--s3d", required=True)
    ap.add_argument("--out", default="nms_compare.json")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--budget-s", type=float, default=8.0, help="per case wall budget for torchvision")
    args = ap.parse_args()
    ours = json.load(open(args.s3d))
    dev = torch.device("cuda")
    print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__, "torchvision", torchvision.__version__)
    rows = []
    hdr = "%-40s %9s %11s %11s %9s %s" % ("case", "n", "s3d_ms", "tv_ms", "speedup", "same_keep")
    print(hdr)
    for c in ours["cases"]:
        name = c["case"]
        row = {"case": name, "n": c["n"], "s3d_ms": c["median_ms"], "tv_ms": None, "same_keep": None, "tv_error": None}
        if c.get("method", "hard") != "hard":
            row["tv_error"] = "torchvision has no soft-NMS"
        else:
            boxes, scores, groups, keep = load(args.dump, name)
            b = torch.from_numpy(boxes).to(dev)
            s = torch.from_numpy(scores).to(dev)
            g = torch.from_numpy(groups).to(dev) if groups is not None else None
            iou = float(c["iou"])

            def call():
                if g is None:
                    return torchvision.ops.nms(b, s, iou)
                return torchvision.ops.batched_nms(b, s, g, iou)

            try:
                t0 = time.time()
                out = call()
                torch.cuda.synchronize()
                first = time.time() - t0
                # slow cases (torchvision takes seconds at a few 100k boxes): fewer runs, reported in tv_runs
                runs = args.runs if first * (args.runs + 2) < args.budget_s else max(1, int(args.budget_s / max(first, 1e-3)))
                if runs == args.runs:
                    for _ in range(2):
                        call()
                torch.cuda.synchronize()
                ts = []
                for _ in range(runs):
                    e0 = torch.cuda.Event(enable_timing=True)
                    e1 = torch.cuda.Event(enable_timing=True)
                    e0.record()
                    call()
                    e1.record()
                    e1.synchronize()
                    ts.append(e0.elapsed_time(e1))
                ts.sort()
                row["tv_ms"] = ts[len(ts) // 2]
                row["tv_runs"] = runs
                if keep is not None:
                    row["same_keep"] = bool(np.array_equal(out.cpu().numpy(), keep))
            except Exception as e:  # torchvision fails for large N (mask size / int32 indexing)
                row["tv_error"] = str(e).splitlines()[0][:160]
                torch.cuda.empty_cache()
        sp = "%.1fx" % (row["tv_ms"] / row["s3d_ms"]) if row["tv_ms"] else "-"
        tv = "%.4f" % row["tv_ms"] if row["tv_ms"] is not None else ("fail" if row["tv_error"] else "-")
        print("%-40s %9d %11.4f %11s %9s %s %s" % (name, c["n"], row["s3d_ms"], tv, sp, row["same_keep"],
                                                  row["tv_error"] or ""))
        sys.stdout.flush()
        rows.append(row)
    json.dump({"device": torch.cuda.get_device_name(0), "torchvision": torchvision.__version__, "s3d_device": ours["device"],
               "rows": rows}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
