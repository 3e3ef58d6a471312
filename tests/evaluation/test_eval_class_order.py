"""`actrec eval RUN --data OTHER`: data with the run's classes in another order is evaluated
by class name, as the data it was trained on; data with other class names is refused."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np

from actrec.evaluation.scores import load_video_scores


def _prepared_with_classes(raw, out, classes: tuple[str, ...], renamed: dict | None = None):
    """The tiny synthetic videos at `raw` prepared (RGB only) with `classes` as the class
    list (the order of its labels); `renamed`: {synthetic name: name in `classes`}."""
    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.sources import list_videos

    listing = list_videos("synthetic", raw)
    renamed = renamed or {}
    label = {
        index: classes.index(renamed.get(name, name))
        for index, name in enumerate(listing.classes)
        if renamed.get(name, name) in classes
    }
    entries = tuple(
        replace(entry, label=label[entry.label])
        for entry in listing.entries
        if entry.label in label
    )
    listing = replace(listing, classes=classes, entries=entries)
    prepare_dataset(listing, out, PrepareSettings(frame_size="original", flow="none"), workers=1)
    return out


def _evaluated(cli_runner, run, data, out):
    result = cli_runner("eval", run, "--data", data, "--out", out)
    assert result.exit_code == 0, result.output
    return result, json.loads((out / "results.json").read_text()), load_video_scores(out)


def test_the_run_s_classes_in_another_order_are_matched_by_name(tiny_runs, cli_runner, tmp_path):
    run = tiny_runs["rgb"]
    classes = tuple(json.loads((run / "run.json").read_text())["classes"])
    permuted = classes[3:] + classes[:3]
    other_order = _prepared_with_classes(tiny_runs["raw"], tmp_path / "permuted", permuted)

    _, expected, same = _evaluated(cli_runner, run, tiny_runs["prepared"], tmp_path / "same")
    result, results, mapped = _evaluated(cli_runner, run, other_order, tmp_path / "mapped")
    assert "in another order: its labels are matched to the run's classes by name" in (
        " ".join(result.output.split())
    )
    for key in ("num_videos", "top1", "top5", "mean_class_accuracy"):
        assert results[key] == expected[key], key
    assert mapped.classes == same.classes == classes  # the run's order
    rows = {video: row for row, video in enumerate(same.video_ids)}
    order = [rows[video] for video in mapped.video_ids]
    np.testing.assert_array_equal(mapped.labels, same.labels[order])
    np.testing.assert_allclose(mapped.scores, same.scores[order], rtol=1e-5, atol=1e-6)


def test_data_with_other_class_names_is_refused_naming_them(tiny_runs, cli_runner, tmp_path):
    run = tiny_runs["rgb"]
    renamed = {"MoveLeft": "Sliding"}
    other = _prepared_with_classes(
        tiny_runs["raw"], tmp_path / "other", ("MoveRight", "Sliding"), renamed
    )
    result = cli_runner("eval", run, "--data", other, "--out", tmp_path / "eval")
    assert result.exit_code != 0
    said = " ".join(result.output.split())
    assert f"{other} has 2 classes that are not the 8 classes {run} was trained on" in said
    assert "(not in the run: Sliding; missing: MoveLeft, MoveUp, MoveDown, " in said
    assert "one prepared with the same class names (any order)" in said
    assert "Traceback" not in result.output
    assert not (tmp_path / "eval").exists()
