"""s3d's ops as PyTorch custom operators (torch.library), so that torch.compile, torch.export and
torch.library.opcheck see them as single ops with known output shapes. Pure Python: the extension links no torch,
and any torch version that has torch.library.custom_op (2.4+) works. three_interpolate has a gradient (for its
values and weights), as pointnet2's does.

    import s3d.torch as s3t
    idx = s3t.fps(xyz, 1024)                      # xyz: float32 [B, N, 3] CUDA tensor -> int32 [B, 1024]
    keep = s3t.nms(boxes, scores, 0.5)            # the same keep list as torchvision.ops.nms
"""
from typing import List, Optional, Tuple

import torch
from torch.library import custom_op, register_autograd

from . import _s3d

__all__ = [
    "fps", "knn", "ball_query", "three_nn", "three_interpolate", "voxelize", "rulebook",
    "nms", "batched_nms", "soft_nms", "rotated_nms", "sgm",
]


def _dynamic(ctx=None):
    return torch.library.get_ctx().new_dynamic_size()


@custom_op("s3d::fps", mutates_args=())
def fps(points: torch.Tensor, n: int, start: int = 0, lengths: Optional[List[int]] = None) -> torch.Tensor:
    """Farthest point sampling: int32 indices [M] (ragged: every cloud's, back to back) or [B, M]."""
    return _s3d.fps(points, n, start=start, lengths=lengths)


@fps.register_fake
def _(points, n, start=0, lengths=None):
    if points.dim() == 3:
        return points.new_empty((points.shape[0], n), dtype=torch.int32)
    clouds = len(lengths) if lengths is not None else 1
    return points.new_empty((clouds * n,), dtype=torch.int32)


@custom_op("s3d::knn", mutates_args=())
def knn(points: torch.Tensor, queries: Optional[torch.Tensor], k: int, exclude_self: bool = False,
        allow_fewer: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """k nearest neighbours: (indices int32 [Q, K], distances float32 [Q, K])."""
    return _s3d.knn(points, queries, k, exclude_self=exclude_self, allow_fewer=allow_fewer)


@knn.register_fake
def _(points, queries, k, exclude_self=False, allow_fewer=False):
    q = (queries if queries is not None else points).shape[0]
    return points.new_empty((q, k), dtype=torch.int32), points.new_empty((q, k), dtype=torch.float32)


@custom_op("s3d::ball_query", mutates_args=())
def ball_query(points: torch.Tensor, queries: Optional[torch.Tensor], radius: float, k: int,
               pad_first: bool = False) -> torch.Tensor:
    """Ball query (pointnet2's: the first k points within radius by index): int32 [Q, K], -1 padded, or the
    first neighbour repeated with pad_first (pointnet2's own padding)."""
    return _s3d.ball_query(points, queries, radius, k, pad="first" if pad_first else -1)


@ball_query.register_fake
def _(points, queries, radius, k, pad_first=False):
    q = (queries if queries is not None else points).shape[0]
    return points.new_empty((q, k), dtype=torch.int32)


@custom_op("s3d::three_nn", mutates_args=())
def three_nn(sparse: torch.Tensor, dense: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """The 3 nearest sparse points of each dense point: (indices int32 [Q, 3], weights float32 [Q, 3])."""
    return _s3d.three_nn(sparse, dense)


@three_nn.register_fake
def _(sparse, dense):
    q = dense.shape[0]
    return dense.new_empty((q, 3), dtype=torch.int32), dense.new_empty((q, 3), dtype=torch.float32)


@custom_op("s3d::three_interpolate", mutates_args=())
def three_interpolate(values: torch.Tensor, indices: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """out[q, c] = sum_j weights[q, j] * values[indices[q, j], c], values [N, C] (summed in float64)."""
    return _s3d.three_interpolate(values, indices, weights)


@three_interpolate.register_fake
def _(values, indices, weights):
    return values.new_empty((indices.shape[0], values.shape[1]))


def _three_interpolate_setup(ctx, inputs, output):
    values, indices, weights = inputs
    ctx.save_for_backward(values, indices, weights)


def _three_interpolate_backward(ctx, grad):
    values, indices, weights = ctx.saved_tensors
    valid = indices >= 0
    safe = torch.where(valid, indices, torch.zeros_like(indices)).long()
    w = torch.where(valid, weights, torch.zeros_like(weights)).to(grad.dtype)
    grad_values = grad_weights = None
    if ctx.needs_input_grad[0]:
        contributions = (w.unsqueeze(-1) * grad.unsqueeze(1)).reshape(-1, grad.shape[1])
        grad_values = torch.zeros_like(values).index_add_(0, safe.reshape(-1), contributions.to(values.dtype))
    if ctx.needs_input_grad[2]:
        gathered = values[safe]  # [Q, 3, C]
        grad_weights = torch.where(valid, (gathered * grad.unsqueeze(1)).sum(-1), 0).to(weights.dtype)
    return grad_values, None, grad_weights


register_autograd("s3d::three_interpolate", _three_interpolate_backward, setup_context=_three_interpolate_setup)


@custom_op("s3d::voxelize", mutates_args=())
def voxelize(points: torch.Tensor, voxel_size: List[float], origin: str = "world",
             range: Optional[List[float]] = None, max_points: int = 0, max_voxels: int = 0,
             reduce: str = "mean") -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Voxelisation: (coords int32 [M, 4], xyz [M, 3], points_per_voxel int32 [M], point_voxel int32 [N])."""
    v = _s3d.voxelize(points, list(voxel_size), origin=origin, range=range, max_points=max_points,
                      max_voxels=max_voxels, reduce=reduce)
    return v["coords"], v["xyz"], v["points_per_voxel"], v["point_voxel"]


@voxelize.register_fake
def _(points, voxel_size, origin="world", range=None, max_points=0, max_voxels=0, reduce="mean"):
    m = _dynamic()
    return (points.new_empty((m, 4), dtype=torch.int32), points.new_empty((m, 3)),
            points.new_empty((m,), dtype=torch.int32), points.new_empty((points.shape[0],), dtype=torch.int32))


@custom_op("s3d::rulebook", mutates_args=())
def rulebook(coords: torch.Tensor, shape: List[int], kernel: List[int], stride: List[int], padding: List[int],
             dilation: List[int], subm: bool = False, batch_size: int = 0
             ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A sparse convolution's rulebook: (out_coords int32 [M', 4], indice_pairs int32 [2, K, max(M, 1)],
    indice_num int32 [K], offsets int64 [K + 1]) in spconv's layout."""
    r = _s3d.rulebook(coords, list(shape), list(kernel), list(stride), list(padding), list(dilation), subm=subm,
                      batch_size=batch_size)
    return r["out_coords"], r["indice_pairs"], r["indice_num"], r["offsets"]


@rulebook.register_fake
def _(coords, shape, kernel, stride, padding, dilation, subm=False, batch_size=0):
    volume = kernel[0] * kernel[1] * kernel[2]
    m = coords.shape[0] if subm else _dynamic()
    n_max = max(coords.shape[0], 1)
    return (coords.new_empty((m, 4)), coords.new_empty((2, volume, n_max)), coords.new_empty((volume,)),
            coords.new_empty((volume + 1,), dtype=torch.int64))


@custom_op("s3d::nms", mutates_args=())
def nms(boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """torchvision.ops.nms: int64 indices of the kept boxes by descending score."""
    return _s3d.nms(boxes, scores, iou_threshold)


@nms.register_fake
def _(boxes, scores, iou_threshold):
    return boxes.new_empty((_dynamic(),), dtype=torch.int64)


@custom_op("s3d::batched_nms", mutates_args=())
def batched_nms(boxes: torch.Tensor, scores: torch.Tensor, idxs: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """torchvision.ops.batched_nms: boxes of different idxs never suppress each other."""
    return _s3d.batched_nms(boxes, scores, idxs, iou_threshold)


@batched_nms.register_fake
def _(boxes, scores, idxs, iou_threshold):
    return boxes.new_empty((_dynamic(),), dtype=torch.int64)


@custom_op("s3d::soft_nms", mutates_args=())
def soft_nms(boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float = 0.3, sigma: float = 0.5,
             min_score: float = 1e-3, method: str = "gaussian") -> Tuple[torch.Tensor, torch.Tensor]:
    """Soft-NMS (mmcv's semantics): (keep int64 [K], decayed scores float32 [K])."""
    return _s3d.soft_nms(boxes, scores, iou_threshold, sigma=sigma, min_score=min_score, method=method)


@soft_nms.register_fake
def _(boxes, scores, iou_threshold=0.3, sigma=0.5, min_score=1e-3, method="gaussian"):
    k = _dynamic()
    return boxes.new_empty((k,), dtype=torch.int64), boxes.new_empty((k,), dtype=torch.float32)


@custom_op("s3d::rotated_nms", mutates_args=())
def rotated_nms(boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """NMS of rotated boxes [N, 5] (cx, cy, w, h, angle in radians)."""
    return _s3d.rotated_nms(boxes, scores, iou_threshold)


@rotated_nms.register_fake
def _(boxes, scores, iou_threshold):
    return boxes.new_empty((_dynamic(),), dtype=torch.int64)


@custom_op("s3d::sgm", mutates_args=())
def sgm(left: torch.Tensor, right: torch.Tensor, disparities: int = 128, paths: int = 8, p1: int = 24, p2: int = 80,
        subpixel: bool = True, lr_check: bool = True) -> torch.Tensor:
    """Semi-global matching: disparity float32 [H, W] in pixels, +inf where invalid."""
    return _s3d.sgm(left, right, disparities=disparities, paths=paths, p1=p1, p2=p2, subpixel=subpixel,
                    lr_check=lr_check)


@sgm.register_fake
def _(left, right, disparities=128, paths=8, p1=24, p2=80, subpixel=True, lr_check=True):
    return left.new_empty(left.shape, dtype=torch.float32)
