"""Streaming checks (tests/export, tests/train/test_distillation.py): a streaming model,
fed frame by frame, gives its clip model's per-segment logits."""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np

from actrec.data.format.manifest import read_manifest
from actrec.data.input import sampling
from actrec.data.input.clip_spec import clip_spec
from actrec.data.prepare.encode_video import PrepareSettings, VideoTask, encode_video
from actrec.export.serving import clips_from_frames
from actrec.models.segment_model import segment_backbone
from actrec.predict.video_files import record_inputs
from actrec.runs.trained import build_trained_model, load_trained_run


def sampled_frames(video: Path, settings, spec) -> np.ndarray:
    """The T frames uint8 [T, H, W, 3] the clip model's centre view samples from `video`,
    prepared as `actrec prepare` stores them."""
    result = encode_video(VideoTask(0, video.stem, str(video), -1, "", "t"), settings)
    frames = record_inputs(result.records, with_flow=False)["frames"]  # [F, H, W, 3]
    indices = sampling.test_clip_indices(
        len(frames), spec.num_segments, 1, spec.sampling, spec.new_length, spec.frame_interval
    )
    return frames[np.asarray(indices).reshape(-1)]


def per_segment_logits(run_dir: Path, frames: np.ndarray) -> np.ndarray:
    """The trained clip model's logits of each segment [T, K] (before the consensus)."""
    run = load_trained_run(run_dir)
    model = build_trained_model(run)
    clips = clips_from_frames(frames[None], clip_spec(run.recipe, training=False))  # [1, T, ...]
    x = model.get_layer("preprocessing")(clips)[0]  # [T, crop, crop, 3]
    features = segment_backbone(model)(x, training=False)
    return keras.ops.convert_to_numpy(model.get_layer("classifier")(features))


def assert_steps_are_the_clip_models_segments(model, run_dir: Path, prepared: Path) -> None:
    """A loaded StreamingModel, fed the frames the run's clip model samples from the first
    test video, gives that model's segment logits frame by frame (within 1e-4)."""
    run = load_trained_run(run_dir)
    settings = PrepareSettings(
        frame_size=model.frame_size, flow="none", jpeg_quality=model.jpeg_quality
    )
    videos = [v["path"] for v in read_manifest(prepared)["videos"] if v["split"] == "test"]
    frames = sampled_frames(Path(videos[0]), settings, clip_spec(run.recipe, training=False))
    expected = per_segment_logits(run_dir, frames)  # [T, K]
    steps = np.stack([model.step(frame) for frame in frames])
    np.testing.assert_allclose(steps, expected, atol=1e-4, rtol=0)


def clip_model_logits(run_dir: Path, frames: np.ndarray) -> np.ndarray:
    """The trained clip model's logits [K] on `frames` [T, H, W, 3] (the frames it samples,
    each cropped as the evaluation crops it)."""
    import tensorflow as tf

    from actrec.data.input.clips import evaluation_crop

    run = load_trained_run(run_dir)
    model = build_trained_model(run)
    crops = evaluation_crop(tf.cast(frames, tf.float32), clip_spec(run.recipe, training=False))
    return keras.ops.convert_to_numpy(model(crops[None], training=False))[0]


def first_test_video_frames(model, run_dir: Path, prepared: Path) -> np.ndarray:
    """The frames uint8 [T, H, W, 3] the run's clip model samples from the first test video
    of `prepared`, at the streaming export's frame size and JPEG quality."""
    run = load_trained_run(run_dir)
    settings = PrepareSettings(
        frame_size=model.frame_size, flow="none", jpeg_quality=model.jpeg_quality
    )
    videos = [v["path"] for v in read_manifest(prepared)["videos"] if v["split"] == "test"]
    return sampled_frames(Path(videos[0]), settings, clip_spec(run.recipe, training=False))


def assert_last_step_is_the_clip_model(model, run_dir: Path, prepared: Path, atol: float):
    """A loaded StreamingModel of a causal clip network (a MoViNet stream), fed the frames
    the run's clip model samples from the first test video, ends on that model's logits
    (within `atol`); returns every step's logits [T, K]."""
    frames = first_test_video_frames(model, run_dir, prepared)
    model.reset()
    steps = np.stack([model.step(frame) for frame in frames])
    np.testing.assert_allclose(steps[-1], clip_model_logits(run_dir, frames), atol=atol, rtol=0)
    return steps
