"""A saved part of an evaluation (actrec.evaluation.parts) is merged, or skipped on resume,
only if it is the part asked for (actrec.evaluation.part_checks): a part of other videos,
labels or classes, with NaN scores, cut, declaring 1e12 rows, or beside a request.json of
another evaluation is refused in one line naming it and the fix, and nothing is written.
The library tests use small synthetic scores (no model); one `actrec eval` per kind of
refusal proves the command's side (exit status, one line, outputs untouched)."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from file_contents import folder_digests

from actrec.cluster.strategy import ClusterInfo
from actrec.errors import ConfigError
from actrec.evaluation.part_checks import SplitRows, split_rows
from actrec.evaluation.parts import REQUEST_FILE, EvaluationParts, evaluation_parts
from actrec.evaluation.scores import VideoScores, load_video_scores, save_video_scores
from actrec.evaluation.share import score_share
from actrec.progress import NullProgress

VIDEO_IDS = tuple(f"v_Video_g01_c0{index}" for index in range(5))
EXPECTED = SplitRows(VIDEO_IDS, (0, 1, 2, 0, 1), ("run", "jump", "swim"), "logits", 3)
REQUEST = {"split": "test", "protocol": "tsm-8x3", "data": "/data/prepared"}


def _scores(rows: range, **changes) -> VideoScores:
    """The scores of EXPECTED's `rows`, as a worker saves them, with `changes`."""
    content = {
        "video_ids": VIDEO_IDS[rows.start : rows.stop],
        "labels": np.array(EXPECTED.labels[rows.start : rows.stop], np.int64),
        "scores": np.arange(len(rows) * 3, dtype=np.float64).reshape(len(rows), 3),
        "classes": EXPECTED.classes,
        "num_views": np.full(len(rows), 3, np.int64),
        "average": "logits",
    }
    return VideoScores(**{**content, **changes})


def _saved_parts(folder: Path) -> EvaluationParts:
    """The 5 videos in parts of 2 (parts 0, 1, 2), every part saved as a worker saves it."""
    parts = EvaluationParts(folder, 5, 2, REQUEST, EXPECTED)
    for part in range(parts.num_parts):
        parts.save(part, _scores(parts.rows(part)))
    return parts


def _header_declaring(path: Path, rows: int) -> None:
    """Rewrite the scores file at `path` so that the headers of its per-video arrays declare
    `rows` rows (their data unchanged: a few bytes)."""
    with zipfile.ZipFile(path) as source:
        members = {info.filename: source.read(info) for info in source.infolist()}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            if name not in ("classes.npy", "average.npy"):
                array = np.lib.format.read_array(io.BytesIO(data))
                header = io.BytesIO()
                shape = (rows, *array.shape[1:])
                np.lib.format.write_array_header_1_0(
                    header, {**np.lib.format.header_data_from_array_1_0(array), "shape": shape}
                )
                data = header.getvalue() + array.tobytes()
            archive.writestr(name, data)
    path.write_bytes(buffer.getvalue())


def _other_videos(parts):
    save_video_scores(_scores(parts.rows(1), video_ids=("v_x", "v_y")), parts.path(1))


def _other_classes(parts):
    save_video_scores(_scores(parts.rows(1), classes=("run", "jump", "dive")), parts.path(1))


def _other_labels(parts):
    save_video_scores(_scores(parts.rows(1), labels=np.array([0, 1])), parts.path(1))


def _nan_scores(parts):
    scores = np.array([[0.0, 1.0, 2.0], [np.nan, 1.0, 0.0]])
    save_video_scores(_scores(parts.rows(1), scores=scores), parts.path(1))


def _cut(parts):
    content = parts.path(1).read_bytes()
    parts.path(1).write_bytes(content[: len(content) // 2])


def _damaged(parts):
    content = bytearray(parts.path(1).read_bytes())
    content[200:210] = b"0123456789"  # inside the first array's data: its CRC fails
    parts.path(1).write_bytes(bytes(content))


def _trillion_rows(parts):
    _header_declaring(parts.path(1), 10**12)


def _other_request(parts):
    request = json.loads((parts.folder / REQUEST_FILE).read_text())
    (parts.folder / REQUEST_FILE).write_text(json.dumps({**request, "split": "val"}))


BAD_PARTS = {
    "other video ids": (_other_videos, r"00001-of-00003\.npz holds videos v_x, v_y, not part 1's"),
    "other class names": (_other_classes, r"00001-of-00003\.npz scores the classes run, jump, "),
    "other labels": (_other_labels, r"00001-of-00003\.npz gives video v_Video_g01_c02 label 0"),
    "NaN scores": (_nan_scores, r"00001-of-00003\.npz holds non-finite scores .*1 of its 2"),
    "cut file": (_cut, r"00001-of-00003\.npz is not a readable part .*cut or damaged"),
    "damaged file": (_damaged, r"00001-of-00003\.npz is not a readable part .*Bad CRC"),
    "1e12 rows declared": (_trillion_rows, r"00001-of-00003\.npz holds 1000000000000 videos"),
    "other request": (_other_request, r"request\.json records another evaluation \(split"),
}


@pytest.mark.parametrize("damage", BAD_PARTS, ids=list(BAD_PARTS))
def test_a_part_that_is_not_the_part_asked_for_is_refused_with_the_fix(tmp_path, damage):
    make_bad, message = BAD_PARTS[damage]
    parts = _saved_parts(tmp_path / "parts")
    make_bad(parts)
    before = folder_digests(parts.folder)
    fix = "delete it and run the same command again: only its videos are scored again"
    if damage == "other request":
        fix = f"delete {parts.folder} and run the same command again"
    with pytest.raises(ConfigError, match=message + ".*" + re.escape(fix) + "$") as refused:
        parts.merged()
    assert "\n" not in str(refused.value)
    # On two workers, the part's worker is named (part 1 is worker 1's).
    with pytest.raises(ConfigError, match=message) as refused:
        parts.merged(num_workers=2)
    if damage != "other request":
        assert "worker 1 of 2 scores part 1 again" in str(refused.value)
    else:
        assert str(refused.value).endswith("on every worker")
    # Worker 1, started again, does not skip the part as saved: it stops, scoring nothing.
    with pytest.raises(ConfigError, match=message):
        score_share(
            lambda: pytest.fail("a model was built"), None, parts,
            ClusterInfo(2, 1, False, "test"), NullProgress(), "evaluating",
        )  # fmt: skip
    assert folder_digests(parts.folder) == before


def test_the_parts_asked_for_merge_in_the_split_order(tmp_path):
    parts = _saved_parts(tmp_path / "parts")
    merged = parts.merged(num_workers=3)
    assert merged.video_ids == VIDEO_IDS
    assert tuple(merged.labels) == EXPECTED.labels and merged.classes == EXPECTED.classes
    assert json.loads((parts.folder / REQUEST_FILE).read_text()) == REQUEST
    (parts.folder / REQUEST_FILE).unlink()  # parts without their request: not this evaluation's
    with pytest.raises(ConfigError, match=r"request\.json is missing beside saved parts"):
        parts.merged()


def test_a_scores_file_declaring_more_than_it_holds_is_refused_before_reading(tmp_path):
    """`actrec eval --fuse` reads a scores file given by the user the same way: consistent
    headers declaring 1e12 rows are refused by the file's size, not a MemoryError."""
    path = tmp_path / "scores.npz"
    save_video_scores(_scores(range(0, 2)), path)
    _header_declaring(path, 10**12)
    with pytest.raises(ConfigError, match=r"scores\.npz: not a scores file .*more than the"):
        load_video_scores(path)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(ConfigError, match=r"scores\.npz: not a scores file .*cut or damaged"):
        load_video_scores(path)


def _planted_evaluation(run_dir: Path, out: Path) -> EvaluationParts:
    """The parts `actrec eval RUN --out OUT --protocol centre` uses, with part 3 saved as a
    worker saves it (and an earlier evaluation's files in OUT)."""
    from actrec.evaluation.protocols import resolve_protocol
    from actrec.evaluation.reuse import evaluation_request
    from actrec.runs.trained import load_trained_run, resolve_data_dir

    run = load_trained_run(run_dir, "final")
    data_dir = resolve_data_dir(run, None)
    request = evaluation_request(run, resolve_protocol("centre"), data_dir, "test", "logits")
    rows = split_rows(data_dir, "test", tuple(run.classes), "logits", 1)
    parts = evaluation_parts(out, request, len(rows.video_ids), rows)
    part = parts.rows(3)
    parts.save(
        3,
        VideoScores(
            rows.video_ids[part.start : part.stop],
            np.array(rows.labels[part.start : part.stop], np.int64),
            np.zeros((len(part), len(rows.classes))),
            rows.classes,
            np.ones(len(part), np.int64),
            "logits",
        ),
    )
    (out / "results.json").write_text('{"name": "an earlier evaluation"}')
    (out / "scores.npz").write_bytes(b"an earlier evaluation's scores")
    return parts


@pytest.mark.parametrize("damage", ["other video ids", "other request"])
def test_actrec_eval_refuses_a_bad_part_in_one_line_and_writes_nothing(
    tiny_runs, cli_runner, tmp_path, damage
):
    out = tmp_path / "eval"
    parts = _planted_evaluation(tiny_runs["rgb"], out)
    if damage == "other video ids":
        scores = dataclasses.replace(load_video_scores(parts.path(3)), video_ids=("v_other",))
        save_video_scores(scores, parts.path(3))
        expected = f"{parts.path(3)} holds videos v_other, not part 3's"
    else:
        _other_request(parts)
        expected = f"{parts.folder / REQUEST_FILE} records another evaluation (split"
    before = folder_digests(out)
    result = cli_runner("eval", tiny_runs["rgb"], "--out", out, "--protocol", "centre")
    assert result.exit_code == 1
    text = result.output.strip()
    assert len(text.splitlines()) == 1 and "Traceback" not in text, text
    assert expected in text and "delete" in text, text
    assert folder_digests(out) == before  # no results.json, scores.npz or part written
