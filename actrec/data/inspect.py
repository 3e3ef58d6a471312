"""Read a prepared dataset back, check it against its manifest, draw a contact sheet."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from actrec.atomic import write_bytes_atomic
from actrec.data import shards
from actrec.data.contact_sheet import ContactVideo, contact_sheet_png
from actrec.data.flow import dequantize_flow
from actrec.data.integrity import SHARD_FILES_KEY, read_error_summary, shard_problems
from actrec.data.manifest import read_manifest
from actrec.progress import NullProgress, Progress

MAX_PROBLEMS_LISTED = 50
CONTACT_SHEET_VIDEOS = 8  # one per class, up to 8 classes (the synthetic set has 8)


@dataclass
class InspectionReport:
    """records: records read per split; expected: videos the manifest lists as prepared."""

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


def _decoded_sequence(example, key: str) -> list[bytes]:
    return [
        feature.bytes_list.value[0] for feature in example.feature_lists.feature_list[key].feature
    ]


def _check_record(
    serialized: bytes,
    shard_name: str,
    expected: dict,
    seen: set,
    report: InspectionReport,
    with_flow: bool,
):
    """Check one record against the manifest; returns the parsed SequenceExample or None."""
    import tensorflow as tf

    try:
        example = tf.train.SequenceExample.FromString(serialized)
    except Exception as error:  # protobuf raises DecodeError subclasses
        report.add_problem(f"{shard_name}: a record does not parse ({error})")
        return None
    context = example.context.feature
    video_id = context[shards.VIDEO_ID_KEY].bytes_list.value[0].decode()
    entry = expected.get(video_id)
    if entry is None:
        report.add_problem(f"{shard_name}: record {video_id!r} is not in the manifest")
        return example
    if video_id in seen:
        report.add_problem(f"{shard_name}: record {video_id!r} appears more than once")
    seen.add(video_id)
    frames = len(_decoded_sequence(example, shards.RGB_KEY))
    checks = [
        ("shard", entry["shard"], shard_name),
        ("digest", entry["digest"], hashlib.sha256(serialized).hexdigest()),
        ("label", entry["label"], context[shards.LABEL_INDEX_KEY].int64_list.value[0]),
        ("frames", entry["frames"], frames),
    ]
    if with_flow:
        checks.append(
            ("flow frames", frames - 1, len(_decoded_sequence(example, shards.FLOW_X_KEY)))
        )
    for name, wanted, found in checks:
        if wanted != found:
            report.add_problem(
                f"{shard_name}: {video_id}: {name} is {found!r}, the manifest says {wanted!r}"
            )
    return example


def _evenly_spaced(count: int, available: int) -> list[int]:
    return sorted({round(i * (available - 1) / max(count - 1, 1)) for i in range(count)})


def _contact_video(example, frames_per_video: int, with_flow: bool) -> ContactVideo:
    """`frames_per_video` evenly spaced RGB frames of one record and the flow that follows
    each (in pixels)."""
    rgb_jpegs = _decoded_sequence(example, shards.RGB_KEY)
    indices = _evenly_spaced(frames_per_video, len(rgb_jpegs) - (1 if with_flow else 0))
    decode = lambda data, flag: cv2.imdecode(np.frombuffer(data, np.uint8), flag)  # noqa: E731
    rgb = [cv2.cvtColor(decode(rgb_jpegs[i], cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB) for i in indices]
    flows = []
    if with_flow:
        flow_x = _decoded_sequence(example, shards.FLOW_X_KEY)
        flow_y = _decoded_sequence(example, shards.FLOW_Y_KEY)
        for i in indices:
            quantized = np.stack(
                [decode(flow_x[i], cv2.IMREAD_GRAYSCALE), decode(flow_y[i], cv2.IMREAD_GRAYSCALE)],
                axis=-1,
            )
            flows.append(dequantize_flow(quantized))
    context = example.context.feature
    return ContactVideo(
        label=context[shards.LABEL_TEXT_KEY].bytes_list.value[0].decode(),
        video_id=context[shards.VIDEO_ID_KEY].bytes_list.value[0].decode(),
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
    """Read every record of every shard and compare it with the manifest.

    Checks: each listed shard has the size and SHA-256 the manifest records (when it records
    them: actrec.data.integrity), exists and parses, each record's id is in the manifest, is in
    the shard the manifest names, appears once, and has the manifest's digest, label and
    frame count (and T-1 flow frames); every video the manifest lists as prepared is found.
    With `contact_sheet`, writes a PNG (actrec.data.contact_sheet) of one video per class,
    for up to `num_videos` classes: RGB frames over colour-coded flow, and the flow key.
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
                    for serialized in shards.iter_serialized_records(path):
                        example = _check_record(
                            serialized, shard_name, expected, seen, report, with_flow
                        )
                        report.records[split] += 1
                        progress.advance(1)
                        if example is None:
                            continue
                        label = example.context.feature[shards.LABEL_INDEX_KEY].int64_list.value[0]
                        report.frames[split] += len(_decoded_sequence(example, shards.RGB_KEY))
                        if contact_sheet and len(videos) < num_videos and label not in labels_drawn:
                            labels_drawn.add(label)
                            videos.append(_contact_video(example, frames_per_video, with_flow))
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
