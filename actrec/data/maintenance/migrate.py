"""`actrec migrate`: a format-1 prepared folder rewritten as format 2, no video decoded.

Each format-1 shard becomes the format-2 shard of the same name, holding the same videos in
the same order (the JPEGs are copied as they are); the manifest keeps every field and gains
the format-2 ones (each video's header offset, frame size and records digest) and the new
shards' sizes and SHA-256 (actrec.data.format.integrity). The old
folder is only read. Shards are written under temporary names and renamed when complete,
and manifest.json comes last, so an interrupted migration leaves no folder that looks
complete: run it again into an empty folder.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from actrec.data.format import shards
from actrec.data.format.integrity import SHARD_FILES_KEY, describe_shard_files
from actrec.data.format.manifest import FORMAT_VERSION, MANIFEST_FILE, RECORD_LAYOUT, REPORT_FILE
from actrec.data.maintenance import format1
from actrec.data.prepare.plan import plan_digest
from actrec.errors import DatasetError, OutputError
from actrec.files.atomic import (
    commit_temporary,
    temporary_path,
    write_bytes_atomic,
    write_json_atomic,
)
from actrec.progress import NullProgress, Progress


def _format1_manifest(old_dir: Path) -> dict:
    path = old_dir / MANIFEST_FILE
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DatasetError(
            f"{path} cannot be read ({error}); pass a folder `actrec prepare` completed"
        ) from None
    version = manifest.get("format_version")
    if version != 1:
        raise DatasetError(
            f"{old_dir} holds format_version {version!r}, not 1: "
            + (
                "it is already in the current format, nothing to migrate"
                if version == FORMAT_VERSION
                else "prepare the dataset again"
            )
        )
    return manifest


def _check_output(out_dir: Path, old_dir: Path) -> None:
    if out_dir.resolve() == old_dir.resolve():
        raise OutputError(f"--out {out_dir} is the folder being migrated; choose a new folder")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise OutputError(f"--out {out_dir} exists and is not an empty folder; choose a new one")


def _migrate_shard(old_path: Path, new_path: Path, rows: dict[str, dict]) -> None:
    """Rewrite one shard; fill `rows` (manifest video rows by id) with the format-2 fields."""
    import tensorflow as tf

    temporary = temporary_path(new_path)
    offset = 0
    with tf.io.TFRecordWriter(str(temporary)) as writer:
        for serialized in tf.data.TFRecordDataset(str(old_path)).as_numpy_iterator():
            video = format1.video_record(serialized)
            records = shards.encode_video_records(video)
            for record in records:
                writer.write(record)
            row = rows.get(video.video_id)
            if row is None:
                raise DatasetError(
                    f"{old_path}: video {video.video_id!r} is not in the manifest; the folder "
                    "is damaged: prepare the dataset again"
                )
            row.update(
                offset=offset,
                height=video.height,
                width=video.width,
                digest=shards.records_digest(records),
            )
            offset += shards.framed_size(records)
    commit_temporary(temporary, new_path)


def _migrated_plan_digest(manifest: dict) -> str:
    """The plan digest `actrec prepare` computes for the same dataset and options, so a
    re-run of prepare into the new folder finds it complete."""
    plan = {
        "format_version": FORMAT_VERSION,
        "dataset": manifest["dataset"],
        "split": manifest["split"],
        "classes": manifest["classes"],
        "settings": manifest["settings"],
        "num_videos": len(manifest["videos"]),
    }
    videos = [
        [video["split"], video["id"], video["label"], video["path"]] for video in manifest["videos"]
    ]
    return plan_digest(plan, videos)


def migrate_prepared(
    old_dir: Path | str, out_dir: Path | str, progress: Progress | None = None
) -> dict:
    """Write the format-2 version of the format-1 folder `old_dir` into `out_dir` (new or
    empty); returns the new manifest."""
    progress = progress or NullProgress()
    old_dir, out_dir = Path(old_dir), Path(out_dir)
    manifest = _format1_manifest(old_dir)
    _check_output(out_dir, old_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = {(video["split"], video["id"]): dict(video) for video in manifest.get("videos", ())}
    total = sum(int(info.get("videos", 0)) for info in manifest["splits"].values())
    progress.start("migrating to format 2", total)
    try:
        for split, info in manifest["splits"].items():
            split_rows = {video_id: row for (name, video_id), row in rows.items() if name == split}
            for shard_name in info["shards"]:
                old_path = old_dir / shard_name
                if not old_path.exists():
                    raise DatasetError(
                        f"{old_path} is listed in {old_dir / MANIFEST_FILE} but missing; copy "
                        "the whole folder, or prepare the dataset again"
                    )
                _migrate_shard(old_path, out_dir / shard_name, split_rows)
                progress.advance(
                    sum(1 for row in split_rows.values() if row.get("shard") == shard_name)
                )
    finally:
        progress.finish()
    lost = [row["id"] for row in rows.values() if row.get("status") == "ok" and "offset" not in row]
    if lost:
        raise DatasetError(
            f"{old_dir}: {len(lost)} prepared video(s), e.g. {lost[0]!r}, are in no shard; the "
            f"folder is damaged: prepare the dataset again (nothing was written to {out_dir} "
            "that looks complete)"
        )
    migrated = {
        **manifest,
        "format_version": FORMAT_VERSION,
        "record_layout": RECORD_LAYOUT,
        "videos": [rows[(video["split"], video["id"])] for video in manifest["videos"]],
        "migrated": {
            "from": str(old_dir.resolve()),
            "format_version": 1,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
    }
    migrated["plan_digest"] = _migrated_plan_digest(migrated)
    # The new shards' sizes and SHA-256 (a format-1 manifest's describe the old files).
    names = [name for info in manifest["splits"].values() for name in info["shards"]]
    migrated[SHARD_FILES_KEY] = describe_shard_files(out_dir, names, progress)
    if (old_dir / REPORT_FILE).exists():
        write_bytes_atomic(out_dir / REPORT_FILE, (old_dir / REPORT_FILE).read_bytes())
    write_json_atomic(out_dir / MANIFEST_FILE, migrated)
    return migrated
