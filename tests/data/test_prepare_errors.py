"""Bad input: a clear message, a non-zero exit, and nothing that existed is changed."""

from __future__ import annotations

import subprocess
import sys

import pytest
from file_contents import folder_digests
from tiny_videos import write_tiny_video

from actrec.data.synthetic.config import SyntheticConfig
from actrec.data.synthetic.dataset import generate_synthetic_dataset


@pytest.fixture
def small_ucf(tmp_path):
    annotations = tmp_path / "ucfTrainTestlist"
    annotations.mkdir()
    (annotations / "classInd.txt").write_bytes(b"1 ApplyEyeMakeup\r\n2 YoYo\r\n")
    (annotations / "trainlist01.txt").write_bytes(
        b"ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01.avi 1\r\nYoYo/v_YoYo_g08_c01.avi 2\r\n"
    )
    (annotations / "testlist01.txt").write_bytes(b"YoYo/v_YoYo_g01_c01.avi\r\n")
    for relative in (
        "ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01.avi",
        "YoYo/v_YoYo_g08_c01.avi",
        "YoYo/v_YoYo_g01_c01.avi",
    ):
        write_tiny_video(tmp_path / relative, num_frames=9)
    return tmp_path


def _assert_clean_failure(result, *fragments: str) -> None:
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.output, result.output


def test_malformed_split_file_names_file_and_line(small_ucf, cli_runner):
    with open(small_ucf / "ucfTrainTestlist" / "trainlist01.txt", "ab") as handle:
        handle.write(b"YoYo/v_YoYo_g09_c01.avi notalabel\r\n")
    out = small_ucf / "out"
    result = cli_runner("prepare", "ucf101", "--root", small_ucf, "--out", out)
    _assert_clean_failure(result, "trainlist01.txt:3", "notalabel")
    assert not out.exists()


def test_missing_dataset_root(tmp_path, cli_runner):
    result = cli_runner(
        "prepare", "hmdb51", "--root", tmp_path / "nowhere", "--out", tmp_path / "out"
    )
    _assert_clean_failure(result, "nowhere", "does not exist")
    assert not (tmp_path / "out").exists()


def test_output_path_that_is_a_file_is_left_alone(small_ucf, cli_runner):
    target = small_ucf / "results.txt"
    target.write_text("precious\n")
    result = cli_runner("prepare", "ucf101", "--root", small_ucf, "--out", target, "--workers", "1")
    _assert_clean_failure(result, "results.txt", "is a file")
    assert target.read_text() == "precious\n"


def test_foreign_non_empty_output_folder_is_left_alone(small_ucf, cli_runner):
    out = small_ucf / "mine"
    out.mkdir()
    (out / "notes.md").write_text("my notes\n")
    result = cli_runner("prepare", "ucf101", "--root", small_ucf, "--out", out, "--workers", "1")
    _assert_clean_failure(result, "not empty")
    assert folder_digests(out) == {"notes.md": folder_digests(out)["notes.md"]}
    assert (out / "notes.md").read_text() == "my notes\n"


def test_prepared_output_with_other_settings_is_not_touched(tmp_path, cli_runner):
    root, out = tmp_path / "raw", tmp_path / "out"
    generate_synthetic_dataset(
        root, SyntheticConfig(videos_per_class=2, num_frames=9, width=48, height=32)
    )
    first = cli_runner("prepare", "synthetic", "--root", root, "--out", out, "--workers", "1")
    assert first.exit_code == 0, first.output
    before = folder_digests(out)
    result = cli_runner(
        "prepare", "synthetic", "--root", root, "--out", out, "--flow", "none", "--workers", "1"
    )
    _assert_clean_failure(result, "made differently", "flow 'dis' -> 'none'")
    assert folder_digests(out) == before


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (["--size", "huge"], ["huge"]),
        (["--jpeg-quality", "0"], ["--jpeg-quality", "1<=x<=100"]),
        (["--min-frames", "1"], ["--min-frames 1", "two frames"]),
        (["--split", "7"], ["7"]),
    ],
)
def test_bad_options_fail_before_writing(small_ucf, cli_runner, arguments, fragments):
    out = small_ucf / "out"
    result = cli_runner("prepare", "ucf101", "--root", small_ucf, "--out", out, *arguments)
    _assert_clean_failure(result, *fragments)
    assert not out.exists()


def test_an_unknown_flow_method_lists_the_choices(small_ucf, cli_runner):
    out = small_ucf / "out"
    flow = ["--flow", "dis-fast"]
    result = cli_runner("prepare", "ucf101", "--root", small_ucf, "--out", out, *flow)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "'dis-fast' is not one of 'dis', 'dis-medium', 'farneback', 'tvl1', 'none'" in (
        result.output
    )
    assert not out.exists()


def test_tvl1_without_contrib_says_what_to_install(small_ucf, cli_runner):
    from actrec.data.format.flow import available_flow_methods

    if "tvl1" in available_flow_methods():
        pytest.skip("this OpenCV has cv2.optflow")
    result = cli_runner(
        "prepare", "ucf101", "--root", small_ucf, "--out", small_ucf / "out", "--flow", "tvl1"
    )
    _assert_clean_failure(result, "opencv-contrib-python-headless")
    assert not (small_ucf / "out").exists()


# A script that prepares data at its top level, without `if __name__ == "__main__":` (the
# worker processes, spawned, import it again and fail there before any video).
UNGUARDED_SCRIPT = """
import sys
from pathlib import Path
from actrec.data.prepare.dataset import prepare_dataset
from actrec.data.prepare.encode_video import PrepareSettings
from actrec.data.sources import list_videos

root, out = Path(sys.argv[1]), Path(sys.argv[2])
prepare_dataset(list_videos("folder", root), out, PrepareSettings(flow="none"), workers=2)
"""


def test_a_script_whose_worker_processes_cannot_start_is_told_why(tmp_path):
    """Not every video reported undecodable (the message before): the processes that encode
    them never start, and the error says how to fix the script."""
    for name in ("Walk/a.avi", "Walk/b.avi", "Run/c.avi", "Run/d.avi"):
        write_tiny_video(tmp_path / "videos" / name, num_frames=9)
    script = tmp_path / "prepare_my_videos.py"
    script.write_text(UNGUARDED_SCRIPT)
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "videos"), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    assert "ProcessStartError" in result.stderr and 'if __name__ == "__main__":' in result.stderr
    assert not (tmp_path / "out" / "report.json").exists()  # no report of 4 "undecodable"
