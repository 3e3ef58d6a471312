"""Where a fine-tuning run starts: model.weights "run:PATH" (`actrec train --init-from PATH`).

PATH is a finished run directory (its final.weights.h5) or an `actrec export` folder
(SavedModel or Keras format; of a two-stream export, the stream of the run's modality).
Before the run folder is written, the source is checked against the recipe: the same
backbone and input size, and a modality it can start (RGB -> RGB, RGB -> flow by TSN's
cross-modality initialisation, flow -> flow); TSN <-> TSM and another number of segments
are fine (neither has weights). After the model is built, every backbone weight is loaded
from the source and the classifier kept when the classes are the source's, as TSM's
`--tune_from` does (actrec.models.transfer).

The settings without weights that shape what the loaded weights compute (the temporal
shift, the preprocessing) come from the source unless the command line gave them, and
every difference from the source's training is reported (actrec.train.start.source_settings).

A kept classifier trains at the base rate: the recipe's classifier_lr_mult is for a NEW
classifier (TSM main.py: `fc_lr5 = not (tune_from and dataset in tune_from)`). run.json
records the starting point ("initialised_from": the source, the settings inherited and the
differences), which a resumed run reuses without reading the source again.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from actrec.config.choices import weights_source
from actrec.errors import ConfigError
from actrec.export.formats.registry import format_of_export
from actrec.export.metadata import METADATA_FILE, load_export_recipe, read_export_metadata
from actrec.models.transfer import classifier_mapping, transfer_weights
from actrec.runs.folder import RUN_FILE
from actrec.runs.record import RunRecord, weights_license
from actrec.runs.trained import build_trained_model, load_trained_run
from actrec.train.start.source_settings import (
    SourceSettings,
    source_settings,
    with_inherited,
)


@dataclass(frozen=True)
class StartingPoint:
    """A checked source of initial weights.

    kind: "run" or "export"; stream: the export stream used (index in actrec.json).
    keeps_classifier: the source's classes are the run's (in any order).
    settings: what the run inherits from the source and how it differs from its training.
    weights_license: the license of the published weights the source was converted from
        (or started from, down a chain of fine-tunings); None when it states none.
    """

    path: str
    kind: str
    recipe: str
    architecture: str
    backbone: str
    modality: str
    num_classes: int
    keeps_classifier: bool
    stream: int = 0
    settings: SourceSettings = field(default_factory=SourceSettings)
    weights_license: str | None = None

    def to_json(self) -> dict:
        """The source's fields (weights_license where there is one), then "inherited" and
        "differences" (run.json)."""
        plain = {item.name: getattr(self, item.name) for item in fields(self)}
        del plain["settings"]
        if plain["weights_license"] is None:  # actrec's own weights: nothing to state
            del plain["weights_license"]
        return {**plain, **self.settings.to_json()}

    @classmethod
    def from_json(cls, record: dict) -> StartingPoint:
        """A recorded starting point (records written before the settings were: none)."""
        plain = {item.name: record[item.name] for item in fields(cls) if item.name in record}
        plain.pop("settings", None)
        return cls(**plain, settings=SourceSettings.from_json(record))

    def describe(self) -> str:
        return (
            f"initialised from {self.kind} {self.path} ({self.recipe}: {self.architecture} "
            f"{self.backbone} {self.modality}, {self.num_classes} classes)"
        )


@dataclass(frozen=True)
class _Source:
    kind: str
    path: Path
    recipe: object  # actrec.config.recipe.Recipe
    classes: tuple[str, ...]
    stream: int = 0
    weights_license: str | None = None


def starting_point(
    recipe, classes, previous: RunRecord, given: Collection[str] = ()
) -> StartingPoint | None:
    """The checked starting point of `recipe` (model.weights "run:PATH") for data with
    `classes`, None for ImageNet / random / a weight file, with the settings the run
    inherits (all but those `given` on the command line, "section.key") and its
    differences from the source's training. A resumed run (`previous` run.json) keeps the
    one it started from. ConfigError naming both sides and the fix."""
    weights = weights_source(recipe.model.weights)
    if not weights.is_run:
        return None
    if isinstance(previous.initialised_from, dict):
        return StartingPoint.from_json(previous.initialised_from)
    source = _read_source(Path(weights.path), recipe.data.modality)
    settings = source_settings(recipe, source.recipe, given)
    _check_compatible(source, with_inherited(recipe, settings.inherited))
    model = source.recipe.model
    return StartingPoint(
        path=str(source.path.resolve()),
        kind=source.kind,
        recipe=source.recipe.name,
        architecture=model.architecture,
        backbone=model.backbone,
        modality=source.recipe.data.modality,
        num_classes=len(source.classes),
        keeps_classifier=classifier_mapping(source.classes, classes) is not None,
        stream=source.stream,
        settings=settings,
        weights_license=source.weights_license,
    )


def recipe_from_source(recipe, start: StartingPoint | None):
    """`recipe` with the settings it inherits from its starting point."""
    return recipe if start is None else with_inherited(recipe, start.settings.inherited)


def training_recipe(recipe, start: StartingPoint | None):
    """The recipe the trainer uses: a kept classifier at the base learning rate."""
    if start is None or not start.keeps_classifier or recipe.train.classifier_lr_mult == 1:
        return recipe
    return replace(recipe, train=replace(recipe.train, classifier_lr_mult=1.0))


def load_starting_weights(model, start: StartingPoint, recipe, classes) -> list[str]:
    """Loads the starting point's weights into `model` (built from `recipe` for `classes`);
    returns what was loaded and made new, the settings inherited and the differences from
    the source's training (a warning starts with "warning: "), one line each, for the
    user."""
    source = _read_source(Path(start.path), recipe.data.modality)
    source_model = _source_model(source)
    report = transfer_weights(source_model, model, source.classes, classes)
    lines = [start.describe(), *report.lines()]
    if start.architecture != recipe.model.architecture:
        lines.append(
            f"{start.architecture.upper()} -> {recipe.model.architecture.upper()}: the "
            "temporal shift has no weights, every weight carries over"
        )
    if report.classifier != "new" and recipe.train.classifier_lr_mult != 1:
        lines.append(
            f"the kept classifier trains at the base rate (the recipe's classifier_lr_mult "
            f"{recipe.train.classifier_lr_mult:g} is for a new one, as TSM's fc_lr5)"
        )
    if start.weights_license:
        lines.append(
            f"the published weights it starts from are licensed {start.weights_license}: "
            "its exports' model cards say so"
        )
    return [*lines, *start.settings.lines()]


# --- the source ------------------------------------------------------------------------------


def _read_source(path: Path, modality: str) -> _Source:
    if (path / RUN_FILE).is_file():
        try:
            run = load_trained_run(path)
        except ConfigError as error:
            raise ConfigError(f"cannot start from {path}: {error}") from None
        return _Source("run", path, run.recipe, run.classes, 0, weights_license(run.record))
    if (path / METADATA_FILE).is_file():
        return _export_source(path, modality)
    raise ConfigError(
        f"model.weights run:{path}: {path} is neither a finished run directory (no "
        f"{RUN_FILE}) nor an `actrec export` folder (no {METADATA_FILE}); give the --workdir "
        "of a finished `actrec train` or the --out of `actrec export`"
    )


def _export_source(path: Path, modality: str) -> _Source:
    metadata = read_export_metadata(path)
    streams = metadata["streams"]
    modalities = [stream["modality"] for stream in streams]
    if modality not in modalities and "rgb" not in modalities:
        raise ConfigError(
            f"cannot start an RGB model from {path}, a flow export: cross-modality "
            "initialisation goes from RGB to flow only; start from an RGB run or export"
        )
    index = modalities.index(modality) if modality in modalities else modalities.index("rgb")
    format_of_export(path, metadata).check_start(path, metadata, index)
    recipe = load_export_recipe(path, streams[index]["recipe_file"])
    license_text = streams[index].get("weights_license")
    return _Source("export", path, recipe, tuple(metadata["classes"]), index, license_text)


def _check_compatible(source: _Source, recipe) -> None:
    """ConfigError for a start the loaded weights cannot make: another backbone (given on
    the command line: the source's is inherited otherwise), flow -> RGB. Another input size
    is allowed (convolutions and global pooling hold no size) and warned
    (actrec.train.start.source_settings)."""
    mine, theirs = recipe.model, source.recipe.model
    names = f"{source.path} ({source.recipe.name})"
    if theirs.backbone != mine.backbone:
        raise ConfigError(
            f"cannot start {recipe.name} ({mine.backbone}) from {names}: it is a "
            f"{theirs.backbone}; leave --set model.backbone out (the source's is used), or "
            "start from a run of this backbone (or from ImageNet: model.weights=imagenet)"
        )
    if source.recipe.data.modality == "flow" and recipe.data.modality == "rgb":
        raise ConfigError(
            f"cannot start the RGB model of {recipe.name} from the flow model of {names}: "
            "cross-modality initialisation goes from RGB to flow only; start from an RGB run "
            "or from ImageNet (model.weights=imagenet)"
        )


def _source_model(source: _Source):
    """The source's trained keras.Model."""
    if source.kind == "run":
        return build_trained_model(load_trained_run(source.path))
    return _export_model(source)


def _export_model(source: _Source):
    """The stream model of an export, as its format reads it back
    (actrec.export.formats: ExportFormat.source_model)."""
    metadata = read_export_metadata(source.path)
    export_format = format_of_export(source.path, metadata)
    return export_format.source_model(source.path, metadata, source.stream, len(source.classes))
