"""The export-format registry: the only list of export formats.

Each format is one module of this package that defines `FORMAT`, an ExportFormat: how the
format writes a model and checks it against the in-process model, what actrec.json and
MODEL_CARD.md say of it, how `actrec predict` runs it, and whether (and how) `--init-from`
starts a run from it. `actrec export --format`'s choices, `predict`'s loader, the model card
and `--init-from` read this registry; adding a format is one module here, its test and its
row in docs/evaluation-and-export.md (docs/extending.md).

Importing a format module imports neither TensorFlow nor Keras: they are imported when a
model is written or loaded.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from actrec.errors import ConfigError
from actrec.export import formats

if TYPE_CHECKING:
    from actrec.export.streams import ExportedStream

DEFAULT_FORMAT = "savedmodel"


@dataclass(frozen=True)
class FormatOption:
    """An option one format takes: `actrec export --NAME` (ExportFormat.options) or `actrec
    predict --NAME` (ExportFormat.runtime_options). The CLI adds every registered format's
    options, so a new format's options need no CLI change.

    kind: the value's type (int, str); choices: the allowed values (None: any of `kind`);
    default: what the format uses when the option is not given (shown in the help).
    """

    name: str
    help: str
    kind: type = str
    choices: tuple[str, ...] | None = None
    default: Any = None


@dataclass(frozen=True)
class ExportRequest:
    """What one `actrec export` asks of a format.

    streams: [RGB] / [flow] / [RGB, flow], each with its trained model.
    classes: the class names (index order); top_k: k of the top-k outputs (<= K).
    fusion_weights, fusion_average: the two-stream fusion (actrec.models.fusion).
    streaming: the online TSM's one-frame step instead of the clip model.
    quantize: "none" or one of the format's quantizations.
    options: the format's own options given, by name (ExportFormat.options: e.g. onnx's
        "opset").
    calibration: int8: the clips its activations are calibrated on
        (actrec.export.quantization.calibration.ClipSet).
    integer_io: int8 with integer input and output (ExportFormat.integer_io formats).
    """

    streams: Sequence[ExportedStream]
    classes: Sequence[str]
    top_k: int
    fusion_weights: tuple[float, float]
    fusion_average: str = "logits"
    streaming: bool = False
    quantize: str = "none"
    options: dict = field(default_factory=dict)
    calibration: Any = None
    integer_io: bool = False

    @property
    def two_stream(self) -> bool:
        return len(self.streams) == 2

    @property
    def models(self) -> list:
        return [stream.model for stream in self.streams]


@dataclass(frozen=True)
class WrittenModel:
    """What a format wrote: the largest difference between the reloaded model's outputs and
    the in-process model's on random probes, the tolerance it must meet (None: reported
    only, as for a quantised model), its actrec.json entries ("model", "inputs",
    "outputs" and any of its own), and whether the reloaded outputs came from a fresh
    Python process running the model card's code (False: reloaded in the exporting process,
    as for the formats that load without actrec's code). run: the written model on ready
    clips (inputs by name -> outputs by name, numpy), for the accuracy gate of a quantised
    model (actrec.export.quantization.accuracy_gate); None where the format does not give it."""

    difference: float
    tolerance: float | None
    metadata: dict = field(default_factory=dict)
    fresh_process: bool = False
    run: Any = field(default=None, compare=False)


class ExportFormat:
    """One export format (subclassed once per module of this package, as `FORMAT`).

    name: the `--format` value.
    title: what the model card calls it ("TensorFlow SavedModel").
    summary: its `--format` help.
    quantizations: the `--quantize` values it honours ("none" first); quantize_help: what
        they do.
    streaming / two_stream: whether it writes the online TSM's step / fused models.
    predicts: whether `actrec predict` runs it.
    starts_runs: whether `--init-from` starts a run from it.
    options: the FormatOptions `actrec export` takes for it besides the common ones (onnx:
        --opset); runtime_options: those `actrec predict` takes for its exports (onnx:
        --provider).
    """

    name: str = ""
    title: str = ""
    summary: str = ""
    quantizations: tuple[str, ...] = ("none",)
    quantize_help: str = ""
    streaming: bool = True
    two_stream: bool = True
    predicts: bool = True
    starts_runs: bool = False
    options: tuple[FormatOption, ...] = ()
    runtime_options: tuple[FormatOption, ...] = ()
    integer_io: bool = False

    def check_request(self, request: ExportRequest) -> None:
        """ConfigError for what this format cannot honour, before anything is built."""
        if request.quantize not in self.quantizations:
            if request.quantize in all_quantizations():
                honouring = [
                    name
                    for name in quantizing_format_names()
                    if request.quantize in export_format(name).quantizations
                ]
                raise ConfigError(
                    f"--quantize {request.quantize} needs --format "
                    + " or ".join(honouring)
                    + f": --format {self.name} "
                    + (
                        "writes float32 weights only"
                        if len(self.quantizations) == 1
                        else f"takes --quantize {' or '.join(self.quantizations[1:])}"
                    )
                )
            raise ConfigError(
                f"--quantize {request.quantize!r} is not valid; choose one of: "
                f"{', '.join(self.quantizations)} (--format {self.name}'s)"
            )
        if request.integer_io and (request.quantize != "int8" or not self.integer_io):
            raise ConfigError(
                "--integer-io writes a model with integer input and output: it needs "
                "--quantize int8 and --format "
                + " or ".join(n for n in format_names() if export_format(n).integer_io)
                + "; leave --integer-io out"
            )
        if request.streaming and not self.streaming:
            raise ConfigError(
                f"--streaming writes one of the formats "
                f"{', '.join(name for name in format_names() if export_format(name).streaming)}"
                f", not --format {self.name}"
            )
        if request.two_stream and not self.two_stream:
            raise ConfigError(f"--format {self.name} exports one stream; it cannot fuse two")
        _check_names(request.options, self.options, "options", f"--format {self.name}")

    def check_runtime_options(self, model_dir: Path, options: dict) -> None:
        """ConfigError for a runtime option this format does not take."""
        where = f"{model_dir}, a {self.title} export,"
        _check_names(options, self.runtime_options, "runtime_options", where)

    def write(self, request: ExportRequest, folder: Path) -> WrittenModel:
        """Write the model's files into `folder` and check them reloaded."""
        raise NotImplementedError

    def usage_lines(self, metadata: dict) -> list[str]:
        """The model card's "Use" section (Markdown lines)."""
        raise NotImplementedError

    def check_untrusted(self, model_dir: Path, metadata: dict) -> None:
        """UntrustedModelError (actrec.errors) when the model file holds what an actrec
        export of this format never does (an op that may act on files, data outside the
        folder), read as data before anything of it is loaded or run. `actrec predict`
        calls it unless the user trusts the model's author (--trust-model)."""
        raise NotImplementedError

    def clip_model(self, model_dir: Path, metadata: dict, trusted: bool = False, **options: Any):
        """The loaded clip model `actrec predict` runs: an object whose
        `probabilities(inputs)` maps uint8 videos by input name ("frames" [N, F, H, W, 3],
        "flow" [N, F-1, H, W, 2]) to probabilities [N, K]. trusted: the user trusts the
        model's author (--trust-model); a format whose own loader runs the file's code
        (savedmodel) loads it another way without it."""
        raise ConfigError(self.cannot_predict(model_dir))

    def stream_model(self, model_dir: Path, metadata: dict, trusted: bool = False, **options: Any):
        """The loaded streaming step: callable(frame uint8 [H, W, 3] as [1, H, W, 3], states
        by name) -> outputs by name (numpy), "logits" and the new states among them.
        trusted: as clip_model's."""
        raise ConfigError(self.cannot_predict(model_dir))

    def cannot_predict(self, model_dir: Path) -> str:
        return (
            f"{model_dir} is a {self.title} export (--format {self.name}), which `actrec "
            f"predict` does not run; export the run again with --format "
            f"{' or '.join(name for name in format_names() if export_format(name).predicts)}"
        )

    def check_start(self, model_dir: Path, metadata: dict, stream_index: int) -> None:
        """ConfigError unless `--init-from EXPORT` can start a run from stream
        `stream_index` of this export."""
        if self.starts_runs:
            return
        run = metadata["streams"][stream_index].get("run", "the run it was exported from")
        raise ConfigError(
            f"cannot start a run from {model_dir}: a {self.title} export (--format "
            f"{self.name}) holds weights converted for inference, which actrec does not read "
            f"back; start from the run it was exported from ({run}) or from a SavedModel "
            "export of it"
        )

    def source_model(self, model_dir: Path, metadata: dict, stream_index: int, num_classes: int):
        """The keras model of stream `stream_index`, for `--init-from EXPORT` (after
        check_start)."""
        raise NotImplementedError


def _check_names(given: dict, taken: Sequence[FormatOption], kind: str, where: str) -> None:
    """ConfigError naming the formats that take an option `where` does not."""
    names = {option.name for option in taken}
    for name in given:
        if name not in names:
            takers = [
                format_name
                for format_name in format_names()
                if name in {o.name for o in getattr(export_format(format_name), kind)}
            ]
            raise ConfigError(
                f"--{name} is an option of --format {' and '.join(takers) or 'none'}; "
                f"{where} does not take it: leave --{name} out"
            )


def all_options(kind: str = "options") -> tuple[tuple[str, FormatOption], ...]:
    """(format name, FormatOption) of every registered format's `kind` ("options" for
    `actrec export`, "runtime_options" for `actrec predict`), in format order."""
    return tuple(
        (name, option) for name in format_names() for option in getattr(export_format(name), kind)
    )


def predict_usage_lines(metadata: dict, options: str = "") -> list[str]:
    """The model card's "Use" heading and its `actrec predict` command (`options` after it)."""
    source = (
        "SOURCE --model THIS_FOLDER --stream"
        if metadata.get("streaming")
        else "VIDEO... --model THIS_FOLDER"
    )
    return ["## Use", "", "```bash", f"actrec predict {source}{options}", "```", ""]


def format_names() -> tuple[str, ...]:
    """Every registered format's name, the default first, the others alphabetically."""
    names = sorted(
        module.name
        for module in pkgutil.iter_modules(formats.__path__)
        if module.name != "registry"
    )
    return (DEFAULT_FORMAT, *[name for name in names if name != DEFAULT_FORMAT])


def export_format(name: str) -> ExportFormat:
    """The registered format `name`; ConfigError naming the choices otherwise."""
    if not isinstance(name, str) or name not in format_names():
        raise ConfigError(
            f"export format {name!r} is not valid; choose one of: {', '.join(format_names())}"
        )
    return importlib.import_module(f"actrec.export.formats.{name}").FORMAT


def format_of_export(model_dir: Path, metadata: dict) -> ExportFormat:
    """The format an export folder's actrec.json names; ConfigError for one this actrec
    does not know."""
    name = metadata.get("model_format")
    if name not in format_names():
        raise ConfigError(
            f"{model_dir} holds a {name!r} export, which this actrec does not know (it knows "
            f"{', '.join(format_names())}); export the model again with this version"
        )
    return export_format(name)


def quantizing_format_names() -> tuple[str, ...]:
    return tuple(name for name in format_names() if len(export_format(name).quantizations) > 1)


def all_quantizations() -> tuple[str, ...]:
    """Every `--quantize` value some format honours, "none" first, then in the order of the
    format that honours the most."""
    values = ["none"]
    by_count = sorted(format_names(), key=lambda name: -len(export_format(name).quantizations))
    for name in by_count:
        values += [q for q in export_format(name).quantizations if q not in values]
    return tuple(values)
