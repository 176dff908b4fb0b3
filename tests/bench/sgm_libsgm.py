#!/usr/bin/env python3
"""s3d's SGM beside libSGM 3.1, both measured in the same run on the same GPU.

    python3 tests/bench/sgm_libsgm.py --s3d bench_sgm.json --libsgm libsgm.jsonl [--out compare.json]

--s3d is what `bench_sgm OUT.json` wrote; --libsgm the JSON lines of ../shared/peers/bench_sgm.sh run with the
same cases (WxH:D:PATHS:sub, --lr both). Both inputs are random texture with a constant shift.

Rows are matched on size, disparities, paths, subpixel and LR check. The ratio is libSGM's median wall time
over s3d's, both timed the same way: wall clock around one device-to-device call with the GPU synchronised
before and after (libSGM's execute() runs its own streams, so events on one stream do not bracket it).
s3d's rows without an LR check are its libSGM-like core (census, aggregation, WTA, uniqueness, subpixel,
median); its "full" rows (LR check, speckle filter, occlusion fill; the right view from a second SGM run, or with
"LR volume" from the left view's volume) are set beside libSGM with its LR check on, which takes its right
disparity map from the left volume too but neither filters speckles nor fills.
Exit status 1 when an s3d row has no libSGM row to stand beside.
"""
import argparse
import json
import sys


def key(width, height, disparities, paths, subpixel, lr_check):
    return (int(width), int(height), int(disparities), int(paths), bool(subpixel), bool(lr_check))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--s3d", required=True, help="bench_sgm's JSON")
    ap.add_argument("--libsgm", required=True, help="JSON lines of ../shared/peers/bench_sgm.sh")
    ap.add_argument("--out", help="write the matched rows as JSON here")
    ap.add_argument("--target", type=float, default=3.0, help="ratio to mark as met (default 3)")
    args = ap.parse_args()

    with open(args.s3d) as f:
        ours = json.load(f)
    peer = {}
    with open(args.libsgm) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if "error" in r:
                print(f"libSGM {r.get('case')}: {r['error']}", file=sys.stderr)
                continue
            peer[key(r["width"], r["height"], r["disp"], r["paths"], r["subpixel"], r["lr_check"])] = r

    rows, missing = [], []
    for r in ours["results"]:
        k = key(r["width"], r["height"], r["disparities"], r["paths"], r.get("subpixel", True), r["lr_check"])
        p = peer.get(k)
        if p is None:
            missing.append(r["setting"])
            continue
        rows.append({
            "setting": r["setting"],
            "s3d_d2d_event_ms": r["d2d_ms_median"],
            "s3d_d2d_wall_ms": r["d2d_wall_ms_median"],
            "s3d_e2e_ms": r["e2e_ms_median"],
            "libsgm_wall_ms": p["median_ms"],
            "libsgm_event_ms": p["event_median_ms"],
            "libsgm_frac_d7": p["frac_d7"],
            "ratio_wall": p["median_ms"] / r["d2d_wall_ms_median"],
        })

    print(f"s3d: {ours.get('device', '?')}; libSGM: {next(iter(peer.values()))['device'] if peer else '?'}")
    head = ("setting", "s3d wall ms", "s3d event ms", "libSGM wall ms", "libSGM / s3d", f">= {args.target:g}x")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for x in rows:
        met = "met" if x["ratio_wall"] >= args.target else "missed"
        print(f"| {x['setting']} | {x['s3d_d2d_wall_ms']:.3f} | {x['s3d_d2d_event_ms']:.3f} | "
              f"{x['libsgm_wall_ms']:.3f} | {x['ratio_wall']:.2f}x | {met} |")
    for name in missing:
        print(f"sgm_libsgm: no libSGM row for s3d's '{name}'", file=sys.stderr)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"s3d_device": ours.get("device"), "rows": rows, "unmatched": missing}, f, indent=1)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
