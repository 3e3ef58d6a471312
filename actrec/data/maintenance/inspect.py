"""Read a prepared dataset back, check it against its manifest, draw a contact sheet."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import cv2
import numpy as np

from actrec.data.format import shards
from actrec.data.format.flow import dequantize_flow
from actrec.data.format.integrity import SHARD_FILES_KEY, read_error_summary, shard_problems
from actrec.data.format.manifest import read_manifest
from actrec.data.maintenance.contact_sheet import ContactVideo, contact_sheet_png
from actrec.files.atomic import write_bytes_atomic
from actrec.progress import NullProgress, Progress

if TYPE_CHECKING:
    import tensorflow as tf

MAX_PROBLEMS_LISTED = 50
CONTACT_SHEET_VIDEOS = 8  # one per class, up to 8 classes (the synthetic set has 8)


@dataclass
class InspectionReport:
    """records: videos read per split; expected: videos the manifest lists as prepared."""

    records: dict[str, int] = field(default_factory=dict)
    expected: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    frames: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    num_problems: int = 0
    contact_sheet: Path | None = None
    contact_sheet_classes: list[str] = field(default_factory=list)
    checksums_verified: bool = False  # the manifest records shard checksums, and they were read

    @property
    def ok(self) -> bool:
        return self.num_problems == 0

    def add_problem(self, text: str) -> None:
        self.num_problems += 1
        if len(self.problems) < MAX_PROBLEMS_LISTED:
            self.problems.append(text)


def _jpegs(example, key: str) -> list[bytes]:
    """The JPEGs of a frame record's sequence `key` (one per frame record in format 2)."""
    return [
        feature.bytes_list.value[0] for feature in example.feature_lists.feature_list[key].feature
    ]


@dataclass
class _Video:
    """One video's records as read from a shard: its header and where each record began."""

    header: tf.train.SequenceExample
    offset: int
    records: list[bytes] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)  # byte offset of each frame record

    def context(self, key: str, kind: str = "int64_list") -> list:
        return list(getattr(self.header.context.feature[key], kind).value)

    @property
    def video_id(self) -> str:
        return self.context(shards.VIDEO_ID_KEY, "bytes_list")[0].decode()

    @property
    def num_records(self) -> int:
        return len(self.context(shards.RGB_OFFSETS_KEY)) + len(
            self.context(shards.FLOW_OFFSETS_KEY)
        )

    def frames(self, key: str) -> list[bytes]:
        """The JPEGs of `key` (RGB_KEY or a flow key), one per frame record, in order."""
        import tensorflow as tf

        rgb = len(self.context(shards.RGB_OFFSETS_KEY))
        chosen = self.records[1 : rgb + 1] if key == shards.RGB_KEY else self.records[rgb + 1 :]
        return [
            jpeg
            for record in chosen
            for jpeg in _jpegs(tf.train.SequenceExample.FromString(record), key)
        ]


def _layout_problems(video: _Video, with_flow: bool) -> list[str]:
    """Where the header's offsets and the frame records disagree."""
    import tensorflow as tf

    header_end = video.offset + len(video.records[0]) + shards.RECORD_FRAMING_BYTES
    rgb_offsets = video.context(shards.RGB_OFFSETS_KEY)
    flow_offsets = video.context(shards.FLOW_OFFSETS_KEY)
    problems = []
    if [header_end + offset for offset in rgb_offsets + flow_offsets] != video.positions:
        problems.append("the header's frame offsets do not point at its frame records")
    if with_flow and len(flow_offsets) != len(rgb_offsets) - 1:
        problems.append(f"{len(flow_offsets)} flow records for {len(rgb_offsets)} frames")
    keys = [(shards.RGB_KEY,)] * len(rgb_offsets) + [(shards.FLOW_X_KEY, shards.FLOW_Y_KEY)] * len(
        flow_offsets
    )
    for index, (record, wanted) in enumerate(zip(video.records[1:], keys, strict=True)):
        example = tf.train.SequenceExample.FromString(record)
        if any(len(_jpegs(example, key)) != 1 for key in wanted):
            problems.append(f"frame record {index} does not hold one JPEG per {', '.join(wanted)}")
            break
    return problems


def _check_video(
    video: _Video,
    shard_name: str,
    expected: dict,
    seen: set,
    report: InspectionReport,
    with_flow: bool,
) -> None:
    """Check one video's records against the manifest."""
    video_id = video.video_id
    entry = expected.get(video_id)
    if entry is None:
        report.add_problem(f"{shard_name}: video {video_id!r} is not in the manifest")
        return
    if video_id in seen:
        report.add_problem(f"{shard_name}: video {video_id!r} appears more than once")
    seen.add(video_id)
    frames = len(video.context(shards.RGB_OFFSETS_KEY))
    checks = [
        ("shard", entry["shard"], shard_name),
        ("offset", entry.get("offset"), video.offset),
        ("digest", entry["digest"], shards.records_digest(video.records)),
        ("label", entry["label"], video.context(shards.LABEL_INDEX_KEY)[0]),
        ("frames", entry["frames"], frames),
        ("frames in the header", frames, video.context(shards.NUM_FRAMES_KEY)[0]),
        ("height", entry.get("height"), video.context(shards.HEIGHT_KEY)[0]),
        ("width", entry.get("width"), video.context(shards.WIDTH_KEY)[0]),
    ]
    for name, wanted, found in checks:
        if wanted != found:
            report.add_problem(
                f"{shard_name}: {video_id}: {name} is {found!r}, the manifest says {wanted!r}"
            )
    for problem in _layout_problems(video, with_flow):
        report.add_problem(f"{shard_name}: {video_id}: {problem}")


def _shard_videos(path: Path, shard_name: str, report: InspectionReport):
    """Yield the videos of one shard in file order (a _Video each); a record that is not
    where the layout puts it is a problem and ends the shard (it cannot be resynchronised)."""
    import tensorflow as tf

    position, video = 0, None
    for serialized in shards_iterator(path):
        if video is None:
            try:
                header = tf.train.SequenceExample.FromString(serialized)
            except Exception as error:  # protobuf raises DecodeError subclasses
                report.add_problem(
                    f"{shard_name}: the record at byte {position} does not parse ({error})"
                )
                return
            if shards.RGB_OFFSETS_KEY not in header.context.feature:
                report.add_problem(
                    f"{shard_name}: the record at byte {position} is not a video header (is this "
                    "a format-1 shard, or a damaged one?)"
                )
                return
            video = _Video(header, position, [serialized])
        else:
            video.records.append(serialized)
            video.positions.append(position)
        position += len(serialized) + shards.RECORD_FRAMING_BYTES
        if len(video.records) == video.num_records + 1:
            yield video
            video = None
    if video is not None:
        report.add_problem(f"{shard_name}: {video.video_id}: the shard ends inside its records")


def shards_iterator(path: Path):
    """The serialised records of one shard, in file order."""
    import tensorflow as tf

    yield from tf.data.TFRecordDataset(str(path)).as_numpy_iterator()


def _evenly_spaced(count: int, available: int) -> list[int]:
    return sorted({round(i * (available - 1) / max(count - 1, 1)) for i in range(count)})


def _contact_video(video: _Video, frames_per_video: int, with_flow: bool) -> ContactVideo:
    """`frames_per_video` evenly spaced RGB frames of one video and the flow that follows
    each (in pixels)."""
    rgb_jpegs = video.frames(shards.RGB_KEY)
    indices = _evenly_spaced(frames_per_video, len(rgb_jpegs) - (1 if with_flow else 0))
    decode = lambda data, flag: cv2.imdecode(np.frombuffer(data, np.uint8), flag)  # noqa: E731
    rgb = [cv2.cvtColor(decode(rgb_jpegs[i], cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB) for i in indices]
    flows = []
    if with_flow:
        flow_x, flow_y = video.frames(shards.FLOW_X_KEY), video.frames(shards.FLOW_Y_KEY)
        for i in indices:
            quantized = np.stack(
                [decode(flow_x[i], cv2.IMREAD_GRAYSCALE), decode(flow_y[i], cv2.IMREAD_GRAYSCALE)],
                axis=-1,
            )
            flows.append(dequantize_flow(quantized))
    return ContactVideo(
        label=video.context(shards.LABEL_TEXT_KEY, "bytes_list")[0].decode(),
        video_id=video.video_id,
        rgb_frames=rgb,
        flow_fields=flows,
    )


def inspect_prepared(
    prepared_dir: Path | str,
    contact_sheet: Path | str | None = None,
    num_videos: int = CONTACT_SHEET_VIDEOS,
    frames_per_video: int = 6,
    progress: Progress | None = None,
) -> InspectionReport:
    """Read every record of every shard and compare it with the manifest (format 2).

    Checks: each listed shard has the size and SHA-256 the manifest records (when it records
    them: actrec.data.format.integrity), exists and parses to the end as videos of the layout in
    actrec.data.format.shards (a header, then its frame records where the header says they are,
    one JPEG each); each video is in the manifest, in the shard and at the byte offset the
    manifest names, appears once, and has the manifest's digest, label, frame count, frame
    size (and T-1 flow frames); every video the manifest lists as prepared is found.
    With `contact_sheet`, writes a PNG (actrec.data.maintenance.contact_sheet) of one video
    per class, for up to `num_videos` classes: RGB frames over colour-coded flow, and the flow
    key.
    """
    progress = progress or NullProgress()
    prepared_dir = Path(prepared_dir)
    manifest = read_manifest(prepared_dir)
    with_flow = manifest["settings"].get("flow", "none") != "none"
    report = InspectionReport()
    for problem in shard_problems(prepared_dir, manifest, progress=progress):
        report.add_problem(
            f"{problem.name} {problem.describe()}; re-run the `actrec prepare` command that made "
            f"{prepared_dir} to re-make it"
        )
    report.checksums_verified = bool(manifest.get(SHARD_FILES_KEY))
    videos: list[ContactVideo] = []
    labels_drawn: set[int] = set()
    total = sum(info["videos"] for info in manifest["splits"].values())
    progress.start("reading records", total)
    try:
        for split, info in manifest["splits"].items():
            expected = {
                v["id"]: v
                for v in manifest["videos"]
                if v["split"] == split and v["status"] == "ok"
            }
            report.expected[split] = len(expected)
            report.skipped[split] = info["skipped"]
            report.records[split] = report.frames[split] = 0
            seen: set[str] = set()
            for shard_name in info["shards"]:
                path = prepared_dir / shard_name
                if not path.exists():
                    report.add_problem(f"{shard_name}: listed in the manifest but missing")
                    continue
                try:
                    for video in _shard_videos(path, shard_name, report):
                        _check_video(video, shard_name, expected, seen, report, with_flow)
                        report.records[split] += 1
                        report.frames[split] += len(video.context(shards.RGB_OFFSETS_KEY))
                        progress.advance(1)
                        label = video.context(shards.LABEL_INDEX_KEY)[0]
                        if contact_sheet and len(videos) < num_videos and label not in labels_drawn:
                            labels_drawn.add(label)
                            videos.append(_contact_video(video, frames_per_video, with_flow))
                except Exception as error:  # tf.errors.DataLossError for a corrupt shard
                    report.add_problem(
                        f"{shard_name}: cannot be read to the end ({read_error_summary(error)})"
                    )
            for video_id in sorted(set(expected) - seen):
                report.add_problem(
                    f"{video_id}: listed as prepared in {expected[video_id]['shard']} "
                    "but no record was found"
                )
    finally:
        progress.finish()
    if contact_sheet and videos:
        report.contact_sheet = Path(contact_sheet)
        report.contact_sheet_classes = [video.label for video in videos]
        report.contact_sheet.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(report.contact_sheet, contact_sheet_png(videos))
    return report
