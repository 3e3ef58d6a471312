"""The settings a run started from another (model.weights "run:PATH") takes from its source,
and the differences from the source's training it reports.

Inherited (INHERITED_SETTINGS): the backbone and a clip network's model.network (the loaded
weights are theirs: a recipe written for any source, such as finetune-tsm, starts from a
converted MobileNetV2 or a Keras ResNet alike), and the model settings that hold no weights
but shape what the loaded weights compute: the temporal shift (fraction, placement,
direction; between two TSMs only: TSN <-> TSM stays allowed, and a TSN's shift settings mean
nothing) and the frame preprocessing. Each comes from the source's recipe unless the command
line gave it (`--set model.shift_fraction=...`); a recipe file's own value does not count,
since a recipe such as finetune-tsm is written for any source, but an online shift
direction: a recipe that says online (finetune-tsm-online) is written for streaming,
whatever its source. A bidirectional source made online is a supported change, reported with
a note (not a warning): the shift holds no weights, every weight carries over, and
fine-tuning recovers what the one-way shift costs (docs/benchmarks.md, "Online from a
bidirectional TSM").

Compared (COMPARED_SETTINGS): the clip settings of the source's training a run may change.
Every one that differs is reported; a warning marks each that changes what the loaded
weights compute: shift settings given by hand, the segments of a TSM started from a TSM (a
shift then mixes other frames), the modality (RGB -> flow: cross-modality initialisation),
the flow fields of a flow model, a preprocessing given by hand and another input size
(convolutions and global pooling hold no size, so it is allowed). Another backbone given by
hand is refused (actrec.train.start.starting_point).

The library prints nothing: `SourceSettings.lines()` are the lines for the user, and the
record (actrec.train.start.starting_point.StartingPoint, run.json's "initialised_from") keeps
the decisions, which a resumed run reuses without reading the source again.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

from actrec.backbones.registry import network_preprocessing
from actrec.config.overrides import setting_value
from actrec.config.recipe import SHIFT_SETTINGS
from actrec.runs.record import RunRecord

PREPROCESSING_SETTING = "model.preprocessing"
BACKBONE_SETTING = "model.backbone"
NETWORK_SETTING = "model.network"
"""A clip network's shape settings: like its backbone, they decide the weights' shapes."""
INHERITED_SETTINGS = (BACKBONE_SETTING, NETWORK_SETTING, *SHIFT_SETTINGS, PREPROCESSING_SETTING)
COMPARED_SETTINGS = (
    "data.modality",
    "data.num_segments",
    "data.new_length",
    "data.sampling",
    "data.frame_interval",
    "data.crop_size",
    "data.scale_size",
    "data.scales",
    "data.more_fix_crop",
    "data.flip",
)
WARNING_PREFIX = "warning: "
SHIFT_DIRECTION_SETTING = "model.shift_direction"
ONLINE_NOTE = (
    "the shift becomes online (each frame takes channels from earlier frames only, so the "
    "model runs frame by frame: `actrec export --streaming`); the shift holds no weights, so "
    "every weight carries over: fine-tune to recover what the one-way shift costs"
)


@dataclass(frozen=True)
class InheritedSetting:
    """A setting taken from the source in place of the recipe's own value."""

    setting: str
    value: object
    recipe_value: object

    def line(self) -> str:
        return (
            f"{self.setting}: {_shown(self.value)} from the source, which trained with it "
            f"(the recipe says {_shown(self.recipe_value)}; --set "
            f"{self.setting}={_shown(self.recipe_value)} to use that)"
        )


@dataclass(frozen=True)
class SettingDifference:
    """A setting of the run that differs from the source's training; `warning` says how it
    changes what the loaded weights compute (None: it does not)."""

    setting: str
    value: object
    source_value: object
    warning: str | None = None
    note: str | None = None

    def line(self) -> str:
        said = (
            f"{self.setting}: {_shown(self.value)} (the source trained with "
            f"{_shown(self.source_value)})"
        )
        if self.warning:
            return f"{WARNING_PREFIX}{said}: {self.warning}"
        return f"{said}: {self.note}" if self.note else said


@dataclass(frozen=True)
class SourceSettings:
    """What a run takes from its source and how it differs from the source's training."""

    inherited: tuple[InheritedSetting, ...] = ()
    differences: tuple[SettingDifference, ...] = ()

    def lines(self) -> list[str]:
        """One line a setting for the user: inherited, then differences (warnings marked)."""
        return [item.line() for item in (*self.inherited, *self.differences)]

    def to_json(self) -> dict:
        return {
            "inherited": [_item_json(item) for item in self.inherited],
            "differences": [_item_json(item) for item in self.differences],
        }

    @classmethod
    def from_json(cls, record: dict) -> SourceSettings:
        """The settings a run.json records ({} before they were recorded: none)."""
        return cls(
            tuple(InheritedSetting(**_from_json(item)) for item in record.get("inherited", [])),
            tuple(SettingDifference(**_from_json(item)) for item in record.get("differences", [])),
        )


def source_settings(recipe, source_recipe, given: Collection[str] = ()) -> SourceSettings:
    """What `recipe` (a run started from a model trained with `source_recipe`) inherits and
    how it differs. `given`: the "section.key" settings the command line gave (kept as
    given, a differing one warned)."""
    inherited = tuple(
        InheritedSetting(
            setting, setting_value(source_recipe, setting), setting_value(recipe, setting)
        )
        for setting in _inheritable(recipe, source_recipe)
        if setting not in given
        and not _made_online(recipe, source_recipe, setting)
        and _resolved(recipe, setting) != _resolved(source_recipe, setting)
    )
    kept = with_inherited(recipe, inherited)
    differences = [
        SettingDifference(
            setting,
            _resolved(kept, setting),
            _resolved(source_recipe, setting),
            *_warning_or_note(setting, kept, source_recipe),
        )
        for setting in (*_inheritable(kept, source_recipe), *COMPARED_SETTINGS)
        if _resolved(kept, setting) != _resolved(source_recipe, setting)
    ]
    return SourceSettings(inherited, tuple(differences))


def with_inherited(recipe, inherited: Collection[InheritedSetting]):
    """`recipe` with each inherited setting's value."""
    for item in inherited:
        section, key = item.setting.split(".")
        config = replace(getattr(recipe, section), **{key: _stored(item.value)})
        recipe = replace(recipe, **{section: config})
    return recipe


def with_recorded_inheritance(recipe, record: RunRecord, given: Collection[str] = ()):
    """`recipe` with the settings a run's run.json records as inherited, except those
    `given` on the command line (a resumed run: the same command that started it gives the
    recipe it trains, without reading the source again)."""
    start = record.initialised_from
    if not isinstance(start, dict):
        return recipe
    recorded = SourceSettings.from_json(start).inherited
    return with_inherited(recipe, [item for item in recorded if item.setting not in given])


# --- the settings ---------------------------------------------------------------------------


def _inheritable(recipe, source_recipe) -> tuple[str, ...]:
    """The backbone and a clip network's shape settings (the loaded weights are theirs: a
    VideoMAE converted from a file of its own size is videomae_s with another width and
    depth), the shift settings between two TSMs, and the preprocessing."""
    both_tsm = recipe.model.architecture == source_recipe.model.architecture == "tsm"
    return (
        BACKBONE_SETTING,
        NETWORK_SETTING,
        *(SHIFT_SETTINGS if both_tsm else ()),
        PREPROCESSING_SETTING,
    )


def _resolved(recipe, setting: str):
    """The value that takes effect: the evaluation scale and the preprocessing resolved,
    frame_interval only for dense sampling, new_length only for flow."""
    if setting == "data.scale_size":
        # inside: augment loads OpenCV, and the CLI's argument checks import this module
        from actrec.data.input.augment import default_scale_size

        return recipe.data.scale_size or default_scale_size(recipe.data.crop_size)
    if setting == PREPROCESSING_SETTING:
        return recipe.model.preprocessing or network_preprocessing(recipe.model.backbone)
    if setting == "data.frame_interval" and recipe.data.sampling != "dense":
        return None
    if setting == "data.new_length" and recipe.data.modality != "flow":
        return None
    value = setting_value(recipe, setting)
    return tuple(value) if isinstance(value, list) else value


def _made_online(recipe, source_recipe, setting: str) -> bool:
    """Whether `setting` is the shift direction of a run that makes its source's
    bidirectional shift online (the recipe or the command line says online)."""
    return (
        setting == SHIFT_DIRECTION_SETTING
        and recipe.model.shift_direction == "online"
        and source_recipe.model.shift_direction != "online"
    )


def _warning_or_note(setting: str, recipe, source_recipe) -> tuple[str | None, str | None]:
    """(warning, note) of a differing `setting`: the online change is a note."""
    if _made_online(recipe, source_recipe, setting):
        return None, ONLINE_NOTE
    return _warning(setting, recipe, source_recipe), None


def _warning(setting: str, recipe, source_recipe) -> str | None:
    """How a differing `setting` changes what the loaded weights compute; None: it does not."""
    restore = f"--set {setting}={_shown(_resolved(source_recipe, setting))} keeps the source's"
    if setting in SHIFT_SETTINGS:
        return (
            "given by hand; the loaded weights learned with the source's temporal shift and "
            f"compute other features with this one ({restore})"
        )
    if setting == PREPROCESSING_SETTING:
        return (
            "given by hand; the loaded weights see frames normalised otherwise than in their "
            f"training ({restore})"
        )
    if setting == "data.num_segments" and (
        recipe.model.architecture == source_recipe.model.architecture == "tsm"
    ):
        return (
            "each temporal shift mixes frames further apart or closer than the loaded "
            f"weights learned with ({restore})"
        )
    if setting == "data.crop_size" and recipe.model.input_size is None:
        return (
            "the loaded weights see frames of another size than in their training: objects "
            f"at another scale, pooled over another grid ({restore})"
        )
    if setting == "data.modality":
        return (
            "the first convolution is made by cross-modality initialisation (averaged over "
            "RGB, replicated to the flow channels) and the rest sees flow for the first time"
        )
    if setting == "data.new_length" and source_recipe.data.modality == "flow":
        return f"the first convolution is re-made for other flow stacks ({restore})"
    return None


def _stored(value):
    """A recorded value as the recipe holds it (JSON lists back to tuples)."""
    return tuple(value) if isinstance(value, list) else value


def _shown(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple | list):
        return "[" + ",".join(_shown(item) for item in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _from_json(item: dict) -> dict:
    return {key: _stored(value) for key, value in item.items()}


def _item_json(item) -> dict:
    from dataclasses import asdict

    return {
        key: list(value) if isinstance(value, tuple) else value
        for key, value in asdict(item).items()
        if not (key == "note" and value is None)  # run.json as before the note
    }
