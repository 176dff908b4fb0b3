"""s3d.nms, batched_nms, soft_nms, rotated_nms and NmsEngine.

Three kinds of checks:
- the C++ CPU oracle: nms-filter (docs/NMS-FILTER.md) on a CSV written here, whose keep lists (and soft-NMS
  scores) the Python results must equal bit for bit;
- independent NumPy references of the documented semantics (src/detection/include/s3d/detection/nms.hpp):
  torchvision's float32 IoU, stable descending sort, suppression iff IoU > threshold, soft-NMS decay;
- the argument contract: ValueError naming the argument, s3d.InvalidArgument / s3d.DataError from the library.
"""
import math
import subprocess

import numpy as np
import pytest

import s3d
from conftest import devices, host, on

SEEDS = [0, 1, 2, 3]


# ---------------------------------------------------------------------------------------------------------
# Inputs


def clustered_boxes(seed, n=240, clusters=14):
    """Detector-like xyxy boxes: jittered copies around random centres, scores with ties (two decimals), exact
    duplicates, and zero-width, zero-height and inverted boxes (n >= 80). Returns (boxes float32 [n, 4], scores float32
    [n], classes int64 [n])."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-50.0, 400.0, (clusters, 2))
    sizes = rng.uniform(6.0, 80.0, (clusters, 2))
    member = rng.integers(0, clusters, n)
    cxcy = centres[member] + rng.normal(0.0, 0.12, (n, 2)) * sizes[member]
    wh = sizes[member] * rng.uniform(0.75, 1.3, (n, 2))
    boxes = np.concatenate([cxcy - wh / 2, cxcy + wh / 2], axis=1)
    scores = np.round(rng.uniform(0.0, 1.0, n), 2)  # ~100 distinct values: many ties
    classes = rng.integers(0, 3, n).astype(np.int64)
    if n < 80:
        return boxes.astype(np.float32), scores.astype(np.float32), classes
    pick = rng.choice(n, 40, replace=False)
    boxes[pick[0:6], 2] = boxes[pick[0:6], 0]  # zero width
    boxes[pick[6:12], 3] = boxes[pick[6:12], 1]  # zero height
    boxes[pick[12:18]] = boxes[pick[12:18]][:, [2, 3, 0, 1]]  # inverted
    boxes[pick[18:30]] = boxes[pick[30:40].repeat(2)[:12]]  # exact duplicates ...
    scores[pick[18:24]] = scores[pick[30:40].repeat(2)[:6]]  # ... some of them with equal scores too
    return boxes.astype(np.float32), scores.astype(np.float32), classes


def rotated_boxes(seed, n=90, clusters=10):
    """(cx, cy, w, h, angle) boxes in clusters with random angles (radians), a few with w or h <= 0."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.0, 200.0, (clusters, 2))
    sizes = rng.uniform(8.0, 40.0, (clusters, 2))
    base_angle = rng.uniform(-np.pi, np.pi, clusters)
    member = rng.integers(0, clusters, n)
    cxcy = centres[member] + rng.normal(0.0, 0.15, (n, 2)) * sizes[member]
    wh = sizes[member] * rng.uniform(0.8, 1.25, (n, 2))
    angle = base_angle[member] + rng.normal(0.0, 0.25, n)
    boxes = np.concatenate([cxcy, wh, angle[:, None]], axis=1)
    boxes[rng.choice(n, 4, replace=False), 2] = 0.0  # degenerate: never suppress, never suppressed
    scores = np.round(rng.uniform(0.0, 1.0, n), 2)
    classes = rng.integers(0, 2, n).astype(np.int64)
    return boxes.astype(np.float32), scores.astype(np.float32), classes



# ---------------------------------------------------------------------------------------------------------
# NumPy references of the documented semantics


def iou_matrix(boxes):
    """torchvision's IoU in float32, no +1: inter / (area_a + area_b - inter); zero-area and inverted boxes give
    inter = 0 (IoU 0 or NaN, which never passes a threshold)."""
    b = boxes.astype(np.float32)
    x1, y1, x2, y2 = (b[:, k] for k in range(4))
    area = (x2 - x1) * (y2 - y1)
    w = np.maximum(np.float32(0), np.minimum(x2[:, None], x2[None, :]) - np.maximum(x1[:, None], x1[None, :]))
    h = np.maximum(np.float32(0), np.minimum(y2[:, None], y2[None, :]) - np.maximum(y1[:, None], y1[None, :]))
    inter = w * h
    with np.errstate(divide="ignore", invalid="ignore"):
        out = inter / (area[:, None] + area[None, :] - inter)
    assert out.dtype == np.float32
    return out


def rank(scores):
    """Descending score, ties by lower index (a stable sort)."""
    return np.argsort(-scores, kind="stable")


def greedy(order, iou, threshold):
    removed = np.zeros(len(order), bool)
    keep = []
    for i in order:
        if removed[i]:
            continue
        keep.append(i)
        removed |= iou[i] > threshold  # NaN compares false
    return np.array(keep, np.int64)


def ref_nms(boxes, scores, threshold):
    return greedy(rank(scores), iou_matrix(boxes), threshold)


def by_score(indices, scores):
    """Indices ordered by descending score, ties by lower index."""
    indices = np.asarray(indices, np.int64)
    return indices[np.lexsort((indices, -scores[indices]))]


def ref_batched(boxes, scores, groups, threshold):
    kept = []
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g)
        kept.extend(members[ref_nms(boxes[members], scores[members], threshold)])
    return by_score(kept, scores)


def soft_weight(iou, method, threshold, sigma):
    iou = np.asarray(iou, np.float32)
    if method == "linear":
        return np.where(iou > threshold, np.float32(1) - iou, np.float32(1)).astype(np.float32)
    x = -(iou * iou) / np.float32(sigma)  # float32, as the kernels
    with np.errstate(invalid="ignore"):
        w = np.where(x < 0, np.exp(x.astype(np.float64)), 1.0)  # exp(0) = 1, NaN -> 1 (no overlap)
    return w.astype(np.float32)


def ref_soft(boxes, scores, threshold, sigma, min_score, method, groups=None):
    """mmcv soft_nms with deterministic ties, per group: select the live box of highest current score (ties:
    lower index), decay every other live box by its IoU weight with it, drop scores below min_score; output by
    descending final score, ties by lower index."""
    iou = iou_matrix(boxes)
    groups = np.zeros(len(scores), np.int64) if groups is None else groups
    final = np.zeros(len(scores), np.float32)
    kept = []
    for g in np.unique(groups):
        live = np.flatnonzero((groups == g) & (scores >= np.float32(min_score)))
        cur = scores[live].astype(np.float32)
        while live.size:
            best = np.flatnonzero(cur == cur.max()).min()
            a = live[best]
            kept.append(a)
            final[a] = cur[best]
            live = np.delete(live, best)
            cur = np.delete(cur, best)
            cur = (cur * soft_weight(iou[a, live], method, threshold, sigma)).astype(np.float32)
            stay = ~(cur < np.float32(min_score))
            live, cur = live[stay], cur[stay]
    keep = by_score(kept, final)
    return keep, final[keep]


def rotated_corners(box):
    """Corners (cx, cy) + R(angle) (+-w/2, +-h/2), R = [[cos, -sin], [sin, cos]], counter-clockwise (y up)."""
    cx, cy, w, h, a = (float(v) for v in box)
    c, s = math.cos(a), math.sin(a)
    local = [(w / 2, h / 2), (-w / 2, h / 2), (-w / 2, -h / 2), (w / 2, -h / 2)]
    return [(cx + c * u - s * v, cy + s * u + c * v) for u, v in local]


def clip(polygon, edge_from, edge_to):
    """Sutherland-Hodgman: the part of `polygon` left of the directed edge."""
    (ex0, ey0), (ex1, ey1) = edge_from, edge_to
    side = [(ex1 - ex0) * (py - ey0) - (ey1 - ey0) * (px - ex0) for px, py in polygon]
    out = []
    for k in range(len(polygon)):
        j = (k + 1) % len(polygon)
        if (side[k] >= 0) != (side[j] >= 0):
            u = side[k] / (side[k] - side[j])
            out.append((polygon[k][0] + (polygon[j][0] - polygon[k][0]) * u,
                        polygon[k][1] + (polygon[j][1] - polygon[k][1]) * u))
        if side[j] >= 0:
            out.append(polygon[j])
    return out


def rotated_iou(a, b):
    """Exact IoU of two rotated rectangles in double (w or h <= 0: no intersection)."""
    if not (a[2] > 0 and a[3] > 0 and b[2] > 0 and b[3] > 0):
        inter = 0.0
    else:
        pa = rotated_corners(a)
        poly = rotated_corners(b)
        for k in range(4):
            if not poly:
                break
            poly = clip(poly, pa[k], pa[(k + 1) % 4])
        inter = 0.0
        if len(poly) >= 3:
            inter = max(0.0, 0.5 * sum(poly[k][0] * poly[(k + 1) % len(poly)][1] -
                                       poly[(k + 1) % len(poly)][0] * poly[k][1] for k in range(len(poly))))
    union = float(a[2]) * float(a[3]) + float(b[2]) * float(b[3]) - inter
    return inter / union if union != 0 else float("nan")


def rotated_iou_matrix(boxes):
    n = len(boxes)
    out = np.zeros((n, n))
    radius = 0.5 * np.hypot(boxes[:, 2].astype(np.float64), boxes[:, 3].astype(np.float64))
    centre = boxes[:, :2].astype(np.float64)
    for i in range(n):
        near = np.hypot(*(centre - centre[i]).T) < radius + radius[i]
        for j in np.flatnonzero(near):
            if j > i:
                out[i, j] = out[j, i] = rotated_iou(boxes[i], boxes[j])
    return out


def threshold_away_from(iou, candidates=(0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)):
    """A threshold that no pair's IoU comes within 1e-4 of (the reference is double, the kernels float32)."""
    values = iou[np.triu_indices(len(iou), 1)]
    values = values[np.isfinite(values) & (values > 0)]
    gaps = [np.abs(values - t).min() for t in candidates]
    best = int(np.argmax(gaps))
    assert gaps[best] > 1e-4
    return candidates[best]


def ref_rotated(boxes, scores, threshold, groups=None):
    iou = rotated_iou_matrix(boxes)
    if groups is not None:
        iou = np.where(groups[:, None] == groups[None, :], iou, 0.0)
    return greedy(rank(scores), iou, threshold)


def test_reference_iou_is_torchvision_formula():
    # The reference itself, on numbers worked by hand: 10x10 boxes overlapping 9x9 -> 81 / (100 + 100 - 81).
    iou = iou_matrix(np.array([[0, 0, 10, 10], [1, 1, 11, 11], [5, 5, 5, 9]], np.float32))
    assert iou[0, 1] == np.float32(81) / np.float32(119)
    assert iou[0, 2] == 0 and not np.isfinite(iou[2, 2])  # zero area: no intersection, 0/0 with itself


# ---------------------------------------------------------------------------------------------------------
# Against the NumPy references


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.5, 0.7, 1.0])
def test_nms_matches_greedy_reference(device, seed, threshold, request):
    boxes, scores, _ = clustered_boxes(seed)
    expected = ref_nms(boxes, scores, threshold)
    keep = s3d.nms(on(device, boxes), on(device, scores), threshold)
    keep = host(keep)
    assert keep.dtype == np.int64
    np.testing.assert_array_equal(keep, expected)
    if 0.0 < threshold < 1.0:
        assert 0 < len(keep) < len(boxes)  # the data exercise suppression at all


def test_nms_properties_beyond_the_reference():
    boxes, scores, _ = clustered_boxes(5)
    keep = s3d.nms(boxes, scores, 0.5)
    iou = iou_matrix(boxes)
    # no two kept boxes overlap past the threshold; every dropped box overlaps a kept, higher-ranked one
    assert not (iou[np.ix_(keep, keep)][~np.eye(len(keep), dtype=bool)] > 0.5).any()
    position = np.empty(len(scores), np.int64)
    position[rank(scores)] = np.arange(len(scores))
    for i in np.setdiff1d(np.arange(len(scores)), keep):
        assert any(iou[k, i] > 0.5 and position[k] < position[i] for k in keep)
    # degenerate boxes (zero or negative area) are never suppressed
    x1, y1, x2, y2 = boxes.T
    assert set(np.flatnonzero((x2 <= x1) | (y2 <= y1))) <= set(keep.tolist())
    # order: descending score, ties by lower index
    np.testing.assert_array_equal(keep, by_score(keep, scores))


def test_nms_ties_keep_the_lower_index_and_nan_scores_are_dropped():
    box = [10.0, 10.0, 20.0, 20.0]
    boxes = np.array([box, box, box, [100, 100, 110, 110]], np.float32)
    scores = np.array([0.5, 0.7, 0.7, np.nan], np.float32)
    assert s3d.nms(boxes, scores, 0.5).tolist() == [1]
    scores[3] = 0.1
    assert s3d.nms(boxes, scores, 0.5).tolist() == [1, 3]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("seed", SEEDS)
def test_batched_nms_is_per_group_nms_merged_by_score(device, seed, request):
    boxes, scores, classes = clustered_boxes(seed)
    groups = classes * 1000 - 7  # any int64 values, negative included
    keep = host(s3d.batched_nms(*(on(device, a) for a in (boxes, scores, groups)), 0.5))
    np.testing.assert_array_equal(keep, ref_batched(boxes, scores, groups, 0.5))
    assert len(keep) > len(s3d.nms(boxes, scores, 0.5))  # groups really do not suppress each other


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("method, threshold, sigma", [("gaussian", 0.3, 0.5), ("gaussian", 0.3, 0.1),
                                                      ("linear", 0.3, 0.5), ("linear", 0.6, 0.5)])
def test_soft_nms_matches_reference(device, seed, method, threshold, sigma, request):
    boxes, scores, _ = clustered_boxes(seed, n=160)
    keep, final = host(s3d.soft_nms(on(device, boxes), on(device, scores),
                                    threshold, sigma=sigma, method=method))
    ref_keep, ref_scores = ref_soft(boxes, scores, threshold, sigma, 1e-3, method)
    assert keep.dtype == np.int64 and final.dtype == np.float32
    np.testing.assert_array_equal(keep, ref_keep)
    np.testing.assert_allclose(final, ref_scores, rtol=1e-6, atol=0)
    assert (final <= scores[keep]).all() and (final < scores[keep]).any()  # decayed, never raised
    assert (final >= np.float32(1e-3)).all()


@pytest.mark.parametrize("seed", SEEDS)
def test_soft_nms_groups_and_min_score(seed):
    boxes, scores, classes = clustered_boxes(seed, n=160)
    keep, final = s3d.soft_nms(boxes, scores, 0.3, sigma=0.3, min_score=0.05, method="gaussian", idxs=classes)
    ref_keep, ref_scores = ref_soft(boxes, scores, 0.3, 0.3, 0.05, "gaussian", classes)
    np.testing.assert_array_equal(keep, ref_keep)
    np.testing.assert_allclose(final, ref_scores, rtol=1e-6, atol=0)
    assert final.min() >= np.float32(0.05)


def test_linear_soft_nms_decays_by_one_minus_iou():
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [0, 0, 10, 2]], np.float32)
    scores = np.array([0.9, 0.8, 0.7], np.float32)
    keep, final = s3d.soft_nms(boxes, scores, 0.5, method="linear")
    iou = iou_matrix(boxes)
    # box 1 overlaps box 0 past 0.5 and decays to 0.8 (1 - IoU) = 0.26; box 2 (IoU 0.2 with box 0, 0.08 with box 1)
    # is not decayed and now ranks before box 1
    assert keep.tolist() == [0, 2, 1]
    assert final[2] == np.float32(0.8) * (np.float32(1) - iou[0, 1]) and final[1] == np.float32(0.7)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("seed", SEEDS[:3])
def test_rotated_nms_matches_polygon_reference(device, seed, request):
    boxes, scores, classes = rotated_boxes(seed)
    iou = rotated_iou_matrix(boxes)
    threshold = threshold_away_from(iou)
    keep = host(s3d.rotated_nms(on(device, boxes), on(device, scores), threshold))
    np.testing.assert_array_equal(keep, greedy(rank(scores), iou, threshold))
    assert 0 < len(keep) < len(boxes)
    same = np.where(classes[:, None] == classes[None, :], iou, 0.0)
    threshold = threshold_away_from(same)
    keep = host(s3d.rotated_nms(on(device, boxes), on(device, scores), threshold,
                                idxs=on(device, classes)))
    np.testing.assert_array_equal(keep, by_score(greedy(rank(scores), same, threshold), scores))


def test_rotated_angle_is_radians_counter_clockwise_in_y_up():
    theta = 0.4
    a = [0.0, 0.0, 10.0, 2.0, theta]
    along = [4 * math.cos(theta), 4 * math.sin(theta), 10.0, 2.0, theta]  # shifted along a's own w axis
    mirrored = [4 * math.cos(theta), -4 * math.sin(theta), 10.0, 2.0, theta]
    boxes = np.array([a, along, mirrored], np.float32)
    scores = np.array([0.9, 0.8, 0.7], np.float32)
    # shifted 4 along its long side, the box overlaps 6x2 of 10x2: IoU 12 / 28 = 0.43 > 0.4; the mirrored
    # shift (what the opposite angle convention would make of it) leaves a thin sliver
    assert rotated_iou(boxes[0], boxes[1]) == pytest.approx(12 / 28, rel=1e-6)
    assert rotated_iou(boxes[0], boxes[2]) < 0.2
    assert s3d.rotated_nms(boxes, scores, 0.4).tolist() == [0, 2]
    # a quarter turn of a 10x2 box is the 2x10 box: suppressed at any threshold below 1
    quarter = np.array([[5, 5, 10, 2, math.pi / 2], [5, 5, 2, 10, 0]], np.float32)
    assert s3d.rotated_nms(quarter, scores[:2], 0.99).tolist() == [0]
    # an axis-aligned 10x2 and the same box turned by a quarter: 4 / 36 = 0.111
    cross = np.array([[5, 5, 10, 2, 0], [5, 5, 10, 2, math.pi / 2]], np.float32)
    assert s3d.rotated_nms(cross, scores[:2], 0.1).tolist() == [0]
    assert s3d.rotated_nms(cross, scores[:2], 0.12).tolist() == [0, 1]


def test_rotated_nms_is_invariant_under_a_rigid_motion_of_the_scene():
    boxes, scores, _ = rotated_boxes(7)
    phi = 0.7
    c, s = math.cos(phi), math.sin(phi)
    moved = boxes.astype(np.float64).copy()
    moved[:, 0] = c * boxes[:, 0] - s * boxes[:, 1] + 30.0
    moved[:, 1] = s * boxes[:, 0] + c * boxes[:, 1] - 12.0
    moved[:, 4] = boxes[:, 4] + phi
    moved = moved.astype(np.float32)
    threshold = threshold_away_from(np.maximum(rotated_iou_matrix(boxes), rotated_iou_matrix(moved)))
    keep = s3d.rotated_nms(boxes, scores, threshold)
    np.testing.assert_array_equal(s3d.rotated_nms(moved, scores, threshold), keep)
    assert 0 < len(keep) < len(boxes)


# ---------------------------------------------------------------------------------------------------------
# Against the C++ CPU oracle: nms-filter


def number(value):
    """A float32 value as text that reads back (through double) as exactly that float32."""
    return repr(float(np.float32(value)))


def write_csv(path, boxes, scores, classes, columns):
    lines = ["id," + ",".join(columns) + ",score,class"]
    for i, (box, score, cls) in enumerate(zip(boxes, scores, classes)):
        lines.append(",".join([str(i), *map(number, box), number(score), str(int(cls))]))
    path.write_text("\n".join(lines) + "\n")


def nms_filter(run_tool, tmp_path, boxes, scores, classes, *flags, rotated=False):
    """Runs nms-filter on a CSV of the boxes; returns (indices in NMS output order, {input index: score text} of
    the written records)."""
    columns = ["cx", "cy", "w", "h", "angle"] if rotated else ["x1", "y1", "x2", "y2"]
    source = tmp_path / "dets.csv"
    write_csv(source, boxes, scores, classes, columns)
    common = ["--device", "cpu", "--threads", "1", "-q", "--overwrite", "--group-by", "none",
              *(["--rotated"] if rotated else []), *flags, source]
    run_tool("nms-filter", *common, "--emit", "indices", "-o", tmp_path / "keep.txt")
    run_tool("nms-filter", *common, "-o", tmp_path / "kept.csv")
    indices = np.array([int(x) for x in (tmp_path / "keep.txt").read_text().split()], np.int64)
    lines = (tmp_path / "kept.csv").read_text().splitlines()
    header = lines[0].split(",")
    records = {}
    for line in lines[1:]:
        fields = dict(zip(header, line.split(",")))
        records[int(fields["id"])] = fields["score"]
    assert sorted(records) == sorted(indices.tolist())
    return indices, records


@pytest.mark.parametrize("seed", SEEDS[:2])
@pytest.mark.parametrize("threshold", [0.0, 0.25, 0.5, 0.8])
def test_nms_equals_nms_filter(run_tool, tmp_path, seed, threshold):
    boxes, scores, classes = clustered_boxes(seed)
    indices, _ = nms_filter(run_tool, tmp_path, boxes, scores, classes, "--iou", threshold)
    np.testing.assert_array_equal(s3d.nms(boxes, scores, threshold), indices)


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_batched_nms_equals_nms_filter_per_class(run_tool, tmp_path, seed):
    boxes, scores, classes = clustered_boxes(seed)
    indices, _ = nms_filter(run_tool, tmp_path, boxes, scores, classes, "--iou", 0.45, "--per-class")
    np.testing.assert_array_equal(s3d.batched_nms(boxes, scores, classes, 0.45), indices)
    engine = s3d.NmsEngine("cpu")
    np.testing.assert_array_equal(engine.batched_nms(boxes, scores, classes, 0.45), indices)


@pytest.mark.parametrize("seed", SEEDS[:2])
@pytest.mark.parametrize("method, flags, kwargs", [
    ("gaussian", ["--sigma", 0.5], dict(sigma=0.5)),
    ("gaussian", ["--sigma", 0.2], dict(sigma=0.2)),
    ("linear", ["--iou", 0.3], dict(iou_threshold=0.3)),
    ("linear", ["--iou", 0.55, "--per-class"], dict(iou_threshold=0.55, per_class=True)),
])
def test_soft_nms_equals_nms_filter_bit_for_bit(run_tool, tmp_path, seed, method, flags, kwargs):
    boxes, scores, classes = clustered_boxes(seed, n=160)
    indices, records = nms_filter(run_tool, tmp_path, boxes, scores, classes, "--method", "soft-" + method, *flags)
    kwargs = dict(kwargs)
    idxs = classes if kwargs.pop("per_class", False) else None
    keep, final = s3d.soft_nms(boxes, scores, method=method, idxs=idxs, **kwargs)
    np.testing.assert_array_equal(keep, indices)
    written = np.array([np.float32(records[i]) for i in keep.tolist()], np.float32)
    np.testing.assert_array_equal(final.view(np.uint32), written.view(np.uint32))
    assert (final != scores[keep]).any()


@pytest.mark.parametrize("seed", SEEDS[:2])
@pytest.mark.parametrize("threshold, per_class", [(0.3, False), (0.5, False), (0.4, True)])
def test_rotated_nms_equals_nms_filter(run_tool, tmp_path, seed, threshold, per_class):
    boxes, scores, classes = rotated_boxes(seed)
    flags = ["--iou", threshold] + (["--per-class"] if per_class else [])
    indices, _ = nms_filter(run_tool, tmp_path, boxes, scores, classes, *flags, rotated=True)
    keep = s3d.rotated_nms(boxes, scores, threshold, idxs=classes if per_class else None)
    np.testing.assert_array_equal(keep, indices)
    assert 0 < len(keep) < len(boxes)


def test_non_finite_coordinates_fail_in_the_tool_and_raise_data_error(run_tool, tmp_path):
    boxes, scores, classes = clustered_boxes(0, n=20)
    boxes[7, 2] = np.nan
    with pytest.raises(subprocess.CalledProcessError) as failed:
        nms_filter(run_tool, tmp_path, boxes, scores, classes)
    assert failed.value.returncode == 1
    with pytest.raises(s3d.DataError, match="box 7"):
        s3d.nms(boxes, scores, 0.5)
    boxes[7, 2] = np.inf
    with pytest.raises(s3d.DataError, match="box 7"):
        s3d.batched_nms(boxes, scores, classes, 0.5)
    with pytest.raises(s3d.DataError, match="box 7"):
        s3d.soft_nms(boxes, scores)
    rot, rot_scores, _ = rotated_boxes(0, n=12)
    rot[3, 4] = -np.inf
    with pytest.raises(s3d.DataError, match="box 3"):
        s3d.rotated_nms(rot, rot_scores, 0.5)
    with pytest.raises(s3d.DataError):
        s3d.NmsEngine("cpu").nms(boxes, scores, 0.5)


# ---------------------------------------------------------------------------------------------------------
# NmsEngine


@pytest.mark.parametrize("device", devices())
def test_engine_reuses_its_buffers_across_sizes(device, request):
    engine = s3d.NmsEngine(device)
    assert engine.device == ("cpu" if device == "cpu" else "cuda:0")
    for seed, n in [(0, 240), (1, 17), (2, 600), (3, 1), (0, 240)]:
        boxes, scores, classes = clustered_boxes(seed, n=max(n, 80))
        boxes, scores, classes = boxes[:n].copy(), scores[:n].copy(), classes[:n].copy()
        keep = host(engine.nms(on(device, boxes), on(device, scores), 0.5))
        np.testing.assert_array_equal(keep, ref_nms(boxes, scores, 0.5))
        keep = host(engine.batched_nms(*(on(device, a) for a in (boxes, scores, classes)), 0.6))
        np.testing.assert_array_equal(keep, ref_batched(boxes, scores, classes, 0.6))


def test_engine_of_another_device_rejects_the_arrays(request):
    if "cuda" not in devices():
        with pytest.raises(s3d.DeviceUnavailable):
            s3d.NmsEngine("cuda")
        return
    torch = request.getfixturevalue("torch")
    boxes, scores, _ = clustered_boxes(0, n=50)
    with pytest.raises(ValueError, match="boxes"):
        s3d.NmsEngine("cuda").nms(boxes, scores, 0.5)
    with pytest.raises(ValueError, match="boxes"):
        s3d.NmsEngine("cpu").nms(torch.from_numpy(boxes).cuda(), torch.from_numpy(scores).cuda(), 0.5)


def test_bad_device_name_is_invalid_argument():
    with pytest.raises(s3d.InvalidArgument, match="gpu"):
        s3d.NmsEngine("gpu")


@pytest.mark.parametrize("device", [d for d in devices() if d == "cuda"])
def test_cuda_matches_cpu_bit_for_bit(device, request):
    torch = request.getfixturevalue("torch")
    boxes, scores, classes = clustered_boxes(11, n=3000)
    cuda = [torch.from_numpy(a).cuda() for a in (boxes, scores, classes)]
    keep = s3d.nms(cuda[0], cuda[1], 0.5)
    assert keep.is_cuda and keep.dtype == torch.int64
    np.testing.assert_array_equal(host(keep), s3d.nms(boxes, scores, 0.5))
    np.testing.assert_array_equal(host(s3d.batched_nms(*cuda, 0.5)), s3d.batched_nms(boxes, scores, classes, 0.5))
    k_gpu, s_gpu = host(s3d.soft_nms(cuda[0], cuda[1], idxs=cuda[2]))
    k_cpu, s_cpu = s3d.soft_nms(boxes, scores, idxs=classes)
    np.testing.assert_array_equal(k_gpu, k_cpu)
    np.testing.assert_array_equal(s_gpu.view(np.uint32), s_cpu.view(np.uint32))
    rot, rot_scores, rot_classes = rotated_boxes(11, n=800)
    np.testing.assert_array_equal(
        host(s3d.rotated_nms(torch.from_numpy(rot).cuda(), torch.from_numpy(rot_scores).cuda(), 0.4)),
        s3d.rotated_nms(rot, rot_scores, 0.4))


# ---------------------------------------------------------------------------------------------------------
# The argument contract


def good():
    boxes, scores, classes = clustered_boxes(0, n=8)
    return boxes, scores, classes


@pytest.mark.parametrize("call, message", [
    (lambda b, s, c: s3d.nms(b.astype(np.float64), s, 0.5), "boxes: expected float32"),
    (lambda b, s, c: s3d.nms(b[:, :3].copy(), s, 0.5), r"boxes: expected shape \[N, 4\]"),
    (lambda b, s, c: s3d.nms(b.reshape(2, 4, 4), s, 0.5), "boxes: expected"),
    (lambda b, s, c: s3d.nms(np.asfortranarray(b), s, 0.5), "boxes: expected a C-contiguous array"),
    (lambda b, s, c: s3d.nms(b.tolist(), s, 0.5), "boxes: expected an array"),
    (lambda b, s, c: s3d.nms(b, s.astype(np.float16), 0.5), "scores: expected float32"),
    (lambda b, s, c: s3d.nms(b, s[:-1].copy(), 0.5), r"scores: expected shape \[8\]"),
    (lambda b, s, c: s3d.nms(b, s[:, None].copy(), 0.5), "scores: expected shape"),
    (lambda b, s, c: s3d.batched_nms(b, s, c.astype(np.int32), 0.5), "idxs: expected int64"),
    (lambda b, s, c: s3d.batched_nms(b, s, c[:5].copy(), 0.5), r"idxs: expected shape \[8\]"),
    (lambda b, s, c: s3d.soft_nms(b, s, idxs=c.astype(np.float32)), "idxs: expected int64"),
    (lambda b, s, c: s3d.soft_nms(b[:, :2].copy(), s), "boxes: expected shape"),
    (lambda b, s, c: s3d.soft_nms(b, s, method="hard"), "method"),
    (lambda b, s, c: s3d.rotated_nms(b, s, 0.5), r"boxes: expected shape \[N, 5\]"),
    (lambda b, s, c: s3d.NmsEngine().nms(b, s.astype(np.float64), 0.5), "scores: expected float32"),
    (lambda b, s, c: s3d.NmsEngine().batched_nms(b, s, c[:3].copy(), 0.5), "idxs: expected shape"),
])
def test_bad_arrays_raise_value_error_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call(*good())


@pytest.mark.parametrize("call, message", [
    (lambda b, s, c: s3d.nms(b, s, 2.0), "iou_threshold"),
    (lambda b, s, c: s3d.nms(b, s, -0.1), "iou_threshold"),
    (lambda b, s, c: s3d.nms(b, s, float("nan")), "iou_threshold"),
    (lambda b, s, c: s3d.batched_nms(b, s, c, 1.5), "iou_threshold"),
    (lambda b, s, c: s3d.NmsEngine().nms(b, s, 2.0), "iou_threshold"),
    (lambda b, s, c: s3d.soft_nms(b, s, 2.0), "iou_threshold"),
    (lambda b, s, c: s3d.soft_nms(b, s, sigma=0.0), "sigma"),
    (lambda b, s, c: s3d.soft_nms(b, s, sigma=float("inf")), "sigma"),
    (lambda b, s, c: s3d.soft_nms(b, s, min_score=-0.5), "soft_min_score"),
])
def test_bad_parameters_raise_invalid_argument(call, message):
    with pytest.raises(s3d.InvalidArgument, match=message) as raised:
        call(*good())
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, s3d.Error)


def test_a_bad_parameter_is_reported_before_the_boxes_are_read():
    boxes, scores, _ = good()
    boxes[0, 0] = np.nan
    with pytest.raises(s3d.InvalidArgument):
        s3d.nms(boxes, scores, 2.0)


def test_outputs_are_numpy_int64_and_float32():
    boxes, scores, classes = clustered_boxes(0)
    for keep in (s3d.nms(boxes, scores, 0.5), s3d.batched_nms(boxes, scores, classes, 0.5),
                 s3d.rotated_nms(rotated_boxes(0)[0], rotated_boxes(0)[1], 0.5)):
        assert type(keep) is np.ndarray and keep.dtype == np.int64 and keep.ndim == 1
    keep, final = s3d.soft_nms(boxes, scores)
    assert type(final) is np.ndarray and final.dtype == np.float32 and final.shape == keep.shape


def test_torch_cpu_tensors_come_back_as_torch(request):
    torch = request.getfixturevalue("torch")
    boxes, scores, classes = clustered_boxes(2)
    keep = s3d.batched_nms(torch.from_numpy(boxes), torch.from_numpy(scores), torch.from_numpy(classes), 0.5)
    assert isinstance(keep, torch.Tensor) and keep.dtype == torch.int64 and keep.device.type == "cpu"
    np.testing.assert_array_equal(keep.numpy(), s3d.batched_nms(boxes, scores, classes, 0.5))


def test_one_box_is_kept():
    assert s3d.nms(np.array([[0, 0, 1, 1]], np.float32), np.array([0.3], np.float32), 0.5).tolist() == [0]


def test_no_boxes_give_an_empty_keep():
    boxes, scores = np.zeros((0, 4), np.float32), np.zeros(0, np.float32)
    keep = s3d.nms(boxes, scores, 0.5)
    assert keep.dtype == np.int64 and keep.shape == (0,)
    keep, final = s3d.soft_nms(boxes, scores)
    assert keep.shape == (0,) and final.shape == (0,)
