"""The array contract: inputs from any DLPack producer are read in place (never converted or copied), a bad
input raises ValueError naming the argument, outputs come back as the caller's framework's arrays without a copy,
and the C++ errors arrive as s3d's exception types."""
import numpy as np
import pytest

import s3d


def cloud(n=200, seed=0):
    return np.random.default_rng(seed).random((n, 3), dtype=np.float32)


def test_numpy_in_numpy_out():
    idx, dist = s3d.knn(cloud(), None, 4)
    assert type(idx) is np.ndarray and idx.dtype == np.int32 and idx.shape == (200, 4)
    assert type(dist) is np.ndarray and dist.dtype == np.float32
    assert idx.flags.c_contiguous and idx.flags.owndata is False  # a view of memory s3d allocated


def test_read_only_input_is_accepted():
    points = cloud()
    points.flags.writeable = False
    assert s3d.fps(points, 5).shape == (5,)


def test_memoryview_input_returns_numpy():
    # Any buffer/DLPack producer is accepted; an unknown framework's host result comes back as NumPy.
    points = cloud()
    out = s3d.fps(memoryview(points), 5)
    assert type(out) is np.ndarray and np.array_equal(out, s3d.fps(points, 5))


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.zeros((10, 3), np.float64), "points: expected float32, got float64"),
        (np.zeros((10, 2), np.float32), "points: expected shape"),
        (np.zeros((10, 3, 1, 1), np.float32), "points: expected 2-3 dimensions"),
        (np.zeros((20, 3), np.float32)[::2], "points: expected a C-contiguous array"),
        ([[0.0, 0.0, 0.0]], "points: expected an array"),
    ],
)
def test_bad_points_raise_value_error_naming_the_argument(bad, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        s3d.fps(bad, 1)


def test_a_second_argument_is_named_too():
    with pytest.raises(ValueError, match="queries: expected float32"):
        s3d.knn(cloud(), np.zeros((4, 3), np.float64), 2)
    with pytest.raises(ValueError, match="scores: expected shape"):
        s3d.nms(np.zeros((5, 4), np.float32), np.zeros(4, np.float32), 0.5)


def test_library_errors_become_typed_exceptions():
    with pytest.raises(s3d.InvalidArgument, match="k must be in"):
        s3d.knn(cloud(), None, 0)
    assert issubclass(s3d.InvalidArgument, ValueError) and issubclass(s3d.InvalidArgument, s3d.Error)
    assert issubclass(s3d.OutOfMemory, MemoryError) and issubclass(s3d.IoError, OSError)
    with pytest.raises(s3d.DataError, match="box"):
        s3d.nms(np.array([[0, 0, np.nan, 1]], np.float32), np.ones(1, np.float32), 0.5)


def test_cuda_unavailable_is_device_unavailable():
    if s3d.cuda_built() and s3d.cuda_device_count() > 0:
        pytest.skip("this machine has a GPU")
    with pytest.raises(s3d.DeviceUnavailable):
        s3d.FpsEngine("cuda:0")


def test_engine_rejects_arrays_of_another_device_and_reuses_itself():
    engine = s3d.NeighborEngine("cpu")
    assert engine.device == "cpu"
    points = cloud(500)
    first = engine.knn(points, None, 8)
    again = engine.knn(points, None, 8)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert np.array_equal(first[0], s3d.knn(points, None, 8)[0])


def test_outputs_outlive_the_engine_and_later_calls():
    engine = s3d.FpsEngine("cpu")
    a = engine.fps(cloud(300, 1), 10)
    kept = a.copy()
    engine.fps(cloud(300, 2), 10)
    del engine
    assert np.array_equal(a, kept)


def test_torch_tensors_in_torch_tensors_out_without_copies(torch):
    points = torch.from_numpy(cloud())
    idx, dist = s3d.knn(points, None, 4)
    assert isinstance(idx, torch.Tensor) and idx.dtype == torch.int32 and idx.device.type == "cpu"
    # The tensor wraps s3d's memory: converting it back and forth keeps the address.
    as_numpy = np.from_dlpack(idx)
    assert as_numpy.__array_interface__["data"][0] == idx.data_ptr()
    assert torch.from_dlpack(as_numpy).data_ptr() == idx.data_ptr()
    # And the input was read in place: the same answer as from the NumPy array it shares memory with.
    assert np.array_equal(idx.numpy(), s3d.knn(points.numpy(), None, 4)[0])


def test_torch_non_contiguous_is_refused(torch):
    points = torch.from_numpy(cloud()).t().contiguous().t()
    with pytest.raises(ValueError, match="points: expected a C-contiguous array"):
        s3d.fps(points, 3)


@pytest.fixture
def cuda(torch):
    if not (s3d.cuda_built() and s3d.cuda_device_count() > 0 and torch.cuda.is_available()):
        pytest.skip("no CUDA device (these run on the GPU machine)")
    return torch.device("cuda", 0)


def test_cuda_tensor_runs_on_its_gpu_and_equals_the_cpu(torch, cuda):
    points = cloud(3000, 3)
    idx, dist = s3d.knn(torch.from_numpy(points).to(cuda), None, 8)
    assert idx.device == cuda and dist.device == cuda and idx.dtype == torch.int32
    cpu_idx, cpu_dist = s3d.knn(points, None, 8)
    assert np.array_equal(idx.cpu().numpy(), cpu_idx) and np.array_equal(dist.cpu().numpy(), cpu_dist)
    assert np.array_equal(s3d.fps(torch.from_numpy(points).to(cuda), 100).cpu().numpy(), s3d.fps(points, 100))
    b = np.random.default_rng(4).random((500, 4), dtype=np.float32)
    b[:, 2:] += b[:, :2]
    s = np.random.default_rng(5).random(500, dtype=np.float32)
    keep = s3d.nms(torch.from_numpy(b).to(cuda), torch.from_numpy(s).to(cuda), 0.3)
    assert keep.dtype == torch.int64 and np.array_equal(keep.cpu().numpy(), s3d.nms(b, s, 0.3))


def test_cuda_output_is_the_tensor_s3d_allocated(torch, cuda):
    idx = s3d.fps(torch.from_numpy(cloud(2000)).to(cuda), 64)
    again = torch.from_dlpack(idx)
    assert again.data_ptr() == idx.data_ptr()


def test_streams_are_taken_from_the_caller(torch, cuda):
    points = torch.from_numpy(cloud(5000, 6)).to(cuda)
    expected = s3d.fps(points, 256).cpu()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # the framework's current stream
        a = s3d.fps(points, 256)
    b = s3d.fps(points, 256, stream=side)  # a stream object
    c = s3d.fps(points, 256, stream=side.cuda_stream)  # an int handle
    side.synchronize()
    for out in (a, b, c):
        assert torch.equal(out.cpu(), expected)
    with pytest.raises(ValueError, match="stream: expected"):
        s3d.fps(points, 4, stream="fast")


def test_arrays_on_different_devices_are_refused(torch, cuda):
    with pytest.raises(ValueError, match="one device"):
        s3d.knn(torch.from_numpy(cloud()).to(cuda), torch.from_numpy(cloud()), 2)
    with pytest.raises(ValueError, match="engine's device"):
        s3d.NeighborEngine("cpu").knn(torch.from_numpy(cloud()).to(cuda), None, 2)


def test_cupy_in_cupy_out(cuda):
    cupy = pytest.importorskip("cupy")
    points = cloud(1000, 8)
    out = s3d.fps(cupy.asarray(points), 50)
    assert isinstance(out, cupy.ndarray) and np.array_equal(cupy.asnumpy(out), s3d.fps(points, 50))


def test_out_receives_the_result_in_place():
    points = cloud(400, 9)
    out = np.full(32, -7, np.int32)
    got = s3d.fps(points, 32, out=out)
    assert got is out and np.array_equal(out, s3d.fps(points, 32))
    indices, distances = np.empty((400, 4), np.int32), np.empty((400, 4), np.float32)
    got = s3d.knn(points, None, 4, out=(indices, distances))
    assert got[0] is indices and got[1] is distances
    expected = s3d.knn(points, None, 4)
    assert np.array_equal(indices, expected[0]) and np.array_equal(distances, expected[1])
    ball = np.empty((400, 8), np.int32)
    assert s3d.ball_query(points, None, 0.2, 8, out=ball) is ball
    assert np.array_equal(ball, s3d.ball_query(points, None, 0.2, 8))


@pytest.mark.parametrize(
    "out, message",
    [
        (np.empty(31, np.int32), r"out: expected shape \[32\] \(the result's\), got \[31\]"),
        (np.empty(32, np.int64), "out: expected int32, got int64"),
        (np.empty(64, np.int32)[::2], "out: expected a C-contiguous array"),
    ],
)
def test_a_wrong_out_is_refused_before_anything_runs(out, message):
    with pytest.raises(ValueError, match=message):
        s3d.fps(cloud(), 32, out=out)


def test_a_read_only_out_is_refused():
    out = np.empty(32, np.int32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="out: expected a writable array"):
        s3d.fps(cloud(), 32, out=out)


def test_cuda_out_receives_the_result(torch, cuda):
    points = torch.from_numpy(cloud(3000, 10)).to(cuda)
    out = torch.empty(128, dtype=torch.int32, device=cuda)
    assert s3d.fps(points, 128, out=out) is out
    assert torch.equal(out.cpu(), torch.from_numpy(s3d.fps(cloud(3000, 10), 128)))
    with pytest.raises(ValueError, match="out: expected an array on cuda:0"):
        s3d.fps(points, 128, out=torch.empty(128, dtype=torch.int32))


def test_a_tensor_on_the_second_gpu_runs_there(torch, cuda):
    if torch.cuda.device_count() < 2:
        pytest.skip("one GPU")
    second = torch.device("cuda", 1)
    points = cloud(4000, 11)
    before = torch.cuda.current_device()
    idx, dist = s3d.knn(torch.from_numpy(points).to(second), None, 6)
    keep_fps = s3d.fps(torch.from_numpy(points).to(second), 50)
    assert idx.device == second and keep_fps.device == second
    assert torch.cuda.current_device() == before  # the caller's current device is left as it was
    assert np.array_equal(idx.cpu().numpy(), s3d.knn(points, None, 6)[0])
    assert np.array_equal(keep_fps.cpu().numpy(), s3d.fps(points, 50))
    with pytest.raises(ValueError, match="one device"):
        s3d.knn(torch.from_numpy(points).to(second), torch.from_numpy(points).to(cuda), 2)


def test_one_engine_on_two_streams_gives_each_call_its_answer(torch, cuda):
    a, b = (torch.from_numpy(cloud(20000, seed)).to(cuda) for seed in (12, 13))
    expect_a, expect_b = s3d.fps(a, 512).cpu(), s3d.fps(b, 512).cpu()
    first, second = torch.cuda.Stream(), torch.cuda.Stream()
    for _ in range(5):
        first.wait_stream(torch.cuda.current_stream())
        second.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(first):
            got_a = s3d.fps(a, 512)  # the cached engine's scratch ...
        with torch.cuda.stream(second):
            got_b = s3d.fps(b, 512)  # ... reused on another stream
        torch.cuda.synchronize()
        assert torch.equal(got_a.cpu(), expect_a) and torch.equal(got_b.cpu(), expect_b)


def test_gpu_voxels_wait_for_the_work_that_writes_their_points(torch, cuda):
    box = [0.0, 0.0, 0.0, 10.0, 10.0, 10.0]
    host = cloud(100000, 14) * 10
    expected = s3d.voxelize(host, 0.5, origin="range", range=box)
    busy = torch.randn(4096, 4096, device=cuda)
    for _ in range(20):
        busy = torch.tanh(busy @ busy)  # milliseconds of work queued before the points are made
    points = (torch.from_numpy(host).to(cuda) * 2.0) / 2.0
    got = s3d.voxelize(points, 0.5, origin="range", range=box)
    small = s3d.voxelize(points[:5].contiguous(), 0.5, origin="range", range=box)  # reuses the engine's buffers
    assert np.array_equal(got["coords"].cpu().numpy(), expected["coords"])
    assert np.array_equal(got["point_voxel"].cpu().numpy(), expected["point_voxel"])
    assert small["count"] <= 5
