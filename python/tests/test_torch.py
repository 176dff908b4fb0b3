"""s3d.torch: every op registered with torch.library passes torch.library.opcheck (schema, fake tensors, autograd
registration, AOT dispatch with dynamic shapes), gives what the plain op gives, and three_interpolate's gradient
matches finite differences."""
import numpy as np
import pytest


@pytest.fixture(scope="module")
def s3t(torch):
    import s3d.torch as module

    return module


def boxes(torch, n=64, seed=0, rotated=False):
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=g) * 100
    wh = torch.rand(n, 2, generator=g) * 30 + 1
    if rotated:
        return torch.cat([xy, wh, torch.rand(n, 1, generator=g) * 3], 1).contiguous()
    return torch.cat([xy, xy + wh], 1).contiguous()


def cases(torch):
    g = torch.Generator().manual_seed(1)
    points = torch.rand(500, 3, generator=g)
    queries = torch.rand(40, 3, generator=g)
    b, s = boxes(torch), torch.rand(64, generator=g)
    coords = torch.unique(torch.randint(0, 12, (300, 3), generator=g), dim=0)
    coords = torch.cat([torch.zeros(len(coords), 1, dtype=torch.int64), coords], 1).to(torch.int32).contiguous()
    img = torch.randint(0, 256, (48, 80), generator=g, dtype=torch.uint8)
    return {
        "fps": (points, 16),
        "fps_ragged": (points, 8, 0, [200, 300]),
        "knn": (points, queries, 5),
        "ball_query": (points, queries, 0.2, 8),
        "three_nn": (points, queries),
        "voxelize": (points, [0.25, 0.25, 0.25]),
        "rulebook": (coords, [12, 12, 12], [3, 3, 3], [1, 1, 1], [0, 0, 0], [1, 1, 1], True, 1),
        "rulebook_strided": (coords, [12, 12, 12], [3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], False, 1),
        "nms": (b, s, 0.5),
        "batched_nms": (b, s, torch.randint(0, 3, (64,), generator=g), 0.5),
        "soft_nms": (b, s),
        "rotated_nms": (boxes(torch, rotated=True), s, 0.3),
        "sgm": (img, torch.roll(img, -3, 1), 16),
    }


OPS = ["fps", "fps_ragged", "knn", "ball_query", "three_nn", "voxelize", "rulebook", "rulebook_strided", "nms",
       "batched_nms", "soft_nms", "rotated_nms", "sgm"]


@pytest.mark.parametrize("case", OPS)
def test_opcheck(torch, s3t, case):
    name = case.replace("_ragged", "").replace("_strided", "")
    op = getattr(torch.ops.s3d, name).default
    torch.library.opcheck(op, cases(torch)[case])


def test_three_interpolate_opcheck_and_gradient(torch, s3t):
    g = torch.Generator().manual_seed(2)
    sparse, dense = torch.rand(30, 3, generator=g), torch.rand(50, 3, generator=g)
    idx, w = s3t.three_nn(sparse, dense)
    values = torch.rand(30, 4, generator=g, dtype=torch.float64, requires_grad=True)
    torch.library.opcheck(torch.ops.s3d.three_interpolate.default, (values, idx, w))
    # d out / d values against finite differences (the op is linear in the values).
    assert torch.autograd.gradcheck(lambda v: s3t.three_interpolate(v, idx, w), (values,))
    # d out / d weights: out[q, c] = sum_j w[q, j] values[idx[q, j], c], so the gradient for w[q, j] is
    # sum_c grad[q, c] values[idx[q, j], c].
    weights = w.clone().requires_grad_()
    out = s3t.three_interpolate(values.detach().float(), idx, weights)
    grad = torch.rand(out.shape, generator=g)
    out.backward(grad)
    expected = (values.detach().float()[idx.long()] * grad.unsqueeze(1)).sum(-1)
    assert torch.allclose(weights.grad, expected, rtol=1e-5, atol=1e-6)


def test_ops_equal_the_plain_calls(torch, s3t):
    import s3d

    c = cases(torch)
    assert torch.equal(s3t.fps(*c["fps"]), s3d.fps(*c["fps"]))
    assert torch.equal(s3t.nms(*c["nms"]), s3d.nms(*c["nms"]))
    assert all(torch.equal(a, b) for a, b in zip(s3t.knn(*c["knn"]), s3d.knn(*c["knn"])))
    plain = s3d.rulebook(*c["rulebook"][:6], subm=True, batch_size=1)
    out_coords, pairs, num, offsets = s3t.rulebook(*c["rulebook"])
    assert torch.equal(pairs, plain["indice_pairs"]) and torch.equal(offsets, plain["offsets"])


def test_compiled_function_gives_the_eager_result(torch, s3t):
    c = cases(torch)

    def select(points, boxes_, scores):
        idx = s3t.fps(points, 16)
        keep = s3t.nms(boxes_, scores, 0.5)
        return points[idx.long()].sum(), keep

    compiled = torch.compile(select, backend="aot_eager", fullgraph=True)
    eager = select(c["fps"][0], *c["nms"][:2])
    got = compiled(c["fps"][0], *c["nms"][:2])
    assert torch.equal(eager[0], got[0]) and torch.equal(eager[1], got[1])
