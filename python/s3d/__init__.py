"""s3d: stereo and 3D perception kernels on GPU and CPU, on any DLPack array (docs/PYTHON.md).

Every op takes arrays of NumPy, PyTorch, CuPy, JAX or any DLPack producer, runs on the array's device (a CUDA
array on its GPU, a host array on the CPU backend) and returns arrays of the same framework, without copies.
"""
from ._s3d import (  # noqa: F401
    Error,
    InvalidArgument,
    IoError,
    DataError,
    CudaError,
    DeviceUnavailable,
    OutOfMemory,
    FpsEngine,
    NeighborEngine,
    KnnEngine,
    VoxelEngine,
    RulebookEngine,
    NmsEngine,
    SgmEngine,
    FusionEngine,
    fps,
    knn,
    ball_query,
    three_nn,
    three_interpolate,
    voxelize,
    rulebook,
    nms,
    batched_nms,
    soft_nms,
    rotated_nms,
    sgm,
    cuda_built,
    cuda_device_count,
    cuda_build_info,
    describe_device,
)

__version__ = "0.1.0"
