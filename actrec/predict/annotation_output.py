"""Where `actrec predict --annotate OUT` writes, checked before TensorFlow (or OpenCV) is
imported: the video's container (by OUT's suffix) and the timeline strip beside it.

    OUT.mp4 / OUT.m4v / OUT.mov   MPEG-4 part 2 ('mp4v'), what every OpenCV build writes
    OUT.avi                        Motion JPEG ('MJPG')
    OUT.timeline.png               with --timeline: the predicted class over time
"""

from __future__ import annotations

import os
from pathlib import Path

from actrec.errors import ConfigError, OutputError

ANNOTATION_CODECS = {".mp4": "mp4v", ".m4v": "mp4v", ".mov": "mp4v", ".avi": "MJPG"}
"""The FourCC cv2.VideoWriter writes an annotated video with, by the file's suffix."""

STRIP_SUFFIX = ".timeline.png"


def timeline_strip_path(annotated: Path | str) -> Path:
    """The PNG strip `--timeline --annotate OUT.mp4` writes beside the video: OUT.timeline.png."""
    annotated = Path(annotated)
    return annotated.with_name(annotated.stem + STRIP_SUFFIX)


def _same_file(first: Path, second: Path) -> bool:
    try:
        return first.exists() and second.exists() and os.path.samefile(first, second)
    except OSError:
        return False


def annotation_outputs(path: Path | str, timeline: bool) -> list[Path]:
    """The files `--annotate OUT` writes: OUT, and with --timeline its strip."""
    path = Path(path)
    return [path, timeline_strip_path(path)] if timeline else [path]


def check_annotation_output(path: Path | str, sources: tuple[str, ...], timeline: bool) -> None:
    """ConfigError / OutputError (one line naming OUT and the fix) when `--annotate OUT`
    cannot be written: a suffix OpenCV is not asked to write, several sources, a folder,
    or a source video's own path. (A path through a file: actrec.files.output_paths.
    refuse_a_file_on_the_way, which the command runs on annotation_outputs.)"""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in ANNOTATION_CODECS:
        choices = ", ".join(ANNOTATION_CODECS)
        raise ConfigError(
            f"--annotate {path}: not a video file name; give a path ending in one of {choices} "
            "(e.g. annotated.mp4)"
        )
    if len(sources) != 1:
        raise ConfigError(
            f"--annotate {path} writes one video: give one VIDEO (there are {len(sources)})"
        )
    for output in annotation_outputs(path, timeline):
        if output.is_dir():
            raise OutputError(f"--annotate {path}: {output} is a folder; give another file name")
        if _same_file(output, Path(sources[0])):
            raise OutputError(
                f"--annotate {output} is the source video itself; give another file name"
            )
