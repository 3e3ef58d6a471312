"""The clips a quantised export is calibrated on and gated by, read from prepared data.

    calibration clips  int8 only: drawn from the training split (a seeded sample of
                       `count` videos, each its `centre` evaluation clip: what the deployed
                       model sees)
    gate clips         every quantisation: the held-out split (val, else test, else the
                       training split of --calibration-data), the first `count` videos in a
                       seeded sample

Both come from the run's own prepared folder, or from `--calibration-data PREPARED` (a run
without data, such as a converted one). Clips are the model's inputs as the ready-clip
layout takes them (actrec.export.ready_clips): float32 [N, T, crop, crop, C] by input name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from actrec.data.format.manifest import read_manifest, split_videos
from actrec.errors import ConfigError, DatasetError
from actrec.runs.trained import resolve_data_dir

DEFAULT_CALIBRATION_CLIPS = 64
DEFAULT_GATE_CLIPS = 64
CALIBRATION_SPLITS = ("train",)
HELD_OUT_SPLITS = ("val", "test", "train")
SAMPLE_SEED = 0


@dataclass(frozen=True)
class ClipSet:
    """Clips of one split: inputs by input name (float32 [N, T, crop, crop, C]), labels
    int [N] (-1: unlabelled), where they came from, and whether every clip has a label of
    the model's classes."""

    inputs: dict
    labels: np.ndarray
    data_dir: Path
    split: str
    labelled: bool

    @property
    def count(self) -> int:
        return len(self.labels)

    def clip(self, index: int) -> dict:
        """Clip `index` by input name, batch 1: float32 [1, T, crop, crop, C]."""
        return {name: value[index : index + 1] for name, value in self.inputs.items()}


def quantization_data(runs: Sequence, data_dir: Path | None, calibration_data: Path | None):
    """The prepared folder to calibrate and gate on: `calibration_data` when given (checked
    to be one), else the one the runs trained on; None when neither is there."""
    if calibration_data is not None:
        calibration_data = Path(calibration_data)
        if not (calibration_data / "manifest.json").is_file():
            raise ConfigError(
                f"--calibration-data {calibration_data} is not a prepared folder (no "
                "manifest.json); give a folder `actrec prepare` wrote"
            )
        return calibration_data
    try:
        return resolve_data_dir(runs[0], data_dir)
    except DatasetError:
        return None


def refuse_without_data(quantize: str) -> ConfigError:
    return ConfigError(
        f"--quantize {quantize} calibrates on the run's training data, and this run has none "
        "here (a converted model, or its prepared folder has moved): give --calibration-data "
        "PREPARED (a folder `actrec prepare` wrote of the same kind of video), or --data "
        "where the run's data now is"
    )


def clip_set(
    data_dir: Path, splits: Sequence[str], streams: Sequence, classes: Sequence[str], count: int
) -> ClipSet | None:
    """Up to `count` clips of the first of `splits` that `data_dir` holds videos of (None when
    it holds none); streams: the exported streams (their evaluation ClipSpecs, input names)."""
    # OpenCV: lazily, the CLI reads --quantize's defaults here before TensorFlow
    from actrec.data.input.pipeline import build_dataset

    manifest = read_manifest(data_dir)
    for split in splits:
        videos = (
            split_videos(data_dir, manifest, split) if split in manifest.get("splits", {}) else []
        )
        if videos:
            break
    else:
        return None
    rng = np.random.default_rng(SAMPLE_SEED)
    chosen = [videos[i]["id"] for i in sorted(rng.permutation(len(videos))[:count])]
    inputs, labels = {}, None
    for stream in streams:
        dataset = build_dataset(data_dir, split, stream.spec, 16, False, only_videos=chosen)
        parts = [(clips.numpy(), batch_labels.numpy()) for clips, batch_labels in dataset]
        inputs[stream.input_name] = np.concatenate([clips for clips, _ in parts]).astype(np.float32)
        labels = np.concatenate([batch_labels for _, batch_labels in parts])
    same_classes = list(manifest.get("classes", [])) == list(classes)
    labelled = bool(same_classes and len(labels) and np.all(labels >= 0))
    return ClipSet(inputs, labels, data_dir, split, labelled)


def representative_inputs(clips: ClipSet, names: Sequence[str]):
    """A TFLite representative dataset: a callable yielding each clip's inputs `names` by
    name, batch 1 (by name: the converter's list order is the graph's, not the
    signature's)."""

    def generate():
        for index in range(clips.count):
            clip = clips.clip(index)
            yield {name: clip[name] for name in names}

    return generate
