"""s3d.sgm and s3d.SgmEngine.

- The C++ CPU oracle: sgm-depth (docs/SGM-DEPTH.md) on data/sample/left.png + right.png (8-bit grey) and on the
  KITTI pair of the real data (RGB, converted to grey as OpenCV's cvtColor does), writing PFM; s3d.sgm on the
  same grey pixels must give the same float32 bits (+inf where invalid), for several flag sets. The PNGs are
  decoded here with a small zlib-based decoder (no OpenCV in the test environment), PFMs read with NumPy.
- Independent checks: a pair made by shifting one random texture has that shift as its disparity; the sample's
  exact ground truth; a uint16 pair scaled by 257 matches as its 8-bit original (docs/SGM-DEPTH.md).
- The argument contract: ValueError naming `left` / `right`, s3d.InvalidArgument for bad parameters.
"""
import struct
import zlib

import numpy as np
import pytest

import s3d
from conftest import REPO, devices, host, on, unavailable

SAMPLE = REPO / "data" / "sample"


# ---------------------------------------------------------------------------------------------------------
# Files: PNG (8-bit grey / RGB / with alpha, non-interlaced) and PFM


def unfilter_row(kind, line, prior, bpp):
    """One PNG scanline without its filter (types 0-4). None, Sub and Up are vectorised; Average and Paeth
    depend on the reconstructed left neighbour and run byte by byte."""
    if kind == 0:
        return line.copy()
    if kind == 1:  # Sub: a running sum per channel, modulo 256
        return np.cumsum(line.reshape(-1, bpp), axis=0, dtype=np.uint8).reshape(-1)
    if kind == 2:  # Up
        return line + prior
    cur = bytearray(line.tobytes())
    up = prior.tobytes()
    if kind == 3:  # Average
        for x in range(len(cur)):
            left = cur[x - bpp] if x >= bpp else 0
            cur[x] = (cur[x] + ((left + up[x]) >> 1)) & 0xFF
    elif kind == 4:  # Paeth
        for x in range(len(cur)):
            a = cur[x - bpp] if x >= bpp else 0
            c = up[x - bpp] if x >= bpp else 0
            b = up[x]
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            cur[x] = (cur[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
    else:
        raise ValueError(f"PNG filter type {kind}")
    return np.frombuffer(bytes(cur), np.uint8)


def read_png(path):
    """uint8 [H, W, C] of an 8-bit, non-interlaced PNG (grey, grey+alpha, RGB or RGBA)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and interlace == 0 and colour in (0, 2, 4, 6), f"{path}: unsupported PNG {header}"
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8).reshape(height, 1 + width * channels)
    out = np.zeros((height, width * channels), np.uint8)
    prior = np.zeros(width * channels, np.uint8)
    for y in range(height):
        out[y] = prior = unfilter_row(raw[y, 0], raw[y, 1:], prior, channels)
    return out.reshape(height, width, channels)


def write_png(path, image, filters):
    """An 8-bit PNG of `image` (uint8 [H, W, C]) with row y filtered by filters[y % len(filters)] (the encoder
    side, to check the decoder against every filter type)."""
    height, width, channels = image.shape
    rows = image.reshape(height, -1).astype(np.int32)
    prior = np.zeros(width * channels, np.int32)
    body = bytearray()
    for y in range(height):
        cur = rows[y]
        left = np.concatenate([np.zeros(channels, np.int32), cur[:-channels]])
        upleft = np.concatenate([np.zeros(channels, np.int32), prior[:-channels]])
        kind = filters[y % len(filters)]
        if kind == 0:
            pred = np.zeros_like(cur)
        elif kind == 1:
            pred = left
        elif kind == 2:
            pred = prior
        elif kind == 3:
            pred = (left + prior) >> 1
        else:
            p = left + prior - upleft
            pa, pb, pc = np.abs(p - left), np.abs(p - prior), np.abs(p - upleft)
            pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prior, upleft))
        body += bytes([kind]) + ((cur - pred) & 0xFF).astype(np.uint8).tobytes()
        prior = cur
    colour = {1: 0, 2: 4, 3: 2, 4: 6}[channels]

    def chunk(kind, payload):
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))

    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(bytes(body))) + chunk(b"IEND", b""))


def read_pfm(path):
    """float32 [H, W] of a 1-channel PFM ('Pf', width height, scale < 0: little-endian, rows bottom to top)."""
    data = path.read_bytes()
    magic, size, scale, rest = data.split(b"\n", 3)
    assert magic == b"Pf"
    width, height = map(int, size.split())
    order = "<" if float(scale) < 0 else ">"
    image = np.frombuffer(rest, order + "f4", count=width * height).reshape(height, width)
    return np.ascontiguousarray(image[::-1]).astype(np.float32)


def grey(image):
    """Grey as the tools read a colour image (OpenCV cvtColor BGR2GRAY on 8 bits: 0.299 R + 0.587 G + 0.114 B in
    fixed point, 15 fractional bits, rounded)."""
    if image.shape[2] in (1, 2):
        return np.ascontiguousarray(image[:, :, 0])
    r, g, b = (image[:, :, k].astype(np.int64) for k in range(3))
    return ((r * 9798 + g * 19235 + b * 3735 + (1 << 14)) >> 15).astype(np.uint8)


def same_bits(a, b):
    a, b = np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32)
    assert a.shape == b.shape
    differ = a.view(np.uint32) != b.view(np.uint32)
    assert not differ.any(), f"{differ.sum()} of {differ.size} pixels differ, first at {np.argwhere(differ)[0]}"



@pytest.fixture(scope="module")
def sample():
    return grey(read_png(SAMPLE / "left.png")), grey(read_png(SAMPLE / "right.png"))


def texture_pair(shift, height=72, width=160, seed=0):
    """A random texture and its copy shifted by `shift` pixels: left(x) = right(x - shift), disparity = shift."""
    rng = np.random.default_rng(seed)
    texture = rng.integers(0, 256, (height, width + 64), dtype=np.uint8)
    left = np.ascontiguousarray(texture[:, 32:32 + width])
    right = np.ascontiguousarray(texture[:, 32 + shift:32 + shift + width])
    return left, right


# ---------------------------------------------------------------------------------------------------------
# The test's own decoders


def test_png_decoder_reverses_every_filter_type(tmp_path):
    rng = np.random.default_rng(3)
    for channels in (1, 3, 4):
        image = rng.integers(0, 256, (11, 9, channels), dtype=np.uint8)
        image[4:8] = 255 - image[4:8] // 3  # some structure beside the noise
        write_png(tmp_path / "f.png", image, filters=[0, 1, 2, 3, 4, 4, 3])
        np.testing.assert_array_equal(read_png(tmp_path / "f.png"), image)


def test_sample_pair_is_8bit_grey_and_its_ground_truth_reads(sample):
    left, right = sample
    assert left.dtype == np.uint8 and left.shape == (240, 320) == right.shape
    assert left.std() > 10 and not np.array_equal(left, right)
    gt = read_pfm(SAMPLE / "gt_disparity.pfm")
    assert gt.shape == left.shape and np.isfinite(gt).all()
    # docs/SGM-DEPTH.md: a slanted plane of 8..22 px, boxes of 24 and 32 px, a disc of 40 px
    assert 7.5 < gt.min() and gt.max() == 40.0


# ---------------------------------------------------------------------------------------------------------
# Against the C++ CPU oracle: sgm-depth

FLAG_SETS = [
    pytest.param(["-D", 64], dict(disparities=64), id="D64"),
    pytest.param([], dict(), id="defaults"),
    pytest.param(["-D", 50, "--paths", 4, "--census", "cs9x7", "--p1", 10, "--p2", 120, "--uniqueness", 10,
                  "--no-subpixel", "--lr-check", 1, "--no-median", "--speckle-size", 0, "--no-fill"],
                 dict(disparities=50, paths=4, census="cs9x7", p1=10, p2=120, uniqueness=10, subpixel=False,
                      lr_max_diff=1.0, median=False, speckle_size=0, fill=False), id="paths4-cs-raw"),
    pytest.param(["-D", 80, "--min-disparity", -8, "--census", "7x5", "--no-lr-check", "--speckle-size", 30,
                  "--speckle-range", 1], dict(disparities=80, min_disparity=-8, census="7x5", lr_check=False,
                                              speckle_size=30, speckle_range=1.0), id="negative-min-7x5"),
    pytest.param(["-D", 64, "--lr-method", "volume"], dict(disparities=64, lr_method="volume"), id="lr-volume"),
]


def sgm_depth(run_tool, tmp_path, left, right, flags, confidence=False):
    out = tmp_path / "disparity.pfm"
    emit = ["--emit", "disparity", "-o", out]
    if confidence:
        emit += ["--emit", "confidence", "-o", tmp_path / "confidence.pfm"]
    run_tool("sgm-depth", "--device", "cpu", "-q", "--overwrite", *flags, left, right, *emit)
    disparity = read_pfm(out)
    return (disparity, read_pfm(tmp_path / "confidence.pfm")) if confidence else disparity


@pytest.mark.parametrize("flags, kwargs", FLAG_SETS)
def test_sgm_equals_sgm_depth_on_the_sample(run_tool, tmp_path, sample, flags, kwargs):
    expected = sgm_depth(run_tool, tmp_path, SAMPLE / "left.png", SAMPLE / "right.png", flags)
    disparity = s3d.sgm(*sample, **kwargs)
    assert disparity.dtype == np.float32 and disparity.shape == sample[0].shape
    same_bits(disparity, expected)
    assert 0.5 < np.isfinite(disparity).mean() < 1.0  # both valid and invalid (+inf) pixels are compared
    assert np.isposinf(disparity[~np.isfinite(disparity)]).all()


def test_confidence_equals_sgm_depth(run_tool, tmp_path, sample):
    disparity_ref, confidence_ref = sgm_depth(run_tool, tmp_path, SAMPLE / "left.png", SAMPLE / "right.png",
                                              ["-D", 64], confidence=True)
    disparity, confidence = s3d.sgm(*sample, disparities=64, confidence=True)
    same_bits(disparity, disparity_ref)
    same_bits(confidence, confidence_ref)
    same_bits(disparity, s3d.sgm(*sample, disparities=64))  # asking for the confidence changes nothing else
    assert confidence.dtype == np.float32 and (confidence >= 0).all() and (confidence <= 1).all()
    assert (confidence[~np.isfinite(disparity)] == 0).all() and confidence.max() > 0


def test_sgm_equals_sgm_depth_on_kitti(run_tool, tmp_path, data_dir):
    scene = data_dir / "stereo" / "kitti2015" / "000005_10"
    if not scene.is_dir():
        unavailable(f"{scene} is not in the data")
    rgb_left, rgb_right = read_png(scene / "stereo_left.png"), read_png(scene / "stereo_right.png")
    assert rgb_left.shape == (375, 1242, 3)
    expected = sgm_depth(run_tool, tmp_path, scene / "stereo_left.png", scene / "stereo_right.png", [])
    disparity = s3d.sgm(grey(rgb_left), grey(rgb_right))
    same_bits(disparity, expected)
    assert 0.5 < np.isfinite(disparity).mean() < 1.0


# ---------------------------------------------------------------------------------------------------------
# Independent checks


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("shift, kwargs", [(9, dict(disparities=32)), (23, dict(disparities=48, paths=4)),
                                           (-6, dict(disparities=32, min_disparity=-16)),
                                           (5, dict(disparities=24, census="cs7x5", subpixel=False))])
def test_a_shifted_texture_has_its_shift_as_disparity(device, shift, kwargs, request):
    left, right = texture_pair(shift)
    disparity = host(s3d.sgm(on(device, left), on(device, right), **kwargs))
    interior = disparity[8:-8, 48:-8]
    valid = np.isfinite(interior)
    assert valid.mean() > 0.95
    assert (np.abs(interior[valid] - shift) <= 0.25).mean() > 0.98
    if not kwargs.get("subpixel", True):
        assert (disparity[np.isfinite(disparity)] == np.round(disparity[np.isfinite(disparity)])).all()


def test_the_sample_against_its_exact_ground_truth(sample):
    gt = read_pfm(SAMPLE / "gt_disparity.pfm")
    disparity = s3d.sgm(*sample, disparities=64)
    valid = np.isfinite(disparity)
    error = np.abs(disparity[valid] - gt[valid])
    assert valid.mean() > 0.9
    assert (error > 2).mean() < 0.03
    assert disparity[valid].min() >= 0 and disparity[valid].max() < 64


def test_uint16_scaled_by_257_matches_as_its_8bit_original(sample):
    left, right = sample
    wide = s3d.sgm(left.astype(np.uint16) * 257, right.astype(np.uint16) * 257, disparities=64)
    same_bits(wide, s3d.sgm(left, right, disparities=64))
    # and 16-bit detail is used: adding 1 to the right image's low byte changes some census bits
    noisy = right.astype(np.uint16) * 257 + (np.arange(right.size).reshape(right.shape) % 3 == 0)
    assert not np.array_equal(s3d.sgm(left.astype(np.uint16) * 257, noisy.astype(np.uint16), disparities=64), wide)


def test_parameters_change_the_result(sample):
    base = s3d.sgm(*sample, disparities=64)
    assert not np.array_equal(base, s3d.sgm(*sample, disparities=64, fill=False))
    assert np.isinf(s3d.sgm(*sample, disparities=64, fill=False)).sum() > np.isinf(base).sum()
    unique = s3d.sgm(*sample, disparities=64, uniqueness=20, fill=False)
    assert np.isfinite(unique).sum() < np.isfinite(s3d.sgm(*sample, disparities=64, fill=False)).sum()


# ---------------------------------------------------------------------------------------------------------
# SgmEngine


@pytest.mark.parametrize("device", devices())
def test_engine_equals_the_function_and_reuses_its_buffers(device, sample, request):
    left, right = sample
    engine = s3d.SgmEngine(320, 240, device, disparities=48, paths=4)
    assert (engine.width, engine.height) == (320, 240)
    assert engine.device == ("cpu" if device == "cpu" else "cuda:0")
    first = host(engine.compute(on(device, left), on(device, right)))
    same_bits(first, s3d.sgm(left, right, disparities=48, paths=4))
    flipped = host(engine.compute(on(device, np.ascontiguousarray(right[::-1])),
                                  on(device, np.ascontiguousarray(left[::-1]))))
    assert not np.array_equal(flipped, first)
    same_bits(host(engine.compute(on(device, left), on(device, right))), first)


def test_engine_with_confidence_returns_both_maps(sample):
    engine = s3d.SgmEngine(320, 240, disparities=64, confidence=True)
    disparity, confidence = engine.compute(*sample)
    reference, reference_confidence = s3d.sgm(*sample, disparities=64, confidence=True)
    same_bits(disparity, reference)
    same_bits(confidence, reference_confidence)


def test_engine_takes_only_its_own_size(sample):
    engine = s3d.SgmEngine(320, 240, disparities=64)
    with pytest.raises(ValueError, match=r"left: expected shape \[240, 320\]"):
        engine.compute(sample[0][:200].copy(), sample[1][:200].copy())
    with pytest.raises(ValueError, match="right"):
        engine.compute(sample[0], sample[1][:, :300].copy())


@pytest.mark.parametrize("device", [d for d in devices() if d == "cuda"])
def test_cuda_matches_cpu_bit_for_bit(device, sample, request):
    torch = request.getfixturevalue("torch")
    left, right = (torch.from_numpy(a).cuda() for a in sample)
    disparity = s3d.sgm(left, right, disparities=64, confidence=True)
    assert disparity[0].is_cuda
    for got, expected in zip(host(disparity), s3d.sgm(*sample, disparities=64, confidence=True)):
        same_bits(got, expected)


def test_cuda_engine_is_unavailable_without_a_gpu():
    if "cuda" in devices():
        pytest.skip("this machine has a GPU")
    with pytest.raises(s3d.DeviceUnavailable):
        s3d.SgmEngine(320, 240, "cuda", disparities=64)


# ---------------------------------------------------------------------------------------------------------
# The argument contract


@pytest.mark.parametrize("make, message", [
    (lambda l, r: (l.astype(np.float32), r), "left: expected uint8 or uint16"),
    (lambda l, r: (np.stack([l] * 3, axis=-1), r), "left: expected shape"),
    (lambda l, r: (l[:, ::2], r[:, ::2]), "left: expected a C-contiguous array"),
    (lambda l, r: (l.tolist(), r), "left: expected an array"),
    (lambda l, r: (l, r[:, :300].copy()), r"right: expected shape \[240, 320\]"),
    (lambda l, r: (l, r.astype(np.uint16)), "right: expected uint8"),
    (lambda l, r: (l, r[None].copy()), "right: expected shape"),
])
def test_bad_images_raise_value_error_naming_the_argument(sample, make, message):
    left, right = make(*sample)
    with pytest.raises(ValueError, match=message):
        s3d.sgm(left, right, disparities=64)


@pytest.mark.parametrize("kwargs, message", [
    (dict(paths=3), "paths"),
    (dict(disparities=7), "disparities"),
    (dict(disparities=2048), "disparities"),
    (dict(disparities=512), "disparities"),  # wider than the 320-pixel image
    (dict(p1=80, p2=80), "p2"),
    (dict(census="11x7"), "census"),
    (dict(census="9by7"), "census"),
    (dict(uniqueness=-1), "uniqueness"),
    (dict(lr_max_diff=float("nan")), "lr_max_diff"),
    (dict(lr_method="left"), "lr_method"),
])
def test_bad_parameters_raise_invalid_argument(sample, kwargs, message):
    with pytest.raises(s3d.InvalidArgument, match=message) as raised:
        s3d.sgm(*sample, **kwargs)
    assert isinstance(raised.value, ValueError)
    kwargs = dict(kwargs)
    if "disparities" not in kwargs or kwargs["disparities"] != 512:
        with pytest.raises(s3d.InvalidArgument, match=message):
            s3d.SgmEngine(320, 240, **kwargs)


def test_unknown_keyword_is_a_type_error(sample):
    with pytest.raises(TypeError, match="disparity"):
        s3d.sgm(*sample, disparity=64)
    with pytest.raises(TypeError, match="speckle"):
        s3d.SgmEngine(320, 240, speckle=10)


def test_engine_smaller_than_the_census_window_is_invalid():
    with pytest.raises(s3d.InvalidArgument):
        s3d.SgmEngine(8, 6, disparities=16)


def test_keyword_of_the_wrong_type_is_a_type_error_naming_it(sample):
    with pytest.raises(TypeError, match="disparities"):
        s3d.sgm(*sample, disparities=64.0)
