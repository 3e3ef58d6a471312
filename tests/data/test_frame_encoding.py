"""The per-frame preparation (actrec.data.format.frame_encoding) on a real clip: the JPEGs it hands
the record writer are those of the plain pipeline (RGB frames, numpy quantisation)."""

from __future__ import annotations

import itertools

import cv2
import numpy as np
import pytest
from repo_paths import TEST_DATA

from actrec.data.format.flow import create_flow_estimator
from actrec.data.format.frame_encoding import encode_video_jpegs
from actrec.data.format.video import FrameSize, iter_video_frames

UCF101_CLIP = TEST_DATA / "videos" / "v_Basketball_g01_c01.avi"  # Xvid 320x240, 141 frames
QUALITY = 90


def former_quantisation(flow: np.ndarray) -> np.ndarray:
    """actrec's numpy quantisation before OpenCV's: uint8 [H, W, 2] of flow [H, W, 2]."""
    values = np.nan_to_num(flow.astype(np.float32), nan=0.0)
    scaled = (np.clip(values, -20.0, 20.0) + 20.0) * (255.0 / 40.0)
    return np.clip(np.floor(scaled + 0.5), 0, 255).astype(np.uint8)


def plain_jpegs(path, frame_size: FrameSize, num_frames: int) -> dict[str, list]:
    """The first `num_frames` frames prepared as before: RGB frames converted back to BGR
    for the encoder, grey from RGB, numpy quantisation, strided planes; "levels" holds the
    quantised flow [H, W, 2] before JPEG."""
    estimate = create_flow_estimator("dis")
    rgb_frames = list(itertools.islice(iter_video_frames(path, frame_size), num_frames))
    jpegs: dict[str, list] = {"rgb": [], "flow_x": [], "flow_y": [], "levels": []}

    def encode(image: np.ndarray) -> bytes:
        return cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, QUALITY])[1].tobytes()

    for frame in rgb_frames:
        jpegs["rgb"].append(encode(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR)))
    greys = [cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY) for frame in rgb_frames]
    for previous, following in itertools.pairwise(greys):
        levels = former_quantisation(estimate(previous, following))
        jpegs["levels"].append(levels)
        jpegs["flow_x"].append(encode(levels[..., 0]))
        jpegs["flow_y"].append(encode(levels[..., 1]))
    return jpegs


def decoded(jpeg: bytes) -> np.ndarray:
    return cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_UNCHANGED).astype(np.int16)


@pytest.mark.parametrize("frame_size", ["340x256", "original"])
def test_jpegs_are_those_of_the_plain_pipeline(frame_size):
    size = FrameSize.parse(frame_size)
    jpegs = encode_video_jpegs(UCF101_CLIP, size, None, create_flow_estimator("dis"), QUALITY)
    assert len(jpegs.rgb) == 141 and len(jpegs.flow_x) == len(jpegs.flow_y) == 140
    assert (jpegs.width, jpegs.height) == ((340, 256) if size.is_fixed else (320, 240))
    expected = plain_jpegs(UCF101_CLIP, size, num_frames=30)
    assert jpegs.rgb[:30] == expected["rgb"]  # the same bytes: BGR all the way changes nothing
    for component, name in enumerate(("flow_x", "flow_y")):
        ours = np.stack([decoded(jpeg) for jpeg in getattr(jpegs, name)[:29]])  # [29, H, W]
        before = np.stack([decoded(jpeg) for jpeg in expected[name]])
        levels = np.stack(expected["levels"])[..., component]
        jpeg_error = np.abs(before - levels).mean()  # what JPEG itself changes
        # The quantisations differ by one level on values within ~1e-5 of a half-way point,
        # e.g. motion of -1e-6 px (DIS leaves such noise on static background).
        difference = np.abs(ours - before)
        assert difference.max() <= 2 and difference.mean() <= 0.5 * jpeg_error, name


def test_rgb_only_has_no_flow():
    jpegs = encode_video_jpegs(UCF101_CLIP, FrameSize.parse("64"), None, None, QUALITY)
    assert len(jpegs.rgb) == 141 and jpegs.flow_x == jpegs.flow_y == []
    assert decoded(jpegs.rgb[0]).shape == (64, 86, 3)
