"""A probe on frozen features (train.probe: linear, actrec.train.probe): it trains and beats
chance on an easy set, its feature cache is reused by a second run (the file untouched,
the same head), recomputed when the data or the backbone changes, a damaged file is
recomputed by name, and the probed run evaluates, exports (SavedModel, ONNX, float16
TFLite) and predicts as one model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.data.prepare.dataset import prepare_dataset
from actrec.data.prepare.encode_video import PrepareSettings
from actrec.data.sources import list_videos
from actrec.evaluation.evaluate import evaluate_run
from actrec.evaluation.protocols import resolve_protocol
from actrec.export.writer import export_runs
from actrec.predict.video_files import predict_videos
from actrec.runs.record import read_run_record
from actrec.runs.trained import build_trained_model, load_trained_run
from actrec.train.run import train

HEAD_SETTINGS = [
    "train.probe=linear",
    "train.optimizer=adam",
    "train.lr=0.01",
    "train.decay=none",
    "train.batch_size=8",
    "train.epochs=30",
]
PROBE_SETTINGS = [
    "model.architecture=videomae",
    "model.backbone=test_videomae",
    "model.dropout=0.0",
    "data.crop_size=32",
    "data.num_segments=4",
    "data.sampling=dense",
    "data.frame_interval=2",
    *HEAD_SETTINGS,
]
"""VideoMAE's test size (2 blocks of width 32, random weights: the features still tell the
colours apart) and the head's settings (a few hundred array-op steps)."""
SEGMENT_SETTINGS = [
    "model.backbone=test_mobilenet_v2",
    "model.batch_norm_momentum=0.0",
    "data.crop_size=32",
    "data.num_segments=2",
    *HEAD_SETTINGS,
]
"""A TSN of the test network: a segment model, whose segments' features are averaged."""
COLOURS = {"red": (40, 40, 220), "green": (40, 200, 40), "blue": (220, 60, 40), "grey": (128,) * 3}
"""The easy set's classes: each a colour (BGR) under moving noise."""


class Lines:
    """A Progress keeping the messages (what the probe says about its cache)."""

    def __init__(self):
        self.messages: list[str] = []

    def start(self, description, total):
        pass

    def advance(self, amount=1, **counters):
        pass

    def show(self, **values):
        pass

    def message(self, text):
        self.messages.append(text)

    def finish(self):
        pass

    def said(self, words: str) -> bool:
        return any(words in message for message in self.messages)


def _write_coloured_video(path: Path, colour: tuple[int, ...], seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 25.0, (48, 40))
    noise = np.random.default_rng(seed).integers(-40, 40, (40, 96, 3))
    for index in range(10):
        frame = np.clip(np.asarray(colour) + noise[:, index : index + 48], 0, 255)
        writer.write(frame.astype(np.uint8))
    writer.release()


def _easy_set(root: Path, videos_per_class: int, first_seed: int = 0) -> tuple[Path, Path]:
    """(raw folder, prepared folder) of the coloured classes."""
    raw = root / "raw"
    for label, (name, colour) in enumerate(COLOURS.items()):
        for index in range(videos_per_class):
            _write_coloured_video(
                raw / name / f"clip{index:02d}.avi", colour, first_seed + 100 * label + index
            )
    prepared = root / "prepared"
    prepare_dataset(list_videos("folder", raw), prepared, PrepareSettings(), workers=1)
    return raw, prepared


def _probe(
    prepared: Path, workdir: Path, cache: Path, *extra: str, settings=PROBE_SETTINGS
) -> tuple[Path, Lines]:
    lines = Lines()
    recipe = apply_overrides(load_recipe("synthetic-rgb"), [*settings, *extra])
    train(recipe, prepared, workdir, progress=lines, feature_cache=cache)
    return workdir, lines


def _classifier(run: Path) -> list[np.ndarray]:
    """[kernel [D, K], bias [K]] of the run's final weights."""
    model = build_trained_model(load_trained_run(run))
    return model.get_layer("classifier").get_weights()


def _same_head(run: Path, other: Path) -> None:
    for mine, theirs in zip(_classifier(run), _classifier(other), strict=True):
        np.testing.assert_array_equal(mine, theirs)


def _first_cache_folder(probed) -> Path:
    """The folder of the first run's backbone and view in the shared cache."""
    return Path(read_run_record(probed["run"]).probe["cache"])


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """The easy set (4 colours x 8 videos) and a first probe run, its cache in `cache`."""
    root = tmp_path_factory.mktemp("probe")
    raw, prepared = _easy_set(root, videos_per_class=8)
    cache = root / "shared-cache"
    run, lines = _probe(prepared, root / "first", cache)
    return {
        "root": root,
        "raw": raw,
        "prepared": prepared,
        "cache": cache,
        "run": run,
        "lines": lines,
    }


def _cache_files(cache: Path) -> dict[str, int]:
    """Each cache file's name (folder/file) -> its modification time in ns."""
    return {
        str(path.relative_to(cache)): path.stat().st_mtime_ns
        for path in sorted(cache.rglob("*"))
        if path.is_file()
    }


def test_a_probe_beats_chance_and_its_model_is_the_cached_features_head(probed):
    run = probed["run"]
    record = read_run_record(run)
    assert record.status == "finished"
    assert record.probe["features"] == {"train": "computed", "val": "computed"}
    assert probed["lines"].said("probe: the train features are cached in")
    test = evaluate_run(run, resolve_protocol("centre"), split="test")
    assert test.metrics.top1 >= 0.75  # chance: 0.25
    _check_the_model_is_the_cached_rows_head(run)


def _check_the_model_is_the_cached_rows_head(run: Path) -> None:
    """The whole model's logits on a view (eval's scores) are the head's on that view's
    cached row."""
    cached = np.load(Path(read_run_record(run).probe["cache"]) / "val.npz")
    validation = evaluate_run(run, resolve_protocol("centre"), split="val")
    kernel, bias = _classifier(run)
    head_logits = cached["features"][:, 0] @ kernel + bias  # [V, 1 view, D] -> [V, K]
    order = [list(cached["video_ids"]).index(i) for i in validation.scores.video_ids]
    np.testing.assert_allclose(validation.scores.scores, head_logits[order], atol=2e-5)


def test_a_segment_model_probes_on_its_segments_mean_feature(probed):
    run, _ = _probe(
        probed["prepared"],
        probed["root"] / "tsn",
        probed["root"] / "tsn-cache",
        settings=SEGMENT_SETTINGS,
    )
    assert read_run_record(run).probe["width"] == 64  # the test network's pooled width
    _check_the_model_is_the_cached_rows_head(run)


def test_a_second_run_reuses_the_cache_untouched_and_trains_the_same_head(probed):
    before = _cache_files(probed["cache"])
    run, lines = _probe(probed["prepared"], probed["root"] / "second", probed["cache"])
    assert read_run_record(run).probe["features"] == {"train": "reused", "val": "reused"}
    assert lines.said("probe: the train features are reused from")
    assert _cache_files(probed["cache"]) == before  # nothing rewritten
    _same_head(run, probed["run"])


def test_other_backbone_weights_compute_their_own_features(probed):
    before = _cache_files(probed["cache"])
    run, _ = _probe(
        probed["prepared"], probed["root"] / "seed-1", probed["cache"], "runtime.seed=1"
    )
    assert read_run_record(run).probe["features"] == {"train": "computed", "val": "computed"}
    after = _cache_files(probed["cache"])
    assert {name: after[name] for name in before} == before  # the first backbone's kept
    assert len(after) == 2 * len(before)  # another folder: another backbone digest


def test_changed_data_recomputes_its_split_and_says_why(probed):
    _, prepared = _easy_set(probed["root"] / "more", videos_per_class=9, first_seed=7)
    cache = probed["root"] / "copied-cache"
    shutil.copytree(probed["cache"], cache)
    run, lines = _probe(prepared, probed["root"] / "more-data", cache)
    assert read_run_record(run).probe["features"] == {"train": "computed", "val": "computed"}
    assert lines.said("train.npz was computed from other prepared data: recomputing it")


def test_a_damaged_cache_file_is_named_and_recomputed(probed):
    cache = probed["root"] / "damaged-cache"
    shutil.copytree(probed["cache"], cache)
    damaged = cache / _first_cache_folder(probed).name / "train.npz"
    payload = bytearray(damaged.read_bytes())
    payload[len(payload) // 2] ^= 0xFF
    damaged.write_bytes(bytes(payload))
    (record,) = damaged.parent.glob("val.json")
    record.write_text("{", encoding="utf-8")  # cut short
    run, lines = _probe(probed["prepared"], probed["root"] / "repaired", cache)
    assert lines.said(f"{damaged} is damaged (SHA-256")
    assert lines.said(f"{record} cannot be read")
    assert read_run_record(run).probe["features"] == {"train": "computed", "val": "computed"}
    _same_head(run, probed["run"])
    assert json.loads((damaged.parent / "val.json").read_text())["key"]["split"] == "val"


def test_the_probed_run_exports_and_predicts_as_it_evaluates(probed, tmp_path):
    run = probed["run"]
    evaluation = evaluate_run(run, resolve_protocol("centre"), split="test")
    export_runs([run], tmp_path / "export")
    manifest = json.loads((probed["prepared"] / "manifest.json").read_text())
    files = {
        video["id"]: video["path"]
        for video in manifest["videos"]
        if video["split"] == "test" and video["status"] == "ok"
    }
    chosen = list(evaluation.scores.video_ids)[:2]
    predictions = predict_videos([files[i] for i in chosen], tmp_path / "export", top_k=1)
    for video_id, prediction in zip(chosen, predictions, strict=True):
        assert prediction.ok, prediction.error
        row = list(evaluation.scores.video_ids).index(video_id)
        np.testing.assert_allclose(
            prediction.probabilities, evaluation.scores.probabilities[row], atol=1e-5
        )
    # The probed model as ONNX and as a float16 TFLite: the backbone and the probe's head
    # in one file, predicting (untrusted) what the SavedModel predicts.
    for model_format, quantize, tolerance in (("onnx", "none", 1e-5), ("tflite", "float16", 2e-2)):
        out = tmp_path / f"export-{model_format}"
        export_runs([run], out, model_format=model_format, quantize=quantize)
        other = predict_videos([files[i] for i in chosen], out, top_k=1)
        for mine, theirs in zip(other, predictions, strict=True):
            assert mine.ok, mine.error
            np.testing.assert_allclose(mine.probabilities, theirs.probabilities, atol=tolerance)
