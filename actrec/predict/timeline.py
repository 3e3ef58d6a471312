"""A long video's timeline: the export's top-k classes of sliding windows (`predict --timeline`).

    VIDEO -> frames one at a time, prepared exactly as `actrec prepare` stores them (resize,
             frame rate, JPEG round trip; flow from the previous frame, quantised, JPEG)
          -> the last W frames (and W-1 flow fields) kept; every S frames a window
          -> the export's serving signature on the window [1, W, H, W', C]: the `centre`
             evaluation's sampling and crop of a clip of W frames
          -> TimelineWindow(start, end, top-k)

Windows start at 0, S, 2S, ... and hold W frames; when the video's last frame is not the
end of a window, a last window ends there (so every frame is in a window). A video shorter
than W frames gives one window of the whole video (`Timeline.note` says so). Memory holds
W frames whatever the video's length.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from actrec.errors import ConfigError, VideoReadError
from actrec.predict.video_files import ExportedModel
from actrec.progress import NullProgress, Progress

DEFAULT_WINDOW_SECONDS = 2.0


@dataclass(frozen=True)
class TimelineWindow:
    """One window: `start` and `end` in seconds (end exclusive: frame `end_frame` is the
    next window's), the frames [start_frame, end_frame), and the top-k (class, probability)."""

    start_frame: int
    end_frame: int
    fps: float
    top_k: tuple[tuple[str, float], ...]

    @property
    def start(self) -> float:
        return self.start_frame / self.fps

    @property
    def end(self) -> float:
        return self.end_frame / self.fps

    def to_dict(self) -> dict:
        return {
            "start": round(self.start, 3),
            "end": round(self.end, 3),
            "top_k": [{"class": name, "probability": value} for name, value in self.top_k],
        }


@dataclass
class Timeline:
    """The windows of one video, or `error` (why it could not be used); `note` says when
    the video was shorter than one window."""

    video: str
    fps: float = 0.0
    window_frames: int = 0
    stride_frames: int = 0
    windows: list[TimelineWindow] | None = None
    note: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict:
        """{"video", "fps", "window", "stride" (seconds), "windows": [...], "note", "error"}."""
        return {
            "video": self.video,
            "fps": self.fps,
            "window": round(self.window_frames / self.fps, 3) if self.fps else None,
            "stride": round(self.stride_frames / self.fps, 3) if self.fps else None,
            "windows": [window.to_dict() for window in self.windows or []],
            "note": self.note,
            "error": self.error,
        }


def window_ranges(num_frames: int, window: int, stride: int) -> list[tuple[int, int]]:
    """The [start, end) frame ranges of a video of `num_frames` frames (see the module)."""
    ranges = [
        (count - window, count)
        for count in range(1, num_frames + 1)
        if _ends_window(count, window, stride)
    ]
    last = _last_window(num_frames, window, stride)
    return ranges + ([last] if last else [])


def _ends_window(count: int, window: int, stride: int) -> bool:
    """Whether the `count`-th frame ends a regular window."""
    return count >= window and (count - window) % stride == 0


def _last_window(count: int, window: int, stride: int) -> tuple[int, int] | None:
    """The window added after the last frame, if the last regular one did not end there."""
    if count == 0:
        return None
    if count < window:
        return (0, count)
    if (count - window) % stride:
        return (count - window, count)
    return None


def covering_windows(windows: list[TimelineWindow], times: np.ndarray) -> np.ndarray:
    """int [N]: for each time in seconds (float [N]), the index of the window whose centre
    is nearest (the earlier on a tie): a window that holds the time, as all windows are
    equally long (what --annotate draws on a frame and the strip shows for a moment)."""
    centres = np.array([(window.start + window.end) / 2 for window in windows])  # [M]
    return np.argmin(np.abs(np.asarray(times, float)[:, None] - centres[None, :]), axis=1)


def window_lengths(
    window_seconds: float, stride_seconds: float | None, fps: float, min_frames: int
) -> tuple[int, int]:
    """(window, stride) in frames at `fps`: rounded, the window at least `min_frames`, the
    stride at least 1 (stride None: half the window)."""
    for name, value in (("window", window_seconds), ("stride", stride_seconds)):
        if value is not None and not value > 0:
            raise ConfigError(f"--{name} {value!r} is not valid; give a positive number of seconds")
    window = max(min_frames, round(window_seconds * fps))
    stride = max(1, window // 2 if stride_seconds is None else round(stride_seconds * fps))
    return window, stride


def tf_errors():
    """tensorflow.errors (imported when needed: this module is imported by the CLI)."""
    import tensorflow as tf

    return tf.errors


def _decoded(jpeg: bytes, channels: int) -> np.ndarray:
    """uint8 [H, W, channels]: decoded as the record reader decodes (TensorFlow's JPEG)."""
    import tensorflow as tf

    return tf.io.decode_jpeg(jpeg, channels=channels).numpy()


def _frame_rate(model, path: Path) -> float:
    """The frame rate the video is prepared at: the export's (--fps of prepare), else the
    video's own."""
    # OpenCV: lazily, `actrec predict`'s argument refusals come before OpenCV
    from actrec.data.format.video import probe_video

    if model.settings.fps:
        return float(model.settings.fps)
    fps = probe_video(path).fps
    if not fps > 0:
        raise VideoReadError(
            path,
            "undecodable",
            "the container declares no frame rate, so windows in seconds cannot be placed",
        )
    return fps


def _expected_frames(path: Path, fps: float) -> int | None:
    """The prepared frame count the container declares (None when unknown), for progress."""
    # OpenCV: lazily, `actrec predict`'s argument refusals come before OpenCV
    from actrec.data.format.video import probe_video

    info = probe_video(path)
    if info.frame_count <= 0 or not info.fps > 0:
        return None
    return round(info.frame_count * fps / info.fps)


def video_timeline(
    model,
    path: Path | str,
    window_seconds: float = DEFAULT_WINDOW_SECONDS,
    stride_seconds: float | None = None,
    top_k: int = 5,
    progress: Progress | None = None,
) -> Timeline:
    """The Timeline of one video with `model` (actrec.predict.video_files.ExportedModel); a
    video that cannot be used gives a Timeline with `error` set."""
    progress = progress or NullProgress()
    path = Path(path)
    try:
        fps = _frame_rate(model, path)
        min_frames = 2 if "flow" in model.input_names else 1
        window, stride = window_lengths(window_seconds, stride_seconds, fps, min_frames)
        expected = _expected_frames(path, fps)
        total = len(window_ranges(expected, window, stride)) if expected else None
        timeline = Timeline(str(path), fps, window, stride, [])
        progress.start(f"timeline {path.name}", total)
        try:
            read = 0  # frames read so far (windows overlap)
            for start, end, inputs in _window_inputs(model, path, window, stride):
                top = model.top_k(model.probabilities(inputs)[0], top_k)
                timeline.windows.append(TimelineWindow(start, end, fps, top))
                progress.advance(1, frames=end - read)
                read = end
        finally:
            progress.finish()
    except VideoReadError as error:
        return Timeline(str(path), error=error.detail)
    except tf_errors().InvalidArgumentError as error:
        return Timeline(str(path), error=f"the model rejected it: {error.message}")
    if not timeline.windows:
        return Timeline(
            str(path), fps, window, stride, error=f"fewer than {min_frames} frames decoded"
        )
    if timeline.windows[-1].end_frame < window:
        frames = timeline.windows[-1].end_frame
        timeline.note = (
            f"the video ({frames / fps:.2f} s, {frames} frames) is shorter than one window "
            f"({window / fps:.2f} s): one row for the whole video"
        )
    return timeline


def _window_inputs(model, path: Path, window: int, stride: int) -> Iterator[tuple[int, int, dict]]:
    """(start frame, end frame, signature inputs [1, ...]) of each window, as frames arrive."""
    # OpenCV: lazily, `actrec predict`'s argument refusals come before OpenCV
    from actrec.data.format.flow import create_flow_estimator
    from actrec.data.format.frame_encoding import iter_frame_jpegs
    from actrec.data.format.video import FrameSize

    settings = model.settings
    with_rgb = "frames" in model.input_names
    with_flow = "flow" in model.input_names
    frames = deque(maxlen=window)  # uint8 [H, W, 3] each
    flows = deque(maxlen=window - 1)  # uint8 [H, W, 2] each, flow i from frame i to i + 1
    estimate_flow = create_flow_estimator(settings.flow) if with_flow else None

    def inputs() -> dict:
        chosen = {}
        if with_rgb:
            chosen["frames"] = np.stack(frames)[None]
        if with_flow:
            chosen["flow"] = np.stack(flows)[None]
        return chosen

    count = 0
    jpegs = iter_frame_jpegs(
        path,
        FrameSize.parse(settings.frame_size),
        settings.fps,
        estimate_flow,
        settings.jpeg_quality,
        with_rgb=with_rgb,
    )
    for frame in jpegs:
        count += 1
        frames.append(_decoded(frame.rgb, 3) if with_rgb else None)
        if frame.flow_x is not None:
            flows.append(
                np.concatenate([_decoded(frame.flow_x, 1), _decoded(frame.flow_y, 1)], axis=-1)
            )
        if _ends_window(count, window, stride):
            yield count - window, count, inputs()
    last = _last_window(count, window, stride)
    if last and (not with_flow or flows):
        yield *last, inputs()


def timeline_csv(timelines: list[Timeline], top_k: int) -> str:
    """CSV text: a header, then one row per window of every usable video: video, start,
    end (seconds), class_1, probability_1, ... class_k, probability_k."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["video", "start", "end"]
    for rank in range(1, top_k + 1):
        header += [f"class_{rank}", f"probability_{rank}"]
    writer.writerow(header)
    for timeline in timelines:
        for window in timeline.windows or []:
            row = [timeline.video, f"{window.start:.3f}", f"{window.end:.3f}"]
            for name, probability in window.top_k:
                row += [name, f"{probability:.6f}"]
            writer.writerow(row)
    return out.getvalue()


def video_timelines(
    videos,
    model_dir: Path | str,
    window_seconds: float = DEFAULT_WINDOW_SECONDS,
    stride_seconds: float | None = None,
    top_k: int = 5,
    progress: Progress | None = None,
    trust_model: bool = False,
    **options,
) -> list[Timeline]:
    """One Timeline per video, in order (see video_timeline); ConfigError when the model
    folder or the window is not usable (before any video is read). options: the format's
    runtime options and trust_model (actrec.predict.video_files.ExportedModel)."""
    window_lengths(window_seconds, stride_seconds, 25.0, 1)  # checks the values first
    model = ExportedModel(model_dir, trust_model, **options)
    return [
        video_timeline(model, video, window_seconds, stride_seconds, top_k, progress)
        for video in videos
    ]
