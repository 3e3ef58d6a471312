"""Export trained runs as one self-contained model folder (DESIGN.md §6).

    export_runs([RUN], OUT)             one stream (RGB or flow)
    export_runs([RUN_RGB, RUN_FLOW], OUT)  two-stream, fused (RGB 1 : flow 1.5 by default)

Format "savedmodel" (default): OUT is a TensorFlow SavedModel whose "serving_default"
signature takes decoded uint8 video and returns probabilities and the top-k classes; the
sampling, resizing, cropping and normalisation of evaluation are inside its graph
(actrec.serving), and it loads with `tf.saved_model.load(OUT)` alone, without actrec.
Format "keras": OUT/model.keras, the segment model (or the two-stream model of
actrec.models.fusion) on ready clips, loaded with actrec.

Beside the model: actrec.json, classes.txt, the recipe(s) and MODEL_CARD.md
(actrec.export_files). Every export is reloaded and checked against the in-process model
(maximum absolute difference of the probabilities <= RELOAD_TOLERANCE) before it is put in
place. The folder is written under a temporary sibling name and renamed when complete; an
existing non-empty OUT is refused unless `overwrite`, and then only if it is an export.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from actrec.atomic import fsync_directory, fsync_file, write_json_atomic, write_text_atomic
from actrec.errors import ActrecError, ConfigError, OutputError
from actrec.export_files import (
    CLASSES_FILE,
    KERAS_MODEL_FILE,
    METADATA_FILE,
    MODEL_CARD_FILE,
    MODEL_FORMATS,
    PREPARATION_KEYS,
    SIGNATURE_NAME,
    ExportedStream,
    export_metadata,
    model_card,
    recipe_file_name,
)
from actrec.progress import NullProgress, Progress

DEFAULT_TOP_K = 5
RELOAD_TOLERANCE = 1e-5
PROBE_VIDEOS = 2


@dataclass(frozen=True)
class ExportSummary:
    """What `export_runs` wrote.

    reload_difference: max |probabilities of the reloaded model - in-process model| on a
        random probe input (<= RELOAD_TOLERANCE, else the export failed).
    """

    out_dir: Path
    model_format: str
    modalities: tuple[str, ...]
    classes: tuple[str, ...]
    reload_difference: float
    seconds: float


# --- checks ---------------------------------------------------------------------------------


def _checked_options(model_format: str, top_k: int, fusion_weights: Sequence[float]) -> tuple:
    if model_format not in MODEL_FORMATS:
        raise ConfigError(
            f"export format {model_format!r} is not valid; choose one of: "
            f"{', '.join(MODEL_FORMATS)}"
        )
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ConfigError(f"top-k {top_k!r} is not valid; use a whole number >= 1")
    weights = tuple(float(weight) for weight in fusion_weights)
    if len(weights) != 2 or any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ConfigError(
            f"fusion weights {list(fusion_weights)} are not valid; give two non-negative "
            "numbers, RGB then flow, with a positive sum (e.g. 1,1.5)"
        )
    return weights


def check_out_dir(out_dir: Path, overwrite: bool) -> None:
    """OutputError unless `out_dir` can take an export: absent, empty, or (with
    `overwrite`) a previous export."""
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputError(f"--out {out_dir} is a file; give a folder for the export")
    if not out_dir.is_dir() or not any(out_dir.iterdir()):
        return
    if not overwrite:
        raise OutputError(
            f"--out {out_dir} is not empty; give a new folder, or --overwrite to replace the "
            "export in it"
        )
    if not (out_dir / METADATA_FILE).is_file():
        raise OutputError(
            f"--out {out_dir} is not empty and holds no {METADATA_FILE}: it is not an actrec "
            "export, so --overwrite will not replace it; give a new folder"
        )


def _ordered_runs(runs: list) -> list:
    """The runs as [RGB] / [flow] / [RGB, flow]; ConfigError naming the runs otherwise."""
    if not 1 <= len(runs) <= 2:
        raise ConfigError(f"export takes one run, or two to fuse; got {len(runs)}")
    if len(runs) == 1:
        return runs
    first, second = runs
    if first.modality == second.modality:
        raise ConfigError(
            f"{first.run_dir} and {second.run_dir} are both {first.modality} runs; a two-stream "
            "export fuses one RGB run with one flow run"
        )
    if first.classes != second.classes:
        difference = next(
            (
                f"class {index} is {a!r} in one and {b!r} in the other"
                for index, (a, b) in enumerate(zip(first.classes, second.classes, strict=False))
                if a != b
            ),
            f"{len(first.classes)} classes against {len(second.classes)}",
        )
        raise ConfigError(
            f"{first.run_dir} and {second.run_dir} were trained on different classes "
            f"({difference}); fuse runs trained on the same prepared classes"
        )
    return sorted(runs, key=lambda run: run.modality != "rgb")


def _preparation_settings(run, data_dir: Path | None) -> dict:
    """The preparation settings of the data `run` trained on (its manifest's)."""
    if run.prepare_settings:
        return dict(run.prepare_settings)
    from actrec.data.manifest import read_manifest
    from actrec.trained_run import resolve_data_dir

    settings = read_manifest(resolve_data_dir(run, data_dir)).get("settings", {})
    return dict(settings) if isinstance(settings, dict) else {}


def _preparation(runs: list, data_dir: Path | None) -> dict:
    """What `actrec predict` must reproduce: frame size, fps, JPEG quality, flow method."""
    from actrec.data.encode_video import PrepareSettings

    defaults = PrepareSettings().to_dict()
    settings = [_preparation_settings(run, data_dir) for run in runs]
    chosen = {key: settings[0].get(key, defaults[key]) for key in PREPARATION_KEYS}
    for run, other in zip(runs[1:], settings[1:], strict=True):
        for key in PREPARATION_KEYS:
            if other.get(key, defaults[key]) != chosen[key]:
                raise ConfigError(
                    f"{runs[0].run_dir} and {run.run_dir} were trained on data prepared with "
                    f"different {key} ({chosen[key]!r} and {other.get(key)!r}); one export "
                    "decodes videos one way: fuse runs trained on the same prepared data"
                )
    flow_settings = [s for run, s in zip(runs, settings, strict=True) if run.modality == "flow"]
    chosen["flow"] = flow_settings[0].get("flow", defaults["flow"]) if flow_settings else "none"
    return chosen


# --- the models -----------------------------------------------------------------------------


def _probe_inputs(streams: Sequence[ExportedStream]) -> dict:
    """Random uint8 signature inputs of a size unlike the training frames: name -> array."""
    import numpy as np

    rng = np.random.default_rng(0)
    frames = 2 * max(s.spec.num_segments * s.spec.new_length for s in streams) + 3
    height = max(s.spec.eval_scale_size for s in streams) + 5
    width = height * 4 // 3 + 1
    inputs = {}
    for stream in streams:
        if stream.modality == "rgb":
            shape = (PROBE_VIDEOS, frames, height, width, 3)
            inputs["frames"] = rng.integers(0, 256, shape, dtype=np.uint8)
        else:
            shape = (PROBE_VIDEOS, frames - 1, height, width, 2)
            inputs["flow"] = rng.integers(0, 256, shape, dtype=np.uint8)
    return inputs


def _max_difference(expected, reloaded) -> float:
    import numpy as np

    expected, reloaded = np.asarray(expected), np.asarray(reloaded)
    if expected.shape != reloaded.shape:
        return float("inf")
    return float(np.max(np.abs(expected.astype(np.float64) - reloaded.astype(np.float64))))


def _write_savedmodel(
    streams: Sequence[ExportedStream],
    models: list,
    classes,
    top_k,
    weights,
    folder: Path,
    average: str = "logits",
) -> float:
    """Write the SavedModel into `folder`; returns the reload difference.

    A tf.Module holding the models and the serving tf.function (keras.export.ExportArchive
    works too, but writes twice the bytes in twice the time for the same graph).
    """
    import tensorflow as tf

    from actrec.serving import ServingStream, build_serving_function, input_signature

    serving_streams = [
        ServingStream(stream.spec, model) for stream, model in zip(streams, models, strict=True)
    ]
    module = tf.Module(name="actrec_export")
    module.models = list(models)  # tracks their variables
    module.serve = tf.function(
        build_serving_function(serving_streams, classes, top_k, weights, average),
        input_signature=input_signature(serving_streams),
    )
    tf.saved_model.save(module, str(folder), signatures={SIGNATURE_NAME: module.serve})

    probe = _probe_inputs(streams)
    expected = module.serve(*[tf.constant(probe[s.input_name]) for s in serving_streams])
    loaded = tf.saved_model.load(str(folder))
    reloaded = loaded.signatures[SIGNATURE_NAME](**{k: tf.constant(v) for k, v in probe.items()})
    return _max_difference(expected["probabilities"], reloaded["probabilities"])


def _write_keras(
    streams: Sequence[ExportedStream], models: list, weights, folder: Path, average: str = "logits"
) -> float:
    """Write OUT/model.keras; returns the reload difference (on softmax scores)."""
    import numpy as np
    from keras import ops

    from actrec.models.segment_model import load_segment_model

    rng = np.random.default_rng(0)
    clips = {
        stream.modality: rng.uniform(
            0,
            255,
            (PROBE_VIDEOS, s.num_segments, s.crop_size, s.crop_size, s.channels),
        ).astype("float32")
        for stream in streams
        for s in [stream.spec]
    }
    if len(models) == 2:
        from actrec.models.fusion import build_two_stream_model

        model = build_two_stream_model(models[0], models[1], weights, average=average)

        def scores(network):
            return ops.convert_to_numpy(network(clips, training=False))
    else:
        model = models[0]

        def scores(network):
            logits = network(clips[streams[0].modality], training=False)
            return ops.convert_to_numpy(ops.softmax(logits, axis=-1))

    path = folder / KERAS_MODEL_FILE
    model.save(str(path))
    return _max_difference(scores(model), scores(load_segment_model(path)))


# --- the folder ------------------------------------------------------------------------------


def _staging_dir(out_dir: Path) -> Path:
    return out_dir.parent / f".{out_dir.name}.exporting-{os.getpid()}"


def _commit(staging: Path, out_dir: Path) -> None:
    """Put the complete `staging` folder at `out_dir` (replacing what is there)."""
    for path in staging.rglob("*"):
        if path.is_file():
            fsync_file(path)
    replaced = None
    if out_dir.exists():
        replaced = out_dir.parent / f".{out_dir.name}.replaced-{os.getpid()}"
        os.replace(out_dir, replaced)
    os.replace(staging, out_dir)
    fsync_directory(out_dir.parent)
    if replaced is not None:
        shutil.rmtree(replaced, ignore_errors=True)


def _write_beside(folder: Path, name: str, streams, metadata: dict) -> None:
    write_json_atomic(folder / METADATA_FILE, metadata)
    write_text_atomic(folder / CLASSES_FILE, "".join(f"{name}\n" for name in metadata["classes"]))
    two_stream = len(streams) == 2
    for stream in streams:
        from actrec.train.run import RECIPE_FILE

        text = (stream.run.run_dir / RECIPE_FILE).read_text(encoding="utf-8")
        write_text_atomic(folder / recipe_file_name(stream.modality, two_stream), text)
    write_text_atomic(folder / MODEL_CARD_FILE, model_card(name, streams, metadata))


def export_runs(
    run_dirs: Sequence[Path | str],
    out_dir: Path | str,
    *,
    model_format: str = "savedmodel",
    fusion_weights: Sequence[float] = (1.0, 1.5),
    fusion_average: str = "logits",
    top_k: int = DEFAULT_TOP_K,
    overwrite: bool = False,
    data_dir: Path | str | None = None,
    progress: Progress | None = None,
    checkpoint: str = "final",
) -> ExportSummary:
    """Export one run, or an RGB and a flow run fused, into `out_dir`.

    run_dirs: finished `actrec train` run directories, in any order.
    fusion_weights: (RGB, flow) weights of the two-stream fusion.
    fusion_average: "logits" (the official evaluations' fusion, as `actrec eval` does by
        default) or "softmax": what the two-stream fusion averages.
    top_k: k of the top-k outputs (at most the number of classes).
    data_dir: the prepared folder the runs trained on, when it has moved since (its
        preparation settings are recorded for `actrec predict`).
    checkpoint: "final" (final.weights.h5) or "best" (best.weights.h5) of every run.
    Raises ConfigError / DatasetError for unusable runs, OutputError for an unusable
    out_dir, ActrecError when the reloaded export does not reproduce the model; nothing is
    left at out_dir then.
    """
    from actrec.data.clip_spec import clip_spec
    from actrec.trained_run import build_trained_model, load_trained_run

    started = time.monotonic()
    progress = progress or NullProgress()
    from actrec.models.score_fusion import check_average

    weights = _checked_options(model_format, top_k, fusion_weights)
    check_average(fusion_average)
    out_dir = Path(out_dir)
    check_out_dir(out_dir, overwrite)
    runs = _ordered_runs([load_trained_run(path, checkpoint) for path in run_dirs])
    preparation = _preparation(runs, None if data_dir is None else Path(data_dir))
    streams = [ExportedStream(run, clip_spec(run.recipe, training=False)) for run in runs]
    classes = runs[0].classes
    k = min(top_k, len(classes))

    progress.start("export", 3)
    models = [build_trained_model(run) for run in runs]
    progress.advance()
    staging = _staging_dir(out_dir)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        if model_format == "savedmodel":
            difference = _write_savedmodel(
                streams, models, classes, k, weights, staging, fusion_average
            )
        else:
            difference = _write_keras(streams, models, weights, staging, fusion_average)
        progress.advance()
        if not difference <= RELOAD_TOLERANCE:
            raise ActrecError(
                f"the reloaded export does not reproduce the model: probabilities differ by "
                f"up to {difference:.3g} (tolerance {RELOAD_TOLERANCE}); nothing was written to "
                f"{out_dir}. Please report this with the run's recipe."
            )
        metadata = export_metadata(
            streams, classes, model_format, k, weights, preparation, fusion_average
        )
        _write_beside(staging, out_dir.name, streams, metadata)
        _commit(staging, out_dir)
        progress.advance()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        progress.finish()
    return ExportSummary(
        out_dir=out_dir,
        model_format=model_format,
        modalities=tuple(run.modality for run in runs),
        classes=tuple(classes),
        reload_difference=difference,
        seconds=time.monotonic() - started,
    )
