"""What an export is checked against before anything is built: its options, its out folder,
its runs (one, or an RGB and a flow run trained on the same classes, named as actrec.json's
schema asks: what `predict` would refuse is not exported) and the preparation settings
`actrec predict` must reproduce (the same for every run)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from actrec.data.format.manifest import read_manifest
from actrec.errors import ConfigError, OutputError
from actrec.export.metadata import METADATA_FILE, PREPARATION_KEYS
from actrec.export.metadata_schema import check_class_names
from actrec.runs.folder import RUN_FILE
from actrec.runs.trained import resolve_data_dir

CLASSES_FIX = (
    "`actrec predict` would refuse an export of it: give run.json the class names of the "
    "prepared data it trained on (distinct, non-empty text), or train the run again"
)


def checked_options(top_k: int, fusion_weights: Sequence[float]) -> tuple:
    """The fusion weights as a tuple of floats; ConfigError naming the value for a top-k
    that is not a whole number >= 1, or unusable weights."""
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


def ordered_runs(runs: list) -> list:
    """The runs as [RGB] / [flow] / [RGB, flow]; ConfigError naming the runs otherwise, or
    the run.json whose classes actrec.json's schema refuses (run.record: as the file says)."""
    if not 1 <= len(runs) <= 2:
        raise ConfigError(f"export takes one run, or two to fuse; got {len(runs)}")
    for run in runs:
        check_class_names(run.run_dir / RUN_FILE, list(run.record.classes), CLASSES_FIX)
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

    settings = read_manifest(resolve_data_dir(run, data_dir)).get("settings", {})
    return dict(settings) if isinstance(settings, dict) else {}


def export_preparation(runs: list, data_dir: Path | None) -> dict:
    """What `actrec predict` must reproduce: frame size, fps, JPEG quality, flow method."""
    # OpenCV: lazily, the CLI imports these checks before its argument checks
    from actrec.data.prepare.encode_video import PrepareSettings

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
