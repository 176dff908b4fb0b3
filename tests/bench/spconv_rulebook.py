#!/usr/bin/env python3
"""spconv 2.x as a rulebook peer: its index-pair generation timed on the GPU, on the same voxels as
../shared/peers/torchsparse/bench_rulebook.py (and bench_rulebook, s3d's), its pairs checked against that kit's
plain reference, which defines the pairs s3d's rulebook gives; one JSON line per case.

    python3 spconv_rulebook.py --kit PEERS/torchsparse [--npy coords.npy | --voxels 125000 --seed 0]
                               [--runs 30] [--warmup 3] [--out FILE.jsonl] [--save-input FILE.npy]

spconv (pip spconv-cu126 2.3.8 with cumm-cu126 0.7.11, pccm, ccimport) must import. Cases: subm_k3 (SubMConv3d
3x3x3, padding 1) and conv_k3s2 (SparseConv3d 3x3x3, stride 2, padding 1), each through two of spconv's pair
generators: `native` (spconv.pytorch.ops.get_indice_pairs, ConvAlgo.Native: per-offset (in, out) pair lists)
and `implicit_gemm` (ops.get_indice_pairs_implicit_gemm, ConvAlgo.MaskImplicitGemm, inference: the per-output
input index of each offset, SubMConv3d's and SparseConv3d's default algorithm). Coordinates (batch, z, y, x) in
the grid --shape (SECOND's KITTI grid by default), as both other benchmarks take them. Timing: host wall clock
around the call with the device synchronised, warm-up --warmup, median and minimum of --runs. `deterministic`:
two calls gave the same pairs in the same order (the check compares them as sets per offset). `pairs`: all
the convolution's pairs; `pairs_stored`: those the generator writes (native submanifold: the offsets before the
centre, the rest following by symmetry).
"""
import argparse
import importlib
import json
import os
import statistics
import sys
import time

import numpy as np

CASES = {"subm_k3": (3, 1, 1, True), "conv_k3s2": (3, 2, 1, False)}  # name: (k, stride, padding, subm)


def load_kit(path):
    sys.path.insert(0, os.path.abspath(path))
    return importlib.import_module("bench_rulebook")


def pairs_native(torch, res, n_in, kvol, subm):
    """(in, out) index tensors per offset from get_indice_pairs' [2, K, N] pairs and per-offset counts. For a
    submanifold convolution spconv stores only the offsets before the centre: the centre pairs every voxel with
    itself and offset K-1-k is offset k with in and out swapped (the kernel is symmetric about the centre); those
    are filled in here when they are empty, and the stored count is kept."""
    out_inds, pair, num = res
    lists = []
    for kk in range(kvol):
        m = int(num[kk])
        lists.append((pair[0, kk, :m].long(), pair[1, kk, :m].long()))
    stored = sum(x[0].numel() for x in lists)
    centre = kvol // 2
    if subm and all(lists[kk][0].numel() == 0 for kk in range(centre, kvol)):
        ident = torch.arange(n_in, device=out_inds.device)
        lists[centre] = (ident, ident)
        for kk in range(centre + 1, kvol):
            pin, pout = lists[kvol - 1 - kk]
            lists[kk] = (pout, pin)
    return out_inds, lists, stored


def pairs_igemm(torch, res, kvol):
    """(in, out) per offset from the implicit-GEMM forward pairs [K, N_out] (input index or -1)."""
    out_inds, _num, pair_fwd = res[0], res[1], res[2]
    n_out = out_inds.shape[0]
    lists = []
    for kk in range(kvol):
        col = pair_fwd[kk, :n_out]
        o = torch.nonzero(col >= 0).flatten()
        lists.append((col[o].long(), o))
    return out_inds, lists, sum(x[0].numel() for x in lists)


def compare(torch, kit, c_bzyx, shape, k, s, p, subm, out_inds, lists):
    """Against the kit's reference: the same output coordinates (as a set; spconv's order is its own) and, per
    offset, the same (in, out) pairs; spconv may number the offsets in the reverse order, which is reported."""
    out_ref, pairs_ref = kit.reference(torch, c_bzyx, shape, k, s, p, subm)
    out_sp = out_inds.long()
    n_out = out_sp.shape[0]
    if n_out != out_ref.shape[0]:
        return "MISMATCH: %d outputs, reference %d" % (n_out, out_ref.shape[0])
    sh = torch.tensor(shape, dtype=torch.long, device=out_sp.device)
    osh = sh if subm else (sh + 2 * p - (k - 1) - 1) // s + 1
    lin = lambda x: ((x[:, 0] * osh[0] + x[:, 1]) * osh[1] + x[:, 2]) * osh[2] + x[:, 3]
    ref_lin, sp_lin = lin(out_ref), lin(out_sp)
    order = torch.argsort(ref_lin)
    pos = torch.searchsorted(ref_lin[order], sp_lin).clamp(max=n_out - 1)
    remap = order[pos]  # spconv output index -> reference output index
    if not torch.equal(ref_lin[remap], sp_lin):
        return "MISMATCH: output coordinate sets differ"

    def same(kk_sp, kk_ref):
        pin, pout = lists[kk_sp]
        rin, rout = pairs_ref[kk_ref]
        if pin.numel() != rin.numel():
            return False
        o = remap[pout]
        a = torch.argsort(o * (int(c_bzyx.shape[0]) + 1) + pin)
        b = torch.argsort(rout * (int(c_bzyx.shape[0]) + 1) + rin)
        return torch.equal(o[a], rout[b]) and torch.equal(pin[a], rin[b])

    kvol = k ** 3
    if all(same(kk, kk) for kk in range(kvol)):
        return "exact"
    if all(same(kk, kvol - 1 - kk) for kk in range(kvol)):
        return "exact (offsets numbered in reverse)"
    bad = [kk for kk in range(kvol) if not same(kk, kk)]
    return "MISMATCH: offsets %s" % bad[:5]


def same_result(torch, a, b):
    return all(torch.equal(x[0], y[0]) and torch.equal(x[1], y[1]) for x, y in zip(a[1], b[1])) and torch.equal(
        a[0], b[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kit", required=True, help="the torchsparse folder of the peer kit (bench_rulebook.py)")
    ap.add_argument("--npy", help="int32 [M, 4] (batch, z, y, x); default: the kit's synthetic scan")
    ap.add_argument("--voxels", type=int, default=125000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shape", default="41,1600,1408")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", help="append the JSON lines to this file too")
    ap.add_argument("--save-input", help="write the coordinates used (for bench_rulebook --npy)")
    args = ap.parse_args()
    shape = tuple(int(x) for x in args.shape.split(","))
    kit = load_kit(args.kit)
    coords = kit.load_npy(args.npy, shape) if args.npy else kit.synth_lidar(args.voxels, shape, args.seed, 1, "scan")
    if args.save_input:
        np.save(args.save_input, np.ascontiguousarray(coords, dtype=np.int32))

    import torch
    import spconv
    from spconv.core import ConvAlgo
    from spconv.pytorch import ops

    dev = torch.device("cuda")
    c_bzyx = torch.from_numpy(np.ascontiguousarray(coords)).to(dev).int()
    batch = int(coords[:, 0].max()) + 1 if len(coords) else 1
    recs, fail = [], False
    for case, (k, s, p, subm) in CASES.items():
        ks, st, pd, dl, op = [k] * 3, [s] * 3, [p] * 3, [1] * 3, [0] * 3
        kvol = k ** 3
        calls = {
            "native": lambda: pairs_native(
                torch, ops.get_indice_pairs(c_bzyx, batch, list(shape), ConvAlgo.Native, ks, st, pd, dl, op, subm),
                c_bzyx.shape[0], kvol, subm),
            "implicit_gemm": lambda: pairs_igemm(
                torch, ops.get_indice_pairs_implicit_gemm(c_bzyx, batch, list(shape), ConvAlgo.MaskImplicitGemm, ks,
                                                          st, pd, dl, op, subm, False, is_train=False), kvol),
        }
        for generator, fn in calls.items():
            rec = dict(case=case, peer="spconv %s" % spconv.__version__, generator=generator, voxels=len(coords),
                       device=torch.cuda.get_device_name(dev))
            try:
                first = fn()
                torch.cuda.synchronize()
                for _ in range(args.warmup):
                    fn()
                times = []
                for _ in range(args.runs):
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    r = fn()
                    torch.cuda.synchronize()
                    times.append((time.perf_counter() - t0) * 1e3)
                rec.update(median_ms=statistics.median(times), min_ms=min(times), runs=args.runs,
                           outputs=int(first[0].shape[0]), pairs=int(sum(x[0].numel() for x in first[1])),
                           pairs_stored=int(first[2]),
                           deterministic=same_result(torch, first, r),
                           check=compare(torch, kit, c_bzyx, shape, k, s, p, subm, first[0], first[1]))
                fail |= rec["check"].startswith("MISMATCH")
            except Exception as e:  # noqa: BLE001 - a peer that does not run is reported, not hidden
                rec["error"] = repr(e)
                fail = True
            line = json.dumps(rec)
            print(line, flush=True)
            recs.append(rec)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(line + "\n")
    for r in recs:
        print("%-10s %-14s %s" % (r["case"], r["generator"],
                                  "median %.3f ms, min %.3f, %s pairs, %s%s" % (
                                      r["median_ms"], r["min_ms"], r["pairs"], r["check"],
                                      "" if r["deterministic"] else ", NONDETERMINISTIC")
                                  if "median_ms" in r else r["error"]), file=sys.stderr)
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
