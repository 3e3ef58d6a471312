"""`actrec predict SOURCE --stream`: a streaming export (an online TSM or a MoViNet stream)
run frame by frame on a video file, a camera or a stream URL, with a running prediction.

    SOURCE (file: decoded and resampled as `actrec prepare` does; camera index or URL:
            whatever cv2.VideoCapture opens, frames as they come)
      -> every `every`-th frame: resized to the prepared frame size, JPEG round trip at the
         prepared quality (what the training records hold)
      -> the export's step (frame + shift state -> logits + new state)
      -> the running prediction: softmax of the mean logits of the last `smooth` steps
         (num_segments steps: the clip model's average consensus; one step for a MoViNet,
         whose step's logits are the clip model's on every frame so far)

Every frame read comes back with the running prediction at it (streamed_frames), at the
source's own size, for `predict --stream --annotate`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from actrec.errors import ConfigError
from actrec.export.formats.registry import format_of_export
from actrec.export.metadata import read_export_metadata
from actrec.export.trust.model_reading import reading_model
from actrec.predict.video_files import top_k_pairs


@dataclass(frozen=True)
class StreamStep:
    """One streamed frame: its index in the source, its time in seconds (None when the
    source declares no rate), the running top-k and this frame's own top-k."""

    frame: int
    time: float | None
    top_k: tuple[tuple[str, float], ...]
    frame_top_k: tuple[tuple[str, float], ...]

    def to_dict(self) -> dict:
        def pairs(top):
            return [{"class": name, "probability": round(value, 6)} for name, value in top]

        return {
            "frame": self.frame,
            "time": None if self.time is None else round(self.time, 3),
            "top_k": pairs(self.top_k),
            "frame_top_k": pairs(self.frame_top_k),
        }


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max())
    return shifted / shifted.sum()


class StreamingModel:
    """A streaming export folder, loaded by its format (actrec.export.formats): one frame at
    a time, the shift state kept here. options: the format's runtime options (onnx:
    provider; tflite: interpreter). The model file is checked as ExportedModel checks it,
    unless `trust_model`."""

    def __init__(self, model_dir: Path | str, trust_model: bool = False, **options):
        self.model_dir = Path(model_dir)
        self.metadata = read_export_metadata(self.model_dir)
        self.streaming = self.metadata.get("streaming")
        if not self.streaming:
            raise ConfigError(
                f"{self.model_dir} is a clip export, which --stream cannot run frame by frame: "
                "train an online TSM (model.shift_direction=online, e.g. the "
                "synthetic-tsm-online recipe) or a MoViNet stream (model.backbone "
                "movinet_a0_stream, ...) and export it with `actrec export RUN --out FOLDER "
                "--streaming`"
            )
        self.classes = tuple(self.metadata["classes"])
        export_format = format_of_export(self.model_dir, self.metadata)
        export_format.check_runtime_options(self.model_dir, options)
        with reading_model(self.model_dir):
            if not trust_model:
                export_format.check_untrusted(self.model_dir, self.metadata)
            self._step = export_format.stream_model(
                self.model_dir, self.metadata, trusted=trust_model, **options
            )
        self._states = [state["input"] for state in self.streaming["states"]]
        # Where a format cannot give an output an input's name (ONNX), actrec.json says it.
        self._outputs = [state.get("output", state["input"]) for state in self.streaming["states"]]
        self._shapes = [tuple(state["shape"][1:]) for state in self.streaming["states"]]
        preparation = self.metadata.get("preparation", {})
        self.frame_size = str(preparation.get("frame_size", "original"))
        self.fps = preparation.get("fps")
        self.jpeg_quality = int(preparation.get("jpeg_quality", 90))
        self.reset()

    def reset(self) -> None:
        """Zero states: the next frame starts a new stream."""
        self.state = {
            name: np.zeros((1, *shape), np.float32)
            for name, shape in zip(self._states, self._shapes, strict=True)
        }

    def step(self, frame: np.ndarray) -> np.ndarray:
        """Logits [K] of one prepared RGB frame uint8 [H, W, 3]; the state moves on."""
        outputs = self._step(frame[None], self.state)
        self.state = {
            name: outputs[output] for name, output in zip(self._states, self._outputs, strict=True)
        }
        return outputs["logits"][0]

    def top_k(self, probabilities: np.ndarray, k: int) -> tuple[tuple[str, float], ...]:
        return top_k_pairs(probabilities, self.classes, k)


def _camera_index(source: str) -> int | None:
    return int(source) if source.isdigit() else None


def source_frames(source: str, fps: float | None) -> tuple[Iterator, float]:
    """(BGR uint8 frames [H, W, 3] at the source's own size, their rate (0 when unknown))
    of a video file (resampled to `fps` as prepare does), a camera index or a stream URL.
    ConfigError when the source cannot be opened."""
    import cv2

    # OpenCV: lazily, `actrec predict`'s argument refusals come before OpenCV
    from actrec.data.format.video import iter_video_frames, probe_video

    camera = _camera_index(source)
    if camera is None and "://" not in source:  # a file
        path = Path(source)
        if not path.is_file():
            raise ConfigError(
                f"{source}: no such file; give a video file, a camera index (0) or a URL"
            )
        rate = fps or probe_video(path).fps
        return iter_video_frames(path, None, fps, channel_order="bgr"), rate
    capture = cv2.VideoCapture(camera if camera is not None else source)
    if not capture.isOpened():
        what = f"camera {camera}" if camera is not None else f"stream {source}"
        raise ConfigError(
            f"cannot open {what}: OpenCV's VideoCapture does not open it (check that the "
            "device exists and is free, or that the URL plays, e.g. in ffplay)"
        )
    rate = float(capture.get(cv2.CAP_PROP_FPS) or 0.0)

    def frames():
        try:
            while True:
                ok, frame = capture.read()
                if not ok or frame is None:
                    return
                yield frame
        finally:
            capture.release()

    return frames(), rate


@dataclass(frozen=True)
class StreamedFrame:
    """One frame read from the source: `image` BGR uint8 [H, W, 3] as the source gives it
    (a file's resampled to the export's rate), `index` its place among the frames read,
    `rate` their frames per second (0 when the source declares none), `step` the running
    prediction at this frame (the last fed frame's), `fed` whether this frame was fed."""

    image: np.ndarray = field(repr=False, compare=False)
    index: int
    rate: float
    step: StreamStep
    fed: bool

    @property
    def caption(self) -> str:
        """Where the frame is: its time in seconds, else its index."""
        return f"{self.index / self.rate:.2f} s" if self.rate > 0 else f"frame {self.index}"


def streamed_frames(
    model: StreamingModel,
    source: str,
    every: int | None = None,
    smooth: int | None = None,
    top_k: int = 1,
) -> Iterator[StreamedFrame]:
    """Every frame read from `source` with the running prediction (see the module), from
    zero states: the one code path of files, cameras and URLs. every: feed every n-th
    frame (default: the export's frames_per_step, else 1). smooth: steps averaged
    (default: the model's num_segments; 1 where each step's logits are already the clip's,
    a MoViNet stream's)."""
    import tensorflow as tf

    # OpenCV: lazily, `actrec predict`'s argument refusals come before OpenCV
    from actrec.data.format.frame_encoding import jpeg_bytes
    from actrec.data.format.video import FrameSize, resize_frame

    every = every or model.streaming.get("frames_per_step") or 1
    clip_logits = model.streaming.get("logits") == "clip"
    smooth = smooth or (1 if clip_logits else model.streaming["num_segments"])
    for name, value in (("--every", every), ("--smooth", smooth)):
        if value < 1:
            raise ConfigError(f"{name} {value} is not valid; give a whole number >= 1")
    size = FrameSize.parse(model.frame_size)
    frames, rate = source_frames(source, model.fps)
    model.reset()  # a new source is a new stream: its first frame has no previous one
    recent = deque(maxlen=smooth)
    step = None
    for index, frame in enumerate(frames):
        fed = index % every == 0
        if fed:
            prepared = resize_frame(frame, size)  # as the training records hold it
            jpeg = jpeg_bytes(prepared, model.jpeg_quality)
            logits = model.step(tf.io.decode_jpeg(jpeg, channels=3).numpy())
            recent.append(logits)
            step = StreamStep(
                index,
                index / rate if rate > 0 else None,
                model.top_k(_softmax(np.mean(recent, axis=0)), top_k),
                model.top_k(_softmax(logits), top_k),
            )
        yield StreamedFrame(frame, index, rate, step, fed)


def stream_predictions(
    model: StreamingModel,
    source: str,
    every: int | None = None,
    smooth: int | None = None,
    top_k: int = 1,
) -> Iterator[StreamStep]:
    """The running prediction after each fed frame of `source` (streamed_frames)."""
    for streamed in streamed_frames(model, source, every, smooth, top_k):
        if streamed.fed:
            yield streamed.step
