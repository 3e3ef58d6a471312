"""manifest.json and report.json of a prepared dataset (DESIGN.md §2).

manifest.json is written last, atomically: a folder with a manifest is complete.

    {
      "format_version": 1,
      "dataset": "ucf101", "split": "1", "root": "/data/UCF-101",
      "classes": ["ApplyEyeMakeup", ...],                 # index = label
      "settings": {...PrepareSettings...},
      "plan_digest": "sha256 of dataset, split, classes, settings and the video list",
      "tool_versions": {"actrec": ..., "opencv": ..., "numpy": ..., "tensorflow": ...},
      "splits": {"train": {"videos": 9537, "skipped": 0, "frames": ...,
                           "shards": ["train-00000-of-00012.tfrecord", ...]}, ...},
      "videos": [{"id", "split", "label", "path", "status": "ok" | "skipped", "frames",
                  "shard", "digest" (sha256 of the record), "reason", "detail"}, ...]
    }
"""

from __future__ import annotations

import json
from pathlib import Path

from actrec.errors import DatasetError

MANIFEST_FILE = "manifest.json"
REPORT_FILE = "report.json"
FORMAT_VERSION = 1


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
    if manifest.get("format_version") != FORMAT_VERSION:
        raise DatasetError(
            f"{path} has format_version {manifest.get('format_version')!r}; this actrec reads "
            f"version {FORMAT_VERSION}: re-run `actrec prepare` with this version"
        )
    return manifest


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


def build_report(dataset: str, skipped: list[dict]) -> dict:
    """report.json: every skipped video and why, with counts by reason."""
    by_reason: dict[str, int] = {}
    for entry in skipped:
        by_reason[entry["reason"]] = by_reason.get(entry["reason"], 0) + 1
    return {
        "dataset": dataset,
        "num_skipped": len(skipped),
        "skipped_by_reason": dict(sorted(by_reason.items())),
        "skipped": skipped,
    }
