"""`actrec migrate`: a format-1 folder becomes the format-2 folder `actrec prepare` writes."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from file_contents import folder_digests

from actrec.data.format import records
from actrec.data.input.clip_spec import ClipSpec
from actrec.data.input.pipeline import build_dataset
from actrec.data.maintenance import format1
from actrec.data.maintenance.inspect import inspect_prepared
from actrec.data.maintenance.migrate import migrate_prepared
from actrec.data.prepare.dataset import prepare_dataset
from actrec.data.prepare.encode_video import PrepareSettings
from actrec.data.sources import list_videos
from actrec.errors import DatasetError, OutputError

tf = pytest.importorskip("tensorflow")

FORMAT_2_FIELDS = ("offset", "height", "width")


@pytest.fixture(scope="module")
def format1_folder(tiny_synthetic_prepared, tmp_path_factory) -> Path:
    """The tiny synthetic set as format 1 wrote it: one record per video, same shards."""
    prepared = tiny_synthetic_prepared
    old = tmp_path_factory.mktemp("format1")
    manifest = json.loads((prepared / "manifest.json").read_text())
    digests = {}
    for info in manifest["splits"].values():
        for name in info["shards"]:
            with tf.io.TFRecordWriter(str(old / name)) as writer:
                for header, video_records in records.iter_shard_videos(prepared / name):
                    record = format1.serialized_record(records.video_record(video_records))
                    video_id = header.context.feature["video/id"].bytes_list.value[0].decode()
                    digests[video_id] = hashlib.sha256(record).hexdigest()
                    writer.write(record)
    videos = []
    for video in manifest["videos"]:
        video = {key: value for key, value in video.items() if key not in FORMAT_2_FIELDS}
        if video["status"] == "ok":
            video["digest"] = digests[video["id"]]
        videos.append(video)
    old_manifest = {**manifest, "format_version": 1, "videos": videos}
    del old_manifest["record_layout"]
    (old / "manifest.json").write_text(json.dumps(old_manifest))
    shutil.copy(prepared / "report.json", old / "report.json")
    return old


def test_migration_writes_what_prepare_writes(format1_folder, tiny_synthetic_prepared, tmp_path):
    before = folder_digests(format1_folder)
    migrated = tmp_path / "migrated"
    manifest = migrate_prepared(format1_folder, migrated)
    assert folder_digests(format1_folder) == before  # the old folder is only read
    assert inspect_prepared(migrated).ok
    prepared = json.loads((tiny_synthetic_prepared / "manifest.json").read_text())
    for key in ("format_version", "record_layout", "splits", "videos", "plan_digest"):
        assert manifest[key] == prepared[key], key
    for name in {name for info in prepared["splits"].values() for name in info["shards"]}:
        assert (migrated / name).read_bytes() == (tiny_synthetic_prepared / name).read_bytes()
    spec = ClipSpec("flow", 2, new_length=2, crop_size=32)
    clips = [
        next(iter(build_dataset(folder, "train", spec, 4, True, seed=2)))[0].numpy()
        for folder in (migrated, tiny_synthetic_prepared)
    ]
    np.testing.assert_array_equal(*clips)
    # `actrec prepare` with the same dataset and options finds the migrated folder complete
    raw = tiny_synthetic_prepared.parent / "raw"
    summary = prepare_dataset(
        list_videos("synthetic", raw), migrated, PrepareSettings(frame_size="original"), workers=1
    )
    assert summary.already_complete


def test_a_current_folder_or_a_used_output_is_refused(
    format1_folder, tiny_synthetic_prepared, tmp_path
):
    with pytest.raises(DatasetError, match="already in the current format, nothing to migrate"):
        migrate_prepared(tiny_synthetic_prepared, tmp_path / "new")
    used = tmp_path / "used"
    used.mkdir()
    (used / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match=r"used exists and is not an empty folder"):
        migrate_prepared(format1_folder, used)
    assert [path.name for path in used.iterdir()] == ["notes.txt"]


def test_migrate_command(format1_folder, tmp_path, cli_runner):
    result = cli_runner("migrate", format1_folder, "--out", tmp_path / "new")
    assert result.exit_code == 0, result.output
    assert "24 videos converted" in result.output and "actrec inspect" in result.output
    again = cli_runner("migrate", tmp_path / "new", "--out", tmp_path / "newer")
    assert again.exit_code == 1 and "nothing to migrate" in again.output
