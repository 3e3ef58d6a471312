"""manifest.json and report.json of a prepared dataset (docs/architecture.md §2).

manifest.json is written last, atomically: a folder with a manifest is complete.

    {
      "format_version": 2, "record_layout": "video-header+frame-records",
      "dataset": "ucf101", "split": "1", "root": "/data/UCF-101",
      "classes": ["ApplyEyeMakeup", ...],                 # index = label
      "settings": {...PrepareSettings...},
      "plan_digest": "sha256 of dataset, split, classes, settings and the video list",
      "tool_versions": {"actrec": ..., "opencv": ..., "numpy": ..., "tensorflow": ...},
      "splits": {"train": {"videos": 9537, "skipped": 0, "frames": ...,
                           "shards": ["train-00000-of-00012.tfrecord", ...]}, ...},
      "videos": [{"id", "split", "label", "path", "status": "ok" | "skipped", "frames",
                  "shard", "offset" (byte offset of the video's header record in its shard),
                  "height", "width", "digest" (sha256 of the video's records),
                  "reason", "detail"}, ...]
    }

report.json, written just before it:

    {"dataset", "num_skipped", "skipped_by_reason": {reason: count},
     "skipped": [{"video_id", "split", "path", "reason", "detail"}, ...],   # listed videos
     "num_ignored", "ignored_by_reason": {reason: count},                  # not listed:
     "ignored": [{"reason", "detail", "count", "paths"}, ...],             # root-relative
     "warnings": ["class 'x' has 2 videos: too few for a test video ...", ...]}

Format versions: 1 held one record per video (every clip read the whole video); 2 holds a
header record and one record per frame (actrec.data.format.shards), found through "offset".
`actrec migrate` rewrites a version-1 folder as version 2 without decoding any video.
"""

from __future__ import annotations

import json
from pathlib import Path

from actrec.errors import DatasetError

MANIFEST_FILE = "manifest.json"
REPORT_FILE = "report.json"
FORMAT_VERSION = 2
RECORD_LAYOUT = "video-header+frame-records"


def read_manifest(prepared_dir: Path | str) -> dict:
    """The manifest of a prepared dataset folder, or a DatasetError saying what to run."""
    prepared_dir = Path(prepared_dir)
    path = prepared_dir / MANIFEST_FILE
    if not prepared_dir.is_dir():
        raise DatasetError(
            f"{prepared_dir} is not a folder; pass the --out folder of `actrec prepare`"
        )
    if not path.exists():
        partial = any(prepared_dir.glob(".actrec-partial"))
        hint = (
            "its preparation was interrupted: re-run the same `actrec prepare` command to finish it"
            if partial
            else "prepare it first with `actrec prepare DATASET --out " + str(prepared_dir) + "`"
        )
        raise DatasetError(f"{prepared_dir} has no {MANIFEST_FILE}; {hint}")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise DatasetError(
            f"{path} cannot be read ({error}); re-run `actrec prepare` into a new folder"
        ) from error
    check_format_version(prepared_dir, manifest)
    return manifest


def check_format_version(prepared_dir: Path, manifest: dict) -> None:
    """DatasetError naming the folder and the fix when `manifest` is not this version's."""
    version = manifest.get("format_version")
    if version == FORMAT_VERSION:
        return
    if version == 1:
        raise DatasetError(
            f"{prepared_dir} holds format-1 shards (one record per video, so every clip reads "
            f"its whole video); this actrec reads format {FORMAT_VERSION} (a record per frame). "
            f"Convert it without decoding any video: `actrec migrate {prepared_dir} --out "
            "NEW_FOLDER`, or prepare the dataset again"
        )
    raise DatasetError(
        f"{prepared_dir / MANIFEST_FILE} has format_version {version!r}; this actrec reads "
        f"version {FORMAT_VERSION}: prepare the dataset again with this version"
    )


def shard_paths(prepared_dir: Path | str, manifest: dict, split: str) -> list[Path]:
    """The shard files of `split`, in order; DatasetError when the split is absent or empty."""
    prepared_dir = Path(prepared_dir)
    splits = manifest.get("splits", {})
    if split not in splits:
        raise DatasetError(
            f"{prepared_dir} has no {split!r} split; it has: {', '.join(splits) or 'none'}"
        )
    paths = [prepared_dir / name for name in splits[split]["shards"]]
    if not paths:
        raise DatasetError(
            f"{prepared_dir}: the {split!r} split holds no videos (all were skipped: see "
            f"{prepared_dir / REPORT_FILE})"
        )
    missing = [path for path in paths if not path.exists()]
    if missing:
        raise DatasetError(
            f"{missing[0]} is listed in {prepared_dir / MANIFEST_FILE} but missing; "
            "copy the whole prepared folder, or prepare again"
        )
    return paths


def split_videos(prepared_dir: Path | str, manifest: dict, split: str) -> list[dict]:
    """The prepared videos of `split` in the split's order, each {"id", "label",
    "shard_path", "offset" (of its header record in that shard)}; DatasetError as
    `shard_paths`."""
    paths = {path.name: path for path in shard_paths(prepared_dir, manifest, split)}
    return [
        {
            "id": video["id"],
            "label": int(video["label"]),
            "shard_path": paths[video["shard"]],
            "offset": int(video["offset"]),
        }
        for video in manifest.get("videos", ())
        if video.get("split") == split and video.get("status") == "ok"
    ]


def count_by_reason(items: list[dict]) -> dict[str, int]:
    """{reason: how many of `items` have it}, sorted by reason."""
    counts: dict[str, int] = {}
    for item in items:
        counts[item["reason"]] = counts.get(item["reason"], 0) + 1
    return dict(sorted(counts.items()))


def group_ignored(ignored: list[dict]) -> list[dict]:
    """The ignored paths ({"path", "reason", "detail"}) as report.json lists them: one
    {"reason", "detail", "count", "paths"} per reason and detail (e.g. "not-a-video",
    "not a video file (.txt)"), sorted by them, paths in the order given."""
    groups: dict[tuple[str, str], list[str]] = {}
    for item in ignored:
        groups.setdefault((item["reason"], item["detail"]), []).append(item["path"])
    return [
        {"reason": reason, "detail": detail, "count": len(paths), "paths": paths}
        for (reason, detail), paths in sorted(groups.items())
    ]


def build_report(
    dataset: str,
    skipped: list[dict],
    ignored: list[dict] | None = None,
    warnings: list[str] | None = None,
) -> dict:
    """report.json: every skipped video and why, with counts by reason; the files and
    folders under the root that the source did not list as videos (`ignored`: paths
    relative to the root, grouped by reason and detail, with counts by reason); and the
    source's warnings (e.g. a class too small to get a test video)."""
    ignored = ignored or []
    return {
        "dataset": dataset,
        "num_skipped": len(skipped),
        "skipped_by_reason": count_by_reason(skipped),
        "skipped": skipped,
        "num_ignored": len(ignored),
        "ignored_by_reason": count_by_reason(ignored),
        "ignored": group_ignored(ignored),
        "warnings": list(warnings or []),
    }
