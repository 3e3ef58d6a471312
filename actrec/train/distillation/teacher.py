"""The flow teacher of a distilled run (train.distill_from, `actrec train --distill-from`):
found, checked against the student and its data before anything is written, and recorded.

The teacher is a finished flow run directory (its final.weights.h5) or an `actrec export`
folder holding a flow stream (SavedModel or Keras format; of a two-stream export, its flow
stream). It must be flow, finished, and trained on the optical flow method the student's
data holds; a teacher of other classes is allowed (only its features are used: a
converted Kinetics flow model is such a teacher), with a note. run.json records it
("distilled_from": path, SHA-256 of its weights, its recipe), and `--resume` refuses a
teacher whose weights changed since the run started.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields, replace
from pathlib import Path

from actrec.data.format.integrity import file_sha256
from actrec.data.input.clip_spec import ClipSpec
from actrec.errors import ConfigError, DatasetError
from actrec.export.formats.registry import format_of_export
from actrec.export.metadata import METADATA_FILE, load_export_recipe, read_export_metadata
from actrec.models.backbone_taps import hint_layer_problem
from actrec.models.factory import build_model
from actrec.models.segment_model import copy_model_weights
from actrec.runs.folder import FINAL_WEIGHTS_FILE, RUN_FILE
from actrec.runs.record import RunRecord
from actrec.runs.trained import load_trained_run, without_pretrained_weights


@dataclass(frozen=True)
class Teacher:
    """A checked flow teacher.

    kind: "run" or "export"; stream: the flow stream's index in an export's actrec.json.
    sha256: of the teacher's weights file (a run's final.weights.h5) or of the export's
        files (their relative paths and contents, in path order).
    recipe: the teacher's actrec.config.Recipe; flow_method: the optical flow it learned.
    note: said to the user when the run starts (other classes), else "".
    """

    path: str
    kind: str
    sha256: str
    recipe: object
    classes: tuple[str, ...]
    flow_method: str
    stream: int = 0
    note: str = ""

    def to_json(self) -> dict:
        """run.json's "distilled_from"."""
        model, data = self.recipe.model, self.recipe.data
        return {
            "path": self.path,
            "kind": self.kind,
            "sha256": self.sha256,
            "recipe": self.recipe.name,
            "architecture": model.architecture,
            "backbone": model.backbone,
            "modality": data.modality,
            "new_length": data.new_length,
            "crop_size": data.crop_size,
            "flow": self.flow_method,
            "num_classes": len(self.classes),
            "stream": self.stream,
        }

    def describe(self) -> str:
        return (
            f"distilling from the flow {self.kind} {self.path} ({self.recipe.name}: "
            f"{self.recipe.model.architecture} {self.recipe.model.backbone}, "
            f"{self.recipe.data.new_length} flow fields at {self.recipe.data.crop_size} px, "
            f"{self.flow_method} flow; sha256 {self.sha256[:12]})"
        )


def teacher_of(recipe, info, previous: RunRecord) -> Teacher | None:
    """The checked teacher of `recipe` (train.distill_from) for data `info`
    (actrec.data.input.clip_spec.DatasetInfo), None without distillation. `previous`: the
    run's run.json when it resumes (an empty RunRecord for a new run): its teacher must be
    the same one. ConfigError / DatasetError naming the teacher, the data and the fix."""
    given = recipe.train.distill_from
    if given is None:
        if isinstance(previous.distilled_from, dict):
            raise ConfigError(
                f"this run was distilled from {previous.distilled_from['path']}; resume it with "
                "the same teacher (the run's recipe.yaml names it), or start a new run"
            )
        return None
    teacher = _check_student(_read_teacher(Path(given)), recipe, info)
    recorded = previous.distilled_from
    if isinstance(recorded, dict) and recorded.get("sha256") != teacher.sha256:
        raise ConfigError(
            f"the teacher {teacher.path} is not the one this run started with: its weights' "
            f"SHA-256 is {teacher.sha256[:12]}..., run.json records "
            f"{str(recorded.get('sha256'))[:12]}... ({recorded.get('path')}); resume with "
            "that teacher, or start a new run (--workdir elsewhere, --init-from this run)"
        )
    return teacher


def teacher_clip_spec(student_spec, teacher: Teacher):
    """The teacher's ClipSpec beside a student's: the teacher's flow stack length and crop
    size, the student's segments (the teacher sees the flow of the student's frames: a
    segment model's weights hold no segment count), crop box and flip."""
    values = {item.name: getattr(student_spec, item.name) for item in fields(student_spec)}
    data = teacher.recipe.data
    values.update(
        modality="flow", new_length=data.new_length, crop_size=data.crop_size, scale_size=None
    )
    return ClipSpec(**values)


def teacher_recipe_for(teacher: Teacher, num_segments: int):
    """The teacher's recipe at the student's segment count, without pretrained weights."""
    recipe = teacher.recipe
    recipe = replace(recipe, data=replace(recipe.data, num_segments=num_segments))
    return without_pretrained_weights(recipe)


def teacher_model(teacher: Teacher, num_segments: int):
    """The teacher's trained keras.Model for `num_segments` segments: flow [B, S, crop,
    crop, 2L] in the stored 0-255 scale -> logits [B, classes]."""
    recipe = teacher_recipe_for(teacher, num_segments)
    model = build_model(recipe.model, recipe.data, len(teacher.classes))
    if teacher.kind == "run":
        model.load_weights(str(Path(teacher.path) / FINAL_WEIGHTS_FILE))
        return model

    path = Path(teacher.path)
    metadata = read_export_metadata(path)
    source = format_of_export(path, metadata).source_model(
        path, metadata, teacher.stream, len(teacher.classes)
    )
    copy_model_weights(source, model)
    return model


# --- reading and checking ---------------------------------------------------------------


def _read_teacher(path: Path) -> Teacher:
    if (path / RUN_FILE).is_file():
        return _run_teacher(path)
    if (path / METADATA_FILE).is_file():
        return _export_teacher(path)
    raise ConfigError(
        f"--distill-from {path}: {path} is neither a finished run directory (no {RUN_FILE}) "
        f"nor an `actrec export` folder (no {METADATA_FILE}); give the --workdir of a "
        "finished flow `actrec train` (e.g. synthetic-flow) or the --out of its export"
    )


def _run_teacher(path: Path) -> Teacher:
    try:
        run = load_trained_run(path)
    except ConfigError as error:
        raise ConfigError(f"cannot distil from {path}: {error}") from None
    _require_flow(path, run.recipe.data.modality, run.recipe.name)
    return Teacher(
        path=str(path.resolve()),
        kind="run",
        sha256=file_sha256(run.weights_path),
        recipe=run.recipe,
        classes=run.classes,
        flow_method=str(run.prepare_settings.get("flow", "unknown")),
    )


def _export_teacher(path: Path) -> Teacher:
    metadata = read_export_metadata(path)
    modalities = [stream["modality"] for stream in metadata["streams"]]
    if "flow" not in modalities:
        _require_flow(path, modalities[0], "its model")
    index = modalities.index("flow")
    export_format = format_of_export(path, metadata)
    try:
        export_format.check_start(path, metadata, index)
    except ConfigError as error:
        raise ConfigError(f"cannot distil from {path}: {error}") from None
    return Teacher(
        path=str(path.resolve()),
        kind="export",
        sha256=folder_sha256(path),
        recipe=load_export_recipe(path, metadata["streams"][index]["recipe_file"]),
        classes=tuple(metadata["classes"]),
        flow_method=str(metadata.get("preparation", {}).get("flow", "unknown")),
        stream=index,
    )


def _require_flow(path: Path, modality: str, name: str) -> None:
    if modality != "flow":
        raise ConfigError(
            f"cannot distil from {path}: {name} is an {modality.upper()} model, and the "
            "teacher must be a flow model (it gives the motion an RGB student learns); "
            "train one first, e.g. `actrec train --recipe synthetic-flow --data DATA "
            "--workdir runs/synthetic-flow`, and give that folder"
        )


def _check_student(teacher: Teacher, recipe, info) -> Teacher:
    if recipe.train.distill_features == "maps":
        problem = hint_layer_problem(  # the recipe's validation: maps names a layer
            recipe.train.distill_layer, recipe.model.backbone, teacher.recipe.model.backbone
        )
        if problem is not None:
            raise ConfigError(f"{problem} (the teacher: {teacher.path})")
    if not info.has_flow:
        raise DatasetError(
            f"{info.prepared_dir} was prepared without optical flow (--flow none), and the "
            f"teacher {teacher.path} learns from flow: the input pipeline reads each clip's "
            "frames and flow together; prepare the data again with flow, e.g. `actrec "
            f"prepare DATASET --flow {_method_hint(teacher)} --out NEW_FOLDER`"
        )
    if teacher.flow_method not in ("unknown", info.flow_method):
        raise DatasetError(
            f"the teacher {teacher.path} learned from {teacher.flow_method!r} optical flow, "
            f"and {info.prepared_dir} holds {info.flow_method!r} flow: its features would "
            f"describe another motion field; prepare the data with --flow "
            f"{teacher.flow_method}, or distil from a teacher trained on "
            f"{info.flow_method!r} flow"
        )
    if tuple(teacher.classes) != tuple(info.classes):
        if recipe.train.distill_features == "logits":
            raise ConfigError(
                f"train.distill_features=logits matches the teacher's class scores, and the "
                f"teacher {teacher.path} was trained on other classes ({len(teacher.classes)}) "
                f"than {info.prepared_dir} holds ({len(info.classes)}); match its features "
                "instead (train.distill_features=clip), or distil from a teacher of these classes"
            )
        return replace(
            teacher,
            note=f"note: the teacher {teacher.path} was trained on other classes "
            f"({len(teacher.classes)}) than the data's ({len(info.classes)}): only its "
            "features are used, as for a converted Kinetics flow model",
        )
    return teacher


def _method_hint(teacher: Teacher) -> str:
    return teacher.flow_method if teacher.flow_method != "unknown" else "METHOD"


# --- digests -------------------------------------------------------------------------------


def folder_sha256(folder: Path) -> str:
    """SHA-256 over a folder's files: each relative path and its content's SHA-256, in path
    order (a file renamed, added or changed changes it)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(file_sha256(path).encode())
    return digest.hexdigest()
