"""Predict the action in video files with an exported model (docs/architecture.md §6).

    VIDEO -> decode, resize, resample, optical flow, JPEG round trip   exactly as
             `actrec prepare` made the training records (actrec.data.prepare.encode_video)
          -> all frames uint8 [1, F, H, W, 3] (+ quantised flow [1, F-1, H, W, 2])
          -> the export's serving signature (sampling, crop, model, softmax inside)
          -> the top-k classes

A video goes through the preparation code path itself (its records, decoded back), so the
model sees what it saw in training and evaluation: the same frame size, frame rate, flow
method, flow quantisation and JPEG compression. The whole video is held in memory at the
prepared frame size while it is predicted.

A video that cannot be used (missing, not a video, corrupt, too short for flow) gives a
VideoPrediction with `error` set; the others are still predicted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from actrec.data.format.records import decode_video
from actrec.errors import ConfigError, VideoReadError
from actrec.export.formats.registry import format_of_export
from actrec.export.metadata import read_export_metadata
from actrec.export.trust.model_reading import reading_model
from actrec.progress import NullProgress, Progress

DEFAULT_TOP_K = 5


@dataclass(frozen=True)
class VideoPrediction:
    """The prediction for one video: `top_k` (class, probability) pairs, most probable
    first, or `error` (why the video could not be used) and no classes."""

    video: str
    top_k: tuple[tuple[str, float], ...] = ()
    error: str | None = None
    probabilities: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict:
        """{"video", "top_k": [{"class", "probability"}], "error"} (JSON-ready)."""
        return {
            "video": self.video,
            "top_k": [{"class": name, "probability": value} for name, value in self.top_k],
            "error": self.error,
        }


def top_k_pairs(
    probabilities: np.ndarray, classes: Sequence[str], k: int
) -> tuple[tuple[str, float], ...]:
    """The k most probable (class, probability) pairs of probabilities [K], most probable
    first (ties in class order)."""
    order = np.argsort(-probabilities, kind="stable")[: min(k, len(classes))]
    return tuple((classes[index], float(probabilities[index])) for index in order)


def record_inputs(video_records: Sequence[bytes], with_rgb: bool = True, with_flow: bool = True):
    """Every frame of one prepared video (its records, header first), decoded: {"frames":
    uint8 [F, H, W, 3], "flow": uint8 [F-1, H, W, 2] (quantised, 128 = no motion)} (the
    keys asked for)."""
    return decode_video(video_records, with_rgb, with_flow)


class ExportedModel:
    """An `actrec export` folder, loaded once by its format (actrec.export.formats): its
    description (actrec.json) and its clip model. options: the format's runtime options
    (onnx: provider; tflite: interpreter). The model file is checked for what an actrec
    export never holds before it is loaded (ExportFormat.check_untrusted) unless
    `trust_model`."""

    def __init__(self, model_dir: Path | str, trust_model: bool = False, **options):
        # OpenCV: lazily, `actrec predict`'s argument refusals come before OpenCV
        from actrec.data.format.flow import available_flow_methods
        from actrec.data.prepare.encode_video import PrepareSettings

        self.model_dir = Path(model_dir)
        self.metadata = read_export_metadata(self.model_dir)
        self.format = format_of_export(self.model_dir, self.metadata)
        if not self.format.predicts:
            raise ConfigError(self.format.cannot_predict(self.model_dir))
        self.format.check_runtime_options(self.model_dir, options)
        if self.metadata.get("streaming"):
            raise ConfigError(
                f"{self.model_dir} is a streaming export (an online TSM, one frame at a time): "
                "run it with `actrec predict SOURCE --model FOLDER --stream`, or export the "
                "run again without --streaming for whole videos"
            )
        self.classes = tuple(self.metadata["classes"])
        self.input_names = tuple(self.metadata["inputs"])  # "frames" and / or "flow"
        preparation = self.metadata.get("preparation", {})
        needs_flow = "flow" in self.input_names
        flow_method = preparation.get("flow", "none") if needs_flow else "none"
        if needs_flow and flow_method not in available_flow_methods():
            raise ConfigError(
                f"{self.model_dir} was trained on {flow_method!r} optical flow, which this "
                f"OpenCV build cannot compute (it has {', '.join(available_flow_methods())}); "
                "install opencv-contrib-python-headless for tvl1"
            )
        defaults = PrepareSettings()
        self.settings = PrepareSettings(
            frame_size=str(preparation.get("frame_size", defaults.frame_size)),
            fps=preparation.get("fps"),
            flow=flow_method,
            jpeg_quality=int(preparation.get("jpeg_quality", defaults.jpeg_quality)),
            min_frames=2 if needs_flow else 1,
        )
        with reading_model(self.model_dir):
            if not trust_model:
                self.format.check_untrusted(self.model_dir, self.metadata)
            self.model = self.format.clip_model(
                self.model_dir, self.metadata, trusted=trust_model, **options
            )

    def video_inputs(self, path: Path | str) -> dict:
        """The signature inputs of one video (batch of 1); VideoReadError when it cannot
        be used."""
        # OpenCV: lazily, `actrec predict`'s argument refusals come before OpenCV
        from actrec.data.prepare.encode_video import VideoTask, encode_video

        path = Path(path)
        task = VideoTask(0, path.stem, str(path), -1, "", "predict")
        result = encode_video(task, self.settings)
        if result.records is None:
            detail = result.detail
            if result.reason == "too-short":
                detail = (
                    f"{result.num_frames} frame decoded; the flow stream needs at least 2"
                    if "flow" in self.input_names
                    else "no frame decoded"
                )
            raise VideoReadError(path, result.reason, detail)
        inputs = record_inputs(
            result.records, "frames" in self.input_names, "flow" in self.input_names
        )
        return {name: array[None] for name, array in inputs.items()}  # [1, ...]

    def probabilities(self, inputs: dict) -> np.ndarray:
        """Class probabilities [N, K] of signature inputs (uint8 arrays by name)."""
        return self.model.probabilities(inputs)

    def predict_video(self, path: Path | str, top_k: int = DEFAULT_TOP_K) -> VideoPrediction:
        """The top-k classes of one video, or a prediction with `error` set."""
        import tensorflow as tf

        try:
            probabilities = self.probabilities(self.video_inputs(path))[0]  # [K]
        except VideoReadError as error:
            return VideoPrediction(str(path), error=error.detail)
        except tf.errors.InvalidArgumentError as error:
            return VideoPrediction(str(path), error=f"the model rejected it: {error.message}")
        return VideoPrediction(
            str(path), self.top_k(probabilities, top_k), probabilities=probabilities
        )

    def top_k(self, probabilities: np.ndarray, k: int) -> tuple[tuple[str, float], ...]:
        return top_k_pairs(probabilities, self.classes, k)


def predict_videos(
    videos: Sequence[Path | str],
    model_dir: Path | str,
    top_k: int = DEFAULT_TOP_K,
    progress: Progress | None = None,
    trust_model: bool = False,
    **options,
) -> list[VideoPrediction]:
    """One VideoPrediction per video, in order; a video that cannot be used has `error`
    set and does not stop the others. ConfigError when the model folder is not usable.
    trust_model, options: see ExportedModel."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ConfigError(f"top-k {top_k!r} is not valid; use a whole number >= 1")
    progress = progress or NullProgress()
    model = ExportedModel(model_dir, trust_model, **options)
    results = []
    progress.start("predict", len(videos))
    try:
        for video in videos:
            results.append(model.predict_video(video, top_k))
            progress.advance(1)
    finally:
        progress.finish()
    return results
