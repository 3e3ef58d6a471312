"""Shard files against the sizes and SHA-256 `actrec prepare` records: checked by train /
eval at start, by inspect, on read errors, and repaired by a re-run of prepare."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from actrec.data.format.integrity import check_shard_sizes, data_loss_error, shard_problems
from actrec.data.synthetic.config import SyntheticConfig
from actrec.data.synthetic.dataset import generate_synthetic_dataset
from actrec.errors import DatasetError


def _copy(folder: Path, to: Path) -> Path:
    shutil.copytree(folder, to)
    return to


def _flip_a_bit(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))


def test_prepare_records_the_size_and_sha256_of_every_shard(tiny_synthetic_prepared):
    manifest = json.loads((tiny_synthetic_prepared / "manifest.json").read_text())
    shards = [name for split in manifest["splits"].values() for name in split["shards"]]
    assert sorted(manifest["shard_files"]) == sorted(shards) and len(shards) >= 2
    for name in shards:
        content = (tiny_synthetic_prepared / name).read_bytes()
        assert manifest["shard_files"][name] == {
            "bytes": len(content),
            "sha256": hashlib.sha256(content).hexdigest(),
        }


def test_sizes_are_checked_cheaply_and_checksums_find_a_changed_byte(
    tiny_synthetic_prepared, tmp_path
):
    prepared = _copy(tiny_synthetic_prepared, tmp_path / "prepared")
    manifest = json.loads((prepared / "manifest.json").read_text())
    (train_shard,) = sorted(prepared.glob("train-*.tfrecord"))
    (test_shard,) = sorted(prepared.glob("test-*.tfrecord"))
    _flip_a_bit(train_shard)
    check_shard_sizes(prepared, ["train", "test"])  # same size: the cheap check passes
    (problem,) = shard_problems(prepared, manifest)
    assert (problem.name, problem.split, problem.kind) == (train_shard.name, "train", "checksum")

    size = test_shard.stat().st_size
    test_shard.write_bytes(test_shard.read_bytes()[:-10])
    check_shard_sizes(prepared, ["train"])  # only the splits asked for
    with pytest.raises(DatasetError) as caught:
        check_shard_sizes(prepared, ["train", "test"])
    message = str(caught.value)
    assert f"{test_shard} has {size - 10} bytes, the manifest records {size}" in message
    assert f"actrec inspect {prepared}" in message and "re-makes only the damaged" in message

    # a read error names the damaged shard even when only its checksum differs
    import tensorflow as tf

    error = tf.errors.DataLossError(None, None, "{{node}} corrupted record at 65503 [Op:X]")
    message = str(data_loss_error(prepared, ["train"], error, "The checkpoints are kept"))
    assert "failed (corrupted record at 65503)" in message
    assert str(train_shard) in message and "another SHA-256" in message
    assert str(test_shard) not in message and message.endswith("The checkpoints are kept")


def test_eval_names_a_damaged_test_shard_before_evaluating(tiny_runs, cli_runner, tmp_path):
    prepared = _copy(tiny_runs["prepared"], tmp_path / "prepared")
    (shard,) = sorted(prepared.glob("test-*.tfrecord"))
    shard.write_bytes(shard.read_bytes()[:100])
    result = cli_runner("eval", tiny_runs["rgb"], "--data", prepared, "--out", tmp_path / "out")
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert f"{shard} has 100 bytes" in text and "Traceback" not in text
    assert not (tmp_path / "out").exists()


def test_best_weights_are_refused_clearly_when_the_run_validated_on_nothing(tiny_runs, cli_runner):
    result = cli_runner("eval", tiny_runs["rgb"], "--checkpoint", "best")
    assert result.exit_code == 1
    assert "no best.weights.h5" in result.output and "--checkpoint final" in result.output


def test_prepare_rerun_remakes_exactly_the_damaged_shards(tmp_path, cli_runner):
    root = tmp_path / "raw"
    generate_synthetic_dataset(
        root, SyntheticConfig(videos_per_class=2, num_frames=10, width=64, height=48)
    )
    out = tmp_path / "prepared"
    arguments = ["prepare", "synthetic", "--root", root, "--out", out]
    arguments += ["--shard-size-mb", "0.08", "--workers", "1"]
    assert cli_runner(*arguments).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    shards = sorted(manifest["shard_files"])
    assert len(shards) >= 4
    original = {name: (out / name).read_bytes() for name in shards}
    flipped, truncated = shards[1], shards[-1]
    _flip_a_bit(out / flipped)
    (out / truncated).write_bytes(original[truncated][:-500])
    untouched = {
        name: ((out / name).stat().st_ino, (out / name).stat().st_mtime_ns)
        for name in shards
        if name not in (flipped, truncated)
    }

    inspected = cli_runner("inspect", out)
    assert inspected.exit_code == 1
    assert f"{flipped} has the recorded size but another SHA-256" in inspected.output
    assert f"{truncated} has {len(original[truncated]) - 500} bytes" in inspected.output

    # Only the damaged shards' videos may be read: delete every other video.
    damaged_videos = {
        video["path"]
        for video in manifest["videos"]
        if video["shard"] in (flipped, truncated) and video["status"] == "ok"
    }
    for video in manifest["videos"]:
        if video["path"] not in damaged_videos:
            Path(video["path"]).unlink()
    result = cli_runner(*arguments)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert (
        f"re-made 2 damaged shard(s) ({flipped}, {truncated}) from their "
        f"{len(damaged_videos)} videos" in text
    )
    for name in shards:
        assert (out / name).read_bytes() == original[name], name
    for name, identity in untouched.items():
        assert ((out / name).stat().st_ino, (out / name).stat().st_mtime_ns) == identity
    assert cli_runner("inspect", out).exit_code == 0

    # A damaged shard whose video now encodes differently is left alone, with the reason.
    _flip_a_bit(out / flipped)
    damaged = (out / flipped).read_bytes()
    video = next(v for v in manifest["videos"] if v["shard"] == flipped)
    generate_synthetic_dataset(
        tmp_path / "other",
        SyntheticConfig(videos_per_class=2, num_frames=10, width=64, height=48, seed=5),
    )
    relative = Path(video["path"]).relative_to(root)
    shutil.copyfile(tmp_path / "other" / relative, video["path"])
    refused = cli_runner(*arguments)
    assert refused.exit_code == 1
    assert "encodes to other bytes" in refused.output and video["id"] in refused.output
    assert (out / flipped).read_bytes() == damaged
