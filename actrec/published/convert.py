"""`actrec pretrained convert`: a published PyTorch checkpoint -> a finished actrec run folder.

    CHECKPOINT  --read-->  tensors (actrec.published.torch_files: weights only, no code run)
                --keys-->  layout, backbone, shift, input channels, classes
                           (actrec.published.layouts)
                --name-->  segments, sampling, dataset (actrec.published.file_names)
                --options->  what neither says (--classes, --segments, --architecture, ...)
                -->  OUT/recipe.yaml, OUT/run.json, OUT/final.weights.h5

The folder is a run like one `actrec train` finishes: `actrec eval`, `export` (every format),
`predict` and `train --init-from` take it. run.json records the file (path, SHA-256, layout),
where each setting came from, and the input preparation the source trained on (frame size,
flow method), which predict and export reproduce. The folder appears whole or not at all.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from actrec import __version__
from actrec.config.files import dump_recipe, load_recipe
from actrec.config.overrides import setting_value, with_settings
from actrec.config.recipe import SHIFT_SETTINGS
from actrec.config.validate import validate_recipe
from actrec.errors import ConfigError, OutputError
from actrec.files.output_paths import (
    create_parents,
    refuse_a_file_on_the_way,
    remove_created_parents,
)
from actrec.published.class_lists import CLASS_LISTS, resolve_class_names
from actrec.published.downloads import check_checkpoint_file
from actrec.published.file_names import (
    TSM_DENSE_INTERVAL_FRAMES,
    NamedSettings,
    settings_from_file_name,
)
from actrec.published.layouts import PublishedNetwork, published_network
from actrec.published.sources.registry import IMAGENET_CLASSES
from actrec.published.torch_files import read_torch_checkpoint
from actrec.published.videomae_convert import (
    ARCHITECTURE as VIDEOMAE,
)
from actrec.published.videomae_convert import (
    check_videomae_source,
    family_converter,
    is_videomae_source,
    videomae_conversion,
)
from actrec.runs.folder import FINAL_WEIGHTS_FILE, RECIPE_FILE
from actrec.runs.record import RunRecord, write_run_record
from actrec.runs.trained import without_pretrained_weights

RECORD_KEY = "converted_from"
BASE_RECIPE = "tsm-kinetics400"
"""The recipe a converted run's settings start from (TSM's Kinetics schedule)."""
CONVERTED_SETTINGS = (
    "model.backbone",
    "data.modality",
    "model.architecture",
    *reversed(SHIFT_SETTINGS),  # direction, placement, fraction: run.json's order
    "data.num_segments",
    "data.new_length",
    "data.sampling",
)
"""The recipe settings a conversion decides, each with its origin, in run.json's order."""
DEFAULTS = {
    "model.architecture": "tsn",  # no shift wrapper in the keys, none in the name
    "model.shift_direction": "bidirectional",
    "model.shift_placement": "blockres",
    "data.num_segments": 8,
    "data.sampling": "tsn",
}
"""Where neither the option, the tensors, the file name nor the source says; the rest
(the shift's fraction) is BASE_RECIPE's."""
OPTION_NAMES = {
    "model.backbone": "backbone",
    "data.modality": "modality",
    "model.architecture": "architecture",
    "model.shift_direction": "shift-direction",
    "data.num_segments": "segments",
}
"""The `actrec pretrained convert` option of each setting a user may give."""
SOURCE_FRAME_SIZES = {"kinetics400": "331", "something-something-v2": "256"}
"""Short side of TSM's extracted frames (tools/vid2img_kinetics.py: scale=-1:331;
tools/vid2img_sthv2.py: scale=-1:256); 256 elsewhere."""
SOURCE_FLOW_METHOD = "tvl1"
"""TSM's and mmaction2's flow models were trained on TV-L1 flow."""


@dataclass(frozen=True)
class ConversionOptions:
    """What the user says where the file does not (None: from the file)."""

    classes: str | None = None  # a built-in list name (actrec.published.class_lists) or a file
    architecture: str | None = None  # "tsn" or "tsm"
    backbone: str | None = None
    num_segments: int | None = None
    modality: str | None = None
    shift_direction: str | None = None  # "bidirectional" or "online"
    heads: int | None = None  # a VideoMAE of no published size without its config.json


@dataclass(frozen=True)
class Conversion:
    """A converted checkpoint: the run folder written and what it holds."""

    run_dir: Path
    recipe: object  # actrec.config.recipe.Recipe
    classes: tuple[str, ...]
    record: dict
    notes: tuple[str, ...] = field(default=())


def _given(options: ConversionOptions) -> dict:
    """The settings the user gave, by their dotted names."""
    given = {
        "model.backbone": options.backbone,
        "data.modality": options.modality,
        "model.architecture": options.architecture,
        "model.shift_direction": options.shift_direction,
        "data.num_segments": options.num_segments,
    }
    return {key: value for key, value in given.items() if value is not None}


def _from_tensors(network: PublishedNetwork) -> dict:
    """What the keys and shapes say."""
    said = {
        "model.backbone": network.backbone,
        "data.modality": "rgb" if network.input_channels == 3 else "flow",
        "data.new_length": 1 if network.input_channels == 3 else network.input_channels // 2,
    }
    if network.shift_placement is not None:
        said["model.architecture"] = "tsm"
        said["model.shift_placement"] = network.shift_placement
    return said


def _settings(network: PublishedNetwork, named: NamedSettings, options: ConversionOptions):
    """Every setting of CONVERTED_SETTINGS with its origin, {dotted name: (value, origin)},
    from the first record that says it, in one order: the option, the tensors, the file
    name, the source's default, DEFAULTS, BASE_RECIPE's value. An option that contradicts
    the tensors is refused, but the architecture: the shift has no weights, so a TSM's
    tensors are a TSN's."""
    given, tensors = _given(options), _from_tensors(network)
    base = load_recipe(BASE_RECIPE)
    records = (
        ("option", given),
        ("tensors", tensors),
        ("file name", named.settings),
        ("default", network.source.defaults(network)),
        ("default", DEFAULTS),
        ("default", {key: setting_value(base, key) for key in CONVERTED_SETTINGS}),
    )
    for key, value in given.items():
        if key in tensors and value != tensors[key] and key != "model.architecture":
            option = OPTION_NAMES[key]
            raise ConfigError(
                f"--{option} {value}: the checkpoint's tensors are a {tensors[key]} network "
                f"(leave --{option} out)"
            )
    return {
        key: next((said[key], origin) for origin, said in records if key in said)
        for key in CONVERTED_SETTINGS
    }


def _dataset(network: PublishedNetwork, named: NamedSettings) -> str | None:
    if named.dataset is not None:
        return named.dataset
    return network.source.defaults(network).get("dataset")


def _class_names(network, named, options, source: Path) -> tuple[tuple[str, ...], str]:
    """The classifier's class names and where they came from."""
    if options.classes is not None:
        return resolve_class_names(options.classes, network.num_classes), options.classes
    dataset = _dataset(network, named)
    if dataset is not None:
        return resolve_class_names(dataset, network.num_classes), dataset
    if network.num_classes == IMAGENET_CLASSES:
        names = tuple(f"imagenet_{index:04d}" for index in range(IMAGENET_CLASSES))
        return names, "ImageNet indices (no names shipped)"
    raise ConfigError(
        f"{source.name} does not say which dataset its {network.num_classes} classes are; "
        f"give --classes NAME ({', '.join(CLASS_LISTS)}) "
        f"or --classes FILE (one name per line, {network.num_classes} lines)"
    )


def _recipe(stem: str, settings: dict, network: PublishedNetwork, source_url: str):
    """The converted run's recipe: the source's clip and network, TSM's Kinetics schedule."""
    value = {key: chosen for key, (chosen, _) in settings.items()}
    segments, modality = value["data.num_segments"], value["data.modality"]
    recipe = with_settings(
        load_recipe(BASE_RECIPE),
        {
            **value,
            "data.crop_size": 224,
            "data.scale_size": 256,
            "data.frame_interval": max(1, TSM_DENSE_INTERVAL_FRAMES // segments),
            "data.scales": (1.0, 0.875, 0.75, 0.66) if modality == "rgb" else (1.0, 0.875, 0.75),
            "model.weights": "imagenet",  # where the source started; the run's are the file's
            "model.preprocessing": network.source.preprocessing,
        },
    )
    recipe = replace(
        recipe,
        name=f"converted-{stem}",
        description=f"{stem}, converted from {network.layout}'s PyTorch checkpoint",
        reference=f"Converted by `actrec pretrained convert` from {source_url}",
    )
    validate_recipe(recipe)
    return recipe


def source_prepare_settings(dataset: str | None, modality: str) -> dict:
    """How a converted run's videos are prepared (run.json's prepare_settings, which `export`
    and `predict` follow): the source data set's frame size (256 px by default) and flow."""
    from actrec.data.prepare.encode_video import PrepareSettings  # imports OpenCV

    settings = PrepareSettings(
        frame_size=SOURCE_FRAME_SIZES.get(dataset or "", "256"),
        flow=SOURCE_FLOW_METHOD if modality == "flow" else PrepareSettings().flow,
    )
    return settings.to_dict()


def check_conversion_paths(
    checkpoint_path: Path | str, out: Path | str, architecture: str | None = None
) -> None:
    """The checkpoint is a file (a missing published one is named with where to download
    it; a VideoMAE may be a Hugging Face folder), then `out` can be written (missing parent
    folders are made once every check has passed); no file is read, so a mistake is
    answered at once."""
    if is_videomae_source(Path(checkpoint_path), architecture):
        check_videomae_source(Path(checkpoint_path))
    else:
        check_checkpoint_file(Path(checkpoint_path))
    _check_output(Path(out))


def _videomae_run(source: Path, out: Path, options: ConversionOptions) -> Conversion:
    """A VideoMAE file or folder converted (actrec.published.videomae_convert)."""
    if options.architecture not in (None, VIDEOMAE) or options.backbone or options.modality:
        raise ConfigError(
            f"{source}: a VideoMAE file; its network, size and modality come from its tensors "
            "(leave --architecture, --backbone and --modality out)"
        )
    recipe, classes, record, assign = videomae_conversion(source, options.classes, options.heads)
    record["prepare_settings"] = source_prepare_settings(None, "rgb")
    _write_run(out, recipe, classes, record, assign)
    license_text = record[RECORD_KEY]["license"]
    return Conversion(out, recipe, classes, record, (f"the weights' license: {license_text}",))


def _check_output(out: Path) -> None:
    if out.exists():
        raise OutputError(
            f"{out} already exists; give a new --out folder (nothing was written, the "
            "existing folder is untouched)"
        )
    refuse_a_file_on_the_way(out, "--out")  # missing parents are made once all is checked


def convert_checkpoint(
    checkpoint_path: Path | str, out: Path | str, options: ConversionOptions | None = None
) -> Conversion:
    """Converts the published checkpoint at `checkpoint_path` into a finished run folder `out`
    (which must not exist); see the module docstring. Errors name the file and the fix, and
    leave nothing behind."""
    options = options or ConversionOptions()
    source, out = Path(checkpoint_path), Path(out)
    check_conversion_paths(source, out, options.architecture)
    if is_videomae_source(source, options.architecture):
        return _videomae_run(source, out, options)
    checkpoint = read_torch_checkpoint(source)
    if family_converter().recognises(checkpoint.state_dict):
        return _videomae_run(source, out, options)
    network = published_network(checkpoint.state_dict)
    named = settings_from_file_name(source.name)
    if named.non_local:
        raise ConfigError(
            f"{source.name} is a non-local TSM (its name ends in _nl): actrec has no non-local "
            "blocks; convert the TSM without them"
        )
    settings = _settings(network, named, options)
    classes, classes_from = _class_names(network, named, options, source)
    recipe = _recipe(source.name.split(".")[0], settings, network, str(source))
    dataset = _dataset(network, named) if options.classes is None else None
    record = {
        "actrec": __version__,
        "data": None,
        "classes": list(classes),
        "num_classes": len(classes),
        "status": "finished",
        "prepare_settings": source_prepare_settings(dataset, recipe.data.modality),
        RECORD_KEY: {
            "file": str(source.resolve()),
            "file_name": source.name,
            "sha256": checkpoint.sha256,
            "file_format": checkpoint.file_format,
            "layout": network.layout,
            "classes": classes_from,
            "settings": {
                key.partition(".")[2]: {"value": v, "from": o} for key, (v, o) in settings.items()
            },
            "metadata": checkpoint.metadata,
        },
    }
    _write_run(out, recipe, classes, record, _published_weights(network, source))
    return Conversion(out, recipe, classes, record, _notes(network, settings))


def _published_weights(network: PublishedNetwork, source: Path):
    """The function that sets a built model to the checkpoint's weights."""

    def assign(model) -> None:
        # Keras: reading and checking a checkpoint does not import it.
        from actrec.published.weights import set_published_weights

        set_published_weights(model, network, str(source))

    return assign


def _notes(network: PublishedNetwork, settings: dict) -> tuple[str, ...]:
    notes = []
    if network.source.imagenet_classifiers and network.num_classes == IMAGENET_CLASSES:
        notes.append(
            "an ImageNet classifier: start a video model from it with `actrec train "
            "--init-from` (the classifier is replaced), or install it as the backbone's "
            "ImageNet weights with `actrec pretrained import`"
        )
    defaults = [
        key.partition(".")[2] for key, (_, origin) in settings.items() if origin == "default"
    ]
    if defaults:
        notes.append(f"not said by the file, defaults used: {', '.join(sorted(defaults))}")
    return tuple(notes)


def _write_run(out: Path, recipe, classes, record, assign) -> None:
    """Builds the recipe's model, sets its weights (`assign(model)`), and writes the run
    folder under a temporary name renamed to `out` (atomic)."""
    # Keras: reading and checking a checkpoint does not import it.
    from actrec.models.factory import build_model

    model = build_model(without_pretrained_weights(recipe).model, recipe.data, len(classes))
    assign(model)
    temporary = out.with_name(f".{out.name}.converting")
    created = create_parents(temporary)
    shutil.rmtree(temporary, ignore_errors=True)
    try:
        temporary.mkdir()
        model.save_weights(str(temporary / FINAL_WEIGHTS_FILE))
        dump_recipe(recipe, temporary / RECIPE_FILE)
        write_run_record(temporary, RunRecord.from_json(record))
        temporary.rename(out)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        remove_created_parents(created)
        raise


def settings_table(conversion: Conversion) -> list[tuple[str, str, str]]:
    """(setting, value, where it came from) rows of a conversion, for the CLI."""
    settings = conversion.record[RECORD_KEY]["settings"]
    return [(key, str(item["value"]), item["from"]) for key, item in settings.items()]
